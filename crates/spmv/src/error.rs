//! The crate's error type.

use std::path::PathBuf;

/// What went wrong, and what would have been allowed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A Matrix Market file that does not follow the format.
    #[error("Matrix Market{} line {line}: {kind}", .path.as_ref().map(|p| format!(" file {}", p.display())).unwrap_or_default())]
    MatrixMarket {
        /// The file, when reading from a path.
        path: Option<PathBuf>,
        /// The 1-based line number where the problem is.
        line: usize,
        /// What is wrong with that line.
        kind: MmErrorKind,
    },
    /// A file that could not be opened or read.
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// Reading a Matrix Market input failed part-way (an I/O error, or
    /// text that is not UTF-8).
    #[error("cannot read the Matrix Market{} input at line {line}", .path.as_ref().map(|p| format!(" file {}", p.display())).unwrap_or_default())]
    Read {
        /// The file, when reading from a path.
        path: Option<PathBuf>,
        /// The 1-based line that could not be read.
        line: usize,
        /// Why: the reader's error.
        #[source]
        source: std::io::Error,
    },
    /// Writing a Matrix Market file failed.
    #[error("cannot write the Matrix Market output: {0}")]
    Write(#[source] std::io::Error),
    /// A row or column index outside the matrix.
    #[error("entry ({row}, {col}) is outside the {nrows}x{ncols} matrix (indices are 0-based here)")]
    IndexOutOfRange {
        /// The row given.
        row: usize,
        /// The column given.
        col: usize,
        /// Rows of the matrix.
        nrows: usize,
        /// Columns of the matrix.
        ncols: usize,
    },
    /// A dimension or nonzero count that does not fit the 32-bit indices.
    #[error("{what} is {value}, but indices and pointers are 32-bit: at most {max} is allowed")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The largest allowed value.
        max: u64,
    },
    /// Compressed arrays that are not a valid CSR/CSC matrix.
    #[error("invalid compressed matrix: {0}")]
    InvalidStructure(String),
    /// Vectors or matrices whose sizes do not fit together.
    #[error("dimension mismatch: {what} has length {got}, expected {expected}")]
    DimensionMismatch {
        /// Which operand.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The length required.
        expected: usize,
    },
    /// A square matrix was required.
    #[error("{what} needs a square matrix, got {nrows}x{ncols}")]
    NotSquare {
        /// The operation.
        what: &'static str,
        /// Rows.
        nrows: usize,
        /// Columns.
        ncols: usize,
    },
    /// A symmetric kernel was given entries above the diagonal.
    #[error("the symmetric kernels store the lower triangle only, but entry ({row}, {col}) is above the diagonal")]
    NotLowerTriangular {
        /// Row of the offending entry.
        row: usize,
        /// Column of the offending entry.
        col: usize,
    },
    /// A matrix that had to be symmetric is not.
    #[error(
        "the matrix is not symmetric: entry ({row}, {col}) is {value} but ({col}, {row}) is {mirror} (indices are 0-based)"
    )]
    NotSymmetric {
        /// Row of the first entry whose mirror differs.
        row: usize,
        /// Its column.
        col: usize,
        /// `A[row][col]` (0 when not stored).
        value: f64,
        /// `A[col][row]` (0 when not stored).
        mirror: f64,
    },
    /// CG found a direction `p` with `pᵀAp <= 0`, so `A` is not positive definite.
    #[error(
        "CG broke down at iteration {iteration}: pᵀAp <= 0, so the matrix is not positive definite (CG needs a symmetric positive definite matrix)"
    )]
    NotPositiveDefinite {
        /// The 1-based iteration that found it.
        iteration: usize,
    },
    /// A thread count of zero.
    #[error("the thread count must be at least 1")]
    ZeroThreads,
    /// MASA's preprocessing found a work-sharing schedule other than static.
    #[error(
        "MASA needs the static schedule (each thread always handles the same contiguous chunk, so binding the chunk to the thread's node pays), but the schedule is `{found}`; set OMP_SCHEDULE/SKELAFF_SCHEDULE to `static` or leave it unset"
    )]
    NonStaticSchedule {
        /// The schedule found.
        found: String,
    },
    /// A schedule with a known name but a chunk size that is not a
    /// positive integer (or a chunk size where none is allowed).
    #[error(
        "cannot parse schedule `{input}`: the chunk size must be a positive integer, as in `dynamic,4` (auto and runtime take none)"
    )]
    BadSchedule {
        /// The text.
        input: String,
    },
    /// An operator built for one team used with another.
    #[error("the operator was built for {expected} threads but the team has {got}")]
    TeamMismatch {
        /// Threads the operator was split for.
        expected: usize,
        /// Threads of the team given.
        got: usize,
    },
    /// Algorithm 1 inputs that make no sense.
    #[error("chunking needs {what}; got {value}")]
    BadChunking {
        /// What is required.
        what: &'static str,
        /// The value given.
        value: usize,
    },
    /// A name (class, schedule, placement, split, kernel level, ...) that is
    /// not one of the names allowed.
    #[error(transparent)]
    UnknownName(#[from] skelaff_numa_alloc::UnknownName),
    /// A thread of the team panicked; the team cannot run more work.
    #[error("a team thread panicked earlier; the team is poisoned and must be rebuilt")]
    TeamPoisoned,
    /// A team thread could not be started or pinned.
    #[error("cannot start team thread {thread}")]
    TeamStart {
        /// The thread's index.
        thread: usize,
        /// Why: its CPU is not one this process may use, or no thread.
        #[source]
        source: skelaff_numa_alloc::Error,
    },
    /// Another MPI rank failed in a step all ranks take together, so this
    /// rank gives up too (rather than wait for it forever).
    #[error("MPI rank {rank} of {ranks} failed: {reason}")]
    RankFailed {
        /// The first rank (lowest number) that failed.
        rank: usize,
        /// How many ranks there are.
        ranks: usize,
        /// What went wrong there.
        reason: String,
    },
    /// MPI could not be set up as the distributed operators need it.
    #[error("MPI: {0}")]
    Mpi(String),
    /// Trace options that cannot work.
    #[error("the trace's {what} is {value}; it must be at least {min}")]
    BadTraceOptions {
        /// Which option.
        what: &'static str,
        /// Its value.
        value: usize,
        /// The least allowed.
        min: usize,
    },
    /// A NUMA allocation, policy or pinning error.
    #[error(transparent)]
    Numa(#[from] skelaff_numa_alloc::Error),
}

/// What is wrong with a Matrix Market line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MmErrorKind {
    /// The first line is not a Matrix Market banner.
    #[error(
        "bad header `{found}`: expected `%%MatrixMarket matrix coordinate|array real|integer|pattern general|symmetric|skew-symmetric`"
    )]
    BadHeader {
        /// The line as found.
        found: String,
    },
    /// A well-formed banner naming something this reader does not handle.
    #[error("unsupported {what} `{found}`: allowed are {allowed}")]
    Unsupported {
        /// Which header word.
        what: &'static str,
        /// The word found.
        found: String,
        /// The accepted words.
        allowed: &'static str,
    },
    /// A line with the wrong number of fields.
    #[error("expected {expected} fields ({what}), found {found}")]
    FieldCount {
        /// How many fields the line must have.
        expected: usize,
        /// How many it has.
        found: usize,
        /// What the fields are.
        what: &'static str,
    },
    /// A field that is not a number of the required kind.
    #[error("`{text}` is not {expected}")]
    BadNumber {
        /// The field.
        text: String,
        /// What it should be.
        expected: &'static str,
    },
    /// A 1-based index outside the declared size.
    #[error("{axis} index {index} is outside 1..={dim}")]
    IndexOutOfRange {
        /// "row" or "column".
        axis: &'static str,
        /// The index as written (1-based).
        index: u64,
        /// The declared dimension.
        dim: usize,
    },
    /// The file ended before the declared number of entries.
    #[error("the size line declares {declared} entries but the file ends after {found}")]
    TooFewEntries {
        /// Entries declared.
        declared: usize,
        /// Entries found.
        found: usize,
    },
    /// More entry lines than declared.
    #[error("the size line declares {declared} entries, but this line is one more")]
    TooManyEntries {
        /// Entries declared.
        declared: usize,
    },
    /// The file has a header but no size line.
    #[error("the file ends before the size line")]
    MissingSize,
    /// A skew-symmetric file with a diagonal entry.
    #[error("a skew-symmetric matrix has a zero diagonal, so its file stores no diagonal entries")]
    SkewDiagonal,
    /// A symmetric or skew-symmetric matrix that is not square.
    #[error("a {symmetry} matrix must be square, but the size line says {nrows}x{ncols}")]
    NotSquare {
        /// The symmetry declared.
        symmetry: &'static str,
        /// Rows.
        nrows: usize,
        /// Columns.
        ncols: usize,
    },
    /// An entry count impossible for the declared size.
    #[error("{entries} entries cannot fit a {nrows}x{ncols} matrix")]
    TooManyForSize {
        /// Entries declared.
        entries: u64,
        /// Rows.
        nrows: usize,
        /// Columns.
        ncols: usize,
    },
    /// A vector file whose size line is not the length asked for.
    #[error("the size line says {nrows}x{ncols}; a vector of {len} entries is expected ({len}x1 or 1x{len})")]
    NotTheVector {
        /// Rows.
        nrows: usize,
        /// Columns.
        ncols: usize,
        /// The length asked for.
        len: usize,
    },
}

impl Error {
    /// An [`Error::UnknownName`] for `given`, which is not among `allowed`.
    pub(crate) fn unknown_name(what: &'static str, given: &str, allowed: &'static [&'static str]) -> Error {
        Error::UnknownName(skelaff_numa_alloc::UnknownName { what, given: given.to_owned(), allowed })
    }
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
