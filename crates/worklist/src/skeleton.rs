//! What a worklist program implements.

use skelaff_stm::{TxError, TxOps};

use crate::affinity::Affinity;

/// Where a worker runs; passed to [`Skeleton::init_worker`] and available
/// from [`ProcessCtx::worker`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerInfo {
    /// The worker's index, `0..threads`.
    pub index: usize,
    /// The CPU it is pinned to (`None` when mapping is off).
    pub cpu: Option<usize>,
    /// The NUMA node of that CPU.
    pub node: Option<usize>,
    /// The number of workers.
    pub threads: usize,
}

/// A transactional worklist program, in OpenSkel's shape.
///
/// The skeleton owns the work pool and the threads; the program owns its
/// data (`Shared`, reached by every worker; `PerWorker`, one per worker) and
/// says how to process one unit.
///
/// - [`init_worker`](Skeleton::init_worker) runs once on each worker
///   thread, after it is pinned and its page policy set, so what it
///   allocates is placed for that worker.
/// - [`process`](Skeleton::process) runs one unit inside a transaction. It
///   may run several times for the same unit (after conflicts), so
///   everything shared it changes must go through `tx`. New units go to
///   [`ProcessCtx::add_work_unit`]; they are published only if the transaction
///   commits. Changes to `local` are not rolled back on abort: keep only
///   thread-private scratch or statistics there, or reset it at the start
///   of `process`.
/// - [`committed`](Skeleton::committed) runs on the worker, outside any
///   transaction, once `process` for a unit has committed: the place for
///   effects that must follow the commit (publishing a hint other workers
///   read without a transaction, say).
/// - [`update`](Skeleton::update) runs once per worker in a transaction
///   after the pool is empty (e.g. to fold per-worker results into
///   `Shared`).
/// - [`destroy_worker`](Skeleton::destroy_worker) runs last on each worker.
///
/// `process` and `update` borrow the skeleton, the unit and `Shared` for
/// `'t`, the lifetime of the transaction's writes (see
/// [`TxOps`](skelaff_stm::TxOps#the-lifetime-tcell)): every `TVar` reached
/// from them, or from a transactional object they link to, may be
/// written. The skeleton value itself may hold borrowed read-only input
/// (a `Skeleton` for `&'a [T]`): [`Builder::build`](crate::Builder::build)
/// borrows it for the worklist's life.
///
/// `process` is generic over [`TxOps`], so the same code runs in a real
/// transaction and in a helper thread's non-publishing shadow. With helper
/// threads ([`Worklist::run_with`](crate::Worklist::run_with)), `process`
/// also runs on the helper for the worker's next unit, with a `TxOps`
/// whose writes stay private, with a `local` of the helper's own (from
/// [`init_helper`](Skeleton::init_helper)) and a context whose units are
/// dropped. It may see an inconsistent mix of values there (its panics are
/// caught; its reads are budgeted), and whatever it does outside `tx`,
/// `local` and `ctx` happens in the shadow too: keep such effects absent or
/// idempotent, as re-runs after a conflict already require.
///
/// # Examples
///
/// Sum the numbers `1..=n` by splitting ranges until they are small:
///
/// ```
/// use skelaff_stm::{TVar, TxError, TxOps};
/// use skelaff_worklist::{Builder, ProcessCtx, Skeleton, WorkerInfo};
///
/// struct RangeSum;
/// impl Skeleton for RangeSum {
///     type Unit = (u64, u64);
///     type Shared = TVar<u64>;
///     type PerWorker = ();
///     fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}
///     fn process<'t, X: TxOps<'t>>(&'t self, tx: &mut X, &(lo, hi): &'t (u64, u64), _: &mut (),
///                                  total: &'t TVar<u64>, ctx: &mut ProcessCtx<(u64, u64)>) -> Result<(), TxError> {
///         if hi - lo > 100 {
///             let mid = (lo + hi) / 2;
///             ctx.add_work_unit((lo, mid));
///             ctx.add_work_unit((mid, hi));
///             return Ok(());
///         }
///         tx.update(total, |t| t + (lo..hi).sum::<u64>())?;
///         Ok(())
///     }
/// }
///
/// let total = TVar::new(0);
/// let mut wl = Builder::new().threads(2).build(&RangeSum, &total)?;
/// wl.add_work_unit((1, 10_001));
/// let report = wl.run()?;
/// assert_eq!(total.load(), 10_000 * 10_001 / 2);
/// assert!(report.units > 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Skeleton: Sync {
    /// A work-unit.
    type Unit: Send;
    /// Data every worker reaches (transactional data lives in `TVar`s here).
    type Shared: Sync;
    /// Per-worker data (thread-private scratch or statistics; not rolled back on abort).
    type PerWorker;

    /// Makes a worker's local data, on the worker's thread.
    fn init_worker(&self, shared: &Self::Shared, worker: &WorkerInfo) -> Self::PerWorker;

    /// Processes one unit inside a transaction.
    ///
    /// # Errors
    ///
    /// Propagate the [`TxError`] of `tx`'s operations with `?`; the skeleton
    /// re-runs the transaction on a conflict.
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        unit: &'t Self::Unit,
        local: &mut Self::PerWorker,
        shared: &'t Self::Shared,
        ctx: &mut ProcessCtx<Self::Unit>,
    ) -> Result<(), TxError>;

    /// Makes the local data of a helper thread's shadow of `worker`'s next
    /// units, on the helper thread. It is dropped at the end (and after a
    /// shadow panicked), never given to `committed`, `update` or `destroy_worker`.
    ///
    /// The default calls [`init_worker`](Skeleton::init_worker); override
    /// it if that has effects other threads can see.
    fn init_helper(&self, shared: &Self::Shared, worker: &WorkerInfo) -> Self::PerWorker {
        self.init_worker(shared, worker)
    }

    /// Where `unit`'s data lives, for affinity scheduling
    /// ([`Builder::affinity_scheduling`](crate::Builder::affinity_scheduling)):
    /// the per-node pool queues the unit on that node, or in that worker's
    /// inbox ([`Affinity::Worker`]). Called outside any
    /// transaction, when the unit is added and when a worker starts it;
    /// keep it cheap (an index computation, an address). The default says
    /// [`Affinity::Anywhere`].
    fn affinity(&self, unit: &Self::Unit, shared: &Self::Shared) -> Affinity {
        let _ = (unit, shared);
        Affinity::Anywhere
    }

    /// Runs on the worker right after the transaction that processed
    /// `unit` committed, outside any transaction, with the `local` that
    /// run of `process` left. It runs once per processed unit and never
    /// for a helper's shadow. The default does nothing.
    ///
    /// Other workers may already see the committed values before this
    /// runs, and may run their own units meanwhile: use it for
    /// non-transactional state that only ever lags the transactional one
    /// (a hint that is safe to read stale).
    fn committed(&self, unit: &Self::Unit, local: &mut Self::PerWorker, shared: &Self::Shared) {
        let _ = (unit, local, shared);
    }

    /// Runs once per worker, in a transaction, when the pool is empty.
    ///
    /// # Errors
    ///
    /// As [`Skeleton::process`].
    fn update<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        local: &mut Self::PerWorker,
        shared: &'t Self::Shared,
    ) -> Result<(), TxError> {
        let _ = (tx, local, shared);
        Ok(())
    }

    /// Runs last on each worker, outside any transaction.
    fn destroy_worker(&self, local: Self::PerWorker, shared: &Self::Shared) {
        let _ = (local, shared);
    }
}

/// The context of one `process` call: the worker running it, and where
/// the units it adds go.
#[derive(Debug)]
pub struct ProcessCtx<U> {
    pub(crate) units: Vec<U>,
    worker: WorkerInfo,
}

impl<U> ProcessCtx<U> {
    /// An empty context for a worker (also what a helper thread's shadow uses).
    pub fn new(worker: WorkerInfo) -> Self {
        ProcessCtx { units: Vec::new(), worker }
    }

    /// Adds a unit to the pool when (and only if) this transaction commits.
    #[inline]
    pub fn add_work_unit(&mut self, unit: U) {
        self.units.push(unit);
    }

    /// The worker running this unit.
    pub fn worker(&self) -> &WorkerInfo {
        &self.worker
    }

    /// Forgets the units of an attempt (done before every attempt).
    pub fn clear(&mut self) {
        self.units.clear();
    }
}
