//! MASA: memory affinity for the shared arrays of a sparse computation.
//!
//! The paper's four steps, in Rust form:
//!
//! | paper | here |
//! |---|---|
//! | `masa_preprocess()`: nodes and cores per node, the thread count, refuse a non-static schedule | [`Masa::preprocess`] / [`Masa::preprocess_with`] |
//! | `masa_allocate(&array)`: page-aligned shared arrays | [`Masa::allocate`] |
//! | `masa_compute_chunks(dim, nthreads, ptrA)`: Algorithm 1 | [`algorithm1`], [`Masa::compute_chunks`], [`Split`] |
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

use core::fmt;
use core::ops::Range;
use core::str::FromStr;

use skelaff_numa_alloc::{Apply, HugePages, NodeSet, Policy, RegionOptions, Topology, Zeroable};

use crate::array::SharedArray;
use crate::error::{Error, Result};
use crate::team::{Layout, Team};

/// A loop work-sharing schedule, as OpenMP's `OMP_SCHEDULE` names them.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Schedule {
    /// Contiguous, (almost) equal chunks, one per thread, fixed before the
    /// loop runs. With a chunk size, chunks of that size are dealt round
    /// robin instead.
    #[default]
    Static,
    /// `static,N`: chunks of `N` iterations dealt round robin.
    StaticChunk(usize),
    /// Chunks handed out at run time to whichever thread asks.
    Dynamic(Option<usize>),
    /// Shrinking chunks handed out at run time.
    Guided(Option<usize>),
    /// The runtime decides.
    Auto,
    /// Whatever the environment says at run time.
    Runtime,
}

impl Schedule {
    /// The schedule the environment asks for: `SKELAFF_SCHEDULE`, else
    /// `OMP_SCHEDULE`, else static. Like OpenMP, the name is case-insensitive.
    ///
    /// # Errors
    ///
    /// [`Error::BadSchedule`] when the variable does not parse.
    pub fn from_env() -> Result<Schedule> {
        for var in ["SKELAFF_SCHEDULE", "OMP_SCHEDULE"] {
            if let Ok(v) = std::env::var(var) {
                if !v.trim().is_empty() {
                    return v.parse();
                }
            }
        }
        Ok(Schedule::Static)
    }

    /// Whether each thread always gets the same contiguous chunk, which
    /// MASA needs.
    pub fn is_static(&self) -> bool {
        *self == Schedule::Static
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let chunk = |f: &mut fmt::Formatter<'_>, name: &str, c: Option<usize>| match c {
            Some(c) => write!(f, "{name},{c}"),
            None => f.write_str(name),
        };
        match *self {
            Schedule::Static => f.write_str("static"),
            Schedule::StaticChunk(c) => chunk(f, "static", Some(c)),
            Schedule::Dynamic(c) => chunk(f, "dynamic", c),
            Schedule::Guided(c) => chunk(f, "guided", c),
            Schedule::Auto => f.write_str("auto"),
            Schedule::Runtime => f.write_str("runtime"),
        }
    }
}

/// Parses OpenMP's forms: `static`, `static,4`, `dynamic`, `dynamic,2`,
/// `guided[,N]`, `auto`, `runtime`, optionally with a `monotonic:` or
/// `nonmonotonic:` modifier.
impl FromStr for Schedule {
    type Err = Error;
    fn from_str(s: &str) -> Result<Schedule> {
        let bad = || Error::BadSchedule { input: s.to_owned() };
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix("monotonic:").or_else(|| t.strip_prefix("nonmonotonic:")).unwrap_or(&t);
        let (kind, chunk) = match t.split_once(',') {
            Some((k, c)) => {
                let c: usize = c.trim().parse().map_err(|_| bad())?;
                if c == 0 {
                    return Err(bad());
                }
                (k.trim(), Some(c))
            }
            None => (t.trim(), None),
        };
        match (kind, chunk) {
            ("static", None) => Ok(Schedule::Static),
            ("static", Some(c)) => Ok(Schedule::StaticChunk(c)),
            ("dynamic", c) => Ok(Schedule::Dynamic(c)),
            ("guided", c) => Ok(Schedule::Guided(c)),
            ("auto", None) => Ok(Schedule::Auto),
            ("runtime", None) => Ok(Schedule::Runtime),
            _ => Err(bad()),
        }
    }
}

/// The output of Algorithm 1: how many rows (or columns) each thread and
/// each node gets.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Chunks {
    /// `dim_per_thread`: chunk size of thread `i` (0-based here).
    pub per_thread: Vec<usize>,
    /// `dim_per_node`: chunk size of node `j` (the `j`-th node used, 0-based).
    pub per_node: Vec<usize>,
}

/// Algorithm 1 of the paper, exactly: chunk sizes per thread and per node
/// for `dim_total` rows over `nthreads` threads on `mnodes` nodes of
/// `lcores` cores, threads numbered node by node (threads `lcores*j ..
/// lcores*(j+1)` on node `j`).
///
/// Every thread gets `ceil(dim_total / nthreads)` except the last
/// `nthreads * ceil(..) - dim_total`, which get one less; a node's size is
/// the sum over its threads. With fewer threads than `mnodes * lcores`
/// (the paper assumes one per core) the missing threads count as 0.
///
/// # Errors
///
/// [`Error::BadChunking`] when a count is 0 or there are more threads than
/// cores (`nthreads > mnodes * lcores`): a thread without a core has no node.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::masa::algorithm1;
///
/// // 10 rows, 4 threads on 2 nodes of 2 cores: ceil(10/4) = 3, and the last
/// // 4*3 - 10 = 2 threads get one less.
/// let c = algorithm1(10, 4, 2, 2)?;
/// assert_eq!(c.per_thread, [3, 3, 2, 2]);
/// assert_eq!(c.per_node, [6, 4]);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub fn algorithm1(dim_total: usize, nthreads: usize, mnodes: usize, lcores: usize) -> Result<Chunks> {
    if nthreads == 0 {
        return Err(Error::BadChunking { what: "at least one thread", value: 0 });
    }
    if mnodes == 0 {
        return Err(Error::BadChunking { what: "at least one NUMA node", value: 0 });
    }
    if lcores == 0 {
        return Err(Error::BadChunking { what: "at least one core per node", value: 0 });
    }
    if nthreads > mnodes.saturating_mul(lcores) {
        return Err(Error::BadChunking {
            what: "at most one thread per core (nthreads <= mnodes * lcores)",
            value: nthreads,
        });
    }
    let per_thread = per_thread_sizes(dim_total, nthreads);
    let per_node = (0..mnodes)
        .map(|j| (lcores * j..lcores * (j + 1)).map(|i| per_thread.get(i).copied().unwrap_or(0)).sum())
        .collect();
    Ok(Chunks { per_thread, per_node })
}

/// The first half of Algorithm 1: `ceil(dim/n)` for the first
/// `n - offset` threads, one less for the last `offset`.
fn per_thread_sizes(dim_total: usize, nthreads: usize) -> Vec<usize> {
    let per_thread_dim = dim_total.div_ceil(nthreads);
    let virtual_dim = per_thread_dim * nthreads;
    let offset = virtual_dim - dim_total;
    (0..nthreads).map(|i| if i < nthreads - offset { per_thread_dim } else { per_thread_dim - 1 }).collect()
}

/// How to split rows (or columns) among threads.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum SplitKind {
    /// Algorithm 1: (almost) equal numbers of rows per thread.
    #[default]
    Rows,
    /// Balance stored entries plus rows per thread (in the byte model a
    /// row costs what an entry costs), for irregular matrices whose rows
    /// differ in length.
    Nnz,
}

impl fmt::Display for SplitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SplitKind::Rows => "rows",
            SplitKind::Nnz => "nnz",
        })
    }
}

impl FromStr for SplitKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "rows" => Ok(SplitKind::Rows),
            "nnz" => Ok(SplitKind::Nnz),
            _ => Err(Error::Parse { input: s.to_owned(), expected: "rows or nnz" }),
        }
    }
}

/// Contiguous chunks of `0..dim`, one per thread: thread `t` gets
/// `bounds[t]..bounds[t + 1]`.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::Split;
///
/// // Row pointers of a matrix whose first row holds most entries.
/// let ptr = [0, 90, 92, 94, 96, 98, 100];
/// assert_eq!(Split::equal(6, 2).bounds(), &[0, 3, 6]);
/// // Balancing entries + rows: 106 units, thread 0 takes row 0 (91 units).
/// assert_eq!(Split::nnz(&ptr, 2).bounds(), &[0, 1, 6]);
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Split {
    bounds: Vec<usize>,
}

impl Split {
    /// From explicit bounds.
    ///
    /// # Errors
    ///
    /// [`Error::BadChunking`] unless there are at least two bounds, the
    /// first is 0 and they do not decrease.
    pub fn from_bounds(bounds: Vec<usize>) -> Result<Split> {
        if bounds.len() < 2 || bounds[0] != 0 || bounds.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::BadChunking {
                what: "non-decreasing bounds starting at 0, at least one chunk",
                value: bounds.len(),
            });
        }
        Ok(Split { bounds })
    }

    /// Chunks of the sizes `per_thread`, in order.
    pub fn from_sizes(per_thread: &[usize]) -> Split {
        let mut bounds = Vec::with_capacity(per_thread.len() + 1);
        bounds.push(0);
        let mut acc = 0;
        for &s in per_thread {
            acc += s;
            bounds.push(acc);
        }
        Split { bounds }
    }

    /// Algorithm 1's per-thread sizes for `dim` over `threads` (at least 1).
    pub fn equal(dim: usize, threads: usize) -> Split {
        Split::from_sizes(&per_thread_sizes(dim, threads.max(1)))
    }

    /// Balances `ptr[r] + r` (entries plus rows before row `r`): thread `t`
    /// starts at the first row where that reaches `t / threads` of the total.
    /// `ptr` is a row (or column) pointer array; `threads` at least 1.
    pub fn nnz(ptr: &[u32], threads: usize) -> Split {
        if ptr.is_empty() {
            return Split { bounds: vec![0; threads.max(1) + 1] };
        }
        Split::balanced(ptr.len() - 1, threads, |r| u128::from(ptr[r]) + r as u128)
    }

    /// Thread `t` starts at the first `r` in `0..=dim` where `weight(r)`
    /// (non-decreasing, `weight(0) == 0`) reaches `t / threads` of
    /// `weight(dim)`; the last thread ends at `dim`.
    pub(crate) fn balanced(dim: usize, threads: usize, weight: impl Fn(usize) -> u128) -> Split {
        let threads = threads.max(1) as u128;
        let total = weight(dim);
        let mut bounds: Vec<usize> = (0..threads)
            .map(|t| {
                let target = t * total;
                let (mut lo, mut hi) = (0usize, dim);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if weight(mid) * threads >= target {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                lo
            })
            .collect();
        bounds.push(dim);
        Split { bounds }
    }

    /// The bounds (`threads + 1` of them).
    pub fn bounds(&self) -> &[usize] {
        &self.bounds
    }

    /// Thread `t`'s chunk.
    ///
    /// # Panics
    ///
    /// If `t >= threads()`.
    pub fn range(&self, t: usize) -> Range<usize> {
        self.bounds[t]..self.bounds[t + 1]
    }

    /// Number of chunks.
    pub fn threads(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The dimension split.
    pub fn dim(&self) -> usize {
        self.bounds[self.bounds.len() - 1]
    }

    /// The bounds carried over to an array indexed by `ptr` (e.g. from rows
    /// to the entries of those rows): `ptr[bounds[t]]`.
    ///
    /// # Panics
    ///
    /// If `ptr` is shorter than `dim() + 1`.
    pub fn through(&self, ptr: &[u32]) -> Vec<usize> {
        self.bounds.iter().map(|&b| ptr[b] as usize).collect()
    }
}

/// Where to put the shared arrays of an operator.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
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

impl fmt::Display for ArrayPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ArrayPlacement::FirstTouch => "first-touch",
            ArrayPlacement::Masa => "masa",
            ArrayPlacement::Interleave => "interleave",
        })
    }
}

impl FromStr for ArrayPlacement {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "first-touch" | "firsttouch" => Ok(ArrayPlacement::FirstTouch),
            "masa" => Ok(ArrayPlacement::Masa),
            "interleave" => Ok(ArrayPlacement::Interleave),
            _ => Err(Error::Parse { input: s.to_owned(), expected: "first-touch, masa or interleave" }),
        }
    }
}

/// How a thread team touches one shared array (the paper's classification).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Access<'a> {
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
    layout: Layout,
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
        let layout = Layout::scatter(topo, threads)?;
        Ok(Masa { layout, schedule, page_size: topo.page_size(), huge_pages: true })
    }

    /// MASA over an explicit layout (e.g. a hand-made one for a test).
    pub fn with_layout(layout: Layout, page_size: usize) -> Masa {
        Masa { layout, schedule: Schedule::Static, page_size, huge_pages: true }
    }

    /// Whether allocations ask for transparent huge pages (default: yes).
    /// Chunk binding still works page by page; huge pages fill the inside
    /// of each node's range.
    pub fn huge_pages(mut self, yes: bool) -> Masa {
        self.huge_pages = yes;
        self
    }

    /// Whether allocations ask for transparent huge pages.
    pub fn uses_huge_pages(&self) -> bool {
        self.huge_pages
    }

    /// The team layout.
    pub fn layout(&self) -> &Layout {
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
        access: Access<'_>,
        placement: ArrayPlacement,
    ) -> Result<SharedArray<T>> {
        let mut a = self.allocate::<T>(src.len())?;
        match (placement, access) {
            (ArrayPlacement::FirstTouch, _) => {}
            (ArrayPlacement::Masa, Access::Deterministic(bounds)) => {
                self.bind_chunks(&mut a, bounds)?;
            }
            (ArrayPlacement::Masa, Access::NonDeterministic) | (ArrayPlacement::Interleave, _) => {
                self.interleave(&mut a)?;
            }
        }
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
        access: Access<'_>,
        placement: ArrayPlacement,
    ) -> Result<SharedArray<T>> {
        let mut a = self.allocate::<T>(len)?;
        match (placement, access) {
            (ArrayPlacement::FirstTouch, _) => {}
            (ArrayPlacement::Masa, Access::Deterministic(bounds)) => {
                self.bind_chunks(&mut a, bounds)?;
            }
            (ArrayPlacement::Masa, Access::NonDeterministic) | (ArrayPlacement::Interleave, _) => {
                self.interleave(&mut a)?;
            }
        }
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
    fn algorithm1_worked_examples() {
        // Divisible: 12 rows, 4 threads, 2 nodes x 2 cores.
        let c = algorithm1(12, 4, 2, 2).unwrap();
        assert_eq!((c.per_thread.as_slice(), c.per_node.as_slice()), (&[3, 3, 3, 3][..], &[6, 6][..]));
        // Not divisible: 75000 rows over 7 threads on 1 node of 8 cores:
        // ceil = 10715, virtual 75005, offset 5: two threads of 10715, five of 10714.
        let c = algorithm1(75000, 7, 1, 8).unwrap();
        assert_eq!(c.per_thread, [10715, 10715, 10714, 10714, 10714, 10714, 10714]);
        assert_eq!(c.per_node, [75000]);
        // 10 rows, 6 threads, 3 nodes x 2: ceil = 2, virtual 12, offset 2.
        let c = algorithm1(10, 6, 3, 2).unwrap();
        assert_eq!(c.per_thread, [2, 2, 2, 2, 1, 1]);
        assert_eq!(c.per_node, [4, 4, 2]);
        // Fewer rows than threads: 3 rows, 4 threads: ceil 1, offset 1.
        let c = algorithm1(3, 4, 4, 1).unwrap();
        assert_eq!(c.per_thread, [1, 1, 1, 0]);
        assert_eq!(c.per_node, [1, 1, 1, 0]);
        // The paper's machine: 24 threads on 4 nodes of 6 cores, NAS class C.
        let c = algorithm1(150_000, 24, 4, 6).unwrap();
        assert_eq!(c.per_thread, vec![6250; 24]);
        assert_eq!(c.per_node, vec![37_500; 4]);
        // Fewer threads than cores: the missing ones count as 0.
        assert_eq!(algorithm1(9, 3, 2, 2).unwrap().per_node, [6, 3]);
        assert_eq!(algorithm1(0, 2, 1, 2).unwrap().per_thread, [0, 0]);
    }

    #[test]
    fn algorithm1_refuses_nonsense() {
        assert!(matches!(algorithm1(5, 0, 1, 1), Err(Error::BadChunking { .. })));
        assert!(matches!(algorithm1(5, 1, 0, 1), Err(Error::BadChunking { .. })));
        assert!(matches!(algorithm1(5, 1, 1, 0), Err(Error::BadChunking { .. })));
        let e = algorithm1(5, 5, 2, 2).unwrap_err();
        assert!(e.to_string().contains("one thread per core"), "{e}");
    }

    #[test]
    fn schedules_parse_and_only_static_passes() {
        for (s, want) in [
            ("static", Schedule::Static),
            ("STATIC", Schedule::Static),
            (" static,4", Schedule::StaticChunk(4)),
            ("dynamic", Schedule::Dynamic(None)),
            ("dynamic,2", Schedule::Dynamic(Some(2))),
            ("nonmonotonic:guided,8", Schedule::Guided(Some(8))),
            ("auto", Schedule::Auto),
            ("runtime", Schedule::Runtime),
        ] {
            assert_eq!(s.parse::<Schedule>().unwrap(), want, "{s}");
        }
        for bad in ["", "stat", "dynamic,", "dynamic,x", "static,0", "auto,3"] {
            assert!(matches!(bad.parse::<Schedule>(), Err(Error::BadSchedule { .. })), "{bad}");
        }
        let topo = Topology::get().unwrap();
        for s in [Schedule::Dynamic(None), Schedule::StaticChunk(8), Schedule::Guided(Some(1)), Schedule::Auto] {
            let e = Masa::preprocess_with(topo, 1, s).unwrap_err();
            assert!(matches!(e, Error::NonStaticSchedule { .. }), "{e}");
            assert!(e.to_string().contains(&s.to_string()), "{e}");
        }
        assert!(Masa::preprocess_with(topo, 1, Schedule::Static).is_ok());
        assert!(matches!(Masa::preprocess_with(topo, 0, Schedule::Static), Err(Error::ZeroThreads)));
    }

    fn layout(nodes: &[usize]) -> Layout {
        Layout::from_slots(nodes.iter().enumerate().map(|(cpu, &node)| ThreadSlot { cpu, node }).collect()).unwrap()
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

        #[test]
        fn nnz_splits_are_monotone_and_balanced(rows in prop::collection::vec(0u32..50, 0..200), threads in 1usize..9) {
            let mut ptr = vec![0u32];
            for r in &rows { ptr.push(ptr.last().unwrap() + r); }
            let s = Split::nnz(&ptr, threads);
            prop_assert_eq!(s.threads(), threads);
            prop_assert_eq!(s.dim(), rows.len());
            prop_assert!(s.bounds().windows(2).all(|w| w[0] <= w[1]));
            // No chunk exceeds its fair share by more than one row's weight.
            let total = (ptr[rows.len()] as usize + rows.len()) as f64;
            let heaviest = rows.iter().map(|&r| r as usize + 1).max().unwrap_or(0) as f64;
            for t in 0..threads {
                let r = s.range(t);
                let w = (ptr[r.end] - ptr[r.start]) as usize + r.len();
                prop_assert!(w as f64 <= total / threads as f64 + heaviest + 1e-9, "thread {} weight {}", t, w);
            }
        }
    }
}
