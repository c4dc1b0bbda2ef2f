//! Worklist placement checks for the emulated NUMA machine
//! (`cargo xtask numa-vm`), with `NumaAlloc` as the global allocator: under
//! SkelAff (`PagePolicy::Auto`) the memory a worker allocates while
//! processing a generated unit (the bind phase) is on that worker's node,
//! and still there when the worker ends; under `Bind` every allocation is;
//! under `Interleave` a worker's allocations are spread over all nodes.

use std::process::ExitCode;

use parking_lot::Mutex;
use skelaff_numa_alloc::alloc::NumaAlloc;
use skelaff_numa_alloc::{Placement, Topology, pin};
use skelaff_stm::{TxError, TxOps};
use skelaff_testkit::{GuestSpec, Suite, expect_no_mismatches};
use skelaff_worklist::{Ctx, PagePolicy, Skeleton, WorkerInfo, Worklist};

#[global_allocator]
static ALLOC: NumaAlloc = NumaAlloc::new();

/// Bytes each generated unit allocates (a plain `Vec`).
const BYTES: usize = 256 << 10;

/// Seeds (depth 0) each generate 4 units (depth 1); depth-1 units allocate
/// and fill a buffer, kept until the worker ends.
struct Allocating;

#[derive(Default)]
struct Found {
    /// (worker node, the node the worker ran on, placement when written,
    /// placement when the worker ended)
    buffers: Mutex<Vec<(usize, usize, Placement, Placement)>>,
}

/// The whole pages of a buffer.
fn pages_of(b: &[u8]) -> Placement {
    let start = (b.as_ptr() as usize).next_multiple_of(4096);
    let end = (b.as_ptr() as usize + b.len()) & !4095;
    Placement::query(start as *const u8, end - start, 4096).expect("move_pages")
}

impl Skeleton for Allocating {
    type Unit = u32;
    type Shared = Found;
    type Local = (Option<usize>, Vec<(Vec<u8>, Placement)>);

    fn init_worker(&self, _: &Found, w: &WorkerInfo) -> Self::Local {
        (w.node, Vec::new())
    }

    fn process<X: TxOps>(
        &self,
        _: &mut X,
        &depth: &u32,
        local: &mut Self::Local,
        _: &Found,
        ctx: &mut Ctx<u32>,
    ) -> Result<(), TxError> {
        if depth == 0 {
            for _ in 0..4 {
                ctx.add_work_unit(1);
            }
        } else {
            let v = vec![depth as u8; BYTES];
            let p = pages_of(&v);
            local.1.push((v, p));
        }
        Ok(())
    }

    fn destroy_worker(&self, (node, bufs): Self::Local, found: &Found) {
        let node = node.expect("workers are pinned");
        let ran_on = pin::current_node().unwrap_or(usize::MAX);
        let mut out = found.buffers.lock();
        for (v, written) in bufs {
            let now = pages_of(&v);
            out.push((node, ran_on, written, now));
        }
    }
}

fn run(policy: PagePolicy, threads: usize) -> Result<Vec<(usize, usize, Placement, Placement)>, String> {
    let found = Found::default();
    let mut wl =
        Worklist::builder().threads(threads).policy(policy).build(&Allocating, &found).map_err(|e| e.to_string())?;
    wl.add_work_units(std::iter::repeat_n(0, 4 * threads));
    let report = wl.run().map_err(|e| e.to_string())?;
    let mut worker_nodes: Vec<Option<usize>> = report.workers.iter().map(|w| w.node).collect();
    worker_nodes.sort_unstable();
    if worker_nodes != (0..threads).map(Some).collect::<Vec<_>>() {
        return Err(format!("scatter should put one worker on each node with CPUs: {worker_nodes:?}"));
    }
    if !report.numa_alloc_global {
        return Err("the report says NumaAlloc is not the global allocator".to_owned());
    }
    if policy == PagePolicy::Auto && !report.decisions.iter().any(|d| d.what.contains("switching every worker to bind"))
    {
        return Err(format!("no switch to bind recorded: {:?}", report.decisions));
    }
    Ok(found.buffers.into_inner())
}

fn main() -> ExitCode {
    let Some(spec) = GuestSpec::from_cmdline() else {
        eprintln!("numa_vm_worklist: not inside the emulated machine; run `cargo xtask numa-vm`");
        return ExitCode::FAILURE;
    };
    if let Err(e) = Topology::get() {
        eprintln!("numa_vm_worklist: {e}");
        return ExitCode::FAILURE;
    }
    let threads = spec.nodes;
    let mut s = Suite::new(&format!("worklist placement on {spec}"));
    for policy in [PagePolicy::Auto, PagePolicy::Bind] {
        s.check(&format!("{policy}: generated units allocate on their worker's node"), || {
            let bufs = run(policy, threads)?;
            if bufs.len() != 16 * threads {
                return Err(format!("{} buffers, want {}", bufs.len(), 16 * threads));
            }
            for (node, ran_on, written, now) in &bufs {
                if ran_on != node {
                    return Err(format!("a worker of node {node} ran on node {ran_on}"));
                }
                let what = format!("buffer of a worker on node {node}");
                expect_no_mismatches(&what, written.pages().len(), &written.mismatches(|_| Some(*node)))?;
                let end = format!("{what}, when the worker ended");
                expect_no_mismatches(&end, now.pages().len(), &now.mismatches(|_| Some(*node)))?;
            }
            Ok(())
        });
    }
    s.check("interleave: a worker's allocations spread over every node", || {
        let bufs = run(PagePolicy::Interleave, threads)?;
        for (node, _, p, _) in &bufs {
            let counts: Vec<usize> = (0..spec.total_nodes()).map(|n| p.count_on(n)).collect();
            let (lo, hi) = (counts.iter().min().copied().unwrap_or(0), counts.iter().max().copied().unwrap_or(0));
            if lo == 0 || hi - lo > 1 {
                return Err(format!("buffer of a worker on node {node}: pages per node {counts:?}"));
            }
        }
        Ok(())
    });
    s.finish()
}
