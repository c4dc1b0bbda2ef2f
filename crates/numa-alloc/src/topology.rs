//! The machine's NUMA topology, read once from hwloc and cached.

use std::sync::OnceLock;

use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::ObjectType;
use hwlocality::topology::builder::BuildFlags;

use crate::error::{Error, HwlocError, Result};
use crate::sets::{CpuSet, MAX_NODES, NodeSet};
use crate::sys;

/// A NUMA node: a bank of memory and the CPUs closest to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNode {
    /// The kernel's node number (what `mbind` and `move_pages` use).
    pub os_index: usize,
    /// The CPUs whose home node this is. Empty for a node with memory only.
    pub cpus: CpuSet,
    /// Memory on this node, in bytes (0 when hwloc does not know).
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
    /// The cache level (3 for an L3); 0 when hwloc reported no cache, in which
    /// case the group is one core and claims no sharing.
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
pub enum Source {
    /// Read from this machine by hwloc.
    Hwloc,
    /// Built by [`Topology::synthetic`].
    Synthetic,
}

/// The machine: NUMA nodes, cores, hardware threads, shared caches, page
/// sizes, and what this process may use.
///
/// Build it with [`Topology::get`], which reads hwloc once per process and
/// caches the result. hwloc's discovery may briefly rebind the calling
/// thread, so the pinning functions of this crate read the topology before
/// they pin; call `Topology::get` early if you pin threads by other means.
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

impl Topology {
    /// The topology of this machine, read from hwloc on first use and cached.
    ///
    /// # Errors
    ///
    /// [`Error::Topology`] if hwloc cannot discover the machine (the error is
    /// cached too).
    pub fn get() -> Result<&'static Topology> {
        TOPOLOGY.get_or_init(Self::from_hwloc).as_ref().map_err(Clone::clone)
    }

    /// Reads the topology from hwloc, uncached.
    ///
    /// # Errors
    ///
    /// [`Error::Topology`] if hwloc fails.
    pub fn from_hwloc() -> Result<Topology> {
        let hw = hwlocality::Topology::builder()
            .with_flags(BuildFlags::INCLUDE_DISALLOWED)
            .map_err(|e| Error::Topology {
                doing: "setting its build flags (INCLUDE_DISALLOWED)",
                source: HwlocError::flags(e),
            })?
            .build()
            .map_err(|e| Error::Topology { doing: "discovering the machine", source: HwlocError::build(e) })?;

        let mut nodes: Vec<NumaNode> = hw
            .objects_with_type(ObjectType::NUMANode)
            .filter_map(|o| {
                let os_index = o.os_index()?;
                let memory = match o.attributes() {
                    Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map_or(0, |m| m.get()),
                    _ => 0,
                };
                Some(NumaNode { os_index, cpus: CpuSet::new(), memory, huge_pages: Vec::new() })
            })
            .filter(|n| n.os_index < MAX_NODES)
            .collect();
        nodes.sort_by_key(|n| n.os_index);
        nodes.dedup_by_key(|n| n.os_index);
        if nodes.is_empty() {
            // hwloc always reports at least one node; a machine without NUMA
            // support is one node numbered 0.
            nodes.push(NumaNode { os_index: 0, cpus: CpuSet::new(), memory: 0, huge_pages: Vec::new() });
        }

        // Group hardware threads by core and by last-level cache, keyed by
        // hwloc's persistent object ids.
        let mut core_keys: Vec<u64> = Vec::new();
        let mut cache_keys: Vec<u64> = Vec::new();
        let mut cores: Vec<Core> = Vec::new();
        let mut cache_groups: Vec<CacheGroup> = Vec::new();
        let mut pus: Vec<Pu> = Vec::new();
        for pu in hw.objects_with_type(ObjectType::PU) {
            let Some(cpu) = pu.os_index() else { continue };
            let node = home_node(pu).or_else(|| (nodes.len() == 1).then_some(nodes[0].os_index));
            let core_key = pu.first_ancestor_with_type(ObjectType::Core).unwrap_or(pu).global_persistent_index();
            let llc = pu.ancestors().filter(|a| a.object_type().is_cpu_data_cache()).last();
            // Without cache information a core is its own group: no sharing claimed.
            let (cache_key, level, size) = match llc {
                Some(c) => {
                    let (level, size) = match c.attributes() {
                        Some(ObjectAttributes::Cache(a)) => (a.depth() as u8, a.size().map(|s| s.get())),
                        _ => (0, None),
                    };
                    (c.global_persistent_index(), level, size)
                }
                None => (core_key | (1 << 63), 0, None),
            };
            let cache_group = match cache_keys.iter().position(|&k| k == cache_key) {
                Some(i) => i,
                None => {
                    cache_keys.push(cache_key);
                    cache_groups.push(CacheGroup { level, size, cpus: CpuSet::new() });
                    cache_groups.len() - 1
                }
            };
            cache_groups[cache_group].cpus.insert(cpu);
            let core = match core_keys.iter().position(|&k| k == core_key) {
                Some(i) => i,
                None => {
                    core_keys.push(core_key);
                    cores.push(Core { cpus: Vec::new(), node, cache_group });
                    cores.len() - 1
                }
            };
            cores[core].cpus.push(cpu);
            pus.push(Pu { cpu, core, cache_group, node });
        }
        for pu in &pus {
            if let Some(n) = pu.node.and_then(|n| nodes.iter_mut().find(|x| x.os_index == n)) {
                n.cpus.insert(pu.cpu);
            }
        }
        pus.sort_by_key(|p| p.cpu);

        let distances = hw.distances(None).ok().and_then(|all| {
            all.iter().find_map(|d| {
                let objs: Vec<usize> = d
                    .objects()
                    .map(|o| o.filter(|o| o.object_type() == ObjectType::NUMANode).and_then(|o| o.os_index()))
                    .collect::<Option<Vec<_>>>()?;
                let pos: Vec<usize> =
                    nodes.iter().map(|n| objs.iter().position(|&o| o == n.os_index)).collect::<Option<Vec<_>>>()?;
                let k = objs.len();
                let raw = d.distances();
                let mut m = Vec::with_capacity(nodes.len() * nodes.len());
                for &i in &pos {
                    for &j in &pos {
                        m.push(*raw.get(i * k + j)?);
                    }
                }
                Some(m)
            })
        });

        let mut allowed_cpus = CpuSet::from_iter(hw.allowed_cpuset().iter_set().map(usize::from));
        if let Ok(affinity) = thread_affinity() {
            allowed_cpus = allowed_cpus.intersection(&affinity);
        }
        let mut allowed_nodes = NodeSet::new();
        for n in hw.allowed_nodeset().iter_set().map(usize::from) {
            if n < MAX_NODES {
                allowed_nodes.insert(n);
            }
        }
        if let Some(mems) = mems_allowed() {
            allowed_nodes = allowed_nodes.intersection(&mems);
        }

        for node in &mut nodes {
            node.huge_pages = huge_page_pools(node.os_index);
        }
        Ok(Topology {
            source: Source::Hwloc,
            nodes,
            pus,
            cores,
            cache_groups,
            distances,
            page_size: sys::page_size(),
            huge_page_sizes: huge_page_sizes(),
            thp_size: read_number("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size").map(|n| n as usize),
            allowed_cpus,
            allowed_nodes,
        })
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

    /// The distance from node `from` to node `to` (kernel numbers), as hwloc
    /// reports it (10 = local, by the ACPI SLIT convention), when known.
    pub fn distance(&self, from: usize, to: usize) -> Option<u64> {
        let d = self.distances.as_ref()?;
        let i = self.nodes.iter().position(|n| n.os_index == from)?;
        let j = self.nodes.iter().position(|n| n.os_index == to)?;
        d.get(i * self.nodes.len() + j).copied()
    }

    /// Whether hwloc reported node distances.
    pub fn has_distances(&self) -> bool {
        self.distances.is_some()
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

/// The nearest NUMA node of a PU: the lowest-numbered NUMA node hanging
/// below the closest ancestor that has memory children.
fn home_node(pu: &TopologyObject) -> Option<usize> {
    fn numa_below(obj: &TopologyObject, out: &mut Vec<usize>) {
        for m in obj.memory_children() {
            if m.object_type() == ObjectType::NUMANode {
                out.extend(m.os_index());
            }
            numa_below(m, out);
        }
    }
    let mut found = Vec::new();
    for anc in pu.ancestors() {
        numa_below(anc, &mut found);
        if let Some(&n) = found.iter().min() {
            return Some(n);
        }
    }
    None
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

fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn parse_hugepage_dir(name: &str) -> Option<usize> {
    let kb: usize = name.strip_prefix("hugepages-")?.strip_suffix("kB")?.parse().ok()?;
    kb.checked_mul(1024)
}

fn huge_page_sizes() -> Vec<usize> {
    let mut sizes: Vec<usize> = std::fs::read_dir("/sys/kernel/mm/hugepages")
        .map(|d| d.filter_map(|e| parse_hugepage_dir(e.ok()?.file_name().to_str()?)).collect())
        .unwrap_or_default();
    sizes.sort_unstable();
    sizes
}

fn huge_page_pools(node: usize) -> Vec<HugePagePool> {
    let dir = format!("/sys/devices/system/node/node{node}/hugepages");
    let mut pools: Vec<HugePagePool> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| {
                let e = e.ok()?;
                let size = parse_hugepage_dir(e.file_name().to_str()?)?;
                let p = e.path();
                Some(HugePagePool {
                    size,
                    total: read_number(p.join("nr_hugepages").to_str()?)?,
                    free: read_number(p.join("free_hugepages").to_str()?)?,
                })
            })
            .collect()
        })
        .unwrap_or_default();
    pools.sort_by_key(|p| p.size);
    pools
}

/// Free huge pages of `size` bytes across `nodes`, from sysfs right now.
pub(crate) fn free_huge_pages(size: usize, nodes: Option<&NodeSet>) -> usize {
    match nodes {
        Some(ns) => ns.iter().flat_map(huge_page_pools).filter(|p| p.size == size).map(|p| p.free as usize).sum(),
        None => read_number(&format!("/sys/kernel/mm/hugepages/hugepages-{}kB/free_hugepages", size / 1024))
            .unwrap_or(0) as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_is_consistent() {
        let t = Topology::get().unwrap();
        assert_eq!(t.source(), Source::Hwloc);
        assert!(!t.nodes().is_empty());
        assert!(!t.pus().is_empty());
        assert!(t.page_size().is_power_of_two());
        // Every PU belongs to one core, one cache group and (here) one node.
        let mut seen = CpuSet::new();
        for pu in t.pus() {
            assert!(seen.insert(pu.cpu));
            assert!(t.cores()[pu.core].cpus.contains(&pu.cpu));
            assert!(t.cache_groups()[pu.cache_group].cpus.contains(pu.cpu));
            let node = pu.node.expect("every CPU has a home node on this machine");
            assert!(t.node(node).unwrap().cpus.contains(pu.cpu));
        }
        let node_cpus = t.nodes().iter().fold(CpuSet::new(), |a, n| a.union(&n.cpus));
        assert_eq!(node_cpus, seen);
        assert!(t.allowed_cpus().is_subset(&seen));
        assert!(t.allowed_nodes().is_subset(&t.node_set()));
        for n in t.nodes() {
            assert!(n.memory > 0, "hwloc reports memory on node {}", n.os_index);
            if t.has_distances() {
                assert_eq!(t.distance(n.os_index, n.os_index), Some(10));
            }
        }
        assert!(std::ptr::eq(t, Topology::get().unwrap()), "cached");
    }

    #[test]
    fn node_checks_name_the_allowed_nodes() {
        let t = Topology::synthetic(SyntheticSpec {
            nodes: 2,
            caches_per_node: 1,
            cores_per_cache: 2,
            pus_per_core: 1,
            memory_only_nodes: 0,
        })
        .unwrap();
        assert!(t.check_node(1).is_ok());
        let e = t.check_node(7).unwrap_err();
        assert_eq!(e, Error::NoSuchNode { node: 7, existing: Box::new("0-1".parse().unwrap()) });
        assert!(e.to_string().contains("has nodes 0-1"), "{e}");
        let e = t.check_nodes(&NodeSet::new(), "bind").unwrap_err();
        assert!(e.to_string().contains("bind policy needs at least one node"), "{e}");
        assert!(t.check_cpu(3).is_ok());
        assert!(matches!(t.check_cpu(4), Err(Error::CpuNotAllowed { cpu: 4, .. })));
    }

    #[test]
    fn synthetic_shapes() {
        for nodes in [1, 2, 4, 8] {
            for caches in [0, 1, 2] {
                let t = Topology::synthetic(SyntheticSpec {
                    nodes,
                    caches_per_node: caches,
                    cores_per_cache: 3,
                    pus_per_core: 2,
                    memory_only_nodes: 1,
                })
                .unwrap();
                let groups = if caches == 0 { 3 } else { caches };
                assert_eq!(t.nodes().len(), nodes + 1);
                assert_eq!(t.cache_groups().len(), nodes * groups);
                assert_eq!(t.cores().len(), nodes * caches.max(1) * 3);
                assert_eq!(t.pus().len(), nodes * caches.max(1) * 6);
                assert_eq!(t.nodes_with_cpus().len(), nodes);
                assert_eq!(t.distance(0, nodes), Some(20));
                for g in t.cache_groups() {
                    assert_eq!(g.cpus.len(), if caches == 0 { 2 } else { 6 });
                }
            }
        }
        assert_eq!(
            Topology::synthetic(SyntheticSpec {
                nodes: 0,
                caches_per_node: 1,
                cores_per_cache: 1,
                pus_per_core: 1,
                memory_only_nodes: 0
            }),
            Err(Error::ZeroThreads)
        );
    }

    #[test]
    fn hugepage_dir_names() {
        assert_eq!(parse_hugepage_dir("hugepages-2048kB"), Some(2 << 20));
        assert_eq!(parse_hugepage_dir("hugepages-1048576kB"), Some(1 << 30));
        assert_eq!(parse_hugepage_dir("junk"), None);
    }
}
