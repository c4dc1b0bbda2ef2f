//! The helpers' part of a run: which workers get a helper and where (as the
//! builder's `helpers` setting asks of the placement's answer), their
//! channels, their threads (started in the run's thread scope once the
//! workers were given the run, joined before it returns), and their
//! figures in the report.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread::{Scope, ScopedJoinHandle};

use skelaff_numa_alloc::pin;
use skelaff_numa_alloc::pin::Birthplace;

use crate::assist::Assist;
use crate::config::Helpers;
use crate::placement::{HelperPlace, HelperSite, ThreadLayout};
use crate::report::{ChannelFigures, Decision, NoHelper, RunReport};
use crate::run_state::{Hold, RunState, panic_message};
use crate::skeleton::{Skeleton, WorkerInfo};
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

    /// Starts the helper threads the implementation wants started, in
    /// `scope`: after the workers were given the run, so that creating
    /// them costs the workers nothing (a helper pins itself; one started
    /// late only picks up a later unit).
    pub(crate) fn spawn<'scope, 'env, H: Hold<S>>(
        &'env self,
        scope: &'scope Scope<'scope, 'env>,
        state: &'env RunState<S, H>,
        infos: &[WorkerInfo],
    ) -> Vec<ScopedJoinHandle<'scope, ()>> {
        if !A::ENABLED {
            return Vec::new();
        }
        infos
            .iter()
            .zip(&self.channels)
            .zip(&self.places)
            .filter_map(|((info, channel), place)| {
                place
                    .filter(|_| self.assist.start_helper(channel))
                    .and_then(|p| spawn_helper(scope, state, *info, p, self.assist, channel))
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

/// Starts the helper of worker `info` at `place`; a helper that cannot
/// start or be pinned is noted, and the run goes on.
fn spawn_helper<'scope, 'env, S: Skeleton, H: Hold<S>, A: Assist<S>>(
    scope: &'scope Scope<'scope, 'env>,
    state: &'env RunState<S, H>,
    info: WorkerInfo,
    place: HelperPlace,
    assist: &'env A,
    channel: &'env A::Channel,
) -> Option<ScopedJoinHandle<'scope, ()>> {
    let name = format!("skelaff-helper-{}", info.index);
    let body = move || {
        let r = catch_unwind(AssertUnwindSafe(|| assist.helper(channel, state.skeleton(), state.shared(), &info)));
        if let Err(p) = r {
            state.decide(Some(info.index), Decision::HelperPanicked { message: panic_message(&*p) });
        }
    };
    // Born on its CPU; where that CPU is refused, unpinned (noted).
    let spawned = match place.cpu {
        Some(cpu) => match pin::spawn_scoped_pinned(scope, name.clone(), Birthplace::Cpu(cpu), body) {
            Err(skelaff_numa_alloc::Error::Spawn { source, .. }) => Err(source.to_string()),
            Err(e) => {
                state.decide(Some(info.index), Decision::HelperNotPinned { cpu, error: e.to_string() });
                pin::spawn_scoped_pinned(scope, name, Birthplace::Inherited, body).map_err(|e| e.to_string())
            }
            Ok(h) => Ok(h),
        },
        None => pin::spawn_scoped_pinned(scope, name, Birthplace::Inherited, body).map_err(|e| e.to_string()),
    };
    match spawned {
        Ok(h) => Some(h),
        Err(error) => {
            state.decide(Some(info.index), Decision::HelperNotStarted { error });
            None
        }
    }
}
