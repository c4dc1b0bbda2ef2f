//! The crate's error type.

pub use crate::sets::SetError;
use crate::sets::{CpuSet, NodeSet};
pub use crate::sys::SysError;

/// A name that is not one of those allowed: a setting given as text (a
/// thread mapping, a page policy, a scheme, an assist mode, ...). The one
/// type behind every skelaff crate's `UnknownName` error variant, so that a
/// caller matches it the same way whichever crate refused the name.
///
/// ```
/// use skelaff_numa_alloc::{Error, UnknownName};
///
/// let e = "sideways".parse::<skelaff_numa_alloc::Policy>().unwrap_err();
/// assert!(matches!(&e, Error::UnknownName(UnknownName { what: "page policy", given, .. }) if given == "sideways"));
/// assert!(e.to_string().starts_with("unknown page policy `sideways`; expected one of: "), "{e}");
/// ```
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

/// What went wrong, and what would have been allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A node number that this machine does not have.
    #[error("NUMA node {node} does not exist; this machine has nodes {existing}")]
    NoSuchNode {
        /// The node asked for.
        node: usize,
        /// The nodes the machine has.
        existing: Box<NodeSet>,
    },
    /// A node this process may not allocate on (cpuset / `mems_allowed`).
    #[error("NUMA node {node} is not allowed for this process; it may use nodes {allowed}")]
    NodeNotAllowed {
        /// The node asked for.
        node: usize,
        /// The nodes this process may use.
        allowed: Box<NodeSet>,
    },
    /// A strict placement (bind, cyclic) asking more of its nodes than they
    /// have: checked before anything is mapped, and again after a prefault
    /// found pages it could not place there. Never an OOM kill: see the
    /// crate docs' "When a node is full or not allowed".
    #[error(
        "{policy} placement needs {requested} bytes ({} MiB) on NUMA node(s) {nodes}, which have {available} bytes ({} MiB) available (free plus reclaimable page cache); ask for less, bind to more nodes, or use preferred:NODE to let pages that do not fit go to other nodes",
        .requested >> 20, .available >> 20
    )]
    NodeFull {
        /// The policy's name (`bind` or `cyclic`).
        policy: &'static str,
        /// The nodes that lack the memory (for cyclic: the first node whose
        /// share does not fit).
        nodes: Box<NodeSet>,
        /// The bytes asked of those nodes.
        requested: u64,
        /// The bytes they had available when asked.
        available: u64,
    },
    /// A policy that needs nodes was given none.
    #[error("the {policy} policy needs at least one node; this process may use nodes {allowed}")]
    EmptyNodeSet {
        /// The policy's name.
        policy: &'static str,
        /// The nodes this process may use.
        allowed: Box<NodeSet>,
    },
    /// A CPU that does not exist or that this process may not run on.
    #[error("CPU {cpu} is not available to this process; it may run on CPUs {allowed}")]
    CpuNotAllowed {
        /// The CPU asked for.
        cpu: usize,
        /// The CPUs this process may use.
        allowed: CpuSet,
    },
    /// A CPU set with nothing this process may run on.
    #[error("none of CPUs `{requested}` is available to this process; it may run on CPUs {allowed}")]
    NoUsableCpu {
        /// The CPUs asked for.
        requested: CpuSet,
        /// The CPUs this process may use.
        allowed: CpuSet,
    },
    /// A thread count of zero.
    #[error("the thread count must be at least 1")]
    ZeroThreads,
    /// A region of zero bytes.
    #[error("a NUMA region must have at least one byte (got a zero-length request)")]
    ZeroLength,
    /// A size computation that overflows `usize`.
    #[error("{count} elements of {elem_size} bytes overflow the address space")]
    SizeOverflow {
        /// The number of elements.
        count: usize,
        /// The size of one element.
        elem_size: usize,
    },
    /// An element type whose alignment exceeds what a region guarantees.
    #[error("alignment {align} is larger than the page size {page_size}, which is all a region guarantees")]
    UnsupportedAlignment {
        /// The alignment asked for.
        align: usize,
        /// The page size.
        page_size: usize,
    },
    /// A byte range that is not inside the region or not page-aligned.
    #[error(
        "range {start}..{end} is not a page-aligned range inside the region of {len} bytes (page size {page_size})"
    )]
    BadRange {
        /// The range start, in bytes from the region start.
        start: usize,
        /// The range end.
        end: usize,
        /// The region's length.
        len: usize,
        /// The page size ranges must be aligned to.
        page_size: usize,
    },
    /// A cyclic block that is not a positive multiple of the page size.
    #[error("cyclic block of {block} bytes is not a positive multiple of the page size {page_size}")]
    BadBlockSize {
        /// The block asked for.
        block: usize,
        /// The page size.
        page_size: usize,
    },
    /// A cyclic policy that would split a range into more mappings than the
    /// kernel allows.
    #[error(
        "cyclic placement with {block}-byte blocks would cut {len} bytes into {pieces} mappings, but only {limit} more fit under vm.max_map_count; use a block of at least {min_block} bytes"
    )]
    TooManyPieces {
        /// The length of the range.
        len: usize,
        /// The block size asked for.
        block: usize,
        /// How many mappings it would need.
        pieces: usize,
        /// How many this process may still create.
        limit: usize,
        /// The smallest page-multiple block that fits.
        min_block: usize,
    },
    /// A policy that has no thread-wide kernel equivalent.
    #[error("the {policy} policy cannot be a thread's kernel policy (it is applied per allocation)")]
    NotAThreadPolicy {
        /// The policy's name.
        policy: &'static str,
    },
    /// An explicit huge-page request the kernel could not satisfy.
    #[error(
        "{pages} huge pages of {size} bytes are needed but the kernel could not provide them ({free} free); reserve more with `echo N > /proc/sys/vm/nr_hugepages` or use transparent huge pages"
    )]
    HugePagesUnavailable {
        /// The huge page size.
        size: usize,
        /// How many pages the request needs.
        pages: usize,
        /// How many were free in the pool.
        free: usize,
    },
    /// A huge page size the kernel does not offer.
    #[error("huge page size {size} is not offered by this kernel; it offers {offered:?}")]
    NoSuchHugePageSize {
        /// The size asked for.
        size: usize,
        /// The sizes the kernel offers.
        offered: Vec<usize>,
    },
    /// Some pages could not be migrated.
    #[error(
        "{failed} of {pages} pages could not be moved (shared with another process, pinned, or the target node is full)"
    )]
    MigrationIncomplete {
        /// Pages that stayed where they were.
        failed: usize,
        /// Pages asked to move.
        pages: usize,
    },
    /// A name that is not one of those allowed (a thread mapping, a page
    /// policy).
    #[error(transparent)]
    UnknownName(#[from] UnknownName),
    /// Text that does not parse.
    #[error("cannot parse `{input}`: {reason}")]
    Parse {
        /// The text.
        input: String,
        /// What is wrong with it and what is expected.
        reason: String,
    },
    /// A file of the kernel's description of the machine (sysfs, under
    /// `/sys/devices/system/{node,cpu}`) that the topology needs and that
    /// is missing or cannot be read.
    #[error("cannot read {path} ({what}), which the machine's topology is read from")]
    TopologyUnreadable {
        /// The file.
        path: String,
        /// What the file holds.
        what: &'static str,
        /// What the read failed with (`ENOENT` for a missing file).
        #[source]
        source: SysError,
    },
    /// A sysfs topology file whose content is not in the form the kernel
    /// writes.
    #[error("{path} holds `{found}`; expected {expected}")]
    TopologyFormat {
        /// The file (or directory entry).
        path: String,
        /// What it holds (its first 80 characters).
        found: String,
        /// What it should hold, and why the content is not that.
        expected: String,
    },
    /// hwloc could not build the topology (feature `hwloc`).
    #[cfg(feature = "hwloc")]
    #[error("cannot read the machine topology from hwloc ({doing})")]
    Topology {
        /// What was being done.
        doing: &'static str,
        /// What hwloc reported.
        #[source]
        source: HwlocError,
    },
    /// A node's memory counters (its `meminfo` file) could not be read.
    #[error("cannot read NUMA node {node}'s memory from {path}; is node {node} one of this machine's nodes?")]
    NodeMemoryUnreadable {
        /// The node.
        node: usize,
        /// The file.
        path: String,
        /// What the read of the file failed with.
        #[source]
        source: SysError,
    },
    /// A node's `meminfo` file that is not in the form the kernel writes.
    #[error("{path} (NUMA node {node}'s memory) has no MemTotal/MemFree lines in the expected `NAME: N kB` form")]
    NodeMemoryFormat {
        /// The node.
        node: usize,
        /// The file.
        path: String,
    },
    /// The operating system refused a thread ([`pin::spawn_pinned`](crate::pin::spawn_pinned)).
    #[error("cannot start thread `{name}`")]
    Spawn {
        /// The thread's name.
        name: String,
        /// What `pthread_create` failed with (usually `EAGAIN`: a limit on
        /// threads or memory was reached).
        #[source]
        source: SysError,
    },
    /// A system call the kernel refused.
    #[error(transparent)]
    Sys(#[from] SysError),
}

/// What hwloc reported when it could not build the topology: its own
/// error, kept as the cause of [`Error::Topology`] (feature `hwloc`).
#[cfg(feature = "hwloc")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct HwlocError(HwlocCause);

/// hwloc's error types, one for each call that can fail.
#[cfg(feature = "hwloc")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum HwlocCause {
    /// `TopologyBuilder::with_flags` refused the flags.
    #[error(transparent)]
    Flags(hwlocality::errors::HybridError<hwlocality::errors::FlagsError<hwlocality::topology::builder::BuildFlags>>),
    /// `TopologyBuilder::build` (`hwloc_topology_load`) failed.
    #[error(transparent)]
    Build(hwlocality::errors::RawHwlocError),
}

#[cfg(feature = "hwloc")]
impl HwlocError {
    /// hwloc refused the topology's build flags.
    pub(crate) fn flags(
        e: hwlocality::errors::HybridError<hwlocality::errors::FlagsError<hwlocality::topology::builder::BuildFlags>>,
    ) -> Self {
        Self(HwlocCause::Flags(e))
    }

    /// hwloc could not discover the machine.
    pub(crate) fn build(e: hwlocality::errors::RawHwlocError) -> Self {
        Self(HwlocCause::Build(e))
    }
}

/// A set's error is a parse error, with the same input and reason.
impl From<SetError> for Error {
    fn from(e: SetError) -> Self {
        Error::Parse { input: e.input, reason: e.reason }
    }
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
