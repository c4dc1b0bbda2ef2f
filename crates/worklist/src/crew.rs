//! The hand-off between a [`WorkerPool`](crate::WorkerPool)'s parked
//! threads and the runs given to them: which run the threads serve, how
//! they learn of the next one, and how the caller learns that every
//! thread is done with a run. Nothing here knows what a run is: a run is a
//! job `Fn(index)` that each of the crew's `n` threads calls exactly once.
//!
//! # The protocol
//!
//! One lock guards the crew's [`State`]: the run being served
//! (`current`), the runs waiting behind it (`queue`, first come first
//! served), a `generation` that grows by one each time a run becomes
//! current, and `shutdown`. A thread of the crew remembers the generation
//! it served last; it waits (spins a little on a copy of the generation,
//! then blocks on `work`) until the generation moves, takes `current`
//! under the lock, calls the job with its index, and counts the run's
//! `remaining` calls down. The thread that brings `remaining` to zero
//! makes the next queued run current (or leaves the crew idle, and wakes
//! whoever waits for that), then marks the run complete, which wakes its
//! submitter: a thread blocked in [`Crew::run_scoped_waiting`] or a task's
//! [`Waker`].
//!
//! | `current` | `queue`  | what happens next                                      |
//! |-----------|----------|--------------------------------------------------------|
//! | none      | empty    | idle: a submission becomes current (generation + 1)    |
//! | run r     | any      | each thread calls r once; the last one promotes the head of `queue` |
//! | none      | empty, `shutdown` | every thread returns from [`Crew::serve`]      |
//!
//! A condition variable is notified only when the state says someone is
//! blocked on it (`asleep`, `awaiting_idle`, a [`Ticket`]'s waiter marked
//! as a blocked thread): a notification is a system call even when nobody
//! waits, and runs given back to back mostly find the crew's threads and
//! the caller still spinning. Each count is changed under the lock the
//! waiter blocks with, and the notifier reads it under that lock after
//! changing what the waiter looks at, so a waiter either sees the change
//! before it blocks or is counted and notified.
//!
//! A thread cannot miss a generation: a run stays current until every
//! thread (this one included) has counted it down, so the generation moves
//! by exactly one between two runs a thread serves.
//!
//! # Borrowed jobs
//!
//! [`Crew::run_scoped_waiting`] hands the threads a job that borrows the caller's
//! stack (the skeleton, its shared data, the run's state), as
//! `std::thread::scope` and rayon-core's `in_place_scope` do: it returns,
//! and unwinds, only after the run is complete, that is after every
//! thread's call of the job has returned (a job that panics is caught and
//! counted down all the same). The erased pointer it stores is the one
//! `unsafe` of the pool; see [`JobPtr`].
//!
//! `tests/loom_crew.rs` model-checks this protocol with two threads and
//! runs submitted back to back.

use std::collections::VecDeque;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};

use crate::primitive::{Arc, AtomicBool, AtomicU64, AtomicUsize, Backoff, Condvar, Mutex, Ordering};

/// What each thread of a crew runs once per run, with its index.
pub type Job<'a> = dyn Fn(usize) + Sync + 'a;

/// A job owned by its run (the asynchronous path: nothing borrowed).
pub type OwnedJob = Box<dyn Fn(usize) + Send + Sync + 'static>;

/// A pointer to a job borrowed from a [`Crew::run_scoped_waiting`] caller's stack,
/// its lifetime erased.
///
/// Invariant: the pointee is alive while its ticket is not complete
/// ([`Ticket::done`] false), because the only constructor,
/// [`Crew::run_scoped_waiting`], does not return or unwind before then. It is
/// dereferenced only by [`Ticket::call`], by a crew thread that has not yet
/// counted the ticket down, so while the ticket is not complete.
struct JobPtr(NonNull<Job<'static>>);

// SAFETY: a `JobPtr` stands for a `&Job`, and `Job` is `Sync`: sending or
// sharing a shared reference to a `Sync` value between threads is what
// `&T: Send + Sync` allows for `T: Sync`. The pointer is only read through
// (never written), and its lifetime is the invariant above, not a thread's.
unsafe impl Send for JobPtr {}
// SAFETY: as for `Send` above.
unsafe impl Sync for JobPtr {}

enum JobRef {
    Borrowed(JobPtr),
    Owned(OwnedJob),
}

/// Who waits for a run to complete.
enum Waiter {
    /// Nobody yet (or a thread that has not blocked: it looks at `done`
    /// before it does).
    Nobody,
    /// A thread blocked on [`Ticket::cv`].
    Thread,
    /// A task, woken once when the run completes.
    Task(Waker),
}

/// One run given to a crew: its job, how many of the crew's threads have
/// yet to call it, and who waits for it.
#[allow(missing_debug_implementations)] // its job is a closure
pub struct Ticket {
    job: JobRef,
    remaining: AtomicUsize,
    /// A call of the job unwound (the crew caught it).
    panicked: AtomicBool,
    /// Every call of the job has returned.
    done: AtomicBool,
    waiter: Mutex<Waiter>,
    cv: Condvar,
    /// The submitting thread yields while it waits rather than spinning
    /// first (see [`Crew::run_scoped_waiting`]).
    caller_yields: bool,
}

impl Ticket {
    fn new(job: JobRef, threads: usize, caller_yields: bool) -> Self {
        Ticket {
            job,
            remaining: AtomicUsize::new(threads),
            panicked: AtomicBool::new(false),
            done: AtomicBool::new(false),
            waiter: Mutex::new(Waiter::Nobody),
            cv: Condvar::new(),
            caller_yields,
        }
    }

    /// Calls the job for thread `index`, catching a panic that escapes it.
    fn call(&self, index: usize) {
        let job: &Job<'_> = match &self.job {
            // SAFETY: the calling crew thread has not counted this ticket
            // down yet (it does so after this call returns), so the ticket
            // is not complete, and by `JobPtr`'s invariant the job it
            // points to is alive; it is only read through.
            JobRef::Borrowed(p) => unsafe { p.0.as_ref() },
            JobRef::Owned(b) => &**b,
        };
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(index))).is_err() {
            self.panicked.store(true, Ordering::Relaxed);
        }
    }

    /// Marks the run complete and wakes its waiter (a thread only if it
    /// blocked: a notification costs a system call even when nobody waits).
    fn complete(&self) {
        let task = {
            let mut w = self.waiter.lock();
            self.done.store(true, Ordering::Release);
            match std::mem::replace(&mut *w, Waiter::Nobody) {
                Waiter::Task(waker) => Some(waker),
                Waiter::Thread => {
                    self.cv.notify_all();
                    None
                }
                Waiter::Nobody => None,
            }
        };
        // Woken outside the lock: a waker may run code of the runtime's.
        if let Some(waker) = task {
            waker.wake();
        }
    }

    /// Whether every call of the job has returned.
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Whether a call of the job panicked past the job itself.
    pub fn panicked(&self) -> bool {
        self.panicked.load(Ordering::Relaxed)
    }

    /// Blocks the calling thread until the run is complete (spinning or
    /// yielding a little first: short runs end within microseconds).
    pub fn wait(&self) {
        let backoff = if self.caller_yields { Backoff::yielding() } else { Backoff::new() };
        while !self.is_done() && !backoff.is_completed() {
            backoff.snooze();
        }
        let mut w = self.waiter.lock();
        // Checked under the lock, which `complete` holds while it sets
        // `done` and looks for a blocked thread to notify.
        while !self.is_done() {
            *w = Waiter::Thread;
            w = self.cv.wait(w);
        }
    }

    /// Whether the run is complete; if not, `cx`'s waker is woken when it is.
    pub fn poll_done(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.is_done() {
            return Poll::Ready(());
        }
        let mut w = self.waiter.lock();
        // Checked again under the lock: `complete` sets `done` under it.
        if self.is_done() {
            return Poll::Ready(());
        }
        match &mut *w {
            Waiter::Task(old) if old.will_wake(cx.waker()) => {}
            other => *other = Waiter::Task(cx.waker().clone()),
        }
        Poll::Pending
    }
}

struct State {
    generation: u64,
    current: Option<Arc<Ticket>>,
    queue: VecDeque<Arc<Ticket>>,
    shutdown: bool,
    /// Threads blocked on `work`, and callers blocked on `idle`: a
    /// condition variable is notified only when someone waits on it (its
    /// notification is a system call even when nobody does).
    asleep: usize,
    awaiting_idle: usize,
}

/// The hand-off state a pool's threads and its callers share.
#[allow(missing_debug_implementations)] // its tickets' jobs are closures
pub struct Crew {
    threads: usize,
    state: Mutex<State>,
    /// The crew's threads: a run became current, or shutdown.
    work: Condvar,
    /// [`Crew::shutdown`]: the crew became idle.
    idle: Condvar,
    /// `state.generation`, for the threads' spin before they block.
    generation: AtomicU64,
    /// `state.shutdown`, for the same spin: a thread spinning when the
    /// crew shuts down returns at once, not after its spin (a pool made
    /// for one run is dropped right after it).
    closing: AtomicBool,
}

impl Crew {
    /// A crew of `threads` threads (each must call [`serve`](Self::serve)
    /// with its index, `0..threads`).
    pub fn new(threads: usize) -> Self {
        Crew {
            threads,
            state: Mutex::new(State {
                generation: 0,
                current: None,
                queue: VecDeque::new(),
                shutdown: false,
                asleep: 0,
                awaiting_idle: 0,
            }),
            work: Condvar::new(),
            idle: Condvar::new(),
            generation: AtomicU64::new(0),
            closing: AtomicBool::new(false),
        }
    }

    /// The body of the crew's thread `index`: serves every run, in order,
    /// until [`shutdown`](Self::shutdown).
    pub fn serve(&self, index: usize) {
        let mut seen = 0u64;
        loop {
            // Runs given back to back (a service, kmeans's iterations) find
            // the thread awake.
            let backoff = Backoff::new();
            while self.generation.load(Ordering::Acquire) == seen
                && !self.closing.load(Ordering::Relaxed)
                && !backoff.is_completed()
            {
                backoff.snooze();
            }
            let ticket = {
                let mut st = self.state.lock();
                loop {
                    if st.generation != seen {
                        seen = st.generation;
                        break st.current.clone();
                    }
                    if st.shutdown {
                        return;
                    }
                    st.asleep += 1;
                    st = self.work.wait(st);
                    st.asleep -= 1;
                }
            };
            // A new generation always comes with its run (see the table).
            let Some(ticket) = ticket else { continue };
            ticket.call(index);
            if ticket.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                self.promote_next();
                ticket.complete();
            }
        }
    }

    /// The current run is finished: the head of the queue becomes current.
    fn promote_next(&self) {
        let mut st = self.state.lock();
        st.current = st.queue.pop_front();
        if st.current.is_some() {
            st.generation += 1;
            self.generation.store(st.generation, Ordering::Release);
            let wake = st.asleep > 0;
            drop(st);
            if wake {
                self.work.notify_all();
            }
        } else {
            let wake = st.awaiting_idle > 0;
            drop(st);
            if wake {
                self.idle.notify_all();
            }
        }
    }

    /// Queues `ticket`, or makes it current at once if the crew is idle.
    fn submit(&self, ticket: Arc<Ticket>) {
        let mut st = self.state.lock();
        debug_assert!(!st.shutdown, "a run given to a crew that shut down");
        if st.current.is_none() {
            st.current = Some(ticket);
            st.generation += 1;
            self.generation.store(st.generation, Ordering::Release);
            // A thread not asleep looks at the generation, under the lock,
            // before it blocks.
            let wake = st.asleep > 0;
            drop(st);
            if wake {
                self.work.notify_all();
            }
        } else {
            st.queue.push_back(ticket);
        }
    }

    /// [`run_scoped_waiting`](Crew::run_scoped_waiting) with a caller that
    /// spins first (the models' way in: nothing spins under loom).
    #[cfg(loom)]
    pub fn run_scoped<R>(&self, job: &Job<'_>, during: impl FnOnce() -> R) -> (R, bool) {
        self.run_scoped_waiting(job, during, false)
    }

    /// Runs `job` on every thread of the crew (after the runs queued
    /// before it), calls `during` on the calling thread meanwhile, and
    /// returns `during`'s result once every thread's call of `job` has
    /// returned, with whether one of them panicked past `job`. If `during`
    /// panics, the panic goes on only after that too. How the caller waits:
    /// with `caller_yields`, by yielding its CPU from the start, for a caller
    /// that runs on a CPU one of the crew's threads needs (a pause loop
    /// would hold that CPU until the scheduler's next tick takes it away);
    /// otherwise spinning first, which is faster when the caller has a CPU
    /// of its own. On two cores with two workers, an empty run took 15.5 µs
    /// yielding against 19.6 µs spinning first (medians of 5, interleaved).
    pub fn run_scoped_waiting<R>(&self, job: &Job<'_>, during: impl FnOnce() -> R, caller_yields: bool) -> (R, bool) {
        /// Waits for the run when dropped: on the way out, unwinding included.
        struct WaitOnDrop<'t>(&'t Ticket);
        impl Drop for WaitOnDrop<'_> {
            fn drop(&mut self) {
                self.0.wait();
            }
        }
        // SAFETY: only the lifetime changes (same layout). `JobPtr`'s
        // invariant holds: the ticket cannot outlive this frame's wait
        // below unnoticed (crew threads may still hold it, but only
        // dereference the job before counting down, i.e. before `done`),
        // and this function neither returns nor unwinds before `done`:
        // the guard waits on every way out of `during`, and nothing else
        // here runs user code. `mem::forget` cannot skip the guard: it is
        // local to this frame, never handed to the caller.
        let erased: NonNull<Job<'static>> =
            unsafe { std::mem::transmute::<NonNull<Job<'_>>, NonNull<Job<'static>>>(NonNull::from(job)) };
        let ticket = Arc::new(Ticket::new(JobRef::Borrowed(JobPtr(erased)), self.threads, caller_yields));
        self.submit(ticket.clone());
        let guard = WaitOnDrop(&ticket);
        let r = during();
        drop(guard);
        (r, ticket.panicked())
    }

    /// Queues an owned job; the returned ticket says when it is complete.
    pub fn run_owned(&self, job: OwnedJob) -> Arc<Ticket> {
        let ticket = Arc::new(Ticket::new(JobRef::Owned(job), self.threads, false));
        self.submit(ticket.clone());
        ticket
    }

    /// Waits until no run is current or queued, then tells every thread
    /// to return from [`serve`](Self::serve). Runs can no longer be given.
    pub fn shutdown(&self) {
        let mut st = self.state.lock();
        while st.current.is_some() {
            st.awaiting_idle += 1;
            st = self.idle.wait(st);
            st.awaiting_idle -= 1;
        }
        st.shutdown = true;
        self.closing.store(true, Ordering::Relaxed);
        drop(st);
        self.work.notify_all();
    }
}
