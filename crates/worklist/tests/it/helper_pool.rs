//! A worker pool's helper threads: made once (on the first run that
//! places a helper), parked between runs and serving every later run's
//! helper bodies; a helper body that panics is noted and the next run
//! works; a helper thread that cannot be born on its CPU is noted in every
//! run that places it; the nested-run path still gets helpers.
//! (`helper_pool_threads.rs` counts the process's threads.)

use crate::pool_common;

use std::collections::HashSet;
use std::sync::Arc;

use pool_common::{Add, Counting, Helped, add_with_helpers};
use skelaff_stm::{TVar, TxError, TxOps};
use skelaff_worklist::{Builder, Decision, Helpers, ProcessCtx, RunReport, Skeleton, WorkerInfo, WorkerPool};

fn decisions(r: &RunReport) -> Vec<&Decision> {
    r.decisions.iter().map(|d| &d.decision).collect()
}

#[test]
fn many_runs_with_helpers_reuse_the_pools_helper_threads() {
    for threads in [1, 2] {
        let builder = Builder::new().threads(threads).placement(Helped { cpu: None }).helpers(Helpers::On);
        let pool = WorkerPool::new(&builder).unwrap();
        // Made by the first run that places a helper, not by `new`.
        assert_eq!(pool.helper_threads(), 0);
        let assist = Counting::default();
        for round in 0..100u64 {
            let n = 50 + round % 7;
            let (sum, report) = add_with_helpers(&builder, &pool, &assist, n);
            assert_eq!(sum, n * (n + 1) / 2, "round {round}");
            assert_eq!(report.units, n);
            // Every helper ran beside its worker, with this run's figures.
            assert_eq!(report.helpers.per_helper.len(), threads, "round {round}: {:?}", report.helpers);
            let handed: u64 = report.helpers.per_helper.iter().map(|h| h.units_handed).sum();
            assert!(handed > 0 && handed <= n, "round {round}: {handed} of {n} handed");
            let placed = decisions(&report).iter().filter(|d| matches!(d, Decision::HelperPlaced { .. })).count();
            assert_eq!(placed, threads, "round {round}: {:?}", report.decisions);
            assert_eq!(pool.helper_threads(), threads);
        }
        // Every body ran on the pool's own helper threads: one per worker,
        // the same threads in every run.
        let ran = assist.threads.lock().clone();
        assert_eq!(ran.len(), threads, "helper bodies ran on {} threads: {ran:?}", ran.len());
        let names: HashSet<_> = assist.names.lock().clone();
        let expected: HashSet<_> = (0..threads).map(|i| format!("skelaff-helper-{i}")).collect();
        assert_eq!(names, expected);
        assert_eq!(assist.bodies.load(std::sync::atomic::Ordering::SeqCst), 100 * threads as u64);
        // A run without helpers on the same pool wakes none of them.
        let total = TVar::new(0);
        let mut wl = builder.clone().helpers(Helpers::Off).build(&Add, &total).unwrap();
        wl.add_work_units(1..=10);
        wl.run_with_on(&pool, &assist).unwrap();
        assert_eq!(total.load(), 55);
        assert_eq!(assist.bodies.load(std::sync::atomic::Ordering::SeqCst), 100 * threads as u64);
    }
}

#[test]
fn a_helper_that_panics_is_noted_and_the_next_run_works() {
    let builder = Builder::new().threads(2).placement(Helped { cpu: None }).helpers(Helpers::On);
    let pool = WorkerPool::new(&builder).unwrap();
    for round in 0..6u64 {
        let assist = Counting { panic_in_helper: round % 2 == 0, ..Counting::default() };
        let (sum, report) = add_with_helpers(&builder, &pool, &assist, 40);
        assert_eq!(sum, 820, "round {round}: the workers' results do not depend on the helpers");
        let panicked: Vec<_> = report
            .decisions
            .iter()
            .filter_map(|d| match &d.decision {
                Decision::HelperPanicked { message } => Some((d.worker, message.clone())),
                _ => None,
            })
            .collect();
        if assist.panic_in_helper {
            assert_eq!(panicked.len(), 2, "round {round}: {:?}", report.decisions);
            for (worker, message) in panicked {
                assert!(worker.is_some() && message.contains("helper fails on purpose"), "{message}");
            }
        } else {
            assert!(panicked.is_empty(), "round {round}: a panic leaked into the next run: {panicked:?}");
            assert_eq!(report.helpers.per_helper.len(), 2);
        }
        assert_eq!(pool.helper_threads(), 2, "a panic cost the pool a helper thread");
    }
}

#[test]
fn a_helper_that_cannot_be_pinned_is_noted_in_every_run_that_places_it() {
    let builder = Builder::new().threads(1).placement(Helped { cpu: Some(100_000) }).helpers(Helpers::On);
    let pool = WorkerPool::new(&builder).unwrap();
    let assist = Counting::default();
    for round in 0..3 {
        let (sum, report) = add_with_helpers(&builder, &pool, &assist, 30);
        assert_eq!(sum, 465);
        let noted = report
            .decisions
            .iter()
            .filter(|d| matches!(d.decision, Decision::HelperNotPinned { cpu: 100_000, .. }))
            .count();
        assert_eq!(noted, 1, "round {round}: {:?}", report.decisions);
        // It runs unpinned all the same.
        assert_eq!(report.helpers.per_helper.len(), 1);
    }
    assert_eq!(pool.helper_threads(), 1);
    assert_eq!(assist.threads.lock().len(), 1);
    // A run with helpers off places none, and notes nothing about them.
    let total = TVar::new(0);
    let mut wl = builder.clone().helpers(Helpers::Off).build(&Add, &total).unwrap();
    wl.add_work_units(1..=3);
    let report = wl.run_with_on(&pool, &assist).unwrap();
    assert!(!decisions(&report).iter().any(|d| matches!(d, Decision::HelperNotPinned { .. })));
}

/// Runs a worklist with helpers from inside its `init_worker`, through
/// `run_with` (on a pool thread: fresh per-run threads).
struct NestingWithHelpers {
    builder: Builder,
    inner: Arc<parking_lot::Mutex<Vec<(u64, usize, u64)>>>,
}

impl Skeleton for NestingWithHelpers {
    type Unit = u64;
    type Shared = ();
    type PerWorker = ();
    fn init_worker(&self, _: &(), _: &WorkerInfo) {
        let assist = Counting::default();
        let total = TVar::new(0);
        let mut wl = self.builder.clone().build(&Add, &total).unwrap();
        wl.add_work_units(1..=20);
        let r = wl.run_with(&assist).unwrap();
        let bodies = assist.bodies.load(std::sync::atomic::Ordering::SeqCst);
        self.inner.lock().push((total.load(), r.helpers.per_helper.len(), bodies));
    }
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        _: &mut X,
        _: &u64,
        _: &mut (),
        _: &'t (),
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        Ok(())
    }
}

#[test]
fn a_nested_run_with_helpers_on_a_pool_thread_gets_its_own_threads() {
    let builder = Builder::new().threads(1).placement(Helped { cpu: None }).helpers(Helpers::On);
    let outer = NestingWithHelpers { builder: builder.clone(), inner: Arc::default() };
    for _ in 0..2 {
        let mut wl = builder.clone().build(&outer, &()).unwrap();
        wl.add_work_units(0..3);
        // Through `run` (the process-wide pool) and a nested `run_with`
        // from its worker: that one would wait for itself on the same pool.
        wl.run().unwrap();
    }
    // Its helper body ran, once per nested run.
    assert_eq!(*outer.inner.lock(), vec![(210, 1, 1), (210, 1, 1)]);
}
