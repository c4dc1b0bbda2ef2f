//! A persistent team of pinned threads with a static schedule.
//!
//! A [`Team`] starts one thread per [`TeamLayout`] slot, pins it to that slot's
//! CPU for its whole life, and runs jobs on all of them at once:
//! [`Team::run`] calls the same closure on every thread with a [`TeamMember`]
//! that says which thread it is (its index never changes, so with a static
//! split the same thread always handles the same chunk, which is what makes
//! binding that chunk to the thread's node pay) and offers a barrier and
//! deterministic sum reductions.
//!
//! The layout comes from the foundation crate's scatter mapping (threads
//! spread over nodes first), reordered so that the threads of one node have
//! consecutive indices, as Algorithm 1 of the MASA paper assumes: thread
//! `t` handles chunk `t`, so the chunks of one node are contiguous.
//!
//! Waiting spins briefly, then yields, and (between jobs) parks — the
//! foundation's [`Wakeup`], as the helper threads wait — so a team on a busy
//! or oversubscribed machine does not burn the cores others need. A barrier
//! inside a job spins, then yields, but does not park.
//! The caller of [`Team::run`] is not a team thread: when the team has a
//! thread on every CPU the process may use (two threads on two CPUs, or one
//! rank bound to one core by `mpirun`), the caller could only wait on a CPU
//! a team thread needs, so it parks at once instead of spinning.
//!
//! Files: [`layout`](TeamLayout) (where the threads run), `member` (the
//! barrier and reductions inside a job), `shared` ([`SharedMut`], the
//! output slices threads write in disjoint parts); this one starts the
//! threads and hands them jobs.

mod layout;
mod member;
mod shared;

use core::cell::Cell;
use core::fmt;
use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_utils::CachePadded;
use skelaff_numa_alloc::idle::{IdlePolicy, Wakeup};
use skelaff_numa_alloc::pin::Birthplace;
use skelaff_numa_alloc::{Topology, pin};

pub use self::layout::{TeamLayout, ThreadSlot};
use self::member::JobSync;
pub use self::member::{MAX_SUMS, TeamMember};
pub use self::shared::SharedMut;
use crate::error::{Error, Result};

/// How team threads wait for the next job, and how the caller of
/// [`Team::run`] waits for its end (when it has a CPU of its own): spin,
/// yield, then park, through the foundation's [`Wakeup`].
const IDLE: IdlePolicy = IdlePolicy { spin: Duration::from_micros(50), yield_for: Duration::from_micros(200) };

/// A job as the workers see it: a pointer to the caller's closure.
#[derive(Clone, Copy)]
struct JobPtr(*const (dyn Fn(&TeamMember<'_>) + Sync));

// SAFETY: the pointee is `Sync` (so it may be called from any thread), and
// `Team::run` keeps it alive until every worker is done with it.
unsafe impl Send for JobPtr {}

struct Inner {
    threads: usize,
    /// Bumped once per job (and at shutdown); workers wait for a change.
    epoch: CachePadded<AtomicU64>,
    /// Workers that have not finished the current job.
    remaining: CachePadded<AtomicUsize>,
    job: Mutex<Option<JobPtr>>,
    /// Where each team thread waits for the next job.
    wakeups: Box<[CachePadded<Wakeup>]>,
    /// Where the caller of the current job waits for its end.
    caller: Mutex<Option<Arc<Wakeup>>>,
    shutdown: AtomicBool,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// The barrier and reductions of a job.
    sync: JobSync,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The mutexes guard plain data that a panic cannot leave half-written.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    static IN_TEAM: Cell<bool> = const { Cell::new(false) };
    /// Where this thread waits for the end of a job it gave a team (one
    /// per thread: a [`Wakeup`] parks only the first thread that waits on it).
    static CALLER_WAKEUP: Arc<Wakeup> = Arc::new(Wakeup::new());
}

/// A team of pinned threads. See the [module docs](self).
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::Topology;
/// use skelaff_spmv::{TeamLayout, Team};
///
/// let team = Team::new(TeamLayout::scatter(Topology::get()?, 2)?)?;
/// let totals = team.run_collect(|m| m.sum(m.index() as f64 + 1.0));
/// assert_eq!(totals, vec![3.0, 3.0]); // every thread sees the same sum
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub struct Team {
    inner: Arc<Inner>,
    handles: Vec<JoinHandle<()>>,
    layout: TeamLayout,
    run_lock: Mutex<()>,
    /// The caller of `run` parks at once (see the module docs): the team
    /// has as many threads as the process has CPUs to run on.
    caller_parks_at_once: bool,
}

impl Team {
    /// Starts one pinned thread per slot of `layout`.
    ///
    /// # Errors
    ///
    /// [`Error::TeamStart`] naming the thread if it cannot be started on its
    /// CPU (a CPU this process may not use, or no thread to be had).
    pub fn new(layout: TeamLayout) -> Result<Team> {
        let n = layout.threads();
        let inner = Arc::new(Inner {
            threads: n,
            epoch: CachePadded::new(AtomicU64::new(0)),
            remaining: CachePadded::new(AtomicUsize::new(0)),
            job: Mutex::new(None),
            wakeups: (0..n).map(|_| CachePadded::new(Wakeup::new())).collect(),
            caller: Mutex::new(None),
            shutdown: AtomicBool::new(false),
            panic: Mutex::new(None),
            sync: JobSync::new(layout.slots()),
        });
        // `available_parallelism` counts the CPUs of this process's affinity
        // mask (and cgroup quota); unknown counts as "no CPU to spare".
        let caller_parks_at_once = thread::available_parallelism().map_or(true, |cpus| cpus.get() <= n);
        let mut team =
            Team { inner: inner.clone(), handles: Vec::new(), layout, run_lock: Mutex::new(()), caller_parks_at_once };
        for (t, slot) in team.layout.slots().iter().copied().enumerate() {
            let inner = inner.clone();
            // Born on its CPU; on an error `team` drops, which stops and
            // joins the threads started so far.
            let h = pin::spawn_pinned(format!("spmv-team-{t}"), Birthplace::Cpu(slot.cpu), move || worker(&inner, t))
                .map_err(|source| Error::TeamStart { thread: t, source })?;
            team.handles.push(h);
        }
        Ok(team)
    }

    /// A team of `threads` threads laid out by [`TeamLayout::scatter`] on this machine.
    ///
    /// # Errors
    ///
    /// As [`TeamLayout::scatter`] and [`Team::new`].
    pub fn with_threads(threads: usize) -> Result<Team> {
        Team::new(TeamLayout::scatter(Topology::get()?, threads)?)
    }

    /// Number of threads.
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// Where each thread runs.
    pub fn layout(&self) -> &TeamLayout {
        &self.layout
    }

    /// Runs `f` on every thread of the team and returns when all are done.
    /// Calls from several threads are served one after the other.
    ///
    /// # Panics
    ///
    /// Re-raises the first panic of a team thread (the others stop at their
    /// next barrier); the team stays usable. Panics if called from inside a
    /// job of any team (that would deadlock).
    pub fn run<F: Fn(&TeamMember<'_>) + Sync>(&self, f: F) {
        assert!(!IN_TEAM.with(Cell::get), "Team::run called from a team thread: nested team jobs would deadlock");
        let _serial = lock(&self.run_lock);
        let inner = &*self.inner;
        let job: &(dyn Fn(&TeamMember<'_>) + Sync) = &f;
        // SAFETY: erasing the lifetime is sound because this function does
        // not return (nor unwind) before `remaining` is 0, i.e. before every
        // worker has returned from calling the job; workers catch panics,
        // so they always get there.
        let job: JobPtr = JobPtr(unsafe {
            core::mem::transmute::<
                *const (dyn Fn(&TeamMember<'_>) + Sync + '_),
                *const (dyn Fn(&TeamMember<'_>) + Sync + 'static),
            >(job)
        });
        // Every worker finished the previous job, so the barrier is idle.
        inner.sync.bar_count.store(0, Ordering::Relaxed);
        inner.sync.abort.store(false, Ordering::Relaxed);
        *lock(&inner.job) = Some(job);
        let done = CALLER_WAKEUP.with(Arc::clone);
        *lock(&inner.caller) = Some(done.clone());
        inner.remaining.store(inner.threads, Ordering::Relaxed);
        inner.epoch.fetch_add(1, Ordering::Release);
        for w in inner.wakeups.iter() {
            w.wake();
        }
        let policy = if self.caller_parks_at_once { IdlePolicy::PARK } else { IDLE };
        done.wait(policy, || inner.remaining.load(Ordering::Acquire) == 0);
        *lock(&inner.job) = None;
        if let Some(p) = lock(&inner.panic).take() {
            panic::resume_unwind(p);
        }
    }

    /// Runs `f` on every thread and returns each thread's result, thread 0 first.
    ///
    /// # Panics
    ///
    /// As [`Team::run`].
    pub fn run_collect<R: Send, F: Fn(&TeamMember<'_>) -> R + Sync>(&self, f: F) -> Vec<R> {
        let out: Vec<Mutex<Option<R>>> = (0..self.threads()).map(|_| Mutex::new(None)).collect();
        self.run(|member| {
            let r = f(member);
            *lock(&out[member.index()]) = Some(r);
        });
        out.into_iter().filter_map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner())).collect()
    }
}

fn worker(inner: &Inner, t: usize) {
    IN_TEAM.with(|c| c.set(true));
    let mut seen = 0u64;
    loop {
        inner.wakeups[t].wait(IDLE, || inner.epoch.load(Ordering::Acquire) != seen);
        seen = inner.epoch.load(Ordering::Acquire);
        if inner.shutdown.load(Ordering::Acquire) {
            return;
        }
        let job = *lock(&inner.job);
        if let Some(JobPtr(f)) = job {
            let member = TeamMember::new(t, &inner.sync);
            // SAFETY: `Team::run` keeps the closure alive until `remaining`
            // reaches 0, which happens only after this call returns.
            let r = panic::catch_unwind(AssertUnwindSafe(|| unsafe { (*f)(&member) }));
            if let Err(p) = r {
                inner.sync.abort.store(true, Ordering::Release);
                let mut slot = lock(&inner.panic);
                if slot.is_none() {
                    *slot = Some(p);
                }
            }
        }
        if inner.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(c) = lock(&inner.caller).as_ref() {
                c.wake();
            }
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.inner.shutdown.store(true, Ordering::Release);
        self.inner.epoch.fetch_add(1, Ordering::Release);
        for w in self.inner.wakeups.iter() {
            w.wake();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

impl fmt::Debug for Team {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Team").field("layout", &self.layout).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_run_pinned_with_fixed_indices() {
        let topo = Topology::get().unwrap();
        let team = Team::with_threads(3).unwrap();
        for _ in 0..3 {
            let seen = team.run_collect(|m| (m.index(), m.slot(), pin::current_cpu().unwrap()));
            for (t, (i, slot, cpu)) in seen.into_iter().enumerate() {
                assert_eq!(i, t);
                assert_eq!(slot, team.layout().slots()[t]);
                assert_eq!(cpu, slot.cpu, "thread {t} runs on its CPU");
                assert!(topo.allowed_cpus().contains(cpu));
            }
        }
    }

    #[test]
    fn barriers_and_sums_order_phases() {
        let team = Team::with_threads(3).unwrap();
        let mut data = vec![0.0f64; 30];
        let shared = SharedMut::new(&mut data);
        let out = team.run_collect(|m| {
            let t = m.index();
            let mut acc = Vec::new();
            for round in 0..50 {
                // SAFETY: thread t writes only its tenth-block; reads happen after the barrier.
                unsafe { shared.range_mut(t * 10..t * 10 + 10) }.fill((round * 3 + t) as f64);
                m.barrier();
                // SAFETY: nobody writes between the two barriers.
                let all: f64 = unsafe { shared.as_slice() }.iter().sum();
                let [a, b] = m.sums([all, 1.0]);
                acc.push((a, b));
                m.barrier();
            }
            acc
        });
        for round in 0..50 {
            let want: f64 = (0..3).map(|t| ((round * 3 + t) * 10) as f64).sum::<f64>() * 3.0;
            for per_thread in &out {
                assert_eq!(per_thread[round], (want, 3.0));
            }
        }
    }

    #[test]
    fn a_panic_propagates_and_the_team_survives() {
        let team = Team::with_threads(2).unwrap();
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            team.run(|m| {
                if m.index() == 1 {
                    panic!("boom in thread 1");
                }
                m.barrier(); // would wait forever without the abort flag
            })
        }));
        let msg = r.unwrap_err().downcast::<&str>().map(|b| *b).unwrap_or("");
        assert_eq!(msg, "boom in thread 1");
        assert_eq!(team.run_collect(|m| m.sum(1.0)), vec![2.0, 2.0]);
    }

    #[test]
    fn nested_runs_are_refused() {
        let team = Team::with_threads(1).unwrap();
        let r = panic::catch_unwind(AssertUnwindSafe(|| team.run(|_| team.run(|_| {}))));
        assert!(r.is_err());
        assert_eq!(team.run_collect(|c| c.index()), vec![0]);
    }
}
