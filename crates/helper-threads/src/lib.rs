#![doc = include_str!("../README.md")]

// Loom builds (`RUSTFLAGS="--cfg loom"`, `tests/loom_link.rs`) compile the
// worker-helper link and its shim alone: the rest of the crate needs
// dependencies that loom builds leave out (see Cargo.toml).
#[cfg(not(loom))]
mod channel;
#[cfg(not(loom))]
pub mod counters;
#[cfg(not(loom))]
mod error;
#[cfg(not(loom))]
mod helper;
#[cfg(loom)]
pub mod link;
#[cfg(not(loom))]
#[allow(unreachable_pub)]
mod link;
#[cfg(not(loom))]
mod log;
mod primitive;
#[cfg(not(loom))]
mod shadow;
#[cfg(not(loom))]
mod stop;
#[cfg(not(loom))]
mod tuning;

#[cfg(not(loom))]
use std::sync::Arc;

#[cfg(not(loom))]
use parking_lot::Mutex;

#[cfg(not(loom))]
pub use channel::{HelperChannel, WorkerSide};
#[cfg(not(loom))]
pub use error::ConfigError;
#[cfg(not(loom))]
pub use log::{Full, MAX_LOG_CAPACITY, WriteLog};
#[cfg(not(loom))]
pub use shadow::{MAX_LIFESPAN, Prefetch, ShadowConfig, ShadowEnd, ShadowTx};
#[cfg(not(loom))]
pub use skelaff_numa_alloc::idle::IdlePolicy;
#[cfg(not(loom))]
pub use stop::StopReason;
#[cfg(not(loom))]
pub use tuning::Tuning;

#[cfg(not(loom))]
use tuning::{Probe, ProbeState};

#[cfg(not(loom))]
/// Everything a helper thread does, and how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HelperConfig {
    /// Lifespan, write-log capacity, prefetch mode of each shadow.
    pub shadow: ShadowConfig,
    /// What an idle helper does.
    pub idle: IdlePolicy,
    /// Adaptive tuning of lifespan and log size, and switching an
    /// unprofitable helper off; `None`: fixed settings.
    pub adaptive: Option<Tuning>,
    /// Open perf counters on every worker (LLC misses, or task clock and
    /// page faults where the machine has no hardware counters) and every
    /// helper (task clock). Off by default: opening them costs each run a
    /// few system calls per thread, which programs made of many short runs
    /// feel.
    pub counters: bool,
    /// Keep panics of shadows off stderr (a process-wide panic hook that
    /// forwards every other panic to the hook installed before it).
    pub quiet_panics: bool,
}

#[cfg(not(loom))]
impl Default for HelperConfig {
    fn default() -> Self {
        HelperConfig {
            shadow: ShadowConfig::default(),
            idle: IdlePolicy::default(),
            adaptive: Some(Tuning::default()),
            counters: false,
            quiet_panics: true,
        }
    }
}

#[cfg(not(loom))]
/// Helper threads that shadow each worker's next unit to prefetch its data
/// into the cache they share (paper §4.2): the [`Assist`] implementation to
/// pass to [`Worklist::run_with`].
///
/// The worker hands its helper a *clone* of the next unit
/// (`S::Unit: Clone`): the helper then owns what it shadows, and the
/// worker never waits for the helper to let go of a unit (a borrowed unit
/// could not be dropped or moved by the worker before the helper
/// acknowledged, which would put a wait on the worker's path whenever the
/// helper is in long user code between two transactional calls). Units are
/// small in the STAMP applications (an index, a packet).
///
/// [`Assist`]: skelaff_worklist::Assist
/// [`Worklist::run_with`]: skelaff_worklist::Worklist::run_with
///
/// # Examples
///
/// See the crate documentation.
/// One `HelperThreads` used for several runs (the iterations of kmeans,
/// say) carries each worker's timing probe from one run to the next, so a
/// helper found not to pay stays off instead of being tried again in every
/// run.
#[derive(Debug, Clone, Default)]
pub struct HelperThreads {
    pub(crate) config: HelperConfig,
    /// Where each worker's timing probe stood at the end of the last run.
    probes: Arc<Mutex<Vec<Option<ProbeState>>>>,
}

#[cfg(not(loom))]
impl HelperThreads {
    /// Helper threads with `config`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when the lifespan, the log capacity or the tuning
    /// bounds are out of range.
    pub fn new(config: HelperConfig) -> Result<Self, ConfigError> {
        ShadowTx::new(&config.shadow)?;
        if let Some(t) = &config.adaptive {
            t.check(config.shadow.lifespan, config.shadow.log_capacity)?;
        }
        Ok(HelperThreads { config, probes: Arc::default() })
    }

    /// The timing probe for worker `index` (adaptive tuning only): where
    /// the last run left it, or a new one.
    pub(crate) fn probe_for(&self, index: usize) -> Option<Probe> {
        let t = self.config.adaptive.filter(|t| t.probe_units > 0)?;
        Some(match self.probes.lock().get(index).copied().flatten() {
            Some(state) => Probe::resume(t.probe_units, t.margin, state),
            None => Probe::new(t.probe_units, t.margin),
        })
    }

    /// Keeps where worker `index`'s probe stands for the next run.
    pub(crate) fn remember_probe(&self, index: usize, probe: &Probe) {
        let mut v = self.probes.lock();
        if v.len() <= index {
            v.resize(index + 1, None);
        }
        v[index] = Some(probe.state());
    }

    /// The configuration.
    pub fn config(&self) -> &HelperConfig {
        &self.config
    }
}

#[cfg(all(test, not(loom)))]
mod names_tests;
