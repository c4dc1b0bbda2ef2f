//! What a worker and its helper share (one [`HelperChannel`] per worker),
//! and the worker's side of the protocol (paper Fig. 6), lock-free.
//!
//! The hand-off itself (the handed unit, the event count, the helper's
//! parking) is the [`Link`] (`link.rs`, with its protocol table and loom
//! model); this file adds what rides along: the tuner's words, the timing
//! probe, the end-of-run figures. No lock is taken on the worker's path;
//! everything only the worker touches (counters, the timing probe) lives
//! in [`WorkerSide`], on the worker's own stack.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use crossbeam_utils::atomic::AtomicCell;
use parking_lot::Mutex;
use skelaff_numa_alloc::idle::IdleCounts;
use skelaff_worklist::{CounterFigures, HelperPlace, ShadowEnds, WorkerInfo};

use crate::counters::PerfCounters;
use crate::link::Link;
use crate::tuning::{Probe, Tuner};

/// The lines a worker touched in a sampled unit, with its sequence number.
pub(crate) type Accesses = (u64, Vec<usize>);

/// What the worker reports at its end (written once, read after the join).
#[derive(Debug, Default)]
pub(crate) struct WorkerEnd {
    pub(crate) handed: u64,
    pub(crate) skipped: u64,
    pub(crate) wakes: u64,
    pub(crate) probe: Option<Probe>,
    pub(crate) counters: CounterFigures,
}

/// What the helper thread reports at its end (written once, read after the
/// join): the figures it counted.
#[derive(Debug, Clone, Default)]
pub(crate) struct HelperStats {
    pub(crate) picked: u64,
    pub(crate) shadows: u64,
    pub(crate) ends: ShadowEnds,
    pub(crate) loads: u64,
    pub(crate) log_hits: u64,
    pub(crate) idle: IdleCounts,
    pub(crate) task_clock_ns: Option<u64>,
    pub(crate) tuner: Option<Tuner>,
    pub(crate) lifespan_final: u64,
    pub(crate) log_capacity_final: u64,
}

/// What a worker and its helper share (one per worker).
pub struct HelperChannel<U> {
    pub(crate) worker: WorkerInfo,
    pub(crate) place: Option<HelperPlace>,
    /// The hand-off: the unit handed, the event count, the helper's parking.
    pub(crate) link: Link<U>,
    /// No helper thread runs in this run (its probe had it switched off).
    pub(crate) without_thread: AtomicBool,
    /// Written by the helper, read by the worker at handoffs: handoffs to
    /// sit out (the tuner switched the helper off), and the sequence
    /// number + 1 of the sampled unit it picked up last (0: none).
    pub(crate) from_helper: CachePadded<(AtomicU64, AtomicU64)>,
    /// The lines the worker touched in a sampled unit (rare: one unit in
    /// `sample_every`).
    pub(crate) accesses: AtomicCell<Option<Box<Accesses>>>,
    /// Off the hot path: what each side reports at its end.
    pub(crate) worker_end: Mutex<Option<WorkerEnd>>,
    pub(crate) helper_end: Mutex<Option<HelperStats>>,
    pub(crate) notes: Mutex<Vec<String>>,
}

impl<U> std::fmt::Debug for HelperChannel<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HelperChannel")
            .field("worker", &self.worker.index)
            .field("place", &self.place)
            .field("link", &self.link)
            .finish()
    }
}

/// The worker thread's own state: counters and the timing probe. Nobody
/// else touches it.
#[derive(Debug)]
pub struct WorkerSide {
    handed: u64,
    skipped: u64,
    off_left: u64,
    wakes: u64,
    /// Sequence number + 1 of the sampled unit running now (0: none).
    pub(crate) sampling: u64,
    /// Whether the last handoff gave the helper a unit.
    handing: bool,
    /// The timing probe (adaptive tuning only).
    probe: Option<Probe>,
    /// When the running unit started (while the probe measures).
    started: Option<Instant>,
    /// The unit running now was handed to the helper before.
    current_helped: bool,
    /// The unit handed last (the next to run) went to the helper.
    next_handed: bool,
    pub(crate) counters: Option<PerfCounters>,
    /// No helper thread runs for this worker in this run.
    without_thread: bool,
    /// Units the probe is sure to keep the helper off for, still to come:
    /// their handoffs and commits only count (the fast path).
    quiet_left: u64,
    /// Units that took the fast path since the last full handoff; the
    /// probe and the tuner's off count are told at the next full one.
    quiet_done: u64,
    /// The unit running now took the fast path (so does its commit).
    quiet_now: bool,
    /// The probe waits at its on-window for a run with a helper thread:
    /// every unit left in this one takes the fast path, untold.
    probe_waits: bool,
}

impl WorkerSide {
    pub(crate) fn new(probe: Option<Probe>, counters: Option<PerfCounters>, without_thread: bool) -> Self {
        WorkerSide {
            without_thread,
            handed: 0,
            skipped: 0,
            off_left: 0,
            wakes: 0,
            sampling: 0,
            handing: false,
            probe,
            started: None,
            current_helped: false,
            next_handed: false,
            counters,
            quiet_left: 0,
            quiet_done: 0,
            quiet_now: false,
            probe_waits: false,
        }
    }

    /// Tells the probe and the tuner's off count about the units that took
    /// the fast path.
    fn settle_quiet(&mut self) {
        let n = std::mem::take(&mut self.quiet_done);
        if n > 0 {
            self.off_left = self.off_left.saturating_sub(n);
            if let Some(p) = self.probe.as_mut().filter(|_| !self.probe_waits) {
                p.skip(n);
            }
        }
    }

    /// The figures of the worker's side, at its end, and what its counters
    /// could not measure.
    pub(crate) fn end(mut self) -> (WorkerEnd, Option<String>) {
        self.settle_quiet();
        let counters = self.counters.as_mut().map(PerfCounters::read).unwrap_or_default();
        let note = self.counters.as_ref().and_then(|c| c.note().map(str::to_owned));
        (WorkerEnd { handed: self.handed, skipped: self.skipped, wakes: self.wakes, probe: self.probe, counters }, note)
    }
}

impl<U> HelperChannel<U> {
    pub(crate) fn new(worker: WorkerInfo, place: Option<HelperPlace>) -> Self {
        HelperChannel {
            worker,
            place,
            link: Link::new(),
            without_thread: AtomicBool::new(false),
            from_helper: CachePadded::new((AtomicU64::new(0), AtomicU64::new(0))),
            accesses: AtomicCell::new(None),
            worker_end: Mutex::new(None),
            helper_end: Mutex::new(None),
            notes: Mutex::new(Vec::new()),
        }
    }

    /// Hands `unit` through the link, counting a wake-up of the helper.
    #[inline]
    fn hand(&self, side: &mut WorkerSide, unit: Option<U>, sample: Option<u64>) {
        if self.link.hand(unit, sample) {
            side.wakes += 1;
        }
    }

    /// The worker's handoff (see the module docs). `sample_every`: every
    /// n-th handed unit is sampled for tuning (`None`: no tuning).
    #[inline]
    pub(crate) fn handoff(&self, side: &mut WorkerSide, next: Option<&U>, sample_every: Option<u32>) -> HandoffStart
    where
        U: Clone,
    {
        // Fast path, inlined into the worker's loop: inside an off stretch
        // of the timing probe the unit is neither handed nor timed, whatever
        // the helper's flags say (they matter only when handing: read at the
        // next full handoff, which lengthens a tuner's off count set
        // meanwhile by at most the stretch). callgrind on yada: the full
        // path costs 64 instructions per unit and the probe's bookkeeping 22.
        if side.quiet_left > 0 {
            side.quiet_left -= 1;
            side.quiet_now = true;
            side.skipped += u64::from(next.is_some());
            return HandoffStart::default();
        }
        self.handoff_full(side, next, sample_every)
    }

    #[inline(never)]
    fn handoff_full(&self, side: &mut WorkerSide, next: Option<&U>, sample_every: Option<u32>) -> HandoffStart
    where
        U: Clone,
    {
        side.quiet_now = false;
        side.settle_quiet();
        // The unit starting now is the one handed last time, if that
        // handoff gave the helper a unit; if the helper picked it up as a
        // sample, the worker records what it touches while it runs it.
        let (off_for, picked) = (&self.from_helper.0, &self.from_helper.1);
        let mut start = HandoffStart::default();
        if picked.load(Ordering::Relaxed) != 0 {
            let p = picked.swap(0, Ordering::Relaxed);
            if side.handing && p == side.handed {
                start.sample = Some(p);
            }
        }
        if off_for.load(Ordering::Relaxed) != 0 {
            side.off_left = off_for.swap(0, Ordering::Relaxed);
        }
        // Switched off by the tuner's coverage, or by the timing probe?
        let mut hand = side.off_left == 0;
        side.off_left = side.off_left.saturating_sub(1);
        if side.without_thread {
            hand = false;
        }
        if let Some(p) = &mut side.probe {
            side.current_helped = side.next_handed;
            side.started = (p.measuring() && !side.without_thread).then(Instant::now);
            hand &= p.helper_on();
            side.next_handed = hand && next.is_some();
        }
        if !hand {
            side.skipped += u64::from(next.is_some());
            if std::mem::take(&mut side.handing) {
                // The helper may still be on the unit starting now: stop it.
                self.hand(side, None, None);
            }
            // The units after this one that the probe keeps off for sure
            // take the fast path (this one is committed the full way). Not
            // while the tuner's own off count runs: it ends at a unit of
            // its own. Without a helper thread, a probe that reached its
            // on-window keeps the helper off for the rest of the run.
            if side.without_thread && side.probe.as_ref().is_some_and(Probe::helper_on) {
                side.probe_waits = true;
                side.quiet_left = u64::MAX;
            } else if side.off_left == 0 || side.without_thread {
                side.quiet_left = side.probe.as_ref().map_or(0, Probe::certainly_off_after);
            }
            return start;
        }
        side.handing = next.is_some();
        let seq = side.handed;
        let sample = match (sample_every, next) {
            (Some(n), Some(_)) if seq % u64::from(n) == 0 => Some(seq),
            _ => None,
        };
        side.handed += u64::from(next.is_some());
        self.hand(side, next.cloned(), sample);
        start
    }

    /// The worker's transaction runs again: the helper restarts its shadow.
    #[inline]
    pub(crate) fn restarted(&self, side: &mut WorkerSide) {
        if side.handing && self.link.restarted() {
            side.wakes += 1;
        }
    }

    /// The worker's unit committed: the probe times it.
    #[inline]
    pub(crate) fn committed(&self, side: &mut WorkerSide) {
        if side.quiet_now {
            side.quiet_done += 1;
            return;
        }
        if let Some(p) = &mut side.probe {
            // Without a helper thread the probe runs out its off stretch,
            // then waits at the start of its on-window for the next run,
            // which starts the helper again.
            if side.without_thread && p.helper_on() {
                return;
            }
            p.unit(side.started.take().map(|s| s.elapsed()), side.current_helped);
        }
    }

    /// The worker is done: the helper returns.
    pub(crate) fn finish(&self) {
        self.link.finish();
    }
}

/// What a handoff tells the worker about the unit it starts now.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct HandoffStart {
    /// The helper shadowed it as a sample (sequence number + 1): record the
    /// worker's accesses.
    pub(crate) sample: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handoffs_count_and_a_restart_bumps_only_while_handing() {
        let ch: HelperChannel<u32> =
            HelperChannel::new(WorkerInfo { index: 0, cpu: None, node: None, threads: 1 }, None);
        let mut side = WorkerSide::new(None, None, false);
        ch.handoff(&mut side, Some(&7), None);
        ch.handoff(&mut side, Some(&8), None);
        assert_eq!(ch.link.events().load(Ordering::Relaxed), 2);
        ch.handoff(&mut side, None, None);
        // A restart bumps only while the helper has something to shadow.
        let before = ch.link.events().load(Ordering::Relaxed);
        ch.restarted(&mut side);
        assert_eq!(ch.link.events().load(Ordering::Relaxed), before);
        let (end, _) = side.end();
        assert_eq!((end.handed, end.skipped, end.wakes), (2, 0, 0));
    }
}
