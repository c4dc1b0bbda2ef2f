//! The helpers' part of a run: which workers get a helper and where (as the
//! builder's `helpers` setting asks of the placement's answer), their
//! channels, their bodies (run on the pool's parked helper threads, see
//! `helper_crew`, beside the workers' part, and done before the run
//! returns), and their figures in the report.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::assist::Assist;
use crate::config::Helpers;
use crate::crew::Job;
use crate::helper_crew::{HelperThreads, Slot};
use crate::placement::{HelperPlace, HelperSite, ThreadLayout};
use crate::report::{ChannelFigures, Decision, NoHelper, RunReport};
use crate::run_state::{Hold, RunState, panic_message};
use crate::skeleton::Skeleton;
use crate::worker_pool::WorkerPool;

/// The helpers of one run: where each worker's goes (if it gets one) and
/// the channel each worker shares with it.
pub(crate) struct HelperSet<'a, S: Skeleton, A: Assist<S>> {
    assist: &'a A,
    places: Vec<Option<HelperPlace>>,
    channels: Vec<A::Channel>,
}

impl<'a, S: Skeleton, A: Assist<S>> HelperSet<'a, S, A> {
    /// Places the helpers of `pool`'s workers as `helpers` asks (recording
    /// why a worker gets none) and makes every worker's channel.
    pub(crate) fn place<H: Hold<S>>(
        state: &RunState<S, H>,
        helpers: Helpers,
        pool: &WorkerPool,
        assist: &'a A,
    ) -> Self {
        let places = helper_places(state, helpers, &pool.layout, A::ENABLED);
        let channels = pool.infos.iter().zip(&places).map(|(i, p)| assist.channel(i, *p)).collect();
        HelperSet { assist, places, channels }
    }

    /// Worker `index`'s channel.
    pub(crate) fn channel(&self, index: usize) -> &A::Channel {
        &self.channels[index]
    }

    /// Whether worker `index` has a helper.
    pub(crate) fn placed(&self, index: usize) -> bool {
        self.places[index].is_some()
    }

    /// Runs `body` on `pool`'s workers and, meanwhile, the helper body of
    /// every worker this run placed a helper for (and the implementation
    /// wants started) on the pool's helper threads, made on first use.
    /// Returns once every worker's call of `body` and every helper body has
    /// returned, with whether a call of `body` panicked past it.
    ///
    /// The order lock is held from before the workers are given the run
    /// until the helpers are: runs reach both crews in the same order, so
    /// a run's helpers never queue behind a later run's, which wait for
    /// their own workers, queued behind this run's (this run's helpers
    /// would start only once its workers are done, and shadow nothing; no
    /// deadlock, since a worker never waits for its helper, but no help
    /// either; `tests/loom_crew.rs` models it). A helper body that panics is noted, and
    /// the run goes on without it; one that cannot start or be pinned was
    /// noted when this run asked for it.
    pub(crate) fn run_beside<H: Hold<S>>(&self, pool: &WorkerPool, state: &RunState<S, H>, body: &Job<'_>) -> bool {
        if !A::ENABLED || self.places.iter().all(Option::is_none) {
            return pool.crew.run_scoped_waiting(body, || (), pool.caller_shares_cpu()).1;
        }
        let threads = pool.helpers();
        let started = self.started(state, threads);
        if !started.iter().any(|s| *s) {
            return pool.crew.run_scoped_waiting(body, || (), pool.caller_shares_cpu()).1;
        }
        let helper = |j: usize| {
            let index = threads.workers[j];
            if !started[index] {
                return;
            }
            let info = &pool.infos[index];
            let channel = &self.channels[index];
            let r =
                catch_unwind(AssertUnwindSafe(|| self.assist.helper(channel, state.skeleton(), state.shared(), info)));
            if let Err(p) = r {
                state.decide(Some(index), Decision::HelperPanicked { message: panic_message(&*p) });
            }
        };
        let order = threads.order.lock();
        let yields = pool.caller_shares_cpu();
        pool.crew
            .run_scoped_waiting(body, || threads.crew.run_scoped_waiting(&helper, move || drop(order), yields), yields)
            .1
    }

    /// Which workers' helper bodies run in this run: those placed, whose
    /// helper the implementation wants started and the pool has a thread
    /// for. Records, for each wanted one, a thread the OS refused or a CPU
    /// it could not be born on.
    fn started<H: Hold<S>>(&self, state: &RunState<S, H>, threads: &HelperThreads) -> Vec<bool> {
        self.channels
            .iter()
            .zip(&self.places)
            .zip(&threads.slots)
            .enumerate()
            .map(|(index, ((channel, place), slot))| {
                if place.is_none() || !self.assist.start_helper(channel) {
                    return false;
                }
                match slot {
                    Slot::Thread { not_pinned, .. } => {
                        if let Some((cpu, error)) = not_pinned {
                            state.decide(Some(index), Decision::HelperNotPinned { cpu: *cpu, error: error.clone() });
                        }
                        true
                    }
                    Slot::NotStarted(error) => {
                        state.decide(Some(index), Decision::HelperNotStarted { error: error.clone() });
                        false
                    }
                    // A place for this run comes from the same layout.
                    Slot::NoPlace => false,
                }
            })
            .collect()
    }

    /// Adds every channel's figures to `report`, once every thread was joined.
    pub(crate) fn report(self, report: &mut RunReport) {
        if !A::ENABLED {
            return;
        }
        let helpers = &mut report.helpers;
        for (channel, place) in self.channels.into_iter().zip(&self.places) {
            let ChannelFigures { worker, helper, notes } = self.assist.figures(channel);
            helpers.per_worker.push(worker);
            if let (Some(h), Some(_)) = (helper, place) {
                helpers.per_helper.push(h);
            }
            for n in notes {
                if !helpers.notes.contains(&n) {
                    helpers.notes.push(n);
                }
            }
        }
    }
}

/// Which workers get a helper, and where, as the `helpers` setting asks
/// of the placement's answer; records why a worker gets none.
fn helper_places<S: Skeleton, H: Hold<S>>(
    state: &RunState<S, H>,
    helpers: Helpers,
    layout: &ThreadLayout,
    implemented: bool,
) -> Vec<Option<HelperPlace>> {
    let none = vec![None; layout.workers.len()];
    let no_helper = |worker, reason| state.decide(worker, Decision::NoHelper { helpers, reason });
    match (helpers, implemented) {
        (Helpers::Off, true) => {
            no_helper(None, NoHelper::Off);
            return none;
        }
        (Helpers::Off, false) => return none,
        (_, false) => {
            no_helper(None, NoHelper::NoImplementation);
            return none;
        }
        _ => {}
    }
    if helpers == Helpers::Auto && layout.workers.iter().any(|w| w.cpu.is_none()) {
        no_helper(None, NoHelper::NotPinned);
        return none;
    }
    layout
        .workers
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let place = match (w.helper, helpers) {
                (None, _) => {
                    no_helper(Some(i), NoHelper::NoPlace);
                    return None;
                }
                (Some(p), Helpers::Auto) if p.site != HelperSite::Dedicated => {
                    no_helper(Some(i), NoHelper::NoIdleSharedCpu);
                    return None;
                }
                (Some(p), _) => p,
            };
            state.decide(Some(i), Decision::HelperPlaced { cpu: place.cpu, site: place.site });
            Some(place)
        })
        .collect()
}
