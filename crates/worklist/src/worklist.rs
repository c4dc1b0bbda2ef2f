//! The skeleton: configuration, the worker loop, and SkelAff.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;
use parking_lot::Mutex;
use skelaff_numa_alloc::{Mapping, NodeSet, Plan, Policy, Topology, pin};
use skelaff_stm::{ContentionManager, Stats, TxError, TxOps, atomically_with};

use crate::assist::{Assist, HelperPlace, LinkFigures, NoAssist};
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
    /// A helper for each worker that has an idle CPU sharing its
    /// last-level cache; none for the others.
    Auto,
    /// A helper for every worker: on an idle CPU sharing its last-level
    /// cache where there is one, else as well as possible (a CPU of the
    /// same cache used by another thread, else any other CPU), as the
    /// report's decisions say.
    On,
    /// No helpers (the default).
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
    /// The OS refused to start a worker thread (thread or memory limits);
    /// the workers already started were stopped.
    #[error("worker {worker}'s thread could not start: {source}; the run was stopped")]
    Spawn {
        /// The worker whose thread did not start.
        worker: usize,
        /// What the OS said.
        source: std::io::Error,
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
        // The STM's one-time set-up belongs before `run`, not in it.
        skelaff_stm::startup();
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

/// Why a worker did not start; the others were stopped.
enum Refused {
    /// The worker's CPU could not be taken (not allowed, or the kernel refused).
    Pin(skelaff_numa_alloc::Error),
    /// The OS refused the thread.
    Thread(usize, std::io::Error),
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
    /// (every worker is stopped and joined first; remaining units are dropped);
    /// [`Error::Spawn`] if the OS refuses a worker thread (likewise).
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
        let places: Vec<Option<HelperPlace>> = if A::ENABLED {
            let (places, notes) = helper_places(cfg.helpers, threads, plan.as_ref(), topo);
            for n in notes {
                state.decide(None, n);
            }
            places
        } else {
            if cfg.helpers != Helpers::Off {
                state.decide(
                    None,
                    format!(
                        "helpers {}: no helper implementation given (Worklist::run_with): running without",
                        cfg.helpers
                    ),
                );
            }
            vec![None; threads]
        };
        let links: Vec<A::Link> = infos.iter().zip(&places).map(|(i, p)| assist.link(i, *p)).collect();

        let start = Instant::now();
        let (results, refused): (Vec<Option<WorkerReport>>, _) = std::thread::scope(|scope| {
            // Workers first: a helper exists only for a worker that runs, so
            // every helper is told to finish.
            let handles: Vec<_> = locals
                .into_iter()
                .zip(infos.iter().zip(&links).zip(&places))
                .map(|(local, ((info, link), place))| {
                    let state = &state;
                    let info = *info;
                    let assisted = place.is_some();
                    // Pinned from birth: this thread takes the worker's CPU
                    // while it creates the worker, which inherits the mask
                    // (see `pin::pinned_while`). A worker that pinned itself
                    // could wait a time slice queued on a busy CPU first.
                    let born_on = match info.cpu.map(pin::pinned_while).transpose() {
                        Ok(guard) => guard,
                        Err(e) => {
                            state.signal.stop();
                            return Err(Refused::Pin(e));
                        }
                    };
                    let spawned = std::thread::Builder::new()
                        .name(format!("skelaff-worker-{}", info.index))
                        .spawn_scoped(scope, move || {
                            // Tells the helper to stop on every way out, unwinding included.
                            let _finish = Finish { assist, link };
                            let r =
                                catch_unwind(AssertUnwindSafe(|| worker(state, info, local, assist, link, assisted)));
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
                        });
                    drop(born_on);
                    // The OS may refuse a thread (limits, memory): the run
                    // stops and `run` returns the reason, as for a panic.
                    spawned.map_err(|e| {
                        state.signal.stop();
                        Refused::Thread(info.index, e)
                    })
                })
                .collect();
            let helpers: Vec<_> = if A::ENABLED {
                infos
                    .iter()
                    .zip(&links)
                    .zip(&places)
                    .zip(&handles)
                    // No helper for a worker whose thread did not start:
                    // nobody would tell it to finish.
                    .filter(|(_, h)| h.is_ok())
                    .filter_map(|(((info, link), place), _)| place.map(|p| (info, link, p)))
                    .map(|(info, link, place)| {
                        let state = &state;
                        let _born_on = place.cpu.and_then(|c| pin::pinned_while(c).ok());
                        let spawned = std::thread::Builder::new()
                            .name(format!("skelaff-helper-{}", info.index))
                            .spawn_scoped(scope, move || {
                                if let Some(cpu) = place.cpu {
                                    if let Err(e) = pin::pin_to_cpu(cpu) {
                                        state.decide(
                                            Some(info.index),
                                            format!("helper not pinned to CPU {cpu} ({e}): it runs unpinned"),
                                        );
                                    }
                                }
                                let r = catch_unwind(AssertUnwindSafe(|| {
                                    assist.helper(link, state.skeleton, state.shared, info)
                                }));
                                if let Err(p) = r {
                                    state.decide(
                                        Some(info.index),
                                        format!(
                                            "helper stopped by a panic: {}; the worker goes on alone",
                                            panic_message(&*p)
                                        ),
                                    );
                                }
                            });
                        spawned.map_err(|e| {
                            state.decide(
                                Some(info.index),
                                format!("helper thread could not start ({e}): none for this worker"),
                            );
                        })
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let mut refused = None;
            let results = handles
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
        match refused {
            Some(Refused::Pin(e)) => return Err(Error::Numa(e)),
            Some(Refused::Thread(worker, source)) => return Err(Error::Spawn { worker, source }),
            None => {}
        }
        let wall = start.elapsed();
        if let Some((worker, message)) = state.panic.lock().take() {
            return Err(Error::Panicked { worker, message });
        }
        let workers: Vec<WorkerReport> = results.into_iter().flatten().collect();
        let mut helpers = HelperFigures::default();
        if A::ENABLED {
            for (link, place) in links.into_iter().zip(&places) {
                let LinkFigures { worker, helper, notes } = assist.figures(link);
                helpers.per_worker.push(worker);
                if place.is_some() {
                    helpers.per_helper.push(helper.unwrap_or_default());
                }
                helpers.notes.extend(notes);
            }
        }
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
            helpers,
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

/// Calls [`Assist::finish`] when dropped: the worker's way out, unwinding included.
struct Finish<'l, S: Skeleton, A: Assist<S>> {
    assist: &'l A,
    link: &'l A::Link,
}

impl<S: Skeleton, A: Assist<S>> Drop for Finish<'_, S, A> {
    fn drop(&mut self) {
        self.assist.finish(self.link);
    }
}

/// Where each worker's helper runs, and the decisions to report.
fn helper_places(
    helpers: Helpers,
    threads: usize,
    plan: Option<&Plan>,
    topo: &Topology,
) -> (Vec<Option<HelperPlace>>, Vec<String>) {
    let mut notes = Vec::new();
    let Some(plan) = plan else {
        return match helpers {
            Helpers::Off => (vec![None; threads], vec!["helpers off".to_owned()]),
            Helpers::Auto => (
                vec![None; threads],
                vec!["helpers auto: off, because the workers are not pinned (mapping none), so no cache is known to be shared".to_owned()],
            ),
            Helpers::On => (
                vec![Some(HelperPlace { cpu: None, dedicated: false }); threads],
                vec!["helpers on: not pinned (mapping none); the OS places them".to_owned()],
            ),
        };
    };
    let n = plan.slots.len();
    if helpers == Helpers::Off {
        return (vec![None; n], vec!["helpers off".to_owned()]);
    }
    // CPUs taken by workers and by dedicated helpers.
    let mut load: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for s in &plan.slots {
        *load.entry(s.cpu).or_default() += 1;
        if let Some(h) = s.helper {
            *load.entry(h).or_default() += 1;
        }
    }
    let mut places = Vec::with_capacity(n);
    for (w, s) in plan.slots.iter().enumerate() {
        if let Some(h) = s.helper {
            places.push(Some(HelperPlace { cpu: Some(h), dedicated: true }));
            continue;
        }
        if helpers == Helpers::Auto {
            notes.push(format!("helpers auto: worker {w} gets none (no idle CPU shares its last-level cache)"));
            places.push(None);
            continue;
        }
        // On, best effort: the least loaded other CPU of the worker's cache
        // group, else the least loaded other CPU.
        let group = topo.pu(s.cpu).map(|p| p.cache_group);
        let shares = |c: usize| group.is_some() && topo.pu(c).map(|p| p.cache_group) == group;
        let candidates = topo.allowed_cpus().iter().filter(|&c| c != s.cpu);
        let best =
            candidates.min_by_key(|&c| (!shares(c), load.get(&c).copied().unwrap_or(0), c)).map(|c| (c, shares(c)));
        match best {
            Some((c, same_cache)) => {
                *load.entry(c).or_default() += 1;
                notes.push(format!(
                    "helpers on: worker {w} has no idle CPU sharing its last-level cache; its helper shares CPU {c}{}",
                    if same_cache { " (same cache) with other threads" } else { ", which does not share its cache" }
                ));
                places.push(Some(HelperPlace { cpu: Some(c), dedicated: false }));
            }
            None => {
                notes.push(format!("helpers on: worker {w}'s helper shares its worker's CPU {} (the only one)", s.cpu));
                places.push(Some(HelperPlace { cpu: Some(s.cpu), dedicated: false }));
            }
        }
    }
    let dedicated: Vec<String> = plan
        .slots
        .iter()
        .zip(&places)
        .filter_map(|(s, p)| p.filter(|p| p.dedicated).and_then(|p| p.cpu).map(|h| format!("{}->{h}", s.cpu)))
        .collect();
    if !dedicated.is_empty() {
        notes.insert(
            0,
            format!(
                "helpers {helpers}: worker CPU -> helper CPU sharing its last-level cache: [{}]",
                dedicated.join(",")
            ),
        );
    }
    (places, notes)
}

/// One worker's life: pin, set the policy, init, loop, update, destroy.
///
/// With `assisted` (only when `A::ENABLED`), the loop is Fig. 6's: the
/// worker holds the next unit besides the current one and tells its helper
/// through `assist`; otherwise it is the plain loop (`A::ENABLED` is a
/// constant, so `run()` compiles without any of it).
fn worker<S: Skeleton, A: Assist<S>>(
    state: &RunState<'_, S>,
    info: WorkerInfo,
    local: Local<S::Unit>,
    assist: &A,
    link: &A::Link,
    assisted: bool,
) -> Result<WorkerReport, skelaff_numa_alloc::Error> {
    // Already pinned: created under its CPU's mask (see `run_inner`).
    if let Some(p) = initial_policy(state.policy, &info, state.allowed_nodes, state.page_size) {
        placement::set_worker_policy(p)?;
    }
    let assisted = A::ENABLED && assisted;
    if A::ENABLED {
        assist.worker_start(link);
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
    // With a helper: the unit taken ahead and handed over (Fig. 6).
    let mut ahead: Option<S::Unit> = None;
    loop {
        if state.signal.stopped() {
            break;
        }
        // Note the epoch before looking: a unit published after this
        // moves it, so the wait below cannot miss it.
        let epoch = state.signal.epoch();
        let taken = if assisted {
            match ahead.take() {
                Some(u) => Some(u),
                None => state.pool.take(&local),
            }
        } else {
            state.pool.take(&local)
        };
        if let Some(unit) = taken {
            backoff.reset();
            if assisted {
                // Take one more and hand it over; the first time this makes two.
                ahead = state.pool.take(&local);
                assist.handoff(link, ahead.as_ref());
            }
            // Checked after taking the unit: the flag is raised before any
            // generated unit is published, so a generated unit is always
            // processed under bind.
            if !switched && state.generating.load(Ordering::Acquire) {
                let p = bind_policy(&info);
                placement::set_worker_policy(p)?;
                state.decide(Some(info.index), format!("SkelAff: page policy {p}"));
                switched = true;
            }
            if assisted {
                let mut attempt = 0u32;
                atomically_with(&state.stm, |tx| {
                    if attempt > 0 {
                        assist.restarted(link);
                    }
                    attempt += 1;
                    ctx.clear();
                    state.skeleton.process(tx, &unit, &mut user, state.shared, &mut ctx)
                });
                assist.committed(link);
            } else {
                atomically_with(&state.stm, |tx| {
                    ctx.clear();
                    state.skeleton.process(tx, &unit, &mut user, state.shared, &mut ctx)
                });
            }
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
    if A::ENABLED {
        assist.worker_end(link);
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
