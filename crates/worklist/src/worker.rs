//! One worker's part of a run, split as rayon-core's worker loop is: set
//! its policy and init; then, until the run is done, find work, run the
//! unit, or idle; then update and destroy. What watches each unit (the time
//! breakdown's clock, the SkelAff switch, the affinity counts, the helper's
//! hand-off, the access sampler) is behind one trait,
//! [`UnitObserver`](crate::observe::UnitObserver).

use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;
use skelaff_stm::{Assisted, Mode, Plain, Sampled, SampledAssisted, Solo, Stats, atomically_with};

use crate::assist::Assist;
use crate::config::PagePolicy;
use crate::observe::{
    AccessSampling, AffinityCount, HelperLink, Observers, SkelAffSwitch, Timed, Timing, TurnClock, UnitObserver,
    Untimed,
};
use crate::page_policy;
use crate::pool::WorkerQueue;
use crate::report::time::{self, Turn};
use crate::report::{Decision, WorkerReport};
use crate::run_state::{Hold, RunState};
use crate::skeleton::{ProcessCtx, Skeleton, WorkerInfo};

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
    let cfg = state.settings.stm;
    match (state.settings.access_profile.is_some(), state.settings.assisted) {
        (false, false) if state.settings.solo => match skelaff_stm::solo::enter() {
            Ok(gate) => {
                state.decide(Some(info.index), Decision::Solo);
                let r = worker_in(state, &cfg.mode::<Solo>(), info, queue, assist, channel, assisted);
                if gate.given_back() {
                    state.decide(Some(info.index), Decision::SoloGivenBack);
                }
                r
            }
            Err(e) => {
                state.decide(Some(info.index), Decision::SoloRefused { reason: e.to_string() });
                worker_in(state, &cfg.mode::<Plain>(), info, queue, assist, channel, assisted)
            }
        },
        (false, false) => worker_in(state, &cfg.mode::<Plain>(), info, queue, assist, channel, assisted),
        (true, false) => worker_in(state, &cfg.mode::<Sampled>(), info, queue, assist, channel, assisted),
        (false, true) => worker_in(state, &cfg.mode::<Assisted>(), info, queue, assist, channel, assisted),
        (true, true) => worker_in(state, &cfg.mode::<SampledAssisted>(), info, queue, assist, channel, assisted),
    }
}

/// The worker thread's clock policy for the run; its own back when dropped
/// (the thread is the pool's, and outlives the run).
struct ThreadClock(skelaff_stm::ClockPolicy);

impl ThreadClock {
    fn set(policy: skelaff_stm::ClockPolicy) -> Self {
        ThreadClock(skelaff_stm::set_thread_clock(policy))
    }
}

impl Drop for ThreadClock {
    fn drop(&mut self) {
        skelaff_stm::set_thread_clock(self.0);
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
    let settings = &state.settings;
    let _clock = ThreadClock::set(settings.clock);
    page_policy::set_worker_policy(page_policy::initial_policy(
        settings.policy,
        &info,
        settings.allowed_nodes,
        settings.page_size,
    ))?;
    let assisted = A::ENABLED && assisted;
    let helper = HelperLink { assist, channel, side: assist.worker_start(channel), assisted };
    let skelaff = SkelAffSwitch::new(state, info);
    let _ = Stats::take_thread();
    let user = state.skeleton().init_worker(state.shared(), &info);
    let sampler = AccessSampling::start(state, &info);
    let affinity = AffinityCount::new(state, info);
    let mut w = Worker {
        state,
        stm,
        info,
        queue,
        user,
        ctx: ProcessCtx::new(info),
        ahead: None,
        observers: Observers { helper, skelaff, affinity, sampler },
        timing: Timing::new(),
        units: 0,
        idle: Duration::ZERO,
        finished: 0,
        backoff: Backoff::new(),
    };
    let begin = Instant::now();
    w.run()?;
    let total = begin.elapsed();
    let looped = Instant::now();
    let Worker { mut user, units, idle, observers, timing, .. } = w;
    if !state.signal.stopped() {
        atomically_with(stm, |tx| state.skeleton().update(tx, &mut user, state.shared()));
    }
    let Observers { helper, affinity, sampler, .. } = observers;
    sampler.stop();
    assist.worker_end(channel, helper.side);
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
        affinity: affinity.figures,
        time: timing.clock.finish(units, busy, idle, setup),
    })
}

/// A worker in its unit loop.
struct Worker<'r, S: Skeleton, H: Hold<S>, A: Assist<S>, M: Mode> {
    state: &'r RunState<S, H>,
    stm: &'r skelaff_stm::Config<M>,
    info: WorkerInfo,
    queue: WorkerQueue<S::Unit>,
    user: S::PerWorker,
    ctx: ProcessCtx<S::Unit>,
    /// With a helper: the unit taken ahead and handed over (Fig. 6).
    ahead: Option<S::Unit>,
    observers: Observers<'r, S, H, A>,
    /// Which turns are timed, and the timed turns' sums.
    timing: Timing,
    /// Units committed.
    units: u64,
    /// Time spent waiting with nothing to take.
    idle: Duration,
    /// Units finished since this worker last ran dry (see [`Worker::idle`]).
    finished: usize,
    backoff: Backoff,
}

impl<S: Skeleton, H: Hold<S>, A: Assist<S>, M: Mode> Worker<'_, S, H, A, M> {
    /// Finds work and runs it, or idles, until the run is done or stopped.
    fn run(&mut self) -> Result<(), skelaff_numa_alloc::Error> {
        loop {
            if self.state.signal.stopped() {
                return Ok(());
            }
            self.observers.looking(self.units);
            // One check a turn for the clock: the turn runs with a clock
            // or with none (see `TurnClock`).
            let found = if self.timing.timed(self.units) {
                let mut turn = Turn::starting(time::now());
                let found = self.turn(&mut turn)?;
                if found {
                    self.timing.add(&turn);
                }
                found
            } else {
                self.turn(&mut Untimed)?
            };
            if !found && !self.idle() {
                return Ok(());
            }
        }
    }

    /// One turn: find a unit and run it, timed by `clock`. Whether a unit
    /// was found.
    #[inline(always)]
    fn turn<C: TurnClock>(&mut self, clock: &mut C) -> Result<bool, skelaff_numa_alloc::Error> {
        match self.find_work() {
            Some(unit) => {
                self.run_unit(unit, clock)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The next unit: the one taken ahead for the helper, or one from the
    /// pool (this worker's queue first, then stealing). Without helpers
    /// (`A::ENABLED` false, a constant) nothing is ever taken ahead, and
    /// the loop does not look.
    #[inline]
    fn find_work(&mut self) -> Option<S::Unit> {
        if A::ENABLED {
            if let Some(u) = self.ahead.take() {
                return Some(u);
            }
        }
        self.state.pool.take(&self.queue)
    }

    /// One unit's turn: hand-off and the observers, its transaction, its
    /// new units published.
    #[inline(always)]
    fn run_unit<C: TurnClock>(&mut self, unit: S::Unit, clock: &mut C) -> Result<(), skelaff_numa_alloc::Error> {
        let Worker { state, stm, info, queue, user, ctx, ahead, observers, units, finished, backoff, .. } = self;
        let (state, stm) = (*state, *stm);
        let mut obs = Timed { inner: observers, clock };
        obs.found();
        backoff.reset();
        if obs.inner.helper.on() {
            // Take one more and hand it over; the first time this makes two.
            *ahead = state.pool.take(queue);
        }
        obs.before(&unit, ahead.as_ref())?;
        // A unit a helper's tuner samples runs in sampled mode; every other
        // unit in the run's own mode.
        if !M::SAMPLED && obs.inner.helper.sampled() {
            transaction(state, &stm.sampled(), &unit, user, ctx, &mut obs);
        } else {
            transaction(state, stm, &unit, user, ctx, &mut obs);
        }
        obs.transaction_done();
        state.skeleton().committed(&unit, user, state.shared());
        *units += 1;
        obs.committed();
        publish(state, *info, queue, ctx, &mut obs.inner.affinity.resolver, finished);
        obs.published();
        // Finished units are counted here and subtracted from the shared
        // count only when this worker runs dry: holding them back keeps
        // `pending` high, never low, so the run cannot end early, and the
        // busy path touches no shared counter.
        *finished += 1;
        obs.turn_ended();
        Ok(())
    }

    /// Nothing to take: hand back the units finished meanwhile, end when
    /// the run is done, or wait (spin, then park until a unit is
    /// published). Whether to look for work again.
    ///
    /// Parking: the worker announces itself as a sleeper, notes the epoch,
    /// and looks at the pool once more; a publisher that pushed before the
    /// announcement is seen by that look, and one that pushed after sees
    /// the sleeper and moves the epoch ([`Signal::published`]: both sides
    /// order their write before their read with a `SeqCst` fence, so at
    /// least one sees the other). The busy path (a unit found at once)
    /// reads no epoch, and a publisher with no sleeper writes none: with
    /// two workers doing either at every unit, the epoch's cache line
    /// moved between their cores at every turn (intruder at 2 workers:
    /// 0.82 of the time without the per-turn read, same run).
    fn idle(&mut self) -> bool {
        let signal = &self.state.signal;
        if self.finished > 0 {
            signal.finish_many(self.finished);
            self.finished = 0;
            return true;
        }
        if signal.done() {
            return false;
        }
        self.observers.idle();
        let t = Instant::now();
        if self.backoff.is_completed() {
            signal.announce();
            let seen = signal.epoch();
            if self.state.pool.has_work() || signal.done() || signal.stopped() {
                signal.withdraw();
            } else {
                signal.sleep(seen);
            }
        } else {
            self.backoff.snooze();
        }
        self.idle += t.elapsed();
        true
    }
}

/// Runs `process` for `unit` as one transaction in mode `N`, the observers
/// told of each attempt.
#[inline(always)]
fn transaction<S: Skeleton, H: Hold<S>, N: Mode, O: UnitObserver<S::Unit>>(
    state: &RunState<S, H>,
    stm: &skelaff_stm::Config<N>,
    unit: &S::Unit,
    user: &mut S::PerWorker,
    ctx: &mut ProcessCtx<S::Unit>,
    observers: &mut O,
) {
    let mut attempt = 0u32;
    atomically_with(stm, |tx| {
        ctx.clear();
        observers.attempt(attempt);
        attempt += 1;
        let r = state.skeleton().process(tx, unit, user, state.shared(), ctx);
        observers.returned();
        r
    });
}

/// Hands the units the transaction made to the pool, waking idle workers;
/// under SkelAff, the first generated units raise the switch to bind
/// (before they are published). With affinity, `resolver` routes them.
#[inline(always)]
fn publish<S: Skeleton, H: Hold<S>>(
    state: &RunState<S, H>,
    info: WorkerInfo,
    queue: &WorkerQueue<S::Unit>,
    ctx: &mut ProcessCtx<S::Unit>,
    resolver: &mut crate::affinity::Resolver,
    finished: &mut usize,
) {
    let n = ctx.units.len();
    if n == 0 {
        return;
    }
    if state.settings.policy == PagePolicy::Auto && !state.raise_generating() {
        state.decide(Some(info.index), Decision::WorkersGenerate);
    }
    // Count the new units as pending before anyone can take them. Units
    // this worker finished and has not handed back (`finished`) are still
    // counted in `pending`: the new units take their place first, and only
    // the rest is added. `pending` stays the units not finished plus those
    // held back, so it reaches zero only when every unit is finished and
    // every worker has handed its count back, and a worker that publishes
    // while it holds finished units touches no shared counter.
    let covered = n.min(*finished);
    *finished -= covered;
    if n > covered {
        state.signal.add(n - covered);
    }
    if state.settings.affinity {
        state.pool.push_routed(queue, ctx.units.drain(..), |u| state.home_queue(resolver, u));
    } else {
        state.pool.push(queue, ctx.units.drain(..));
    }
    state.signal.published();
}
