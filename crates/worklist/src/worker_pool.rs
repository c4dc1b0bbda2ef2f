//! The worker threads that outlive runs: created and pinned once, parked
//! between runs, serving the runs of any skeleton from any thread, one
//! run at a time (the hand-off is `crew`'s), and their helper threads
//! (`helper_crew`), likewise. Also the process-wide pools that
//! [`Worklist::run`](crate::Worklist::run) uses, one per layout.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use parking_lot::Mutex;
use skelaff_numa_alloc::Topology;
use skelaff_numa_alloc::pin::{self, Birthplace};

use crate::config::Builder;
use crate::crew::Crew;
use crate::error::Error;
use crate::helper_crew::HelperThreads;
use crate::placement::ThreadLayout;
use crate::skeleton::WorkerInfo;

/// Pinned worker threads that serve any number of runs.
///
/// Built once from a [`Builder`]'s thread count and placement (the
/// topology is read and the threads are laid out, created and pinned
/// here, not in every run), the pool's threads park between runs and
/// serve the runs of any [`Skeleton`](crate::Skeleton) given with
/// [`Worklist::run_on`](crate::Worklist::run_on) (or
/// [`run_with_on`](crate::Worklist::run_with_on), or awaited with
/// [`Worklist::submit`](crate::Worklist::submit)) from any thread.
/// Everything else of a run stays per run: its page policy (each worker
/// makes the run's policy its thread's when the run starts, and SkelAff's
/// switch to bind happens within the run; a thread keeps the policy
/// between runs, so that a run with the same one only reads the kernel's
/// back, and sets it again if code on the thread changed it), its STM
/// settings, which workers get a helper, the helpers'
/// channels and figures, and its migration thread.
///
/// # Helper threads
///
/// The pool also owns the helper threads of runs given with
/// [`Worklist::run_with_on`](crate::Worklist::run_with_on) (or
/// [`run_with`](crate::Worklist::run_with)): one per worker whose
/// [layout](WorkerPool::layout) names a helper place, pinned there from
/// birth, parked between runs like the workers. They are created on the
/// first run that places a helper, not by [`WorkerPool::new`]: most pools
/// (every process-wide one, one per layout) never run a helper, and would
/// otherwise hold twice the threads for nothing, while a pool that does
/// pays for them (tens of microseconds a thread) once, in its first such
/// run. Each run hands them its own helper body for the workers it placed
/// (the others return at once). Runs are served one at a time, and reach
/// the helpers' crew in the order they reach the workers': a run never
/// shares a helper thread with another. The helpers of the previous run
/// may still be returning when the next run's workers start (a helper
/// returns soon after its worker's last unit); the next run's helpers then
/// start that much later, as helpers created by the run itself did.
/// A helper thread the OS refuses, or that cannot be born on its CPU (it
/// then runs unpinned), does not fail the pool or the run: every run that
/// places that helper records it ([`Decision::HelperNotStarted`],
/// [`Decision::HelperNotPinned`]), as when each run made its own helpers.
/// [`helper_threads`](WorkerPool::helper_threads) says how many there are.
///
/// [`Decision::HelperNotStarted`]: crate::Decision::HelperNotStarted
/// [`Decision::HelperNotPinned`]: crate::Decision::HelperNotPinned
///
/// # Concurrent runs
///
/// A pool serves one run at a time; runs given while it is busy queue and
/// start in the order they were given (first come, first served), sync
/// and async alike. A run's [`RunReport::wall`](crate::RunReport::wall)
/// does not count its time in the queue. A run given from one of the
/// pool's own threads (a skeleton that runs a nested worklist) would wait
/// for itself: [`Worklist::run`](crate::Worklist::run) then uses fresh
/// per-run threads instead, and [`run_on`](crate::Worklist::run_on) with
/// this pool is refused ([`Error::NestedRun`]).
///
/// # Between runs
///
/// After a run, each of the pool's threads spins briefly, then yields its
/// CPU (`sched_yield`) for up to 100 µs, and only then blocks: a run given
/// within that time starts without a kernel wake-up (an empty run on a warm
/// two-worker pool takes about 15 µs on two cores, `benches/pool.rs`). So
/// an idle pool uses some CPU for 100 µs after each run, and none after.
/// The caller waits for its run the same way; a caller that shares a CPU
/// with a worker yields from the start rather than spin.
///
/// # Lifecycle
///
/// Dropping the pool waits for the runs already given to it (queued runs
/// of other threads, or submitted futures) to finish, then joins its
/// threads, helpers included. A panic in user code fails that run only
/// ([`Error::Panicked`]); a panic in a helper body is noted in its run's
/// report ([`Decision::HelperPanicked`](crate::Decision::HelperPanicked));
/// either way the pool serves the next one. A thread that
/// cannot be created or pinned fails [`WorkerPool::new`] with a typed
/// error, and the threads already created are joined.
///
/// # Examples
///
/// ```
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
/// let total = TVar::new(0);
/// for round in 1..=10 {
///     // Each run borrows `total` only until `run_on` returns.
///     let mut wl = builder.clone().build(&Add, &total)?;
///     wl.add_work_units(1..=100);
///     let report = wl.run_on(&pool)?;
///     assert_eq!((report.units, total.load()), (100, 5050 * round));
/// }
/// assert_eq!(pool.threads(), 2);
/// # Ok::<(), skelaff_worklist::Error>(())
/// ```
pub struct WorkerPool {
    pub(crate) crew: Arc<Crew>,
    pub(crate) layout: ThreadLayout,
    pub(crate) infos: Vec<WorkerInfo>,
    pub(crate) mapping: String,
    id: u64,
    handles: Vec<JoinHandle<()>>,
    /// Made by the first run that places a helper.
    helpers: OnceLock<HelperThreads>,
    /// As many workers as the CPUs the process may use (asked once:
    /// `available_parallelism` reads the cgroup's files every time).
    takes_every_cpu: bool,
}

impl WorkerPool {
    /// Whether the calling thread, about to wait for a run, shares a CPU
    /// with the pool's workers: it runs on a CPU a worker is pinned to, or
    /// the workers are as many as the CPUs the process may use. Then it
    /// waits by yielding (see [`Crew::run_scoped_waiting`]).
    pub(crate) fn caller_shares_cpu(&self) -> bool {
        if self.takes_every_cpu {
            return true;
        }
        match skelaff_numa_alloc::pin::current_cpu() {
            Ok(cpu) => self.infos.iter().any(|w| w.cpu == Some(cpu)),
            Err(_) => false,
        }
    }
}

impl fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerPool")
            .field("threads", &self.infos.len())
            .field("mapping", &self.mapping)
            .field("layout", &self.layout)
            .field("helper_threads", &self.helper_threads())
            .finish_non_exhaustive()
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The id of the pool this thread serves (0: none).
    static MEMBER_OF: Cell<u64> = const { Cell::new(0) };
}

impl WorkerPool {
    /// Builds a pool of `builder`'s thread count, laid out by its placement
    /// (its thread mapping): creates every worker thread, pinned from its
    /// birth to its CPU, and parks it. The builder's other settings are
    /// the runs', not the pool's.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroThreads`]; [`Error::Numa`] if the topology cannot be
    /// read or a worker's CPU cannot be taken; [`Error::Placement`] if the
    /// placement laid out the wrong number of workers; [`Error::Spawn`] if
    /// the OS refuses a thread. The threads already created are joined
    /// first.
    pub fn new(builder: &Builder) -> Result<WorkerPool, Error> {
        let layout = layout_of(builder)?;
        WorkerPool::with_layout(layout, builder.placement.name())
    }

    /// Builds a pool for a layout already checked.
    fn with_layout(layout: ThreadLayout, mapping: String) -> Result<WorkerPool, Error> {
        let threads = layout.workers.len();
        let infos: Vec<WorkerInfo> = layout
            .workers
            .iter()
            .enumerate()
            .map(|(index, w)| WorkerInfo { index, cpu: w.cpu, node: w.node, threads })
            .collect();
        let crew = Arc::new(Crew::new(threads));
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let mut pool = WorkerPool {
            crew,
            layout,
            infos,
            mapping,
            id,
            handles: Vec::with_capacity(threads),
            helpers: OnceLock::new(),
            takes_every_cpu: threads >= std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        for index in 0..threads {
            // Pinned from birth (see `pin::spawn_pinned`). On error `pool`
            // drops, which stops and joins the threads created so far.
            let place = pool.infos[index].cpu.map_or(Birthplace::Inherited, Birthplace::Cpu);
            let crew = pool.crew.clone();
            let spawned = pin::spawn_pinned(format!("skelaff-worker-{index}"), place, move || {
                MEMBER_OF.with(|m| m.set(id));
                crew.serve(index);
            });
            pool.handles.push(spawned.map_err(|e| match e {
                skelaff_numa_alloc::Error::Spawn { source, .. } => Error::Spawn { worker: index, source },
                other => Error::Numa(other),
            })?);
        }
        Ok(pool)
    }

    /// The number of worker threads.
    pub fn threads(&self) -> usize {
        self.infos.len()
    }

    /// Where each worker runs.
    pub fn workers(&self) -> &[WorkerInfo] {
        &self.infos
    }

    /// The layout the placement gave (workers and their helpers' places).
    pub fn layout(&self) -> &ThreadLayout {
        &self.layout
    }

    /// The number of helper threads the pool holds: 0 until a run placed
    /// a helper, then one per worker whose layout names a helper place
    /// (less any the OS refused).
    pub fn helper_threads(&self) -> usize {
        self.helpers.get().map_or(0, HelperThreads::threads)
    }

    /// The pool's helper threads, created (and pinned) on the first call.
    pub(crate) fn helpers(&self) -> &HelperThreads {
        let id = self.id;
        // A nested run given from a helper thread, like one from a worker,
        // would wait for itself: helpers are members too.
        self.helpers.get_or_init(|| HelperThreads::spawn(&self.layout, move || MEMBER_OF.with(|m| m.set(id))))
    }

    /// Whether the calling thread is one of this pool's workers or helpers.
    pub(crate) fn is_member(&self) -> bool {
        MEMBER_OF.with(Cell::get) == self.id
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        let handles = std::mem::take(&mut self.handles);
        let helpers = self.helpers.take();
        let crew = self.crew.clone();
        // The workers first; then the helpers, whose crew may still be
        // finishing the last run's helper job (its caller waits for that).
        let join = move || {
            crew.shutdown();
            for h in handles {
                let _ = h.join();
            }
            if let Some(helpers) = helpers {
                helpers.join();
            }
        };
        if self.is_member() {
            // Dropped on one of its own threads (the last owner of a pool
            // moved into a run's data): that thread cannot wait for the
            // pool to go idle or join itself. Another thread does both.
            let _ = std::thread::Builder::new().name("skelaff-pool-drop".into()).spawn(join);
            return;
        }
        join();
    }
}

/// The layout `builder` asks for, checked.
pub(crate) fn layout_of(builder: &Builder) -> Result<ThreadLayout, Error> {
    if builder.threads == 0 {
        return Err(Error::ZeroThreads);
    }
    // Read the topology before any thread is pinned (hwloc, with the
    // feature `hwloc`, may rebind).
    let topo = Topology::get()?;
    let layout = builder.placement.place(topo, builder.threads)?;
    if layout.workers.len() != builder.threads {
        return Err(Error::Placement {
            placement: builder.placement.name(),
            asked: builder.threads,
            got: layout.workers.len(),
        });
    }
    Ok(layout)
}

/// The process-wide pools, one per layout (and placement name), built on
/// first use and kept for the life of the process.
static PROCESS_POOLS: Mutex<Vec<Arc<WorkerPool>>> = Mutex::new(Vec::new());

/// The process-wide pool for `layout`, built if there is none yet.
pub(crate) fn process_pool(layout: ThreadLayout, mapping: String) -> Result<Arc<WorkerPool>, Error> {
    let mut pools = PROCESS_POOLS.lock();
    if let Some(p) = pools.iter().find(|p| p.layout == layout && p.mapping == mapping) {
        return Ok(p.clone());
    }
    let pool = Arc::new(WorkerPool::with_layout(layout, mapping)?);
    pools.push(pool.clone());
    Ok(pool)
}

/// A pool of fresh threads for one run (joined when dropped).
pub(crate) fn per_run_pool(layout: ThreadLayout, mapping: String) -> Result<WorkerPool, Error> {
    WorkerPool::with_layout(layout, mapping)
}
