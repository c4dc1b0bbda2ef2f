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
//! node its page had when the access happened. The applied oracle
//! ([`Migrator::start_oracle`]) moves once, done by its thread or by the
//! first worker to see its stretch end.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use skelaff_numa_alloc::pin::{Birthplace, spawn_pinned};
use skelaff_numa_alloc::{PageLocation, Placement};

use crate::board::{NEVER, SampleBoard, WaitingOracle};
use crate::error::{Error, Result};
use crate::kernel::page_nodes;
use crate::profile::{Attribution, Profile};
use crate::schemes::{Epoch, MigrationRule, choose_moves};

/// How long an applied oracle profiles before it acts, from when it starts.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use skelaff_locality::Stretch;
///
/// assert!(Stretch::Time(Duration::ZERO).is_zero());
/// assert!(!Stretch::Units(100).is_zero());
/// assert_eq!(Stretch::Units(100).to_string(), "100 units");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stretch {
    /// This long on the run's clock.
    Time(Duration),
    /// Until this many more units have committed, counted on the board
    /// ([`SampleBoard::count_unit`]) over every run that posts to it. A
    /// fixed share of the work, where a time is a share of one run only if
    /// every run takes as long: under an emulator the same run's length
    /// varies severalfold (labyrinth's small input on NUMA32 ran its work
    /// in 233 ms where the policy runs' median was 855 ms, so a third of
    /// that median outlasted it).
    Units(u64),
}

impl Stretch {
    /// A stretch of no time or no unit (refused by [`Migrator::start_oracle`]).
    pub fn is_zero(&self) -> bool {
        match self {
            Stretch::Time(t) => t.is_zero(),
            Stretch::Units(n) => *n == 0,
        }
    }
}

impl std::fmt::Display for Stretch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stretch::Time(t) => write!(f, "{:.1} ms", t.as_secs_f64() * 1e3),
            Stretch::Units(n) => write!(f, "{n} units"),
        }
    }
}

/// An applied oracle waiting for its stretch to end: whoever sees the end
/// first (the migration thread at its epoch, or a worker between two units)
/// claims it and moves the pages.
#[derive(Debug)]
pub(crate) struct OracleTask {
    /// When it is due by time (`u64::MAX` while claimed, [`NEVER`] for a
    /// stretch of units), and the stretch it waits again when the board had
    /// no sample at its end.
    due_ns: AtomicU64,
    stretch: Stretch,
    /// How long to wait for the workers to reach their checkpoints (`None`:
    /// a quarter of the run's time so far, from 1 ms to 250 ms).
    hold: Option<Duration>,
    nodes: usize,
    page_size: u64,
    /// The run's clock.
    start: Instant,
    /// The board's drops when the oracle started (a board may serve several runs).
    dropped_before: u64,
    /// The workers that had left the board when the oracle started.
    left_before: u64,
    claimed: AtomicBool,
    /// What the one who acted did.
    log: Mutex<Option<Result<MigrationLog>>>,
}

/// The bounds of an oracle's hold when it is a share of the run's time.
const HOLD_MIN: Duration = Duration::from_millis(1);
const HOLD_MAX: Duration = Duration::from_millis(250);

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
    /// stretch over between two units ([`SampleBoard::act_if_due`]), not
    /// by the oracle's thread.
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
    /// The thread (none for an oracle whose stretch is in units).
    handle: Option<JoinHandle<Result<MigrationLog>>>,
    page_size: u64,
    /// The applied oracle and its board.
    oracle: Option<(Arc<OracleTask>, Arc<SampleBoard>)>,
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
        Ok(Migrator { stop, handle: Some(handle), page_size, oracle: None })
    }

    /// Oracle_High applied for real, once, from a first profiling stretch
    /// of the run: when `stretch` is over (a time on the run's clock, or a
    /// number of units committed), every sample the workers posted so far
    /// is taken and every misplaced sampled page moves to its dominant
    /// accessor's node (all of them, not the hottest few); then nothing
    /// more. Accesses after that moment run on the oracle's placement of
    /// the pages sampled before it.
    ///
    /// While it moves, the workers that reach a checkpoint
    /// ([`SampleBoard::checkpoint`]) wait; before moving it waits at most
    /// `hold` for all of them to get there (`None`: a quarter of the run's
    /// time so far, from 1 ms to 250 ms). The first worker that finds the
    /// stretch over between two units ([`SampleBoard::act_if_due`]) acts at
    /// once. A stretch of time also has a thread, as a fallback for a run
    /// whose workers are all inside long units at its end; a stretch of
    /// units ends at a unit's commit, so it has none. A run of long units
    /// wants a short `hold` (a worker mid-unit runs on while the pages
    /// move, and its accesses until the batch ends count on the node a page
    /// came from); a run of short units loses nothing by waiting for all.
    ///
    /// # Errors
    ///
    /// As [`Migrator::start`] ([`Error::Migration`] for a zero stretch).
    pub fn start_oracle(
        board: Arc<SampleBoard>,
        stretch: Stretch,
        hold: Option<Duration>,
        nodes: usize,
        page_size: u64,
        start: Instant,
    ) -> Result<Migrator> {
        if stretch.is_zero() {
            return Err(Error::Migration { reason: "the oracle needs a profiling stretch longer than zero".into() });
        }
        let task = Arc::new(OracleTask {
            due_ns: AtomicU64::new(u64::MAX),
            stretch,
            hold,
            nodes,
            page_size,
            start,
            dropped_before: board.dropped(),
            left_before: board.workers_left(),
            claimed: AtomicBool::new(false),
            log: Mutex::new(None),
        });
        *board.oracle.lock() = Some(task.clone());
        task.arm(&board);
        let stop = Arc::new(AtomicBool::new(false));
        let handle = match stretch {
            Stretch::Units(_) => None,
            Stretch::Time(_) => {
                let flag = stop.clone();
                let (b, t) = (board.clone(), task.clone());
                let spawned = std::thread::Builder::new().name("skelaff-oracle".into()).spawn(move || {
                    wait_for_oracle(&b, &t, &flag);
                    Ok(MigrationLog::default())
                });
                match spawned {
                    Ok(handle) => Some(handle),
                    Err(e) => {
                        board.withdraw_oracle(&task);
                        return Err(Error::io("spawning the migration thread")(e));
                    }
                }
            }
        };
        Ok(Migrator { stop, handle, page_size, oracle: Some((task, board)) })
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
        let joined = match self.handle {
            Some(handle) => {
                handle.thread().unpark();
                handle.join().unwrap_or_else(|_| Err(Error::Migration { reason: "the thread panicked".into() }))
            }
            None => Ok(MigrationLog::default()),
        };
        let mut log = match &self.oracle {
            Some((task, board)) => {
                board.withdraw_oracle(task);
                joined?;
                // Whoever acted left its log; nobody did if the run ended first.
                let mut log = task.log.lock().take().unwrap_or_else(|| Ok(MigrationLog::default()))?;
                log.dropped_samples = board.dropped().saturating_sub(task.dropped_before);
                log
            }
            None => joined?,
        };
        // Where each page's last move put it, is it still there?
        let mut last: HashMap<u64, u16> = HashMap::new();
        for m in &log.moves {
            last.insert(m.page, m.to);
        }
        let mut pages: Vec<u64> = last.keys().copied().collect();
        pages.sort_unstable();
        // A figure, not the log's substance: a kernel that will not say
        // leaves it unknown rather than losing the moves.
        log.still_there = page_nodes(&pages, self.page_size)
            .ok()
            .map(|now| pages.iter().zip(now).filter(|(p, n)| *n == last.get(p).copied()).count() as u64);
        Ok(log)
    }
}

/// Workers held at the board's gate, let go when dropped.
struct Held<'a> {
    board: &'a SampleBoard,
    /// Held and entered workers when the wait ended.
    counts: (u64, u64),
}

impl<'a> Held<'a> {
    fn new(board: &'a SampleBoard, within: Duration, acting: usize) -> Self {
        let (held, active) = board.hold_workers(within, acting);
        Held { board, counts: (held as u64, active as u64) }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.board.release_workers();
    }
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

impl OracleTask {
    /// Whether the caller is the one to act (the first to ask); the board's
    /// workers stop looking.
    fn claim(&self, board: &SampleBoard) -> bool {
        if self.claimed.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.due_ns.store(u64::MAX, Ordering::Relaxed);
        board.oracle_due_ns.store(u64::MAX, Ordering::Relaxed);
        board.oracle_due_units.store(u64::MAX, Ordering::Relaxed);
        true
    }

    /// Makes the oracle due a whole stretch from now, on the board too (a
    /// stretch of units from the board's count now).
    fn arm(&self, board: &SampleBoard) {
        let due_ns = match self.stretch {
            Stretch::Time(after) => {
                u64::try_from((self.start.elapsed() + after).as_nanos()).unwrap_or(u64::MAX).min(NEVER)
            }
            Stretch::Units(n) => {
                board.oracle_due_units.store(board.units_counted().saturating_add(n), Ordering::Relaxed);
                NEVER
            }
        };
        self.due_ns.store(due_ns, Ordering::Relaxed);
        // Last: a worker that sees the oracle waiting sees its due count.
        board.oracle_due_ns.store(due_ns, Ordering::Release);
    }
}

impl WaitingOracle for OracleTask {
    /// Claims the oracle and acts on it (`acting` of the board's workers
    /// being the caller); a board without samples, or a run whose workers
    /// have all finished, makes it wait another stretch. Whether the caller
    /// claimed it.
    fn act(&self, board: &SampleBoard, acting: usize) -> bool {
        if !self.claim(board) {
            return false;
        }
        match act_oracle(board, self, acting) {
            Ok(log) if log.held_workers.is_none() => {
                self.arm(board);
                self.claimed.store(false, Ordering::Release);
            }
            log => *self.log.lock() = Some(log),
        }
        true
    }
}

/// The oracle's thread: parked until the stretch's end (`stop` unparks it),
/// then acts unless a worker has.
fn wait_for_oracle(board: &SampleBoard, task: &OracleTask, stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        let due = task.due_ns.load(Ordering::Relaxed);
        if due == u64::MAX {
            // A worker is acting: done when its log is in, or the board
            // was empty and the oracle waits another stretch (looked for
            // once a stretch; `stop` unparks it).
            if task.log.lock().is_some() {
                return;
            }
            let Stretch::Time(after) = task.stretch else { return };
            std::thread::park_timeout(after);
            continue;
        }
        let now = u64::try_from(task.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if now < due {
            // Parked, not slept in slices: a sleep in 5 ms slices woke the
            // oracle of a 17 ms labyrinth run 6 ms late in a TCG guest.
            std::thread::park_timeout(Duration::from_nanos(due - now));
            continue;
        }
        task.act(board, 0);
    }
}

/// Oracle_High applied once: the workers held (`acting` of them being the
/// caller), every misplaced sampled page moved to its dominant accessor's
/// node.
fn act_oracle(board: &SampleBoard, task: &OracleTask, acting: usize) -> Result<MigrationLog> {
    let began = Instant::now();
    let mut log = MigrationLog { epochs: 1, by_worker: acting > 0, ..MigrationLog::default() };
    // The oracle holds the workers while it moves: under TCG a page takes
    // about 0.6 ms to move, and workers running meanwhile made most of a
    // small run's accesses before the placement was the oracle's. Released
    // when `held` drops, on every way out.
    let hold = task.hold.unwrap_or_else(|| (task.start.elapsed() / 4).clamp(HOLD_MIN, HOLD_MAX));
    let held = Held::new(board, hold, acting);
    if board.run_over(task.left_before) {
        // The run's workers have all finished (its stretch ended in the
        // gap before the run stops the thread): moves now would come after
        // its last access. The samples stay on the board, and a later run
        // of the stretch acts on them at its start.
        return Ok(log);
    }
    if let Some(chosen) = move_hottest(board, task.nodes, task.page_size, usize::MAX, task.start, &mut log)? {
        log.held_workers = Some(held.counts);
        log.oracle_chosen_ns = Some(chosen);
    }
    log.work_ns = began.elapsed().as_nanos() as u64;
    Ok(log)
}

/// One epoch: the board's samples drained, the kernel asked where their
/// pages are, and the `pages` hottest misplaced ones moved to their
/// dominant accessor's node, logged in `log`. When the board had samples,
/// the time the moves were chosen at (whether any page moved or not).
fn move_hottest(
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

    /// An applied oracle on a one-node machine of 4 KiB pages, clocked from now.
    fn oracle(board: &Arc<SampleBoard>, after: Duration, hold: Duration) -> Migrator {
        Migrator::start_oracle(board.clone(), Stretch::Time(after), Some(hold), 1, 4096, Instant::now()).unwrap()
    }

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
    fn stop_wakes_a_migrator_parked_until_a_far_epoch() {
        let board = SampleBoard::new(1, 4);
        let m = oracle(&board, Duration::from_secs(60), Duration::ZERO);
        std::thread::sleep(Duration::from_millis(20));
        let t = Instant::now();
        let log = m.stop().unwrap();
        // Unparked at once, not at the epoch a minute away.
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert_eq!((log.epochs, log.moves.len(), log.held_workers), (0, 0, None));
    }

    #[test]
    fn the_applied_oracle_acts_once_after_its_stretch() {
        for zero in [Stretch::Time(Duration::ZERO), Stretch::Units(0)] {
            let e = Migrator::start_oracle(SampleBoard::new(1, 1), zero, None, 1, 4096, Instant::now()).unwrap_err();
            assert!(e.to_string().contains("longer than zero"), "{e}");
        }
        let board = SampleBoard::new(1, 16);
        // Posted before the thread starts, so its first epoch has it however
        // late this thread runs again.
        let v = vec![1u8; 1 << 14];
        board.post(0, v.as_ptr() as u64 / 4096 + 1, 0);
        let m = oracle(&board, Duration::from_millis(2), Duration::from_millis(250));
        // Until the oracle has acted (its epoch emptied the board), or long enough.
        let waited = Instant::now();
        while !board.slots[0].lock().is_empty() && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Later samples are never taken: the thread acted once and ended.
        board.post(0, v.as_ptr() as u64 / 4096 + 2, 0);
        std::thread::sleep(Duration::from_millis(10));
        let log = m.stop().unwrap();
        assert_eq!(log.epochs, 1, "{log:?}");
        assert_eq!((log.moves.len(), log.failed), (0, 0), "one node: nothing is misplaced");
        assert_eq!(board.drain_counts(1).len(), 1, "the sample posted after the oracle acted is still on the board");
        drop(v);
    }

    #[test]
    fn a_worker_past_the_stretch_acts_for_the_oracle_and_counts_itself_held() {
        let board = SampleBoard::new(1, 16);
        assert!(!board.oracle_waiting());
        board.enter();
        let v = vec![1u8; 1 << 14];
        // The thread's stretch is a minute: only the worker can act here.
        let before_start = Instant::now();
        let m = oracle(&board, Duration::from_secs(60), Duration::from_secs(60));
        assert!(board.oracle_waiting());
        assert!(!board.oracle_due(Duration::from_secs(1)));
        assert!(!board.act_if_due(Duration::from_secs(1)), "acted before the stretch ended");
        // The stretch ended with nothing sampled: the worker claims it,
        // finds the board empty, and the oracle waits another stretch.
        assert!(board.act_if_due(Duration::from_secs(61)));
        assert!(board.oracle_waiting());
        // Re-armed a stretch after the (real) moment it found the board empty.
        assert!(!board.oracle_due(Duration::from_secs(60)), "re-armed a stretch later");
        board.post(0, v.as_ptr() as u64 / 4096 + 1, 0);
        let began = Instant::now();
        assert!(board.act_if_due(Duration::from_secs(1000)));
        // The one worker entered is the one acting: no wait for the others.
        assert!(began.elapsed() < Duration::from_secs(30), "{:?}", began.elapsed());
        assert!(!board.oracle_waiting());
        assert!(!board.act_if_due(Duration::from_secs(2000)), "the oracle acts once");
        board.leave();
        let log = m.stop().unwrap();
        assert_eq!((log.epochs, log.held_workers, log.by_worker), (1, Some((1, 1)), true), "{log:?}");
        assert_eq!((log.moves.len(), log.failed), (0, 0), "one node: nothing is misplaced");
        // A plan that moved nothing still says when it was chosen: the
        // accesses after it ran on the oracle's (unchanged) placement.
        assert!(log.oracle_chosen_ns.is_some_and(|t| t <= before_start.elapsed().as_nanos() as u64), "{log:?}");
        drop(v);
    }

    #[test]
    fn an_oracle_of_units_acts_at_the_unit_that_ends_its_stretch() {
        let board = SampleBoard::new(1, 16);
        board.enter();
        let v = vec![1u8; 1 << 14];
        let page = v.as_ptr() as u64 / 4096 + 1;
        // Units are counted only while an oracle of units waits.
        board.count_unit();
        assert_eq!(board.units_counted(), 0);
        let units = |m| Migrator::start_oracle(board.clone(), Stretch::Units(m), None, 1, 4096, Instant::now());
        let m = units(3).unwrap();
        assert!(m.handle.is_none(), "a stretch of units has no thread");
        assert!(board.oracle_waiting());
        board.count_unit();
        board.count_unit();
        assert!(!board.oracle_due(Duration::from_secs(1 << 40)), "no time ends a stretch of units");
        assert!(!board.act_if_due(Duration::from_secs(1 << 40)));
        // The third unit ends it; the board is empty, so the oracle waits
        // three units more.
        board.count_unit();
        assert!(board.oracle_due(Duration::ZERO));
        assert!(board.act_if_due(Duration::ZERO));
        assert!(board.oracle_waiting());
        board.post(0, page, 0);
        board.count_unit();
        board.count_unit();
        assert!(!board.act_if_due(Duration::ZERO), "re-armed three units on");
        board.count_unit();
        assert!(board.act_if_due(Duration::ZERO));
        assert!(!board.oracle_waiting(), "acted");
        board.count_unit();
        assert_eq!(board.units_counted(), 6, "no unit is counted once the oracle acted");
        board.leave();
        let log = m.stop().unwrap();
        assert_eq!((log.epochs, log.held_workers, log.by_worker), (1, Some((1, 1)), true), "{log:?}");
        // A later run's oracle counts on from the board's count.
        let m = units(2).unwrap();
        board.count_unit();
        assert!(!board.oracle_due(Duration::ZERO));
        board.count_unit();
        assert!(board.oracle_due(Duration::ZERO));
        m.stop().unwrap();
        assert!(!board.oracle_waiting(), "withdrawn when its run stopped");
        drop(v);
    }

    #[test]
    fn an_oracle_due_after_its_run_s_workers_finished_leaves_the_samples_for_the_next_run() {
        let board = SampleBoard::new(1, 16);
        let v = vec![1u8; 1 << 14];
        let m = oracle(&board, Duration::from_secs(60), Duration::ZERO);
        // The run's one worker samples a page and finishes.
        board.enter();
        board.post(0, v.as_ptr() as u64 / 4096 + 1, 0);
        board.leave();
        // The thread's turn comes now (as if its epoch had come in the gap
        // before the run stops it): it claims, and does nothing.
        let task = board.oracle.lock().clone().unwrap();
        assert!(task.act(&board, 0));
        assert!(board.oracle_waiting(), "waits again");
        let log = m.stop().unwrap();
        assert_eq!((log.epochs, log.held_workers, log.oracle_chosen_ns), (0, None, None), "{log:?}");
        assert_eq!(board.drain_counts(1).len(), 1, "the sample is still on the board");
        drop(v);
    }

    #[test]
    fn a_stopped_oracle_leaves_its_board_to_the_next_run() {
        let board = SampleBoard::new(1, 16);
        let m = oracle(&board, Duration::from_secs(60), Duration::ZERO);
        let log = m.stop().unwrap();
        assert_eq!((log.held_workers, log.oracle_chosen_ns), (None, None));
        // The run ended before the stretch: no worker may act on it now.
        assert!(!board.oracle_waiting());
        assert!(!board.act_if_due(Duration::from_secs(1000)));
    }

    #[test]
    fn moves_walk_homes_back_in_time() {
        use crate::profile::{Access, ProfileHeader};
        // Two heap pages of this process; whatever node they are on now, an
        // access before a logged move is attributed to the move's `from`.
        let v = vec![1u8; 1 << 14];
        let page = v.as_ptr() as u64 / 4096 + 1;
        let h = ProfileHeader::new("2x1".parse().unwrap(), "t", "migration", 1);
        let p = Profile::new(h, vec![Access::read(page, 0, 0, 5), Access::read(page, 0, 0, 50)]).unwrap();
        let moves = [PageMove { page, from: 1, to: 0, time_ns: 10, chosen_ns: 5 }];
        let q = p.attribute_with_moves(&moves).unwrap();
        assert_eq!(q.accesses()[0].home, Some(1));
        assert_eq!(q.accesses()[1].home, Some(0)); // this machine's one node
        assert_eq!(q.header().attribution, Attribution::Live);
        drop(v);
    }
}
