//! The machine's NUMA topology, read once and cached.
//!
//! On Linux the kernel's sysfs is the source: `/sys/devices/system/node`
//! (each node's `cpulist`, `distance` and `meminfo`) and
//! `/sys/devices/system/cpu` (`online`, each CPU's `topology/` and
//! `cache/index*/`), which is also what libnuma and hwloc read there
//! ([`Topology::from_sysfs`], module `sysfs`). With the feature `hwloc`,
//! [`Topology::get`] asks hwloc instead (`Topology::from_hwloc`), and the
//! tests check that both describe the machine alike
//! ([`Topology::differences`]).

use std::path::Path;
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::sets::{CpuSet, MAX_NODES, NodeSet};
use crate::sys;

#[cfg(feature = "hwloc")]
mod hwloc;
mod pages;
mod sysfs;
#[cfg(test)]
mod tests;

pub(crate) use pages::free_huge_pages;

/// A NUMA node: a bank of memory and the CPUs closest to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNode {
    /// The kernel's node number (what `mbind` and `move_pages` use).
    pub os_index: usize,
    /// The CPUs whose home node this is. Empty for a node with memory only.
    pub cpus: CpuSet,
    /// Memory on this node, in bytes (its `MemTotal`; 0 when the source
    /// does not say).
    pub memory: u64,
    /// The explicit huge-page pools of this node.
    pub huge_pages: Vec<HugePagePool>,
}

/// A pool of explicit (hugetlbfs) huge pages on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HugePagePool {
    /// The page size in bytes.
    pub size: usize,
    /// Pages reserved in the pool.
    pub total: u64,
    /// Pages not in use when the topology was read.
    pub free: u64,
}

/// A processing unit (a hardware thread): what a software thread is pinned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pu {
    /// The operating system's CPU number.
    pub cpu: usize,
    /// The index of its core in [`Topology::cores`].
    pub core: usize,
    /// The index of its last-level cache group in [`Topology::cache_groups`].
    pub cache_group: usize,
    /// Its home NUMA node (kernel numbering), if it has one.
    pub node: Option<usize>,
}

/// A physical core and its hardware threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Core {
    /// The CPU numbers of its hardware threads.
    pub cpus: Vec<usize>,
    /// Its home NUMA node.
    pub node: Option<usize>,
    /// The index of its last-level cache group.
    pub cache_group: usize,
}

/// CPUs that share a last-level cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheGroup {
    /// The cache level (3 for an L3); 0 when the source reported no data or
    /// unified cache, in which case the group is one core and claims no
    /// sharing.
    pub level: u8,
    /// The cache size in bytes, when known.
    pub size: Option<u64>,
    /// The CPUs that share it.
    pub cpus: CpuSet,
}

/// The shape of a synthetic topology, for tests and for planning on machines
/// one does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntheticSpec {
    /// NUMA nodes with CPUs.
    pub nodes: usize,
    /// Last-level cache groups per node; 0 means no shared cache (each core
    /// has its own).
    pub caches_per_node: usize,
    /// Cores per cache group (per node when `caches_per_node` is 0).
    pub cores_per_cache: usize,
    /// Hardware threads per core.
    pub pus_per_core: usize,
    /// Extra nodes with memory and no CPUs, numbered after the others.
    pub memory_only_nodes: usize,
}

/// Where a [`Topology`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// Read from the kernel's sysfs ([`Topology::from_sysfs`],
    /// [`Topology::from_sysfs_root`]): what [`Topology::get`] reads without
    /// the feature `hwloc`.
    Sysfs,
    /// Read from this machine by hwloc (`Topology::from_hwloc`, feature
    /// `hwloc`): what [`Topology::get`] reads with that feature.
    Hwloc,
    /// Built by [`Topology::synthetic`].
    Synthetic,
}

/// The machine: NUMA nodes, cores, hardware threads, shared caches, page
/// sizes, and what this process may use.
///
/// Build it with [`Topology::get`], which reads the machine once per
/// process and caches the result: from sysfs, or from hwloc with the
/// feature `hwloc`. hwloc's discovery may briefly rebind the calling
/// thread, so the pinning functions of this crate read the topology before
/// they pin; call `Topology::get` early if you pin threads by other means.
///
/// Cores are listed in the order of the machine's hierarchy (hwloc's
/// logical order): by the lowest CPUs of the sets that hold them (package,
/// node, last-level cache; the larger set first), then by their own lowest
/// CPU; a core's CPUs ascend. Cache groups are numbered in the order of
/// their first core; hardware threads ascend by CPU number.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::Topology;
///
/// let topo = Topology::get()?;
/// assert!(!topo.nodes().is_empty());
/// for node in topo.nodes() {
///     println!("node {}: CPUs {} memory {} MiB", node.os_index, node.cpus, node.memory >> 20);
/// }
/// assert!(topo.allowed_nodes().len() >= 1);
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    source: Source,
    nodes: Vec<NumaNode>,
    pus: Vec<Pu>,
    cores: Vec<Core>,
    cache_groups: Vec<CacheGroup>,
    distances: Option<Vec<u64>>,
    page_size: usize,
    huge_page_sizes: Vec<usize>,
    thp_size: Option<usize>,
    allowed_cpus: CpuSet,
    allowed_nodes: NodeSet,
}

static TOPOLOGY: OnceLock<Result<Topology>> = OnceLock::new();

/// What a source reads of the machine itself: the rest of a [`Topology`]
/// (page sizes, huge-page pools, what this process may use) is read the
/// same way whichever the source.
#[derive(Debug)]
struct Machine {
    /// By ascending kernel number, with their CPUs (huge-page pools empty).
    nodes: Vec<NumaNode>,
    /// By ascending CPU number.
    pus: Vec<Pu>,
    cores: Vec<Core>,
    cache_groups: Vec<CacheGroup>,
    /// Row-major over `nodes`, or `None`.
    distances: Option<Vec<u64>>,
}

impl Topology {
    /// The topology of this machine, read on first use and cached: from
    /// sysfs ([`Topology::from_sysfs`]), or from hwloc with the feature
    /// `hwloc` (`Topology::from_hwloc`).
    ///
    /// # Errors
    ///
    /// [`Error::TopologyUnreadable`] or [`Error::TopologyFormat`] naming the
    /// sysfs file that is missing or malformed (with the feature `hwloc`:
    /// `Error::Topology` if hwloc cannot discover the machine). The error is
    /// cached too.
    pub fn get() -> Result<&'static Topology> {
        #[cfg(feature = "hwloc")]
        let read = Self::from_hwloc;
        #[cfg(not(feature = "hwloc"))]
        let read = Self::from_sysfs;
        TOPOLOGY.get_or_init(read).as_ref().map_err(Clone::clone)
    }

    /// Reads this machine's topology from sysfs, uncached: nodes, their CPUs,
    /// memory and distances, cores, last-level caches, page sizes, and what
    /// this process may use (the calling thread's CPU affinity, the
    /// process's `Mems_allowed`). A kernel without
    /// `/sys/devices/system/node` (no NUMA support) is one node.
    ///
    /// # Errors
    ///
    /// [`Error::TopologyUnreadable`] when a file it needs (`cpu/online`, a
    /// node's `cpulist`) is missing or cannot be read, and
    /// [`Error::TopologyFormat`] (or [`Error::NodeMemoryFormat`] for a
    /// node's `meminfo`) when a file is not in the form the kernel writes;
    /// each names the file and what it should hold. Facts the kernel may
    /// leave out (distances, memory, cores, caches) are "unknown" when their
    /// files are missing, as the fields' docs say.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_numa_alloc::{Source, Topology};
    ///
    /// let t = Topology::from_sysfs()?;
    /// assert_eq!(t.source(), Source::Sysfs);
    /// assert!(t.pus().iter().all(|p| t.cores()[p.core].cpus.contains(&p.cpu)));
    /// # Ok::<(), skelaff_numa_alloc::Error>(())
    /// ```
    pub fn from_sysfs() -> Result<Topology> {
        let root = Path::new("/");
        let machine = sysfs::read_machine(root)?;
        let pus: CpuSet = machine.pus.iter().map(|p| p.cpu).collect();
        let allowed_cpus = thread_affinity().map_or(pus.clone(), |a| a.intersection(&pus));
        let nodes: NodeSet = machine.nodes.iter().map(|n| n.os_index).collect();
        let allowed_nodes = mems_allowed().map_or(nodes, |m| m.intersection(&nodes));
        Ok(Topology::assemble(Source::Sysfs, machine, allowed_cpus, allowed_nodes, root))
    }

    /// Reads a topology from a sysfs tree under `root` (the tree at
    /// `root/sys/devices/system/{node,cpu}`, huge-page sizes under
    /// `root/sys/kernel/mm`, and `root/proc/meminfo` for a machine without
    /// nodes): a copy of another machine's files, to plan for a machine one
    /// does not have, or a test's made-up tree. Everything in the tree is
    /// allowed; the base page size is this machine's.
    ///
    /// # Errors
    ///
    /// As [`Topology::from_sysfs`].
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_numa_alloc::{Error, Topology};
    ///
    /// let e = Topology::from_sysfs_root("/nonexistent").unwrap_err();
    /// assert!(matches!(&e, Error::TopologyUnreadable { path, .. } if path.ends_with("cpu/online")), "{e}");
    /// ```
    pub fn from_sysfs_root(root: impl AsRef<Path>) -> Result<Topology> {
        let root = root.as_ref();
        let machine = sysfs::read_machine(root)?;
        let allowed_cpus = machine.pus.iter().map(|p| p.cpu).collect();
        let allowed_nodes = machine.nodes.iter().map(|n| n.os_index).collect();
        Ok(Topology::assemble(Source::Sysfs, machine, allowed_cpus, allowed_nodes, root))
    }

    /// A topology from what a source read of the machine itself; page sizes
    /// and huge-page pools are read from sysfs under `root` whatever the
    /// source.
    fn assemble(source: Source, machine: Machine, allowed_cpus: CpuSet, allowed_nodes: NodeSet, root: &Path) -> Self {
        let Machine { mut nodes, pus, cores, cache_groups, distances } = machine;
        for node in &mut nodes {
            node.huge_pages = pages::huge_page_pools(root, node.os_index);
        }
        Topology {
            source,
            nodes,
            pus,
            cores,
            cache_groups,
            distances,
            page_size: sys::page_size(),
            huge_page_sizes: pages::huge_page_sizes(root),
            thp_size: pages::thp_size(root),
            allowed_cpus,
            allowed_nodes,
        }
    }

    /// A made-up topology of the given shape: CPUs are numbered node by node,
    /// cache group by cache group, core by core; every node has 1 GiB; all of
    /// it is allowed. Distances are 10 on the diagonal and 20 elsewhere.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroThreads`] if the shape has no CPU at all, and
    /// [`Error::Parse`] if it has more than [`MAX_NODES`] nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_numa_alloc::{SyntheticSpec, Topology};
    ///
    /// let t = Topology::synthetic(SyntheticSpec {
    ///     nodes: 2, caches_per_node: 1, cores_per_cache: 4, pus_per_core: 2, memory_only_nodes: 1,
    /// })?;
    /// assert_eq!(t.nodes().len(), 3);
    /// assert_eq!(t.pus().len(), 16);
    /// assert!(t.nodes()[2].cpus.is_empty());
    /// # Ok::<(), skelaff_numa_alloc::Error>(())
    /// ```
    pub fn synthetic(spec: SyntheticSpec) -> Result<Topology> {
        let groups_per_node = spec.caches_per_node.max(1);
        if spec.nodes == 0 || spec.cores_per_cache == 0 || spec.pus_per_core == 0 {
            return Err(Error::ZeroThreads);
        }
        let total_nodes = spec.nodes + spec.memory_only_nodes;
        if total_nodes > MAX_NODES {
            return Err(Error::Parse {
                input: total_nodes.to_string(),
                reason: format!("a topology has at most {MAX_NODES} nodes"),
            });
        }
        let mut nodes = Vec::new();
        let mut pus = Vec::new();
        let mut cores = Vec::new();
        let mut cache_groups = Vec::new();
        let mut cpu = 0;
        for n in 0..total_nodes {
            let mut node_cpus = CpuSet::new();
            if n < spec.nodes {
                for _ in 0..groups_per_node {
                    let shared = spec.caches_per_node > 0;
                    if shared {
                        cache_groups.push(CacheGroup { level: 3, size: Some(32 << 20), cpus: CpuSet::new() });
                    }
                    for _ in 0..spec.cores_per_cache {
                        if !shared {
                            // One private "last-level cache" per core: no sharing.
                            cache_groups.push(CacheGroup { level: 0, size: None, cpus: CpuSet::new() });
                        }
                        let cache_group = cache_groups.len() - 1;
                        let core_index = cores.len();
                        let mut core = Core { cpus: Vec::new(), node: Some(n), cache_group };
                        for _ in 0..spec.pus_per_core {
                            pus.push(Pu { cpu, core: core_index, cache_group, node: Some(n) });
                            core.cpus.push(cpu);
                            node_cpus.insert(cpu);
                            cache_groups[cache_group].cpus.insert(cpu);
                            cpu += 1;
                        }
                        cores.push(core);
                    }
                }
            }
            nodes.push(NumaNode { os_index: n, cpus: node_cpus, memory: 1 << 30, huge_pages: Vec::new() });
        }
        let k = nodes.len();
        let distances = (0..k * k).map(|i| if i / k == i % k { 10 } else { 20 }).collect();
        Ok(Topology {
            source: Source::Synthetic,
            allowed_cpus: pus.iter().map(|p| p.cpu).collect(),
            allowed_nodes: (0..k).collect(),
            nodes,
            pus,
            cores,
            cache_groups,
            distances: Some(distances),
            page_size: 4096,
            huge_page_sizes: vec![2 << 20],
            thp_size: Some(2 << 20),
        })
    }

    /// Where this topology came from.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The NUMA nodes, by ascending kernel number.
    pub fn nodes(&self) -> &[NumaNode] {
        &self.nodes
    }

    /// The node with kernel number `os_index`.
    pub fn node(&self, os_index: usize) -> Option<&NumaNode> {
        self.nodes.iter().find(|n| n.os_index == os_index)
    }

    /// Every node number the machine has.
    pub fn node_set(&self) -> NodeSet {
        self.nodes.iter().map(|n| n.os_index).collect()
    }

    /// The hardware threads, by ascending CPU number.
    pub fn pus(&self) -> &[Pu] {
        &self.pus
    }

    /// The hardware thread with CPU number `cpu`.
    pub fn pu(&self, cpu: usize) -> Option<&Pu> {
        self.pus.binary_search_by_key(&cpu, |p| p.cpu).ok().map(|i| &self.pus[i])
    }

    /// The physical cores.
    pub fn cores(&self) -> &[Core] {
        &self.cores
    }

    /// The groups of CPUs that share a last-level cache.
    pub fn cache_groups(&self) -> &[CacheGroup] {
        &self.cache_groups
    }

    /// The distance from node `from` to node `to` (kernel numbers), as the
    /// kernel reports it (10 = local, by the ACPI SLIT convention), when
    /// known. A machine of one node reports none (as hwloc does).
    pub fn distance(&self, from: usize, to: usize) -> Option<u64> {
        let d = self.distances.as_ref()?;
        let i = self.nodes.iter().position(|n| n.os_index == from)?;
        let j = self.nodes.iter().position(|n| n.os_index == to)?;
        d.get(i * self.nodes.len() + j).copied()
    }

    /// Whether the source reported node distances.
    pub fn has_distances(&self) -> bool {
        self.distances.is_some()
    }

    /// How `self` and `other` differ, one line per differing fact (for a
    /// list, per differing element); empty when they describe the same
    /// machine. Where each came from ([`Topology::source`]) and the free
    /// counts of huge-page pools (a moving figure) are not compared. The
    /// tests use it to check that sysfs and hwloc read a machine alike.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_numa_alloc::{SyntheticSpec, Topology};
    ///
    /// let spec = SyntheticSpec { nodes: 2, caches_per_node: 1, cores_per_cache: 2, pus_per_core: 1, memory_only_nodes: 0 };
    /// let a = Topology::synthetic(spec)?;
    /// assert!(a.differences(&a.clone()).is_empty());
    /// let b = Topology::synthetic(SyntheticSpec { pus_per_core: 2, ..spec })?;
    /// assert!(a.differences(&b).iter().any(|d| d.starts_with("pus:")));
    /// # Ok::<(), skelaff_numa_alloc::Error>(())
    /// ```
    pub fn differences(&self, other: &Topology) -> Vec<String> {
        fn list<T: PartialEq + core::fmt::Debug>(out: &mut Vec<String>, what: &str, a: &[T], b: &[T]) {
            if a.len() != b.len() {
                out.push(format!("{what}: {} vs {}: {a:?} vs {b:?}", a.len(), b.len()));
                return;
            }
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    out.push(format!("{what}[{i}]: {x:?} vs {y:?}"));
                }
            }
        }
        fn one<T: PartialEq + core::fmt::Debug>(out: &mut Vec<String>, what: &str, a: &T, b: &T) {
            if a != b {
                out.push(format!("{what}: {a:?} vs {b:?}"));
            }
        }
        // Huge-page pools without their free counts.
        /// A node's number, CPUs, memory and pools (size, total).
        type NodeFacts = (usize, CpuSet, u64, Vec<(usize, u64)>);
        let nodes = |t: &Topology| -> Vec<NodeFacts> {
            t.nodes
                .iter()
                .map(|n| {
                    (n.os_index, n.cpus.clone(), n.memory, n.huge_pages.iter().map(|p| (p.size, p.total)).collect())
                })
                .collect()
        };
        let mut out = Vec::new();
        list(&mut out, "nodes (number, CPUs, memory, huge-page pools)", &nodes(self), &nodes(other));
        list(&mut out, "pus", &self.pus, &other.pus);
        list(&mut out, "cores", &self.cores, &other.cores);
        list(&mut out, "cache groups", &self.cache_groups, &other.cache_groups);
        one(&mut out, "distances", &self.distances, &other.distances);
        one(&mut out, "page size", &self.page_size, &other.page_size);
        one(&mut out, "huge page sizes", &self.huge_page_sizes, &other.huge_page_sizes);
        one(&mut out, "THP size", &self.thp_size, &other.thp_size);
        one(&mut out, "allowed CPUs", &self.allowed_cpus, &other.allowed_cpus);
        one(&mut out, "allowed nodes", &self.allowed_nodes, &other.allowed_nodes);
        out
    }

    /// The base page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The explicit huge page sizes the kernel offers, ascending.
    pub fn huge_page_sizes(&self) -> &[usize] {
        &self.huge_page_sizes
    }

    /// The transparent huge page size (PMD size), when THP is available.
    pub fn thp_size(&self) -> Option<usize> {
        self.thp_size
    }

    /// The CPUs this process may run on (cpuset and affinity at start-up).
    pub fn allowed_cpus(&self) -> &CpuSet {
        &self.allowed_cpus
    }

    /// The nodes this process may allocate on (cpuset `mems_allowed`).
    pub fn allowed_nodes(&self) -> NodeSet {
        self.allowed_nodes
    }

    /// The allowed nodes that have allowed CPUs (where threads can run).
    pub fn nodes_with_cpus(&self) -> NodeSet {
        self.nodes
            .iter()
            .filter(|n| self.allowed_nodes.contains(n.os_index) && n.cpus.iter().any(|c| self.allowed_cpus.contains(c)))
            .map(|n| n.os_index)
            .collect()
    }

    /// Checks that `node` exists and may be used.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchNode`] or [`Error::NodeNotAllowed`], naming the nodes
    /// that would be accepted.
    pub fn check_node(&self, node: usize) -> Result<()> {
        if self.node(node).is_none() {
            return Err(Error::NoSuchNode { node, existing: Box::new(self.node_set()) });
        }
        if !self.allowed_nodes.contains(node) {
            return Err(Error::NodeNotAllowed { node, allowed: Box::new(self.allowed_nodes) });
        }
        Ok(())
    }

    /// Checks every node of a non-empty set; `policy` names the policy in the error.
    ///
    /// # Errors
    ///
    /// [`Error::EmptyNodeSet`], [`Error::NoSuchNode`] or [`Error::NodeNotAllowed`].
    pub fn check_nodes(&self, nodes: &NodeSet, policy: &'static str) -> Result<()> {
        if nodes.is_empty() {
            return Err(Error::EmptyNodeSet { policy, allowed: Box::new(self.allowed_nodes) });
        }
        nodes.iter().try_for_each(|n| self.check_node(n))
    }

    /// Checks that `cpu` exists and this process may run on it.
    ///
    /// # Errors
    ///
    /// [`Error::CpuNotAllowed`].
    pub fn check_cpu(&self, cpu: usize) -> Result<()> {
        if self.allowed_cpus.contains(cpu) {
            Ok(())
        } else {
            Err(Error::CpuNotAllowed { cpu, allowed: self.allowed_cpus.clone() })
        }
    }
}

/// The calling thread's CPU affinity.
///
/// # Errors
///
/// [`Error::Sys`] if `sched_getaffinity` fails.
pub fn thread_affinity() -> Result<CpuSet> {
    let mut words = vec![0u64; 16];
    loop {
        match sys::sched_getaffinity(&mut words) {
            Ok(()) => return Ok(CpuSet::from_words(&words)),
            Err(e) if e.errno() == libc::EINVAL && words.len() < (1 << 14) => {
                let n = words.len() * 2;
                words.resize(n, 0);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn mems_allowed() -> Option<NodeSet> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Mems_allowed_list:"))?;
    line.trim().parse().ok()
}
