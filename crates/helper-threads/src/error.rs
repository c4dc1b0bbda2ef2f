//! Configuration errors.

/// A helper configuration value is out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The write-log capacity.
    #[error("write-log capacity {got} is out of range; allowed: 1 to {max} entries")]
    LogCapacity {
        /// The capacity asked for.
        got: usize,
        /// The largest allowed.
        max: usize,
    },
    /// The lifespan.
    #[error("lifespan {got} is out of range; allowed: 1 to {max} words read per shadow")]
    Lifespan {
        /// The lifespan asked for.
        got: u64,
        /// The largest allowed.
        max: u64,
    },
    /// The tuning bounds do not contain the starting value, or are reversed.
    #[error("adaptive {what}: bounds {min}..={max} must satisfy 1 <= min <= start ({start}) <= max")]
    TuningBounds {
        /// Lifespan or log capacity.
        what: &'static str,
        /// Lower bound.
        min: u64,
        /// Starting value.
        start: u64,
        /// Upper bound.
        max: u64,
    },
    /// Sampling period 0.
    #[error("adaptive sampling period must be at least 1 (every n-th unit is sampled); got 0")]
    SamplePeriod,
    /// An unknown name for a setting given as text.
    #[error(transparent)]
    UnknownName(#[from] skelaff_numa_alloc::UnknownName),
}
