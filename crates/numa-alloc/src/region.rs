//! Page-aligned memory under a placement policy.

use core::fmt;
use core::ops::Range;
use core::ptr::NonNull;

use crate::error::{Error, Result};
use crate::frames;
use crate::policy::{Apply, Policy};
use crate::sys;
use crate::topology::{self, Topology};

/// Which pages back a region.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum HugePages {
    /// Base pages only, also where the system's transparent huge pages are
    /// `always` on: the region is advised with `MADV_NOHUGEPAGE`, so a policy
    /// that places page by page (interleave) is not undone by a huge page
    /// that lands on one node.
    #[default]
    Off,
    /// Transparent huge pages: the region is aligned to the THP size and
    /// advised with `MADV_HUGEPAGE`; the kernel uses huge pages where it can.
    Transparent,
    /// Explicit huge pages from the hugetlbfs pool (`MAP_HUGETLB`), of this
    /// size in bytes (`None`: the smallest size the kernel offers). The
    /// region is always prefaulted, so a pool that runs dry is an error at
    /// allocation, not a `SIGBUS` later.
    Explicit(Option<usize>),
}

/// How to allocate a region.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{HugePages, Policy, RegionOptions};
///
/// let opts = RegionOptions::new(Policy::Interleave("0".parse()?))
///     .prefault(true)
///     .huge_pages(HugePages::Transparent);
/// assert!(opts.prefaults());
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct RegionOptions {
    policy: Policy,
    prefault: bool,
    huge: HugePages,
}

impl RegionOptions {
    /// Options with `policy`, no prefault, base pages.
    pub const fn new(policy: Policy) -> Self {
        Self { policy, prefault: false, huge: HugePages::Off }
    }

    /// Whether to map every page at allocation, where the policy puts it.
    ///
    /// Without prefault, a page is placed when first touched: under
    /// `FirstTouch` and `Local` that is the toucher's node, under the other
    /// policies the policy's node.
    pub const fn prefault(mut self, yes: bool) -> Self {
        self.prefault = yes;
        self
    }

    /// Which pages to use.
    pub const fn huge_pages(mut self, huge: HugePages) -> Self {
        self.huge = huge;
        self
    }

    /// The policy.
    pub const fn policy(&self) -> Policy {
        self.policy
    }

    /// Whether pages are mapped at allocation.
    pub const fn prefaults(&self) -> bool {
        self.prefault
    }
}

/// Where one page of a region is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PageLocation {
    /// Resident on this node.
    Node(usize),
    /// Not resident yet (never touched, or reclaimed): the kernel placed nothing.
    NotResident,
    /// The kernel answered with another error for this page (its errno).
    Unknown(i32),
}

/// `move_pages` without target nodes over `count` addresses, 4096 at a time.
fn locate(addrs: impl Iterator<Item = *const u8>, count: usize) -> Result<Vec<PageLocation>> {
    const BATCH: usize = 4096;
    let mut pages = Vec::with_capacity(count);
    let mut batch = Vec::with_capacity(BATCH.min(count));
    let mut status = vec![0; BATCH.min(count)];
    let mut addrs = addrs.peekable();
    while addrs.peek().is_some() {
        batch.clear();
        batch.extend(addrs.by_ref().take(BATCH));
        let n = batch.len();
        sys::move_pages(&batch, None, &mut status[..n], 0)?;
        pages.extend(status[..n].iter().map(|&s| location(s)));
    }
    Ok(pages)
}

/// A page's `move_pages` status as a location.
fn location(status: core::ffi::c_int) -> PageLocation {
    match status {
        s if s >= 0 => PageLocation::Node(s as usize),
        s if s == -libc::ENOENT || s == -libc::EFAULT => PageLocation::NotResident,
        s => PageLocation::Unknown(-s),
    }
}

/// The kernel's answer to "where is each page of this region?".
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Placement {
    page_size: usize,
    pages: Vec<PageLocation>,
}

impl Placement {
    /// Asks the kernel (`move_pages` without target nodes) where each page of
    /// `[addr, addr + len)` is, `page_size` bytes at a time. A page it calls
    /// absent is reported so, without [`locate_pages`](Placement::locate_pages)'s
    /// look-up by frame: a region's untouched pages are absent, and a look-up
    /// each would cost a read of `/proc/self/pagemap`.
    ///
    /// # Errors
    ///
    /// [`Error::Sys`] if `move_pages` fails as a whole.
    pub fn query(addr: *const u8, len: usize, page_size: usize) -> Result<Placement> {
        let count = len.div_ceil(page_size);
        let pages = locate((0..count).map(|p| addr.wrapping_add(p * page_size)), count)?;
        Ok(Placement { page_size, pages })
    }

    /// Asks the kernel where each page holding one of `addrs` is, in the
    /// order given: one `move_pages` per 4096 addresses however scattered
    /// they are (a region's [`query`](Placement::query) asks for
    /// consecutive pages; this is for pages sampled all over the heap).
    ///
    /// Where it can, it asks by physical frame first: a present page this
    /// process alone maps is found from its frame number
    /// (`/proc/self/pagemap`, readable with `CAP_SYS_ADMIN`) and the node
    /// whose zone holds that frame (`/proc/zoneinfo`), one read for a run
    /// of nearby pages; `move_pages` answers for the rest. This is several
    /// times cheaper than `move_pages` alone (about half a microsecond a
    /// page), and right where `move_pages` is not: with automatic NUMA
    /// balancing on, some kernels call absent every page whose entry the
    /// balancing made inaccessible to catch its next access, though it is
    /// in memory and has a node.
    ///
    /// # Errors
    ///
    /// [`Error::Sys`] if `move_pages` fails as a whole.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_numa_alloc::{PageLocation, Placement};
    ///
    /// let (a, b) = (vec![1u8; 64], vec![2u8; 64]);
    /// let found = Placement::locate_pages(&[a.as_ptr(), b.as_ptr()])?;
    /// assert!(found.iter().all(|l| matches!(l, PageLocation::Node(_))));
    /// # Ok::<(), skelaff_numa_alloc::Error>(())
    /// ```
    pub fn locate_pages(addrs: &[*const u8]) -> Result<Vec<PageLocation>> {
        let by_frame = frames::nodes_of_present_pages(addrs, sys::page_size());
        let rest: Vec<usize> = (0..addrs.len()).filter(|&i| by_frame[i].is_none()).collect();
        let asked = locate(rest.iter().map(|&i| addrs[i]), rest.len())?;
        let mut found: Vec<PageLocation> =
            by_frame.into_iter().map(|n| n.map_or(PageLocation::NotResident, PageLocation::Node)).collect();
        for (i, l) in rest.into_iter().zip(asked) {
            found[i] = l;
        }
        Ok(found)
    }

    /// Moves the page holding each address to the node paired with it,
    /// with `move_pages` (`MPOL_MF_MOVE`: pages this process alone maps),
    /// 4096 pages per system call however scattered they are, and says
    /// where each page is afterwards, in the order given. Unlike a
    /// [`Policy`] applied with [`Apply::Migrate`] (an `mbind` per range),
    /// this leaves the memory policy of the mappings alone and does not
    /// split them: it is what a migration thread moving a few hot pages, or
    /// an oracle moving thousands of scattered ones at once, wants. A page
    /// the kernel could not move (busy, not resident) keeps its location,
    /// reported as it is.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`] or [`Error::NodeNotAllowed`] for a target node
    /// this process cannot use (checked before anything moves), and
    /// [`Error::Sys`] if `move_pages` fails as a whole.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_numa_alloc::{PageLocation, Placement, Topology};
    ///
    /// let v = vec![7u8; 1 << 16];
    /// let node = Topology::get()?.allowed_nodes().iter().next().unwrap_or(0);
    /// let moved = Placement::move_pages_to(&[(v.as_ptr(), node)])?;
    /// assert_eq!(moved, [PageLocation::Node(node)]);
    /// assert!(Placement::move_pages_to(&[(v.as_ptr(), 4096)]).is_err());
    /// # Ok::<(), skelaff_numa_alloc::Error>(())
    /// ```
    pub fn move_pages_to(moves: &[(*const u8, usize)]) -> Result<Vec<PageLocation>> {
        const BATCH: usize = 4096;
        let topo = Topology::get()?;
        for &(_, node) in moves {
            topo.check_node(node)?;
        }
        // Grouped by target node: the kernel migrates each run of entries
        // bound for one node together, and a page per run (scattered pages
        // in address order alternate nodes) cost an emulated 4-node guest
        // 3.7 ms per page.
        let mut order: Vec<usize> = (0..moves.len()).collect();
        order.sort_by_key(|&i| moves[i].1);
        let mut found = vec![PageLocation::NotResident; moves.len()];
        let mut status = vec![0; BATCH.min(moves.len())];
        let mut addrs: Vec<*const u8> = Vec::with_capacity(BATCH.min(moves.len()));
        let mut nodes: Vec<core::ffi::c_int> = Vec::with_capacity(BATCH.min(moves.len()));
        for chunk in order.chunks(BATCH) {
            addrs.clear();
            nodes.clear();
            addrs.extend(chunk.iter().map(|&i| moves[i].0));
            // A node the topology has fits a C int.
            nodes
                .extend(chunk.iter().map(|&i| core::ffi::c_int::try_from(moves[i].1).unwrap_or(core::ffi::c_int::MAX)));
            let n = chunk.len();
            sys::move_pages(&addrs, Some(&nodes), &mut status[..n], sys::MPOL_MF_MOVE)?;
            for (&i, &st) in chunk.iter().zip(&status[..n]) {
                found[i] = location(st);
            }
        }
        // A page the kernel could not move has its error as its status:
        // say where it is instead.
        let stuck: Vec<usize> = (0..found.len()).filter(|&i| matches!(found[i], PageLocation::Unknown(_))).collect();
        if !stuck.is_empty() {
            let now = locate(stuck.iter().map(|&i| moves[i].0), stuck.len())?;
            for (i, l) in stuck.into_iter().zip(now) {
                found[i] = l;
            }
        }
        Ok(found)
    }

    /// The page size the query used.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Every page, in address order.
    pub fn pages(&self) -> &[PageLocation] {
        &self.pages
    }

    /// The node of page `i`, if resident.
    pub fn node_of(&self, i: usize) -> Option<usize> {
        match self.pages.get(i)? {
            PageLocation::Node(n) => Some(*n),
            _ => None,
        }
    }

    /// `(node, pages)` for every node holding pages, by node number.
    pub fn histogram(&self) -> Vec<(usize, usize)> {
        let mut counts: Vec<(usize, usize)> = Vec::new();
        for p in &self.pages {
            if let PageLocation::Node(n) = *p {
                match counts.binary_search_by_key(&n, |c| c.0) {
                    Ok(i) => counts[i].1 += 1,
                    Err(i) => counts.insert(i, (n, 1)),
                }
            }
        }
        counts
    }

    /// Pages on `node`.
    pub fn count_on(&self, node: usize) -> usize {
        self.pages.iter().filter(|p| **p == PageLocation::Node(node)).count()
    }

    /// Pages not resident.
    pub fn not_resident(&self) -> usize {
        self.pages.iter().filter(|p| **p == PageLocation::NotResident).count()
    }

    /// Pages whose location the kernel could not tell.
    pub fn unknown(&self) -> usize {
        self.pages.iter().filter(|p| matches!(p, PageLocation::Unknown(_))).count()
    }

    /// Pages that are not where `expected(page_index)` says; each entry is
    /// `(page index, expected node, actual location)`. Pages for which
    /// `expected` returns `None` are not checked.
    pub fn mismatches(&self, mut expected: impl FnMut(usize) -> Option<usize>) -> Vec<(usize, usize, PageLocation)> {
        self.pages
            .iter()
            .enumerate()
            .filter_map(|(i, &loc)| {
                let want = expected(i)?;
                (loc != PageLocation::Node(want)).then_some((i, want, loc))
            })
            .collect()
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} pages:", self.pages.len())?;
        for (n, c) in self.histogram() {
            write!(f, " node{n}={c}")?;
        }
        let nr = self.not_resident();
        if nr > 0 {
            write!(f, " not-resident={nr}")?;
        }
        let u = self.unknown();
        if u > 0 {
            write!(f, " unknown={u}")?;
        }
        Ok(())
    }
}

/// A page-aligned anonymous mapping whose pages follow a [`Policy`].
///
/// Its contents start zeroed. Dropping it unmaps it.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{NumaRegion, Policy, RegionOptions, Topology};
///
/// let node = Topology::get()?.allowed_nodes().first().unwrap();
/// let opts = RegionOptions::new(Policy::Bind(skelaff_numa_alloc::NodeSet::single(node))).prefault(true);
/// let region = NumaRegion::new(1 << 20, opts)?;
/// let placement = region.placement()?;
/// assert_eq!(placement.count_on(node), placement.pages().len());
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub struct NumaRegion {
    // Invariant: `ptr..ptr + mapped` is a mapping this region owns; `len <= mapped`;
    // `ptr` is aligned to `page_size`, which divides `mapped`.
    ptr: NonNull<u8>,
    len: usize,
    mapped: usize,
    page_size: usize,
    options: RegionOptions,
}

// SAFETY: the region owns its mapping; `&NumaRegion` only gives shared
// access to plain bytes and `&mut` exclusive access, as for `Box<[u8]>`.
unsafe impl Send for NumaRegion {}
// SAFETY: as above; no interior mutability is reachable through `&self`.
unsafe impl Sync for NumaRegion {}

impl NumaRegion {
    /// Maps at least `len` bytes under `options`.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroLength`]; policy validation errors; [`Error::TooManyPieces`];
    /// [`Error::NoSuchHugePageSize`] and [`Error::HugePagesUnavailable`] for
    /// explicit huge pages; [`Error::Sys`] when `mmap`, `mbind` or
    /// `madvise` fails (e.g. `ENOMEM` when prefaulting a bound node that is
    /// full).
    pub fn new(len: usize, options: RegionOptions) -> Result<Self> {
        let topo = Topology::get()?;
        Self::new_in(topo, len, options)
    }

    /// As [`NumaRegion::new`], validating against `topo`.
    ///
    /// # Errors
    ///
    /// As [`NumaRegion::new`].
    pub fn new_in(topo: &Topology, len: usize, options: RegionOptions) -> Result<Self> {
        if len == 0 {
            return Err(Error::ZeroLength);
        }
        options.policy.validate(topo)?;
        let base = topo.page_size();
        let (page_size, align, flags) = match options.huge {
            HugePages::Off => (base, base, 0),
            HugePages::Transparent => (base, topo.thp_size().unwrap_or(base), 0),
            HugePages::Explicit(size) => {
                let offered = topo.huge_page_sizes();
                let size = match size {
                    Some(s) => s,
                    None => *offered.first().ok_or(Error::NoSuchHugePageSize { size: 0, offered: Vec::new() })?,
                };
                if !offered.contains(&size) || !size.is_power_of_two() {
                    return Err(Error::NoSuchHugePageSize { size, offered: offered.to_vec() });
                }
                let shift = size.trailing_zeros() as i32;
                (size, size, libc::MAP_HUGETLB | (shift << libc::MAP_HUGE_SHIFT))
            }
        };
        let mapped = len.checked_next_multiple_of(page_size).ok_or(Error::SizeOverflow { count: len, elem_size: 1 })?;
        let ptr = if align > page_size {
            map_aligned(mapped, align)?
        } else {
            sys::mmap_anonymous(mapped, flags).map_err(|e| match options.huge {
                HugePages::Explicit(_) if e.errno() == libc::ENOMEM => Error::HugePagesUnavailable {
                    size: page_size,
                    pages: mapped / page_size,
                    free: topology::free_huge_pages(page_size, None),
                },
                _ => Error::Sys(e),
            })?
        };
        let mut region = NumaRegion { ptr, len, mapped, page_size, options };
        match options.huge {
            HugePages::Transparent => {
                // SAFETY: the range is our own fresh mapping; MADV_HUGEPAGE keeps contents.
                unsafe { sys::madvise(ptr.as_ptr(), mapped, libc::MADV_HUGEPAGE) }?;
            }
            HugePages::Off => {
                // SAFETY: as above; MADV_NOHUGEPAGE keeps contents too. A
                // kernel built without transparent huge pages refuses the
                // advice with EINVAL: it has no huge pages to keep out.
                match unsafe { sys::madvise(ptr.as_ptr(), mapped, sys::MADV_NOHUGEPAGE) } {
                    Err(e) if e.errno() == libc::EINVAL => {}
                    r => r?,
                }
            }
            HugePages::Explicit(_) => {}
        }
        options.policy.apply(topo, ptr.as_ptr(), mapped, Apply::Fresh)?;
        if options.prefault || matches!(options.huge, HugePages::Explicit(_)) {
            region.populate().map_err(|e| match (options.huge, &e) {
                (HugePages::Explicit(_), Error::Sys(s)) if matches!(s.errno(), libc::ENOMEM | libc::EFAULT) => {
                    Error::HugePagesUnavailable {
                        size: page_size,
                        pages: mapped / page_size,
                        free: topology::free_huge_pages(page_size, None),
                    }
                }
                _ => e,
            })?;
        }
        Ok(region)
    }

    /// Maps every page now (writing it), where the policy puts it.
    fn populate(&mut self) -> Result<()> {
        // SAFETY: our own mapping; MADV_POPULATE_WRITE faults pages in
        // without changing their (zero) contents.
        match unsafe { sys::madvise(self.ptr.as_ptr(), self.mapped, sys::MADV_POPULATE_WRITE) } {
            Ok(()) => Ok(()),
            Err(e) if e.errno() == libc::EINVAL => {
                // Kernels before 5.14: touch each page. Writing the value a
                // page already holds maps it without changing contents.
                let step = self.page_size;
                for off in (0..self.mapped).step_by(step) {
                    // SAFETY: `off < mapped`, inside our exclusive mapping.
                    unsafe {
                        let p = self.ptr.as_ptr().add(off);
                        p.write_volatile(p.read_volatile());
                    }
                }
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The requested length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: regions have at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The mapped length: `len` rounded up to the page size.
    pub fn mapped_len(&self) -> usize {
        self.mapped
    }

    /// The page size of the mapping (a huge page size for explicit huge pages).
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The start of the region.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The region's bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` bytes at `ptr` are mapped, readable and initialised
        // (anonymous memory reads as zero); shared borrow of self.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The region's bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, with exclusive access through `&mut self`.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The policy the whole region was last given.
    pub fn policy(&self) -> Policy {
        self.options.policy
    }

    /// The options the region was made with (with the current policy).
    pub fn options(&self) -> RegionOptions {
        self.options
    }

    /// Gives the whole region a new policy and migrates resident pages to
    /// follow it (`MPOL_MF_MOVE`).
    ///
    /// # Errors
    ///
    /// Validation errors; [`Error::MigrationIncomplete`]; [`Error::Sys`].
    pub fn rebind(&mut self, policy: Policy) -> Result<()> {
        let topo = Topology::get()?;
        policy.apply(topo, self.ptr.as_ptr(), self.mapped, Apply::Migrate)?;
        self.options.policy = policy;
        Ok(())
    }

    /// Applies `policy` to the byte range `range` of the region only (a
    /// cyclic policy counts its blocks from `range.start`). `range.start`
    /// must be page-aligned; `range.end` is rounded up to a page.
    ///
    /// This is how MASA binds each thread's chunk: the region keeps
    /// reporting its original [`policy`](Self::policy).
    ///
    /// # Errors
    ///
    /// [`Error::BadRange`] if the range is empty, unaligned or outside the
    /// region; otherwise as [`Policy::apply`].
    pub fn apply_range(&mut self, range: Range<usize>, policy: Policy, how: Apply) -> Result<()> {
        let end = range.end.checked_next_multiple_of(self.page_size).unwrap_or(usize::MAX).min(self.mapped);
        if range.start >= end || range.start % self.page_size != 0 || range.end > self.mapped {
            return Err(Error::BadRange {
                start: range.start,
                end: range.end,
                len: self.len,
                page_size: self.page_size,
            });
        }
        let topo = Topology::get()?;
        policy.apply(topo, self.ptr.as_ptr().wrapping_add(range.start), end - range.start, how)
    }

    /// Where each page is, according to the kernel.
    ///
    /// # Errors
    ///
    /// [`Error::Sys`] if `move_pages` fails.
    pub fn placement(&self) -> Result<Placement> {
        Placement::query(self.ptr.as_ptr(), self.mapped, self.page_size)
    }
}

impl Drop for NumaRegion {
    fn drop(&mut self) {
        // SAFETY: we own `ptr..ptr + mapped` (type invariant) and nothing
        // borrows it once we are dropped. A failure leaks the mapping but
        // cannot be reported from drop.
        let _ = unsafe { sys::munmap(self.ptr, self.mapped) };
    }
}

impl fmt::Debug for NumaRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NumaRegion")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("page_size", &self.page_size)
            .field("options", &self.options)
            .finish()
    }
}

/// Maps `len` bytes aligned to `align` by over-mapping and trimming.
fn map_aligned(len: usize, align: usize) -> Result<NonNull<u8>> {
    let total = len.checked_add(align).ok_or(Error::SizeOverflow { count: len, elem_size: 1 })?;
    let raw = sys::mmap_anonymous(total, 0)?;
    let start = raw.as_ptr() as usize;
    let aligned = start.next_multiple_of(align);
    let head = aligned - start;
    let tail = total - head - len;
    // SAFETY: head and tail are disjoint parts of the mapping we just made
    // and nothing refers to them.
    unsafe {
        if head > 0 {
            sys::munmap(raw, head)?;
        }
        if tail > 0 {
            sys::munmap(NonNull::new_unchecked((aligned + len) as *mut u8), tail)?;
        }
    }
    NonNull::new(aligned as *mut u8).ok_or(Error::Sys(sys::SysError::new("mmap", libc::ENOMEM)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sets::NodeSet;

    fn local_node() -> usize {
        Topology::get().unwrap().allowed_nodes().first().unwrap()
    }

    #[test]
    fn prefaulted_bound_region_is_resident_on_its_node() {
        let node = local_node();
        let r =
            NumaRegion::new(40_000, RegionOptions::new(Policy::Bind(NodeSet::single(node))).prefault(true)).unwrap();
        assert_eq!(r.len(), 40_000);
        assert_eq!(r.mapped_len() % r.page_size(), 0);
        let p = r.placement().unwrap();
        assert_eq!(p.pages().len(), r.mapped_len() / r.page_size());
        assert_eq!(p.count_on(node), p.pages().len(), "{p}");
        assert!(p.mismatches(|_| Some(node)).is_empty());
        assert!(r.as_slice().iter().all(|&b| b == 0));
    }

    #[test]
    fn untouched_pages_are_reported_not_resident() {
        let mut r = NumaRegion::new(8 * 4096, RegionOptions::new(Policy::FirstTouch)).unwrap();
        r.as_mut_slice()[4096 * 3] = 7;
        let p = r.placement().unwrap();
        assert_eq!(p.not_resident(), p.pages().len() - 1, "{p}");
        assert!(p.node_of(3).is_some());
        assert_eq!(p.node_of(0), None);
        assert_eq!(p.mismatches(|i| (i == 3).then_some(p.node_of(3).unwrap())).len(), 0);
    }

    #[test]
    fn rebind_and_apply_range_work_on_one_node() {
        let node = local_node();
        let mut r = NumaRegion::new(16 * 4096, RegionOptions::new(Policy::FirstTouch).prefault(true)).unwrap();
        r.rebind(Policy::Bind(NodeSet::single(node))).unwrap();
        assert_eq!(r.policy(), Policy::Bind(NodeSet::single(node)));
        r.apply_range(4096..8192, Policy::Interleave(NodeSet::single(node)), Apply::Migrate).unwrap();
        assert!(matches!(r.apply_range(100..8192, Policy::Local, Apply::Fresh), Err(Error::BadRange { .. })));
        assert!(matches!(r.apply_range(0..(17 * 4096), Policy::Local, Apply::Fresh), Err(Error::BadRange { .. })));
        assert!(matches!(r.apply_range(4096..4096, Policy::Local, Apply::Fresh), Err(Error::BadRange { .. })));
        assert_eq!(r.placement().unwrap().count_on(node), 16);
    }

    #[test]
    fn bad_requests_are_errors() {
        assert_eq!(NumaRegion::new(0, RegionOptions::default()).unwrap_err(), Error::ZeroLength);
        let e = NumaRegion::new(4096, RegionOptions::new(Policy::Bind(NodeSet::single(1000)))).unwrap_err();
        assert!(matches!(e, Error::NoSuchNode { node: 1000, .. }), "{e}");
        let e = NumaRegion::new(usize::MAX - 10, RegionOptions::default()).unwrap_err();
        assert!(matches!(e, Error::SizeOverflow { .. } | Error::Sys(_)), "{e}");
        let e =
            NumaRegion::new(4096, RegionOptions::default().huge_pages(HugePages::Explicit(Some(12345)))).unwrap_err();
        assert!(matches!(e, Error::NoSuchHugePageSize { size: 12345, .. }), "{e}");
    }

    #[test]
    fn explicit_huge_pages_from_an_empty_pool_are_a_clear_error() {
        let topo = Topology::get().unwrap();
        let Some(&size) = topo.huge_page_sizes().first() else { return };
        if topology::free_huge_pages(size, None) > 0 {
            // A machine with a reserved pool: the allocation must then work.
            let r =
                NumaRegion::new(size, RegionOptions::default().huge_pages(HugePages::Explicit(Some(size)))).unwrap();
            assert_eq!(r.page_size(), size);
            return;
        }
        let e = NumaRegion::new(size, RegionOptions::default().huge_pages(HugePages::Explicit(None))).unwrap_err();
        assert!(matches!(e, Error::HugePagesUnavailable { pages: 1, free: 0, .. }), "{e}");
        assert!(e.to_string().contains("nr_hugepages"), "{e}");
    }

    #[test]
    fn transparent_huge_pages_align_the_region() {
        let topo = Topology::get().unwrap();
        let Some(thp) = topo.thp_size() else { return };
        let r = NumaRegion::new(3 * thp, RegionOptions::default().huge_pages(HugePages::Transparent).prefault(true))
            .unwrap();
        assert_eq!(r.as_ptr() as usize % thp, 0);
        assert_eq!(r.placement().unwrap().not_resident(), 0);
    }
}
