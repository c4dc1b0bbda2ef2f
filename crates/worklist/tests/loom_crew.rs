//! Loom models of the worker pool's hand-off (src/crew.rs): parked threads
//! handed runs back to back, runs queued by two callers at once, and
//! shutdown; and the asynchronous path's wake-up (`Worklist::submit`'s
//! `RunFuture` polls its run's ticket with `Ticket::poll_done`).
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p skelaff-worklist --release --test loom_crew
//! ```
//!
//! Each job writes, for its thread, a cell on the caller's stack through
//! loom's `UnsafeCell`, and the caller reads it after `run_scoped`
//! returns: loom reports the read as a race unless every thread's write
//! happens before `run_scoped` returns — the guarantee that lets a run
//! borrow the caller's data. The caller also checks that each thread
//! called each job exactly once.
//!
//! The asynchronous models drive `poll_done` as an executor does, blocking
//! on `Pending` until the task's waker is woken: a poll that
//! registers its waker after the last thread has completed the run (and
//! looked for a waker) would block for good, and loom reports the
//! deadlock.
//!
//! A run with helpers gives its workers' job to the workers' crew and,
//! from within that `run_scoped`, its helpers' job to the helpers' crew
//! (`helper_run.rs`), holding the pool's order lock from before the first
//! submission until after the second: the last model checks that two such
//! runs at once reach both crews in the same order, and that a helper job
//! that waits for its own run's workers (as a helper body waits for
//! `finish`) never deadlocks.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::{Condvar, Mutex, Notify};
use loom::thread;
use skelaff_worklist::crew::{Crew, Ticket};
use std::task::{Context, Wake, Waker};

fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(2, f);
}

/// [`model`] with at most `preemptions` preemptions per execution.
fn model_bounded(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.check(f);
}

/// Starts `n` crew threads.
fn start(n: usize) -> (Arc<Crew>, Vec<thread::JoinHandle<()>>) {
    let crew = Arc::new(Crew::new(n));
    let threads = (0..n)
        .map(|i| {
            let c = crew.clone();
            thread::spawn(move || c.serve(i))
        })
        .collect();
    (crew, threads)
}

/// Per-thread cells: thread `i` writes only cell `i`, and the caller reads
/// them only after every thread's write (which loom checks).
struct Cells(Vec<UnsafeCell<usize>>);

// SAFETY: each cell is written by one crew thread only (its index) and
// read by the caller after `run_scoped` returned; loom's cell checks that
// those accesses are ordered and reports the model as failed otherwise.
unsafe impl Sync for Cells {}

impl Cells {
    fn cell(&self, i: usize) -> &UnsafeCell<usize> {
        &self.0[i]
    }
}

/// One run of a job that counts its calls per thread in cells it borrows.
fn one_run(crew: &Crew, n: usize) {
    let calls = Cells((0..n).map(|_| UnsafeCell::new(0)).collect());
    // SAFETY: as for `Cells`: loom checks the accesses.
    let job = |i: usize| calls.cell(i).with_mut(|c| unsafe { *c += 1 });
    let ((), panicked) = crew.run_scoped(&job, || ());
    assert!(!panicked);
    for c in &calls.0 {
        // SAFETY: as for `Cells`: loom checks the accesses.
        assert_eq!(c.with(|c| unsafe { *c }), 1);
    }
}

#[test]
fn two_threads_serve_runs_back_to_back_and_the_caller_waits_for_both() {
    model(|| {
        let (crew, threads) = start(2);
        one_run(&crew, 2);
        one_run(&crew, 2);
        crew.shutdown();
        for t in threads {
            t.join().unwrap();
        }
    });
}

#[test]
fn runs_of_two_callers_at_once_queue_and_each_is_served_once() {
    model(|| {
        let (crew, threads) = start(1);
        let other = {
            let crew = crew.clone();
            thread::spawn(move || one_run(&crew, 1))
        };
        one_run(&crew, 1);
        other.join().unwrap();
        crew.shutdown();
        for t in threads {
            t.join().unwrap();
        }
    });
}

#[test]
fn a_panicking_job_is_counted_and_reported() {
    model(|| {
        let (crew, threads) = start(1);
        let ((), panicked) = crew.run_scoped(&|_| panic!("boom"), || ());
        assert!(panicked);
        one_run(&crew, 1);
        crew.shutdown();
        for t in threads {
            t.join().unwrap();
        }
    });
}

/// An owned run of one thread, as `Worklist::submit` gives one, awaited as
/// `RunFuture` awaits it.
fn await_owned_run(crew: &Crew, first_poll_with_another_waker: bool) {
    let ticket = crew.run_owned(Box::new(|_: usize| {}));
    if first_poll_with_another_waker {
        // A first poll by another task (a future moved between tasks):
        // the waker that counts is the last one registered.
        let _ = ticket.poll_done(&mut Context::from_waker(Waker::noop()));
    }
    block_on_ticket(&ticket);
    assert!(ticket.is_done());
}

/// A task's waker for a model: wakes the task blocked in
/// [`block_on_ticket`] through loom's `Notify` (which also returns
/// spuriously where it may).
struct TaskWaker(Notify);

impl Wake for TaskWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.notify();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.notify();
    }
}

/// Polls the ticket as `RunFuture::poll` does until it is ready, blocking
/// the task between two polls until its waker is woken (as an executor
/// does; loom's `future::block_on` needs a loom feature the workspace
/// leaves off).
fn block_on_ticket(ticket: &Ticket) {
    let task = std::sync::Arc::new(TaskWaker(Notify::new()));
    let waker = Waker::from(task.clone());
    while ticket.poll_done(&mut Context::from_waker(&waker)).is_pending() {
        task.0.wait();
    }
}

#[test]
fn a_future_polled_while_its_run_completes_is_woken() {
    model(|| {
        let (crew, threads) = start(1);
        await_owned_run(&crew, false);
        crew.shutdown();
        for t in threads {
            t.join().unwrap();
        }
    });
}

#[test]
fn a_future_polled_again_with_another_waker_wakes_the_last() {
    model(|| {
        let (crew, threads) = start(1);
        await_owned_run(&crew, true);
        crew.shutdown();
        for t in threads {
            t.join().unwrap();
        }
    });
}

/// A run with helpers as `HelperSet::run_beside` gives one: the workers'
/// job marks the run finished (as a worker's `finish` does), the helpers'
/// job waits for that (as a helper body does); each logs which run it
/// served, in the order the crews served them.
fn helped_run(workers: &Crew, helpers: &Crew, order: &Mutex<()>, log: &Mutex<Vec<(char, usize)>>, run: usize) {
    let finished = (Mutex::new(false), Condvar::new());
    let worker_job = |_: usize| {
        log.lock().unwrap().push(('w', run));
        *finished.0.lock().unwrap() = true;
        finished.1.notify_all();
    };
    let helper_job = |_: usize| {
        log.lock().unwrap().push(('h', run));
        let mut done = finished.0.lock().unwrap();
        while !*done {
            done = finished.1.wait(done).unwrap();
        }
    };
    let guard = order.lock().unwrap();
    let (((), helpers_panicked), workers_panicked) =
        workers.run_scoped(&worker_job, || helpers.run_scoped(&helper_job, move || drop(guard)));
    assert!(!helpers_panicked && !workers_panicked);
}

#[test]
fn runs_with_helpers_from_two_callers_reach_both_crews_in_the_same_order() {
    // Five threads (two callers, a worker and a helper, and the crews'
    // hand-offs): at two preemptions this model alone took minutes of the
    // test command; at one it still finds the release of the order lock
    // before the hand-offs (shown).
    model_bounded(1, || {
        let (workers, worker_threads) = start(1);
        let (helpers, helper_threads) = start(1);
        let order = Arc::new(Mutex::new(()));
        let log = Arc::new(Mutex::new(Vec::new()));
        let other = {
            let (workers, helpers, order, log) = (workers.clone(), helpers.clone(), order.clone(), log.clone());
            thread::spawn(move || helped_run(&workers, &helpers, &order, &log, 1))
        };
        helped_run(&workers, &helpers, &order, &log, 0);
        other.join().unwrap();
        let log = log.lock().unwrap().clone();
        let served = |who: char| log.iter().filter(|(w, _)| *w == who).map(|(_, r)| *r).collect::<Vec<_>>();
        assert_eq!(served('w'), served('h'), "the crews served the runs in different orders: {log:?}");
        workers.shutdown();
        helpers.shutdown();
        for t in worker_threads.into_iter().chain(helper_threads) {
            t.join().unwrap();
        }
    });
}
