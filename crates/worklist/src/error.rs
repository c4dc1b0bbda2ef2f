//! What can go wrong building or running a worklist.

/// Errors of building or running a worklist.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `threads(0)`.
    #[error("a worklist needs at least one thread (got 0)")]
    ZeroThreads,
    /// A name that is not one of the allowed ones (a mapping, a page
    /// policy, a helpers setting, a distribution given as text).
    #[error(transparent)]
    UnknownName(#[from] skelaff_numa_alloc::UnknownName),
    /// The placement laid out a different number of threads than asked.
    #[error("the placement `{placement}` laid out {got} workers; {asked} were asked for")]
    Placement {
        /// The placement's name.
        placement: String,
        /// Workers asked for.
        asked: usize,
        /// Workers it laid out.
        got: usize,
    },
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
    /// The access profile asked for could not be made (a zero sampling
    /// period or capacity, or a machine the profile cannot describe).
    #[error("access profile: {0}")]
    Profile(String),
    /// The OS refused to start a worker thread (thread or memory limits);
    /// the workers already started were stopped.
    #[error("worker {worker}'s thread could not start; the run was stopped")]
    Spawn {
        /// The worker whose thread did not start.
        worker: usize,
        /// What `pthread_create` failed with.
        #[source]
        source: skelaff_numa_alloc::SysError,
    },
    /// A run given to a [`WorkerPool`](crate::WorkerPool) of another
    /// size than the builder asked for.
    #[error("the worker pool has {pool} threads but the worklist was built for {asked}; build it with threads({pool})")]
    PoolMismatch {
        /// The pool's threads.
        pool: usize,
        /// The threads the builder asked for.
        asked: usize,
    },
    /// A run given, from one of a [`WorkerPool`](crate::WorkerPool)'s own
    /// threads, to that pool: it would wait for the run its thread is
    /// serving. [`Worklist::run`](crate::Worklist::run) gives such a run
    /// fresh threads instead.
    #[error(
        "a run given to the worker pool from one of its own threads would wait for itself; use Worklist::run, or another pool"
    )]
    NestedRun,
}
