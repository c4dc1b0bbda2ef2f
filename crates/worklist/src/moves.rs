//! The hook through which a run moves its pages as it goes: a migration
//! rule's thread ([`Builder::migration`]) or the applied oracle
//! ([`Builder::oracle`]), both from `skelaff-locality`.
//!
//! As helpers are reached through [`Assist`](crate::Assist), the run and
//! its workers reach a mover only through [`PageMover`]: the run starts one
//! ([`start`]) and stops it for its log; a worker posts its samples to the
//! mover's board, and between two units (and when idle) looks in at its
//! checkpoint:
//!
//! ```text
//! after a unit's commit, or idle:
//!     if looking():                      the gate is closed, or an oracle waits
//!         gate closed   -> post the samples, wait at the gate
//!         else          -> unit_committed() (after a commit); read the clock:
//!                          due(now)?  -> post the samples, act_if_due(now)
//!                          otherwise  -> post the samples once a millisecond
//! ```
//!
//! [`Builder::migration`]: crate::Builder::migration
//! [`Builder::oracle`]: crate::Builder::oracle

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use skelaff_locality::{AppliedOracle, MigrationLog, Migrator, OracleRun, SampleBoard};
use skelaff_numa_alloc::Topology;

use crate::config::Builder;
use crate::error::{Error, ProfileError};

/// Distinct `(page, node)` pairs each worker's slot of the migration board
/// (where the workers post their kept samples) counts between two epochs
/// (the applied oracle's stretch is one epoch): the size the run gives a
/// migration rule's board and the oracle its stretch's.
const MIGRATION_SLOT: usize = 1 << 14;

/// What moves a run's pages as it goes, as the run and its workers see it.
///
/// The worker-side calls ([`looking`](PageMover::looking) after every unit,
/// the others only when it says so) are on the worker's path: a few
/// relaxed loads each, but for the oracle's acting.
pub(crate) trait PageMover: Send + Sync {
    /// The board the workers post their kept samples to.
    fn board(&self) -> &Arc<SampleBoard>;

    /// Whether a worker between two units (or idle) must stop at its
    /// checkpoint: the board's gate is closed, or an oracle waits for its
    /// stretch to end.
    fn looking(&self) -> bool {
        self.board().holding()
    }

    /// A worker committed a unit (counted toward an oracle's stretch of units).
    fn unit_committed(&self) {}

    /// Whether an oracle's stretch is over at `now`, on the run's clock.
    fn due(&self, now: Duration) -> bool {
        let _ = now;
        false
    }

    /// A worker, its samples posted, acts for the oracle if it is still
    /// due at `now` and nobody else has claimed it; whether it acted.
    fn act_if_due(&self, now: Duration) -> bool {
        let _ = now;
        false
    }

    /// The run is over (every worker is done): the mover stops; its log of
    /// this run (`None` when it was stopped already).
    ///
    /// # Errors
    ///
    /// The thread's or the kernel's, as `skelaff-locality` says them.
    fn stop(&self) -> Result<Option<MigrationLog>, skelaff_locality::Error>;
}

/// Starts what moves the run's pages as the builder asks, on the run's
/// clock `start` (so that move times compare with sample times): a
/// migration rule's thread, or the applied oracle while it has not acted
/// (and no other run has it); `None` for neither.
///
/// # Errors
///
/// [`Error::Profile`] when the mover cannot start.
pub(crate) fn start(
    cfg: &Builder,
    workers: usize,
    topo: &Topology,
    start: Instant,
) -> Result<Option<Arc<dyn PageMover>>, Error> {
    let nodes = topo.nodes().iter().map(|n| n.os_index + 1).max().unwrap_or(1);
    let page_size = topo.page_size() as u64;
    let started: Result<Option<Arc<dyn PageMover>>, skelaff_locality::Error> = if let Some(rule) = cfg.migration {
        let board = SampleBoard::new(workers, MIGRATION_SLOT);
        Migrator::start(board.clone(), rule, nodes, page_size, start)
            .map(|m| Some(Arc::new(RuleThread { board, migrator: Mutex::new(Some(m)) }) as Arc<dyn PageMover>))
    } else if let Some(stretch) = &cfg.oracle {
        stretch.begin_run(workers, MIGRATION_SLOT, nodes, page_size, start).map(|run| {
            run.map(|run| {
                Arc::new(Oracle { applied: run.applied().clone(), run: Mutex::new(Some(run)) }) as Arc<dyn PageMover>
            })
        })
    } else {
        Ok(None)
    };
    started.map_err(|e| ProfileError::MigrationStart(e).into())
}

/// A migration rule applied by its thread, epoch after epoch.
struct RuleThread {
    board: Arc<SampleBoard>,
    /// Taken by [`PageMover::stop`].
    migrator: Mutex<Option<Migrator>>,
}

impl PageMover for RuleThread {
    fn board(&self) -> &Arc<SampleBoard> {
        &self.board
    }

    fn stop(&self) -> Result<Option<MigrationLog>, skelaff_locality::Error> {
        self.migrator.lock().take().map(Migrator::stop).transpose()
    }
}

/// The applied oracle's part in one run.
struct Oracle {
    applied: Arc<AppliedOracle>,
    /// Taken by [`PageMover::stop`].
    run: Mutex<Option<OracleRun>>,
}

impl PageMover for Oracle {
    fn board(&self) -> &Arc<SampleBoard> {
        self.applied.board()
    }

    #[inline]
    fn looking(&self) -> bool {
        self.applied.board().holding() || self.applied.waiting()
    }

    #[inline]
    fn unit_committed(&self) {
        self.applied.count_unit();
    }

    fn due(&self, now: Duration) -> bool {
        self.applied.due(now)
    }

    fn act_if_due(&self, now: Duration) -> bool {
        self.applied.act_if_due(now)
    }

    fn stop(&self) -> Result<Option<MigrationLog>, skelaff_locality::Error> {
        self.run.lock().take().map(OracleRun::stop).transpose()
    }
}
