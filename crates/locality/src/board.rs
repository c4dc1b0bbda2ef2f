//! The board between the workers and the migration thread: each worker
//! posts its kept samples `(page, node)` to its own bounded slot (one lock
//! per worker, so workers never contend with each other), which counts
//! them by page and node: an epoch, or the applied oracle's whole stretch,
//! needs only the counts, so a slot holds at most `capacity` distinct
//! `(page, node)` pairs between two drains however many samples fall on
//! them, and counts the samples of pairs it had no room for; and the
//! gate at which the applied oracle holds the workers while it moves
//! pages. The oracle itself (its stretch, its state, who acts) is the
//! oracle module's: the board knows nothing of it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// The workers' recent samples, one bounded slot per worker, and the gate
/// at which the applied oracle holds the workers while it moves pages.
#[derive(Debug)]
pub struct SampleBoard {
    pub(crate) slots: Vec<Mutex<HashMap<(u64, u16), u64>>>,
    capacity: usize,
    dropped: AtomicU64,
    /// Set while the oracle wants the workers held ([`SampleBoard::checkpoint`]).
    hold: AtomicBool,
    gate: Mutex<Gate>,
    changed: Condvar,
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
    /// A board for `workers` workers, each slot counting at most `capacity`
    /// distinct `(page, node)` pairs between two epochs.
    pub fn new(workers: usize, capacity: usize) -> Arc<SampleBoard> {
        Arc::new(SampleBoard {
            slots: (0..workers).map(|_| Mutex::new(HashMap::new())).collect(),
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
        self.post_stamped(worker, node, || (), [page]);
    }

    /// Worker `worker` (below the board's count; others post nothing) saw
    /// sampled accesses to `pages` from `node`, all at the time `stamp`
    /// returns, which is read with the worker's slot locked and returned.
    /// A drain of the board (the migration thread's epoch, the oracle's
    /// moves) locks every slot before it reads its own clock, so it either has the
    /// whole batch, stamped before its time, or none of it, stamped after:
    /// the samples an applied oracle chose from are exactly those stamped
    /// before it chose.
    pub fn post_stamped<T>(
        &self,
        worker: usize,
        node: u16,
        stamp: impl FnOnce() -> T,
        pages: impl IntoIterator<Item = u64>,
    ) -> T {
        let Some(slot) = self.slots.get(worker) else { return stamp() };
        let mut s = slot.lock();
        let at = stamp();
        let mut dropped = 0;
        for page in pages {
            let room = s.len() < self.capacity;
            match s.get_mut(&(page, node)) {
                Some(n) => *n += 1,
                None if room => {
                    s.insert((page, node), 1);
                }
                None => dropped += 1,
            }
        }
        drop(s);
        if dropped > 0 {
            self.dropped.fetch_add(dropped, Ordering::Relaxed);
        }
        at
    }

    /// Samples dropped because a slot was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    pub(crate) fn drain_counts(&self, nodes: usize) -> HashMap<u64, Vec<u64>> {
        self.drain_counts_at(nodes, || ()).0
    }

    /// Takes every slot's counts, summed by page (a count per node), with
    /// the time `clock` gives read while every slot is locked (see
    /// [`post_stamped`](Self::post_stamped)). Slots are locked in order,
    /// and a worker only ever holds its own, so this cannot deadlock.
    pub(crate) fn drain_counts_at<T>(&self, nodes: usize, clock: impl FnOnce() -> T) -> (HashMap<u64, Vec<u64>>, T) {
        let mut guards: Vec<_> = self.slots.iter().map(|s| s.lock()).collect();
        let at = clock();
        let taken: Vec<HashMap<(u64, u16), u64>> = guards.iter_mut().map(|g| std::mem::take(&mut **g)).collect();
        drop(guards);
        let mut counts: HashMap<u64, Vec<u64>> = HashMap::new();
        for samples in taken {
            for ((page, node), n) in samples {
                if let Some(c) = counts.entry(page).or_insert_with(|| vec![0; nodes]).get_mut(usize::from(node)) {
                    *c += n;
                }
            }
        }
        (counts, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_is_bounded_and_counts_by_node() {
        let b = SampleBoard::new(2, 3);
        // Any number of samples on the pairs a slot holds: none dropped.
        for i in 0..1000 {
            b.post(0, 7, (i % 2) as u16);
        }
        b.post(0, 6, 0);
        // A fourth pair finds the slot full: its samples are dropped.
        b.post(0, 5, 0);
        b.post(0, 5, 1);
        b.post(1, 8, 1);
        b.post(9, 8, 1); // no such worker: ignored
        assert_eq!(b.dropped(), 2);
        let c = b.drain_counts(2);
        assert_eq!((c[&7].clone(), c[&6].clone(), c[&8].clone()), (vec![500, 500], vec![1, 0], vec![0, 1]));
        assert!(!c.contains_key(&5));
        assert!(b.drain_counts(2).is_empty());
        // Drained, the slot has room again.
        b.post(0, 5, 0);
        assert_eq!(b.drain_counts(2)[&5], vec![1, 0]);
    }

    #[test]
    fn a_drain_has_exactly_the_batches_stamped_before_its_time() {
        // One clock for the poster and the drainer; each read moves it on.
        let clock = Arc::new(AtomicU64::new(0));
        let board = SampleBoard::new(2, 1 << 20);
        let done = Arc::new(AtomicBool::new(false));
        let poster = {
            let (board, clock, done) = (board.clone(), clock.clone(), done.clone());
            std::thread::spawn(move || {
                let mut stamps = Vec::new();
                while !done.load(Ordering::Acquire) {
                    // Ten samples a batch, on pages 0..10.
                    stamps.push(board.post_stamped(1, 0, || clock.fetch_add(1, Ordering::SeqCst), 0..10));
                }
                stamps
            })
        };
        let mut drains = Vec::new();
        for _ in 0..200 {
            let (counts, at) = board.drain_counts_at(1, || clock.fetch_add(1, Ordering::SeqCst));
            drains.push((counts.values().map(|c| c[0]).sum::<u64>(), at));
            std::thread::yield_now();
        }
        done.store(true, Ordering::Release);
        let stamps = poster.join().unwrap();
        let last = board.drain_counts_at(1, || u64::MAX);
        drains.push((last.0.values().map(|c| c[0]).sum::<u64>(), last.1));
        // Each drain has the batches stamped between the previous drain's
        // time and its own, whole.
        let mut from = 0;
        for (i, &(samples, at)) in drains.iter().enumerate() {
            let batches = stamps.iter().filter(|&&s| s >= from && s < at).count() as u64;
            assert_eq!(samples, 10 * batches, "drain {i} at {at}");
            from = at;
        }
        assert_eq!(drains.iter().map(|d| d.0).sum::<u64>(), 10 * stamps.len() as u64);
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
