//! The crate's error type.

use crate::bytes::Bytes;

/// What went wrong, and what would have been allowed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A name (implementation, access pattern, large-page setting) that is
    /// not one of the known ones.
    #[error(transparent)]
    UnknownName(#[from] skelaff_numa_alloc::UnknownName),
    /// An array of no elements.
    #[error("an array must have at least one element (got a length of 0)")]
    ZeroLength,
    /// An element type of size zero.
    #[error("element type `{type_name}` has size zero; NUMA arrays hold elements that occupy memory")]
    ZeroSizedElement {
        /// The element type.
        type_name: &'static str,
    },
    /// A length whose byte size overflows the address space.
    #[error("{len} elements of {elem_size} bytes overflow the address space (at most {max} bytes)")]
    SizeOverflow {
        /// The number of elements.
        len: usize,
        /// The size of one element.
        elem_size: usize,
        /// The largest array size in bytes.
        max: usize,
    },
    /// An element type aligned more strictly than a page.
    #[error(
        "element type `{type_name}` needs alignment {align}, more than the page size {page_size} that arrays guarantee"
    )]
    UnsupportedAlignment {
        /// The element type.
        type_name: &'static str,
        /// Its alignment.
        align: usize,
        /// The page size.
        page_size: usize,
    },
    /// A replicated array whose copy does not fit on some node.
    #[error(
        "a replica of {} does not fit on node {node}, which has {} available; use a distributed or partitioned array, or free memory on that node",
        Bytes(*copy_bytes), Bytes(*available)
    )]
    ReplicaDoesNotFit {
        /// The node that is too small.
        node: usize,
        /// The size of one copy.
        copy_bytes: u64,
        /// What that node has available.
        available: u64,
    },
    /// A replicated array whose copies together exceed the memory budget.
    #[error(
        "{replicas} replicas of {} ({} in all) exceed the memory budget of {}; raise the budget or use a distributed array",
        Bytes(*copy_bytes), Bytes(*total), Bytes(*budget)
    )]
    OverBudget {
        /// Number of copies.
        replicas: usize,
        /// Size of one copy.
        copy_bytes: u64,
        /// All copies.
        total: u64,
        /// The budget.
        budget: u64,
    },
    /// A partition for another length.
    #[error("the partition covers {partition_len} elements but the array has {array_len}")]
    PartitionLength {
        /// Elements the partition covers.
        partition_len: usize,
        /// Elements of the array.
        array_len: usize,
    },
    /// A partition of no threads.
    #[error("a partition needs at least one thread (got an empty thread-to-node list)")]
    ZeroThreads,
    /// A source of the wrong length for a bulk operation.
    #[error("{operation}: the source has {source_len} elements but the array has {array_len}; lengths must be equal")]
    LengthMismatch {
        /// `init_from` or `copy_from`.
        operation: &'static str,
        /// Elements of the source.
        source_len: usize,
        /// Elements of the array.
        array_len: usize,
    },
    /// An element index outside the array.
    #[error("index {index} is outside an array of {len} elements")]
    IndexOutOfBounds {
        /// The index.
        index: usize,
        /// The array's length.
        len: usize,
    },
    /// The background copy team could not start.
    #[error("cannot start the copy thread for node {node}")]
    CopyTeamStart {
        /// The node the thread was for.
        node: usize,
        /// Why: the node has no CPU this process may use, or no thread.
        #[source]
        source: skelaff_numa_alloc::Error,
    },
    /// Input (a graph file, workload parameters) that cannot be used.
    #[error("{source_name}{}: {reason}", line.map(|l| format!(", line {l}")).unwrap_or_default())]
    BadInput {
        /// The file or parameter.
        source_name: String,
        /// The line, for files.
        line: Option<usize>,
        /// What is wrong and what is expected.
        reason: String,
    },
    /// Reading a file failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The NUMA layer refused (a node that does not exist, an `mbind` the
    /// kernel refused, memory it could not provide).
    #[error(transparent)]
    Numa(#[from] skelaff_numa_alloc::Error),
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
