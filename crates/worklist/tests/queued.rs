//! Two threads start runs on one pool at once: the second waits behind the
//! first (first come, first served), and its report says how long, apart
//! from its wall time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use skelaff_stm::{TVar, TxError, TxOps};
use skelaff_worklist::{Builder, ProcessCtx, Skeleton, WorkerInfo, WorkerPool};

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

/// Adds its units.
struct Add;

impl Skeleton for Add {
    type Unit = u64;
    type Shared = TVar<u64>;
    type PerWorker = ();
    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        u: &u64,
        _: &mut (),
        t: &'t TVar<u64>,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        tx.update(t, |v| v + u).map(|_| ())
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
