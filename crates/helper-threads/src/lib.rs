#![doc = include_str!("../README.md")]

pub mod counters;
mod error;
mod helper;
mod log;
mod shadow;
mod tuning;

pub use error::ConfigError;
pub use helper::{IdlePolicy, Link};
pub use log::{Full, MAX_LOG_CAPACITY, WriteLog};
pub use shadow::{MAX_LIFESPAN, Prefetch, ShadowConfig, ShadowEnd, ShadowTx};
pub use tuning::Tuning;

/// Figures that are settings or places, not counts: merging keeps the last.
const SETTINGS: [&str; 6] =
    ["cpu", "dedicated_cpu", "lifespan_final", "log_capacity_final", "timing_last_on_ns", "timing_last_off_ns"];

/// Adds the figures of one run of a helper (or a worker's counters) into
/// `into`, for programs made of several skeleton runs: counts are summed,
/// settings (`cpu`, `dedicated_cpu`, `lifespan_final`,
/// `log_capacity_final`) take the later value, and the coverage and
/// accuracy ratios are recomputed from the summed line counts.
///
/// # Examples
///
/// ```
/// use skelaff_helper_threads::merge_figures;
///
/// let f = |v: &[(&str, u64)]| v.iter().map(|(k, n)| (k.to_string(), *n)).collect::<Vec<_>>();
/// let mut total = f(&[("units_shadowed", 3), ("lifespan_final", 64)]);
/// merge_figures(&mut total, &f(&[("units_shadowed", 4), ("lifespan_final", 128), ("idle_parks", 1)]));
/// assert_eq!(total, f(&[("units_shadowed", 7), ("lifespan_final", 128), ("idle_parks", 1)]));
/// ```
pub fn merge_figures(into: &mut Vec<(String, u64)>, from: &[(String, u64)]) {
    for (k, v) in from {
        match into.iter_mut().find(|(n, _)| n == k) {
            Some((_, x)) if SETTINGS.contains(&k.as_str()) => *x = *v,
            Some((_, x)) => *x += v,
            None => into.push((k.clone(), *v)),
        }
    }
    let get = |into: &Vec<(String, u64)>, k: &str| into.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    let useful = get(into, "tuning_useful_lines");
    for (ratio, base) in [("coverage_permille", "tuning_worker_lines"), ("accuracy_permille", "tuning_shadow_lines")] {
        if let (Some(u), Some(b)) = (useful, get(into, base)) {
            if let Some((_, x)) = into.iter_mut().find(|(n, _)| n == ratio) {
                *x = (u * 1000).checked_div(b).unwrap_or(0);
            }
        }
    }
}

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
    /// helper (task clock).
    pub counters: bool,
    /// Keep panics of shadows off stderr (a process-wide panic hook that
    /// forwards every other panic to the hook installed before it).
    pub quiet_panics: bool,
}

impl Default for HelperConfig {
    fn default() -> Self {
        HelperConfig {
            shadow: ShadowConfig::default(),
            idle: IdlePolicy::default(),
            adaptive: Some(Tuning::default()),
            counters: true,
            quiet_panics: true,
        }
    }
}

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
#[derive(Debug, Clone, Default)]
pub struct HelperThreads {
    pub(crate) config: HelperConfig,
}

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
        Ok(HelperThreads { config })
    }

    /// The configuration.
    pub fn config(&self) -> &HelperConfig {
        &self.config
    }
}
