//! Where an array's copies live: allocating them on their nodes with every
//! page mapped at allocation, the placement each page should have, and the
//! memory each node holds.
//!
//! - single-node: one region bound to the node, prefaulted;
//! - distributed: one region under the kernel's page interleave over every
//!   allowed node, prefaulted, stragglers moved to their interleave node
//!   (one `mbind`, one mapping; any contiguous range of the array, hot or
//!   not, is spread as evenly as the whole);
//! - replicated: one region per node with CPUs, each bound there and
//!   prefaulted; replica 0 is the master copy;
//! - partitioned: one region whose pages are bound, run by run, to the node
//!   owning the element at the page's middle, then touched by the copy team.

use core::fmt;
use core::ops::Range;

use serde::{Deserialize, Serialize};
use skelaff_numa_alloc::policy::interleave_node;
use skelaff_numa_alloc::{Apply, HugePages, NodeSet, NumaRegion, Placement, Policy, RegionOptions, Topology};

pub use crate::bytes::Bytes;
use crate::copy_team::{self, CHUNK_BYTES, Chunk, Job, Op};
use crate::error::{Error, Result};
use crate::hints::Implementation;
use crate::partition::Partition;
use crate::select::{MachineMemory, PageChoice, PageReason, Selection};

/// Where the pages of one copy should be.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Expected {
    /// Every page on this node.
    Node {
        /// The node.
        node: usize,
    },
    /// The kernel's interleave over these nodes, `granule` bytes at a time.
    Interleave {
        /// The nodes, ascending.
        nodes: Vec<usize>,
        /// The interleave unit (the page size, or the huge page size).
        granule: usize,
    },
    /// Runs of pages (page indices from the copy's start) and their nodes.
    Runs {
        /// `(pages, node)`, covering every page in order.
        runs: Vec<(Range<usize>, usize)>,
    },
}

/// One copy of an array (the array itself, or one replica) and where its
/// pages should be, to compare with the kernel's [`Placement`].
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct CopyPlan {
    /// The copy's first byte.
    pub addr: usize,
    /// Its mapped length in bytes.
    pub bytes: usize,
    /// The page size to query it with.
    pub page_size: usize,
    /// Where its pages should be.
    pub expected: Expected,
}

impl CopyPlan {
    /// Number of pages.
    pub fn pages(&self) -> usize {
        self.bytes.div_ceil(self.page_size)
    }

    /// The node page `p` should be on.
    pub fn node_of_page(&self, p: usize) -> usize {
        match &self.expected {
            Expected::Node { node } => *node,
            Expected::Interleave { nodes, granule } => {
                let set: NodeSet = nodes.iter().copied().collect();
                interleave_node(&set, self.addr + p * self.page_size, *granule)
            }
            Expected::Runs { runs } => {
                let i = runs.partition_point(|(r, _)| r.end <= p).min(runs.len().saturating_sub(1));
                runs.get(i).map_or(0, |(_, n)| *n)
            }
        }
    }

    /// Asks the kernel where the copy's pages are.
    ///
    /// # Errors
    ///
    /// [`Error::Numa`] if `move_pages` fails.
    pub fn placement(&self) -> Result<Placement> {
        Ok(Placement::query(self.addr as *const u8, self.bytes, self.page_size)?)
    }

    /// Pages not where the plan puts them: `(page, wanted node, found)`.
    ///
    /// # Errors
    ///
    /// As [`CopyPlan::placement`].
    pub fn misplaced(&self) -> Result<Vec<(usize, usize, skelaff_numa_alloc::PageLocation)>> {
        Ok(self.placement()?.mismatches(|p| Some(self.node_of_page(p))))
    }

    /// Bytes the plan puts on each node, added into `into` (`node -> bytes`).
    fn add_bytes(&self, into: &mut Vec<NodeBytes>) {
        let mut add = |node: usize, pages: usize| {
            let bytes = (pages * self.page_size) as u64;
            match into.iter_mut().find(|n| n.node == node) {
                Some(n) => n.bytes += bytes,
                None => into.push(NodeBytes { node, bytes }),
            }
        };
        match &self.expected {
            Expected::Node { node } => add(*node, self.pages()),
            Expected::Interleave { nodes, .. } => {
                let mut counts = vec![0usize; nodes.len()];
                for p in 0..self.pages() {
                    let n = self.node_of_page(p);
                    if let Some(i) = nodes.iter().position(|&x| x == n) {
                        counts[i] += 1;
                    }
                }
                for (i, &n) in nodes.iter().enumerate() {
                    add(n, counts[i]);
                }
            }
            Expected::Runs { runs } => runs.iter().for_each(|(r, n)| add(*n, r.len())),
        }
    }
}

/// Bytes on one node.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct NodeBytes {
    /// The node.
    pub node: usize,
    /// Bytes there.
    pub bytes: u64,
}

/// The memory an array (or several) holds on each node, by plan.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct MemoryUse {
    /// Per node, ascending.
    pub per_node: Vec<NodeBytes>,
}

impl MemoryUse {
    /// All nodes together.
    pub fn total(&self) -> u64 {
        self.per_node.iter().map(|n| n.bytes).sum()
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &MemoryUse) {
        for n in &other.per_node {
            match self.per_node.iter_mut().find(|m| m.node == n.node) {
                Some(m) => m.bytes += n.bytes,
                None => self.per_node.push(*n),
            }
        }
        self.per_node.sort_by_key(|n| n.node);
    }
}

impl fmt::Display for MemoryUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.per_node.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "node {}: {}", n.node, Bytes(n.bytes))?;
        }
        write!(f, " (total {})", Bytes(self.total()))
    }
}

/// The copies of an array and where they are.
pub(crate) struct Storage {
    /// One region, or one per replica (replica `i` on `replica_nodes[i]`).
    // Invariant: every region holds at least `len * elem_size` bytes, its
    // pages mapped, aligned to a page.
    pub(crate) regions: Vec<NumaRegion>,
    pub(crate) replica_nodes: Vec<usize>,
    /// Replicated arrays: node number -> index of the nearest replica.
    pub(crate) by_node: Vec<u16>,
    pub(crate) partition: Option<Partition>,
    pub(crate) plans: Vec<CopyPlan>,
}

/// What to allocate.
pub(crate) struct AllocRequest<'a> {
    pub(crate) len: usize,
    pub(crate) elem_size: usize,
    pub(crate) single_node: Option<usize>,
    pub(crate) partition: Option<&'a Partition>,
}

/// Allocates the copies `selection` describes; falls back from explicit
/// huge pages (and records it in `selection`) when the pool runs dry.
pub(crate) fn allocate(
    topo: &Topology,
    machine: &MachineMemory,
    layout: &AllocRequest<'_>,
    selection: &mut Selection,
) -> Result<Storage> {
    match allocate_with(topo, machine, layout, selection) {
        Err(Error::Numa(skelaff_numa_alloc::Error::HugePagesUnavailable { .. }))
            if matches!(selection.pages, PageChoice::Explicit { .. }) =>
        {
            selection.pages = match machine.thp_size {
                Some(size) => PageChoice::Transparent { size },
                None => PageChoice::Base { size: machine.page_size },
            };
            selection.page_reason = PageReason::ExplicitFellBack;
            allocate_with(topo, machine, layout, selection)
        }
        other => other,
    }
}

fn allocate_with(
    topo: &Topology,
    machine: &MachineMemory,
    layout: &AllocRequest<'_>,
    sel: &Selection,
) -> Result<Storage> {
    let bytes = layout.len * layout.elem_size;
    let huge = match sel.pages {
        PageChoice::Base { .. } => HugePages::Off,
        PageChoice::Transparent { .. } => HugePages::Transparent,
        PageChoice::Explicit { size } => HugePages::Explicit(Some(size)),
    };
    let region = |policy: Policy, prefault: bool| {
        NumaRegion::new_in(topo, bytes, RegionOptions::new(policy).prefault(prefault).huge_pages(huge))
    };
    let plan = |r: &NumaRegion, expected: Expected| CopyPlan {
        addr: r.as_ptr() as usize,
        bytes: r.mapped_len(),
        page_size: r.page_size(),
        expected,
    };
    let mut storage = Storage {
        regions: Vec::new(),
        replica_nodes: Vec::new(),
        by_node: Vec::new(),
        partition: None,
        plans: Vec::new(),
    };
    #[cfg(test)]
    LIVE.with(|c| c.set(c.get() + 1));
    match sel.implementation {
        Implementation::Single => {
            let node = layout.single_node.unwrap_or_else(crate::home::home_node);
            topo.check_node(node)?;
            let r = region(Policy::Bind(NodeSet::single(node)), true)?;
            storage.plans.push(plan(&r, Expected::Node { node }));
            storage.regions.push(r);
        }
        Implementation::Distributed => {
            let nodes = machine.all_nodes();
            let r = if nodes.len() == 1 {
                region(Policy::Bind(nodes), true)?
            } else {
                // The kernel's interleave is not strict: a page whose node is
                // short of free pages at fault time lands elsewhere. Move any
                // such page to its interleave node now (an error if it cannot
                // be moved), so the placement is the plan's, as with `Bind`.
                // (Base pages only: with huge pages the kernel interleaves a
                // huge page at a time, which a base-page move would split.)
                let mut r = region(Policy::Interleave(nodes), true)?;
                if matches!(sel.pages, PageChoice::Base { .. }) {
                    r.rebind(Policy::Interleave(nodes))?;
                }
                r
            };
            let granule = match sel.pages {
                PageChoice::Base { size } | PageChoice::Transparent { size } | PageChoice::Explicit { size } => size,
            };
            storage.plans.push(plan(&r, Expected::Interleave { nodes: nodes.iter().collect(), granule }));
            storage.regions.push(r);
        }
        Implementation::Replicated => {
            for node in machine.replica_nodes().iter() {
                let r = region(Policy::Bind(NodeSet::single(node)), true)?;
                storage.plans.push(plan(&r, Expected::Node { node }));
                storage.regions.push(r);
                storage.replica_nodes.push(node);
            }
            storage.by_node = nearest_replica(topo, &storage.replica_nodes);
        }
        Implementation::Partitioned => {
            let partition = match layout.partition {
                Some(p) => p.clone(),
                None => Partition::new(layout.len, &crate::partition::machine_thread_nodes(topo)?)?,
            };
            if partition.len() != layout.len {
                return Err(Error::PartitionLength { partition_len: partition.len(), array_len: layout.len });
            }
            for &n in partition.thread_nodes() {
                topo.check_node(n)?;
            }
            let first = partition.owner(0);
            let mut r = region(Policy::Bind(NodeSet::single(first)), false)?;
            let runs = page_runs(&partition, layout.elem_size, r.page_size(), r.mapped_len());
            for (pages, node) in &runs {
                let range = pages.start * r.page_size()..pages.end * r.page_size();
                r.apply_range(range, Policy::Bind(NodeSet::single(*node)), Apply::Fresh)?;
            }
            let p = plan(&r, Expected::Runs { runs });
            touch_pages(&mut r, &p);
            storage.plans.push(p);
            storage.regions.push(r);
            storage.partition = Some(partition);
        }
    }
    Ok(storage)
}

/// The owner of each page (the node owning the element at its middle),
/// as maximal runs.
pub(crate) fn page_runs(
    partition: &Partition,
    elem_size: usize,
    page_size: usize,
    mapped: usize,
) -> Vec<(Range<usize>, usize)> {
    let len = partition.len();
    let mut runs: Vec<(Range<usize>, usize)> = Vec::new();
    for p in 0..mapped.div_ceil(page_size) {
        let mid = ((p * page_size + page_size / 2) / elem_size).min(len - 1);
        let node = partition.owner(mid);
        match runs.last_mut() {
            Some((r, n)) if *n == node => r.end = p + 1,
            _ => runs.push((p..p + 1, node)),
        }
    }
    runs
}

/// For every node number up to the largest the machine has, the index of
/// the replica on it, or else of the nearest one by distance (the first
/// when distances are unknown).
fn nearest_replica(topo: &Topology, replica_nodes: &[usize]) -> Vec<u16> {
    let max = topo.nodes().iter().map(|n| n.os_index).max().unwrap_or(0);
    (0..=max)
        .map(|node| {
            replica_nodes
                .iter()
                .enumerate()
                .min_by_key(|(_, r)| if **r == node { 0 } else { topo.distance(node, **r).unwrap_or(u64::MAX) })
                .map_or(0, |(i, _)| i as u16)
        })
        .collect()
}

impl Storage {
    /// The memory each node holds, by plan.
    pub(crate) fn memory(&self) -> MemoryUse {
        let mut per_node = Vec::new();
        for p in &self.plans {
            p.add_bytes(&mut per_node);
        }
        per_node.sort_by_key(|n: &NodeBytes| n.node);
        MemoryUse { per_node }
    }

    /// The replica index for a thread whose home is `node`.
    #[inline]
    pub(crate) fn replica_for(&self, node: usize) -> usize {
        self.by_node.get(node).map_or(0, |&i| i as usize)
    }
}

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Storage")
            .field("copies", &self.regions.len())
            .field("bytes_each", &Bytes(self.regions.first().map_or(0, |r| r.mapped_len() as u64)))
            .field("replica_nodes", &self.replica_nodes)
            .finish()
    }
}

#[cfg(test)]
thread_local! {
    // Live storages on this thread (tests check that dropping frees them).
    pub(crate) static LIVE: core::cell::Cell<isize> = const { core::cell::Cell::new(0) };
}

#[cfg(test)]
impl Drop for Storage {
    fn drop(&mut self) {
        LIVE.with(|c| c.set(c.get() - 1));
    }
}

/// `copies` replicas all on `node`: a replicated array with several copies
/// on a one-node machine, for the unit tests of replica handling.
#[cfg(test)]
pub(crate) fn replicated_for_test(topo: &Topology, bytes: usize, node: usize, copies: usize) -> Storage {
    let mut storage = Storage {
        regions: Vec::new(),
        replica_nodes: Vec::new(),
        by_node: Vec::new(),
        partition: None,
        plans: Vec::new(),
    };
    LIVE.with(|c| c.set(c.get() + 1));
    for _ in 0..copies {
        let r = NumaRegion::new_in(topo, bytes, RegionOptions::new(Policy::Bind(NodeSet::single(node))).prefault(true))
            .unwrap();
        storage.plans.push(CopyPlan {
            addr: r.as_ptr() as usize,
            bytes: r.mapped_len(),
            page_size: r.page_size(),
            expected: Expected::Node { node },
        });
        storage.regions.push(r);
        storage.replica_nodes.push(node);
    }
    // The calling thread's node reads the last replica, so reads and the
    // master (replica 0) are different memory.
    storage.by_node = vec![(copies - 1) as u16; node + 1];
    storage
}

/// Maps every page of a fresh region (writing a zero byte to each) on the
/// copy team and the caller, chunks tagged with their pages' nodes.
fn touch_pages(region: &mut NumaRegion, plan: &CopyPlan) {
    let page = region.page_size();
    let step = CHUNK_BYTES.next_multiple_of(page);
    let base = region.as_ptr();
    let tagged: Vec<(usize, Chunk)> = (0..region.mapped_len())
        .step_by(step)
        .map(|off| {
            let len = step.min(region.mapped_len() - off);
            (
                plan.node_of_page(off / plan.page_size),
                Chunk { dst: base.wrapping_add(off), src: core::ptr::null(), len },
            )
        })
        .collect();
    // SAFETY: the chunks are disjoint ranges of the region's own mapping,
    // exclusively borrowed until `run_sync` returns; writing zero over the
    // fresh (zero) memory changes nothing but where the pages are mapped.
    copy_team::run_sync(unsafe { Job::new(Op::Touch { page_size: page }, tagged) });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_runs_follow_the_owner_of_each_pages_middle() {
        // 8-byte elements, 4096-byte pages: 512 per page. Two threads on
        // nodes 0 and 1 over 1500 elements: boundary at 750, inside page 1
        // (elements 512..1024, middle 768 -> node 1).
        let p = Partition::new(1500, &[0, 1]).unwrap();
        let runs = page_runs(&p, 8, 4096, 1500usize.div_ceil(512) * 4096);
        assert_eq!(runs, vec![(0..1, 0), (1..3, 1)]);
        let plan = CopyPlan { addr: 0, bytes: 3 * 4096, page_size: 4096, expected: Expected::Runs { runs } };
        assert_eq!((0..3).map(|p| plan.node_of_page(p)).collect::<Vec<_>>(), [0, 1, 1]);
        let mut m = Vec::new();
        plan.add_bytes(&mut m);
        assert_eq!(m, [NodeBytes { node: 0, bytes: 4096 }, NodeBytes { node: 1, bytes: 8192 }]);
    }

    #[test]
    fn interleave_plans_spread_evenly() {
        let nodes = vec![0, 1, 2];
        let plan = CopyPlan {
            addr: 1 << 30,
            bytes: 10 * 4096,
            page_size: 4096,
            expected: Expected::Interleave { nodes, granule: 4096 },
        };
        let mut m = Vec::new();
        plan.add_bytes(&mut m);
        let pages: Vec<u64> = m.iter().map(|n| n.bytes / 4096).collect();
        assert_eq!(pages.iter().sum::<u64>(), 10);
        assert!(pages.iter().max().unwrap() - pages.iter().min().unwrap() <= 1, "{pages:?}");
        let use_ = MemoryUse { per_node: m };
        // Page 0 is the 2^18-th page, and 2^18 % 3 == 1: node 1 gets the extra page.
        assert_eq!(use_.to_string(), "node 0: 12 KiB, node 1: 16 KiB, node 2: 12 KiB (total 40 KiB)");
    }
}
