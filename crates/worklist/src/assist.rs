//! The hook through which helper threads run beside the workers.
//!
//! The worklist knows nothing of what a helper does: it places one helper
//! thread per worker (where the [`ThreadPlacement`](crate::ThreadPlacement) says; the
//! [`WorkerPool`](crate::WorkerPool) keeps those threads, parked between runs), runs
//! the implementation's [`Assist::helper`] body on it for the run, and
//! tells the implementation, from the worker thread, what
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

use crate::placement::HelperPlace;
use crate::report::ChannelFigures;
use crate::skeleton::{Skeleton, WorkerInfo};

/// A helper-thread implementation: what runs beside each worker, and what
/// the worker tells it.
///
/// Given to [`Worklist::run_with`](crate::Worklist::run_with). One
/// [`Channel`](Assist::Channel) is made per worker before the threads
/// start; the worker and its helper thread both reach it for the whole run,
/// and it is handed back to [`figures`](Assist::figures) after every thread
/// was joined. The worker's own state ([`WorkerSide`](Assist::WorkerSide))
/// lives on the worker thread, from [`worker_start`](Assist::worker_start)
/// to [`worker_end`](Assist::worker_end), and nobody else touches it.
///
/// The worker-side calls (`handoff`, `restarted`, `committed`) are on the
/// worker's critical path: they must not block, take no lock, and should
/// cost a few atomic operations. [`finish`](Assist::finish) must make the helper body
/// return soon (it is called once per worker, on every path out of the
/// worker, including panics), because the run waits for every helper before
/// it returns. A run hands its helper bodies to the helper threads after
/// its workers were given the run, so a short worker may call `finish`
/// before its helper's body begins: the body must then return at once too
/// (check what `finish` set on entry).
///
/// # Examples
///
/// A helper that only counts the units it was shown (real implementations
/// shadow them; see the `skelaff-helper-threads` crate):
///
/// ```
/// use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
/// use skelaff_stm::{TVar, TxError, TxOps};
/// use skelaff_worklist::{
///     Assist, Builder, ChannelFigures, HelperFigures, HelperPlace, Helpers, ProcessCtx, Skeleton, WorkerInfo,
/// };
///
/// struct Add;
/// impl Skeleton for Add {
///     type Unit = u64;
///     type Shared = TVar<u64>;
///     type PerWorker = ();
///     fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}
///     fn process<'t, X: TxOps<'t>>(&'t self, tx: &mut X, u: &u64, _: &mut (), t: &'t TVar<u64>, _: &mut ProcessCtx<u64>) -> Result<(), TxError> {
///         tx.update(t, |v| v + u).map(|_| ())
///     }
/// }
///
/// struct Counting;
/// struct Channel { place: Option<HelperPlace>, shown: AtomicU64, done: AtomicBool }
///
/// impl Assist<Add> for Counting {
///     type Channel = Channel;
///     type WorkerSide = ();
///     fn channel(&self, _: &WorkerInfo, place: Option<HelperPlace>) -> Channel {
///         Channel { place, shown: AtomicU64::new(0), done: AtomicBool::new(false) }
///     }
///     fn worker_start(&self, _: &Channel) {}
///     fn worker_end(&self, _: &Channel, _: ()) {}
///     fn helper(&self, ch: &Channel, _: &Add, _: &TVar<u64>, _: &WorkerInfo) {
///         while !ch.done.load(Acquire) { std::thread::yield_now(); }
///     }
///     fn handoff(&self, ch: &Channel, _: &mut (), next: Option<&u64>) {
///         if next.is_some() { ch.shown.fetch_add(1, Relaxed); }
///     }
///     fn finish(&self, ch: &Channel) { ch.done.store(true, Release); }
///     fn figures(&self, ch: Channel) -> ChannelFigures {
///         let helper = ch.place.map(|p| HelperFigures { units_handed: ch.shown.into_inner(), ..HelperFigures::new(p) });
///         ChannelFigures { helper, ..Default::default() }
///     }
/// }
///
/// let total = TVar::new(0);
/// let mut wl = Builder::new().threads(1).helpers(Helpers::On).build(&Add, &total)?;
/// wl.add_work_units(1..=100);
/// let report = wl.run_with(&Counting)?;
/// assert_eq!(total.load(), 5050);
/// // Every unit but the first was handed over before it ran.
/// assert_eq!(report.helpers.per_helper[0].units_handed, 99);
/// # Ok::<(), skelaff_worklist::Error>(())
/// ```
pub trait Assist<S: Skeleton>: Sync {
    /// What one worker and its helper share.
    type Channel: Send + Sync;

    /// The worker thread's own state, from
    /// [`worker_start`](Assist::worker_start) to
    /// [`worker_end`](Assist::worker_end) (dropped without `worker_end`
    /// when the worker panics).
    type WorkerSide;

    /// Whether the worker loop calls the per-unit hooks at all. `false`
    /// only for [`NoAssist`], which compiles the plain loop.
    const ENABLED: bool = true;

    /// Makes the channel of `worker`; `helper` is where its helper thread
    /// will run, or `None` when it gets none (then only
    /// [`worker_start`](Assist::worker_start),
    /// [`worker_end`](Assist::worker_end) and [`figures`](Assist::figures)
    /// are called for it).
    fn channel(&self, worker: &WorkerInfo, helper: Option<HelperPlace>) -> Self::Channel;

    /// Whether `channel`'s helper thread is started in this run (default:
    /// yes). An implementation that knows its helper would stay switched
    /// off anyway (it measured that it does not pay) saves the thread's
    /// start and join; the worker runs the assisted loop all the same, so
    /// the implementation still sees every unit.
    fn start_helper(&self, channel: &Self::Channel) -> bool {
        let _ = channel;
        true
    }

    /// Runs once on the worker thread, after it is pinned, before its first unit.
    fn worker_start(&self, channel: &Self::Channel) -> Self::WorkerSide;

    /// Runs once on the worker thread after its last unit and its `update`.
    fn worker_end(&self, channel: &Self::Channel, side: Self::WorkerSide);

    /// The helper thread's body, on its own (pinned) thread. Returns once
    /// [`finish`](Assist::finish) was called for `channel`.
    fn helper(&self, channel: &Self::Channel, skeleton: &S, shared: &S::Shared, worker: &WorkerInfo);

    /// The worker starts the unit it handed over last (if any) and hands
    /// over `next`, the unit it will run after that (`None`: it holds none).
    fn handoff(&self, channel: &Self::Channel, side: &mut Self::WorkerSide, next: Option<&S::Unit>);

    /// Whether the worker's transaction for its current unit (the one it
    /// started at the last [`handoff`](Assist::handoff)) must be sampled:
    /// run in the STM's [`Sampled`](skelaff_stm::Sampled) mode, so that
    /// its accesses reach the thread's access sampler, which `handoff`
    /// enabled. The default never samples; units that are not sampled run
    /// plain transactions, whose accesses carry no sampler code.
    fn sampled(&self, side: &Self::WorkerSide) -> bool {
        let _ = side;
        false
    }

    /// The worker's transaction for its current unit runs again (after a
    /// conflict or a retry).
    fn restarted(&self, channel: &Self::Channel, side: &mut Self::WorkerSide) {
        let _ = (channel, side);
    }

    /// The worker's current unit committed.
    fn committed(&self, channel: &Self::Channel, side: &mut Self::WorkerSide) {
        let _ = (channel, side);
    }

    /// The worker is done (the run ended, stopped, or the worker panicked):
    /// the helper body must return soon.
    fn finish(&self, channel: &Self::Channel);

    /// The figures of one channel, after every thread was joined.
    fn figures(&self, channel: Self::Channel) -> ChannelFigures;
}

/// No helper threads: what [`Worklist::run`](crate::Worklist::run) uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAssist;

impl<S: Skeleton> Assist<S> for NoAssist {
    type Channel = ();
    type WorkerSide = ();
    const ENABLED: bool = false;

    #[inline(always)]
    fn channel(&self, _: &WorkerInfo, _: Option<HelperPlace>) {}
    #[inline(always)]
    fn worker_start(&self, _: &()) {}
    #[inline(always)]
    fn worker_end(&self, _: &(), _: ()) {}
    fn helper(&self, _: &(), _: &S, _: &S::Shared, _: &WorkerInfo) {}
    #[inline(always)]
    fn handoff(&self, _: &(), _: &mut (), _: Option<&S::Unit>) {}
    #[inline(always)]
    fn finish(&self, _: &()) {}
    fn figures(&self, _: ()) -> ChannelFigures {
        ChannelFigures::default()
    }
}
