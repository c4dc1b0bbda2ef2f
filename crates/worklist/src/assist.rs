//! The hook through which helper threads run beside the workers.
//!
//! The worklist knows nothing of what a helper does: it places one helper
//! thread per worker (on a CPU sharing the worker's last-level cache), runs
//! the implementation's [`Assist::helper`] body on it inside the run's own
//! thread scope, and tells the implementation, from the worker thread, what
//! the worker is doing (paper §4.2, Fig. 6): which unit comes next, that its
//! transaction is re-run, that it committed, that it is done.
//!
//! The worker side of the protocol (with a helper):
//!
//! ```text
//! take u0                                   (the first time: two units)
//! loop:
//!     take u1 (or nothing)
//!     handoff(Some(&u1) | None)              "I start the unit I gave you; shadow u1 next"
//!     run u0 in a transaction:
//!         restarted()  before every attempt but the first
//!     committed()
//!     u0 <- u1
//! finish()                                   (always: end of run, panic, stop)
//! ```

use crate::skeleton::{Skeleton, WorkerInfo};

/// Where the skeleton placed a worker's helper thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelperPlace {
    /// The CPU the helper is pinned to (`None`: not pinned).
    pub cpu: Option<usize>,
    /// Whether that CPU shares the worker's last-level cache and no other
    /// worker or helper uses it (the placement the paper asks for).
    pub dedicated: bool,
}

/// What a helper implementation reports about one worker and its helper.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkFigures {
    /// Figures measured on the worker thread (e.g. its counters).
    pub worker: Vec<(String, u64)>,
    /// Figures of the helper, if one ran.
    pub helper: Option<Vec<(String, u64)>>,
    /// Notes (what could not be measured, what was switched off and why).
    pub notes: Vec<String>,
}

/// A helper-thread implementation: what runs beside each worker, and what
/// the worker tells it.
///
/// Given to [`Worklist::run_with`](crate::Worklist::run_with). One
/// [`Link`](Assist::Link) is made per worker before the threads start; the
/// worker and its helper thread both reach it for the whole run, and it is
/// handed back to [`figures`](Assist::figures) after every thread was
/// joined.
///
/// The worker-side calls (`handoff`, `restarted`, `committed`) are on the
/// worker's critical path: they must not block and should cost a few
/// atomic operations. [`finish`](Assist::finish) must make the helper body
/// return soon (it is called once per worker, on every path out of the
/// worker, including panics), because the run waits for every helper before
/// it returns.
///
/// # Examples
///
/// A helper that only counts the units it was shown (real implementations
/// shadow them; see the `skelaff-helper-threads` crate):
///
/// ```
/// use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
/// use skelaff_stm::{TVar, TxError, TxOps};
/// use skelaff_worklist::{Assist, Ctx, HelperPlace, Helpers, LinkFigures, Skeleton, WorkerInfo, Worklist};
///
/// struct Add;
/// impl Skeleton for Add {
///     type Unit = u64;
///     type Shared = TVar<u64>;
///     type Local = ();
///     fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}
///     fn process<X: TxOps>(&self, tx: &mut X, u: &u64, _: &mut (), t: &TVar<u64>, _: &mut Ctx<u64>) -> Result<(), TxError> {
///         tx.update(t, |v| v + u).map(|_| ())
///     }
/// }
///
/// struct Counting;
/// #[derive(Default)]
/// struct Link { shown: AtomicU64, done: AtomicBool }
///
/// impl Assist<Add> for Counting {
///     type Link = Link;
///     fn link(&self, _: &WorkerInfo, _: Option<HelperPlace>) -> Link { Link::default() }
///     fn helper(&self, link: &Link, _: &Add, _: &TVar<u64>, _: &WorkerInfo) {
///         while !link.done.load(Acquire) { std::thread::yield_now(); }
///     }
///     fn handoff(&self, link: &Link, next: Option<&u64>) {
///         if next.is_some() { link.shown.fetch_add(1, Relaxed); }
///     }
///     fn finish(&self, link: &Link) { link.done.store(true, Release); }
///     fn figures(&self, link: Link) -> LinkFigures {
///         LinkFigures { helper: Some(vec![("shown".into(), link.shown.into_inner())]), ..Default::default() }
///     }
/// }
///
/// let total = TVar::new(0);
/// let mut wl = Worklist::builder().threads(1).helpers(Helpers::On).build(&Add, &total)?;
/// wl.add_work_units(1..=100);
/// let report = wl.run_with(&Counting)?;
/// assert_eq!(total.load(), 5050);
/// // Every unit but the first was handed over before it ran.
/// assert_eq!(report.helpers.per_helper[0], [("shown".to_string(), 99)]);
/// # Ok::<(), skelaff_worklist::Error>(())
/// ```
pub trait Assist<S: Skeleton>: Sync {
    /// What one worker and its helper share.
    type Link: Send + Sync;

    /// Whether the worker loop calls the per-unit hooks at all. `false`
    /// only for [`NoAssist`], which compiles the plain loop.
    const ENABLED: bool = true;

    /// Makes the link of `worker`; `helper` is where its helper thread will
    /// run, or `None` when it gets none (then only
    /// [`worker_start`](Assist::worker_start),
    /// [`worker_end`](Assist::worker_end) and [`figures`](Assist::figures)
    /// are called for it).
    fn link(&self, worker: &WorkerInfo, helper: Option<HelperPlace>) -> Self::Link;

    /// Runs once on the worker thread, after it is pinned, before its first unit.
    fn worker_start(&self, link: &Self::Link) {
        let _ = link;
    }

    /// Runs once on the worker thread after its last unit and its `update`.
    fn worker_end(&self, link: &Self::Link) {
        let _ = link;
    }

    /// The helper thread's body, on its own (pinned) thread. Returns once
    /// [`finish`](Assist::finish) was called for `link`.
    fn helper(&self, link: &Self::Link, skeleton: &S, shared: &S::Shared, worker: &WorkerInfo);

    /// The worker starts the unit it handed over last (if any) and hands
    /// over `next`, the unit it will run after that (`None`: it holds none).
    fn handoff(&self, link: &Self::Link, next: Option<&S::Unit>);

    /// The worker's transaction for its current unit runs again (after a
    /// conflict or a retry).
    fn restarted(&self, link: &Self::Link) {
        let _ = link;
    }

    /// The worker's current unit committed.
    fn committed(&self, link: &Self::Link) {
        let _ = link;
    }

    /// The worker is done (the run ended, stopped, or the worker panicked):
    /// the helper body must return soon.
    fn finish(&self, link: &Self::Link);

    /// The figures of one link, after every thread was joined.
    fn figures(&self, link: Self::Link) -> LinkFigures;
}

/// No helper threads: what [`Worklist::run`](crate::Worklist::run) uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAssist;

impl<S: Skeleton> Assist<S> for NoAssist {
    type Link = ();
    const ENABLED: bool = false;

    #[inline(always)]
    fn link(&self, _: &WorkerInfo, _: Option<HelperPlace>) {}
    fn helper(&self, _: &(), _: &S, _: &S::Shared, _: &WorkerInfo) {}
    #[inline(always)]
    fn handoff(&self, _: &(), _: Option<&S::Unit>) {}
    #[inline(always)]
    fn finish(&self, _: &()) {}
    fn figures(&self, _: ()) -> LinkFigures {
        LinkFigures::default()
    }
}
