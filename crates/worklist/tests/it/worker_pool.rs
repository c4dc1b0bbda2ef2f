//! A worker pool that outlives runs: many runs of different skeletons on
//! one pool from several threads at once, a panicking run followed by good
//! ones, drop while idle and right after a run, borrowed data never
//! touched after a run returns, errors at build time, awaited runs, and a
//! run given while the pool is busy, whose wait is reported as queued.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use crate::pool_common;

use pool_common::{Add, Split};
use skelaff_numa_alloc::Topology;
use skelaff_stm::{TVar, TxError, TxOps};
use skelaff_worklist::{
    Builder, Error, PagePolicy, ProcessCtx, Skeleton, ThreadLayout, ThreadMapping, ThreadPlace, ThreadPlacement,
    WorkerInfo, WorkerPool,
};

/// Panics on unit 13.
struct Boom;

impl Skeleton for Boom {
    type Unit = u64;
    type Shared = ();
    type PerWorker = ();
    fn init_worker(&self, _: &(), _: &WorkerInfo) {}
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        _: &mut X,
        u: &u64,
        _: &mut (),
        _: &'t (),
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        assert!(*u != 13, "unit 13 is unlucky");
        Ok(())
    }
}

fn add_run(builder: &Builder, pool: &WorkerPool, n: u64) -> u64 {
    let total = TVar::new(0);
    let mut wl = builder.clone().build(&Add, &total).unwrap();
    wl.add_work_units(1..=n);
    let r = wl.run_on(pool).unwrap();
    assert_eq!(r.units, n);
    total.load()
}

fn split_run(builder: &Builder, pool: &WorkerPool, n: u64) -> u64 {
    let count = TVar::new(0);
    let mut wl = builder.clone().policy(PagePolicy::Auto).build(&Split, &count).unwrap();
    wl.add_work_unit((0, n));
    let r = wl.run_on(pool).unwrap();
    assert!(r.units > 1);
    count.load()
}

#[test]
fn many_runs_of_different_skeletons_from_several_threads_share_one_pool() {
    for threads in [1, 2] {
        let builder = Builder::new().threads(threads);
        let pool = WorkerPool::new(&builder).unwrap();
        std::thread::scope(|s| {
            for caller in 0..4u64 {
                let (builder, pool) = (&builder, &pool);
                s.spawn(move || {
                    for round in 0..25u64 {
                        let n = 1 + (caller * 31 + round * 7) % 200;
                        assert_eq!(add_run(builder, pool, n), n * (n + 1) / 2, "caller {caller} round {round}");
                        assert_eq!(split_run(builder, pool, 100 + n), 100 + n);
                        // A run that panics, in between, fails alone.
                        if round % 10 == 3 {
                            let mut wl = builder.clone().build(&Boom, &()).unwrap();
                            wl.add_work_units(0..40);
                            assert!(matches!(wl.run_on(pool), Err(Error::Panicked { .. })));
                        }
                    }
                });
            }
        });
    }
}

#[test]
fn a_panicking_run_leaves_the_pool_serving_good_runs() {
    let builder = Builder::new().threads(2);
    let pool = WorkerPool::new(&builder).unwrap();
    for _ in 0..3 {
        let mut wl = builder.clone().build(&Boom, &()).unwrap();
        wl.add_work_units(0..100);
        match wl.run_on(&pool) {
            Err(Error::Panicked { message, .. }) => assert!(message.contains("unlucky"), "{message}"),
            other => panic!("expected the panic, got {other:?}"),
        }
        assert_eq!(add_run(&builder, &pool, 50), 1275);
    }
}

#[test]
fn dropping_the_pool_while_idle_and_right_after_a_run_joins_its_threads() {
    let builder = Builder::new().threads(2);
    drop(WorkerPool::new(&builder).unwrap());
    for _ in 0..20 {
        let pool = WorkerPool::new(&builder).unwrap();
        assert_eq!(add_run(&builder, &pool, 10), 55);
        drop(pool);
    }
}

/// Each worker's `destroy_worker` (its last touch of the borrowed data)
/// sleeps, then writes to the shared data: a run that returned before
/// every worker was done would leave the count short, and let the data be
/// freed under a worker.
struct SlowGoodbye;

impl Skeleton for SlowGoodbye {
    type Unit = u64;
    type Shared = AtomicU64;
    type PerWorker = ();
    fn init_worker(&self, _: &AtomicU64, _: &WorkerInfo) {}
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        _: &mut X,
        _: &u64,
        _: &mut (),
        _: &'t AtomicU64,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        Ok(())
    }
    fn destroy_worker(&self, _: (), goodbyes: &AtomicU64) {
        std::thread::sleep(Duration::from_millis(20));
        goodbyes.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_run_returns_only_after_every_worker_is_done_with_the_borrowed_data() {
    let builder = Builder::new().threads(2);
    let pool = WorkerPool::new(&builder).unwrap();
    for _ in 0..5 {
        // Boxed so that a worker touching it after `run_on` returned would
        // touch freed memory (under a sanitizer), not just a stale count.
        let goodbyes = Box::new(AtomicU64::new(0));
        let mut wl = builder.clone().build(&SlowGoodbye, &*goodbyes).unwrap();
        wl.add_work_units(0..4);
        wl.run_on(&pool).unwrap();
        assert_eq!(goodbyes.load(Ordering::SeqCst), 2, "the run returned before its workers were done");
        drop(wl);
        drop(goodbyes);
    }
    // And through the process-wide pool.
    let goodbyes = AtomicU64::new(0);
    let mut wl = builder.build(&SlowGoodbye, &goodbyes).unwrap();
    wl.add_work_units(0..4);
    wl.run().unwrap();
    assert_eq!(goodbyes.load(Ordering::SeqCst), 2);
}

/// A placement that names a CPU no process has.
#[derive(Debug)]
struct NoSuchCpu;

impl ThreadPlacement for NoSuchCpu {
    fn name(&self) -> String {
        "no-such-cpu".into()
    }
    fn place(&self, _: &Topology, workers: usize) -> Result<ThreadLayout, skelaff_numa_alloc::Error> {
        let place = ThreadPlace { cpu: Some(100_000), node: None, helper: None };
        Ok(ThreadLayout { workers: vec![place; workers], oversubscribed: false })
    }
}

#[test]
fn a_worker_that_cannot_be_pinned_or_a_wrong_size_is_an_error_not_a_hang() {
    let e = WorkerPool::new(&Builder::new().threads(2).placement(NoSuchCpu)).unwrap_err();
    assert!(matches!(e, Error::Numa(_)), "{e}");
    // The same through `run`: the error comes from building the pool.
    let total = TVar::new(0);
    let mut wl = Builder::new().threads(2).placement(NoSuchCpu).build(&Add, &total).unwrap();
    wl.add_work_unit(1);
    assert!(matches!(wl.run(), Err(Error::Numa(_))));
    assert!(matches!(WorkerPool::new(&Builder::new().threads(0)), Err(Error::ZeroThreads)));
    let pool = WorkerPool::new(&Builder::new().threads(1)).unwrap();
    let mut wl = Builder::new().threads(2).build(&Add, &total).unwrap();
    let e = wl.run_on(&pool).unwrap_err();
    assert!(matches!(e, Error::PoolMismatch { pool: 1, asked: 2 }), "{e}");
}

/// Runs a nested worklist from inside its `init_worker`: on `pool` when
/// given, else with `run`.
struct Nesting {
    builder: Builder,
    pool: Option<Arc<WorkerPool>>,
}

impl Skeleton for Nesting {
    type Unit = u64;
    type Shared = parking_lot::Mutex<Vec<String>>;
    type PerWorker = ();
    fn init_worker(&self, seen: &Self::Shared, _: &WorkerInfo) {
        let total = TVar::new(0);
        let mut wl = self.builder.clone().build(&Add, &total).unwrap();
        wl.add_work_units(1..=10);
        let outcome = match &self.pool {
            Some(pool) => wl.run_on(pool).map(|r| r.units).map_err(|e| e.to_string()),
            None => wl.run().map(|r| r.units).map_err(|e| e.to_string()),
        };
        seen.lock().push(format!("{outcome:?} {}", total.load()));
    }
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        _: &mut X,
        _: &u64,
        _: &mut (),
        _: &'t Self::Shared,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        Ok(())
    }
}

#[test]
fn a_nested_run_on_the_same_pool_is_refused_and_run_gets_fresh_threads() {
    let builder = Builder::new().threads(1).mapping(ThreadMapping::None);
    let pool = Arc::new(WorkerPool::new(&builder).unwrap());
    let seen = parking_lot::Mutex::new(Vec::new());
    let skel = Nesting { builder: builder.clone(), pool: Some(pool.clone()) };
    let mut wl = builder.clone().build(&skel, &seen).unwrap();
    wl.add_work_unit(0);
    wl.run_on(&pool).unwrap();
    // Both on the process-wide pool of the layout: the inner `run` takes
    // fresh threads rather than waiting for itself.
    let skel = Nesting { builder: builder.clone(), pool: None };
    let mut wl = builder.build(&skel, &seen).unwrap();
    wl.add_work_unit(0);
    wl.run().unwrap();
    let seen = seen.into_inner();
    assert_eq!(seen.len(), 2);
    assert!(seen[0].starts_with("Err(\"a run given to the worker pool from one of its own threads"), "{seen:?}");
    assert_eq!(seen[1], "Ok(10) 55");
}

#[test]
fn per_run_threads_still_work() {
    let total = TVar::new(0);
    for _ in 0..3 {
        let mut wl = Builder::new().threads(2).per_run_threads(true).build(&Add, &total).unwrap();
        wl.add_work_units(1..=10);
        assert_eq!(wl.run().unwrap().units, 10);
    }
    assert_eq!(total.load(), 165);
}

struct Flag(AtomicBool, std::thread::Thread);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
        self.1.unpark();
    }
}

#[test]
fn an_awaited_run_is_completed_through_the_waker_and_queues_with_others() {
    let builder = Builder::new().threads(2);
    let pool = WorkerPool::new(&builder).unwrap();
    let total = Arc::new(TVar::new(0));
    // Three futures at once: they queue on the pool and each completes.
    let mut futures: Vec<_> = (0..3)
        .map(|_| {
            let mut wl = builder.clone().build_owned(Arc::new(Add), total.clone()).unwrap();
            wl.add_work_units(1..=100);
            Box::pin(wl.submit(&pool).unwrap())
        })
        .collect();
    // A synchronous run in between queues behind them.
    assert_eq!(add_run(&builder, &pool, 10), 55);
    for f in &mut futures {
        let flag = Arc::new(Flag(AtomicBool::new(false), std::thread::current()));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let report = loop {
            match f.as_mut().poll(&mut cx) {
                Poll::Ready(r) => break r.unwrap(),
                Poll::Pending => {
                    while !flag.0.swap(false, Ordering::SeqCst) {
                        std::thread::park_timeout(Duration::from_millis(100));
                    }
                }
            }
        };
        assert_eq!(report.units, 100);
    }
    assert_eq!(total.load(), 3 * 5050);
    // A future dropped unpolled: its run still happens, and the pool's
    // drop waits for it.
    let mut wl = builder.clone().build_owned(Arc::new(Add), total.clone()).unwrap();
    wl.add_work_units(1..=100);
    drop(wl.submit(&pool).unwrap());
    drop(pool);
    assert_eq!(total.load(), 4 * 5050);
}

/// One unit that says it started, then holds its worker until released.
struct Blocker {
    started: AtomicBool,
    release: AtomicBool,
}

impl Skeleton for Blocker {
    type Unit = u32;
    type Shared = ();
    type PerWorker = ();
    fn init_worker(&self, _: &(), _: &WorkerInfo) {}
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        _: &mut X,
        _: &u32,
        _: &mut (),
        _: &'t (),
        _: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        self.started.store(true, Ordering::Release);
        while !self.release.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        Ok(())
    }
}

/// How long the first run holds the pool after the second was given to it.
const HELD: Duration = Duration::from_millis(200);

#[test]
fn a_run_given_while_the_pool_is_busy_reports_its_wait_as_queued_not_wall() {
    let builder = Builder::new().threads(1);
    let pool = WorkerPool::new(&builder).unwrap();
    let blocker = Blocker { started: AtomicBool::new(false), release: AtomicBool::new(false) };
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            let mut wl = builder.clone().build(&blocker, &()).unwrap();
            wl.add_work_unit(0);
            wl.run_on(&pool).unwrap()
        });
        while !blocker.started.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        // The pool's one worker is busy: this run queues behind the first.
        let second = s.spawn(|| {
            let total = TVar::new(0);
            let mut wl = builder.clone().build(&Add, &total).unwrap();
            wl.add_work_units(1..=10);
            let given = Instant::now();
            let report = wl.run_on(&pool).unwrap();
            assert_eq!(total.load(), 55);
            (report, given.elapsed())
        });
        std::thread::sleep(HELD);
        blocker.release.store(true, Ordering::Release);
        let first = first.join().unwrap();
        let (second, second_total) = second.join().unwrap();
        // The second run could not start before the release: it waited at
        // least most of `HELD` (the rest is the time its thread took to
        // give it to the pool), and within its own call's time.
        assert!(second.queued >= HELD / 2, "second run queued {:?}, held {HELD:?}", second.queued);
        assert!(second.queued <= second_total, "queued {:?} > the call's {second_total:?}", second.queued);
        // Its wall time is its own ten units, not the wait.
        assert!(second.wall < second.queued, "wall {:?} counts the wait {:?}", second.wall, second.queued);
        // The first run found the pool idle; its wall time holds the hold.
        assert!(first.queued < second.queued, "first {:?}, second {:?}", first.queued, second.queued);
        assert!(first.wall >= HELD, "first run's wall {:?}", first.wall);
        let j = serde_json::to_value(&second).unwrap();
        assert_eq!(j["queued_seconds"].as_f64(), Some(second.queued.as_secs_f64()));
    });
}

/// In a run that meddles, each worker sets its thread's kernel policy to
/// the default from its `init_worker`, as code in a unit may; in the other
/// runs, each worker counts whether the run's own policy (interleave over
/// every node, or bind to the worker's node) is in force on its thread
/// when its `init_worker` starts.
struct Meddle {
    meddle: bool,
    bind: bool,
}

impl Skeleton for Meddle {
    type Unit = u64;
    type Shared = AtomicU64;
    type PerWorker = ();
    fn init_worker(&self, in_force: &AtomicU64, info: &WorkerInfo) {
        let topo = Topology::get().unwrap();
        let expected = if self.bind {
            // The worker's node, or (unpinned) the one it runs on, as the pool binds.
            let node = info.node.or_else(|| skelaff_numa_alloc::pin::current_node().ok()).unwrap_or(0);
            skelaff_numa_alloc::Policy::Bind(skelaff_numa_alloc::NodeSet::single(node))
        } else {
            skelaff_numa_alloc::Policy::Interleave(topo.allowed_nodes())
        };
        if self.meddle {
            skelaff_numa_alloc::Policy::FirstTouch.set_for_thread(topo).unwrap();
        } else if expected.is_thread_policy().unwrap() {
            in_force.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        _: &mut X,
        _: &u64,
        _: &mut (),
        _: &'t AtomicU64,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        Ok(())
    }
}

#[test]
fn a_run_finds_its_page_policy_in_force_though_the_last_run_changed_it() {
    // A pool's thread keeps its last run's policy, and a run with the same
    // one reads the kernel's back instead of setting it again: a policy
    // changed by the last run's code must be caught and set again, and a
    // run with another policy must not find the last one's.
    let interleave = Builder::new().threads(2).policy(PagePolicy::Interleave);
    let bind = interleave.clone().policy(PagePolicy::Bind);
    let pool = WorkerPool::new(&interleave).unwrap();
    let run = |meddle: bool, bind_run: bool| {
        let (skeleton, in_force) = (Meddle { meddle, bind: bind_run }, AtomicU64::new(0));
        let builder = if bind_run { &bind } else { &interleave };
        let mut wl = builder.clone().build(&skeleton, &in_force).unwrap();
        wl.add_work_units(0..4);
        wl.run_on(&pool).unwrap();
        in_force.into_inner()
    };
    assert_eq!(run(false, false), 2, "the first run's policy is in force on both workers");
    assert_eq!(run(false, false), 2, "a second run with the same policy finds it in force");
    run(true, false);
    assert_eq!(run(false, false), 2, "after a run whose code changed it, the policy is set again");
    assert_eq!(run(false, true), 2, "a run with another policy has its own");
    assert_eq!(run(false, false), 2, "and the next run its own again");
}
