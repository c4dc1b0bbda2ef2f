//! Choosing an implementation and a page size from access hints and the
//! machine: the paper's Fig. 2, as a pure function of a [`MachineMemory`]
//! snapshot so that its table can be tested on any machine.
//!
//! 1. Partition when every access is indexed by the parallel loop's variable.
//! 2. Replicate when the array is read-only, replication is allowed, a copy
//!    fits in the memory available on every node that runs threads, and all
//!    copies together stay within the memory budget (if one is set).
//! 3. Otherwise distribute.
//!
//! Large pages ([`LargePages::Auto`]): an array whose piece on one node
//! (the whole array, a replica, a node's partition, a node's share of a
//! distributed array) spans at least one large page gets them. Explicit
//! (hugetlbfs) pages are reserved and scarce, so they go to randomly
//! accessed arrays, whose TLB reach they extend most, and only where every
//! node's pool had room when the topology was read; otherwise transparent
//! huge pages, where the kernel has them. Partitioned arrays bind their
//! ranges after mapping, which explicit pages (mapped at creation) do not
//! allow: they get transparent pages.

use core::fmt;

use serde::{Deserialize, Serialize};
use skelaff_numa_alloc::{NodeSet, Topology, node_memory};

use crate::bytes::Bytes;
use crate::error::{Error, Result};
use crate::hints::{AccessHints, AccessPattern, Choice, Implementation, LargePages};

/// One node as selection sees it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct NodeView {
    /// The node (kernel numbering).
    pub node: usize,
    /// Whether this process may run threads there (replicas go only to such nodes).
    pub has_cpus: bool,
    /// Bytes an allocation may take there now (free plus easily reclaimable).
    pub available: u64,
    /// Free explicit huge pages there, by page size: `(size, free pages)`.
    pub huge_free: Vec<(usize, u64)>,
}

/// The machine's memory as selection sees it: the allowed nodes, what they
/// have available, and the page sizes.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct MachineMemory {
    /// The nodes this process may allocate on, ascending.
    pub nodes: Vec<NodeView>,
    /// The base page size.
    pub page_size: usize,
    /// The transparent huge page size, when THP is available.
    pub thp_size: Option<usize>,
}

impl MachineMemory {
    /// The allowed nodes of `topo`, with their available memory read now
    /// from sysfs.
    ///
    /// # Errors
    ///
    /// [`Error::Numa`] when a node's memory cannot be read.
    pub fn read(topo: &Topology) -> Result<MachineMemory> {
        let with_cpus = topo.nodes_with_cpus();
        let mut nodes = Vec::new();
        for node in topo.allowed_nodes().iter() {
            let available = node_memory::node_memory(node)?.available();
            let huge_free =
                topo.node(node).map(|n| n.huge_pages.iter().map(|p| (p.size, p.free)).collect()).unwrap_or_default();
            nodes.push(NodeView { node, has_cpus: with_cpus.contains(node), available, huge_free });
        }
        Ok(MachineMemory { nodes, page_size: topo.page_size(), thp_size: topo.thp_size() })
    }

    /// The nodes that get a replica: the allowed nodes with CPUs (or, on a
    /// machine where none qualifies, the first allowed node).
    pub fn replica_nodes(&self) -> NodeSet {
        let with: NodeSet = self.nodes.iter().filter(|n| n.has_cpus).map(|n| n.node).collect();
        if with.is_empty() { self.nodes.iter().take(1).map(|n| n.node).collect() } else { with }
    }

    /// Every allowed node: where a distributed array spreads.
    pub fn all_nodes(&self) -> NodeSet {
        self.nodes.iter().map(|n| n.node).collect()
    }

    fn view(&self, node: usize) -> Option<&NodeView> {
        self.nodes.iter().find(|n| n.node == node)
    }
}

/// Limits on replication a program sets.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct Limits {
    /// Replication forbidden for automatic selection.
    pub forbid_replication: bool,
    /// The most bytes all copies of the array together may take.
    pub memory_budget: Option<u64>,
}

/// Why an implementation was chosen.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Reason {
    /// The program asked for it.
    Requested,
    /// Rule 1: every access is indexed by the parallel loop's variable.
    LoopIndexed,
    /// Rule 2: read-only, and a copy fits on every node.
    ReadOnlyFits {
        /// Bytes of one copy.
        copy_bytes: u64,
        /// The node with the least available memory.
        tightest_node: usize,
        /// What it has available.
        tightest_available: u64,
    },
    /// Rule 3: the array is written.
    Written,
    /// Rule 3: read-only, but a copy does not fit on this node.
    ReplicaTooLarge {
        /// The node.
        node: usize,
        /// Bytes of one copy.
        copy_bytes: u64,
        /// What the node has available.
        available: u64,
    },
    /// Rule 3: read-only, but the program forbade replication.
    ReplicationForbidden,
    /// Rule 3: read-only, but the copies would exceed the memory budget.
    OverBudget {
        /// All copies together.
        total: u64,
        /// The budget.
        budget: u64,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = Bytes;
        match self {
            Reason::Requested => write!(f, "requested by the program"),
            Reason::LoopIndexed => {
                write!(
                    f,
                    "every access is indexed by the parallel loop's variable, so each thread's range lives on its node"
                )
            }
            Reason::ReadOnlyFits { copy_bytes, tightest_node, tightest_available } => write!(
                f,
                "read-only, and a copy ({}) fits on every node (least available: {} on node {tightest_node})",
                b(*copy_bytes),
                b(*tightest_available)
            ),
            Reason::Written => write!(f, "written and not only by the loop's index, so spread over every node"),
            Reason::ReplicaTooLarge { node, copy_bytes, available } => write!(
                f,
                "read-only, but a copy ({}) does not fit on node {node} ({} available), so spread over every node",
                b(*copy_bytes),
                b(*available)
            ),
            Reason::ReplicationForbidden => {
                write!(f, "read-only, but replication is forbidden, so spread over every node")
            }
            Reason::OverBudget { total, budget } => write!(
                f,
                "read-only, but all copies ({}) exceed the memory budget ({}), so spread over every node",
                b(*total),
                b(*budget)
            ),
        }
    }
}

/// The pages an array got.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PageChoice {
    /// Base pages.
    Base {
        /// Their size.
        size: usize,
    },
    /// Transparent huge pages (the kernel uses them where it can).
    Transparent {
        /// The THP size.
        size: usize,
    },
    /// Explicit huge pages from the hugetlbfs pool.
    Explicit {
        /// The huge page size.
        size: usize,
    },
}

impl PageChoice {
    /// The page size in bytes.
    pub const fn size(&self) -> usize {
        match *self {
            PageChoice::Base { size } | PageChoice::Transparent { size } | PageChoice::Explicit { size } => size,
        }
    }
}

impl fmt::Display for PageChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PageChoice::Base { size } => write!(f, "base pages ({})", Bytes(size as u64)),
            PageChoice::Transparent { size } => write!(f, "transparent huge pages ({})", Bytes(size as u64)),
            PageChoice::Explicit { size } => write!(f, "explicit huge pages ({})", Bytes(size as u64)),
        }
    }
}

/// Why those pages.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum PageReason {
    /// The program asked for base pages.
    Off,
    /// The program asked for these large pages.
    Requested,
    /// Neither transparent huge pages nor an explicit pool is available.
    Unavailable,
    /// The piece on one node is smaller than one large page.
    TooSmall {
        /// Bytes of the largest piece on one node.
        piece: u64,
        /// The large page size.
        large: usize,
    },
    /// Randomly accessed and every node's explicit pool had room.
    RandomPoolHasRoom,
    /// Large pages available and the piece on a node spans at least one.
    Spans {
        /// How many large pages the largest piece spans.
        pages: u64,
    },
    /// Explicit pages were asked for but cannot be used (no pool with room,
    /// or a partitioned array): transparent pages instead.
    ExplicitFellBack,
}

impl fmt::Display for PageReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PageReason::Off => write!(f, "large pages turned off"),
            PageReason::Requested => write!(f, "requested"),
            PageReason::Unavailable => write!(f, "no transparent or explicit huge pages on this machine"),
            PageReason::TooSmall { piece, large } => {
                write!(f, "a node's piece ({}) is smaller than one large page ({})", Bytes(piece), Bytes(large as u64))
            }
            PageReason::RandomPoolHasRoom => write!(f, "randomly accessed, and every node's explicit pool has room"),
            PageReason::Spans { pages } => write!(f, "a node's piece spans {pages} large pages"),
            PageReason::ExplicitFellBack => {
                write!(f, "explicit pages asked for but not usable here (pool without room, or partitioned)")
            }
        }
    }
}

/// What [`select`] decided, and why. `Display` says it in a sentence.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Selection {
    /// The implementation.
    pub implementation: Implementation,
    /// Why.
    pub reason: Reason,
    /// The pages.
    pub pages: PageChoice,
    /// Why those pages.
    pub page_reason: PageReason,
    /// The hints it was chosen from.
    pub hints: AccessHints,
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}; {}: {}", self.implementation, self.reason, self.pages, self.page_reason)
    }
}

/// What is being allocated, for [`select`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Request {
    /// The program's hints.
    pub hints: AccessHints,
    /// Fixed or automatic implementation.
    pub choice: Choice,
    /// Large-page setting.
    pub large_pages: LargePages,
    /// Bytes of one copy of the array.
    pub bytes: u64,
    /// Replication limits.
    pub limits: Limits,
    /// For partitioned arrays: the largest node's share in bytes (`None`:
    /// an even share of the nodes with CPUs).
    pub largest_partition: Option<u64>,
    /// For single-node arrays: the node.
    pub single_node: Option<usize>,
}

/// Applies the paper's Fig. 2 to `req` on `machine`.
///
/// # Errors
///
/// [`Error::ReplicaDoesNotFit`] or [`Error::OverBudget`] when replication
/// is requested explicitly and cannot be had.
///
/// # Examples
///
/// ```
/// use skelaff_arrays::select::{select, Limits, MachineMemory, NodeView, Request};
/// use skelaff_arrays::{AccessHints, Choice, Implementation, LargePages};
///
/// let node = |node, available| NodeView { node, has_cpus: true, available, huge_free: vec![] };
/// let machine = MachineMemory { nodes: vec![node(0, 1 << 30), node(1, 1 << 20)], page_size: 4096, thp_size: None };
/// let mut req = Request {
///     hints: AccessHints::new().read_only(),
///     choice: Choice::Auto,
///     large_pages: LargePages::Auto,
///     bytes: 4 << 20,
///     limits: Limits::default(),
///     largest_partition: None,
///     single_node: None,
/// };
/// // 4 MiB does not fit in node 1's 1 MiB: distributed, and the reason says so.
/// let s = select(&req, &machine)?;
/// assert_eq!(s.implementation, Implementation::Distributed);
/// assert!(s.to_string().contains("does not fit on node 1"));
/// req.bytes = 64 << 10;
/// assert_eq!(select(&req, &machine)?.implementation, Implementation::Replicated);
/// # Ok::<(), skelaff_arrays::Error>(())
/// ```
pub fn select(req: &Request, machine: &MachineMemory) -> Result<Selection> {
    let (implementation, reason) = match req.choice.fixed() {
        Some(Implementation::Replicated) => {
            replication(req, machine).map_err(|refusal| refusal.into_error(req, machine))?;
            (Implementation::Replicated, Reason::Requested)
        }
        Some(fixed) => (fixed, Reason::Requested),
        None if req.hints.is_loop_indexed() => (Implementation::Partitioned, Reason::LoopIndexed),
        None if !req.hints.is_read_only() => (Implementation::Distributed, Reason::Written),
        None if req.limits.forbid_replication => (Implementation::Distributed, Reason::ReplicationForbidden),
        None => match replication(req, machine) {
            Ok(fits) => (Implementation::Replicated, fits),
            Err(refusal) => (Implementation::Distributed, refusal.into_reason(req)),
        },
    };
    let piece = piece_bytes(implementation, req, machine);
    let random = req.hints.access_pattern() == AccessPattern::Random;
    let (pages, page_reason) = pages(implementation, req, piece, random, machine);
    Ok(Selection { implementation, reason, pages, page_reason, hints: req.hints })
}

/// Why replication cannot be had.
enum Refusal {
    TooLarge { node: usize, available: u64 },
    OverBudget { total: u64, budget: u64 },
}

impl Refusal {
    fn into_reason(self, req: &Request) -> Reason {
        match self {
            Refusal::TooLarge { node, available } => Reason::ReplicaTooLarge { node, copy_bytes: req.bytes, available },
            Refusal::OverBudget { total, budget } => Reason::OverBudget { total, budget },
        }
    }

    fn into_error(self, req: &Request, machine: &MachineMemory) -> Error {
        match self {
            Refusal::TooLarge { node, available } => {
                Error::ReplicaDoesNotFit { node, copy_bytes: req.bytes, available }
            }
            Refusal::OverBudget { total, budget } => {
                Error::OverBudget { replicas: machine.replica_nodes().len(), copy_bytes: req.bytes, total, budget }
            }
        }
    }
}

/// Whether a copy fits on every replica node and within the budget: the
/// reason to replicate, or the refusal.
fn replication(req: &Request, machine: &MachineMemory) -> Result<Reason, Refusal> {
    let nodes = machine.replica_nodes();
    let total = req.bytes.saturating_mul(nodes.len() as u64);
    if let Some(budget) = req.limits.memory_budget {
        if total > budget {
            return Err(Refusal::OverBudget { total, budget });
        }
    }
    let mut tightest = (usize::MAX, u64::MAX);
    for node in nodes.iter() {
        let available = machine.view(node).map_or(0, |v| v.available);
        if req.bytes > available {
            return Err(Refusal::TooLarge { node, available });
        }
        if available < tightest.1 {
            tightest = (node, available);
        }
    }
    Ok(Reason::ReadOnlyFits { copy_bytes: req.bytes, tightest_node: tightest.0, tightest_available: tightest.1 })
}

/// The largest piece of the array one node holds.
fn piece_bytes(implementation: Implementation, req: &Request, machine: &MachineMemory) -> u64 {
    match implementation {
        Implementation::Single | Implementation::Replicated => req.bytes,
        Implementation::Distributed => req.bytes / machine.all_nodes().len().max(1) as u64,
        Implementation::Partitioned => {
            req.largest_partition.unwrap_or(req.bytes / machine.replica_nodes().len().max(1) as u64)
        }
    }
}

/// The nodes an implementation puts pages on, for the explicit-pool check.
fn nodes_used(implementation: Implementation, req: &Request, machine: &MachineMemory) -> NodeSet {
    match implementation {
        Implementation::Single => req.single_node.map(NodeSet::single).unwrap_or_else(|| machine.replica_nodes()),
        Implementation::Replicated | Implementation::Partitioned => machine.replica_nodes(),
        Implementation::Distributed => machine.all_nodes(),
    }
}

fn pages(
    implementation: Implementation,
    req: &Request,
    piece: u64,
    random: bool,
    machine: &MachineMemory,
) -> (PageChoice, PageReason) {
    let base = PageChoice::Base { size: machine.page_size };
    // The smallest explicit size every node used has room for (its share
    // of the array rounded up to whole huge pages).
    let explicit = || -> Option<usize> {
        if implementation == Implementation::Partitioned {
            return None;
        }
        let req_nodes = nodes_used(implementation, req, machine);
        let mut sizes: Vec<usize> = machine.nodes.iter().flat_map(|n| n.huge_free.iter().map(|&(s, _)| s)).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes.into_iter().find(|&size| {
            let need = piece.div_ceil(size as u64).max(1);
            req_nodes.iter().all(|node| {
                machine.view(node).is_some_and(|v| v.huge_free.iter().any(|&(s, free)| s == size && free >= need))
            })
        })
    };
    match req.large_pages {
        LargePages::Off => (base, PageReason::Off),
        LargePages::Transparent => match machine.thp_size {
            Some(size) => (PageChoice::Transparent { size }, PageReason::Requested),
            None => (base, PageReason::Unavailable),
        },
        LargePages::Explicit => match (explicit(), machine.thp_size) {
            (Some(size), _) => (PageChoice::Explicit { size }, PageReason::Requested),
            (None, Some(size)) => (PageChoice::Transparent { size }, PageReason::ExplicitFellBack),
            (None, None) => (base, PageReason::Unavailable),
        },
        LargePages::Auto => {
            let large = match (random, explicit(), machine.thp_size) {
                (true, Some(size), _) => return (PageChoice::Explicit { size }, PageReason::RandomPoolHasRoom),
                (_, _, Some(size)) => size,
                (_, _, None) => return (base, PageReason::Unavailable),
            };
            if piece < large as u64 {
                (base, PageReason::TooSmall { piece, large })
            } else {
                (PageChoice::Transparent { size: large }, PageReason::Spans { pages: piece / large as u64 })
            }
        }
    }
}

#[cfg(test)]
mod tests;
