//! The topology as hwloc discovers it (feature `hwloc`): the same
//! [`Topology`] the sysfs reader builds, from hwloc's object tree, so the
//! two can be checked against each other (`Topology::differences`).

use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::ObjectType;
use hwlocality::topology::builder::BuildFlags;

use super::{CacheGroup, Core, Machine, NumaNode, Pu, Source, Topology, mems_allowed, thread_affinity};
use crate::error::{Error, HwlocError, Result};
use crate::sets::{CpuSet, MAX_NODES, NodeSet};

impl Topology {
    /// Reads the topology from hwloc, uncached (feature `hwloc`; with it,
    /// [`Topology::get`] reads through here). hwloc's discovery may briefly
    /// rebind the calling thread.
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

        let machine = read_machine(&hw);
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
        Ok(Topology::assemble(Source::Hwloc, machine, allowed_cpus, allowed_nodes, std::path::Path::new("/")))
    }
}

/// Nodes, hardware threads, cores, last-level caches and distances from
/// hwloc's tree.
fn read_machine(hw: &hwlocality::Topology) -> Machine {
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
    // hwloc's persistent object ids, in hwloc's logical order.
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
    Machine { nodes, pus, cores, cache_groups, distances }
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
