//! A run: prepare it, hand its workers' part to a [`WorkerPool`]'s parked
//! threads (the helpers start in a thread scope meanwhile), wait until
//! every thread is done with it, and gather the report.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use skelaff_numa_alloc::pin::Birthplace;
use skelaff_numa_alloc::{Topology, pin};

use crate::access_profile::AccessProfile;
use crate::affinity::Resolver;
use crate::assist::{Assist, NoAssist};
use crate::config::{Builder, Helpers, PagePolicy};
use crate::crew::Ticket;
use crate::error::Error;
use crate::moves;
use crate::page_policy;
use crate::placement::{HelperPlace, HelperSite, Layout};
use crate::pool::{Pool, Signal, WorkerQueue};
use crate::report::{ChannelFigures, Decision, HelpersReport, NoHelper, RunReport, WorkerReport};
use crate::skeleton::{Skeleton, WorkerInfo};
use crate::worker::{Borrowed, Finish, Held, Hold, Kept, RunState, worker};
use crate::worker_pool::{WorkerPool, layout_of, per_run_pool, process_pool};

/// A transactional worklist: seed it with units, then [`run`](Worklist::run) it.
///
/// Made by [`Builder::build`] (borrowing the skeleton and its data) or
/// [`Builder::build_owned`] (sharing them); see [`Skeleton`] for an example.
pub struct Worklist<'a, S: Skeleton> {
    skeleton: Held<'a, S>,
    shared: Held<'a, S::Shared>,
    cfg: Builder,
    seeds: Vec<S::Unit>,
}

impl<S: Skeleton> fmt::Debug for Worklist<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worklist").field("config", &self.cfg).field("seeds", &self.seeds.len()).finish()
    }
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
        self.check()?;
        Ok(Worklist {
            skeleton: Held::Borrowed(skeleton),
            shared: Held::Borrowed(shared),
            cfg: self,
            seeds: Vec::new(),
        })
    }

    /// The worklist for a skeleton and data it shares rather than borrows:
    /// what [`Worklist::submit`] (an awaited run) needs.
    ///
    /// # Errors
    ///
    /// As [`build`](Builder::build).
    ///
    /// # Examples
    ///
    /// See [`Worklist::submit`].
    pub fn build_owned<S: Skeleton>(
        self,
        skeleton: Arc<S>,
        shared: Arc<S::Shared>,
    ) -> Result<Worklist<'static, S>, Error> {
        self.check()?;
        Ok(Worklist { skeleton: Held::Owned(skeleton), shared: Held::Owned(shared), cfg: self, seeds: Vec::new() })
    }

    fn check(&self) -> Result<(), Error> {
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
        Ok(())
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
        let layout = layout_of(&self.cfg)?;
        let mapping = self.cfg.placement.name();
        if self.cfg.per_run_threads {
            let pool = per_run_pool(layout, mapping)?;
            return self.run_pool(&pool, assist);
        }
        let pool = process_pool(layout.clone(), mapping.clone())?;
        if pool.is_member() {
            // A nested run on a thread of the pool it would queue on.
            let fresh = per_run_pool(layout, mapping)?;
            return self.run_pool(&fresh, assist);
        }
        self.run_pool(&pool, assist)
    }

    /// Runs on the threads of `pool` (see [`WorkerPool`]) rather than on
    /// the process-wide pool of the builder's layout: the pool's threads,
    /// placement and layout are used. Otherwise as [`run`](Worklist::run).
    ///
    /// # Errors
    ///
    /// As [`run`](Worklist::run); [`Error::PoolMismatch`] if the builder
    /// asked for another number of threads than the pool has;
    /// [`Error::NestedRun`] if called on one of `pool`'s own threads
    /// (the run would wait for itself).
    ///
    /// # Examples
    ///
    /// See [`WorkerPool`].
    pub fn run_on(&mut self, pool: &WorkerPool) -> Result<RunReport, Error> {
        self.run_with_on(pool, &NoAssist)
    }

    /// [`run_with`](Worklist::run_with) on the threads of `pool`; the
    /// helper threads are still created and joined by the run.
    ///
    /// # Errors
    ///
    /// As [`run_on`](Worklist::run_on).
    pub fn run_with_on<A: Assist<S>>(&mut self, pool: &WorkerPool, assist: &A) -> Result<RunReport, Error> {
        self.check_pool(pool)?;
        if pool.is_member() {
            return Err(Error::NestedRun);
        }
        self.run_pool(pool, assist)
    }

    fn check_pool(&self, pool: &WorkerPool) -> Result<(), Error> {
        if self.cfg.threads != pool.threads() {
            return Err(Error::PoolMismatch { pool: pool.threads(), asked: self.cfg.threads });
        }
        Ok(())
    }

    /// One run on `pool`'s threads: prepared here, the workers' part
    /// handed to the pool (borrowing this frame), the helpers created in a
    /// thread scope meanwhile, the report gathered once every worker and
    /// helper is done with the borrowed data.
    fn run_pool<A: Assist<S>>(&mut self, pool: &WorkerPool, assist: &A) -> Result<RunReport, Error> {
        let seeds = std::mem::take(&mut self.seeds);
        let job = RunJob::prepare(Borrowed(&*self.skeleton, &*self.shared), &self.cfg, seeds, pool)?;
        let places = helper_places(&job.state, self.cfg.helpers, &pool.layout, A::ENABLED);
        let channels: Vec<A::Channel> = pool.infos.iter().zip(&places).map(|(i, p)| assist.channel(i, *p)).collect();
        let body = |index: usize| job.work(index, assist, &channels[index], places[index].is_some());
        let crew_panicked = std::thread::scope(|scope| {
            let (helpers, panicked) = pool.crew.run_scoped(&body, || {
                // Helpers come after the workers were given the run, so
                // that creating them costs the workers nothing (a helper
                // pins itself); a helper started late only picks up a
                // later unit.
                if !A::ENABLED {
                    return Vec::new();
                }
                pool.infos
                    .iter()
                    .zip(&channels)
                    .zip(&places)
                    .filter_map(|((info, channel), place)| {
                        place
                            .filter(|_| assist.start_helper(channel))
                            .map(|p| spawn_helper(scope, &job.state, *info, p, assist, channel))
                    })
                    .collect::<Vec<_>>()
            });
            for h in helpers.into_iter().flatten() {
                let _ = h.join();
            }
            panicked
        });
        let mut report = job.finish(crew_panicked)?;
        if A::ENABLED {
            let helpers = &mut report.helpers;
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
        Ok(report)
    }
}

impl<S> Worklist<'static, S>
where
    S: Skeleton + Send + 'static,
    S::Shared: Send + 'static,
    S::Unit: 'static,
{
    /// Gives the next run to `pool` and returns a future of its report,
    /// for async callers: nothing blocks, the run starts (after the runs
    /// queued before it) whether or not the future is polled, and the
    /// last worker to finish wakes the future's task. The report is
    /// gathered when the future is polled after that (with an access
    /// profile, its attribution runs there, and a migration thread is
    /// joined there). Dropping the future does not cancel the run.
    ///
    /// Only a worklist that owns its data (from
    /// [`Builder::build_owned`], or built over `'static` borrows) can be
    /// submitted: a future can be forgotten while the run goes on, so the
    /// run must not borrow anything the caller could free meanwhile. No
    /// helper threads run ([`Helpers`](crate::Helpers) other than off is
    /// reported as for [`run`](Worklist::run), as having no
    /// implementation).
    ///
    /// # Errors
    ///
    /// [`Error::PoolMismatch`] if the builder asked for another number of
    /// threads than the pool has; [`Error::Profile`] if the migration
    /// thread cannot start. The run's own errors come from the future.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use skelaff_stm::{TVar, TxError, TxOps};
    /// use skelaff_worklist::{Builder, ProcessCtx, Skeleton, WorkerInfo, WorkerPool};
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
    /// let builder = Builder::new().threads(2);
    /// let pool = WorkerPool::new(&builder)?;
    /// let total = Arc::new(TVar::new(0));
    /// let mut wl = builder.build_owned(Arc::new(Add), total.clone())?;
    /// wl.add_work_units(1..=100);
    /// let future = wl.submit(&pool)?;
    /// // Any executor will do; this one blocks the thread it runs on.
    /// let report = block_on(future)?;
    /// assert_eq!((report.units, total.load()), (100, 5050));
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     struct Unpark(std::thread::Thread);
    /// #     impl std::task::Wake for Unpark { fn wake(self: Arc<Self>) { self.0.unpark() } }
    /// #     let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    /// #     let mut cx = std::task::Context::from_waker(&waker);
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop {
    /// #         if let std::task::Poll::Ready(r) = f.as_mut().poll(&mut cx) { return r }
    /// #         std::thread::park();
    /// #     }
    /// # }
    /// # Ok::<(), skelaff_worklist::Error>(())
    /// ```
    pub fn submit(&mut self, pool: &WorkerPool) -> Result<RunFuture<S>, Error> {
        self.check_pool(pool)?;
        let seeds = std::mem::take(&mut self.seeds);
        let kept = Kept(self.skeleton.clone(), self.shared.clone());
        let job = Arc::new(RunJob::prepare(kept, &self.cfg, seeds, pool)?);
        helper_places(&job.state, self.cfg.helpers, &pool.layout, false);
        let on_workers = job.clone();
        let ticket = pool.crew.run_owned(Box::new(move |index| on_workers.work(index, &NoAssist, &(), false)));
        Ok(RunFuture { job: Some(job), ticket })
    }
}

/// The report of a run given with [`Worklist::submit`], when it ends.
///
/// Completed by the pool's last worker to finish the run, through the
/// task's waker; it needs no particular async runtime.
#[must_use = "the run goes on without it; await it for the report"]
pub struct RunFuture<S>
where
    S: Skeleton + Send + 'static,
    S::Shared: Send,
{
    job: Option<Arc<RunJob<S, Kept<S>>>>,
    ticket: Arc<Ticket>,
}

impl<S> fmt::Debug for RunFuture<S>
where
    S: Skeleton + Send + 'static,
    S::Shared: Send,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunFuture").field("done", &self.ticket.is_done()).finish_non_exhaustive()
    }
}

impl<S> Future for RunFuture<S>
where
    S: Skeleton + Send + 'static,
    S::Shared: Send,
{
    type Output = Result<RunReport, Error>;

    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.ticket.poll_done(cx).is_pending() {
            return Poll::Pending;
        }
        let job = self.job.take().expect("RunFuture polled after it returned Ready");
        Poll::Ready(job.finish(self.ticket.panicked()))
    }
}

/// One run's part that its workers share: the run state, each worker's
/// queue (taken by its worker) and report, and what gathers the report.
pub(crate) struct RunJob<S: Skeleton, H: Hold<S>> {
    state: RunState<S, H>,
    cfg: Builder,
    infos: Vec<WorkerInfo>,
    queues: Vec<Mutex<Option<WorkerQueue<S::Unit>>>>,
    results: Vec<Mutex<Option<WorkerReport>>>,
    /// Nanoseconds from `state.start` to the first worker's start and the
    /// last one's end (the report's `wall`).
    first_start: AtomicU64,
    last_end: AtomicU64,
    /// How long [`RunJob::prepare`] took (the report's `setup`).
    setup: Duration,
}

impl<S: Skeleton, H: Hold<S>> RunJob<S, H> {
    /// Everything before the workers start: the unit pool and its seeds,
    /// the layout's decisions, the migration thread.
    fn prepare(data: H, cfg: &Builder, mut seeds: Vec<S::Unit>, pool: &WorkerPool) -> Result<Self, Error> {
        let began = Instant::now();
        let topo = Topology::get()?;
        let threads = pool.threads();
        if let Some(seed) = cfg.shuffle {
            fastrand::Rng::with_seed(seed).shuffle(&mut seeds);
        }
        let nodes: Vec<Option<usize>> = pool.infos.iter().map(|i| i.node).collect();
        let (units, queues) = Pool::new(cfg.distribution, &nodes);
        let mut state = RunState {
            data,
            _skeleton: std::marker::PhantomData,
            signal: Signal::new(seeds.len()),
            pool: units,
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
            mover: None,
        };
        if cfg.affinity {
            let mut resolver = Resolver::new(state.page_size);
            state.pool.seed_routed(seeds, |u| state.home_queue(&mut resolver, u));
        } else {
            state.pool.seed(seeds);
        }
        decide_layout(&state, cfg, &pool.mapping, &pool.layout);
        // Started before the workers, on the run's clock, so move times
        // compare with sample times.
        state.mover = moves::start(cfg, threads, topo, state.start)?;
        Ok(RunJob {
            state,
            cfg: cfg.clone(),
            infos: pool.infos.clone(),
            queues: queues.into_iter().map(|q| Mutex::new(Some(q))).collect(),
            results: (0..threads).map(|_| Mutex::new(None)).collect(),
            first_start: AtomicU64::new(u64::MAX),
            last_end: AtomicU64::new(0),
            setup: began.elapsed(),
        })
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.state.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Worker `index`'s part of the run, on the pool's thread `index`
    /// (pinned since the pool was built).
    fn work<A: Assist<S>>(&self, index: usize, assist: &A, channel: &A::Channel, assisted: bool) {
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
        // The next run on this thread starts from the default policy.
        page_policy::reset_worker_policy(self.state.policy);
        self.last_end.fetch_max(self.now_ns(), Ordering::Relaxed);
    }

    /// The report, once every worker is done (`crew_panicked`: a worker's
    /// part panicked outside the skeleton's code, in a helper's `finish`).
    fn finish(&self, crew_panicked: bool) -> Result<RunReport, Error> {
        let cfg = &self.cfg;
        let state = &self.state;
        let threads = self.infos.len();
        let wall = Duration::from_nanos(
            self.last_end
                .load(Ordering::Relaxed)
                .saturating_sub(self.first_start.load(Ordering::Relaxed).min(self.last_end.load(Ordering::Relaxed))),
        );
        // Stopped before anything can return: the thread must not outlive
        // the run (an oracle's stop counts the run's time toward its stretch).
        let migration = match &state.mover {
            Some(mover) => mover.stop().map_err(|e| Error::Profile(format!("the migration thread: {e}")))?,
            None => None,
        };
        if let Some((worker, message)) = state.failure.lock().take() {
            return Err(Error::Panicked { worker, message });
        }
        if crew_panicked {
            return Err(Error::Panicked {
                worker: None,
                message: "a helper implementation's `finish` panicked on a worker".into(),
            });
        }
        let workers: Vec<WorkerReport> = self.results.iter().filter_map(|r| r.lock().take()).collect();
        // Attributed now, while the skeleton's data is still alive.
        let access_profile = match cfg.access_profile {
            Some(sampling) => {
                let finished = std::mem::take(&mut *state.samplers.lock());
                Some(
                    AccessProfile::build(
                        sampling,
                        Topology::get()?,
                        &cfg.policy.to_string(),
                        threads,
                        finished,
                        migration,
                    )
                    .map_err(Error::Profile)?,
                )
            }
            None => None,
        };
        Ok(RunReport {
            access_profile,
            wall,
            setup: self.setup,
            units: workers.iter().map(|w| w.units).sum(),
            threads,
            policy: cfg.policy,
            mapping: cfg.placement.name(),
            distribution: cfg.distribution,
            numa_alloc_global: page_policy::numa_alloc_is_global(),
            workers,
            decisions: std::mem::take(&mut *state.decisions.lock()),
            helpers: HelpersReport::default(),
        })
    }
}

/// Records where the workers run and the starting page policy.
fn decide_layout<S: Skeleton, H: Hold<S>>(state: &RunState<S, H>, cfg: &Builder, mapping: &str, layout: &Layout) {
    let placement = mapping.to_owned();
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
fn helper_places<S: Skeleton, H: Hold<S>>(
    state: &RunState<S, H>,
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

fn panic_message(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned())
}
