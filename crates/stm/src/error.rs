//! The signals and errors of transactions.

use core::fmt;

/// A name that is not one of those allowed (a contention manager, an assist
/// mode, ...): skelaff-numa-alloc's, the one type behind every skelaff
/// crate's `UnknownName` error.
#[cfg(not(loom))]
pub use skelaff_numa_alloc::UnknownName;

/// Loom builds of skelaff-numa-alloc hold only its parker (they start no
/// auxiliary threads to pin, and name nothing): the same fields, for the
/// same messages.
#[cfg(loom)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{given}`; expected one of: {}", .allowed.join(", "))]
pub struct UnknownName {
    /// What the name names.
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// The names allowed.
    pub allowed: &'static [&'static str],
}

/// Why a transaction attempt was rolled back.
///
/// Counted per thread in [`Stats`](crate::Stats). The first four (and
/// `AuxiliaryConflict`) are
/// conflicts, after which the transaction is re-run under the contention
/// manager; the others end or suspend it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AbortReason {
    /// A read found its word locked by a committing transaction for longer
    /// than the read spin allows.
    LockedOnRead,
    /// A read found a newer version and the read set no longer validated, so
    /// the snapshot could not be extended.
    ValidateOnRead,
    /// Commit could not lock a word of its write set (held by another committer).
    LockedOnCommit,
    /// Commit-time validation of the read set failed.
    ValidateOnCommit,
    /// The auxiliary thread of an assisted transaction found a read stale
    /// (see [`Assist::Validation`](crate::Assist::Validation)); the
    /// transaction aborted at its next operation, before its commit.
    AuxiliaryConflict,
    /// The transaction called [`TxOps::retry`](crate::TxOps::retry): it waits
    /// until something it read changes.
    Retry,
    /// The closure returned a user error: the attempt is rolled back and the
    /// error returned to the caller.
    Explicit,
    /// The closure panicked: the attempt is rolled back and the panic propagates.
    Panic,
    /// An attempt run read-only (mode [`ReadOnly`](crate::ReadOnly), which
    /// records no read set) wrote or asked to retry: it is rolled back and
    /// the transaction runs again at once, recording its reads.
    ReadOnlyUpgrade,
}

impl AbortReason {
    /// Every reason, in counter order.
    pub const ALL: [AbortReason; 9] = [
        AbortReason::LockedOnRead,
        AbortReason::ValidateOnRead,
        AbortReason::LockedOnCommit,
        AbortReason::ValidateOnCommit,
        AbortReason::AuxiliaryConflict,
        AbortReason::Retry,
        AbortReason::Explicit,
        AbortReason::Panic,
        AbortReason::ReadOnlyUpgrade,
    ];
    /// How many reasons there are.
    pub const COUNT: usize = Self::ALL.len();

    /// A short stable name (used in figures and JSON).
    pub const fn name(self) -> &'static str {
        match self {
            AbortReason::LockedOnRead => "locked_read",
            AbortReason::ValidateOnRead => "validate_read",
            AbortReason::LockedOnCommit => "locked_commit",
            AbortReason::ValidateOnCommit => "validate_commit",
            AbortReason::AuxiliaryConflict => "aux_conflict",
            AbortReason::Retry => "retry",
            AbortReason::Explicit => "explicit",
            AbortReason::Panic => "panic",
            AbortReason::ReadOnlyUpgrade => "read_only_upgrade",
        }
    }

    /// Whether this reason is a conflict with another transaction (and the
    /// attempt is re-run).
    pub const fn is_conflict(self) -> bool {
        matches!(
            self,
            AbortReason::LockedOnRead
                | AbortReason::ValidateOnRead
                | AbortReason::LockedOnCommit
                | AbortReason::ValidateOnCommit
                | AbortReason::AuxiliaryConflict
        )
    }
}

impl fmt::Display for AbortReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a [`TxOps`](crate::TxOps) implementation other than this crate's
/// transaction stopped the code it runs, opaque to this crate.
///
/// The STM never makes one and does not know what it means: an
/// implementation of `TxOps` elsewhere (one that runs code speculatively,
/// say) gives it a code and a name of its own and reads them back, so that
/// user code unwinds with `?` as it does on a conflict. Equal stops have
/// equal codes and names.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{Stop, TxError};
///
/// const OUT_OF_BUDGET: Stop = Stop::new(1, "out of budget");
/// let e = TxError::Stop(OUT_OF_BUDGET);
/// assert!(matches!(e, TxError::Stop(s) if s == OUT_OF_BUDGET && s.code() == 1));
/// assert_eq!(e.to_string(), "stopped by its TxOps implementation: out of budget");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stop {
    code: u32,
    name: &'static str,
}

impl Stop {
    /// A stop with the implementation's own `code` and `name`.
    pub const fn new(code: u32, name: &'static str) -> Stop {
        Stop { code, name }
    }

    /// The implementation's code.
    pub const fn code(self) -> u32 {
        self.code
    }

    /// The implementation's name for it.
    pub const fn name(self) -> &'static str {
        self.name
    }
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// The error of every fallible [`TxOps`](crate::TxOps) operation: a signal
/// that the running transaction cannot go on, to be propagated with `?`.
///
/// User code does not handle these: it returns them (or its own error type,
/// if that implements `From<TxError>`) from the transaction's closure, and
/// [`atomically`](crate::atomically) acts on them: a conflict re-runs the
/// transaction, a retry waits for a change and re-runs it. The real
/// transaction also remembers the signal it raised, so a closure that
/// swallows one still cannot commit.
///
/// This is a concrete type rather than an associated type of `TxOps` so
/// that generic code (the collections, the worklist's `process`) has one
/// error to propagate; an implementation of `TxOps` in another crate uses
/// [`TxError::Stop`] with a [`Stop`] of its own for its reasons to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum TxError {
    /// The transaction conflicted with another one and will be re-run.
    #[error("transaction conflict ({0}); the transaction is rolled back and re-run")]
    Conflict(AbortReason),
    /// The transaction asked to wait until something it read changes.
    #[error("transaction retry: it waits until a variable it read changes, then re-runs")]
    Retry,
    /// Another implementation of `TxOps` stopped the code it runs, for a
    /// reason of its own; the real STM never returns this.
    #[error("stopped by its TxOps implementation: {0}")]
    Stop(Stop),
}

/// A configuration value could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A name that is not one of the allowed ones (a contention manager
    /// given as text).
    #[error(transparent)]
    UnknownName(#[from] UnknownName),
}

/// The access sampler could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SamplerError {
    /// The sampler of a thread can only be changed between transactions.
    #[error("the access sampler cannot be changed inside a transaction; call it between transactions")]
    InTransaction,
    /// Period or capacity 0.
    #[error("sampler {what} must be at least 1 (got 0)")]
    Zero {
        /// Which parameter was zero.
        what: &'static str,
    },
}
