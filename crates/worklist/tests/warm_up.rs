//! `Builder::warm_up` readies what a first run would otherwise set up on
//! its clock: with `NumaAlloc` as the global allocator, the workers'
//! arenas hold their first chunk before any run, and the pool then serves
//! runs as usual. Its own binary: it needs `NumaAlloc` global and reads the
//! process's allocator statistics.

use skelaff_numa_alloc::Policy;
use skelaff_numa_alloc::alloc::{self, NumaAlloc};
use skelaff_stm::{TVar, TxError, TxOps};
use skelaff_worklist::{Builder, Decision, PagePolicy, ProcessCtx, Skeleton, WorkerInfo};

#[global_allocator]
static ALLOC: NumaAlloc = NumaAlloc::new();

/// Splits ranges until they are small (units generate units, so SkelAff
/// switches to bind), keeping a small block per unit in the worker's state.
struct Split;

impl Skeleton for Split {
    type Unit = (u64, u64);
    type Shared = TVar<u64>;
    type PerWorker = Vec<Box<[u64; 4]>>;
    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) -> Self::PerWorker {
        Vec::new()
    }
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &(lo, hi): &'t (u64, u64),
        kept: &mut Self::PerWorker,
        count: &'t TVar<u64>,
        ctx: &mut ProcessCtx<(u64, u64)>,
    ) -> Result<(), TxError> {
        kept.push(Box::new([lo, hi, 0, 0]));
        if hi - lo > 8 {
            let mid = (lo + hi) / 2;
            ctx.add_work_unit((lo, mid));
            ctx.add_work_unit((mid, hi));
            return Ok(());
        }
        tx.update(count, |c| c + (hi - lo)).map(|_| ())
    }
}

/// Chunks held by the arenas of the workers' policies (bind, cyclic and
/// interleave): the test's own thread allocates from a first-touch arena,
/// which is left out.
fn worker_chunks() -> usize {
    alloc::stats()
        .arenas
        .iter()
        .filter(|a| matches!(a.policy, Policy::Bind(_) | Policy::Cyclic { .. } | Policy::Interleave(_)))
        .map(|a| a.chunks)
        .sum()
}

fn run(builder: &Builder) -> skelaff_worklist::RunReport {
    let count = TVar::new(0);
    let mut wl = builder.clone().build(&Split, &count).unwrap();
    wl.add_work_units([(0, 4096)]);
    let report = wl.run().unwrap();
    assert_eq!(count.load(), 4096);
    report
}

#[test]
fn warm_up_maps_the_workers_first_chunks_before_any_run() {
    assert!(NumaAlloc::is_global());
    // Nothing has run on a worker yet: no arena of a worker's policy holds
    // a chunk (the test's thread allocates from a first-touch arena).
    assert_eq!(worker_chunks(), 0);
    // One worker: with two, the empty run alone allocates in the workers'
    // arenas (queues), and the check would pass without the warm-up's
    // own blocks.
    let warm = Builder::new().threads(1).policy(PagePolicy::Auto);
    warm.warm_up().unwrap();
    assert!(worker_chunks() >= 1, "warm-up left the workers' arenas without a chunk: {:#?}", alloc::stats().arenas);

    // The pool then serves runs as usual, SkelAff's switch included.
    let report = run(&warm);
    assert!(
        report.decisions.iter().any(|d| d.decision == Decision::WorkersGenerate),
        "SkelAff did not switch to bind: {:?}",
        report.decisions
    );
    // A second warm-up is an empty run on the same pool.
    warm.warm_up().unwrap();
    run(&warm);
}
