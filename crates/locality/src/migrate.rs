//! Migration as the run goes: a background thread that applies the
//! migration rule ([`MigrationRule`]) to the workers' live samples and
//! moves pages with the kernel, and the attribution of a profile whose pages
//! moved.
//!
//! Workers post each kept sample `(page, node)` to their slot of a
//! [`SampleBoard`]. Every epoch the [`Migrator`] thread drains the
//! board, asks the kernel where the sampled pages are, and moves the
//! `pages_per_epoch` hottest misplaced pages to their dominant accessor's
//! node (one batched `move_pages`, through
//! [`Placement::move_pages_to`](skelaff_numa_alloc::Placement::move_pages_to)),
//! logging each move with the time the batch ended.
//! [`Profile::attribute_with_moves`] then gives every sampled access the
//! node its page had when the access happened. The applied oracle (the
//! oracle module, [`OracleStretch`](crate::OracleStretch)) moves once,
//! with this module's [`move_hottest`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use skelaff_numa_alloc::pin::{Birthplace, spawn_pinned};
use skelaff_numa_alloc::{PageLocation, Placement};

use crate::board::SampleBoard;
use crate::error::{Error, Result};
use crate::kernel::page_nodes;
use crate::profile::{Attribution, Profile};
use crate::schemes::{Epoch, MigrationRule, choose_moves};

/// One page moved by the migrator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMove {
    /// The virtual page number.
    pub page: u64,
    /// Its node before the move.
    pub from: u16,
    /// Its node after.
    pub to: u16,
    /// When, in nanoseconds since the run's clock started: the end of the
    /// batch that moved it (an access before that counts on `from`).
    pub time_ns: u64,
    /// When the move was chosen: the samples posted before this time (on
    /// the same clock) are the ones it was chosen from.
    #[serde(default)]
    pub chosen_ns: u64,
}

/// What the migrator did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrationLog {
    /// Epochs run.
    pub epochs: u64,
    /// The moves, in time order.
    pub moves: Vec<PageMove>,
    /// Moves the kernel refused (the page stayed).
    pub failed: u64,
    /// Samples the board dropped while this migrator ran.
    pub dropped_samples: u64,
    /// Time spent choosing and moving pages, in nanoseconds.
    pub work_ns: u64,
    /// The applied oracle: workers held at their checkpoints while it
    /// moved pages, of those running (the rest ran on meanwhile).
    #[serde(default)]
    pub held_workers: Option<(u64, u64)>,
    /// The applied oracle's moves were made by a worker that found its
    /// stretch over between two units
    /// ([`AppliedOracle::act_if_due`](crate::AppliedOracle::act_if_due)),
    /// not by the oracle's thread.
    #[serde(default)]
    pub by_worker: bool,
    /// Moved pages still on the node their last move put them on when the
    /// thread stopped (`None`: not asked).
    #[serde(default)]
    pub still_there: Option<u64>,
    /// When the applied oracle chose its plan (nanoseconds on the run's
    /// clock), whether or not the plan moved anything: the accesses from
    /// then on ran on the oracle's placement. `None` when no oracle acted.
    #[serde(default)]
    pub oracle_chosen_ns: Option<u64>,
}

/// The background migration thread.
///
/// # Examples
///
/// ```no_run
/// use std::time::Instant;
/// use skelaff_locality::{MigrationRule, Migrator, SampleBoard};
///
/// let board = SampleBoard::new(4, 1 << 14);
/// let migrator = Migrator::start(board.clone(), MigrationRule::default(), 4, 4096, Instant::now())?;
/// // ... workers call board.post(worker, page, node) for their samples ...
/// let log = migrator.stop()?;
/// println!("{} pages moved in {} epochs", log.moves.len(), log.epochs);
/// # Ok::<(), skelaff_locality::Error>(())
/// ```
#[derive(Debug)]
pub struct Migrator {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Result<MigrationLog>>,
    page_size: u64,
}

impl Migrator {
    /// Starts the thread on a machine of `nodes` nodes; its clock is `start`
    /// (the run's, so move times compare with sample times).
    ///
    /// # Errors
    ///
    /// [`Error::Migration`] when the rule's epoch is not a time (a
    /// thread wakes on time), and [`Error::Numa`] when the thread cannot be
    /// spawned.
    pub fn start(
        board: Arc<SampleBoard>,
        rule: MigrationRule,
        nodes: usize,
        page_size: u64,
        start: Instant,
    ) -> Result<Migrator> {
        let Epoch::Time { ns } = rule.epoch else {
            return Err(Error::Migration {
                reason: "its epoch must be a time (Epoch::Time); sample-count epochs are for modelling".into(),
            });
        };
        let epoch = Duration::from_nanos(ns.max(1));
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        // Born where its creator may run, through the workspace's one way
        // of starting threads.
        let handle = spawn_pinned("skelaff-migrator", Birthplace::Inherited, move || {
            let job = Job { pages: rule.pages_per_epoch, epoch, nodes, page_size, start };
            run(&board, &job, &flag)
        })
        .map_err(|source| Error::Numa { what: "spawning the migration thread".into(), source })?;
        Ok(Migrator { stop, handle, page_size })
    }

    /// Stops the thread after its current epoch and returns its log. The
    /// samples posted since that epoch stay on the board: a board given to
    /// a later migrator (an oracle's stretch over several runs) hands them
    /// on.
    ///
    /// # Errors
    ///
    /// [`Error::Numa`] when the kernel could not be asked where pages are,
    /// [`Error::Migration`] if the thread panicked.
    pub fn stop(self) -> Result<MigrationLog> {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        let mut log =
            self.handle.join().unwrap_or_else(|_| Err(Error::Migration { reason: "the thread panicked".into() }))?;
        log.still_there = still_there(&log.moves, self.page_size);
        Ok(log)
    }
}

/// Of the pages `moves` moved, how many are still on the node their last
/// move put them on (`None`: the kernel would not say). A figure, not the
/// log's substance: a kernel that will not say leaves it unknown rather
/// than losing the moves.
pub(crate) fn still_there(moves: &[PageMove], page_size: u64) -> Option<u64> {
    let mut last: HashMap<u64, u16> = HashMap::new();
    for m in moves {
        last.insert(m.page, m.to);
    }
    let mut pages: Vec<u64> = last.keys().copied().collect();
    pages.sort_unstable();
    page_nodes(&pages, page_size)
        .ok()
        .map(|now| pages.iter().zip(now).filter(|(p, n)| *n == last.get(p).copied()).count() as u64)
}

/// What the migration thread does.
struct Job {
    /// Pages moved per epoch, at most.
    pages: usize,
    epoch: Duration,
    /// Nodes of the machine (the largest node number plus one).
    nodes: usize,
    page_size: u64,
    /// The run's clock.
    start: Instant,
}

fn run(board: &SampleBoard, job: &Job, stop: &AtomicBool) -> Result<MigrationLog> {
    let Job { pages, epoch, nodes, page_size, start } = *job;
    let mut log = MigrationLog::default();
    // The board may have served earlier runs: count only this run's drops.
    let dropped_before = board.dropped();
    let mut next = Instant::now() + epoch;
    while !stop.load(Ordering::Acquire) {
        let now = Instant::now();
        if now < next {
            // Parked until the epoch (`stop` unparks it).
            std::thread::park_timeout(next - now);
            continue;
        }
        next += epoch;
        log.epochs += 1;
        let began = Instant::now();
        move_hottest(board, nodes, page_size, pages, start, &mut log)?;
        log.work_ns += began.elapsed().as_nanos() as u64;
    }
    log.dropped_samples = board.dropped().saturating_sub(dropped_before);
    Ok(log)
}

/// One epoch: the board's samples drained, the kernel asked where their
/// pages are, and the `pages` hottest misplaced ones moved to their
/// dominant accessor's node, logged in `log`. When the board had samples,
/// the time the moves were chosen at (whether any page moved or not).
pub(crate) fn move_hottest(
    board: &SampleBoard,
    nodes: usize,
    page_size: u64,
    pages: usize,
    start: Instant,
    log: &mut MigrationLog,
) -> Result<Option<u64>> {
    // The time the moves are chosen at is read with every slot locked: the
    // samples stamped before it are exactly those counted.
    let (counts, chosen_ns) = board.drain_counts_at(nodes, || start.elapsed().as_nanos() as u64);
    if counts.is_empty() {
        return Ok(None);
    }
    let mut sampled: Vec<u64> = counts.keys().copied().collect();
    sampled.sort_unstable();
    let homes: HashMap<u64, Option<u16>> = sampled.iter().copied().zip(page_nodes(&sampled, page_size)?).collect();
    // Every chosen page in one batch (`move_pages`, 4096 per call): an
    // oracle moves thousands of scattered pages at once, and an `mbind`
    // per page took 0.3-3 s under TCG, so its moves landed after most
    // small runs had ended. A page's move is logged at the end of the
    // batch: an access made while the batch ran counts on the node the
    // page came from.
    let chosen: Vec<(u64, u16, u16)> = choose_moves(&counts, |p| homes.get(&p).copied().flatten(), pages)
        .into_iter()
        .filter_map(|(page, to)| Some((page, homes.get(&page).copied().flatten()?, to)))
        .collect();
    if chosen.is_empty() {
        return Ok(Some(chosen_ns));
    }
    let batch: Vec<(*const u8, usize)> =
        chosen.iter().map(|&(page, _, to)| ((page * page_size) as usize as *const u8, usize::from(to))).collect();
    let now_at = Placement::move_pages_to(&batch)
        .map_err(|source| Error::Numa { what: format!("moving {} pages", batch.len()), source })?;
    let time_ns = start.elapsed().as_nanos() as u64;
    for (&(page, from, to), at) in chosen.iter().zip(now_at) {
        if at == PageLocation::Node(usize::from(to)) {
            log.moves.push(PageMove { page, from, to, time_ns, chosen_ns });
        } else {
            log.failed += 1;
        }
    }
    Ok(Some(chosen_ns))
}

impl Profile {
    /// Attributes every access to the node its page had when it happened:
    /// the node the kernel reports now, walked back through `moves` (a page
    /// moved after an access was, at the access, on the move's `from`).
    /// Exact when the migrator was the only thing moving pages (automatic
    /// NUMA balancing off, or the pages bound).
    ///
    /// # Errors
    ///
    /// As [`Profile::attribute_at_end`].
    pub fn attribute_with_moves(self, moves: &[PageMove]) -> Result<Profile> {
        let pages = self.pages();
        let now: HashMap<u64, Option<u16>> =
            pages.iter().copied().zip(page_nodes(&pages, self.header().page_size)?).collect();
        let mut by_page: HashMap<u64, Vec<&PageMove>> = HashMap::new();
        for m in moves {
            by_page.entry(m.page).or_default().push(m);
        }
        for v in by_page.values_mut() {
            v.sort_by_key(|m| m.time_ns);
        }
        let (mut header, mut list) = self.into_parts();
        for a in &mut list {
            a.home = match by_page.get(&a.page).and_then(|v| v.iter().find(|m| m.time_ns > a.time_ns)) {
                Some(m) => Some(m.from),
                None => now.get(&a.page).copied().flatten(),
            };
        }
        header.attribution = Attribution::Live;
        // Validates the homes against the machine.
        Profile::new(header, list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_count_epoch_is_refused_for_the_thread() {
        let rule = MigrationRule { pages_per_epoch: 1, epoch: Epoch::Samples { count: 10 } };
        let e = Migrator::start(SampleBoard::new(1, 1), rule, 1, 4096, Instant::now()).unwrap_err();
        assert!(e.to_string().contains("epoch must be a time"), "{e}");
    }

    #[test]
    fn the_thread_runs_epochs_and_stops() {
        let rule = MigrationRule { pages_per_epoch: 10, epoch: Epoch::Time { ns: 1_000_000 } };
        let board = SampleBoard::new(1, 16);
        let m = Migrator::start(board.clone(), rule, 1, 4096, Instant::now()).unwrap();
        // A heap page of this process, sampled from node 0: on a one-node
        // machine it is never misplaced, so nothing moves.
        let v = vec![1u8; 1 << 14];
        board.post(0, v.as_ptr() as u64 / 4096 + 1, 0);
        std::thread::sleep(Duration::from_millis(20));
        let log = m.stop().unwrap();
        assert!(log.epochs >= 2, "{log:?}");
        assert_eq!((log.moves.len(), log.failed), (0, 0));
        drop(v);
    }

    #[test]
    fn moves_walk_homes_back_in_time() {
        use crate::profile::{PageAccess, ProfileHeader};
        // Two heap pages of this process; whatever node they are on now, an
        // access before a logged move is attributed to the move's `from`.
        let v = vec![1u8; 1 << 14];
        let page = v.as_ptr() as u64 / 4096 + 1;
        let h = ProfileHeader::new("2x1".parse().unwrap(), "t", "migration", 1);
        let p = Profile::new(h, vec![PageAccess::read(page, 0, 0, 5), PageAccess::read(page, 0, 0, 50)]).unwrap();
        let moves = [PageMove { page, from: 1, to: 0, time_ns: 10, chosen_ns: 5 }];
        let q = p.attribute_with_moves(&moves).unwrap();
        assert_eq!(q.accesses()[0].home, Some(1));
        assert_eq!(q.accesses()[1].home, Some(0)); // this machine's one node
        assert_eq!(q.header().attribution, Attribution::Live);
        drop(v);
    }
}
