//! The topology's tests: this machine, synthetic shapes, and the sysfs
//! reader over made-up trees (nodes without CPUs, asymmetric distances,
//! offline CPUs, shared caches) and over malformed files.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;

use super::sysfs::{holds_data, parse_cache_size, parse_cpus, parse_distances, parse_number};
use super::*;

#[test]
fn this_machine_is_consistent() {
    let t = Topology::get().unwrap();
    let want = if cfg!(feature = "hwloc") { Source::Hwloc } else { Source::Sysfs };
    assert_eq!(t.source(), want);
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
        assert!(n.memory > 0, "the topology reports memory on node {}", n.os_index);
        if t.has_distances() {
            assert_eq!(t.distance(n.os_index, n.os_index), Some(10));
        }
    }
    assert!(std::ptr::eq(t, Topology::get().unwrap()), "cached");
}

/// Compiled only with hwloc: both sources describe this machine alike.
#[cfg(feature = "hwloc")]
#[test]
fn sysfs_and_hwloc_read_this_machine_alike() {
    let sysfs = Topology::from_sysfs().unwrap();
    let hwloc = Topology::from_hwloc().unwrap();
    assert_eq!((sysfs.source(), hwloc.source()), (Source::Sysfs, Source::Hwloc));
    let diff = sysfs.differences(&hwloc);
    assert!(diff.is_empty(), "sysfs and hwloc differ on this machine:\n{}", diff.join("\n"));
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

/// A made-up sysfs tree in a temporary directory, removed on drop.
struct FakeTree {
    root: PathBuf,
}

impl FakeTree {
    fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("skelaff-sysfs-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Self { root }
    }

    /// Writes `text` to `path` (relative to `sys/devices/system/`, or to
    /// the root when it starts with `/`).
    fn write(&self, path: &str, text: &str) -> &Self {
        let full = match path.strip_prefix('/') {
            Some(p) => self.root.join(p),
            None => self.root.join("sys/devices/system").join(path),
        };
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
        self
    }

    fn remove(&self, path: &str) {
        std::fs::remove_file(self.root.join("sys/devices/system").join(path)).unwrap();
    }

    fn read(&self) -> Result<Topology> {
        Topology::from_sysfs_root(&self.root)
    }
}

impl Drop for FakeTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A CPU list as the kernel's mask form (`shared_cpu_map`, `core_cpus`):
/// 32-bit hexadecimal words, most significant first, which hwloc reads
/// where the sysfs reader reads the `_list` form.
fn mask(list: &str) -> String {
    let cpus: CpuSet = list.parse().unwrap();
    let words = cpus.iter().last().map_or(1, |c| c / 32 + 1);
    let word = |w: usize| (0..32).filter(|b| cpus.contains(w * 32 + b)).fold(0u32, |m, b| m | (1 << b));
    (0..words).rev().map(|w| format!("{:08x}", word(w))).collect::<Vec<_>>().join(",")
}

/// Writes a CPU set in both of the kernel's forms: `NAME_list` and the
/// mask `NAME` (or `shared_cpu_list` and `shared_cpu_map`).
fn write_cpus(t: &FakeTree, dir: &str, name: &str, list: &str) {
    let (as_list, as_mask) = match name {
        "shared_cpu" => ("shared_cpu_list".to_owned(), "shared_cpu_map".to_owned()),
        _ => (format!("{name}_list"), name.to_owned()),
    };
    t.write(&format!("{dir}/{as_list}"), &format!("{list}\n"));
    t.write(&format!("{dir}/{as_mask}"), &format!("{}\n", mask(list)));
}

fn meminfo(node: usize, kb: u64) -> String {
    format!("Node {node} MemTotal: {kb} kB\nNode {node} MemFree: {} kB\nNode {node} MemUsed: 0 kB\n", kb / 2)
}

/// Two nodes of two 2-thread cores each and a node with memory only; CPU 6
/// is offline; each node's four CPUs share an L3, each core an L2; node 1
/// is farther from node 0 than node 0 from node 1.
fn two_nodes_and_a_memory_node(name: &str) -> FakeTree {
    let t = FakeTree::new(name);
    t.write("cpu/online", "0-5,7\n").write("cpu/possible", "0-7\n");
    t.write("node/online", "0-2\n").write("node/has_cpu", "0-1\n");
    for (n, cpus, dist, kb) in
        [(0, "0-3", "10 20 30", 1 << 20), (1, "4-7", "21 10 40", 2 << 20), (2, "", "31 41 10", 1 << 19)]
    {
        t.write(&format!("node/node{n}/cpulist"), &format!("{cpus}\n"));
        t.write(&format!("node/node{n}/cpumap"), &format!("{}\n", mask(cpus)));
        t.write(&format!("node/node{n}/distance"), &format!("{dist}\n"));
        t.write(&format!("node/node{n}/meminfo"), &meminfo(n, kb));
    }
    for cpu in 0..8usize {
        let d = format!("cpu/cpu{cpu}");
        if cpu == 6 {
            // An offline CPU keeps its directory but loses its topology.
            t.write(&format!("{d}/online"), "0\n");
            continue;
        }
        let core = format!("{}-{}", cpu & !1, cpu | 1);
        let node = if cpu < 4 { "0-3" } else { "4-7" };
        write_cpus(&t, &format!("{d}/topology"), "core_cpus", &core);
        t.write(&format!("{d}/topology/core_id"), &format!("{}\n", (cpu / 2) % 2));
        write_cpus(&t, &format!("{d}/topology"), "package_cpus", node);
        t.write(&format!("{d}/topology/physical_package_id"), &format!("{}\n", cpu / 4));
        for (i, level, ty, size, shared) in [
            (0, 1, "Data", "32K", core.as_str()),
            (1, 1, "Instruction", "32K", core.as_str()),
            (2, 2, "Unified", "1024K", core.as_str()),
            (3, 3, "Unified", "16384K", node),
        ] {
            let c = format!("{d}/cache/index{i}");
            t.write(&format!("{c}/level"), &format!("{level}\n"));
            t.write(&format!("{c}/type"), &format!("{ty}\n"));
            t.write(&format!("{c}/size"), &format!("{size}\n"));
            write_cpus(&t, &c, "shared_cpu", shared);
        }
    }
    t
}

fn set(list: &str) -> CpuSet {
    list.parse().unwrap()
}

#[test]
fn sysfs_tree_with_a_memory_node_offline_cpus_and_shared_caches() {
    let tree = two_nodes_and_a_memory_node("shapes");
    let t = tree.read().unwrap();
    let l3 = |cpus| CacheGroup { level: 3, size: Some(16 << 20), cpus: set(cpus) };
    let node = |os_index, cpus, memory| NumaNode { os_index, cpus: set(cpus), memory, huge_pages: Vec::new() };
    let want = Topology {
        source: Source::Sysfs,
        nodes: vec![node(0, "0-3", 1 << 30), node(1, "4-5,7", 2 << 30), node(2, "", 1 << 29)],
        pus: [(0, 0, 0, 0), (1, 0, 0, 0), (2, 1, 0, 0), (3, 1, 0, 0), (4, 2, 1, 1), (5, 2, 1, 1), (7, 3, 1, 1)]
            .map(|(cpu, core, cache_group, node)| Pu { cpu, core, cache_group, node: Some(node) })
            .to_vec(),
        cores: vec![
            Core { cpus: vec![0, 1], node: Some(0), cache_group: 0 },
            Core { cpus: vec![2, 3], node: Some(0), cache_group: 0 },
            Core { cpus: vec![4, 5], node: Some(1), cache_group: 1 },
            Core { cpus: vec![7], node: Some(1), cache_group: 1 },
        ],
        cache_groups: vec![l3("0-3"), l3("4-5,7")],
        distances: Some(vec![10, 20, 30, 21, 10, 40, 31, 41, 10]),
        page_size: sys::page_size(),
        huge_page_sizes: Vec::new(),
        thp_size: None,
        allowed_cpus: set("0-5,7"),
        allowed_nodes: "0-2".parse().unwrap(),
    };
    assert!(t.differences(&want).is_empty(), "{}", t.differences(&want).join("\n"));
    assert_eq!(t, want);
    // The matrix is read row by row: from 0 to 1 is not from 1 to 0.
    assert_eq!((t.distance(0, 1), t.distance(1, 0), t.distance(2, 1)), (Some(20), Some(21), Some(41)));
    assert_eq!(t.nodes_with_cpus(), "0-1".parse().unwrap());
}

/// No NUMA support: one node with the machine's memory. Packages are
/// interleaved ({0,2} and {1,3}), each one core of two threads; with
/// `compute_units`, CPUs 0 and 2 have different core ids (AMD's compute
/// units: a core each, which hwloc does only when /proc/cpuinfo says AMD
/// family 15h); no cache information at all.
fn interleaved_packages_without_nodes(name: &str, compute_units: bool) -> FakeTree {
    let t = FakeTree::new(name);
    t.write("cpu/online", "0-3\n").write("/proc/meminfo", "MemTotal: 4096 kB\nMemFree: 1024 kB\n");
    let id2 = usize::from(compute_units);
    for (cpu, core, id, package) in
        [(0, "0,2", 0, "0,2"), (1, "1,3", 5, "1,3"), (2, "0,2", id2, "0,2"), (3, "1,3", 5, "1,3")]
    {
        write_cpus(&t, &format!("cpu/cpu{cpu}/topology"), "thread_siblings", core);
        t.write(&format!("cpu/cpu{cpu}/topology/core_id"), &id.to_string());
        write_cpus(&t, &format!("cpu/cpu{cpu}/topology"), "core_siblings", package);
        t.write(&format!("cpu/cpu{cpu}/topology/physical_package_id"), &(cpu % 2).to_string());
    }
    t
}

#[test]
fn sysfs_tree_without_nodes_orders_cores_by_package() {
    let t = interleaved_packages_without_nodes("no-nodes", true);
    let topo = t.read().unwrap();
    assert_eq!(topo.nodes(), [NumaNode { os_index: 0, cpus: set("0-3"), memory: 4 << 20, huge_pages: Vec::new() }]);
    let cores: Vec<Vec<usize>> = topo.cores().iter().map(|c| c.cpus.clone()).collect();
    assert_eq!(cores, [vec![0], vec![2], vec![1, 3]]);
    let groups: Vec<(u8, CpuSet)> = topo.cache_groups().iter().map(|g| (g.level, g.cpus.clone())).collect();
    assert_eq!(groups, [(0, set("0")), (0, set("2")), (0, set("1,3"))]);
    assert!(topo.pus().iter().all(|p| p.node == Some(0)));
    assert_eq!(topo.pu(3).map(|p| (p.core, p.cache_group)), Some((2, 2)));
    assert!(!topo.has_distances());
    let t = interleaved_packages_without_nodes("no-nodes-smt", false);
    let cores: Vec<Vec<usize>> = t.read().unwrap().cores().iter().map(|c| c.cpus.clone()).collect();
    assert_eq!(cores, [vec![0, 2], vec![1, 3]]);
}

/// Compiled only with hwloc: hwloc, pointed at a made-up tree by
/// `HWLOC_FSROOT` in a child process (its x86 backend off), finds the same nodes, CPUs, cores,
/// caches and distances there as the sysfs reader (what this process may
/// use and the page sizes are this machine's for hwloc, so not compared).
#[cfg(feature = "hwloc")]
#[test]
fn hwloc_reads_made_up_trees_as_sysfs_does() {
    const CHILD: &str = "SKELAFF_TOPOLOGY_TEST_FSROOT";
    const DONE: &str = "compared hwloc and sysfs under";
    let facts = |t: &Topology| {
        let nodes: Vec<(usize, CpuSet, u64)> = t.nodes.iter().map(|n| (n.os_index, n.cpus.clone(), n.memory)).collect();
        (nodes, t.pus.clone(), t.cores.clone(), t.cache_groups.clone(), t.distances.clone())
    };
    if let Some(root) = std::env::var_os(CHILD) {
        let hwloc = Topology::from_hwloc().unwrap();
        let sysfs = Topology::from_sysfs_root(&root).unwrap();
        assert_eq!(facts(&sysfs), facts(&hwloc), "sysfs (left) and hwloc (right) under {}", root.display());
        println!("{DONE} {}", root.display());
        return;
    }
    let name = "topology::tests::hwloc_reads_made_up_trees_as_sysfs_does";
    for tree in [two_nodes_and_a_memory_node("hwloc"), interleaved_packages_without_nodes("hwloc", false)] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(CHILD, &tree.root)
            .env("HWLOC_FSROOT", &tree.root)
            // hwloc's x86 backend would add this machine's caches (CPUID).
            .env("HWLOC_COMPONENTS", "-x86")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.contains(DONE),
            "child under {}:\n{stdout}\n{stderr}",
            tree.root.display()
        );
    }
}

#[test]
fn one_node_has_no_distances_and_a_missing_distance_file_means_none() {
    let t = FakeTree::new("one-node");
    t.write("cpu/online", "0\n").write("node/node0/cpulist", "0\n").write("node/node0/distance", "10\n");
    assert!(!t.read().unwrap().has_distances());
    let tree = two_nodes_and_a_memory_node("no-distance");
    tree.remove("node/node2/distance");
    let topo = tree.read().unwrap();
    assert!(!topo.has_distances());
    assert_eq!(topo.nodes()[1].memory, 2 << 30);
}

/// Breaks one file of the good tree and returns the error it gives.
fn broken(file: &str, text: &str) -> Error {
    let tree = two_nodes_and_a_memory_node("broken");
    tree.write(file, text);
    tree.read().unwrap_err()
}

#[test]
fn malformed_files_are_named_with_what_they_should_hold() {
    for (file, text, expected) in [
        ("cpu/online", "0-", "a CPU list"),
        ("cpu/online", "\n", "at least one CPU"),
        ("node/node1/cpulist", "7-4", "reversed"),
        ("node/node0/distance", "10 20\n", "3 distances"),
        ("node/node0/distance", "10 20 x\n", "3 distances"),
        ("cpu/cpu2/topology/core_cpus_list", "garbage", "a CPU list"),
        ("cpu/cpu2/topology/core_id", "-", "a core number"),
        ("cpu/cpu3/cache/index3/level", "300", "a cache level"),
        ("cpu/cpu3/cache/index3/level", "0", "a cache level"),
        ("cpu/cpu3/cache/index3/type", "Victim", "a cache type"),
        ("cpu/cpu3/cache/index3/size", "99999999999999999999K", "a cache size"),
        ("cpu/cpu3/cache/index3/shared_cpu_list", "0-99999", "out of range"),
    ] {
        let e = broken(file, text);
        let Error::TopologyFormat { path, expected: why, .. } = &e else { panic!("{file}: {e:?}") };
        assert!(path.ends_with(file), "{file}: {e}");
        assert!(why.contains(expected), "{file} `{text}`: {e}");
        assert!(e.to_string().contains(file), "{e}");
    }
    let e = broken("node/node1/meminfo", "Node 1 MemTotal: lots\n");
    assert!(matches!(&e, Error::NodeMemoryFormat { node: 1, path } if path.ends_with("node1/meminfo")), "{e}");
    let e = broken("node/node1/meminfo", "\u{fffd}".repeat(3).as_str());
    assert!(matches!(e, Error::NodeMemoryFormat { node: 1, .. }), "{e}");
}

#[test]
fn missing_required_files_and_impossible_nodes_are_errors() {
    let tree = two_nodes_and_a_memory_node("missing");
    tree.remove("node/node1/cpulist");
    let e = tree.read().unwrap_err();
    assert!(
        matches!(&e, Error::TopologyUnreadable { path, source, .. } if path.ends_with("node1/cpulist") && source.errno() == libc::ENOENT),
        "{e}"
    );
    tree.remove("cpu/online");
    let e = tree.read().unwrap_err();
    assert!(e.to_string().contains("cpu/online") && e.to_string().contains("online CPUs"), "{e}");
    let tree = two_nodes_and_a_memory_node("node-number");
    tree.write("node/node4096/cpulist", "\n");
    let e = tree.read().unwrap_err();
    assert!(matches!(&e, Error::TopologyFormat { path, .. } if path.ends_with("node4096")), "{e}");
    // Not node directories: ignored.
    let tree = two_nodes_and_a_memory_node("not-nodes");
    tree.write("node/nodeX/cpulist", "\n").write("node/node/cpulist", "\n");
    assert_eq!(tree.read().unwrap().nodes().len(), 3);
}

#[test]
fn the_parsers_refuse_bad_text_naming_the_file() {
    let p = Path::new("/x/cpulist");
    let named = |e: Error| {
        let text = e.to_string();
        assert!(text.starts_with("/x/cpulist holds `"), "{text}");
        assert!(matches!(e, Error::TopologyFormat { .. }));
    };
    assert_eq!(parse_cpus(p, "").unwrap(), CpuSet::new());
    assert_eq!(parse_cpus(p, " 0-2,7\n").unwrap(), set("0-2,7"));
    for bad in ["0-", "3-1", "99999999999999999999", "garbage", "-1", "1,,2", "8192", "0-8192", "1 2", "\u{0}"] {
        named(parse_cpus(p, bad).unwrap_err());
    }
    for bad in ["", "256", "-1", "1e3", "x", "99999999999999999999"] {
        named(parse_number::<u8>(p, bad, "a level").unwrap_err());
    }
    assert_eq!(parse_distances(p, "10 21\n", 2).unwrap(), [10, 21]);
    for bad in ["", "10", "10 x", "10 20 30", "99999999999999999999 1", "-1 10"] {
        named(parse_distances(p, bad, 2).unwrap_err());
    }
    assert_eq!(parse_cache_size(p, "32768K\n").unwrap(), Some(32 << 20));
    assert_eq!(parse_cache_size(p, "2M").unwrap(), Some(2 << 20));
    assert_eq!(parse_cache_size(p, "64").unwrap(), Some(64));
    assert_eq!(parse_cache_size(p, "0K").unwrap(), None);
    for bad in ["", "K", "32768KB", "-1K", "+1K", "18446744073709551615K", "1.5M", "K1", "é"] {
        named(parse_cache_size(p, bad).unwrap_err());
    }
    assert!(holds_data(p, "Data\n").unwrap() && holds_data(p, "Unified").unwrap());
    assert!(!holds_data(p, "Instruction").unwrap());
    for bad in ["", "data", "Unknown", "Data Data"] {
        named(holds_data(p, bad).unwrap_err());
    }
    assert_eq!(
        (mask("0-1"), mask("4-5,7"), mask("33")),
        ("00000003".to_owned(), "000000b0".to_owned(), "00000002,00000000".to_owned())
    );
    // A long file is quoted in part.
    let e = parse_cpus(p, &"x".repeat(10_000)).unwrap_err().to_string();
    assert!(e.len() < 400 && e.contains(&format!("{}...`", "x".repeat(80))), "{e}");
}

proptest! {
    /// No text makes a parser panic; what it refuses names the file.
    #[test]
    fn the_parsers_never_panic(text in "(?s).{0,40}", listish in "[0-9,\\- \n]{0,24}", nodes in 0usize..5) {
        let p = Path::new("/f");
        for t in [&text, &listish] {
            let results = [
                parse_cpus(p, t).err(),
                parse_number::<u8>(p, t, "n").err(),
                parse_distances(p, t, nodes).err(),
                parse_cache_size(p, t).err(),
                holds_data(p, t).err(),
            ];
            for e in results.into_iter().flatten() {
                prop_assert!(matches!(&e, Error::TopologyFormat { path, .. } if path == "/f"), "{e}");
            }
        }
    }
}
