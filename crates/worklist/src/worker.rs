//! One worker's life (set its policy, init, the unit loop, update,
//! destroy), and the state every worker of a run reaches.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;
use parking_lot::Mutex;
use skelaff_locality::Sampling;
use skelaff_numa_alloc::{NodeSet, Policy};
use skelaff_stm::{Assisted, Mode, Plain, Sampled, SampledAssisted, Stats, atomically_with};

use crate::access_profile::{FinishedSampler, WorkerSampler};
use crate::affinity::{AffinityFigures, Home, Resolver};
use crate::assist::Assist;
use crate::config::PagePolicy;
use crate::moves::PageMover;
use crate::page_policy;
use crate::pool::{Pool, Signal, WorkerQueue};
use crate::report::time::{self, Attempts, Turn, UnitClock};
use crate::report::{Decision, DecisionAt, WorkerReport};
use crate::skeleton::{ProcessCtx, Skeleton, WorkerInfo};

/// The skeleton or its data, as a [`Worklist`](crate::Worklist) keeps
/// them: borrowed ([`Builder::build`](crate::Builder::build)) or shared
/// with the caller ([`Builder::build_owned`](crate::Builder::build_owned)).
pub(crate) enum Held<'a, T> {
    Borrowed(&'a T),
    Owned(Arc<T>),
}

impl<T> Clone for Held<'_, T> {
    fn clone(&self) -> Self {
        match self {
            Held::Borrowed(r) => Held::Borrowed(r),
            Held::Owned(a) => Held::Owned(a.clone()),
        }
    }
}

impl<T> Deref for Held<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        match self {
            Held::Borrowed(r) => r,
            Held::Owned(a) => a,
        }
    }
}

/// How a run reaches the skeleton and its shared data: borrowed for a run
/// its caller waits for ([`Borrowed`]), or kept alive by the run itself
/// for one it does not ([`Kept`], an awaited run).
pub(crate) trait Hold<S: Skeleton>: Sync {
    fn skeleton(&self) -> &S;
    fn shared(&self) -> &S::Shared;
}

/// The skeleton and its data, borrowed for the run.
pub(crate) struct Borrowed<'a, S: Skeleton>(pub(crate) &'a S, pub(crate) &'a S::Shared);

impl<S: Skeleton> Hold<S> for Borrowed<'_, S> {
    #[inline]
    fn skeleton(&self) -> &S {
        self.0
    }
    #[inline]
    fn shared(&self) -> &S::Shared {
        self.1
    }
}

/// The skeleton and its data kept alive by the run (`'static` borrows or
/// shared ownership), for a run that may outlive its caller's frame.
pub(crate) struct Kept<S: Skeleton + 'static>(pub(crate) Held<'static, S>, pub(crate) Held<'static, S::Shared>);

impl<S: Skeleton + Send + 'static> Hold<S> for Kept<S>
where
    S::Shared: Send,
{
    #[inline]
    fn skeleton(&self) -> &S {
        &self.0
    }
    #[inline]
    fn shared(&self) -> &S::Shared {
        &self.1
    }
}

/// What every worker (and helper) of a run reaches.
pub(crate) struct RunState<S: Skeleton, H: Hold<S>> {
    pub(crate) data: H,
    pub(crate) _skeleton: std::marker::PhantomData<fn() -> S>,
    pub(crate) pool: Pool<S::Unit>,
    pub(crate) signal: Signal,
    pub(crate) start: Instant,
    /// The STM settings; the mode of the workers' transactions follows
    /// from `assisted` and `access_profile` (see [`worker`]).
    pub(crate) stm: skelaff_stm::Config,
    /// The workers' transactions are assisted.
    pub(crate) assisted: bool,
    pub(crate) policy: PagePolicy,
    pub(crate) allowed_nodes: NodeSet,
    pub(crate) page_size: usize,
    /// Raised (SkelAff) once a worker's transaction generated units.
    pub(crate) generating: AtomicBool,
    pub(crate) decisions: Mutex<Vec<DecisionAt>>,
    /// The first failure of a worker: (worker, message).
    pub(crate) failure: Mutex<Option<(Option<usize>, String)>>,
    /// Sample each worker's accesses this way (`None`: no profile).
    pub(crate) access_profile: Option<Sampling>,
    /// The workers' recorders, as each stops.
    pub(crate) samplers: Mutex<Vec<FinishedSampler>>,
    /// Queue units on their data's node ([`Skeleton::affinity`]).
    pub(crate) affinity: bool,
    /// What moves the pages as the run goes (a migration rule's thread,
    /// the applied oracle), when something does.
    pub(crate) mover: Option<Arc<dyn PageMover>>,
}

impl<S: Skeleton, H: Hold<S>> RunState<S, H> {
    /// The skeleton.
    #[inline]
    pub(crate) fn skeleton(&self) -> &S {
        self.data.skeleton()
    }

    /// Its shared data.
    #[inline]
    pub(crate) fn shared(&self) -> &S::Shared {
        self.data.shared()
    }

    /// Records a decision about `worker` (or the whole run), timed from the start.
    pub(crate) fn decide(&self, worker: Option<usize>, decision: Decision) {
        self.decisions.lock().push(DecisionAt { at: self.start.elapsed(), worker, decision });
    }

    /// The queue of the node `unit`'s data is on, when affinity scheduling
    /// names one.
    pub(crate) fn home_queue(&self, resolver: &mut Resolver, unit: &S::Unit) -> Option<usize> {
        match resolver.home(self.skeleton().affinity(unit, self.shared())) {
            Home::Node(n) => self.pool.queue_of(n),
            Home::Anywhere | Home::Unresolved => None,
        }
    }

    /// Records the first failure and stops every worker.
    pub(crate) fn fail(&self, worker: Option<usize>, message: String) {
        self.failure.lock().get_or_insert((worker, message));
        self.signal.stop();
    }
}

/// Calls [`Assist::finish`] when dropped: the worker's way out, unwinding included.
pub(crate) struct Finish<'l, S: Skeleton, A: Assist<S>> {
    pub(crate) assist: &'l A,
    pub(crate) channel: &'l A::Channel,
}

impl<S: Skeleton, A: Assist<S>> Drop for Finish<'_, S, A> {
    fn drop(&mut self) {
        self.assist.finish(self.channel);
    }
}

/// One worker's life: set the policy, init, loop, update, destroy. The
/// thread is already pinned (created under its CPU's mask).
///
/// With `assisted` (only when `A::ENABLED`), the loop is Fig. 6's: the
/// worker holds the next unit besides the current one and tells its helper
/// through `assist`; otherwise it is the plain loop (`A::ENABLED` is a
/// constant, so `run()` compiles without any of it).
///
/// The worker's transactions run in the STM mode of the run: sampled when
/// the run records an access profile, assisted with assisted validation.
/// The choice is made here, once per worker, so that a plain run's
/// transactional accesses carry no sampling or assist code.
pub(crate) fn worker<S: Skeleton, H: Hold<S>, A: Assist<S>>(
    state: &RunState<S, H>,
    info: WorkerInfo,
    queue: WorkerQueue<S::Unit>,
    assist: &A,
    channel: &A::Channel,
    assisted: bool,
) -> Result<WorkerReport, skelaff_numa_alloc::Error> {
    let cfg = state.stm;
    match (state.access_profile.is_some(), state.assisted) {
        (false, false) => worker_in(state, &cfg.mode::<Plain>(), info, queue, assist, channel, assisted),
        (true, false) => worker_in(state, &cfg.mode::<Sampled>(), info, queue, assist, channel, assisted),
        (false, true) => worker_in(state, &cfg.mode::<Assisted>(), info, queue, assist, channel, assisted),
        (true, true) => worker_in(state, &cfg.mode::<SampledAssisted>(), info, queue, assist, channel, assisted),
    }
}

/// [`worker`] with its transactions in mode `M`.
fn worker_in<S: Skeleton, H: Hold<S>, A: Assist<S>, M: Mode>(
    state: &RunState<S, H>,
    stm: &skelaff_stm::Config<M>,
    info: WorkerInfo,
    queue: WorkerQueue<S::Unit>,
    assist: &A,
    channel: &A::Channel,
    assisted: bool,
) -> Result<WorkerReport, skelaff_numa_alloc::Error> {
    let entered = Instant::now();
    page_policy::set_worker_policy(page_policy::initial_policy(
        state.policy,
        &info,
        state.allowed_nodes,
        state.page_size,
    ))?;
    let assisted = A::ENABLED && assisted;
    let mut side = assist.worker_start(channel);
    let mut switched = state.policy != PagePolicy::Auto;
    let _ = Stats::take_thread();
    let mut user = state.skeleton().init_worker(state.shared(), &info);
    let mut ctx = ProcessCtx::new(info);
    let mut sampler = match state.access_profile {
        Some(s) => match WorkerSampler::start(s, info.index, page_policy::bind_node(&info), state.mover.clone()) {
            Ok(w) => Some(w),
            Err(e) => {
                state.fail(Some(info.index), e);
                None
            }
        },
        None => None,
    };
    let affinity_on = state.affinity;
    let mut resolver = Resolver::new(state.page_size);
    let mut affinity = AffinityFigures::default();
    let mut units = 0u64;
    let mut idle = Duration::ZERO;
    let mut clock = UnitClock::default();
    let sample = time::Sampler::new();
    let begin = Instant::now();
    let backoff = Backoff::new();
    let mut finished = 0usize;
    // With a helper: the unit taken ahead and handed over (Fig. 6).
    let mut ahead: Option<S::Unit> = None;
    loop {
        if state.signal.stopped() {
            break;
        }
        // Note the epoch before looking: a unit published after this
        // moves it, so the wait below cannot miss it.
        let epoch = state.signal.epoch();
        // One unit in `time::TIME_EVERY` is timed phase by phase.
        let timing = sample.timed(units);
        let take = if timing { Some(Instant::now()) } else { None };
        let taken = match ahead.take() {
            Some(u) => Some(u),
            None => state.pool.take(&queue),
        };
        if let Some(unit) = taken {
            let taken_at = take.map(|_| Instant::now());
            backoff.reset();
            if assisted {
                // Take one more and hand it over; the first time this makes two.
                ahead = state.pool.take(&queue);
                assist.handoff(channel, &mut side, ahead.as_ref());
            }
            // Checked after taking the unit: the flag is raised before any
            // generated unit is published, so a generated unit is always
            // processed under bind.
            if !switched && state.generating.load(Ordering::Acquire) {
                let node = page_policy::bind_node(&info);
                page_policy::set_worker_policy(Policy::Bind(NodeSet::try_single(node).unwrap_or_default()))?;
                state.decide(Some(info.index), Decision::BoundToNode { node });
                switched = true;
            }
            if affinity_on {
                match resolver.home(state.skeleton().affinity(&unit, state.shared())) {
                    Home::Node(n) => {
                        affinity.hinted += 1;
                        affinity.on_home += u64::from(info.node == Some(n));
                    }
                    Home::Unresolved => affinity.unresolved += 1,
                    Home::Anywhere => {}
                }
            }
            let tx_at = take.map(|_| Instant::now());
            let mut attempts = take.map(|_| Attempts::new());
            // A unit a helper's tuner samples runs in sampled mode; every
            // other unit in the run's own mode.
            let sampled = assisted && !M::SAMPLED && assist.sampled(&side);
            let link = (assist, channel, &mut side, assisted);
            if sampled {
                process_unit(state, &stm.sampled(), &unit, &mut user, &mut ctx, link, attempts.as_mut());
            } else {
                process_unit(state, stm, &unit, &mut user, &mut ctx, link, attempts.as_mut());
            }
            let done_at = take.map(|_| Instant::now());
            state.skeleton().committed(&unit, &mut user, state.shared());
            if assisted {
                assist.committed(channel, &mut side);
            }
            units += 1;
            let push_at = take.map(|_| Instant::now());
            let n = ctx.units.len();
            if n > 0 {
                if state.policy == PagePolicy::Auto && !state.generating.swap(true, Ordering::Release) {
                    state.decide(Some(info.index), Decision::WorkersGenerate);
                }
                state.signal.add(n);
                if affinity_on {
                    state.pool.push_routed(&queue, ctx.units.drain(..), |u| state.home_queue(&mut resolver, u));
                } else {
                    state.pool.push(&queue, ctx.units.drain(..));
                }
                state.signal.wake();
            }
            let pushed_at = take.map(|_| Instant::now());
            // After the new units are out: a worker the applied oracle
            // holds here keeps none back from the others.
            if let Some(s) = &mut sampler {
                s.unit_done(|| state.start.elapsed(), state.page_size);
            }
            // Finished units are counted here and subtracted from the
            // shared count only when this worker runs dry: holding them back
            // keeps `pending` high, never low, so the run cannot end early,
            // and the busy path touches no shared counter.
            finished += 1;
            if let (Some(take), Some(taken), Some(tx), Some(attempts), Some(done), Some(push), Some(pushed)) =
                (take, taken_at, tx_at, attempts, done_at, push_at, pushed_at)
            {
                clock.add(&Turn { take, taken, tx, attempts, done, push, pushed, end: Instant::now() });
            }
            continue;
        }
        if finished > 0 {
            state.signal.finish_many(finished);
            finished = 0;
            continue;
        }
        if state.signal.done() {
            break;
        }
        if let Some(s) = &mut sampler {
            s.idle(|| state.start.elapsed(), state.page_size);
        }
        let t = Instant::now();
        if backoff.is_completed() {
            state.signal.wait(epoch);
        } else {
            backoff.snooze();
        }
        idle += t.elapsed();
    }
    let total = begin.elapsed();
    let looped = Instant::now();
    if !state.signal.stopped() {
        atomically_with(stm, |tx| state.skeleton().update(tx, &mut user, state.shared()));
    }
    if let Some(s) = sampler {
        let finished = s.stop(|| state.start.elapsed(), state.page_size);
        state.samplers.lock().push(finished);
    }
    assist.worker_end(channel, side);
    state.skeleton().destroy_worker(user, state.shared());
    let busy = total.saturating_sub(idle);
    let setup = (begin - entered) + looped.elapsed();
    Ok(WorkerReport {
        index: info.index,
        cpu: info.cpu,
        node: info.node,
        units,
        stats: Stats::take_thread(),
        busy,
        idle,
        affinity,
        time: clock.finish(units, busy, idle, setup),
    })
}

/// Runs `process` for `unit` as one transaction in mode `M`, telling the
/// helper (`link`: the assist, its channel, the worker's side of it, and
/// whether the worker is assisted) when the transaction runs again.
fn process_unit<S: Skeleton, H: Hold<S>, A: Assist<S>, M: Mode>(
    state: &RunState<S, H>,
    stm: &skelaff_stm::Config<M>,
    unit: &S::Unit,
    user: &mut S::PerWorker,
    ctx: &mut ProcessCtx<S::Unit>,
    (assist, channel, side, assisted): (&A, &A::Channel, &mut A::WorkerSide, bool),
    mut timed: Option<&mut Attempts>,
) {
    let mut attempt = 0u32;
    atomically_with(stm, |tx| {
        if assisted && attempt > 0 {
            assist.restarted(channel, side);
        }
        attempt += 1;
        ctx.clear();
        if let Some(t) = timed.as_deref_mut() {
            t.start();
        }
        let r = state.skeleton().process(tx, unit, user, state.shared(), ctx);
        if let Some(t) = timed.as_deref_mut() {
            t.returned();
        }
        r
    });
}
