//! The range-to-thread map of a static schedule, and the nodes that own the
//! ranges: what a partitioned array places its pages by, and what the
//! threads of a parallel loop (the spmv `Team`, the worklist's per-node
//! pools) iterate over so that each works next to its data.

use core::marker::PhantomData;
use core::ops::Range;
use core::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use skelaff_numa_alloc::{Mapping, Topology};

use crate::error::{Error, Result};

/// A static schedule of `len` loop indices over threads, each thread on a
/// node: thread `t` handles [`thread_range(t)`](Self::thread_range), and the
/// node of thread `t` owns those elements in every partitioned array built
/// with this partition.
///
/// Threads get contiguous, balanced ranges in thread order (the sizes
/// differ by at most one, or by at most `align` with [`Partition::aligned`]).
/// Threads need not be grouped by node, but when they are (as the spmv
/// `Team` orders them) each node owns one contiguous range.
///
/// # Examples
///
/// ```
/// use skelaff_arrays::Partition;
///
/// // Four threads, two on node 0 and two on node 1 (a Team's layout).
/// let p = Partition::new(10, &[0, 0, 1, 1])?;
/// assert_eq!(p.thread_range(0), 0..2);
/// assert_eq!(p.thread_range(1), 2..5);
/// assert_eq!(p.thread_range(3), 7..10);
/// assert_eq!(p.node_ranges(), vec![(0, 0..5), (1, 5..10)]);
/// assert_eq!(p.owner(7), 1);
/// # Ok::<(), skelaff_arrays::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Partition {
    // Invariant: `bounds.len() == nodes.len() + 1 >= 2`, `bounds[0] == 0`,
    // `bounds` non-decreasing, `bounds[threads] == len`.
    bounds: Vec<usize>,
    nodes: Vec<usize>,
}

impl Partition {
    /// `len` indices split evenly over threads whose nodes are `thread_nodes`
    /// (thread 0 first).
    ///
    /// # Errors
    ///
    /// [`Error::ZeroLength`]; [`Error::ZeroThreads`] for an empty list.
    pub fn new(len: usize, thread_nodes: &[usize]) -> Result<Partition> {
        Self::aligned(len, thread_nodes, 1)
    }

    /// As [`Partition::new`], with every boundary between threads a
    /// multiple of `align` elements (for instance the elements per page, so
    /// that no page is shared by two threads). `align` 0 counts as 1.
    ///
    /// # Errors
    ///
    /// As [`Partition::new`].
    pub fn aligned(len: usize, thread_nodes: &[usize], align: usize) -> Result<Partition> {
        if len == 0 {
            return Err(Error::ZeroLength);
        }
        if thread_nodes.is_empty() {
            return Err(Error::ZeroThreads);
        }
        let align = align.max(1);
        let threads = thread_nodes.len();
        let mut bounds = Vec::with_capacity(threads + 1);
        bounds.push(0);
        for t in 1..threads {
            // Exact in u128: t * len / threads, then to the nearest multiple of align.
            let ideal = (t as u128 * len as u128 / threads as u128) as usize;
            let b = ideal.div_ceil(align).saturating_mul(align).min(len);
            let below = (ideal / align) * align;
            let b = if ideal - below <= b - ideal { below } else { b };
            bounds.push(b.max(*bounds.last().unwrap_or(&0)));
        }
        bounds.push(len);
        Ok(Partition { bounds, nodes: thread_nodes.to_vec() })
    }

    /// `len` indices over one thread per CPU this process may use, in the
    /// scatter order of the foundation crate grouped by node: the schedule
    /// of a team that uses the whole machine.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroLength`]; [`Error::Numa`] if the topology cannot be read.
    pub fn for_machine(len: usize) -> Result<Partition> {
        let topo = Topology::get()?;
        Self::new(len, &machine_thread_nodes(topo)?)
    }

    /// Number of indices.
    pub fn len(&self) -> usize {
        self.bounds[self.bounds.len() - 1]
    }

    /// Always false: partitions cover at least one index.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Number of threads.
    pub fn threads(&self) -> usize {
        self.nodes.len()
    }

    /// The indices thread `t` handles.
    ///
    /// # Panics
    ///
    /// If `t >= threads()`.
    pub fn thread_range(&self, t: usize) -> Range<usize> {
        self.bounds[t]..self.bounds[t + 1]
    }

    /// The node of thread `t`.
    ///
    /// # Panics
    ///
    /// If `t >= threads()`.
    pub fn thread_node(&self, t: usize) -> usize {
        self.nodes[t]
    }

    /// The nodes of all threads, thread 0 first.
    pub fn thread_nodes(&self) -> &[usize] {
        &self.nodes
    }

    /// The boundaries: thread `t` handles `bounds[t]..bounds[t + 1]`.
    pub fn bounds(&self) -> &[usize] {
        &self.bounds
    }

    /// The thread that handles index `i` (the last thread for `i >= len`).
    pub fn thread_of(&self, i: usize) -> usize {
        // The last boundary <= i, skipping empty ranges.
        let t = self.bounds.partition_point(|&b| b <= i).saturating_sub(1);
        t.min(self.threads() - 1)
    }

    /// The node that owns index `i` (the last thread's node for `i >= len`).
    pub fn owner(&self, i: usize) -> usize {
        self.nodes[self.thread_of(i)]
    }

    /// Maximal runs of consecutive indices with the same owner, in index
    /// order: `(node, range)`. With threads grouped by node, one run per node.
    pub fn node_ranges(&self) -> Vec<(usize, Range<usize>)> {
        let mut runs: Vec<(usize, Range<usize>)> = Vec::new();
        for t in 0..self.threads() {
            let r = self.thread_range(t);
            if r.is_empty() {
                continue;
            }
            match runs.last_mut() {
                Some((n, last)) if *n == self.nodes[t] && last.end == r.start => last.end = r.end,
                _ => runs.push((self.nodes[t], r)),
            }
        }
        runs
    }

    /// The indices each node owns in all, by node: `(node, count)`, ascending.
    pub fn elements_per_node(&self) -> Vec<(usize, usize)> {
        let mut v: Vec<(usize, usize)> = Vec::new();
        for (node, r) in self.node_ranges() {
            match v.iter_mut().find(|(n, _)| *n == node) {
                Some((_, c)) => *c += r.len(),
                None => v.push((node, r.len())),
            }
        }
        v.sort_unstable();
        v
    }
}

/// The node of each thread when one thread runs on every CPU this process
/// may use, in scatter order grouped by node (threads on CPUs without a
/// node count as on the first allowed node).
pub(crate) fn machine_thread_nodes(topo: &Topology) -> Result<Vec<usize>> {
    let cpus = topo.allowed_cpus().len().max(1);
    let plan = Mapping::Scatter.plan(topo, cpus)?;
    let fallback = topo.allowed_nodes().first().unwrap_or(0);
    let mut nodes: Vec<usize> = plan.slots.iter().map(|s| s.node.unwrap_or(fallback)).collect();
    nodes.sort_unstable();
    Ok(nodes)
}

/// Disjoint mutable views of an array's elements, one per thread of a
/// partition, that the threads of a parallel loop take from a shared
/// reference: each range can be taken once.
///
/// # Examples
///
/// ```
/// use skelaff_arrays::{Array, Partition};
///
/// let mut a = Array::<u32>::builder(1000).build()?;
/// let p = Partition::new(1000, &[0, 0])?;
/// let parts = a.parts_mut(&p)?;
/// std::thread::scope(|s| {
///     for t in 0..2 {
///         let (parts, p) = (&parts, &p);
///         s.spawn(move || {
///             let out = parts.take(t).expect("each thread takes its own range once");
///             for (x, i) in out.iter_mut().zip(p.thread_range(t)) {
///                 *x = i as u32;
///             }
///         });
///     }
/// });
/// assert!(parts.take(0).is_none());
/// drop(parts);
/// assert_eq!(a.get(999), Some(999));
/// # Ok::<(), skelaff_arrays::Error>(())
/// ```
#[derive(Debug)]
pub struct PartsMut<'a, T> {
    // Invariant: `ptr..ptr + bounds[last]` are elements exclusively borrowed
    // for 'a; `taken[t]` is set once range `t` has been handed out.
    ptr: *mut T,
    bounds: Vec<usize>,
    taken: Box<[AtomicBool]>,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a `PartsMut` hands out disjoint `&mut [T]` ranges, each at most
// once; giving those to other threads is sending parts of a `&mut [T]`,
// which needs `T: Send`.
unsafe impl<T: Send> Send for PartsMut<'_, T> {}
// SAFETY: as above; `take` through `&self` is guarded by the atomic flags.
unsafe impl<T: Send> Sync for PartsMut<'_, T> {}

impl<'a, T> PartsMut<'a, T> {
    /// Splits `slice` (an ordinary slice or an array's master copy) by
    /// `partition`.
    ///
    /// # Errors
    ///
    /// [`Error::PartitionLength`] unless the lengths are equal.
    pub fn new(slice: &'a mut [T], partition: &Partition) -> Result<Self> {
        if partition.len() != slice.len() {
            return Err(Error::PartitionLength { partition_len: partition.len(), array_len: slice.len() });
        }
        Ok(PartsMut {
            ptr: slice.as_mut_ptr(),
            bounds: partition.bounds().to_vec(),
            taken: (0..partition.threads()).map(|_| AtomicBool::new(false)).collect(),
            _borrow: PhantomData,
        })
    }

    /// Thread `t`'s range, mutably, the first time it is asked for; `None`
    /// after that or for a thread the partition does not have.
    #[allow(clippy::mut_from_ref)]
    pub fn take(&self, t: usize) -> Option<&'a mut [T]> {
        let flag = self.taken.get(t)?;
        if flag.swap(true, Ordering::AcqRel) {
            return None;
        }
        let (start, end) = (self.bounds[t], self.bounds[t + 1]);
        // SAFETY: `start..end` lies inside the borrowed slice (partition
        // bounds are non-decreasing and end at its length); the ranges of
        // different threads are disjoint, and the flag makes this the only
        // reference to this range for 'a.
        Some(unsafe { core::slice::from_raw_parts_mut(self.ptr.add(start), end - start) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn ranges_cover_every_index_exactly_once(
            len in 1usize..5000,
            nodes in proptest::collection::vec(0usize..8, 1..40),
            align in 0usize..600,
        ) {
            let p = Partition::aligned(len, &nodes, align).unwrap();
            prop_assert_eq!(p.threads(), nodes.len());
            let mut seen = vec![0u8; len];
            for (t, &node) in nodes.iter().enumerate() {
                for i in p.thread_range(t) {
                    seen[i] += 1;
                    prop_assert_eq!(p.thread_of(i), t);
                    prop_assert_eq!(p.owner(i), node);
                }
                let r = p.thread_range(t);
                if t > 0 && r.start < len && align > 1 {
                    prop_assert_eq!(r.start % align, 0);
                }
            }
            prop_assert!(seen.iter().all(|&c| c == 1));
            // Node runs cover the same indices, in order, without gaps.
            let runs = p.node_ranges();
            prop_assert_eq!(runs.first().map(|r| r.1.start), Some(0));
            prop_assert_eq!(runs.last().map(|r| r.1.end), Some(len));
            for w in runs.windows(2) {
                prop_assert_eq!(w[0].1.end, w[1].1.start);
                prop_assert!(w[0].0 != w[1].0);
            }
            let total: usize = p.elements_per_node().iter().map(|&(_, c)| c).sum();
            prop_assert_eq!(total, len);
        }

        #[test]
        fn unaligned_splits_are_balanced(len in 1usize..100_000, threads in 1usize..64) {
            let p = Partition::new(len, &vec![0; threads]).unwrap();
            let sizes: Vec<usize> = (0..threads).map(|t| p.thread_range(t).len()).collect();
            let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            prop_assert!(hi - lo <= 1, "{:?}", sizes);
        }
    }

    #[test]
    fn bad_partitions_are_refused() {
        assert!(matches!(Partition::new(0, &[0]), Err(Error::ZeroLength)));
        assert!(matches!(Partition::new(5, &[]), Err(Error::ZeroThreads)));
        assert!(Partition::for_machine(100).unwrap().threads() >= 1);
    }

    #[test]
    fn ungrouped_threads_give_several_runs_per_node() {
        let p = Partition::new(8, &[0, 1, 0, 1]).unwrap();
        assert_eq!(p.node_ranges(), vec![(0, 0..2), (1, 2..4), (0, 4..6), (1, 6..8)]);
        assert_eq!(p.elements_per_node(), vec![(0, 4), (1, 4)]);
    }

    #[test]
    fn parts_are_taken_once_and_must_match_the_length() {
        let mut v = vec![0u8; 10];
        let p = Partition::new(10, &[0, 0, 0]).unwrap();
        assert!(PartsMut::new(&mut v[..9], &p).is_err());
        let parts = PartsMut::new(&mut v, &p).unwrap();
        let a = parts.take(1).unwrap();
        a.fill(7);
        assert!(parts.take(1).is_none() && parts.take(3).is_none());
        let c = parts.take(2).unwrap();
        c.fill(9);
        drop(parts);
        assert_eq!(v, [0, 0, 0, 7, 7, 7, 9, 9, 9, 9]);
    }
}
