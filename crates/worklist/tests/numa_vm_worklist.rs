//! Worklist placement checks for the emulated NUMA machine
//! (`cargo xtask numa-vm`): under SkelAff (`PagePolicy::Auto`) the memory a
//! worker allocates while processing a generated unit (the bind phase) is
//! on that worker's node; under `Bind` every allocation is; under
//! `Interleave` a worker's allocations are spread over all nodes.

use std::process::ExitCode;

use parking_lot::Mutex;
use skelaff_numa_alloc::testkit::{GuestSpec, Suite, expect_no_mismatches};
use skelaff_numa_alloc::{NumaRegion, Placement, Policy, RegionOptions, Topology, pin};
use skelaff_stm::{TxError, TxOps};
use skelaff_worklist::{Ctx, PagePolicy, Skeleton, WorkerInfo, Worklist};

/// Bytes each generated unit allocates, as a fresh mapping whose pages the
/// worker's policy places when the worker touches them. (glibc's malloc
/// would hand back memory an earlier run already placed, which is why
/// programs use `NumaAlloc`.) The kernel is asked where the pages went right
/// after they are written: memory placed by a thread's policy alone carries
/// no policy of its own, so khugepaged or NUMA balancing may later move it
/// (merged neighbouring mappings collapse onto one node); that is outside
/// what the page policy decides.
const BYTES: usize = 256 << 10;

/// Seeds (depth 0) each generate 4 units (depth 1); depth-1 units allocate
/// and fill a buffer, kept until the worker ends.
struct Allocating;

#[derive(Default)]
struct Found {
    /// (worker node, the node the worker ran on, placement of its buffer)
    buffers: Mutex<Vec<(usize, usize, Placement)>>,
}

impl Skeleton for Allocating {
    type Unit = u32;
    type Shared = Found;
    type Local = (Option<usize>, Vec<Placement>);

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
            let mut r = NumaRegion::new(BYTES, RegionOptions::new(Policy::FirstTouch)).expect("mapping a buffer");
            r.as_mut_slice().fill(depth as u8);
            local.1.push(r.placement().expect("move_pages"));
        }
        Ok(())
    }

    fn destroy_worker(&self, (node, bufs): Self::Local, found: &Found) {
        let node = node.expect("workers are pinned");
        let ran_on = pin::current_node().unwrap_or(usize::MAX);
        let mut out = found.buffers.lock();
        out.extend(bufs.into_iter().map(|p| (node, ran_on, p)));
    }
}

fn run(policy: PagePolicy, threads: usize) -> Result<Vec<(usize, usize, Placement)>, String> {
    let found = Found::default();
    let mut wl =
        Worklist::builder().threads(threads).policy(policy).build(&Allocating, &found).map_err(|e| e.to_string())?;
    wl.add_work_units(std::iter::repeat_n(0, 4 * threads));
    let report = wl.run().map_err(|e| e.to_string())?;
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
            let mut nodes_seen = vec![0usize; spec.total_nodes()];
            for (node, ran_on, p) in &bufs {
                if ran_on != node {
                    return Err(format!("a worker of node {node} ran on node {ran_on}"));
                }
                nodes_seen[*node] += 1;
                expect_no_mismatches(
                    &format!("buffer of a worker on node {node}"),
                    p.pages().len(),
                    &p.mismatches(|_| Some(*node)),
                )?;
            }
            if nodes_seen[..spec.nodes].iter().any(|&c| c == 0) {
                return Err(format!("scatter left a node without a worker: {nodes_seen:?}"));
            }
            Ok(())
        });
    }
    s.check("interleave: a worker's allocations spread over every node", || {
        let bufs = run(PagePolicy::Interleave, threads)?;
        for (node, _, p) in &bufs {
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
