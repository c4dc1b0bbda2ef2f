//! `Builder::warm_up` readies what a first run would otherwise set up on
//! its clock: with `NumaAlloc` as the global allocator, the workers'
//! arenas hold their first chunk before any run, and the pool then serves
//! runs as usual. Its own binary: it needs `NumaAlloc` global and reads the
//! process's allocator statistics.

use skelaff_numa_alloc::Policy;
use skelaff_numa_alloc::alloc::{self, NumaAlloc};
use skelaff_stm::TVar;
use skelaff_worklist::{Builder, Decision, PagePolicy};

#[path = "it/pool_common.rs"]
mod pool_common;
use pool_common::Split;

#[global_allocator]
static ALLOC: NumaAlloc = NumaAlloc::new();

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
