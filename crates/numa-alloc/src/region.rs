//! Page-aligned memory under a placement policy.

use core::fmt;
use core::ops::Range;
use core::ptr::NonNull;

use crate::error::{Error, Result};
use crate::fit;
pub use crate::placement::{PageLocation, Placement};
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
    spilled: usize,
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
    /// [`Error::NodeFull`] when a bind or cyclic region needs more of a
    /// node than it has available (checked before mapping; with prefault,
    /// also when the pages could not all be placed there);
    /// [`Error::NodeNotAllowed`] for a node outside this process's cpuset
    /// now; [`Error::NoSuchHugePageSize`] and [`Error::HugePagesUnavailable`]
    /// for explicit huge pages; [`Error::Sys`] when `mmap`, `mbind` or
    /// `madvise` fails.
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
        // Huge pages come from their own pool, which the pool check covers.
        let demands = match options.huge {
            HugePages::Explicit(_) => Vec::new(),
            _ => fit::check_room(&options.policy, mapped)?,
        };
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
        let mut region = NumaRegion { ptr, len, mapped, page_size, options, spilled: 0 };
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
        if options.prefault || matches!(options.huge, HugePages::Explicit(_)) {
            // SAFETY: the region's mapping is fresh, ours, aligned to
            // `page_size`, which divides `mapped`; nothing refers into it yet.
            let spilled = unsafe { fit::prefault(topo, &options.policy, ptr.as_ptr(), mapped, page_size, &demands) };
            region.spilled = spilled.map_err(|e| match (options.huge, &e) {
                (HugePages::Explicit(_), Error::Sys(s)) if matches!(s.errno(), libc::ENOMEM | libc::EFAULT) => {
                    Error::HugePagesUnavailable {
                        size: page_size,
                        pages: mapped / page_size,
                        free: topology::free_huge_pages(page_size, None),
                    }
                }
                _ => e,
            })?;
        } else {
            options.policy.apply(topo, ptr.as_ptr(), mapped, Apply::Fresh)?;
        }
        Ok(region)
    }

    /// Pages a prefault put outside the policy's nodes because those were
    /// full: the kernel's fallback under preferred and interleave, counted
    /// at allocation (0 without prefault, whose pages are placed later, and
    /// for the other policies: bind and cyclic fail with
    /// [`Error::NodeFull`] instead).
    pub fn spilled_pages(&self) -> usize {
        self.spilled
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
