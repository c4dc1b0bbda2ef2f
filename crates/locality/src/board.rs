//! The board between the workers and the migration thread: each worker
//! posts its kept samples `(page, node)` to its own bounded slot (one lock
//! per worker, so workers never contend with each other; a slot holds at
//! most `capacity` samples between epochs and counts what it had to drop);
//! the gate at which the applied oracle holds the workers while it moves
//! pages; and the oracle of the current run, which the first worker to see
//! its stretch end acts on itself.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::migrate::OracleTask;

/// The workers' recent samples, one bounded slot per worker; the gate at
/// which the applied oracle holds the workers while it moves pages; and
/// the applied oracle of the current run, which a worker that sees its
/// stretch end acts on itself ([`SampleBoard::act_if_due`]).
#[derive(Debug)]
pub struct SampleBoard {
    pub(crate) slots: Vec<Mutex<Vec<(u64, u16)>>>,
    capacity: usize,
    dropped: AtomicU64,
    /// Set while the oracle wants the workers held ([`SampleBoard::checkpoint`]).
    hold: AtomicBool,
    gate: Mutex<Gate>,
    changed: Condvar,
    /// When the current run's oracle is due, in nanoseconds on the run's
    /// clock; `u64::MAX` when there is none or it has been claimed.
    pub(crate) oracle_due_ns: AtomicU64,
    pub(crate) oracle: Mutex<Option<Arc<OracleTask>>>,
}

/// Workers between [`SampleBoard::enter`] and [`SampleBoard::leave`], how
/// many of them wait at the gate, and how many have left since the board
/// was made.
#[derive(Debug, Default)]
struct Gate {
    active: usize,
    held: usize,
    left: u64,
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
            oracle_due_ns: AtomicU64::new(u64::MAX),
            oracle: Mutex::new(None),
        })
    }

    /// Whether an applied oracle waits for its stretch to end (one relaxed
    /// load): a worker then reads the clock between units and asks
    /// [`oracle_due`](Self::oracle_due).
    #[inline]
    pub fn oracle_waiting(&self) -> bool {
        self.oracle_due_ns.load(Ordering::Relaxed) != u64::MAX
    }

    /// Whether the oracle's stretch has ended at `now` (on the run's clock)
    /// and nobody has acted on it yet.
    #[inline]
    pub fn oracle_due(&self, now: Duration) -> bool {
        u64::try_from(now.as_nanos()).unwrap_or(u64::MAX) >= self.oracle_due_ns.load(Ordering::Relaxed)
    }

    /// A worker between two units, its samples posted: if the oracle is
    /// due and nobody has claimed it, this worker moves the pages itself,
    /// holding the other workers (it counts itself among the held), and
    /// returns `true`. Under an emulator that runs many virtual CPUs on few
    /// host cores, the migration thread waited for a CPU for hundreds of
    /// milliseconds after its epoch, by which time short runs had ended; a
    /// running worker has one. What it did goes to the oracle's log, and a
    /// kernel error there is returned by [`Migrator::stop`](crate::Migrator::stop).
    pub fn act_if_due(&self, now: Duration) -> bool {
        if !self.oracle_due(now) {
            return false;
        }
        let Some(task) = self.oracle.lock().clone() else { return false };
        task.act(self, 1)
    }

    /// A worker starts posting: the oracle waits for it at its moves.
    pub fn enter(&self) {
        self.gate.lock().active += 1;
    }

    /// A worker is done: nobody waits for it any more.
    pub fn leave(&self) {
        let mut g = self.gate.lock();
        g.active = g.active.saturating_sub(1);
        g.left += 1;
        self.changed.notify_all();
    }

    /// Workers that have left since the board was made.
    pub(crate) fn workers_left(&self) -> u64 {
        self.gate.lock().left
    }

    /// Whether a run's workers have all finished: none is between `enter`
    /// and `leave`, and at least as many as the board has slots left since
    /// `left_before` (what [`workers_left`](Self::workers_left) said when
    /// the run began).
    pub(crate) fn run_over(&self, left_before: u64) -> bool {
        let g = self.gate.lock();
        g.active == 0 && g.left.saturating_sub(left_before) >= self.slots.len() as u64
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
    /// `acting` of the entered workers are the caller itself (0 or 1),
    /// counted as held.
    pub(crate) fn hold_workers(&self, within: Duration, acting: usize) -> (usize, usize) {
        let deadline = Instant::now() + within;
        let mut g = self.gate.lock();
        self.hold.store(true, Ordering::Release);
        while g.held + acting < g.active && !self.changed.wait_until(&mut g, deadline).timed_out() {}
        ((g.held + acting).min(g.active), g.active)
    }

    /// Lets the held workers go on.
    pub(crate) fn release_workers(&self) {
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

    pub(crate) fn drain_counts(&self, nodes: usize) -> HashMap<u64, Vec<u64>> {
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

    /// The run is over: no worker may act on `task` any more (a later
    /// run's oracle on the same board is left alone).
    pub(crate) fn withdraw_oracle(&self, task: &Arc<OracleTask>) {
        let mut o = self.oracle.lock();
        if o.as_ref().is_some_and(|t| Arc::ptr_eq(t, task)) {
            *o = None;
            self.oracle_due_ns.store(u64::MAX, Ordering::Relaxed);
        }
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
        let (held, active) = board.hold_workers(Duration::from_millis(200), 0);
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
        let (held, active) = board.hold_workers(Duration::from_secs(60), 0);
        assert_eq!((held, active), (1, 1));
        board.release_workers();
        done.store(true, Ordering::Release);
        worker.join().unwrap();
        assert_eq!(board.gate.lock().active, 0);
    }
}
