//! Placement checks for the emulated NUMA machine (`cargo xtask numa-vm`).
//!
//! Run inside a qemu guest whose kernel command line says its shape
//! (`skelaff.topology=2x2+1`); CPU `c` of the guest is on node
//! `c / cpus_per_node`. Every check asks the kernel where pages went
//! (`move_pages`) and fails, naming the misplaced pages, on any deviation.

use std::process::ExitCode;

use skelaff_numa_alloc::{
    Apply, Mapping, NodeSet, NumaBox, NumaRegion, PageLocation, Placement, Policy, RegionOptions, Topology, pin,
};
use skelaff_testkit::{GuestSpec, Suite, expect_no_mismatches};

const PAGES: usize = 96;

fn main() -> ExitCode {
    let Some(spec) = GuestSpec::from_cmdline() else {
        eprintln!(
            "numa_vm: not inside the emulated machine (no skelaff.topology= on the kernel command line); run `cargo xtask numa-vm`"
        );
        return ExitCode::FAILURE;
    };
    let topo = match Topology::get() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("numa_vm: {e}");
            return ExitCode::FAILURE;
        }
    };
    let all = topo.node_set();
    let ps = topo.page_size();
    let mut s = Suite::new(&format!("numa-alloc placement on {spec}"));

    s.check("topology matches the emulated machine", || check_topology(topo, &spec));

    // The default source, sysfs, whichever source `Topology::get` used; with
    // the feature `hwloc` (the test command's build), hwloc must agree with it.
    let name = if cfg!(feature = "hwloc") {
        "sysfs reads the emulated machine, as hwloc does"
    } else {
        "sysfs reads the emulated machine"
    };
    s.check(name, || {
        let sysfs = Topology::from_sysfs().map_err(|e| format!("sysfs: {e}"))?;
        check_topology(&sysfs, &spec)?;
        #[cfg(feature = "hwloc")]
        {
            let hwloc = Topology::from_hwloc().map_err(|e| format!("hwloc: {e}"))?;
            let diff = sysfs.differences(&hwloc);
            if !diff.is_empty() {
                return Err(format!("sysfs and hwloc differ:\n  {}", diff.join("\n  ")));
            }
        }
        Ok(())
    });

    s.check("bind puts every page on its node", || {
        for node in all.iter() {
            let r = region(PAGES * ps, Policy::Bind(NodeSet::single(node)))?;
            let p = placement(&r)?;
            expect_no_mismatches(&format!("bind:{node}"), p.pages().len(), &p.mismatches(|_| Some(node)))?;
        }
        Ok(())
    });

    s.check("preferred puts every page on its node while it has memory", || {
        for node in all.iter() {
            let r = region(PAGES * ps, Policy::Preferred(node))?;
            let p = placement(&r)?;
            expect_no_mismatches(&format!("preferred:{node}"), p.pages().len(), &p.mismatches(|_| Some(node)))?;
        }
        Ok(())
    });

    s.check("interleave is round-robin with equal counts", || {
        let r = region(PAGES * ps + 5 * ps, Policy::Interleave(all))?;
        let p = placement(&r)?;
        check_round_robin(&p, &all)?;
        // The kernel deals pages by virtual page number; rebinding relies on it.
        let base = r.as_ptr() as usize;
        let want = |i: usize| Some(skelaff_numa_alloc::policy::interleave_node(&all, base + i * ps, ps));
        expect_no_mismatches("interleave by virtual page number", p.pages().len(), &p.mismatches(want))
    });

    s.check("cyclic puts block i on node i mod n, exactly", || {
        for pages_per_block in [1, 3] {
            let block = pages_per_block * ps;
            let policy = Policy::Cyclic { nodes: all, block };
            let r = region(PAGES * ps + ps, policy)?;
            let p = placement(&r)?;
            expect_no_mismatches(
                &policy.to_string(),
                p.pages().len(),
                &p.mismatches(|i| policy.cyclic_node_of(i * ps)),
            )?;
        }
        Ok(())
    });

    s.check("rebind migrates every page", || {
        let mut r = region(PAGES * ps, Policy::FirstTouch)?;
        let last = all.iter().last().unwrap_or(0);
        for policy in [
            Policy::Bind(NodeSet::single(last)),
            Policy::Cyclic { nodes: all, block: 2 * ps },
            Policy::Bind(NodeSet::single(0)),
        ] {
            r.rebind(policy).map_err(|e| format!("rebind to {policy}: {e}"))?;
            let p = placement(&r)?;
            let want = |i: usize| policy.cyclic_node_of(i * ps).or(policy.nodes().first());
            expect_no_mismatches(&format!("after rebind to {policy}"), p.pages().len(), &p.mismatches(want))?;
        }
        r.rebind(Policy::Interleave(all)).map_err(|e| e.to_string())?;
        check_round_robin(&placement(&r)?, &all)
    });

    s.check("move_pages_to moves scattered pages to their nodes and reports them in order", || {
        let r = region(PAGES * ps, Policy::FirstTouch)?;
        let nodes: Vec<usize> = all.iter().collect();
        // Every third page, its node by a stride that is not the address
        // order, so the batch alternates nodes as a profile's pages do.
        let moves: Vec<(*const u8, usize)> = (0..PAGES)
            .step_by(3)
            .map(|i| (r.as_ptr().wrapping_add(i * ps).cast_const(), nodes[(i * 7 + 1) % nodes.len()]))
            .collect();
        let found = Placement::move_pages_to(&moves).map_err(|e| e.to_string())?;
        let wrong: Vec<String> = moves
            .iter()
            .zip(&found)
            .filter(|((_, n), l)| **l != PageLocation::Node(*n))
            .map(|((a, n), l)| format!("{a:?} wanted on {n}, reported {l:?}"))
            .collect();
        if !wrong.is_empty() {
            return Err(format!(
                "{} of {} pages: {}",
                wrong.len(),
                moves.len(),
                wrong[..wrong.len().min(4)].join("; ")
            ));
        }
        // The kernel agrees, asked afresh.
        let addrs: Vec<*const u8> = moves.iter().map(|m| m.0).collect();
        let now = Placement::locate_pages(&addrs).map_err(|e| e.to_string())?;
        if now != found {
            return Err("a fresh query disagrees with what move_pages_to reported".into());
        }
        match Placement::move_pages_to(&[(addrs[0], 4096)]) {
            Err(skelaff_numa_alloc::Error::NoSuchNode { node: 4096, .. }) => Ok(()),
            other => Err(format!("a move to node 4096 gave {other:?}")),
        }
    });

    s.check("locate_pages finds the pages NUMA balancing has made inaccessible", || {
        let n = 4096;
        let buf = vec![1u8; n * ps];
        let addrs: Vec<*const u8> = (0..n).map(|i| buf.as_ptr().wrapping_add(i * ps)).collect();
        // Where the pages are, from move_pages, before balancing is on
        // (nothing touches them after, so no hinting fault can move them).
        let placed = Placement::query(buf.as_ptr(), buf.len(), ps).map_err(|e| e.to_string())?.pages().to_vec();
        if let Some(p) = placed.iter().position(|l| !matches!(l, PageLocation::Node(_))) {
            return Err(format!("page {p} of a touched buffer is {:?} before balancing", placed[p]));
        }
        let Some(on) = skelaff_testkit::balancing::Balancing::enable_fast()? else {
            println!("     (skipped: a kernel without automatic NUMA balancing)");
            return Ok(());
        };
        let before = skelaff_testkit::balancing::Vmstat::read()?;
        // The scanner marks a task's pages on the task's clock ticks: spin
        // without touching the buffer until move_pages calls some absent.
        // It leaves alone the pages of a single-threaded process that are on
        // the node it runs on, so a second thread waits meanwhile.
        let (stop, wait) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || wait.recv().ok());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let mut absent = 0;
        let mut x = 1u64;
        while absent == 0 && std::time::Instant::now() < deadline {
            let spin = std::time::Instant::now();
            while spin.elapsed() < std::time::Duration::from_millis(50) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            let raw = Placement::query(buf.as_ptr(), buf.len(), ps).map_err(|e| e.to_string())?;
            absent = raw.pages().iter().filter(|l| **l == PageLocation::NotResident).count();
        }
        let found = Placement::locate_pages(&addrs).map_err(|e| e.to_string())?;
        let k = skelaff_testkit::balancing::Vmstat::read()?.since(before);
        drop(on);
        drop(stop);
        let _ = other.join();
        let missing = found.iter().filter(|l| !matches!(l, PageLocation::Node(_))).count();
        println!(
            "     the scanner made {} page entries inaccessible meanwhile; move_pages called {absent} of {n} \
             present pages absent; locate_pages found a node for all but {missing}",
            k.pte_updates
        );
        if missing > 0 {
            return Err(format!("{missing} of {n} touched pages have no node from locate_pages"));
        }
        // Found by frame where move_pages had them before.
        let moved = placed.iter().zip(&found).filter(|(a, b)| a != b).count();
        if moved > 0 {
            return Err(format!("{moved} of {n} pages reported elsewhere than before the scanner marked them"));
        }
        Ok(())
    });

    s.check("per-range policies (MASA chunks) land on their nodes", || {
        let nodes: Vec<usize> = all.iter().collect();
        let chunk = 8 * ps;
        let mut b = NumaBox::<[u8]>::zeroed(chunk * nodes.len(), RegionOptions::new(Policy::FirstTouch).prefault(true))
            .map_err(|e| e.to_string())?;
        for (i, &n) in nodes.iter().enumerate() {
            b.region_mut()
                .apply_range(i * chunk..(i + 1) * chunk, Policy::Bind(NodeSet::single(n)), Apply::Migrate)
                .map_err(|e| format!("chunk {i} to node {n}: {e}"))?;
        }
        let p = b.placement().map_err(|e| e.to_string())?;
        expect_no_mismatches("chunks", p.pages().len(), &p.mismatches(|i| Some(nodes[i * ps / chunk])))
    });

    s.check("a thread pinned to a CPU of node k reports node k", || {
        for cpu in 0..spec.total_cpus() {
            let want = cpu / spec.cpus_per_node;
            let got = std::thread::spawn(move || -> Result<(usize, usize), String> {
                pin::pin_to_cpu(cpu).map_err(|e| e.to_string())?;
                Ok((pin::current_cpu().map_err(|e| e.to_string())?, pin::current_node().map_err(|e| e.to_string())?))
            })
            .join()
            .map_err(|_| "thread panicked".to_owned())??;
            if got != (cpu, want) {
                return Err(format!("pinned to CPU {cpu}: getcpu says CPU {} node {}, want node {want}", got.0, got.1));
            }
        }
        Ok(())
    });

    s.check("first touch and local follow the touching thread's node", || {
        for node in topo.nodes_with_cpus().iter() {
            for policy in [Policy::FirstTouch, Policy::Local] {
                let p = std::thread::spawn(move || -> Result<Placement, String> {
                    pin::pin_to_node(node).map_err(|e| e.to_string())?;
                    let mut r = NumaRegion::new(PAGES * 4096, RegionOptions::new(policy)).map_err(|e| e.to_string())?;
                    r.as_mut_slice().iter_mut().step_by(4096).for_each(|b| *b = 1);
                    r.placement().map_err(|e| e.to_string())
                })
                .join()
                .map_err(|_| "thread panicked".to_owned())??;
                expect_no_mismatches(
                    &format!("{policy} from node {node}"),
                    p.pages().len(),
                    &p.mismatches(|_| Some(node)),
                )?;
            }
        }
        Ok(())
    });

    s.check("scatter spreads threads over nodes and they run there", || {
        let threads = spec.nodes * spec.cpus_per_node;
        let plan = Mapping::Scatter.plan(topo, threads).map_err(|e| e.to_string())?;
        let mut per_node = vec![0usize; spec.total_nodes()];
        for (i, slot) in plan.slots.iter().enumerate() {
            let cpu = slot.cpu;
            let node = std::thread::spawn(move || {
                pin::pin_to_cpu(cpu).map_err(|e| e.to_string())?;
                pin::current_node().map_err(|e| e.to_string())
            })
            .join()
            .map_err(|_| "thread panicked".to_owned())??;
            if Some(node) != slot.node {
                return Err(format!("worker {i} on CPU {cpu} runs on node {node}, plan said {:?}", slot.node));
            }
            per_node[node] += 1;
            // The first `nodes` workers must be on distinct nodes.
            if i < spec.nodes && per_node[node] > 1 {
                return Err(format!("worker {i} is the second on node {node} before every node has one: {plan:?}"));
            }
        }
        if per_node[..spec.nodes].iter().any(|&c| c != spec.cpus_per_node)
            || per_node[spec.nodes..].iter().any(|&c| c != 0)
        {
            return Err(format!("workers per node {per_node:?}, want {} on each CPU node", spec.cpus_per_node));
        }
        Ok(())
    });

    s.check("a memory-only node accepts memory but no threads", || {
        for node in spec.nodes..spec.total_nodes() {
            if pin::pin_to_node(node).is_ok() {
                return Err(format!("pinning to memory-only node {node} should fail"));
            }
            let r = region(16 * ps, Policy::Interleave(NodeSet::single(node)))?;
            let p = placement(&r)?;
            expect_no_mismatches(&format!("memory-only node {node}"), p.pages().len(), &p.mismatches(|_| Some(node)))?;
        }
        Ok(())
    });

    s.finish()
}

fn region(len: usize, policy: Policy) -> Result<NumaRegion, String> {
    NumaRegion::new(len, RegionOptions::new(policy).prefault(true))
        .map_err(|e| format!("allocating under {policy}: {e}"))
}

fn placement(r: &NumaRegion) -> Result<Placement, String> {
    r.placement().map_err(|e| format!("placement: {e}"))
}

/// Consecutive pages follow the node order cyclically (the kernel picks the
/// starting node from the virtual page number), and counts differ by at most one.
fn check_round_robin(p: &Placement, nodes: &NodeSet) -> Result<(), String> {
    let order: Vec<usize> = nodes.iter().collect();
    let first = p.node_of(0).ok_or_else(|| format!("page 0 not resident: {p}"))?;
    let start =
        order.iter().position(|&n| n == first).ok_or_else(|| format!("page 0 on node {first}, outside {nodes}"))?;
    let want = |i: usize| Some(order[(start + i) % order.len()]);
    expect_no_mismatches("interleave order", p.pages().len(), &p.mismatches(want))?;
    let counts: Vec<usize> = order.iter().map(|&n| p.count_on(n)).collect();
    let (lo, hi) = (counts.iter().min().copied().unwrap_or(0), counts.iter().max().copied().unwrap_or(0));
    if hi - lo > 1 {
        return Err(format!("interleave counts {counts:?} differ by more than one"));
    }
    Ok(())
}

fn check_topology(topo: &Topology, spec: &GuestSpec) -> Result<(), String> {
    if topo.nodes().len() != spec.total_nodes() {
        return Err(format!(
            "the topology ({:?}) has {} nodes, the machine has {}",
            topo.source(),
            topo.nodes().len(),
            spec.total_nodes()
        ));
    }
    for (i, node) in topo.nodes().iter().enumerate() {
        if node.os_index != i {
            return Err(format!("node {i} has kernel number {}", node.os_index));
        }
        let want: Vec<usize> =
            if i < spec.nodes { (i * spec.cpus_per_node..(i + 1) * spec.cpus_per_node).collect() } else { Vec::new() };
        if node.cpus.iter().collect::<Vec<_>>() != want {
            return Err(format!("node {i} has CPUs {}, want {want:?}", node.cpus));
        }
        let mib = node.memory >> 20;
        let given = spec.node_mib_of(i);
        if mib == 0 || mib > given || mib * 2 < given {
            return Err(format!("node {i} has {mib} MiB, the machine gave it {given} MiB"));
        }
    }
    if topo.pus().len() != spec.total_cpus() {
        return Err(format!("{} CPUs, want {}", topo.pus().len(), spec.total_cpus()));
    }
    if topo.allowed_nodes() != topo.node_set() {
        return Err(format!("allowed nodes {} but the machine has {}", topo.allowed_nodes(), topo.node_set()));
    }
    if topo.nodes_with_cpus().len() != spec.nodes {
        return Err(format!("nodes with CPUs: {}", topo.nodes_with_cpus()));
    }
    if spec.total_nodes() > 1 && !topo.has_distances() {
        return Err("no node distances".to_owned());
    }
    for a in topo.nodes() {
        for b in topo.nodes() {
            let d = topo.distance(a.os_index, b.os_index);
            let ok = if a.os_index == b.os_index { d == Some(10) } else { d.is_some_and(|d| d > 10) };
            if spec.total_nodes() > 1 && !ok {
                return Err(format!("distance {}->{} is {d:?}", a.os_index, b.os_index));
            }
        }
    }
    Ok(())
}
