//! Where a team's threads run: one CPU (and its node) per thread, grouped
//! by node so that the threads of one node have consecutive indices, as
//! Algorithm 1 of the MASA paper assumes.

use core::ops::Range;

use skelaff_numa_alloc::{Mapping, NodeSet, Topology};

use crate::error::{Error, Result};

/// Where one team thread runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ThreadSlot {
    /// The CPU it is pinned to.
    pub cpu: usize,
    /// The NUMA node of that CPU.
    pub node: usize,
}

/// The CPUs of a team, thread 0 first, grouped by node (the threads of a
/// node have consecutive indices).
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{SyntheticSpec, Topology};
/// use skelaff_spmv::TeamLayout;
///
/// let topo = Topology::synthetic(SyntheticSpec {
///     nodes: 2, caches_per_node: 1, cores_per_cache: 2, pus_per_core: 1, memory_only_nodes: 0,
/// })?;
/// // Scatter deals CPUs 0, 2, 1, 3; grouping by node gives 0, 1 | 2, 3.
/// let l = TeamLayout::scatter(&topo, 4)?;
/// assert_eq!(l.slots().iter().map(|s| (s.cpu, s.node)).collect::<Vec<_>>(), [(0, 0), (1, 0), (2, 1), (3, 1)]);
/// assert_eq!(l.threads_per_node(), vec![(0, 2), (1, 2)]);
/// // Two threads: one per node.
/// assert_eq!(TeamLayout::scatter(&topo, 2)?.threads_per_node(), vec![(0, 1), (1, 1)]);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TeamLayout {
    slots: Vec<ThreadSlot>,
}

impl TeamLayout {
    /// `threads` threads laid out by [`Mapping::Scatter`], grouped by node.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroThreads`]; [`Error::Numa`] when no CPU is usable.
    pub fn scatter(topo: &Topology, threads: usize) -> Result<TeamLayout> {
        if threads == 0 {
            return Err(Error::ZeroThreads);
        }
        let plan = Mapping::Scatter.plan(topo, threads)?;
        let fallback = topo.allowed_nodes().first().unwrap_or(0);
        let mut slots: Vec<ThreadSlot> =
            plan.slots.iter().map(|s| ThreadSlot { cpu: s.cpu, node: s.node.unwrap_or(fallback) }).collect();
        // Stable: within a node, keep the scatter order.
        slots.sort_by_key(|s| s.node);
        Ok(TeamLayout { slots })
    }

    /// A layout from explicit slots (regrouped by node, stably).
    ///
    /// # Errors
    ///
    /// [`Error::ZeroThreads`] for no slots.
    pub fn from_slots(mut slots: Vec<ThreadSlot>) -> Result<TeamLayout> {
        if slots.is_empty() {
            return Err(Error::ZeroThreads);
        }
        slots.sort_by_key(|s| s.node);
        Ok(TeamLayout { slots })
    }

    /// The slots, thread 0 first.
    pub fn slots(&self) -> &[ThreadSlot] {
        &self.slots
    }

    /// Number of threads.
    pub fn threads(&self) -> usize {
        self.slots.len()
    }

    /// The node of thread `t`.
    ///
    /// # Panics
    ///
    /// If `t >= threads()`.
    pub fn node_of(&self, t: usize) -> usize {
        self.slots[t].node
    }

    /// The nodes used, with how many threads each has, in thread order.
    pub fn threads_per_node(&self) -> Vec<(usize, usize)> {
        let mut v: Vec<(usize, usize)> = Vec::new();
        for s in &self.slots {
            match v.last_mut() {
                Some((n, c)) if *n == s.node => *c += 1,
                _ => v.push((s.node, 1)),
            }
        }
        v
    }

    /// The set of nodes used.
    pub fn nodes(&self) -> NodeSet {
        self.slots.iter().map(|s| s.node).collect()
    }

    /// For each node used, the range of thread indices on it.
    pub fn node_groups(&self) -> Vec<(usize, Range<usize>)> {
        let mut start = 0;
        self.threads_per_node()
            .into_iter()
            .map(|(n, c)| {
                let r = start..start + c;
                start += c;
                (n, r)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skelaff_numa_alloc::SyntheticSpec;

    #[test]
    fn layouts_group_threads_by_node() {
        let topo = Topology::synthetic(SyntheticSpec {
            nodes: 4,
            caches_per_node: 1,
            cores_per_cache: 2,
            pus_per_core: 1,
            memory_only_nodes: 1,
        })
        .unwrap();
        let l = TeamLayout::scatter(&topo, 6).unwrap();
        assert_eq!(l.threads_per_node(), vec![(0, 2), (1, 2), (2, 1), (3, 1)]);
        assert_eq!(l.node_groups()[1], (1, 2..4));
        assert_eq!(l.nodes().len(), 4);
        assert!(matches!(TeamLayout::scatter(&topo, 0), Err(Error::ZeroThreads)));
        assert!(matches!(TeamLayout::from_slots(vec![]), Err(Error::ZeroThreads)));
    }
}
