//! The machine as Linux's sysfs describes it, read under a root directory
//! (`/` for this machine, a copied or made-up tree otherwise):
//!
//! | fact | file (under `sys/devices/system/`) | when missing |
//! |---|---|---|
//! | online CPUs | `cpu/online` | an error |
//! | nodes | the `node/nodeN` directories | no `node` directory: one node 0 with every CPU |
//! | a node's CPUs | `node/nodeN/cpulist` | an error |
//! | a node's memory | `node/nodeN/meminfo` (`MemTotal`; `/proc/meminfo` without nodes) | 0 |
//! | distances | `node/nodeN/distance` (row N, over the nodes in order) | none; none for one node |
//! | a CPU's core | `cpu/cpuC/topology/core_cpus_list` (`thread_siblings_list` before Linux 5.3), `core_id` | the CPU is a core of its own |
//! | a CPU's package | `cpu/cpuC/topology/package_cpus_list` (`core_siblings_list`) | the whole machine |
//! | a CPU's last-level cache | the `cpu/cpuC/cache/indexI` of the highest `level` whose `type` is `Data` or `Unified`: its `size` and `shared_cpu_list` | no shared cache: the core is its own group (level 0) |
//!
//! Offline CPUs are left out everywhere (as hwloc leaves them out).
//! Siblings of a core whose `core_id`s differ (AMD's compute units) are
//! cores of their own, as hwloc makes them. A file that is there but not in
//! the form the kernel writes is an error naming it and what it should hold.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::{CacheGroup, Core, Machine, NumaNode, Pu};
use crate::error::{Error, Result, SysError};
use crate::node_memory::parse_meminfo;
use crate::sets::{CpuSet, MAX_NODES};

/// The nodes' directory, under the root.
const NODE_DIR: &str = "sys/devices/system/node";
/// The CPUs' directory, under the root.
const CPU_DIR: &str = "sys/devices/system/cpu";
/// The most of a malformed file an error quotes, in characters.
const QUOTE: usize = 80;
/// The largest file read (a sysfs attribute is at most a page; `meminfo`
/// about 1.2 KiB).
const MAX_FILE: u64 = 1 << 20;

/// What `read_machine` reads of one online CPU.
#[derive(Debug)]
struct CpuInfo {
    cpu: usize,
    /// The online CPUs of its core, itself included.
    core: CpuSet,
    core_id: Option<i64>,
    /// The online CPUs of its package, itself included.
    package: CpuSet,
    llc: Option<Llc>,
}

/// A CPU's last-level cache.
#[derive(Debug, Clone)]
struct Llc {
    level: u8,
    size: Option<u64>,
    /// The online CPUs that share it, the CPU itself included.
    cpus: CpuSet,
}

/// Reads nodes, hardware threads, cores, last-level caches and distances
/// from the tree under `root`.
///
/// # Errors
///
/// [`Error::TopologyUnreadable`], [`Error::TopologyFormat`] or
/// [`Error::NodeMemoryFormat`], naming the file.
pub(super) fn read_machine(root: &Path) -> Result<Machine> {
    let cpu_dir = root.join(CPU_DIR);
    let online_path = cpu_dir.join("online");
    let text = read_required(&online_path, "the online CPUs")?;
    let online = parse_cpus(&online_path, &text)?;
    if online.is_empty() {
        return Err(malformed(&online_path, &text, "the online CPUs: a list of at least one CPU"));
    }

    let Nodes { mut nodes, cpus: node_cpus, distances } = read_nodes(root, &online)?;
    let infos = online
        .iter()
        .map(|cpu| read_cpu(&cpu_dir.join(format!("cpu{cpu}")), cpu, &online))
        .collect::<Result<Vec<_>>>()?;
    let home = |cpu: usize| -> Option<usize> {
        match node_cpus.iter().position(|s| s.contains(cpu)) {
            Some(i) => Some(nodes[i].os_index),
            None => (nodes.len() == 1).then_some(nodes[0].os_index),
        }
    };

    // Each CPU's core: its siblings, unless their core ids differ.
    let info_of = |cpu: usize| infos.binary_search_by_key(&cpu, |i| i.cpu).ok().map(|i| &infos[i]);
    let core_of = |info: &CpuInfo| -> CpuSet {
        let ids_agree = info.core.iter().all(|c| info_of(c).is_none_or(|o| o.core_id == info.core_id));
        if ids_agree { info.core.clone() } else { CpuSet::single(info.cpu) }
    };

    // Cores keyed by their CPU set, each with the CPUs that named it.
    let mut drafts: BTreeMap<Vec<usize>, Vec<&CpuInfo>> = BTreeMap::new();
    for info in &infos {
        drafts.entry(core_of(info).iter().collect()).or_default().push(info);
    }
    // hwloc's logical order: by the lowest CPUs of the sets that hold the
    // core (larger sets are higher in the tree), then by the core's own.
    let mut order: Vec<(Vec<usize>, usize, &Vec<&CpuInfo>)> = drafts
        .values()
        .map(|members| {
            let first = members[0];
            let node_set =
                home(first.cpu).and_then(|n| nodes.iter().position(|x| x.os_index == n)).map(|i| &node_cpus[i]);
            let mut holders: Vec<&CpuSet> = vec![&first.package];
            holders.extend(node_set);
            holders.extend(first.llc.as_ref().map(|l| &l.cpus));
            holders.sort_by_key(|s| core::cmp::Reverse(s.len()));
            let key = holders.iter().map(|s| s.first().unwrap_or(0)).collect();
            (key, first.cpu, members)
        })
        .collect();
    order.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));

    let mut cores = Vec::with_capacity(order.len());
    let mut cache_groups: Vec<CacheGroup> = Vec::new();
    let mut group_of: BTreeMap<(u8, Vec<usize>), usize> = BTreeMap::new();
    let mut pus = Vec::with_capacity(infos.len());
    for (_, _, members) in order {
        let core_index = cores.len();
        let mut core = Core { cpus: Vec::new(), node: home(members[0].cpu), cache_group: 0 };
        for (i, info) in members.iter().enumerate() {
            // Without a shared cache the core is its own group, level 0.
            let (key, level, size) = match &info.llc {
                Some(l) => ((l.level, l.cpus.iter().collect()), l.level, l.size),
                None => ((0, members.iter().map(|m| m.cpu).collect()), 0, None),
            };
            let cache_group = *group_of.entry(key).or_insert_with(|| {
                cache_groups.push(CacheGroup { level, size, cpus: CpuSet::new() });
                cache_groups.len() - 1
            });
            cache_groups[cache_group].cpus.insert(info.cpu);
            if i == 0 {
                core.cache_group = cache_group;
            }
            core.cpus.push(info.cpu);
            pus.push(Pu { cpu: info.cpu, core: core_index, cache_group, node: home(info.cpu) });
        }
        cores.push(core);
    }
    pus.sort_by_key(|p| p.cpu);
    for pu in &pus {
        if let Some(n) = pu.node.and_then(|n| nodes.iter_mut().find(|x| x.os_index == n)) {
            n.cpus.insert(pu.cpu);
        }
    }
    Ok(Machine { nodes, pus, cores, cache_groups, distances })
}

/// What `read_nodes` finds.
#[derive(Debug)]
struct Nodes {
    /// By ascending number, CPUs still empty.
    nodes: Vec<NumaNode>,
    /// Each node's online CPUs, from its `cpulist`.
    cpus: Vec<CpuSet>,
    /// Row-major over `nodes`.
    distances: Option<Vec<u64>>,
}

/// The nodes, their CPU lists and the distance matrix.
fn read_nodes(root: &Path, online: &CpuSet) -> Result<Nodes> {
    let node_dir = root.join(NODE_DIR);
    let numbers = node_numbers(&node_dir)?;
    if numbers.is_empty() {
        // A kernel without NUMA support: one node with every CPU and the
        // machine's memory.
        let path = root.join("proc/meminfo");
        let memory = match read_text(&path, "the machine's memory")? {
            Some(text) => {
                parse_meminfo(0, &text).ok_or_else(|| Error::NodeMemoryFormat { node: 0, path: show(&path) })?.total
            }
            None => 0,
        };
        let node = NumaNode { os_index: 0, cpus: CpuSet::new(), memory, huge_pages: Vec::new() };
        return Ok(Nodes { nodes: vec![node], cpus: vec![online.clone()], distances: None });
    }
    let mut nodes = Vec::with_capacity(numbers.len());
    let mut cpus = Vec::with_capacity(numbers.len());
    let mut rows: Option<Vec<u64>> = Some(Vec::with_capacity(numbers.len() * numbers.len()));
    for &n in &numbers {
        let dir = node_dir.join(format!("node{n}"));
        let path = dir.join("cpulist");
        cpus.push(parse_cpus(&path, &read_required(&path, "a node's CPUs")?)?.intersection(online));
        let path = dir.join("meminfo");
        let memory = match read_text(&path, "a node's memory")? {
            Some(text) => {
                parse_meminfo(n, &text).ok_or_else(|| Error::NodeMemoryFormat { node: n, path: show(&path) })?.total
            }
            None => 0,
        };
        nodes.push(NumaNode { os_index: n, cpus: CpuSet::new(), memory, huge_pages: Vec::new() });
        let path = dir.join("distance");
        match read_text(&path, "a node's distances")? {
            Some(text) => {
                let row = parse_distances(&path, &text, numbers.len())?;
                if let Some(m) = rows.as_mut() {
                    m.extend(row);
                }
            }
            None => rows = None,
        }
    }
    // One node has no distances to speak of (hwloc reports none either).
    let distances = rows.filter(|_| numbers.len() > 1);
    Ok(Nodes { nodes, cpus, distances })
}

/// The numbers of the `nodeN` entries of `dir`, ascending; empty when there
/// is no such directory.
fn node_numbers(dir: &Path) -> Result<Vec<usize>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(unreadable(dir, "the NUMA nodes", &e)),
    };
    let mut numbers = Vec::new();
    for e in entries {
        let e = e.map_err(|e| unreadable(dir, "the NUMA nodes", &e))?;
        let name = e.file_name();
        let Some(digits) = name.to_str().and_then(|n| n.strip_prefix("node")) else { continue };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        match digits.parse::<usize>() {
            Ok(n) if n < MAX_NODES => numbers.push(n),
            _ => {
                return Err(malformed(
                    &e.path(),
                    &name.to_string_lossy(),
                    format!("a node directory `nodeN` with N below {MAX_NODES}"),
                ));
            }
        }
    }
    numbers.sort_unstable();
    numbers.dedup();
    Ok(numbers)
}

/// What the tree says of one online CPU, whose directory is `dir`.
fn read_cpu(dir: &Path, cpu: usize, online: &CpuSet) -> Result<CpuInfo> {
    let topo = dir.join("topology");
    let core = siblings(&topo, ["core_cpus_list", "thread_siblings_list"], "the CPUs of a core", cpu, online)?
        .unwrap_or_else(|| CpuSet::single(cpu));
    let package = siblings(&topo, ["package_cpus_list", "core_siblings_list"], "the CPUs of a package", cpu, online)?
        .unwrap_or_else(|| online.clone());
    let path = topo.join("core_id");
    let core_id = match read_text(&path, "a core's number")? {
        Some(text) => Some(parse_number::<i64>(&path, &text, "a core number (a whole number)")?),
        None => None,
    };
    let llc = last_level_cache(&dir.join("cache"), cpu, online, &core)?;
    Ok(CpuInfo { cpu, core, core_id, package, llc })
}

/// The first of `names` in `dir` that exists, as a CPU set restricted to
/// the online CPUs and holding `cpu`.
fn siblings(dir: &Path, names: [&str; 2], what: &'static str, cpu: usize, online: &CpuSet) -> Result<Option<CpuSet>> {
    for name in names {
        let path = dir.join(name);
        if let Some(text) = read_text(&path, what)? {
            let mut set = parse_cpus(&path, &text)?.intersection(online);
            set.insert(cpu);
            return Ok(Some(set));
        }
    }
    Ok(None)
}

/// The data or unified cache of the highest level among `dir`'s
/// `indexI` entries; `None` without any.
fn last_level_cache(dir: &Path, cpu: usize, online: &CpuSet, core: &CpuSet) -> Result<Option<Llc>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(dir, "a CPU's caches", &e)),
    };
    let mut indexes: Vec<(usize, PathBuf)> = Vec::new();
    for e in entries {
        let e = e.map_err(|e| unreadable(dir, "a CPU's caches", &e))?;
        let index = e.file_name().to_str().and_then(|n| n.strip_prefix("index")).and_then(|n| n.parse::<usize>().ok());
        if let Some(i) = index {
            indexes.push((i, e.path()));
        }
    }
    indexes.sort();
    let mut best: Option<Llc> = None;
    for (_, index) in indexes {
        // An entry without its level, type or sharing says nothing usable
        // (hwloc skips it too).
        let path = index.join("level");
        let Some(text) = read_text(&path, "a cache's level")? else { continue };
        let level = parse_number::<u8>(&path, &text, "a cache level from 1 to 255")?;
        if level == 0 {
            return Err(malformed(&path, &text, "a cache level from 1 to 255"));
        }
        let path = index.join("type");
        let Some(text) = read_text(&path, "a cache's type")? else { continue };
        if !holds_data(&path, &text)? {
            continue;
        }
        let path = index.join("shared_cpu_list");
        let Some(text) = read_text(&path, "the CPUs that share a cache")? else { continue };
        let mut cpus = parse_cpus(&path, &text)?.intersection(online);
        if cpus.is_empty() {
            // Some kernels report no sharing at all: the core's own cache.
            cpus = core.clone();
        }
        cpus.insert(cpu);
        let path = index.join("size");
        let size = match read_text(&path, "a cache's size")? {
            Some(text) => parse_cache_size(&path, &text)?,
            None => None,
        };
        if best.as_ref().is_none_or(|b| level > b.level) {
            best = Some(Llc { level, size, cpus });
        }
    }
    Ok(best)
}

/// A CPU list such as `0-3,8` (empty for a node without CPUs).
pub(super) fn parse_cpus(path: &Path, text: &str) -> Result<CpuSet> {
    text.trim()
        .parse::<CpuSet>()
        .map_err(|e| malformed(path, text, format!("a CPU list such as `0-3,8` ({})", clip(&e.reason, 2 * QUOTE))))
}

/// A number alone in the file.
pub(super) fn parse_number<T: FromStr>(path: &Path, text: &str, expected: &str) -> Result<T> {
    text.trim().parse().map_err(|_| malformed(path, text, expected))
}

/// A node's row of the distance matrix: `nodes` whole numbers.
pub(super) fn parse_distances(path: &Path, text: &str, nodes: usize) -> Result<Vec<u64>> {
    let expected = || format!("{nodes} distances (whole numbers, one per node) separated by spaces");
    let row = text.split_whitespace().map(str::parse::<u64>).collect::<Result<Vec<_>, _>>();
    match row {
        Ok(row) if row.len() == nodes => Ok(row),
        _ => Err(malformed(path, text, expected())),
    }
}

/// A cache size such as `32768K`, in bytes; `None` for 0 (unknown).
pub(super) fn parse_cache_size(path: &Path, text: &str) -> Result<Option<u64>> {
    let expected = "a cache size such as `32768K` (a whole number of bytes, or of K, M or G)";
    let t = text.trim();
    let (digits, unit) = match t.as_bytes().last() {
        Some(b'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some(b'M') => (&t[..t.len() - 1], 1 << 20),
        Some(b'G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed(path, text, expected));
    }
    let bytes =
        digits.parse::<u64>().ok().and_then(|n| n.checked_mul(unit)).ok_or_else(|| malformed(path, text, expected))?;
    Ok((bytes > 0).then_some(bytes))
}

/// Whether a cache's `type` is one that holds data (`Data`, `Unified`)
/// rather than instructions.
pub(super) fn holds_data(path: &Path, text: &str) -> Result<bool> {
    match text.trim() {
        "Data" | "Unified" => Ok(true),
        "Instruction" => Ok(false),
        _ => Err(malformed(path, text, "a cache type: `Data`, `Instruction` or `Unified`")),
    }
}

/// A file's text; `None` when it does not exist.
fn read_text(path: &Path, what: &'static str) -> Result<Option<String>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(path, what, &e)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(|e| unreadable(path, what, &e))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(malformed(path, "(more than 1 MiB)", format!("{what}: a few lines of text")));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| malformed(path, "(bytes that are not UTF-8)", format!("{what} as text")))
}

/// A file's text; a missing file is an error.
fn read_required(path: &Path, what: &'static str) -> Result<String> {
    read_text(path, what)?.ok_or_else(|| Error::TopologyUnreadable {
        path: show(path),
        what,
        source: SysError::new("open", libc::ENOENT),
    })
}

fn show(path: &Path) -> String {
    path.display().to_string()
}

fn unreadable(path: &Path, what: &'static str, e: &std::io::Error) -> Error {
    Error::TopologyUnreadable {
        path: show(path),
        what,
        source: SysError::new("read", e.raw_os_error().unwrap_or(libc::EIO)),
    }
}

/// A file whose `text` is not what it should hold; quotes at most
/// [`QUOTE`] characters of it.
fn malformed(path: &Path, text: &str, expected: impl Into<String>) -> Error {
    Error::TopologyFormat { path: show(path), found: clip(text.trim(), QUOTE), expected: expected.into() }
}

/// `text`, cut after `chars` characters (marked `...`).
fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}
