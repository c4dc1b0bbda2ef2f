//! The crate's error type.

/// What went wrong, and what would have been allowed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A name (scheme, machine, attribution) that is not one of the known ones.
    #[error(transparent)]
    UnknownName(#[from] skelaff_numa_alloc::UnknownName),
    /// A machine description that cannot be used.
    #[error("invalid machine `{machine}`: {reason}")]
    InvalidMachine {
        /// The machine's name.
        machine: String,
        /// What is wrong with it and what is allowed.
        reason: String,
    },
    /// A sampling setting of zero.
    #[error("the sampling {what} must be at least 1 (got 0)")]
    ZeroSampling {
        /// `period` or `capacity`.
        what: &'static str,
    },
    /// An access that names a node or thread the profile does not have.
    #[error("access {index}: {reason}")]
    BadAccess {
        /// The access's position in the profile.
        index: usize,
        /// What is wrong with it and what is allowed.
        reason: String,
    },
    /// A profile with no accesses, from which no figure can be computed.
    #[error("the profile of {app} has no sampled accesses; run longer or sample more often (a smaller period)")]
    EmptyProfile {
        /// The application the profile is of.
        app: String,
    },
    /// A file that does not start like a profile or plan.
    #[error("{what}: not a skelaff {kind} file (it starts with {found:?}; expected `{expected}`)")]
    NotAFile {
        /// Where the bytes came from.
        what: String,
        /// `profile` or `placement plan`.
        kind: &'static str,
        /// The first bytes found.
        found: String,
        /// The first line expected.
        expected: &'static str,
    },
    /// A file of a format version this build does not read.
    #[error("{what}: format version {found} is not supported; this build reads version {supported}")]
    UnsupportedVersion {
        /// Where the bytes came from.
        what: String,
        /// The version in the file.
        found: String,
        /// The version this build reads.
        supported: u32,
    },
    /// A header that does not parse.
    #[error("{what}: bad header: {reason}")]
    BadHeader {
        /// Where the bytes came from.
        what: String,
        /// What the parser said.
        reason: String,
    },
    /// A file that ends before its header says it should.
    #[error(
        "{what} is truncated: its header promises {expected} records, the file holds {found} (and {partial} bytes of a partial record)"
    )]
    Truncated {
        /// Where the bytes came from.
        what: String,
        /// Records the header promises.
        expected: u64,
        /// Whole records present.
        found: u64,
        /// Bytes of an incomplete record after them.
        partial: usize,
    },
    /// A file with bytes after its last record.
    #[error("{what}: {extra} unexpected bytes after the {records} records its header announces")]
    TrailingData {
        /// Where the bytes came from.
        what: String,
        /// Records the header announces.
        records: u64,
        /// Bytes after them.
        extra: u64,
    },
    /// A record whose fields are out of range.
    #[error("{what}: record {index}: {reason}")]
    BadRecord {
        /// Where the bytes came from.
        what: String,
        /// The record's position.
        index: u64,
        /// What is wrong.
        reason: String,
    },
    /// A profile record with a field out of range.
    #[error("{what}: record {index}: {field}")]
    BadRecordField {
        /// Where the bytes came from.
        what: String,
        /// The record's position.
        index: u64,
        /// The field and what it may be.
        field: RecordError,
    },
    /// A profile or plan from another machine than the one asked for.
    #[error(
        "{what} was recorded on machine {found}, not on {expected}; compute its figures with that machine's distances or record it again on {expected}"
    )]
    MachineMismatch {
        /// Where the bytes came from.
        what: String,
        /// The machine the file names.
        found: String,
        /// The machine expected.
        expected: String,
    },
    /// A scheme that yields no page placement.
    #[error("the {scheme} scheme has no placement plan: {reason}")]
    NoPlan {
        /// The scheme asked for, by the name users type (a
        /// [`Scheme`](crate::Scheme)'s: the errors sit below the schemes).
        scheme: &'static str,
        /// Why; and which schemes have one.
        reason: &'static str,
    },
    /// Reading or writing a file failed.
    #[error("{what}: {source}")]
    Io {
        /// The file or stream.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused a placement query or move.
    #[error("{what}: {source}")]
    Numa {
        /// What was being done.
        what: String,
        /// The NUMA layer's error (it names the call and errno).
        #[source]
        source: skelaff_numa_alloc::Error,
    },
    /// The migration thread could not run as asked.
    #[error("migration thread: {reason}")]
    Migration {
        /// What was wrong.
        reason: String,
    },
    /// Drawing the footprint plot failed.
    #[error("plotting {what}: {reason}")]
    Plot {
        /// The file being drawn.
        what: String,
        /// What the plotting library said.
        reason: String,
    },
}

impl Error {
    pub(crate) fn io(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.to_string();
        move |source| Error::Io { what, source }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A profile record's field that is out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The access kind byte.
    #[error("access kind {0}; 0 (read) and 1 (write) are allowed")]
    Kind(u8),
    /// The reserved byte.
    #[error("reserved byte is {0}; it must be 0")]
    Reserved(u8),
}
