//! Shoal's arrays checked in the emulated NUMA machine (`cargo xtask
//! numa-vm`): every implementation's pages where it says (asked of the
//! kernel with `move_pages`), the replica a pinned thread reads (by the
//! address it reads from), PageRank and streamcluster giving the `Vec`
//! result under every implementation, and a misplaced replica caught.

use std::process::ExitCode;

use skelaff_arrays::workloads::pagerank::{ArraysPageRank, RankAgreement, VecPageRank};
use skelaff_arrays::workloads::streamcluster::{ArrayPoints, ClusterAgreement, Params, Streamcluster, VecPoints};
use skelaff_arrays::workloads::{Graph, PinnedThreads, Runner};
use skelaff_arrays::{AccessHints, Array, Choice, Implementation, LargePages, Partition, home};
use skelaff_numa_alloc::{Apply, NodeSet, PageLocation, Placement, Policy, Topology, pin};
use skelaff_testkit::{GuestSpec, Suite, expect_no_mismatches};

type Check = Result<(), String>;

/// 3 MiB of u64: several hundred pages per node on every shape.
const LEN: usize = 3 << 17;

fn main() -> ExitCode {
    let Some(spec) = GuestSpec::from_cmdline() else {
        eprintln!(
            "numa_vm_arrays: not inside the emulated machine (no skelaff.topology= on the kernel command line); run `cargo xtask numa-vm`"
        );
        return ExitCode::FAILURE;
    };
    let topo = match Topology::get() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("numa_vm_arrays: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut s = Suite::new(&format!("Shoal arrays on {spec}"));
    let with_cpus: Vec<usize> = (0..spec.nodes).collect();
    let all: Vec<usize> = (0..spec.total_nodes()).collect();

    s.check("the machine is the guest's shape", || {
        let got: Vec<usize> = topo.nodes_with_cpus().iter().collect();
        let every: Vec<usize> = topo.allowed_nodes().iter().collect();
        if got != with_cpus || every != all {
            return Err(format!("nodes with CPUs {got:?}, all {every:?}; want {with_cpus:?}, {all:?}"));
        }
        Ok(())
    });

    for &node in &all {
        s.check(&format!("single-node on node {node}: every page there"), || {
            let a = build(Choice::Single, LargePages::Off, |b| b.node(node))?;
            expect_plans(&a, "single")?;
            only_node(&a, node)
        });
    }

    s.check("distributed: pages interleaved over every node, evenly", || {
        let a = build(Choice::Distributed, LargePages::Off, |b| b)?;
        expect_plans(&a, "distributed").map_err(|e| format!("{e}; available per node: {}", available(&all)))?;
        let p = a.placement().map_err(|e| e.to_string())?.remove(0);
        let counts: Vec<usize> = all.iter().map(|&n| p.count_on(n)).collect();
        let (lo, hi) = (counts.iter().min().copied().unwrap_or(0), counts.iter().max().copied().unwrap_or(0));
        if hi - lo > 1 || lo == 0 {
            return Err(format!("pages per node {counts:?}: not even"));
        }
        Ok(())
    });

    s.check("distributed with transparent huge pages: spread evenly, a huge page at a time", || {
        // 24 MiB: 12 huge pages, a whole number per node on every shape.
        let a = Array::<u64>::builder(3 << 20)
            .choice(Choice::Distributed)
            .large_pages(LargePages::Transparent)
            .build()
            .map_err(|e| e.to_string())?;
        let p = a.placement().map_err(|e| e.to_string())?.remove(0);
        let counts: Vec<usize> = all.iter().map(|&n| p.count_on(n)).collect();
        let (lo, hi) = (counts.iter().min().copied().unwrap_or(0), counts.iter().max().copied().unwrap_or(0));
        let per_huge = (2 << 20) / p.page_size();
        if hi - lo > per_huge || lo == 0 || p.not_resident() > 0 {
            return Err(format!("pages per node {counts:?} ({} not resident)", p.not_resident()));
        }
        Ok(())
    });

    s.check("replicated: one replica per node with CPUs, each on its node", || {
        let a = build(Choice::Replicated, LargePages::Off, |b| b)?;
        if a.replica_nodes() != with_cpus {
            return Err(format!("replicas on {:?}, want {with_cpus:?}", a.replica_nodes()));
        }
        check_replicas(&a)
    });

    s.check("replicated with transparent huge pages: each replica on its node", || {
        check_replicas(&build(Choice::Replicated, LargePages::Transparent, |b| b)?)
    });

    s.check("a thread pinned on node k reads node k's replica (the master while it is ahead)", || {
        let mut a = build(Choice::Replicated, LargePages::Off, |b| b)?;
        let master = a.replica_nodes()[0];
        // Written through the master and not yet propagated: every thread
        // reads the master, and sees the write.
        a.as_mut_slice().iter_mut().for_each(|x| *x = 7);
        for &node in &with_cpus {
            readers_see_their_replica(&a, node, master, 7)?;
        }
        a.repl_sync();
        for &node in &with_cpus {
            readers_see_their_replica(&a, node, node, 7)?;
        }
        Ok(())
    });

    let threads = match PinnedThreads::new(spec.total_cpus()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("numa_vm_arrays: {e}");
            return ExitCode::FAILURE;
        }
    };
    s.check("partitioned: each thread's range on that thread's node", || {
        let p = Partition::new(LEN, &threads.thread_nodes()).map_err(|e| e.to_string())?;
        let a = build(Choice::Partitioned, LargePages::Off, |b| b.partition(&p))?;
        expect_plans(&a, "partitioned")?;
        // Independently of the plan: the page holding the middle of each
        // thread's range is on that thread's node.
        let placement = a.placement().map_err(|e| e.to_string())?.remove(0);
        for t in 0..p.threads() {
            let r = p.thread_range(t);
            let page = (r.start + r.len() / 2) * 8 / placement.page_size();
            let want = p.thread_node(t);
            if placement.node_of(page) != Some(want) {
                return Err(format!("thread {t}'s page {page}: {:?}, want node {want}", placement.pages()[page]));
            }
        }
        let per_node: Vec<(usize, usize)> = p.elements_per_node();
        if per_node.iter().map(|&(n, _)| n).collect::<Vec<_>>() != with_cpus {
            return Err(format!("owners {per_node:?}, want every node with CPUs"));
        }
        Ok(())
    });

    s.check("partitioned by the machine's default schedule, transparent huge pages", || {
        let a = build(Choice::Partitioned, LargePages::Transparent, |b| b)?;
        expect_plans(&a, "partitioned (default schedule)")
    });

    s.check("PageRank gives the Vec result under every implementation", || {
        let g = Graph::rmat(11, 8, 5).map_err(|e| e.to_string())?;
        let p = Partition::new(g.nodes(), &threads.thread_nodes()).map_err(|e| e.to_string())?;
        let mut v = VecPageRank::new(&g, &p).map_err(|e| e.to_string())?;
        for _ in 0..8 {
            v.step(&threads);
        }
        for choice in [Choice::Auto, Choice::Single, Choice::Distributed, Choice::Replicated, Choice::Partitioned] {
            let mut a = ArraysPageRank::new(&g, &p, choice, LargePages::Auto).map_err(|e| e.to_string())?;
            for _ in 0..8 {
                a.step(&threads);
            }
            let agree = RankAgreement::of(a.ranks(), v.ranks());
            if !agree.agrees() {
                return Err(format!("{choice}: ranks differ from the Vec version by {}", agree.max_abs_diff));
            }
            if choice == Choice::Auto {
                let got: Vec<Implementation> = a.arrays().iter().map(|r| r.selection.implementation).collect();
                use Implementation::*;
                if got != [Replicated, Replicated, Replicated, Distributed, Partitioned] {
                    return Err(format!("auto chose {got:?}"));
                }
            }
        }
        Ok(())
    });

    s.check("streamcluster gives the Vec result under every implementation", || {
        let params = Params { points: 4000, dim: 4, seed: 9 };
        let p = Partition::new(params.points, &threads.thread_nodes()).map_err(|e| e.to_string())?;
        let run = |sc: &mut dyn FnMut(u64)| (0..2).for_each(sc);
        let mut v = Streamcluster::new(VecPoints::new(&params).map_err(|e| e.to_string())?, params, &p)
            .map_err(|e| e.to_string())?;
        run(&mut |k| {
            v.load_chunk(k);
            v.start_chunk(&threads);
            v.candidates(k, 20).into_iter().for_each(|x| {
                v.pgain(&threads, x);
            });
        });
        for choice in [Choice::Auto, Choice::Replicated, Choice::Partitioned] {
            let store = ArrayPoints::new(&params, &p, choice, LargePages::Auto).map_err(|e| e.to_string())?;
            let mut a = Streamcluster::new(store, params, &p).map_err(|e| e.to_string())?;
            run(&mut |k| {
                a.load_chunk(k);
                a.start_chunk(&threads);
                a.candidates(k, 20).into_iter().for_each(|x| {
                    a.pgain(&threads, x);
                });
            });
            let agree = ClusterAgreement::of(&a, &v);
            if !agree.agrees() {
                return Err(format!("{choice}: {agree:?}"));
            }
        }
        Ok(())
    });

    if spec.nodes >= 2 {
        s.check("a misplaced replica is caught (placement and reader checks fail)", || {
            let a = build(Choice::Replicated, LargePages::Off, |b| b)?;
            check_replicas(&a)?;
            // Move replica 1's pages to node 0, as a broken allocator would.
            let victim = a.replica_nodes()[1];
            let rep = a.replica(victim).ok_or("no replica on node 1")?;
            let wrong = a.replica_nodes()[0];
            Policy::Bind(NodeSet::single(wrong))
                .apply(topo, rep.as_ptr().cast_mut().cast(), rep.len() * 8, Apply::Migrate)
                .map_err(|e| format!("moving the replica: {e}"))?;
            match check_replicas(&a) {
                Ok(()) => return Err("the placement check passed a replica moved to the wrong node".into()),
                Err(e)
                    if e.contains(&format!("replica on node {victim}"))
                        && e.contains(&format!("want node {victim}")) =>
                {
                    println!("     (as intended) {}", &e[..e.len().min(160)]);
                }
                Err(e) => return Err(format!("the placement check failed for another reason: {e}")),
            }
            match readers_see_their_replica(&a, victim, victim, 0) {
                Ok(()) => Err("the reader check passed a replica on the wrong node".into()),
                Err(e) if e.contains("is on") => Ok(()),
                Err(e) => Err(format!("the reader check failed for another reason: {e}")),
            }
        });
    }

    s.finish()
}

/// A `LEN`-element u64 array of `choice` with `large` pages, after `more`.
fn build(
    choice: Choice,
    large: LargePages,
    more: impl FnOnce(skelaff_arrays::ArrayBuilder<u64>) -> skelaff_arrays::ArrayBuilder<u64>,
) -> Result<Array<u64>, String> {
    let b = Array::<u64>::builder(LEN).hints(AccessHints::new()).choice(choice).large_pages(large);
    let a = more(b).build().map_err(|e| format!("building a {choice} array: {e}"))?;
    if a.implementation().to_string() != choice.to_string() {
        return Err(format!("asked for {choice}, got {}", a.implementation()));
    }
    Ok(a)
}

/// Every page of every copy where the array's plan says, and resident.
fn expect_plans(a: &Array<u64>, what: &str) -> Check {
    for (i, plan) in a.plans().iter().enumerate() {
        let m = plan.misplaced().map_err(|e| e.to_string())?;
        expect_no_mismatches(&format!("{what} copy {i}"), plan.pages(), &m)?;
    }
    Ok(())
}

fn only_node(a: &Array<u64>, node: usize) -> Check {
    let p = a.placement().map_err(|e| e.to_string())?.remove(0);
    let m = p.mismatches(|_| Some(node));
    expect_no_mismatches("single-node", p.pages().len(), &m)
}

/// Each replica's pages on its own node (checked against the node, not the plan).
fn check_replicas(a: &Array<u64>) -> Check {
    for (&node, placement) in a.replica_nodes().iter().zip(a.placement().map_err(|e| e.to_string())?) {
        let m = placement.mismatches(|_| Some(node));
        expect_no_mismatches(&format!("replica on node {node}"), placement.pages().len(), &m)?;
    }
    Ok(())
}

/// A thread pinned on `node` reads (slice and `get`) from the replica on
/// `from`, at an address the kernel puts on `from`, and sees `want`. Pinned
/// before its first read (the home node found on first ask), then pinned
/// after a read elsewhere and told through `home::refresh_home_node`.
fn readers_see_their_replica(a: &Array<u64>, node: usize, from: usize, want: u64) -> Check {
    let replica = a.replica(from).ok_or(format!("no replica on node {from}"))?.as_ptr() as usize;
    for via_home in [false, true] {
        std::thread::scope(|sc| {
            sc.spawn(|| -> Check {
                if via_home {
                    let _ = home::home_node();
                    pin::pin_to_node(node).map_err(|e| e.to_string())?;
                    home::refresh_home_node();
                } else {
                    pin::pin_to_node(node).map_err(|e| e.to_string())?;
                }
                let seen = a.as_slice();
                let addr = seen.as_ptr() as usize;
                if addr != replica {
                    return Err(format!(
                        "a thread on node {node} reads {addr:#x}, not the replica on node {from} ({replica:#x})"
                    ));
                }
                let page = Placement::query(seen[LEN / 2..].as_ptr().cast(), 8, 4096).map_err(|e| e.to_string())?;
                if page.pages()[0] != PageLocation::Node(from) {
                    return Err(format!(
                        "a thread on node {node} reads a page that is on {:?} (home node {})",
                        page.pages()[0],
                        home::home_node()
                    ));
                }
                match (a.get(LEN / 2), seen[1]) {
                    (Some(g), s) if g == want && s == want => Ok(()),
                    other => Err(format!("a thread on node {node} read {other:?}, want {want}")),
                }
            })
            .join()
            .unwrap_or_else(|_| Err("the reader thread panicked".into()))
        })?;
    }
    Ok(())
}

/// Each node's available memory, for failure messages.
fn available(nodes: &[usize]) -> String {
    nodes
        .iter()
        .map(|&n| match skelaff_numa_alloc::node_memory::node_memory(n) {
            Ok(m) => format!("node {n}: {} MiB free, {} MiB available", m.free >> 20, m.available() >> 20),
            Err(e) => format!("node {n}: {e}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
