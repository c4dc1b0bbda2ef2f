//! What each policy does when its node is full or forbidden, in the
//! emulated machine whose memory-only node is small (`2x1+1`: node 2 has 96
//! MiB; `cargo xtask numa-vm --topology 2x1+1 --only numa_vm_full_node`).
//! On the other guests it says "not run" and passes.
//!
//! The checks that could end in the OOM killer (a bound region or the
//! global allocator past the node's size) run in a child process, this
//! binary again with `SKELAFF_FULL_NODE_ROLE` set, so that a kill is a
//! failed check with its signal named rather than the end of the suite.
//! The cpuset check runs in a child too: it moves itself into a cgroup
//! whose `cpuset.mems` leaves node 2 out.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode};

use skelaff_numa_alloc::alloc::{self, Binding, NumaAlloc};
use skelaff_numa_alloc::node_memory::{self, NodeMemory};
use skelaff_numa_alloc::{
    Error, NodeSet, NumaBox, NumaRegion, PageLocation, Placement, Policy, RegionOptions, Topology, pin,
};
use skelaff_testkit::{GuestSpec, Suite};

#[global_allocator]
static GLOBAL: NumaAlloc = NumaAlloc::new();

type Check = Result<(), String>;

/// The environment variable that makes this binary a child in one role.
const ROLE: &str = "SKELAFF_FULL_NODE_ROLE";
/// The cgroup the cpuset child moves itself into.
const CGROUP: &str = "/sys/fs/cgroup/skelaff-full-node";
const MIB: usize = 1 << 20;

fn main() -> ExitCode {
    if let Ok(role) = std::env::var(ROLE) {
        return child(&role);
    }
    let Some(spec) = GuestSpec::from_cmdline() else {
        eprintln!(
            "numa_vm_full_node: not inside the emulated machine (no skelaff.topology= on the kernel command line); run `cargo xtask numa-vm`"
        );
        return ExitCode::FAILURE;
    };
    if spec.memory_only == 0 || spec.memory_only_mib > 128 {
        let has = match spec.memory_only {
            0 => "none".to_owned(),
            _ => format!("its memory-only nodes have {} MiB", spec.memory_only_mib),
        };
        println!(
            "numa_vm_full_node: not run on {spec}: it needs a small memory-only node to fill, as the 2x1+1 guest's node 2 ({has})"
        );
        return ExitCode::SUCCESS;
    }
    let full = spec.nodes; // the first memory-only node
    let mut s = Suite::new(&format!("a full or forbidden node on {spec} (node {full}: {} MiB)", spec.memory_only_mib));

    s.check(&format!("bind past node {full}'s memory: a region and a NumaBox are refused, naming what it has"), || {
        let before = memory(full)?;
        let len = before.total as usize + 32 * MIB;
        for prefault in [false, true] {
            let opts = RegionOptions::new(bind(full)).prefault(prefault);
            expect_node_full(NumaRegion::new(len, opts).map(drop), full, len, &format!("region, prefault {prefault}"))?;
        }
        let opts = RegionOptions::new(bind(full)).prefault(true);
        expect_node_full(NumaBox::<[u64]>::zeroed(len / 8, opts).map(drop), full, len, "NumaBox<[u64]>")?;
        let cyclic = Policy::Cyclic { nodes: NodeSet::from_iter([0, full]), block: 64 << 10 };
        let r = NumaRegion::new(2 * len, RegionOptions::new(cyclic).prefault(true));
        expect_node_full(r.map(drop), full, len, "cyclic over nodes 0 and the full node")
    });

    s.check(&format!("a prefault of all node {full} has left is an error or fits, never a kill"), || {
        expect_child("bind-all-available", |out| {
            if out.contains("NodeFull") || out.contains("fits") {
                Ok(())
            } else {
                Err(format!("neither fitted nor NodeFull: {out}"))
            }
        })
    });

    s.check(&format!("preferred and interleave spill past node {full}, counted, no kill"), || {
        expect_child("spill", |_| Ok(()))
    });

    s.check(&format!("the global allocator under bind:{full} past its size prefers it instead and counts it"), || {
        expect_child("global-alloc", |_| Ok(()))
    });

    s.check(&format!("a cpuset without node {full}: bind to it is a typed error naming the allowed nodes"), || {
        let setup = cpuset_without(full)?;
        let r = expect_child("cpuset", |_| Ok(()));
        let _ = std::fs::remove_dir(CGROUP);
        r.map_err(|e| format!("{setup}; {e}"))
    });

    s.finish()
}

/// Node `node`'s memory now.
fn memory(node: usize) -> Result<NodeMemory, String> {
    node_memory::node_memory(node).map_err(|e| e.to_string())
}

fn bind(node: usize) -> Policy {
    Policy::Bind(NodeSet::single(node))
}

/// `r` is [`Error::NodeFull`] for `node`, asking at least `min` bytes of
/// it, and its message names the node and what it had.
fn expect_node_full(r: Result<(), Error>, node: usize, min: usize, what: &str) -> Check {
    match r {
        Err(e @ Error::NodeFull { .. }) => {
            let Error::NodeFull { nodes, requested, available, .. } = &e else { unreachable!() };
            let text = e.to_string();
            if **nodes != NodeSet::single(node) || *requested < (min as u64) / 2 || available >= requested {
                return Err(format!("{what}: {e:?}"));
            }
            if !text.contains(&format!("on NUMA node(s) {node}, which have {available} bytes")) {
                return Err(format!("{what}: the message does not say what the node had: {text}"));
            }
            println!("     {what}: {text}");
            Ok(())
        }
        Err(e) => Err(format!("{what}: expected NodeFull for node {node}, got {e} ({e:?})")),
        Ok(()) => Err(format!("{what}: {min} bytes bound to node {node} were accepted")),
    }
}

/// Runs this binary in `role` and checks that it exited 0 (its output
/// goes to `judge`), naming the signal that killed it otherwise.
fn expect_child(role: &str, judge: impl FnOnce(&str) -> Check) -> Check {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let start = std::time::Instant::now();
    let out = Command::new(exe).env(ROLE, role).output().map_err(|e| format!("starting the {role} child: {e}"))?;
    println!("     [{role}] took {:.1?}", start.elapsed());
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    for line in text.lines() {
        println!("     [{role}] {line}");
    }
    match (out.status.code(), out.status.signal()) {
        (Some(0), _) => judge(&text),
        (_, Some(9)) => Err(format!("the {role} child was killed by SIGKILL (the OOM killer? see the kernel log)")),
        (_, Some(sig)) => Err(format!("the {role} child was killed by signal {sig}")),
        (code, _) => Err(format!("the {role} child failed (exit {code:?})")),
    }
}

/// A child's work: prints what it found, exits 0 when it is as expected.
fn child(role: &str) -> ExitCode {
    // The parent runs the roles only on a guest with a memory-only node.
    let full = GuestSpec::from_cmdline().map_or(2, |s| s.nodes);
    let r = match role {
        "bind-all-available" => bind_all_available(full),
        "spill" => spill(full),
        "global-alloc" => global_alloc(full),
        "cpuset" => in_cpuset(full),
        other => Err(format!("unknown role {other}")),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("FAIL: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A prefaulted bound region of all the node reports available: the check
/// before mapping passes, and the kernel's watermarks keep some of it back,
/// so the prefault cannot place every page there. Under `MPOL_BIND` that
/// fault would call the OOM killer.
fn bind_all_available(full: usize) -> Check {
    let m = memory(full)?;
    let len = (m.available() as usize) / 4096 * 4096;
    match NumaRegion::new(len, RegionOptions::new(bind(full)).prefault(true)) {
        Ok(r) => {
            let p = r.placement().map_err(|e| e.to_string())?;
            if p.count_on(full) != p.pages().len() {
                return Err(format!("a bound region that fitted has pages elsewhere: {p}"));
            }
            println!("fits: {len} bytes of {m:?}");
            Ok(())
        }
        Err(e @ Error::NodeFull { .. }) => {
            println!("NodeFull: {e}");
            Ok(())
        }
        Err(e) => Err(format!("{len} bytes bound to node {full} ({m:?}): {e}")),
    }
}

/// A preferred region larger than what the node has left: the kernel puts
/// the rest elsewhere, and the region counts it. With the node full, an
/// interleaved region's pages meant for it, and a lazily placed preferred
/// box's pages, go elsewhere too.
fn spill(full: usize) -> Check {
    let len = memory(full)?.available() as usize + 16 * MIB;
    let r = NumaRegion::new(len, RegionOptions::new(Policy::Preferred(full)).prefault(true))
        .map_err(|e| format!("preferred:{full}, {len} bytes: {e}"))?;
    let p = r.placement().map_err(|e| e.to_string())?;
    let elsewhere = p.pages().len() - p.count_on(full);
    println!("preferred:{full}, {len} bytes: {p}; spilled_pages {}", r.spilled_pages());
    if p.count_on(full) * 4096 < len / 2 || elsewhere == 0 || r.spilled_pages() != elsewhere {
        return Err(format!(
            "preferred:{full} should fill node {full} and spill the rest, counted: {p}, spilled {}",
            r.spilled_pages()
        ));
    }
    let nodes = NodeSet::from_iter([1, full]);
    let i = NumaRegion::new(16 * MIB, RegionOptions::new(Policy::Interleave(nodes)).prefault(true))
        .map_err(|e| format!("interleave:{nodes}: {e}"))?;
    let p = i.placement().map_err(|e| e.to_string())?;
    println!("interleave:{nodes} with node {full} full: {p}; spilled_pages {}", i.spilled_pages());
    let outside = p.pages().iter().filter(|l| matches!(l, PageLocation::Node(n) if !nodes.contains(*n))).count();
    if p.count_on(full) * 4 > p.pages().len() || i.spilled_pages() != outside {
        return Err(format!("interleave:{nodes}: {p}, spilled {} but {outside} outside", i.spilled_pages()));
    }
    // Without prefault the pages are placed at first touch: same fallback.
    let mut lazy = NumaBox::<[u8]>::zeroed(8 * MIB, RegionOptions::new(Policy::Preferred(full)))
        .map_err(|e| format!("lazy preferred:{full}: {e}"))?;
    lazy.iter_mut().step_by(4096).for_each(|b| *b = 1);
    let p = lazy.placement().map_err(|e| e.to_string())?;
    println!("lazy preferred:{full} with node {full} full: {p}");
    if p.count_on(full) * 4 > p.pages().len() || p.not_resident() != 0 {
        return Err(format!("lazy preferred:{full} did not spill: {p}"));
    }
    Ok(())
}

/// A thread under bind to the full node allocates 24 MiB more than the node
/// has available, in large blocks, then 8 MB of small ones, writing every
/// page. The small blocks' first chunk was mapped (and bound) while the
/// node had room, and is written only once the node is full.
fn global_alloc(full: usize) -> Check {
    let len = memory(full)?.available() as usize + 24 * MIB;
    let cpu_node = Topology::get().map_err(|e| e.to_string())?.nodes_with_cpus().first().unwrap_or(0);
    std::thread::spawn(move || -> Check {
        pin::pin_to_node(cpu_node).map_err(|e| e.to_string())?;
        alloc::set_thread_policy(bind(full)).map_err(|e| e.to_string())?;
        let large: Vec<Vec<u8>> = (0..len / MIB).map(|i| vec![i as u8 | 1; MIB]).collect();
        let small: Vec<Box<[u8; 1000]>> = (0..8000).map(|i| Box::new([i as u8 | 1; 1000])).collect();
        let st = alloc::stats();
        let (mut on, mut off) = (0, 0);
        for v in &large {
            let p = Placement::query(v.as_ptr(), v.len(), 4096).map_err(|e| e.to_string())?;
            on += p.count_on(full);
            off += p.pages().len() - p.count_on(full);
        }
        println!(
            "{} large blocks: {on} pages on node {full}, {off} elsewhere; node_full {}",
            large.len(),
            st.node_full
        );
        let chunk = alloc::chunk_info(small[small.len() - 1].as_ptr()).ok_or("the last small block has no chunk")?;
        println!("last small block's chunk: {chunk:?}");
        if st.node_full == 0 || on * 4096 < len / 2 || off == 0 || st.fallbacks != 0 {
            return Err(format!("want node {full} filled, the rest elsewhere, node_full > 0: {st:?}"));
        }
        if chunk.binding != Binding::NodeFull {
            return Err(format!("the last chunk, mapped with node {full} full, is {:?}", chunk.binding));
        }
        Ok(())
    })
    .join()
    .map_err(|_| "the allocating thread panicked".to_owned())?
}

/// Makes the cgroup [`CGROUP`] with every node but `full` (mounting cgroup
/// v2 and enabling its cpuset controller where needed); says what it did.
fn cpuset_without(full: usize) -> Result<String, String> {
    let root = "/sys/fs/cgroup";
    let mut did = Vec::new();
    if !std::path::Path::new(&format!("{root}/cgroup.controllers")).exists() {
        let st = Command::new("mount").args(["-t", "cgroup2", "none", root]).status();
        if !st.as_ref().is_ok_and(|s| s.success()) {
            return Err(format!("cannot mount cgroup2 on {root}: {st:?}"));
        }
        did.push("mounted cgroup2");
    }
    let write = |path: &str, v: &str| std::fs::write(path, v).map_err(|e| format!("writing {v:?} to {path}: {e}"));
    write(&format!("{root}/cgroup.subtree_control"), "+cpuset")?;
    if !std::path::Path::new(CGROUP).exists() {
        std::fs::create_dir(CGROUP).map_err(|e| format!("mkdir {CGROUP}: {e}"))?;
    }
    let topo = Topology::get().map_err(|e| e.to_string())?;
    let mut mems = topo.node_set();
    mems.remove(full);
    write(&format!("{CGROUP}/cpuset.mems"), &mems.to_string())?;
    did.push("cpuset.mems set");
    Ok(format!("{} ({CGROUP}: cpuset.mems {mems})", did.join(", ")))
}

/// Moves itself into [`CGROUP`], then asks for the node it left out.
fn in_cpuset(full: usize) -> Check {
    let topo = Topology::get().map_err(|e| e.to_string())?;
    let cpu_node = topo.nodes_with_cpus().first().unwrap_or(0);
    // A policy set before the move, as a long-running program would have.
    alloc::set_thread_policy(bind(full)).map_err(|e| format!("before the move: {e}"))?;
    std::fs::write(format!("{CGROUP}/cgroup.procs"), std::process::id().to_string())
        .map_err(|e| format!("joining {CGROUP}: {e}"))?;
    let now = node_memory::mems_allowed_now().map_err(|e| e.to_string())?;
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    let line = status.lines().find(|l| l.starts_with("Mems_allowed_list")).unwrap_or("no Mems_allowed_list");
    println!(
        "moved into {CGROUP}: {line}; mems_allowed_now {now}; the topology (read before) says {}",
        topo.allowed_nodes()
    );
    if now.contains(full) || now.is_empty() {
        return Err(format!("the cpuset did not take node {full} away: {now}"));
    }
    let expect_refused = |r: Result<(), Error>, what: &str| -> Check {
        match r {
            Err(e @ Error::NodeNotAllowed { node, allowed: _ }) if node == full => {
                let text = e.to_string();
                if !text.contains(&format!("may use nodes {now}")) {
                    return Err(format!("{what}: the message does not name the allowed nodes {now}: {text}"));
                }
                println!("{what}: {text}");
                Ok(())
            }
            Err(e) => Err(format!("{what}: expected NodeNotAllowed for node {full}, got {e:?}")),
            Ok(()) => Err(format!("{what}: accepted")),
        }
    };
    let region = |p: Policy| NumaRegion::new(MIB, RegionOptions::new(p).prefault(true)).map(drop);
    expect_refused(region(bind(full)), &format!("a region bound to node {full}"))?;
    let partly = NodeSet::from_iter([cpu_node, full]);
    expect_refused(region(Policy::Bind(partly)), &format!("a region bound to {partly}"))?;
    expect_refused(region(Policy::Preferred(full)), &format!("a region preferring node {full}"))?;
    expect_refused(bind(full).set_for_thread(topo), "set_for_thread")?;
    expect_refused(alloc::set_thread_policy(bind(full)), "alloc::set_thread_policy")?;
    // The allocator's policy, set before the move, now names a node the
    // kernel refuses: its mappings fall back unbound, counted; allocation goes on.
    let before = alloc::stats().fallbacks;
    let v = vec![1u8; 8 * MIB];
    let after = alloc::stats().fallbacks;
    let p = Placement::query(v.as_ptr(), v.len(), 4096).map_err(|e| e.to_string())?;
    println!("8 MiB under the old bind:{full}: {p}; fallbacks {before} -> {after}");
    if after <= before || p.count_on(full) != 0 {
        return Err(format!("want a counted fallback and no page on node {full}: fallbacks {before} -> {after}, {p}"));
    }
    Ok(())
}
