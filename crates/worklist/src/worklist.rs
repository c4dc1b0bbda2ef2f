//! The skeleton: configuration, the worker loop, and SkelAff.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;
use parking_lot::Mutex;
use skelaff_numa_alloc::{Mapping, NodeSet, Policy, Topology, pin};
use skelaff_stm::{ContentionManager, Stats, TxError, TxOps, atomically_with};

use crate::placement;
use crate::pool::{Distribution, Local, Pool, Signal};
use crate::report::{Decision, HelperFigures, RunReport, WorkerReport};
use crate::skeleton::{Ctx, Skeleton, WorkerInfo};

/// How worker threads are placed on CPUs.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum ThreadMapping {
    /// Spread over nodes, then caches, then cores; pinned (the default).
    #[default]
    Scatter,
    /// Packed onto as few cores/caches/nodes as possible; pinned.
    Compact,
    /// Not pinned: the OS scheduler decides and may migrate threads.
    None,
}

/// Where the memory a worker allocates is placed (through `NumaAlloc` when
/// it is the global allocator, else through the thread's kernel policy).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum PagePolicy {
    /// SkelAff: cyclic while the seed units are processed, bind as soon as
    /// workers start generating units (paper §4.3).
    #[default]
    Auto,
    /// The kernel's default: the first thread to touch a page owns it.
    FirstTouch,
    /// Each worker's allocations on its own node.
    Bind,
    /// Allocations dealt out page by page over all allowed nodes, in order.
    Cyclic,
    /// The kernel's interleave over all allowed nodes.
    Interleave,
}

/// Whether helper threads run beside the workers.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Helpers {
    /// On when idle CPUs share the last-level cache with the workers.
    Auto,
    /// Always on, placed as well as possible.
    On,
    /// Never (the default while no helper implementation is installed).
    #[default]
    Off,
}

macro_rules! text_enum {
    ($t:ty, $what:literal, $($v:ident = $s:literal),*) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self { $(<$t>::$v => $s),* })
            }
        }
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s.trim() {
                    $($s => Ok(<$t>::$v),)*
                    other => Err(format!(concat!("unknown ", $what, " `{}`; expected one of: {}"), other, [$($s),*].join(", "))),
                }
            }
        }
    };
}
text_enum!(ThreadMapping, "thread mapping", Scatter = "scatter", Compact = "compact", None = "none");
text_enum!(
    PagePolicy,
    "page policy",
    Auto = "auto",
    FirstTouch = "first-touch",
    Bind = "bind",
    Cyclic = "cyclic",
    Interleave = "interleave"
);
text_enum!(Helpers, "helpers setting", Auto = "auto", On = "on", Off = "off");

/// Errors of building or running a worklist.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `threads(0)`.
    #[error("a worklist needs at least one thread (got 0)")]
    ZeroThreads,
    /// The topology, pinning or a page policy failed.
    #[error(transparent)]
    Numa(#[from] skelaff_numa_alloc::Error),
    /// User code panicked; every worker was stopped.
    #[error("{} panicked: {message}; the run was stopped", .worker.map_or("the skeleton".to_owned(), |w| format!("worker {w}")))]
    Panicked {
        /// The worker whose code panicked.
        worker: Option<usize>,
        /// The panic message.
        message: String,
    },
}

/// How to run a worklist; made by [`Worklist::builder`].
#[derive(Clone, Debug)]
pub struct Builder {
    threads: usize,
    mapping: ThreadMapping,
    policy: PagePolicy,
    helpers: Helpers,
    distribution: Distribution,
    shuffle: Option<u64>,
    stm: skelaff_stm::Config,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            mapping: ThreadMapping::Scatter,
            policy: PagePolicy::Auto,
            helpers: Helpers::Off,
            distribution: Distribution::PerNode,
            shuffle: None,
            stm: skelaff_stm::Config::DEFAULT,
        }
    }
}

impl Builder {
    /// Worker threads (default: the available parallelism).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }
    /// Thread mapping (default scatter).
    pub fn mapping(mut self, m: ThreadMapping) -> Self {
        self.mapping = m;
        self
    }
    /// Page policy (default auto, SkelAff).
    pub fn policy(mut self, p: PagePolicy) -> Self {
        self.policy = p;
        self
    }
    /// Helper threads (default off).
    pub fn helpers(mut self, h: Helpers) -> Self {
        self.helpers = h;
        self
    }
    /// Distribution of units (default per node).
    pub fn distribution(mut self, d: Distribution) -> Self {
        self.distribution = d;
        self
    }
    /// Shuffles the seed units with this seed before the run (the paper
    /// shuffles its inputs); `None` keeps their order.
    pub fn shuffle(mut self, seed: Option<u64>) -> Self {
        self.shuffle = seed;
        self
    }
    /// The STM's contention manager.
    pub fn contention(mut self, cm: ContentionManager) -> Self {
        self.stm = skelaff_stm::Config::new().contention(cm);
        self
    }

    /// The worklist for `skeleton` over `shared`.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroThreads`].
    pub fn build<'a, S: Skeleton>(self, skeleton: &'a S, shared: &'a S::Shared) -> Result<Worklist<'a, S>, Error> {
        if self.threads == 0 {
            return Err(Error::ZeroThreads);
        }
        Ok(Worklist { skeleton, shared, cfg: self, seeds: Vec::new() })
    }
}

/// A transactional worklist: seed it with units, then [`run`](Worklist::run) it.
///
/// See [`Skeleton`] for an example.
pub struct Worklist<'a, S: Skeleton> {
    skeleton: &'a S,
    shared: &'a S::Shared,
    cfg: Builder,
    seeds: Vec<S::Unit>,
}

#[doc(hidden)]
#[derive(Debug)]
pub enum Unconfigured {}

impl Skeleton for Unconfigured {
    type Unit = ();
    type Shared = ();
    type Local = ();
    fn init_worker(&self, _: &(), _: &WorkerInfo) {}
    fn process<X: TxOps>(&self, _: &mut X, _: &(), _: &mut (), _: &(), _: &mut Ctx<()>) -> Result<(), TxError> {
        match *self {}
    }
}

impl Worklist<'static, Unconfigured> {
    /// The default configuration, to adjust and then [`build`](Builder::build).
    pub fn builder() -> Builder {
        Builder::default()
    }
}

impl<S: Skeleton> fmt::Debug for Worklist<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worklist").field("config", &self.cfg).field("seeds", &self.seeds.len()).finish()
    }
}

/// What every worker reaches during a run.
struct RunState<'a, S: Skeleton> {
    skeleton: &'a S,
    shared: &'a S::Shared,
    pool: Pool<S::Unit>,
    signal: Signal,
    start: Instant,
    stm: skelaff_stm::Config,
    policy: PagePolicy,
    allowed_nodes: NodeSet,
    page_size: usize,
    generating: AtomicBool,
    decisions: Mutex<Vec<Decision>>,
    panic: Mutex<Option<(Option<usize>, String)>>,
}

impl<S: Skeleton> RunState<'_, S> {
    fn decide(&self, worker: Option<usize>, what: String) {
        self.decisions.lock().push(Decision { at: self.start.elapsed(), worker, what });
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
    /// pinned or given its policy; [`Error::Panicked`] if user code panicked
    /// (every worker is stopped and joined first; remaining units are dropped).
    pub fn run(&mut self) -> Result<RunReport, Error> {
        let cfg = &self.cfg;
        // Read the topology before any thread is pinned (hwloc may rebind).
        let topo = Topology::get()?;
        let threads = cfg.threads;
        let plan = match cfg.mapping {
            ThreadMapping::Scatter => Some(Mapping::Scatter.plan(topo, threads)?),
            ThreadMapping::Compact => Some(Mapping::Compact.plan(topo, threads)?),
            ThreadMapping::None => None,
        };
        let infos: Vec<WorkerInfo> = (0..threads)
            .map(|index| {
                let slot = plan.as_ref().map(|p| p.slots[index]);
                WorkerInfo { index, cpu: slot.map(|s| s.cpu), node: slot.and_then(|s| s.node), threads }
            })
            .collect();
        let mut seeds = std::mem::take(&mut self.seeds);
        if let Some(seed) = cfg.shuffle {
            fastrand::Rng::with_seed(seed).shuffle(&mut seeds);
        }
        let nodes: Vec<Option<usize>> = infos.iter().map(|i| i.node).collect();
        let (pool, locals) = Pool::new(cfg.distribution, &nodes);
        let state = RunState {
            skeleton: self.skeleton,
            shared: self.shared,
            signal: Signal::new(seeds.len()),
            pool,
            start: Instant::now(),
            stm: cfg.stm,
            policy: cfg.policy,
            allowed_nodes: topo.allowed_nodes(),
            page_size: topo.page_size(),
            generating: AtomicBool::new(false),
            decisions: Mutex::new(Vec::new()),
            panic: Mutex::new(None),
        };
        state.pool.seed(seeds);
        let numa_alloc_global = placement::numa_alloc_is_global();
        match &plan {
            Some(p) => state.decide(
                None,
                format!(
                    "mapping {}: workers pinned to CPUs [{}]{}",
                    cfg.mapping,
                    p.slots.iter().map(|s| s.cpu.to_string()).collect::<Vec<_>>().join(","),
                    if p.oversubscribed { " (more workers than CPUs: CPUs shared)" } else { "" }
                ),
            ),
            None => state.decide(None, "mapping none: workers not pinned".to_owned()),
        }
        if cfg.policy == PagePolicy::Auto {
            state.decide(
                None,
                format!("SkelAff: page policy cyclic over nodes {} until workers generate units", state.allowed_nodes),
            );
        }
        let helpers_wanted = match cfg.helpers {
            Helpers::Off => false,
            Helpers::On => true,
            Helpers::Auto => plan.as_ref().is_some_and(|p| p.slots.iter().any(|s| s.helper.is_some())),
        };
        state.decide(
            None,
            match (cfg.helpers, helpers_wanted) {
                (Helpers::Off, _) => "helpers off".to_owned(),
                (_, false) => "helpers off: no idle CPU shares a last-level cache with a worker".to_owned(),
                (_, true) => {
                    "helpers requested, but this build has no helper implementation: running without".to_owned()
                }
            },
        );

        let start = Instant::now();
        let results: Vec<Option<WorkerReport>> = std::thread::scope(|scope| {
            let handles: Vec<_> = locals
                .into_iter()
                .zip(&infos)
                .map(|(local, info)| {
                    let state = &state;
                    let info = *info;
                    scope.spawn(move || {
                        let r = catch_unwind(AssertUnwindSafe(|| worker(state, info, local)));
                        match r {
                            Ok(Ok(report)) => Some(report),
                            Ok(Err(e)) => {
                                state.panic.lock().get_or_insert((Some(info.index), e.to_string()));
                                state.signal.stop();
                                None
                            }
                            Err(p) => {
                                state.panic.lock().get_or_insert((Some(info.index), panic_message(&*p)));
                                state.signal.stop();
                                None
                            }
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(None)).collect()
        });
        let wall = start.elapsed();
        if let Some((worker, message)) = state.panic.lock().take() {
            return Err(Error::Panicked { worker, message });
        }
        let workers: Vec<WorkerReport> = results.into_iter().flatten().collect();
        Ok(RunReport {
            wall,
            units: workers.iter().map(|w| w.units).sum(),
            threads,
            policy: cfg.policy.to_string(),
            mapping: cfg.mapping.to_string(),
            distribution: cfg.distribution.to_string(),
            numa_alloc_global,
            workers,
            decisions: std::mem::take(&mut *state.decisions.lock()),
            helpers: HelperFigures::default(),
        })
    }
}

fn panic_message(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned())
}

/// The policy a worker starts with.
fn initial_policy(policy: PagePolicy, info: &WorkerInfo, nodes: NodeSet, page_size: usize) -> Option<Policy> {
    match policy {
        PagePolicy::FirstTouch => Some(Policy::FirstTouch),
        PagePolicy::Auto | PagePolicy::Cyclic => Some(Policy::Cyclic { nodes, block: page_size }),
        PagePolicy::Interleave => Some(Policy::Interleave(nodes)),
        PagePolicy::Bind => Some(bind_policy(info)),
    }
}

fn bind_policy(info: &WorkerInfo) -> Policy {
    let node = info.node.or_else(|| pin::current_node().ok()).unwrap_or(0);
    Policy::Bind(NodeSet::try_single(node).unwrap_or_default())
}

/// One worker's life: pin, set the policy, init, loop, update, destroy.
fn worker<S: Skeleton>(
    state: &RunState<'_, S>,
    info: WorkerInfo,
    local: Local<S::Unit>,
) -> Result<WorkerReport, skelaff_numa_alloc::Error> {
    if let Some(cpu) = info.cpu {
        pin::pin_to_cpu(cpu)?;
    }
    if let Some(p) = initial_policy(state.policy, &info, state.allowed_nodes, state.page_size) {
        placement::set_worker_policy(p)?;
    }
    let mut switched = state.policy != PagePolicy::Auto;
    let _ = Stats::take_thread();
    let mut user = state.skeleton.init_worker(state.shared, &info);
    let mut ctx = Ctx::new(info);
    let mut units = 0u64;
    let mut idle = Duration::ZERO;
    let begin = Instant::now();
    let backoff = Backoff::new();
    let mut finished = 0usize;
    loop {
        if state.signal.stopped() {
            break;
        }
        // Note the epoch before looking: a unit published after this
        // moves it, so the wait below cannot miss it.
        let epoch = state.signal.epoch();
        if let Some(unit) = state.pool.take(&local) {
            backoff.reset();
            // Checked after taking the unit: the flag is raised before any
            // generated unit is published, so a generated unit is always
            // processed under bind.
            if !switched && state.generating.load(Ordering::Acquire) {
                let p = bind_policy(&info);
                placement::set_worker_policy(p)?;
                state.decide(Some(info.index), format!("SkelAff: page policy {p}"));
                switched = true;
            }
            atomically_with(&state.stm, |tx| {
                ctx.clear();
                state.skeleton.process(tx, &unit, &mut user, state.shared, &mut ctx)
            });
            units += 1;
            let n = ctx.units.len();
            if n > 0 {
                if state.policy == PagePolicy::Auto && !state.generating.swap(true, Ordering::Release) {
                    state.decide(
                        Some(info.index),
                        "SkelAff: workers generate new units: switching every worker to bind (its own node)".to_owned(),
                    );
                }
                state.signal.add(n);
                state.pool.push(&local, ctx.units.drain(..));
                state.signal.wake();
            }
            // Finished units are counted here and subtracted from the
            // shared count only when this worker runs dry: holding them back
            // keeps `pending` high, never low, so the run cannot end early,
            // and the busy path touches no shared counter.
            finished += 1;
            continue;
        }
        if finished > 0 {
            state.signal.finish_many(finished);
            finished = 0;
            continue;
        }
        if state.signal.done() {
            break;
        }
        let t = Instant::now();
        if backoff.is_completed() {
            state.signal.wait(epoch);
        } else {
            backoff.snooze();
        }
        idle += t.elapsed();
    }
    let total = begin.elapsed();
    if !state.signal.stopped() {
        atomically_with(&state.stm, |tx| state.skeleton.update(tx, &mut user, state.shared));
    }
    state.skeleton.destroy_worker(user, state.shared);
    Ok(WorkerReport {
        index: info.index,
        cpu: info.cpu,
        node: info.node,
        units,
        stats: Stats::take_thread(),
        busy: total.saturating_sub(idle),
        idle,
    })
}
