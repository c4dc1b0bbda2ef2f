//! Migration as the run goes: a background thread that applies the
//! migration rule ([`MigrationRule`]) to the workers' live samples and
//! moves pages with the kernel, and the attribution of a profile whose pages
//! moved.
//!
//! Workers post each kept sample `(page, node)` to their slot of a
//! [`SampleBoard`] (one lock per worker, so workers never contend with each
//! other; a slot holds at most `capacity` samples between epochs and counts
//! what it had to drop). Every epoch the [`Migrator`] thread drains the
//! board, asks the kernel where the sampled pages are, and moves the
//! `pages_per_epoch` hottest misplaced pages to their dominant accessor's
//! node (one batched `move_pages`, through
//! [`Placement::move_pages_to`](skelaff_numa_alloc::Placement::move_pages_to)),
//! logging each move with the time the batch ended. [`Profile::attribute_with_moves`] then gives every sampled access
//! the node its page had when the access happened.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};
use skelaff_numa_alloc::{PageLocation, Placement};

use crate::error::{Error, Result};
use crate::kernel::page_nodes;
use crate::profile::{Attribution, Profile};
use crate::schemes::{Epoch, MigrationRule, choose_moves};

/// The workers' recent samples, one bounded slot per worker; and the gate
/// at which the applied oracle holds the workers while it moves pages.
#[derive(Debug)]
pub struct SampleBoard {
    slots: Vec<Mutex<Vec<(u64, u16)>>>,
    capacity: usize,
    dropped: AtomicU64,
    /// Set while the oracle wants the workers held ([`SampleBoard::checkpoint`]).
    hold: AtomicBool,
    gate: Mutex<Gate>,
    changed: Condvar,
}

/// Workers between [`SampleBoard::enter`] and [`SampleBoard::leave`], and
/// how many of them wait at the gate.
#[derive(Debug, Default)]
struct Gate {
    active: usize,
    held: usize,
}

impl SampleBoard {
    /// A board for `workers` workers, each slot holding at most `capacity`
    /// samples between two epochs.
    pub fn new(workers: usize, capacity: usize) -> Arc<SampleBoard> {
        Arc::new(SampleBoard {
            slots: (0..workers).map(|_| Mutex::new(Vec::with_capacity(capacity.min(4096)))).collect(),
            capacity,
            dropped: AtomicU64::new(0),
            hold: AtomicBool::new(false),
            gate: Mutex::new(Gate::default()),
            changed: Condvar::new(),
        })
    }

    /// A worker starts posting: the oracle waits for it at its moves.
    pub fn enter(&self) {
        self.gate.lock().active += 1;
    }

    /// A worker is done: nobody waits for it any more.
    pub fn leave(&self) {
        let mut g = self.gate.lock();
        g.active = g.active.saturating_sub(1);
        self.changed.notify_all();
    }

    /// Whether the oracle wants the workers held (one relaxed load).
    #[inline]
    pub fn holding(&self) -> bool {
        self.hold.load(Ordering::Relaxed)
    }

    /// Between two units: if the oracle is moving pages, wait until it is
    /// done (one relaxed load otherwise).
    #[inline]
    pub fn checkpoint(&self) {
        if self.holding() {
            self.wait_at_gate();
        }
    }

    #[cold]
    fn wait_at_gate(&self) {
        let mut g = self.gate.lock();
        g.held += 1;
        self.changed.notify_all();
        while self.hold.load(Ordering::Acquire) {
            self.changed.wait(&mut g);
        }
        g.held -= 1;
    }

    /// Asks every entered worker to wait at its next checkpoint, and waits
    /// until all do or `within` has passed (a worker in a long unit, or one
    /// idle between units, is not waited for longer); returns how many
    /// were held and how many were entered.
    fn hold_workers(&self, within: Duration) -> (usize, usize) {
        let deadline = Instant::now() + within;
        let mut g = self.gate.lock();
        self.hold.store(true, Ordering::Release);
        while g.held < g.active && !self.changed.wait_until(&mut g, deadline).timed_out() {}
        (g.held, g.active)
    }

    /// Lets the held workers go on.
    fn release_workers(&self) {
        let _g = self.gate.lock();
        self.hold.store(false, Ordering::Release);
        self.changed.notify_all();
    }

    /// Worker `worker` (below the board's count; others are ignored) saw a
    /// sampled access to `page` from `node`.
    pub fn post(&self, worker: usize, page: u64, node: u16) {
        let Some(slot) = self.slots.get(worker) else { return };
        let mut s = slot.lock();
        if s.len() < self.capacity {
            s.push((page, node));
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Samples dropped because a slot was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn drain_counts(&self, nodes: usize) -> HashMap<u64, Vec<u64>> {
        let mut counts: HashMap<u64, Vec<u64>> = HashMap::new();
        for slot in &self.slots {
            let samples = std::mem::take(&mut *slot.lock());
            for (page, node) in samples {
                if let Some(c) = counts.entry(page).or_insert_with(|| vec![0; nodes]).get_mut(usize::from(node)) {
                    *c += 1;
                }
            }
        }
        counts
    }
}

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
    /// Moved pages still on the node their last move put them on when the
    /// thread stopped (`None`: not asked).
    #[serde(default)]
    pub still_there: Option<u64>,
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
    /// thread wakes on time), and [`Error::Io`] when the thread cannot be
    /// spawned.
    pub fn start(
        board: Arc<SampleBoard>,
        rule: MigrationRule,
        nodes: usize,
        page_size: u64,
        start: Instant,
    ) -> Result<Migrator> {
        Migrator::spawn(board, rule, nodes, page_size, start, None)
    }

    /// Oracle_High applied for real, once, from a first profiling stretch
    /// of the run: `after` the run's start, the thread takes every sample
    /// the workers posted so far and moves every misplaced sampled page to
    /// its dominant accessor's node (all of them, not the hottest few), then
    /// does nothing more. Accesses after that moment run on the oracle's
    /// placement of the pages sampled before it.
    ///
    /// While it moves, the workers that reach a checkpoint
    /// ([`SampleBoard::checkpoint`]) wait; before moving it waits at most
    /// `hold` for all of them to get there. A run of long units wants a
    /// short `hold` (a worker mid-unit runs on while the pages move, and
    /// its accesses until the batch ends count on the node a page came
    /// from); a run of short units loses nothing by waiting for all.
    ///
    /// # Errors
    ///
    /// As [`Migrator::start`] ([`Error::Migration`] for a zero `after`).
    pub fn start_oracle(
        board: Arc<SampleBoard>,
        after: Duration,
        hold: Duration,
        nodes: usize,
        page_size: u64,
        start: Instant,
    ) -> Result<Migrator> {
        if after.is_zero() {
            return Err(Error::Migration { reason: "the oracle needs a profiling stretch longer than zero".into() });
        }
        let ns = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
        let rule = MigrationRule { pages_per_epoch: usize::MAX, epoch: Epoch::Time { ns } };
        Migrator::spawn(board, rule, nodes, page_size, start, Some(hold))
    }

    fn spawn(
        board: Arc<SampleBoard>,
        rule: MigrationRule,
        nodes: usize,
        page_size: u64,
        start: Instant,
        once: Option<Duration>,
    ) -> Result<Migrator> {
        let Epoch::Time { ns } = rule.epoch else {
            return Err(Error::Migration {
                reason: "its epoch must be a time (Epoch::Time); sample-count epochs are for modelling".into(),
            });
        };
        let epoch = Duration::from_nanos(ns.max(1));
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("skelaff-migrator".into())
            .spawn(move || {
                let job = Job { pages: rule.pages_per_epoch, epoch, nodes, page_size, start, once };
                run(&board, &job, &flag)
            })
            .map_err(Error::io("spawning the migration thread"))?;
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
    fn new(board: &'a SampleBoard, within: Duration) -> Self {
        let (held, active) = board.hold_workers(within);
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
    /// Stop after the first epoch that had samples (the applied oracle),
    /// holding the workers, waiting this long at most for all of them.
    once: Option<Duration>,
}

fn run(board: &SampleBoard, job: &Job, stop: &AtomicBool) -> Result<MigrationLog> {
    let Job { pages, epoch, nodes, page_size, start, once } = *job;
    let mut log = MigrationLog::default();
    // The board may have served earlier runs: count only this run's drops.
    let dropped_before = board.dropped();
    let mut next = Instant::now() + epoch;
    while !stop.load(Ordering::Acquire) {
        let now = Instant::now();
        if now < next {
            // Parked until the epoch (`stop` unparks it): a sleep in 5 ms
            // slices woke the applied oracle of a 17 ms labyrinth run 6 ms
            // late in a TCG guest, after the run's last unit.
            std::thread::park_timeout(next - now);
            continue;
        }
        next += epoch;
        log.epochs += 1;
        let began = Instant::now();
        // The oracle holds the workers while it moves: under TCG a page
        // takes about 0.6 ms to move, and workers running meanwhile made
        // most of a small run's accesses before the placement was the
        // oracle's. Released when `held` drops, on every way out.
        let held = once.map(|within| Held::new(board, within));
        let counts = board.drain_counts(nodes);
        let chosen_ns = start.elapsed().as_nanos() as u64;
        if counts.is_empty() {
            continue;
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
        if !chosen.is_empty() {
            let batch: Vec<(*const u8, usize)> = chosen
                .iter()
                .map(|&(page, _, to)| ((page * page_size) as usize as *const u8, usize::from(to)))
                .collect();
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
        }
        log.work_ns += began.elapsed().as_nanos() as u64;
        log.held_workers = held.as_ref().map(|h| h.counts);
        drop(held);
        if once.is_some() {
            break;
        }
    }
    log.dropped_samples = board.dropped().saturating_sub(dropped_before);
    Ok(log)
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
    fn the_board_is_bounded_and_counts_by_node() {
        let b = SampleBoard::new(2, 3);
        for i in 0..5 {
            b.post(0, 7, (i % 2) as u16);
        }
        b.post(1, 8, 1);
        b.post(9, 8, 1); // no such worker: ignored
        assert_eq!(b.dropped(), 2);
        let c = b.drain_counts(2);
        assert_eq!((c[&7].clone(), c[&8].clone()), (vec![2, 1], vec![0, 1]));
        assert!(b.drain_counts(2).is_empty());
    }

    #[test]
    fn the_gate_holds_workers_at_their_checkpoints_until_released() {
        let board = SampleBoard::new(2, 4);
        let done = Arc::new(AtomicBool::new(false));
        let units = Arc::new(AtomicU64::new(0));
        board.enter();
        let worker = {
            let (board, done, units) = (board.clone(), done.clone(), units.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Acquire) {
                    units.fetch_add(1, Ordering::Relaxed);
                    board.checkpoint();
                }
                board.leave();
            })
        };
        // A second entered worker that never reaches a checkpoint is waited
        // for only as long as asked.
        board.enter();
        let began = Instant::now();
        let (held, active) = board.hold_workers(Duration::from_millis(200));
        assert_eq!((held, active), (1, 2));
        assert!(began.elapsed() >= Duration::from_millis(200));
        let at = units.load(Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(units.load(Ordering::Relaxed), at, "a held worker runs no unit");
        board.release_workers();
        while units.load(Ordering::Relaxed) == at {
            std::thread::yield_now();
        }
        board.leave();
        // With every entered worker at the gate, the wait ends at once.
        let (held, active) = board.hold_workers(Duration::from_secs(60));
        assert_eq!((held, active), (1, 1));
        board.release_workers();
        done.store(true, Ordering::Release);
        worker.join().unwrap();
        assert_eq!(board.gate.lock().active, 0);
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
        let m =
            Migrator::start_oracle(board, Duration::from_secs(60), Duration::ZERO, 1, 4096, Instant::now()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let t = Instant::now();
        let log = m.stop().unwrap();
        // Unparked at once, not at the epoch a minute away.
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert_eq!((log.epochs, log.moves.len(), log.held_workers), (0, 0, None));
    }

    #[test]
    fn the_applied_oracle_acts_once_after_its_stretch() {
        let e = Migrator::start_oracle(SampleBoard::new(1, 1), Duration::ZERO, Duration::ZERO, 1, 4096, Instant::now())
            .unwrap_err();
        assert!(e.to_string().contains("longer than zero"), "{e}");
        let board = SampleBoard::new(1, 16);
        // Posted before the thread starts, so its first epoch has it however
        // late this thread runs again.
        let v = vec![1u8; 1 << 14];
        board.post(0, v.as_ptr() as u64 / 4096 + 1, 0);
        let m = Migrator::start_oracle(
            board.clone(),
            Duration::from_millis(2),
            Duration::from_millis(250),
            1,
            4096,
            Instant::now(),
        )
        .unwrap();
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
