//! How a run is configured: the settings a user names (page policy,
//! helpers, assisted transactions; the thread mapping is `placement`'s) and
//! the [`Builder`] that gathers them. The builder's last step,
//! [`Builder::build`], is in `run`, beside the worklist it makes: the
//! settings do not depend on the run.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use skelaff_locality::Sampling;
use skelaff_stm::{ContentionManager, Throttle};

use crate::error::Error;
use crate::placement::{ThreadMapping, ThreadPlacement, TopologyPlacement};
use crate::pool::{Distribution, LocalOrder};
use skelaff_locality::OracleStretch;

/// Where the memory a worker allocates is placed (through `NumaAlloc` when
/// it is the global allocator, else through the thread's kernel policy).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
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
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
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

skelaff_numa_alloc::enum_names! {
    PagePolicy {
        Auto => "auto",
        FirstTouch => "first-touch",
        Bind => "bind",
        Cyclic => "cyclic",
        Interleave => "interleave",
    }
    parse: Error = unknown_policy;
}

skelaff_numa_alloc::enum_names! {
    Helpers {
        Auto => "auto",
        On => "on",
        Off => "off",
    }
    parse: Error = unknown_helpers;
}

fn unknown_policy(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "page policy",
        given: given.to_owned(),
        allowed: PagePolicy::VARIANTS,
    })
}

fn unknown_helpers(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "helpers setting",
        given: given.to_owned(),
        allowed: Helpers::VARIANTS,
    })
}

/// Whether the workers' transactions run assisted (STM²): an auxiliary
/// thread beside each worker validates its reads (see
/// [`skelaff_stm::Assist`]). A worker with no free CPU sharing its cache
/// for its auxiliary runs plain, as the STM's pairing decides.
///
/// # Examples
///
/// ```
/// use skelaff_worklist::TxAssist;
///
/// let a: TxAssist = "on+throttle".parse().unwrap();
/// assert_eq!(a, TxAssist::OnThrottle);
/// assert_eq!(a.to_string(), "on+throttle");
/// let e = "maybe".parse::<TxAssist>().unwrap_err();
/// assert!(e.to_string().contains("off, on, on+throttle"), "{e}");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub enum TxAssist {
    /// Plain transactions (the default).
    #[default]
    #[serde(rename = "off")]
    Off,
    /// Assisted, every throttling lever off.
    #[serde(rename = "on")]
    On,
    /// Assisted, with every throttling lever on ([`skelaff_stm::Throttle::ALL`]).
    #[serde(rename = "on+throttle")]
    OnThrottle,
}

impl TxAssist {
    /// The STM settings this stands for.
    pub fn stm_settings(self) -> (skelaff_stm::Assist, Throttle) {
        match self {
            TxAssist::Off => (skelaff_stm::Assist::Off, Throttle::NONE),
            TxAssist::On => (skelaff_stm::Assist::Validation, Throttle::NONE),
            TxAssist::OnThrottle => (skelaff_stm::Assist::Validation, Throttle::ALL),
        }
    }
}

skelaff_numa_alloc::enum_names! {
    TxAssist {
        Off => "off",
        On => "on",
        OnThrottle => "on+throttle",
    }
    parse: Error = unknown_tx_assist;
}

fn unknown_tx_assist(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "assist setting",
        given: given.to_owned(),
        allowed: TxAssist::VARIANTS,
    })
}

/// How to run a worklist: adjust the defaults, then [`build`](Builder::build).
///
/// # Examples
///
/// ```
/// use skelaff_worklist::{Builder, Helpers, PagePolicy, ThreadMapping};
///
/// let b = Builder::new().threads(2).mapping("compact".parse()?).policy(PagePolicy::Bind).helpers(Helpers::Off);
/// assert_eq!(b.thread_count(), 2);
/// let e = "diagonal".parse::<ThreadMapping>().unwrap_err();
/// assert_eq!(e.to_string(), "unknown thread mapping `diagonal`; expected one of: scatter, compact, none");
/// # Ok::<(), skelaff_worklist::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    pub(crate) threads: usize,
    pub(crate) placement: Arc<dyn ThreadPlacement>,
    pub(crate) policy: PagePolicy,
    pub(crate) helpers: Helpers,
    pub(crate) distribution: Distribution,
    pub(crate) local_order: LocalOrder,
    pub(crate) shuffle: Option<u64>,
    pub(crate) stm: skelaff_stm::Config,
    /// The workers' transactions are assisted (the mode is chosen per run).
    pub(crate) assisted: bool,
    pub(crate) access_profile: Option<Sampling>,
    pub(crate) affinity: bool,
    pub(crate) migration: Option<skelaff_locality::MigrationRule>,
    pub(crate) oracle: Option<OracleStretch>,
    /// Every run creates and joins its own threads (no process-wide pool).
    pub(crate) per_run_threads: bool,
    /// A run with one worker takes the STM's solo gate.
    pub(crate) solo: bool,
    /// Whether the workers' writing commits move the STM's clock.
    pub(crate) clock: skelaff_stm::ClockPolicy,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// The default configuration: one worker per available CPU, scattered
    /// and pinned, SkelAff's page policy, no helpers, a queue per node.
    pub fn new() -> Self {
        Builder {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            placement: Arc::new(TopologyPlacement::new(ThreadMapping::Scatter)),
            policy: PagePolicy::Auto,
            helpers: Helpers::Off,
            distribution: Distribution::PerNode,
            local_order: LocalOrder::Fifo,
            shuffle: None,
            stm: skelaff_stm::Config::DEFAULT,
            assisted: false,
            access_profile: None,
            affinity: false,
            migration: None,
            oracle: None,
            per_run_threads: false,
            solo: true,
            clock: skelaff_stm::ClockPolicy::Commits,
        }
    }

    /// Worker threads (default: the available parallelism).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }

    /// The worker threads asked for.
    pub fn thread_count(&self) -> usize {
        self.threads
    }

    /// Thread mapping of the default placement (default scatter); replaces
    /// a placement given with [`placement`](Builder::placement).
    pub fn mapping(mut self, m: ThreadMapping) -> Self {
        self.placement = Arc::new(TopologyPlacement::new(m));
        self
    }

    /// Where workers and helpers run: a strategy of the caller's (see
    /// [`ThreadPlacement`]); replaces the mapping.
    pub fn placement(mut self, p: impl ThreadPlacement + 'static) -> Self {
        self.placement = Arc::new(p);
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

    /// The order in which each worker runs the units in its own deque
    /// (default [`LocalOrder::Fifo`]; the per-node distribution only).
    pub fn local_order(mut self, o: LocalOrder) -> Self {
        self.local_order = o;
        self
    }

    /// Shuffles the seed units with this seed before the run (the paper
    /// shuffles its inputs); `None` keeps their order.
    pub fn shuffle(mut self, seed: Option<u64>) -> Self {
        self.shuffle = seed;
        self
    }

    /// The STM's contention manager (the other STM settings are kept).
    pub fn contention(mut self, cm: ContentionManager) -> Self {
        self.stm = self.stm.contention(cm);
        self
    }

    /// Whether the workers' writing commits move the STM's global clock
    /// (default [`ClockPolicy::Commits`](skelaff_stm::ClockPolicy); see
    /// [`ClockPolicy`](skelaff_stm::ClockPolicy) for when `Readers` pays):
    /// each worker sets it for its thread
    /// ([`set_thread_clock`](skelaff_stm::set_thread_clock)) for the run and
    /// puts its own back after. The run report names it.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::ClockPolicy;
    /// use skelaff_worklist::Builder;
    ///
    /// let builder = Builder::new().threads(2).clock(ClockPolicy::Readers);
    /// # let _ = builder;
    /// ```
    pub fn clock(mut self, policy: skelaff_stm::ClockPolicy) -> Self {
        self.clock = policy;
        self
    }

    /// Assisted transactions for the workers (default [`TxAssist::Off`]);
    /// the other STM settings are kept.
    pub fn tx_assist(mut self, assist: TxAssist) -> Self {
        let (mode, throttle) = assist.stm_settings();
        self.stm = self.stm.throttle(throttle);
        self.assisted = mode == skelaff_stm::Assist::Validation;
        self
    }

    /// Records a sampled page-access profile of the run (default none):
    /// every `period`-th transactional access of each worker, at most
    /// `capacity` samples per worker (thinned evenly beyond), attributed to
    /// the pages' nodes at the end; it is in
    /// [`RunReport::access_profile`](crate::RunReport::access_profile). See
    /// [`AccessProfile`](crate::AccessProfile) for what it misses.
    pub fn access_profile(mut self, sampling: Option<Sampling>) -> Self {
        self.access_profile = sampling;
        self
    }

    /// Affinity scheduling (default off): each unit whose
    /// [`Skeleton::affinity`](crate::Skeleton::affinity) names a node (or
    /// an address the kernel has placed) is queued on that node, and each
    /// unit that names a worker in that worker's inbox, seeds and generated
    /// units alike; a worker still steals from other nodes and workers
    /// when it has nothing of its own. Only the per-node distribution has
    /// queues per node and per worker; with [`Distribution::Shared`] the
    /// hint is ignored. What it did is in each
    /// [`WorkerReport::affinity`](crate::WorkerReport::affinity).
    pub fn affinity_scheduling(mut self, on: bool) -> Self {
        self.affinity = on;
        self
    }

    /// Migration as the run goes (the NUCA study's scheme, applied for
    /// real; default none): a background thread takes the workers' access
    /// samples every epoch of `rule` and moves the hottest misplaced pages
    /// to their dominant accessor's node (`move_pages`, one batch per epoch). Needs
    /// an [`access_profile`](Builder::access_profile) (the samples are the
    /// profile's); the profile's pages are then attributed to the node they
    /// had at each access, and the moves are in
    /// [`AccessProfile::migration`](crate::AccessProfile::migration).
    pub fn migration(mut self, rule: Option<skelaff_locality::MigrationRule>) -> Self {
        self.migration = rule;
        self
    }

    /// Whether [`Worklist::run`](crate::Worklist::run) creates, pins and
    /// joins its own worker threads in every run (default `false`).
    ///
    /// By default a run takes its workers from a process-wide
    /// [`WorkerPool`](crate::WorkerPool) of its layout (its thread count
    /// and placement), built at the first run that needs it and kept,
    /// parked, for the life of the process: later runs with the same
    /// layout (a service's, kmeans's iterations, genome's phases) skip
    /// creating and pinning threads. `true` builds a pool for the run and
    /// drops it (joining its threads) before `run` returns, as every run
    /// did before pools existed: for comparisons, and for programs that
    /// want no thread of the skeleton's left between runs.
    pub fn per_run_threads(mut self, on: bool) -> Self {
        self.per_run_threads = on;
        self
    }

    /// Whether a run with one worker runs its transactions solo (default
    /// `true`): the worker takes the STM's [solo gate](skelaff_stm::solo)
    /// for the run, so its reads check no lock and record nothing, its
    /// writes go in place with an undo log, and its commits take no lock
    /// and never validate (loads outside transactions, such as
    /// `TVar::load` on another thread, see the writes as they are made),
    /// while transactions of other threads of the process
    /// wait for the gate (and, by waiting, make the worker give it back
    /// and go on with the plain protocol). Not with assisted transactions
    /// or an access profile, which keep their own modes. The report's
    /// decisions say whether the worker ran solo and whether it gave the
    /// gate back. `false` runs the plain protocol, for comparisons, and
    /// for a skeleton whose `process` waits for transactions of threads
    /// of its own (they would wait for the gate, which the worker gives
    /// back only between units).
    pub fn solo(mut self, on: bool) -> Self {
        self.solo = on;
        self
    }

    /// Oracle_High applied for real from a first profiling stretch of the
    /// run (default none): `after` the run's start, every misplaced page
    /// sampled so far moves to its dominant accessor's node at once
    /// (`move_pages`, one batch), and the rest of the run runs on that
    /// placement. Needs an [`access_profile`](Builder::access_profile); the
    /// moves are in [`AccessProfile::migration`](crate::AccessProfile::migration)
    /// (one epoch), and the accesses are attributed to the node their page
    /// had at the time. Not together with [`migration`](Builder::migration).
    pub fn oracle_after(mut self, after: Option<std::time::Duration>) -> Self {
        self.oracle = after.map(OracleStretch::new);
        self
    }

    /// Oracle_High applied for real after a stretch that may span several
    /// skeleton runs (default none): give every run of a program the same
    /// [`OracleStretch`] (clones share it), and the oracle acts once its
    /// stretch of skeleton time has passed, or its units have committed
    /// ([`OracleStretch::units`]), summed over the runs, in whichever run
    /// that falls. A run that ends first leaves its samples for the oracle
    /// and its time and units counted. Otherwise as
    /// [`oracle_after`](Builder::oracle_after), which is this with a stretch
    /// of time of its own.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use skelaff_locality::Sampling;
    /// use skelaff_worklist::{Builder, OracleStretch};
    ///
    /// let stretch = OracleStretch::new(Duration::from_millis(40));
    /// for _ in 0..10 {
    ///     let builder = Builder::new().access_profile(Some(Sampling::DEFAULT)).oracle(Some(stretch.clone()));
    ///     // ... build and run one iteration's worklist with it ...
    /// #   let _ = builder;
    /// }
    /// ```
    pub fn oracle(mut self, stretch: Option<OracleStretch>) -> Self {
        self.oracle = stretch;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_as_users_type_them() {
        for (s, p) in [
            ("auto", PagePolicy::Auto),
            ("first-touch", PagePolicy::FirstTouch),
            ("bind", PagePolicy::Bind),
            ("cyclic", PagePolicy::Cyclic),
            ("interleave", PagePolicy::Interleave),
        ] {
            assert_eq!(s.parse::<PagePolicy>().unwrap(), p);
            assert_eq!(p.to_string(), s);
        }
        assert_eq!("on".parse::<Helpers>().unwrap(), Helpers::On);
        assert_eq!(ThreadMapping::None.to_string(), "none");
        let e = "sometimes".parse::<Helpers>().unwrap_err();
        assert!(
            matches!(
                e,
                Error::UnknownName(skelaff_numa_alloc::UnknownName {
                    what: "helpers setting",
                    allowed: ["auto", "on", "off"],
                    ..
                })
            ),
            "{e}"
        );
        assert_eq!(e.to_string(), "unknown helpers setting `sometimes`; expected one of: auto, on, off");
    }
}
