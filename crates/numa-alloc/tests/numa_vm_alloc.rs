//! Placement checks of `NumaAlloc` in the emulated NUMA machine (`cargo
//! xtask numa-vm`), with `NumaAlloc` as this binary's global allocator.
//!
//! Every check allocates through ordinary `Box`es and `Vec`s on a pinned
//! thread under some policy, touches the memory, and asks the kernel
//! (`move_pages`) where each page went.

use std::collections::BTreeSet;
use std::process::ExitCode;

use skelaff_numa_alloc::alloc::{self, Binding, NumaAlloc};
use skelaff_numa_alloc::{NodeSet, PageLocation, Placement, Policy, Topology, pin};
use skelaff_testkit::{GuestSpec, Suite, expect_no_mismatches};

#[global_allocator]
static GLOBAL: NumaAlloc = NumaAlloc::new();

type Check = Result<(), String>;

fn main() -> ExitCode {
    let Some(spec) = GuestSpec::from_cmdline() else {
        eprintln!(
            "numa_vm_alloc: not inside the emulated machine (no skelaff.topology= on the kernel command line); run `cargo xtask numa-vm`"
        );
        return ExitCode::FAILURE;
    };
    let topo = match Topology::get() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("numa_vm_alloc: {e}");
            return ExitCode::FAILURE;
        }
    };
    let all = topo.node_set();
    let cpu_nodes: Vec<usize> = topo.nodes_with_cpus().iter().collect();
    let ps = topo.page_size();
    let mut s = Suite::new(&format!("NumaAlloc placement on {spec}"));

    s.check("NumaAlloc is the global allocator", || {
        if NumaAlloc::is_global() { Ok(()) } else { Err("a fresh Box did not come from NumaAlloc".into()) }
    });

    // The last node with CPUs (node 1 on 2x2 and 2x1+1).
    let home = *cpu_nodes.last().unwrap_or(&0);
    let other = cpu_nodes[0];

    s.check(&format!("a thread on node {home} under bind gets small, medium and large blocks there"), || {
        on_node(home, move || {
            alloc::set_thread_policy(bind(home)).map_err(|e| e.to_string())?;
            let blocks = Blocks::make(3000);
            blocks.expect_all_on(home, ps, "under bind")?;
            let st = alloc::stats();
            if st.node(home).is_none_or(|n| n.chunks == 0) {
                return Err(format!("statistics show no chunk on node {home}: {st:?}"));
            }
            // Switch: new blocks follow the new policy, old ones stay.
            alloc::set_thread_policy(bind(other)).map_err(|e| e.to_string())?;
            let after = Blocks::make(3000);
            after.expect_all_on(other, ps, &format!("after switching to bind:{other}"))?;
            blocks.expect_all_on(home, ps, "blocks allocated before the switch")?;
            Ok(())
        })
    });

    s.check("a first-touch thread gets its blocks on its own node", || {
        for &node in &cpu_nodes {
            on_node(node, move || Blocks::make(2000).expect_all_on(node, ps, "first-touch"))?;
        }
        Ok(())
    });

    s.check("interleave spreads a thread's chunks page by page", || {
        on_node(other, move || {
            alloc::set_thread_policy(Policy::Interleave(all)).map_err(|e| e.to_string())?;
            let blocks = Blocks::make(12_000);
            let chunks = blocks.chunks()?;
            for info in &chunks {
                if info.policy != Policy::Interleave(all) || info.binding != Binding::AsPolicy {
                    return Err(format!("chunk {info:?} is not interleaved over {all}"));
                }
                let want = |addr: usize| Some(skelaff_numa_alloc::policy::interleave_node(&all, addr, ps));
                expect_resident_pages(info.start, info.len, ps, "interleaved chunk", want)?;
            }
            let big = vec![1u8; 256 * ps];
            let base = big.as_ptr() as usize;
            expect_resident_pages(base, big.len(), ps, "interleaved large block", |a| {
                Some(skelaff_numa_alloc::policy::interleave_node(&all, a, ps))
            })?;
            expect_spread(&chunks, ps, &all)
        })
    });

    s.check("cyclic deals each chunk's blocks from its start, rotating by chunk", || {
        let nodes: Vec<usize> = all.iter().collect();
        let n = nodes.len();
        let block = 2 * ps;
        on_node(other, move || {
            let policy = Policy::Cyclic { nodes: all, block };
            alloc::set_thread_policy(policy).map_err(|e| e.to_string())?;
            let blocks = Blocks::make(12_000);
            let chunks = blocks.chunks()?;
            for info in &chunks {
                if info.policy != policy || info.binding != Binding::AsPolicy {
                    return Err(format!("chunk {info:?} is not cyclic"));
                }
                let (start, seq) = (info.start, info.seq);
                let want = |addr: usize| Some(nodes[((addr - start) / block + seq as usize) % n]);
                expect_resident_pages(info.start, info.len, ps, &format!("cyclic chunk {seq}"), want)?;
            }
            // A large block deals its blocks from its first byte.
            let big = vec![1u8; 256 * ps];
            let base = big.as_ptr() as usize;
            expect_resident_pages(base, big.len(), ps, "cyclic large block", |a| {
                Some(nodes[((a - base) / block) % n])
            })?;
            expect_spread(&chunks, ps, &all)
        })
    });

    s.check("a memory-only node takes a thread's blocks under bind", || {
        for node in spec.nodes..spec.total_nodes() {
            on_node(other, move || {
                alloc::set_thread_policy(bind(node)).map_err(|e| e.to_string())?;
                Blocks::make(2000).expect_all_on(node, ps, &format!("bind to memory-only node {node}"))
            })?;
        }
        Ok(())
    });

    s.check("no binding fell back", || {
        let st = alloc::stats();
        if st.fallbacks == 0 && st.cyclic_interleaved == 0 && st.node_full == 0 {
            Ok(())
        } else {
            Err(format!(
                "{} fallbacks, {} cyclic chunks interleaved, {} preferred for a full node",
                st.fallbacks, st.cyclic_interleaved, st.node_full
            ))
        }
    });

    s.finish()
}

fn bind(node: usize) -> Policy {
    Policy::Bind(NodeSet::single(node))
}

/// Runs `f` on a fresh thread pinned to `node`.
fn on_node(node: usize, f: impl FnOnce() -> Check + Send + 'static) -> Check {
    std::thread::spawn(move || {
        pin::pin_to_node(node).map_err(|e| format!("pinning to node {node}: {e}"))?;
        // Blocks cached before the move (pinning allocates) came from the
        // node the thread started on.
        alloc::flush_thread_cache();
        f()
    })
    .join()
    .map_err(|_| "thread panicked".to_owned())?
}

/// Small, medium and large blocks, written to.
struct Blocks {
    small: Vec<Box<[u8; 200]>>,
    medium: Vec<Vec<u8>>,
    large: Vec<u8>,
}

impl Blocks {
    fn make(small: usize) -> Blocks {
        Blocks {
            small: (0..small).map(|i| Box::new([i as u8; 200])).collect(),
            medium: (0..4).map(|i| vec![i as u8 + 1; 100_000]).collect(),
            large: vec![7u8; 4 << 20],
        }
    }

    fn ranges(&self) -> Vec<(usize, usize, &'static str)> {
        let mut r: Vec<_> = self.small.iter().map(|b| (b.as_ptr() as usize, b.len(), "small")).collect();
        r.extend(self.medium.iter().map(|v| (v.as_ptr() as usize, v.len(), "medium")));
        r.push((self.large.as_ptr() as usize, self.large.len(), "large"));
        r
    }

    fn expect_all_on(&self, node: usize, ps: usize, what: &str) -> Check {
        for (addr, len, kind) in self.ranges() {
            let first = addr / ps * ps;
            let p = Placement::query(first as *const u8, addr + len - first, ps).map_err(|e| e.to_string())?;
            expect_no_mismatches(
                &format!("{what}: {kind} block at {addr:#x}"),
                p.pages().len(),
                &p.mismatches(|_| Some(node)),
            )?;
        }
        Ok(())
    }

    /// The chunks the small blocks live in.
    fn chunks(&self) -> Result<Vec<alloc::ChunkInfo>, String> {
        let starts: BTreeSet<usize> =
            self.small.iter().map(|b| b.as_ptr() as usize & !(alloc::CHUNK_SIZE - 1)).collect();
        starts
            .into_iter()
            .map(|c| alloc::chunk_info(c as *const u8).ok_or_else(|| format!("{c:#x} is not a NumaAlloc chunk")))
            .collect()
    }
}

/// Every resident page of `[start, start + len)` is on `want(page address)`.
fn expect_resident_pages(
    start: usize,
    len: usize,
    ps: usize,
    what: &str,
    want: impl Fn(usize) -> Option<usize>,
) -> Check {
    let p = Placement::query(start as *const u8, len, ps).map_err(|e| e.to_string())?;
    let resident = p.pages().iter().filter(|l| matches!(l, PageLocation::Node(_))).count();
    if resident == 0 {
        return Err(format!("{what}: no resident page"));
    }
    let bad: Vec<_> = p
        .mismatches(|i| want(start + i * ps))
        .into_iter()
        .filter(|(_, _, got)| !matches!(got, PageLocation::NotResident))
        .collect();
    expect_no_mismatches(what, p.pages().len(), &bad)
}

/// The chunks' resident pages cover every node of `nodes`.
fn expect_spread(chunks: &[alloc::ChunkInfo], ps: usize, nodes: &NodeSet) -> Check {
    let mut seen = NodeSet::new();
    for c in chunks {
        let p = Placement::query(c.start as *const u8, c.len, ps).map_err(|e| e.to_string())?;
        for (node, _) in p.histogram() {
            seen.insert(node);
        }
    }
    if &seen == nodes { Ok(()) } else { Err(format!("pages on nodes {seen}, want {nodes}")) }
}
