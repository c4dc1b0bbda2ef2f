//! A run: lay the threads out, start the workers (and helpers) inside one
//! thread scope, join them, and gather the report.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::AtomicBool;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Instant;

use parking_lot::Mutex;
use skelaff_locality::{Migrator, SampleBoard};
use skelaff_numa_alloc::{Topology, pin};

use crate::access_profile::{AccessProfile, MIGRATION_SLOT};
use crate::affinity::Resolver;
use crate::assist::{Assist, NoAssist};
use crate::config::{Builder, Helpers, PagePolicy};
use crate::error::Error;
use crate::page_policy;
use crate::placement::{HelperPlace, HelperSite, Layout};
use crate::pool::{Pool, Signal, WorkerQueue};
use crate::report::{ChannelFigures, Decision, HelpersReport, NoHelper, RunReport, WorkerReport};
use crate::skeleton::{Skeleton, WorkerInfo};
use crate::worker::{Finish, RunState, worker};

/// A transactional worklist: seed it with units, then [`run`](Worklist::run) it.
///
/// Made by [`Builder::build`]; see [`Skeleton`] for an example.
pub struct Worklist<'a, S: Skeleton> {
    skeleton: &'a S,
    shared: &'a S::Shared,
    cfg: Builder,
    seeds: Vec<S::Unit>,
}

impl<S: Skeleton> fmt::Debug for Worklist<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worklist").field("config", &self.cfg).field("seeds", &self.seeds.len()).finish()
    }
}

/// Why a worker did not start; the others were stopped.
enum Refused {
    /// The worker's CPU could not be taken (not allowed, or the kernel refused).
    Pin(skelaff_numa_alloc::Error),
    /// The OS refused the thread.
    Thread(usize, std::io::Error),
}

// The builder's last step lives here, beside what it makes: `config` (the
// settings) does not depend on the run.
impl Builder {
    /// The worklist for `skeleton` over `shared`.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroThreads`].
    pub fn build<'a, S: Skeleton>(self, skeleton: &'a S, shared: &'a S::Shared) -> Result<Worklist<'a, S>, Error> {
        if self.threads == 0 {
            return Err(Error::ZeroThreads);
        }
        if let Some(s) = self.access_profile {
            skelaff_locality::Sampling::new(s.period, s.capacity).map_err(|e| Error::Profile(e.to_string()))?;
        }
        if let Some(stretch) = &self.oracle {
            if self.access_profile.is_none() || self.migration.is_some() || stretch.stretch().is_zero() {
                return Err(Error::Profile(
                    "the applied oracle needs an access profile (access_profile), a stretch longer than zero, \
                     and no migration rule beside it"
                        .into(),
                ));
            }
        }
        if let Some(rule) = self.migration {
            if self.access_profile.is_none() {
                return Err(Error::Profile(
                    "migration takes its samples from the access profile: ask for one with access_profile".into(),
                ));
            }
            if !matches!(rule.epoch, skelaff_locality::Epoch::Time { .. }) || rule.pages_per_epoch == 0 {
                return Err(Error::Profile(
                    "a migration rule applied for real needs a time epoch and at least one page per epoch".into(),
                ));
            }
        }
        // The STM's one-time set-up belongs before `run`, not in it.
        skelaff_stm::startup();
        Ok(Worklist { skeleton, shared, cfg: self, seeds: Vec::new() })
    }
}

impl<'a, S: Skeleton> Worklist<'a, S> {
    /// Adds a seed unit.
    pub fn add_work_unit(&mut self, unit: S::Unit) {
        self.seeds.push(unit);
    }

    /// Adds seed units.
    pub fn add_work_units(&mut self, units: impl IntoIterator<Item = S::Unit>) {
        self.seeds.extend(units);
    }

    /// Seed units waiting for the next run.
    pub fn seeds(&self) -> usize {
        self.seeds.len()
    }

    /// Runs until the pool is empty and no unit can add more, then runs
    /// every worker's `update` and `destroy_worker`.
    ///
    /// # Errors
    ///
    /// [`Error::Numa`] if the topology cannot be read or a thread cannot be
    /// pinned or given its policy; [`Error::Placement`] if the placement
    /// laid out the wrong number of workers; [`Error::Panicked`] if user
    /// code panicked (every worker is stopped and joined first; remaining
    /// units are dropped); [`Error::Spawn`] if the OS refuses a worker
    /// thread (likewise).
    pub fn run(&mut self) -> Result<RunReport, Error> {
        self.run_inner(&NoAssist)
    }

    /// Runs as [`run`](Worklist::run) does, with helper threads from
    /// `assist` beside the workers as the builder's [`Helpers`] setting
    /// asks (paper §4.2, Fig. 6): each worker holds two units, hands the
    /// next one to its helper and processes the previous one. With
    /// [`Helpers::Off`], or for workers that get no helper, the workers run
    /// the plain loop; `assist` still sees each worker's start and end.
    ///
    /// Helper threads run inside the run's thread scope: they are joined
    /// before this returns, whatever happened (a panicking helper body is
    /// noted in the report and the run goes on without it).
    ///
    /// # Errors
    ///
    /// As [`run`](Worklist::run).
    ///
    /// # Examples
    ///
    /// See [`Assist`].
    pub fn run_with<A: Assist<S>>(&mut self, assist: &A) -> Result<RunReport, Error> {
        self.run_inner(assist)
    }

    fn run_inner<A: Assist<S>>(&mut self, assist: &A) -> Result<RunReport, Error> {
        let cfg = &self.cfg;
        // Read the topology before any thread is pinned (hwloc may rebind).
        let topo = Topology::get()?;
        let threads = cfg.threads;
        let layout = cfg.placement.place(topo, threads)?;
        if layout.workers.len() != threads {
            return Err(Error::Placement {
                placement: cfg.placement.name(),
                asked: threads,
                got: layout.workers.len(),
            });
        }
        let infos: Vec<WorkerInfo> = layout
            .workers
            .iter()
            .enumerate()
            .map(|(index, w)| WorkerInfo { index, cpu: w.cpu, node: w.node, threads })
            .collect();
        let mut seeds = std::mem::take(&mut self.seeds);
        if let Some(seed) = cfg.shuffle {
            fastrand::Rng::with_seed(seed).shuffle(&mut seeds);
        }
        let nodes: Vec<Option<usize>> = infos.iter().map(|i| i.node).collect();
        let (pool, queues) = Pool::new(cfg.distribution, &nodes);
        // The applied oracle's board and what is left of its stretch, while
        // it has not acted (its stretch may span several runs).
        let oracle = cfg.oracle.as_ref().and_then(|o| o.next_run(threads));
        let state = RunState {
            skeleton: self.skeleton,
            shared: self.shared,
            signal: Signal::new(seeds.len()),
            pool,
            start: Instant::now(),
            stm: cfg.stm,
            assisted: cfg.assisted,
            policy: cfg.policy,
            allowed_nodes: topo.allowed_nodes(),
            page_size: topo.page_size(),
            generating: AtomicBool::new(false),
            decisions: Mutex::new(Vec::new()),
            failure: Mutex::new(None),
            access_profile: cfg.access_profile,
            samplers: Mutex::new(Vec::new()),
            affinity: cfg.affinity,
            board: match (cfg.migration, &oracle) {
                (Some(_), _) => Some(SampleBoard::new(threads, MIGRATION_SLOT)),
                (None, Some((board, _))) => Some(board.clone()),
                (None, None) => None,
            },
        };
        if cfg.affinity {
            let mut resolver = Resolver::new(state.page_size);
            state.pool.seed_routed(seeds, |u| state.home_queue(&mut resolver, u));
        } else {
            state.pool.seed(seeds);
        }
        decide_layout(&state, cfg, &layout);
        let places = helper_places(&state, cfg.helpers, &layout, A::ENABLED);
        let channels: Vec<A::Channel> = infos.iter().zip(&places).map(|(i, p)| assist.channel(i, *p)).collect();

        // Started before the workers, on the run's clock, so move times
        // compare with sample times.
        let nodes = topo.nodes().iter().map(|n| n.os_index + 1).max().unwrap_or(1);
        let page_size = state.page_size as u64;
        let migrator = match (cfg.migration, &oracle, &cfg.oracle, &state.board) {
            (Some(rule), _, _, Some(board)) => {
                Some(Migrator::start(board.clone(), rule, nodes, page_size, state.start))
            }
            (None, Some((board, left)), Some(stretch), _) => {
                Some(Migrator::start_oracle(board.clone(), *left, stretch.hold(), nodes, page_size, state.start))
            }
            _ => None,
        }
        .transpose()
        .map_err(|e| Error::Profile(format!("starting the migration thread: {e}")))?;
        let start = Instant::now();
        let gate = StartGate::default();
        let (results, refused) = std::thread::scope(|scope| {
            // Opened when dropped, so a panic here cannot leave threads waiting.
            let opener = Opener(&gate);
            // Workers first: a helper exists only for a worker that runs, so
            // every helper is told to finish.
            let workers: Vec<_> = queues
                .into_iter()
                .zip(infos.iter().zip(&channels).zip(&places))
                .map(|(queue, ((info, channel), place))| {
                    spawn_worker(scope, &state, &gate, *info, queue, assist, channel, place.is_some())
                })
                .collect();
            // The workers are created: let them run (a refused one stopped
            // the run). Helpers come after, so that creating them costs the
            // workers nothing: a helper pins itself, and the spawning thread
            // does not move to the helper's CPU (which, idle, had to be
            // woken while the workers waited at the gate; and a helper's
            // CPU may be a worker's, where the spawning thread would queue).
            // A helper started late only picks up a later unit.
            drop(opener);
            let helpers: Vec<_> = if A::ENABLED {
                infos
                    .iter()
                    .zip(&channels)
                    .zip(&places)
                    .zip(&workers)
                    // No helper for a worker whose thread did not start:
                    // nobody would tell it to finish.
                    .filter(|(_, w)| w.is_ok())
                    .filter_map(|(((info, channel), place), _)| {
                        place
                            .filter(|_| assist.start_helper(channel))
                            .map(|p| spawn_helper(scope, &state, *info, p, assist, channel))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let mut refused = None;
            let results: Vec<Option<WorkerReport>> = workers
                .into_iter()
                .map(|h| match h {
                    Ok(h) => h.join().unwrap_or(None),
                    Err(e) => {
                        refused.get_or_insert(e);
                        None
                    }
                })
                .collect();
            for h in helpers.into_iter().flatten() {
                let _ = h.join();
            }
            (results, refused)
        });
        let wall = start.elapsed();
        // Stopped before anything can return: the thread must not outlive the run.
        let migration = migrator.map(Migrator::stop).transpose();
        if let (Some(stretch), Ok(log)) = (&cfg.oracle, &migration) {
            // The oracle acted in this run if it held the workers for its
            // moves; either way the run's time counts toward its stretch.
            let acted = log.as_ref().is_some_and(|l| l.held_workers.is_some());
            stretch.run_ended(state.start.elapsed(), acted);
        }
        match refused {
            Some(Refused::Pin(e)) => return Err(Error::Numa(e)),
            Some(Refused::Thread(worker, source)) => return Err(Error::Spawn { worker, source }),
            None => {}
        }
        let migration = migration.map_err(|e| Error::Profile(format!("the migration thread: {e}")))?;
        if let Some((worker, message)) = state.failure.lock().take() {
            return Err(Error::Panicked { worker, message });
        }
        let workers: Vec<WorkerReport> = results.into_iter().flatten().collect();
        let mut helpers = HelpersReport::default();
        if A::ENABLED {
            for (channel, place) in channels.into_iter().zip(&places) {
                let ChannelFigures { worker, helper, notes } = assist.figures(channel);
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
        // Attributed now, while the skeleton's data is still alive.
        let access_profile = match cfg.access_profile {
            Some(sampling) => {
                let finished = std::mem::take(&mut *state.samplers.lock());
                Some(
                    AccessProfile::build(sampling, topo, &cfg.policy.to_string(), threads, finished, migration)
                        .map_err(Error::Profile)?,
                )
            }
            None => None,
        };
        Ok(RunReport {
            access_profile,
            wall,
            units: workers.iter().map(|w| w.units).sum(),
            threads,
            policy: cfg.policy,
            mapping: cfg.placement.name(),
            distribution: cfg.distribution,
            numa_alloc_global: page_policy::numa_alloc_is_global(),
            workers,
            decisions: std::mem::take(&mut *state.decisions.lock()),
            helpers,
        })
    }
}

/// Records where the workers run and the starting page policy.
fn decide_layout<S: Skeleton>(state: &RunState<'_, S>, cfg: &Builder, layout: &Layout) {
    let placement = cfg.placement.name();
    let cpus: Option<Vec<usize>> = layout.workers.iter().map(|w| w.cpu).collect();
    match cpus {
        Some(cpus) => state.decide(None, Decision::Pinned { placement, cpus, oversubscribed: layout.oversubscribed }),
        None => state.decide(None, Decision::NotPinned { placement }),
    }
    if cfg.policy == PagePolicy::Auto {
        state.decide(None, Decision::CyclicUntilGenerating { nodes: state.allowed_nodes.iter().collect() });
    }
}

/// Which workers get a helper, and where, as the `helpers` setting asks
/// of the placement's answer; records why a worker gets none.
fn helper_places<S: Skeleton>(
    state: &RunState<'_, S>,
    helpers: Helpers,
    layout: &Layout,
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

/// Starts worker `info` on its CPU.
#[allow(clippy::too_many_arguments)]
fn spawn_worker<'scope, 'env, S: Skeleton, A: Assist<S>>(
    scope: &'scope Scope<'scope, 'env>,
    state: &'env RunState<'env, S>,
    gate: &'env StartGate,
    info: WorkerInfo,
    queue: WorkerQueue<S::Unit>,
    assist: &'env A,
    channel: &'env A::Channel,
    assisted: bool,
) -> Result<ScopedJoinHandle<'scope, Option<WorkerReport>>, Refused> {
    // Pinned from birth: this thread takes the worker's CPU while it
    // creates the worker, which inherits the mask (see
    // `pin::pinned_while`). A worker that pinned itself could wait a time
    // slice queued on a busy CPU first.
    let born_on = match info.cpu.map(pin::pinned_while).transpose() {
        Ok(guard) => guard,
        Err(e) => {
            state.signal.stop();
            return Err(Refused::Pin(e));
        }
    };
    let spawned =
        std::thread::Builder::new().name(format!("skelaff-worker-{}", info.index)).spawn_scoped(scope, move || {
            // Tells the helper to stop on every way out, unwinding included.
            let _finish = Finish { assist, channel };
            gate.wait();
            match catch_unwind(AssertUnwindSafe(|| worker(state, info, queue, assist, channel, assisted))) {
                Ok(Ok(report)) => Some(report),
                Ok(Err(e)) => {
                    state.fail(Some(info.index), e.to_string());
                    None
                }
                Err(p) => {
                    state.fail(Some(info.index), panic_message(&*p));
                    None
                }
            }
        });
    drop(born_on);
    // The OS may refuse a thread (limits, memory): the run stops and `run`
    // returns the reason, as for a panic.
    spawned.map_err(|e| {
        state.signal.stop();
        Refused::Thread(info.index, e)
    })
}

/// Starts the helper of worker `info` at `place`; a helper that cannot
/// start or be pinned is noted, and the run goes on.
fn spawn_helper<'scope, 'env, S: Skeleton, A: Assist<S>>(
    scope: &'scope Scope<'scope, 'env>,
    state: &'env RunState<'env, S>,
    info: WorkerInfo,
    place: HelperPlace,
    assist: &'env A,
    channel: &'env A::Channel,
) -> Option<ScopedJoinHandle<'scope, ()>> {
    let spawned =
        std::thread::Builder::new().name(format!("skelaff-helper-{}", info.index)).spawn_scoped(scope, move || {
            if let Some(cpu) = place.cpu {
                if let Err(e) = pin::pin_to_cpu(cpu) {
                    state.decide(Some(info.index), Decision::HelperNotPinned { cpu, error: e.to_string() });
                }
            }
            let r = catch_unwind(AssertUnwindSafe(|| assist.helper(channel, state.skeleton, state.shared, &info)));
            if let Err(p) = r {
                state.decide(Some(info.index), Decision::HelperPanicked { message: panic_message(&*p) });
            }
        });
    match spawned {
        Ok(h) => Some(h),
        Err(e) => {
            state.decide(Some(info.index), Decision::HelperNotStarted { error: e.to_string() });
            None
        }
    }
}

/// Holds the run's workers until the spawning thread has created them
/// all (helpers are created after it opens, and pin themselves). The
/// spawning thread moves to each worker's CPU to create it
/// there (see [`spawn_worker`]); a thread that started at once could take
/// that CPU from it, and the spawning thread, queued behind it, finished
/// its next creation (and anything it held meanwhile) only when the
/// scheduler came back to it. With one worker and its helper on two CPUs,
/// `perf sched timehist` showed the worker losing 0.5-1.2 ms of an 11 ms
/// yada run this way; with the gate, 0.03-0.4 ms. (The helpers-on slowdown
/// of such short runs did not change with it: on the build VM any parked
/// thread in the process costs them as much; see `examples/helpers`.)
#[derive(Debug, Default)]
struct StartGate {
    open: Mutex<bool>,
    opened: parking_lot::Condvar,
}

impl StartGate {
    /// Lets every thread waiting (and every later one) through.
    fn open(&self) {
        *self.open.lock() = true;
        self.opened.notify_all();
    }

    /// Waits until [`open`](Self::open).
    fn wait(&self) {
        let mut open = self.open.lock();
        while !*open {
            self.opened.wait(&mut open);
        }
    }
}

/// Opens its gate when dropped.
struct Opener<'a>(&'a StartGate);

impl Drop for Opener<'_> {
    fn drop(&mut self) {
        self.0.open();
    }
}

fn panic_message(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned())
}
