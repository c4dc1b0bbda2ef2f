//! What watches each unit a worker runs, behind one trait: the SkelAff
//! switch to bind, the affinity counts, the helper's hand-off, the access
//! sampler, and, around them all, the clock of the time breakdown.
//!
//! A unit's turn, and the hooks called at its points:
//!
//! ```text
//! looking(units)             before the worker looks for work
//!   take a unit                                       (pool)
//! found()                    a unit in hand
//!   take the next one (with a helper)                 (other)
//! before(unit, next)         hand-off, SkelAff switch, affinity count
//!   transaction:
//!     attempt(n)             each attempt (the helper hears of restarts)
//!       process                                       (aborted, process)
//!     returned()
//!     commit                                          (commit)
//! transaction_done()
//!   Skeleton::committed                               (other)
//! committed()                the helper hears of the commit
//!   new units to the pool                             (pool)
//! published()
//! turn_ended()               the access sampler's drain and checkpoint
//! idle()                     (instead, when nothing was found)
//! ```
//!
//! The right column is the part of the [`TimeBreakdown`](crate::TimeBreakdown)
//! each stretch is charged to: for a timed turn, [`Timed`] wraps the other
//! observers and reads the clock at the points, so the time they take is
//! "other", as it was when these were written inline.

use std::sync::atomic::Ordering;

use skelaff_numa_alloc::{NodeSet, Policy};

use crate::access_profile::WorkerSampler;
use crate::affinity::{AffinityFigures, Home, Resolver};
use crate::assist::Assist;
use crate::config::PagePolicy;
use crate::page_policy;
use crate::report::Decision;
use crate::report::time::{self, Attempts, Turn, UnitClock};
use crate::run_state::{Cause, Hold, RunState};
use crate::skeleton::{Skeleton, WorkerInfo};

/// Watches the units of one worker, at the points of each unit's turn (see
/// the [module](self) docs). Every hook defaults to nothing.
pub(crate) trait UnitObserver<U> {
    /// The worker looks for work, `units` units committed so far.
    #[inline(always)]
    fn looking(&mut self, units: u64) {
        let _ = units;
    }

    /// It found a unit.
    #[inline(always)]
    fn found(&mut self) {}

    /// Before `unit`'s transaction; `next` is the unit taken ahead and
    /// handed to the helper, if the worker has one.
    ///
    /// # Errors
    ///
    /// The page policy could not be set.
    #[inline(always)]
    fn before(&mut self, unit: &U, next: Option<&U>) -> Result<(), skelaff_numa_alloc::Error> {
        let _ = (unit, next);
        Ok(())
    }

    /// An attempt of the transaction starts (0: the first).
    #[inline(always)]
    fn attempt(&mut self, attempt: u32) {
        let _ = attempt;
    }

    /// The attempt's `process` returned.
    #[inline(always)]
    fn returned(&mut self) {}

    /// The transaction committed.
    #[inline(always)]
    fn transaction_done(&mut self) {}

    /// [`Skeleton::committed`] ran.
    #[inline(always)]
    fn committed(&mut self) {}

    /// The units the transaction made are in the pool.
    #[inline(always)]
    fn published(&mut self) {}

    /// The unit's turn is over.
    #[inline(always)]
    fn turn_ended(&mut self) {}

    /// The worker found nothing to run and is about to wait.
    #[inline(always)]
    fn idle(&mut self) {}
}

/// The clock of one unit's turn: the moments the time breakdown needs, or
/// nothing. The worker decides once per turn whether the turn is timed (one
/// in [`TIME_EVERY`](crate::TIME_EVERY)) and runs the turn with a [`Turn`]
/// or with [`Untimed`], so an untimed turn has no clock code at all, not a
/// check at every point (eight checks a unit, counted under callgrind).
pub(crate) trait TurnClock {
    /// A unit in hand.
    fn taken(&mut self);
    /// Its transaction starts.
    fn tx(&mut self);
    /// An attempt starts.
    fn attempt(&mut self);
    /// The attempt's `process` returned.
    fn returned(&mut self);
    /// The transaction committed.
    fn done(&mut self);
    /// Its new units are about to go to the pool.
    fn push(&mut self);
    /// They are in the pool.
    fn pushed(&mut self);
    /// The turn is over.
    fn end(&mut self);
}

/// An untimed turn: no clock.
pub(crate) struct Untimed;

impl TurnClock for Untimed {
    #[inline(always)]
    fn taken(&mut self) {}
    #[inline(always)]
    fn tx(&mut self) {}
    #[inline(always)]
    fn attempt(&mut self) {}
    #[inline(always)]
    fn returned(&mut self) {}
    #[inline(always)]
    fn done(&mut self) {}
    #[inline(always)]
    fn push(&mut self) {}
    #[inline(always)]
    fn pushed(&mut self) {}
    #[inline(always)]
    fn end(&mut self) {}
}

impl TurnClock for Turn {
    #[inline(always)]
    fn taken(&mut self) {
        self.taken = time::now();
    }
    #[inline(always)]
    fn tx(&mut self) {
        let now = time::now();
        self.tx = now;
        self.attempts = Attempts::at(now);
    }
    #[inline(always)]
    fn attempt(&mut self) {
        self.attempts.start();
    }
    #[inline(always)]
    fn returned(&mut self) {
        self.attempts.returned();
    }
    #[inline(always)]
    fn done(&mut self) {
        self.done = time::now();
    }
    #[inline(always)]
    fn push(&mut self) {
        self.push = time::now();
    }
    #[inline(always)]
    fn pushed(&mut self) {
        self.pushed = time::now();
    }
    #[inline(always)]
    fn end(&mut self) {
        self.end = time::now();
    }
}

/// One turn's clock around the other observers: it reads the clock at the
/// points so that the time they take is "other", as it was when these were
/// written inline. Made for each turn over the worker's observers.
pub(crate) struct Timed<'a, O, C> {
    pub(crate) inner: &'a mut O,
    pub(crate) clock: &'a mut C,
}

impl<U, O: UnitObserver<U>, C: TurnClock> UnitObserver<U> for Timed<'_, O, C> {
    #[inline(always)]
    fn looking(&mut self, units: u64) {
        self.inner.looking(units);
    }

    #[inline(always)]
    fn found(&mut self) {
        self.clock.taken();
        self.inner.found();
    }

    #[inline(always)]
    fn before(&mut self, unit: &U, next: Option<&U>) -> Result<(), skelaff_numa_alloc::Error> {
        self.inner.before(unit, next)?;
        self.clock.tx();
        Ok(())
    }

    #[inline(always)]
    fn attempt(&mut self, attempt: u32) {
        self.inner.attempt(attempt);
        self.clock.attempt();
    }

    #[inline(always)]
    fn returned(&mut self) {
        self.clock.returned();
        self.inner.returned();
    }

    #[inline(always)]
    fn transaction_done(&mut self) {
        self.clock.done();
        self.inner.transaction_done();
    }

    #[inline(always)]
    fn committed(&mut self) {
        self.inner.committed();
        self.clock.push();
    }

    #[inline(always)]
    fn published(&mut self) {
        self.clock.pushed();
        self.inner.published();
    }

    #[inline(always)]
    fn turn_ended(&mut self) {
        self.inner.turn_ended();
        self.clock.end();
    }

    #[inline(always)]
    fn idle(&mut self) {
        self.inner.idle();
    }
}

/// Which of a worker's turns are timed, and the timed turns' sums.
pub(crate) struct Timing {
    which: time::Sampler,
    pub(crate) clock: UnitClock,
}

impl Timing {
    pub(crate) fn new() -> Self {
        Timing { which: time::Sampler::new(), clock: UnitClock::default() }
    }

    /// Whether the turn that starts after `units` committed units is timed.
    #[inline(always)]
    pub(crate) fn timed(&self, units: u64) -> bool {
        self.which.timed(units)
    }

    /// Adds a timed turn that ran a unit, and chooses the next one.
    pub(crate) fn add(&mut self, turn: &time::Turn) {
        let weight = self.which.committed();
        self.clock.add(turn, weight);
    }
}

/// A worker's observers but the clock, called in this order at each point.
pub(crate) struct Observers<'r, S: Skeleton, H: Hold<S>, A: Assist<S>> {
    pub(crate) helper: HelperLink<'r, S, A>,
    pub(crate) skelaff: SkelAffSwitch<'r, S, H>,
    pub(crate) affinity: AffinityCount<'r, S, H>,
    pub(crate) sampler: AccessSampling<'r, S, H>,
}

impl<S: Skeleton, H: Hold<S>, A: Assist<S>> UnitObserver<S::Unit> for Observers<'_, S, H, A> {
    #[inline(always)]
    fn before(&mut self, unit: &S::Unit, next: Option<&S::Unit>) -> Result<(), skelaff_numa_alloc::Error> {
        self.helper.before(unit, next)?;
        self.skelaff.before(unit, next)?;
        self.affinity.before(unit, next)
    }

    #[inline(always)]
    fn attempt(&mut self, attempt: u32) {
        self.helper.attempt(attempt);
    }

    #[inline(always)]
    fn committed(&mut self) {
        self.helper.committed();
    }

    #[inline(always)]
    fn turn_ended(&mut self) {
        self.sampler.turn_ended();
    }

    #[inline(always)]
    fn idle(&mut self) {
        self.sampler.idle();
    }
}

/// The worker's side of its helper (paper §4.2, Fig. 6): the hand-off of
/// the next unit, restarts and commits.
pub(crate) struct HelperLink<'r, S: Skeleton, A: Assist<S>> {
    pub(crate) assist: &'r A,
    pub(crate) channel: &'r A::Channel,
    pub(crate) side: A::WorkerSide,
    /// The worker has a helper (only when `A::ENABLED`).
    pub(crate) assisted: bool,
}

impl<S: Skeleton, A: Assist<S>> HelperLink<'_, S, A> {
    /// Whether the worker has a helper: `false` at compile time without
    /// helpers ([`NoAssist`](crate::NoAssist)), so that the plain loop
    /// has no check of it.
    #[inline(always)]
    pub(crate) fn on(&self) -> bool {
        A::ENABLED && self.assisted
    }

    /// Whether the current unit's transaction must run sampled for the
    /// helper's tuner.
    #[inline]
    pub(crate) fn sampled(&self) -> bool {
        self.on() && self.assist.sampled(&self.side)
    }
}

impl<S: Skeleton, A: Assist<S>> UnitObserver<S::Unit> for HelperLink<'_, S, A> {
    #[inline]
    fn before(&mut self, _: &S::Unit, next: Option<&S::Unit>) -> Result<(), skelaff_numa_alloc::Error> {
        if self.on() {
            self.assist.handoff(self.channel, &mut self.side, next);
        }
        Ok(())
    }

    #[inline]
    fn attempt(&mut self, attempt: u32) {
        if self.on() && attempt > 0 {
            self.assist.restarted(self.channel, &mut self.side);
        }
    }

    #[inline]
    fn committed(&mut self) {
        if self.on() {
            self.assist.committed(self.channel, &mut self.side);
        }
    }
}

/// SkelAff's switch: cyclic until the workers generate units, then each
/// worker binds its pages to its own node before its next unit.
pub(crate) struct SkelAffSwitch<'r, S: Skeleton, H: Hold<S>> {
    state: &'r RunState<S, H>,
    info: WorkerInfo,
    /// Bound already (or never switching: a policy other than auto).
    switched: bool,
}

impl<'r, S: Skeleton, H: Hold<S>> SkelAffSwitch<'r, S, H> {
    pub(crate) fn new(state: &'r RunState<S, H>, info: WorkerInfo) -> Self {
        SkelAffSwitch { state, info, switched: state.settings.policy != PagePolicy::Auto }
    }
}

impl<S: Skeleton, H: Hold<S>> UnitObserver<S::Unit> for SkelAffSwitch<'_, S, H> {
    /// Checked after taking the unit: the flag is raised before any
    /// generated unit is published, so a generated unit is always
    /// processed under bind.
    /// The check inlined into the worker's loop (every unit), the switch
    /// out of line (once per run).
    #[inline(always)]
    fn before(&mut self, _: &S::Unit, _: Option<&S::Unit>) -> Result<(), skelaff_numa_alloc::Error> {
        if !self.switched && self.state.generating.load(Ordering::Acquire) {
            return self.switch();
        }
        Ok(())
    }
}

impl<S: Skeleton, H: Hold<S>> SkelAffSwitch<'_, S, H> {
    #[cold]
    #[inline(never)]
    fn switch(&mut self) -> Result<(), skelaff_numa_alloc::Error> {
        let node = page_policy::bind_node(&self.info);
        page_policy::set_worker_policy(Policy::Bind(NodeSet::try_single(node).unwrap_or_default()))?;
        self.state.decide(Some(self.info.index), Decision::BoundToNode { node });
        self.switched = true;
        Ok(())
    }
}

/// Affinity scheduling's counts: units whose hint named a node, and of
/// those, the ones this worker's node held. Its resolver also routes the
/// units the worker publishes.
pub(crate) struct AffinityCount<'r, S: Skeleton, H: Hold<S>> {
    state: &'r RunState<S, H>,
    node: Option<usize>,
    /// The worker's index in the run, and the run's workers.
    index: usize,
    threads: usize,
    pub(crate) resolver: Resolver,
    pub(crate) figures: AffinityFigures,
}

impl<'r, S: Skeleton, H: Hold<S>> AffinityCount<'r, S, H> {
    pub(crate) fn new(state: &'r RunState<S, H>, info: WorkerInfo) -> Self {
        AffinityCount {
            state,
            node: info.node,
            index: info.index,
            threads: info.threads,
            resolver: Resolver::new(state.settings.page_size),
            figures: AffinityFigures::default(),
        }
    }
}

impl<S: Skeleton, H: Hold<S>> UnitObserver<S::Unit> for AffinityCount<'_, S, H> {
    #[inline]
    fn before(&mut self, unit: &S::Unit, _: Option<&S::Unit>) -> Result<(), skelaff_numa_alloc::Error> {
        if self.state.settings.affinity {
            match self.resolver.home(self.state.skeleton().affinity(unit, self.state.shared())) {
                Home::Node(n) => {
                    self.figures.hinted += 1;
                    self.figures.on_home += u64::from(self.node == Some(n));
                }
                Home::Worker(w) => {
                    self.figures.hinted += 1;
                    self.figures.on_home += u64::from(w % self.threads.max(1) == self.index);
                }
                Home::Unresolved => self.figures.unresolved += 1,
                Home::Anywhere => {}
            }
        }
        Ok(())
    }
}

/// The access sampler of a profiled run: drained every few units, and at
/// the mover's checkpoints (after the new units are out: a worker the
/// applied oracle holds there keeps none back from the others).
pub(crate) struct AccessSampling<'r, S: Skeleton, H: Hold<S>> {
    state: &'r RunState<S, H>,
    pub(crate) sampler: Option<WorkerSampler>,
}

impl<'r, S: Skeleton, H: Hold<S>> AccessSampling<'r, S, H> {
    /// Starts the worker's sampler when the run records a profile; a
    /// sampler that cannot start fails the run.
    pub(crate) fn start(state: &'r RunState<S, H>, info: &WorkerInfo) -> Self {
        let sampler = state.settings.access_profile.and_then(|s| {
            WorkerSampler::start(s, info.index, page_policy::bind_node(info), state.mover.clone())
                .map_err(|e| state.fail_with(Some(info.index), Cause::Sampler(e)))
                .ok()
        });
        AccessSampling { state, sampler }
    }

    /// Stops the sampler and hands its recorder to the run.
    pub(crate) fn stop(self) {
        if let Some(s) = self.sampler {
            let state = self.state;
            state.outcome.sampler_done(s.stop(|| state.start.elapsed(), state.settings.page_size));
        }
    }
}

impl<S: Skeleton, H: Hold<S>> UnitObserver<S::Unit> for AccessSampling<'_, S, H> {
    #[inline]
    fn turn_ended(&mut self) {
        if let Some(s) = &mut self.sampler {
            let state = self.state;
            s.unit_done(|| state.start.elapsed(), state.settings.page_size);
        }
    }

    #[inline]
    fn idle(&mut self) {
        if let Some(s) = &mut self.sampler {
            let state = self.state;
            s.idle(|| state.start.elapsed(), state.settings.page_size);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// An observer with a hook that takes time (in `before` or in
    /// `turn_ended`): what the clock must charge to "other", as it did when
    /// these hooks were written inline in the loop.
    struct Slow {
        in_before: bool,
    }

    const NAP: Duration = Duration::from_millis(4);

    impl UnitObserver<u32> for Slow {
        fn before(&mut self, _: &u32, _: Option<&u32>) -> Result<(), skelaff_numa_alloc::Error> {
            if self.in_before {
                std::thread::sleep(NAP);
            }
            Ok(())
        }

        fn turn_ended(&mut self) {
            if !self.in_before {
                std::thread::sleep(NAP);
            }
        }
    }

    #[test]
    fn the_clock_charges_its_observers_to_other_and_process_to_process() {
        for in_before in [true, false] {
            let mut slow = Slow { in_before };
            let mut timing = Timing::new();
            // Looked for work until a turn is timed (one in TIME_EVERY).
            let mut units = 0;
            while !timing.timed(units) {
                units += 1;
            }
            let mut turn = Turn::starting(time::now());
            let mut t = Timed { inner: &mut slow, clock: &mut turn };
            t.looking(units);
            t.found();
            t.before(&0, None).unwrap();
            t.attempt(0);
            std::thread::sleep(NAP); // `process`
            t.returned();
            t.transaction_done();
            t.committed();
            t.published();
            t.turn_ended();
            timing.add(&turn);
            // Shares of a busy time of one second: a raw part is its share x timed.
            let b = timing.clock.finish(1, Duration::from_secs(1), Duration::ZERO, Duration::ZERO);
            assert_eq!(b.timed_units, 1);
            let raw = |share: Duration| share.as_secs_f64() * b.timed.as_secs_f64();
            assert!(raw(b.other) >= NAP.as_secs_f64(), "in before: {in_before}: {b:?}");
            assert!(raw(b.process) >= NAP.as_secs_f64(), "in before: {in_before}: {b:?}");
            assert!(raw(b.pool) < NAP.as_secs_f64(), "in before: {in_before}: {b:?}");
        }
    }

    /// The units a worker times among its first `n`, each turn finding a unit.
    fn timed_among(n: u64) -> Vec<u64> {
        let mut timing = Timing::new();
        let mut timed = Vec::new();
        for u in 0..n {
            if timing.timed(u) {
                timed.push(u);
                timing.add(&Turn::starting(0));
            }
        }
        timed
    }

    #[test]
    fn one_turn_in_time_every_is_timed_then_one_in_time_every_later() {
        use crate::{TIME_DENSE_UNITS as DENSE, TIME_EVERY as EVERY, TIME_EVERY_LATER as LATER};
        assert_eq!(timed_among(EVERY * 4).len(), 4);
        for _ in 0..8 {
            let timed = timed_among(DENSE + 4 * LATER);
            assert_eq!(timed.len() as u64, DENSE / EVERY + 4, "{timed:?}");
            let offset = timed[0];
            assert!(offset < EVERY);
            let gaps: Vec<u64> = timed.windows(2).map(|w| w[1] - w[0]).collect();
            assert!(gaps[..(DENSE / EVERY) as usize].iter().all(|&g| g == EVERY), "{timed:?}");
            assert!(gaps[(DENSE / EVERY) as usize..].iter().all(|&g| g == LATER), "{timed:?}");
            assert_eq!(timed[(DENSE / EVERY) as usize], DENSE + offset);
        }
    }

    #[test]
    fn a_turn_timed_after_the_dense_stretch_weighs_as_the_units_it_stands_for() {
        // A turn of 100 ns spent in the pool, and one of 100 ns in `other`.
        let in_pool = |t: &mut Turn| t.taken = t.take + 100;
        let in_other = |t: &mut Turn| t.end = t.take + 100;
        let turn = |set: &dyn Fn(&mut Turn)| {
            let mut t = Turn::starting(1000);
            set(&mut t);
            t
        };
        let mut timing = Timing::new();
        timing.which = time::Sampler::at(0);
        timing.add(&turn(&in_pool));
        timing.which = time::Sampler::at(crate::TIME_DENSE_UNITS);
        timing.add(&turn(&in_other));
        let b = timing.clock.finish(2, Duration::from_secs(9), Duration::ZERO, Duration::ZERO);
        // Own time unweighted; in the shares the later unit stands for 8.
        assert_eq!((b.timed_units, b.timed), (2, Duration::from_nanos(200)));
        assert_eq!(crate::TIME_EVERY_LATER / crate::TIME_EVERY, 8);
        assert_eq!((b.pool, b.other), (Duration::from_secs(1), Duration::from_secs(8)), "{b:?}");
    }
}
