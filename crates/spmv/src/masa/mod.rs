//! MASA: memory affinity for the shared arrays of a sparse computation.
//!
//! The paper's four steps, in Rust form:
//!
//! | paper | here |
//! |---|---|
//! | `masa_preprocess()`: nodes and cores per node, the thread count, refuse a non-static schedule | [`Masa::preprocess`] / [`Masa::preprocess_with`] (`schedule.rs`) |
//! | `masa_allocate(&array)`: page-aligned shared arrays | [`Masa::allocate`] |
//! | `masa_compute_chunks(dim, nthreads, ptrA)`: Algorithm 1 | [`algorithm1`], [`Masa::compute_chunks`], [`Split`] (`split.rs`) |
//! | `masa_distribute(A, jA, ptrA, x, y)`: bind chunks (page-rounded), interleave the rest | [`Masa::bind_chunks`], [`Masa::interleave`], [`Masa::place`] and the operators in [`crate::ops`] |
//!
//! An array whose chunk `t` is only ever touched by thread `t` (a
//! *deterministic* access) gets each node's chunks bound to that node; an
//! array any thread may touch anywhere (*non-deterministic*) is interleaved
//! page by page over the team's nodes. For CSR SpMV (Table 1) the matrix
//! arrays `A`, `jA`, `ptrA` and the output `y` are split by rows and bound,
//! and the input `x` is interleaved; for CSC (Table 2) `A`, `jA`, `ptrA`
//! and the input `x` are split by columns and bound, and the output `y`
//! is interleaved.
//!
//! `mbind` works on whole pages, so a node's chunk cannot end exactly where
//! Algorithm 1 ends it. Arrays are page-aligned (like the paper's `valloc`)
//! and each boundary between two nodes' chunks is moved to the nearest page
//! boundary: a page goes to the node that owns the byte at its middle. The
//! mismatch is at most half a page per boundary, as the paper says.

mod schedule;
mod split;

use core::ops::Range;

use skelaff_numa_alloc::{Apply, HugePages, NodeSet, Policy, RegionOptions, Topology, Zeroable};

pub use self::schedule::Schedule;
use self::split::per_thread_sizes;
pub use self::split::{Chunks, Split, SplitKind, algorithm1};
use serde::{Deserialize, Serialize};

use crate::array::SharedArray;
use crate::error::{Error, Result};
use crate::team::{Team, TeamLayout};

/// Where to put the shared arrays of an operator.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::ArrayPlacement;
///
/// assert_eq!("firsttouch".parse::<ArrayPlacement>()?, ArrayPlacement::FirstTouch);
/// assert_eq!(ArrayPlacement::FirstTouch.to_string(), "first-touch");
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArrayPlacement {
    /// What a naive program gets: the calling thread writes every array
    /// first, so every page lands on its node.
    FirstTouch,
    /// MASA: chunks of deterministically accessed arrays bound to their
    /// thread's node, the other arrays interleaved over the team's nodes.
    #[default]
    Masa,
    /// Every array interleaved over the team's nodes (`numactl --interleave`).
    Interleave,
}

skelaff_numa_alloc::enum_names! {
    ArrayPlacement {
        FirstTouch => "first-touch" | "firsttouch",
        Masa => "masa",
        Interleave => "interleave",
    }
    parse: Error = unknown_placement;
}

fn unknown_placement(given: &str) -> Error {
    Error::unknown_name("placement", given, ArrayPlacement::VARIANTS)
}

/// How a thread team touches one shared array (the paper's classification).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TeamAccess<'a> {
    /// Thread `t` touches only elements `bounds[t]..bounds[t + 1]`.
    Deterministic(&'a [usize]),
    /// Any thread may touch any element.
    NonDeterministic,
}

/// A node's share of an array after page rounding: bytes `bytes` of the
/// mapping are bound to `node`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct NodeRange {
    /// The node.
    pub node: usize,
    /// The byte range, page-aligned.
    pub bytes: Range<usize>,
}

/// MASA's state after preprocessing: the team's layout, the schedule, the
/// page size, and how arrays are to be placed.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::masa::{ArrayPlacement, Masa, Schedule};
/// use skelaff_spmv::Split;
///
/// let masa = Masa::preprocess_with(skelaff_numa_alloc::Topology::get()?, 2, Schedule::Static)?;
/// let split = Split::from_sizes(&masa.compute_chunks(1000).per_thread);
/// assert_eq!(split.bounds(), &[0, 500, 1000]);
///
/// // Page-aligned, untouched, then thread t's 500 values bound to its node.
/// let mut y = masa.allocate::<f64>(1000)?;
/// let ranges = masa.bind_chunks(&mut y, split.bounds())?;
/// assert!(!ranges.is_empty());
/// assert!(Masa::preprocess_with(skelaff_numa_alloc::Topology::get()?, 2, "dynamic".parse()?).is_err());
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Masa {
    layout: TeamLayout,
    schedule: Schedule,
    page_size: usize,
    huge_pages: bool,
}

impl Masa {
    /// `masa_preprocess`: reads the machine's topology, lays out `threads`
    /// threads (scatter, grouped by node) and the schedule from the
    /// environment ([`Schedule::from_env`]).
    ///
    /// # Errors
    ///
    /// [`Error::NonStaticSchedule`] when the environment asks for another
    /// schedule; [`Error::BadSchedule`]; [`Error::ZeroThreads`]; topology errors.
    pub fn preprocess(threads: usize) -> Result<Masa> {
        Masa::preprocess_with(Topology::get()?, threads, Schedule::from_env()?)
    }

    /// [`Masa::preprocess`] with an explicit topology and schedule.
    ///
    /// # Errors
    ///
    /// [`Error::NonStaticSchedule`] for any schedule but [`Schedule::Static`];
    /// [`Error::ZeroThreads`]; [`Error::Numa`] when no CPU is usable.
    pub fn preprocess_with(topo: &Topology, threads: usize, schedule: Schedule) -> Result<Masa> {
        if !schedule.is_static() {
            return Err(Error::NonStaticSchedule { found: schedule.to_string() });
        }
        let layout = TeamLayout::scatter(topo, threads)?;
        Ok(Masa { layout, schedule, page_size: topo.page_size(), huge_pages: true })
    }

    /// MASA over an explicit layout (e.g. a hand-made one for a test).
    pub fn with_layout(layout: TeamLayout, page_size: usize) -> Masa {
        Masa { layout, schedule: Schedule::Static, page_size, huge_pages: true }
    }

    /// Whether allocations ask for transparent huge pages (default: yes).
    /// Chunk binding still works page by page; huge pages fill the inside
    /// of each node's range.
    pub fn huge_pages(mut self, yes: bool) -> Masa {
        self.huge_pages = yes;
        self
    }

    /// Whether allocations ask for transparent huge pages (what
    /// [`SpmvEngine`](crate::SpmvEngine) reports).
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_spmv::Masa;
    ///
    /// let masa = Masa::preprocess(1)?;
    /// assert!(masa.uses_huge_pages());
    /// assert!(!masa.huge_pages(false).uses_huge_pages());
    /// # Ok::<(), skelaff_spmv::Error>(())
    /// ```
    pub fn uses_huge_pages(&self) -> bool {
        self.huge_pages
    }

    /// The team layout.
    pub fn layout(&self) -> &TeamLayout {
        &self.layout
    }

    /// Number of threads.
    pub fn threads(&self) -> usize {
        self.layout.threads()
    }

    /// `mnodes`: how many nodes the team uses.
    pub fn mnodes(&self) -> usize {
        self.layout.threads_per_node().len()
    }

    /// `lcores`: the most threads (one per core) on one node.
    pub fn lcores(&self) -> usize {
        self.layout.threads_per_node().iter().map(|&(_, c)| c).max().unwrap_or(0)
    }

    /// The schedule (always static once preprocessed).
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// The base page size chunks are rounded to.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Starts the team this layout describes.
    ///
    /// # Errors
    ///
    /// As [`Team::new`].
    pub fn team(&self) -> Result<Team> {
        Team::new(self.layout.clone())
    }

    /// `masa_compute_chunks`: Algorithm 1 for `dim_total` over this team. The
    /// per-node sizes sum the threads actually on each node (with the same
    /// number of threads on every node, exactly Algorithm 1's grouping).
    pub fn compute_chunks(&self, dim_total: usize) -> Chunks {
        let per_thread = per_thread_sizes(dim_total, self.threads());
        let per_node = self.layout.node_groups().into_iter().map(|(_, r)| per_thread[r].iter().sum()).collect();
        Chunks { per_thread, per_node }
    }

    /// The row (or column) split for `kind`: Algorithm 1's chunks, or the
    /// entry-balanced split over `ptr`.
    pub fn split(&self, kind: SplitKind, ptr: &[u32]) -> Split {
        match kind {
            SplitKind::Rows => Split::from_sizes(&self.compute_chunks(ptr.len().saturating_sub(1)).per_thread),
            SplitKind::Nnz => Split::nnz(ptr, self.threads()),
        }
    }

    fn options(&self, policy: Policy) -> RegionOptions {
        let huge = if self.huge_pages { HugePages::Transparent } else { HugePages::Off };
        RegionOptions::new(policy).huge_pages(huge)
    }

    /// `masa_allocate`: `len` elements, page-aligned, no page touched yet
    /// (so a policy applied next decides where each page goes).
    ///
    /// # Errors
    ///
    /// Allocation errors.
    pub fn allocate<T: Zeroable>(&self, len: usize) -> Result<SharedArray<T>> {
        SharedArray::numa_zeroed(len, self.options(Policy::FirstTouch))
    }

    /// The page-rounded byte range of each node's chunks of an array of
    /// `len` elements of `elem_size` bytes mapped over `mapped` bytes, given
    /// per-thread element bounds. Nodes whose range rounds to nothing are
    /// left out. See the [module docs](self) for the rounding.
    ///
    /// # Panics
    ///
    /// If `bounds` does not have `threads() + 1` entries.
    pub fn node_ranges(&self, bounds: &[usize], elem_size: usize, mapped: usize) -> Vec<NodeRange> {
        assert_eq!(bounds.len(), self.threads() + 1, "one bound per thread plus one");
        let ps = self.page_size;
        let round =
            |b: usize| (b.saturating_mul(elem_size).saturating_add(ps / 2).saturating_sub(1) / ps * ps).min(mapped);
        let groups = self.layout.node_groups();
        let last = groups.len() - 1;
        groups
            .into_iter()
            .enumerate()
            .filter_map(|(g, (node, threads))| {
                let start = if g == 0 { 0 } else { round(bounds[threads.start]) };
                let end = if g == last { mapped } else { round(bounds[threads.end]) };
                (start < end).then_some(NodeRange { node, bytes: start..end })
            })
            .collect()
    }

    /// `masa_distribute` for one deterministically accessed array: binds
    /// each node's chunks (thread `t` owns elements `bounds[t]..bounds[t+1]`)
    /// to that node, page-rounded, migrating pages already touched. Returns
    /// the ranges bound. Heap (empty) arrays are left alone.
    ///
    /// # Errors
    ///
    /// [`Error::BadChunking`] if `bounds` does not fit the array or the
    /// team; `mbind` errors.
    pub fn bind_chunks<T>(&self, array: &mut SharedArray<T>, bounds: &[usize]) -> Result<Vec<NodeRange>> {
        if bounds.len() != self.threads() + 1 {
            return Err(Error::BadChunking { what: "one bound per team thread plus one", value: bounds.len() });
        }
        if bounds.windows(2).any(|w| w[0] > w[1]) || bounds.last().is_some_and(|&b| b > array.len()) {
            return Err(Error::BadChunking { what: "non-decreasing bounds inside the array", value: array.len() });
        }
        let Some(region) = array.region_mut() else { return Ok(Vec::new()) };
        let ranges = self.node_ranges(bounds, size_of::<T>(), region.mapped_len());
        for r in &ranges {
            let node = NodeSet::try_single(r.node).map_err(skelaff_numa_alloc::Error::from)?;
            region.apply_range(r.bytes.clone(), Policy::Bind(node), Apply::Migrate)?;
        }
        Ok(ranges)
    }

    /// `masa_distribute` for a non-deterministically accessed array:
    /// interleaves its pages over the team's nodes.
    ///
    /// # Errors
    ///
    /// `mbind` errors.
    pub fn interleave<T>(&self, array: &mut SharedArray<T>) -> Result<()> {
        let nodes = self.layout.nodes();
        if let Some(region) = array.region_mut() {
            region.rebind(Policy::Interleave(nodes))?;
        }
        Ok(())
    }

    /// Allocates `len` elements, page-aligned and untouched, with the policy
    /// `placement` gives an array accessed as `access` already applied.
    fn allocate_placed<T: Zeroable>(
        &self,
        len: usize,
        access: TeamAccess<'_>,
        placement: ArrayPlacement,
    ) -> Result<SharedArray<T>> {
        let mut a = self.allocate::<T>(len)?;
        match (placement, access) {
            (ArrayPlacement::FirstTouch, _) => {}
            (ArrayPlacement::Masa, TeamAccess::Deterministic(bounds)) => {
                self.bind_chunks(&mut a, bounds)?;
            }
            (ArrayPlacement::Masa, TeamAccess::NonDeterministic) | (ArrayPlacement::Interleave, _) => {
                self.interleave(&mut a)?;
            }
        }
        Ok(a)
    }

    /// Allocates a copy of `src` placed for `access` under `placement`:
    /// the pages are bound or interleaved first, then the calling thread
    /// writes the data (so the policy, not the writer, decides where pages
    /// go, except under [`ArrayPlacement::FirstTouch`], where the writer's
    /// node gets everything, as in a naive program).
    ///
    /// # Errors
    ///
    /// Allocation and `mbind` errors; [`Error::BadChunking`] as in
    /// [`Masa::bind_chunks`].
    pub fn place<T: Copy + Zeroable>(
        &self,
        src: &[T],
        access: TeamAccess<'_>,
        placement: ArrayPlacement,
    ) -> Result<SharedArray<T>> {
        let mut a = self.allocate_placed::<T>(src.len(), access, placement)?;
        a.copy_from_slice(src);
        Ok(a)
    }

    /// A zeroed vector of `len` elements placed for `access`, every page
    /// written by the calling thread (see [`Masa::place`]).
    ///
    /// # Errors
    ///
    /// As [`Masa::place`].
    pub fn place_zeroed<T: Copy + Zeroable + Default>(
        &self,
        len: usize,
        access: TeamAccess<'_>,
        placement: ArrayPlacement,
    ) -> Result<SharedArray<T>> {
        let mut a = self.allocate_placed::<T>(len, access, placement)?;
        a.fill(T::default());
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::team::ThreadSlot;
    use proptest::prelude::*;

    #[test]
    fn only_the_static_schedule_passes() {
        let topo = Topology::get().unwrap();
        for s in [Schedule::Dynamic(None), Schedule::StaticChunk(8), Schedule::Guided(Some(1)), Schedule::Auto] {
            let e = Masa::preprocess_with(topo, 1, s).unwrap_err();
            assert!(matches!(e, Error::NonStaticSchedule { .. }), "{e}");
            assert!(e.to_string().contains(&s.to_string()), "{e}");
        }
        assert!(Masa::preprocess_with(topo, 1, Schedule::Static).is_ok());
        assert!(matches!(Masa::preprocess_with(topo, 0, Schedule::Static), Err(Error::ZeroThreads)));
    }

    fn layout(nodes: &[usize]) -> TeamLayout {
        TeamLayout::from_slots(nodes.iter().enumerate().map(|(cpu, &node)| ThreadSlot { cpu, node }).collect()).unwrap()
    }

    #[test]
    fn page_rounding_goes_to_the_nearest_boundary() {
        let masa = Masa::with_layout(layout(&[0, 0, 1, 1]), 4096);
        // f64 elements: thread bounds at 0, 300, 700 (byte 5600), 900, 1000 (mapped 8192).
        let r = masa.node_ranges(&[0, 300, 700, 900, 1000], 8, 8192);
        // Node 0 owns bytes 0..5600. Page 1 (4096..8192) has its middle at
        // 6144, which node 1 owns, so the boundary rounds down to 4096.
        assert_eq!(r, vec![NodeRange { node: 0, bytes: 0..4096 }, NodeRange { node: 1, bytes: 4096..8192 }]);
        // Boundary at byte 6400: past the middle, so page 1 stays with node 0
        // and node 1's chunk rounds to nothing.
        let r = masa.node_ranges(&[0, 300, 800, 900, 1000], 8, 8192);
        assert_eq!(r, vec![NodeRange { node: 0, bytes: 0..8192 }]);
        assert_eq!(masa.compute_chunks(10).per_node, [6, 4]);
    }

    proptest! {
        #[test]
        fn rounding_moves_boundaries_at_most_half_a_page(
            nodes in prop::collection::vec(0usize..4, 1..9),
            dim in 0usize..5000,
            elem in prop::sample::select(vec![4usize, 8]),
        ) {
            let mut nodes = nodes;
            nodes.sort_unstable();
            let masa = Masa::with_layout(layout(&nodes), 4096);
            let split = Split::from_sizes(&masa.compute_chunks(dim).per_thread);
            let mapped = (dim * elem).max(1).next_multiple_of(4096);
            let ranges = masa.node_ranges(split.bounds(), elem, mapped);
            // The ranges tile the mapping in node order.
            let mut at = 0;
            for r in &ranges {
                prop_assert_eq!(r.bytes.start, at);
                prop_assert_eq!(r.bytes.start % 4096, 0);
                at = r.bytes.end;
            }
            prop_assert_eq!(at, mapped);
            // Each page goes to the node of the thread owning the element at its middle.
            let owner = |byte: usize| {
                let e = byte / elem;
                (0..split.threads()).find(|&t| split.range(t).contains(&e)).map(|t| masa.layout().node_of(t))
            };
            for r in &ranges {
                for page in (r.bytes.start..r.bytes.end).step_by(4096) {
                    let mid = page + 2048;
                    if mid < dim * elem {
                        prop_assert_eq!(Some(r.node), owner(mid), "page at {}", page);
                    }
                }
            }
        }

        #[test]
        fn algorithm1_matches_the_layout_version(dim in 0usize..100_000, mnodes in 1usize..5, lcores in 1usize..7) {
            let threads = mnodes * lcores;
            let nodes: Vec<usize> = (0..threads).map(|t| t / lcores).collect();
            let masa = Masa::with_layout(layout(&nodes), 4096);
            let a = algorithm1(dim, threads, mnodes, lcores).unwrap();
            prop_assert_eq!(&masa.compute_chunks(dim), &a);
            prop_assert_eq!(a.per_thread.iter().sum::<usize>(), dim);
            let (lo, hi) = (a.per_thread.iter().min().unwrap(), a.per_thread.iter().max().unwrap());
            prop_assert!(hi - lo <= 1);
        }
    }
}
