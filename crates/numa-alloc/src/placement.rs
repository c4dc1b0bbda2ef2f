//! Where the pages of a range are, as the kernel says (`move_pages`, and
//! the physical frames of `/proc/self/pagemap` where readable), and moving
//! scattered pages to chosen nodes.

use core::fmt;

use crate::error::Result;
use crate::frames;
use crate::sys;
use crate::topology::Topology;

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
    /// [`Error::Sys`](crate::Error::Sys) if `move_pages` fails as a whole.
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
    /// [`Error::Sys`](crate::Error::Sys) if `move_pages` fails as a whole.
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
    /// [`Policy`](crate::Policy) applied with [`Apply::Migrate`](crate::Apply::Migrate) (an `mbind` per range),
    /// this leaves the memory policy of the mappings alone and does not
    /// split them: it is what a migration thread moving a few hot pages, or
    /// an oracle moving thousands of scattered ones at once, wants. A page
    /// the kernel could not move (busy, not resident) keeps its location,
    /// reported as it is.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`](crate::Error::NoSuchNode) or [`Error::NodeNotAllowed`](crate::Error::NodeNotAllowed) for a target node
    /// this process cannot use (checked before anything moves), and
    /// [`Error::Sys`](crate::Error::Sys) if `move_pages` fails as a whole.
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
