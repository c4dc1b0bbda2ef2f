//! A run in phases, each a type that only the one before makes:
//!
//! ```text
//! Made      the run's state over the pool's workers: topology, unit pool and queues, settings, the clock; the seeds
//!   .seed()
//! Seeded    the seeds in the pool (on their data's node, with affinity), the layout's decisions recorded
//!   .start()
//! RunJob    the mover of pages started: the workers take their parts (`work`), on the pool's threads
//!   .finish(joined)
//! RunReport every worker done and its report gathered, the mover stopped, the profile attributed
//! ```
//!
//! The helpers' part of a run (where they go, their channels, their threads
//! and figures) is the `helper_run` module's.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use skelaff_numa_alloc::Topology;

use crate::access_profile::AccessProfile;
use crate::affinity::Resolver;
use crate::assist::Assist;
use crate::config::{Builder, PagePolicy};
use crate::error::{Error, ProfileError};
use crate::moves;
use crate::page_policy;
use crate::pool::{Pool, Signal, WorkerQueue};
use crate::report::{Decision, HelpersReport, RunReport, WorkerReport};
use crate::run_state::{Cause, Finish, Hold, Outcome, RunState, Settings, panic_message};
use crate::skeleton::{Skeleton, WorkerInfo};
use crate::worker::worker;
use crate::worker_pool::WorkerPool;

/// What every phase carries on: the run's state, the builder's settings,
/// the pool's workers and their queues, and when the run began.
struct Parts<S: Skeleton, H: Hold<S>> {
    state: RunState<S, H>,
    topo: &'static Topology,
    cfg: Builder,
    infos: Vec<WorkerInfo>,
    queues: Vec<WorkerQueue<S::Unit>>,
    began: Instant,
}

/// The first phase: the run's state made over `pool`'s workers, its clock
/// started; its seeds (shuffled when the builder asks) not in its unit
/// pool yet.
pub(crate) struct Made<S: Skeleton, H: Hold<S>>(Parts<S, H>, Vec<S::Unit>);

impl<S: Skeleton, H: Hold<S>> Made<S, H> {
    /// # Errors
    ///
    /// [`Error::Numa`] if the topology cannot be read.
    pub(crate) fn new(data: H, cfg: &Builder, pool: &WorkerPool, mut seeds: Vec<S::Unit>) -> Result<Self, Error> {
        let began = Instant::now();
        // A run started by a thread that holds the STM's solo gate (a nested
        // run, from a one-worker run's unit): its workers' transactions would
        // wait for the gate while this thread waits for them. Give it back
        // first (the caller's transaction goes on plain).
        skelaff_stm::solo::give_back();
        let topo = Topology::get()?;
        if let Some(seed) = cfg.shuffle {
            fastrand::Rng::with_seed(seed).shuffle(&mut seeds);
        }
        let nodes: Vec<Option<usize>> = pool.infos.iter().map(|i| i.node).collect();
        let (units, queues) = Pool::new(cfg.distribution, cfg.local_order, &nodes);
        let state = RunState {
            data,
            _skeleton: std::marker::PhantomData,
            signal: Signal::new(seeds.len()),
            pool: units,
            start: Instant::now(),
            settings: Settings {
                stm: cfg.stm,
                assisted: cfg.assisted,
                solo: cfg.solo && pool.threads() == 1,
                clock: cfg.clock,
                policy: cfg.policy,
                allowed_nodes: topo.allowed_nodes(),
                page_size: topo.page_size(),
                access_profile: cfg.access_profile,
                affinity: cfg.affinity,
            },
            generating: AtomicBool::new(false),
            mover: None,
            outcome: Outcome::default(),
        };
        Ok(Made(Parts { state, topo, cfg: cfg.clone(), infos: pool.infos.clone(), queues, began }, seeds))
    }

    /// Puts the seeds in the unit pool (each on its data's node with
    /// affinity scheduling), and records where the workers run and the
    /// starting page policy.
    pub(crate) fn seed(self, pool: &WorkerPool) -> Seeded<S, H> {
        let Made(parts, seeds) = self;
        let state = &parts.state;
        if state.settings.affinity {
            let mut resolver = Resolver::new(state.settings.page_size);
            state.pool.seed_routed(seeds, |u| state.home_queue(&mut resolver, u));
        } else {
            state.pool.seed(seeds);
        }
        decide_layout(state, &pool.mapping, pool);
        Seeded(parts)
    }
}

/// Records where the workers run and the starting page policy.
fn decide_layout<S: Skeleton, H: Hold<S>>(state: &RunState<S, H>, mapping: &str, pool: &WorkerPool) {
    let layout = &pool.layout;
    let placement = mapping.to_owned();
    let cpus: Option<Vec<usize>> = layout.workers.iter().map(|w| w.cpu).collect();
    match cpus {
        Some(cpus) => state.decide(None, Decision::Pinned { placement, cpus, oversubscribed: layout.oversubscribed }),
        None => state.decide(None, Decision::NotPinned { placement }),
    }
    if state.settings.policy == PagePolicy::Auto {
        state.decide(None, Decision::CyclicUntilGenerating { nodes: state.settings.allowed_nodes.iter().collect() });
    }
}

/// The second phase: the seeds in the pool, the layout's decisions recorded.
pub(crate) struct Seeded<S: Skeleton, H: Hold<S>>(Parts<S, H>);

impl<S: Skeleton, H: Hold<S>> Seeded<S, H> {
    /// Starts what moves pages as the run goes (before the workers, on the
    /// run's clock, so that move times compare with sample times): the run
    /// is ready for its workers.
    ///
    /// # Errors
    ///
    /// [`Error::Profile`] if the mover cannot start.
    pub(crate) fn start(self) -> Result<RunJob<S, H>, Error> {
        let Seeded(Parts { mut state, topo, cfg, infos, queues, began }) = self;
        state.mover = moves::start(&cfg, infos.len(), topo, state.start)?;
        let state_start = state.start;
        Ok(RunJob {
            results: (0..infos.len()).map(|_| Mutex::new(None)).collect(),
            queues: queues.into_iter().map(|q| Mutex::new(Some(q))).collect(),
            state,
            cfg,
            infos,
            first_start: AtomicU64::new(u64::MAX),
            last_end: AtomicU64::new(0),
            setup: began.elapsed(),
            handed: u64::try_from(state_start.elapsed().as_nanos()).unwrap_or(u64::MAX),
        })
    }
}

/// The third phase, a started run: what its workers share (the run state,
/// each worker's queue, taken by its worker, and report), and what gathers
/// the report once they are all done.
pub(crate) struct RunJob<S: Skeleton, H: Hold<S>> {
    pub(crate) state: RunState<S, H>,
    cfg: Builder,
    infos: Vec<WorkerInfo>,
    queues: Vec<Mutex<Option<WorkerQueue<S::Unit>>>>,
    results: Vec<Mutex<Option<WorkerReport>>>,
    /// Nanoseconds from `state.start` to the first worker's start and the
    /// last one's end (the report's `wall`).
    first_start: AtomicU64,
    last_end: AtomicU64,
    /// How long the phases before this one took (the report's `setup`).
    setup: Duration,
    /// Nanoseconds from `state.start` to the run being handed to the
    /// workers (the report's `queued` runs from here to `first_start`).
    handed: u64,
}

/// How the workers' part of a run ended, once every one of them is done.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Joined {
    /// A worker's part panicked outside the skeleton's code (in a helper's `finish`).
    pub(crate) crew_panicked: bool,
}

impl<S: Skeleton, H: Hold<S>> RunJob<S, H> {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.state.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Worker `index`'s part of the run, on the pool's thread `index`
    /// (pinned since the pool was built).
    pub(crate) fn work<A: Assist<S>>(&self, index: usize, assist: &A, channel: &A::Channel, assisted: bool) {
        let Some(queue) = self.queues[index].lock().take() else { return };
        let info = self.infos[index];
        // Tells the helper to stop on every way out, unwinding included.
        let _finish = Finish { assist, channel };
        self.first_start.fetch_min(self.now_ns(), Ordering::Relaxed);
        let report =
            match catch_unwind(AssertUnwindSafe(|| worker(&self.state, info, queue, assist, channel, assisted))) {
                Ok(Ok(report)) => Some(report),
                Ok(Err(e)) => {
                    self.state.fail(Some(info.index), e.to_string());
                    None
                }
                Err(p) => {
                    self.state.fail(Some(info.index), panic_message(&*p));
                    None
                }
            };
        *self.results[index].lock() = report;
        // The thread keeps the run's page policy: the next run on it sets
        // its own first thing, at no cost when it is the same.
        self.last_end.fetch_max(self.now_ns(), Ordering::Relaxed);
    }

    /// The last phase: the report, once every worker is done.
    ///
    /// # Errors
    ///
    /// [`Error::Profile`] if the mover failed or the profile cannot be
    /// assembled, or a worker's sampler did not start; [`Error::Panicked`]
    /// for the run's first failure otherwise.
    pub(crate) fn finish(&self, joined: Joined) -> Result<RunReport, Error> {
        let cfg = &self.cfg;
        let state = &self.state;
        let threads = self.infos.len();
        let wall = Duration::from_nanos(
            self.last_end
                .load(Ordering::Relaxed)
                .saturating_sub(self.first_start.load(Ordering::Relaxed).min(self.last_end.load(Ordering::Relaxed))),
        );
        // No worker started (every one failed before): nothing was queued.
        let first = self.first_start.load(Ordering::Relaxed);
        let queued =
            if first == u64::MAX { Duration::ZERO } else { Duration::from_nanos(first.saturating_sub(self.handed)) };
        // Stopped before anything can return: the thread must not outlive
        // the run (an oracle's stop counts the run's time toward its stretch).
        let migration = match &state.mover {
            Some(mover) => mover.stop().map_err(ProfileError::Migration)?,
            None => None,
        };
        if let Some(f) = state.outcome.failure() {
            return Err(match &f.cause {
                Cause::Panic(message) => Error::Panicked { worker: f.worker, message: message.clone() },
                Cause::Sampler(source) => {
                    ProfileError::Sampler { worker: f.worker.unwrap_or_default(), source: source.clone() }.into()
                }
            });
        }
        if joined.crew_panicked {
            return Err(Error::Panicked {
                worker: None,
                message: "a helper implementation's `finish` panicked on a worker".into(),
            });
        }
        let workers: Vec<WorkerReport> = self.results.iter().filter_map(|r| r.lock().take()).collect();
        // Attributed now, while the skeleton's data is still alive.
        let access_profile = match cfg.access_profile {
            Some(sampling) => Some(
                AccessProfile::build(
                    sampling,
                    Topology::get()?,
                    &cfg.policy.to_string(),
                    threads,
                    state.outcome.take_samplers(),
                    migration,
                )
                .map_err(ProfileError::Assemble)?,
            ),
            None => None,
        };
        Ok(RunReport {
            access_profile,
            wall,
            setup: self.setup,
            queued,
            units: workers.iter().map(|w| w.units).sum(),
            threads,
            policy: cfg.policy,
            mapping: cfg.placement.name(),
            distribution: cfg.distribution,
            local_order: cfg.local_order,
            clock: cfg.clock,
            numa_alloc_global: page_policy::numa_alloc_is_global(),
            workers,
            decisions: state.outcome.take_decisions(),
            helpers: HelpersReport::default(),
        })
    }
}
