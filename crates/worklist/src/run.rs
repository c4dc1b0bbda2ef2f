//! A run: made, seeded and started in phases (see the `job` module), its
//! workers' part handed to a [`WorkerPool`]'s parked threads (and its
//! helpers' to the pool's parked helper threads, see `helper_run`), and
//! once every thread is done with it, the report gathered.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::assist::{Assist, NoAssist};
use crate::config::Builder;
use crate::crew::Ticket;
use crate::error::{Error, ProfileError};
use crate::helper_run::HelperSet;
use crate::job::{Joined, Made, RunJob};
use crate::report::RunReport;
use crate::run_state::{Borrowed, Held, Kept};
use crate::skeleton::Skeleton;
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

    /// Readies what this builder's first [`Worklist::run`] would otherwise
    /// set up on its clock: builds the process-wide [`WorkerPool`] of the
    /// builder's layout if there is none yet (its threads created and
    /// pinned) and has every one of its threads serve an empty run under
    /// the builder's page policy (so each has taken its first allocator
    /// chunk and its STM slot). A program that times its runs calls it
    /// before starting the clock, as STAMP's C programs create their
    /// threads before starting theirs; later calls cost an empty run.
    ///
    /// With [`per_run_threads`](Builder::per_run_threads) a run makes its
    /// own threads, so only the topology and the STM are readied.
    ///
    /// # Errors
    ///
    /// As [`Worklist::run`] for a run of no units.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_worklist::Builder;
    ///
    /// let builder = Builder::new().threads(2);
    /// builder.warm_up()?;
    /// // ... start the clock, then build and run worklists with `builder`.
    /// # Ok::<(), skelaff_worklist::Error>(())
    /// ```
    pub fn warm_up(&self) -> Result<(), Error> {
        /// A skeleton with nothing to do: each worker only starts, takes
        /// its first allocator chunks under the run's page policy, and ends.
        struct Nothing(crate::PagePolicy);
        impl Skeleton for Nothing {
            type Unit = ();
            type Shared = ();
            type PerWorker = ();
            fn init_worker(&self, _: &(), info: &crate::WorkerInfo) {
                crate::page_policy::take_first_chunks(self.0, info);
            }
            fn process<'t, X: skelaff_stm::TxOps<'t>>(
                &'t self,
                _: &mut X,
                _: &(),
                _: &mut (),
                _: &'t (),
                _: &mut crate::ProcessCtx<()>,
            ) -> Result<(), skelaff_stm::TxError> {
                Ok(())
            }
        }
        self.check()?;
        if self.per_run_threads {
            return Ok(());
        }
        let mut cfg = self.clone();
        // Only the threads are wanted: no profile, oracle or helpers.
        cfg.access_profile = None;
        cfg.oracle = None;
        cfg.migration = None;
        cfg.helpers = crate::Helpers::Off;
        let nothing = Nothing(cfg.policy);
        cfg.build(&nothing, &())?.run().map(drop)
    }

    fn check(&self) -> Result<(), Error> {
        if self.threads == 0 {
            return Err(Error::ZeroThreads);
        }
        if let Some(s) = self.access_profile {
            skelaff_locality::Sampling::new(s.period, s.capacity).map_err(ProfileError::Sampling)?;
        }
        if let Some(stretch) = &self.oracle {
            if self.access_profile.is_none() || self.migration.is_some() || stretch.stretch().is_zero() {
                return Err(ProfileError::OracleNeeds.into());
            }
        }
        if let Some(rule) = self.migration {
            if self.access_profile.is_none() {
                return Err(ProfileError::MigrationWithoutProfile.into());
            }
            if !matches!(rule.epoch, skelaff_locality::Epoch::Time { .. }) || rule.pages_per_epoch == 0 {
                return Err(
                    ProfileError::MigrationRule { pages_per_epoch: rule.pages_per_epoch, epoch: rule.epoch }.into()
                );
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
    /// `assist` beside the workers as the builder's [`Helpers`](crate::Helpers) setting
    /// asks (paper §4.2, Fig. 6): each worker holds two units, hands the
    /// next one to its helper and processes the previous one. With
    /// [`Helpers::Off`](crate::Helpers::Off), or for workers that get no helper, the workers run
    /// the plain loop; `assist` still sees each worker's start and end.
    ///
    /// The helper bodies run on the pool's helper threads (made once, on
    /// the first run that places a helper, and parked between runs; see
    /// [`WorkerPool`]): every one has returned before this returns,
    /// whatever happened (a panicking helper body is noted in the report
    /// and the run goes on without it).
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

    /// [`run_with`](Worklist::run_with) on the threads of `pool`, its
    /// helper bodies on the pool's helper threads.
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

    /// One run on `pool`'s threads, phase by phase: made, seeded and
    /// started here; its helpers placed; the workers' part handed to the
    /// pool's workers and the helpers' to its helper threads (both
    /// borrowing this frame); once every worker and helper is done with
    /// the borrowed data, the report gathered.
    fn run_pool<A: Assist<S>>(&mut self, pool: &WorkerPool, assist: &A) -> Result<RunReport, Error> {
        let seeds = std::mem::take(&mut self.seeds);
        let data = Borrowed(&*self.skeleton, &*self.shared);
        let job = Made::new(data, &self.cfg, pool, seeds)?.seed(pool).start()?;
        let helpers = HelperSet::place(&job.state, self.cfg.helpers, pool, assist);
        let body = |index: usize| job.work(index, assist, helpers.channel(index), helpers.placed(index));
        let crew_panicked = helpers.run_beside(pool, &job.state, &body);
        let mut report = job.finish(Joined { crew_panicked })?;
        helpers.report(&mut report);
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
        let job = Arc::new(Made::new(kept, &self.cfg, pool, seeds)?.seed(pool).start()?);
        // Records that no worker gets a helper (no implementation).
        HelperSet::place(&job.state, self.cfg.helpers, pool, &NoAssist);
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
        Poll::Ready(job.finish(Joined { crew_panicked: self.ticket.panicked() }))
    }
}
