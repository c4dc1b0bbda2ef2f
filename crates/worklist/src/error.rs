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
    /// The access profile asked for, or the page migration beside it,
    /// could not be set up or made.
    #[error(transparent)]
    Profile(#[from] ProfileError),
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

/// What went wrong with a run's access profile or the page migration that
/// feeds on it: a builder setting that cannot work (each names what would),
/// or a part that failed while the run set it up or ended (the cause is the
/// [`source`](std::error::Error::source)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The access profile's sampling (`Builder::access_profile`) was refused.
    #[error("the access profile's sampling (period and capacity) is not allowed")]
    Sampling(#[source] skelaff_locality::Error),
    /// `Builder::oracle_after` without what the applied oracle needs.
    #[error(
        "the applied oracle needs an access profile (access_profile), a stretch longer than zero, \
         and no migration rule beside it"
    )]
    OracleNeeds,
    /// `Builder::migration` without `Builder::access_profile`.
    #[error("migration takes its samples from the access profile: ask for one with access_profile")]
    MigrationWithoutProfile,
    /// A migration rule that cannot be applied for real.
    #[error(
        "a migration rule applied for real needs a time epoch and at least one page per epoch \
         (got {pages_per_epoch} page(s) per epoch, epoch {epoch:?})"
    )]
    MigrationRule {
        /// The rule's pages per epoch.
        pages_per_epoch: usize,
        /// The rule's epoch.
        epoch: skelaff_locality::Epoch,
    },
    /// A worker's STM access sampler would not start; the run was stopped.
    #[error("worker {worker}'s access sampler could not start; the run was stopped")]
    Sampler {
        /// The worker.
        worker: usize,
        /// What the sampler refused.
        #[source]
        source: skelaff_stm::SamplerError,
    },
    /// The migration thread (a rule's, or the applied oracle's) could not start.
    #[error("the page migration thread could not start")]
    MigrationStart(#[source] skelaff_locality::Error),
    /// The migration thread failed while the run went on, or as it stopped.
    #[error("the page migration thread failed")]
    Migration(#[source] skelaff_locality::Error),
    /// The profile could not be put together from the workers' samples (the
    /// machine could not be described, or the recorders did not agree).
    #[error("the access profile could not be assembled from the workers' samples")]
    Assemble(#[source] skelaff_locality::Error),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn profile_errors_say_what_was_wrong_and_keep_their_cause() {
        let e = Error::from(ProfileError::MigrationRule {
            pages_per_epoch: 0,
            epoch: skelaff_locality::Epoch::Time { ns: 1_000 },
        });
        let text = e.to_string();
        assert!(text.contains("time epoch") && text.contains("got 0 page(s) per epoch"), "{text}");
        let zero = skelaff_locality::Sampling::new(0, 1).unwrap_err();
        let e = ProfileError::Sampling(zero);
        assert!(e.to_string().contains("sampling"), "{e}");
        let cause = e.source().expect("the refusal is the source").to_string();
        assert!(cause.contains('0'), "the cause names the zero it refused: {cause}");
        let e = ProfileError::Sampler { worker: 3, source: skelaff_stm::SamplerError::InTransaction };
        assert!(e.to_string().contains("worker 3"), "{e}");
        assert!(e.source().is_some_and(|s| s.to_string().contains("inside a transaction")));
    }
}
