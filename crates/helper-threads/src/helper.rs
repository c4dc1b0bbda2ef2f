//! [`HelperThreads`] as the worklist's [`Assist`]: the helper thread's
//! body (wait for a unit, shadow it, tune), and the figures of a channel.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;

use skelaff_numa_alloc::idle::IdlePolicy;
use skelaff_stm::sampler::{self, AccessKind};
use skelaff_worklist::{
    Assist, ChannelFigures, HelperFigures, HelperPlace, ProcessCtx, Skeleton, TimingFigures, TuningFigures, WorkerInfo,
};

use crate::HelperThreads;
use crate::channel::{HelperChannel, HelperStats, WorkerEnd, WorkerSide};
use crate::counters::PerfCounters;
use crate::link::Event;
use crate::shadow::{ShadowEnd, ShadowTx};
use crate::stop::StopReason;
use crate::tuning::{Tuner, score};

/// A sampled shadow's loads waiting for the worker's accesses: (sequence
/// number, addresses loaded in order, why it stopped, words logged).
type Trace = (u64, Vec<usize>, Option<StopReason>, usize);

thread_local! {
    /// Set while this thread runs user code in a shadow: its panics are not printed.
    static IN_SHADOW: Cell<bool> = const { Cell::new(false) };
}

/// Installs (once per process) a panic hook that stays silent for panics
/// inside shadows and hands every other panic to the hook that was there.
fn install_quiet_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_SHADOW.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

impl<S> Assist<S> for HelperThreads
where
    S: Skeleton,
    S::Unit: Clone,
{
    type Channel = HelperChannel<S::Unit>;
    type WorkerSide = WorkerSide;

    fn channel(&self, worker: &WorkerInfo, helper: Option<HelperPlace>) -> HelperChannel<S::Unit> {
        let ch = HelperChannel::new(*worker, helper);
        // Where the last run left the probe: in an off stretch, the
        // helper thread is not started in this run.
        let off = self.probe_for(worker.index).is_some_and(|p| !p.wants_thread());
        ch.without_thread.store(off, Ordering::Relaxed);
        ch
    }

    fn start_helper(&self, ch: &HelperChannel<S::Unit>) -> bool {
        !ch.without_thread.load(Ordering::Relaxed)
    }

    fn worker_start(&self, ch: &HelperChannel<S::Unit>) -> WorkerSide {
        let probe = ch.place.and_then(|_| self.probe_for(ch.worker.index));
        let without_thread = ch.without_thread.load(Ordering::Relaxed);
        WorkerSide::new(probe, self.config.counters.then(PerfCounters::open), without_thread)
    }

    fn worker_end(&self, ch: &HelperChannel<S::Unit>, side: WorkerSide) {
        let (end, note) = side.end();
        if let Some(n) = note {
            let mut notes = ch.notes.lock();
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        if let Some(p) = &end.probe {
            self.remember_probe(ch.worker.index, p);
        }
        *ch.worker_end.lock() = Some(end);
    }

    fn helper(&self, ch: &HelperChannel<S::Unit>, skeleton: &S, shared: &S::Shared, worker: &WorkerInfo) {
        run_helper(self, ch, skeleton, shared, worker);
    }

    #[inline]
    fn handoff(&self, ch: &HelperChannel<S::Unit>, side: &mut WorkerSide, next: Option<&S::Unit>) {
        let t = self.config.adaptive.as_ref();
        let start = ch.handoff(side, next, t.map(|t| t.sample_every));
        if let (Some(seq), Some(t)) = (start.sample, t) {
            if sampler::enable(1, t.sample_cap).is_ok() {
                side.sampling = seq;
            }
        }
    }

    #[inline]
    fn sampled(&self, side: &WorkerSide) -> bool {
        side.sampling != 0
    }

    #[inline]
    fn restarted(&self, ch: &HelperChannel<S::Unit>, side: &mut WorkerSide) {
        ch.restarted(side);
    }

    #[inline]
    fn committed(&self, ch: &HelperChannel<S::Unit>, side: &mut WorkerSide) {
        ch.committed(side);
        let sampling = std::mem::take(&mut side.sampling);
        if sampling != 0 {
            record_accesses(ch, sampling);
        }
    }

    fn finish(&self, ch: &HelperChannel<S::Unit>) {
        ch.finish();
    }

    fn figures(&self, ch: HelperChannel<S::Unit>) -> ChannelFigures {
        let mut notes = std::mem::take(&mut *ch.notes.lock());
        notes.dedup();
        let w = ch.worker_end.lock().take().unwrap_or_default();
        let h = ch.helper_end.lock().take().unwrap_or_default();
        let mut helper = ch.place.map(|place| helper_figures(place, &w, h));
        if ch.without_thread.load(Ordering::Relaxed) {
            // No thread ran: it was switched off for the whole run (the
            // worker's figures still count the units it did not hand over).
            if let Some(h) = &mut helper {
                h.units_skipped_off = w.skipped;
            }
        }
        ChannelFigures { worker: w.counters, helper, notes }
    }
}

/// The worker's accesses in the sampled unit it just committed, for the helper's tuner.
#[cold]
fn record_accesses<U>(ch: &HelperChannel<U>, sampling: u64) {
    let taken = sampler::take();
    let _ = sampler::disable();
    if let Ok(s) = taken {
        let lines: Vec<usize> = s
            .accesses
            .iter()
            .filter(|a| matches!(a.kind, AccessKind::Read | AccessKind::Write))
            .map(|a| a.addr)
            .collect();
        drop(ch.accesses.swap(Some(Box::new((sampling - 1, lines)))));
    }
}

fn helper_figures(place: HelperPlace, w: &WorkerEnd, s: HelperStats) -> HelperFigures {
    HelperFigures {
        place,
        units_handed: w.handed,
        units_skipped_off: w.skipped,
        units_shadowed: s.picked,
        shadows_run: s.shadows,
        ends: s.ends,
        words_prefetched: s.loads,
        log_hits: s.log_hits,
        idle_yields: s.idle.yields,
        idle_parks: s.idle.parks,
        worker_wakeups: w.wakes,
        lifespan_final: s.lifespan_final,
        log_capacity_final: s.log_capacity_final,
        task_clock_ns: s.task_clock_ns,
        tuning: s.tuner.as_ref().map(|t| TuningFigures {
            samples: t.total_samples,
            useful_lines: t.total.useful,
            worker_lines: t.total.worker_lines,
            shadow_lines: t.total.shadow_lines,
            lifespan_changes: t.lifespan_changes,
            log_capacity_changes: t.log_changes,
            switched_off: t.switched_off,
        }),
        timing: w.probe.as_ref().map(|p| TimingFigures {
            probes: p.probes,
            paid: p.paid,
            switched_off: p.switched_off,
            last_on_ns: p.last_on_ns,
            last_off_ns: p.last_off_ns,
        }),
    }
}

/// The helper thread: wait for a unit, shadow it, repeat until told to finish.
fn run_helper<S: Skeleton>(
    cfg: &HelperThreads,
    ch: &HelperChannel<S::Unit>,
    skeleton: &S,
    shared: &S::Shared,
    worker: &WorkerInfo,
) where
    S::Unit: Clone,
{
    let c = &cfg.config;
    if c.quiet_panics {
        install_quiet_hook();
    }
    let mut counters = c.counters.then(PerfCounters::open);
    let mut stats = HelperStats::default();
    let mut tuner = c.adaptive.map(Tuner::new);
    let Ok(mut shadow) = ShadowTx::new(&c.shadow) else {
        // HelperThreads::new checked the configuration.
        ch.notes.lock().push("helper: invalid shadow configuration".to_owned());
        return;
    };
    let make_local = || catch_unwind(AssertUnwindSafe(|| skeleton.init_helper(shared, worker)));
    let Ok(mut local) = make_local() else {
        ch.notes.lock().push(format!("helper of worker {}: init_helper panicked; no helper", worker.index));
        return;
    };
    let mut ctx: ProcessCtx<S::Unit> = ProcessCtx::new(*worker);
    let mut current: Option<S::Unit> = None;
    let mut current_sample: Option<u64> = None;
    // Traces of sampled shadows waiting for the worker's accesses: (seq, loads, stop, logged).
    let mut traces: [Option<Trace>; 2] = [None, None];
    let mut scratch = Vec::new();
    let Some(parker) = ch.link.take_parker() else {
        ch.notes.lock().push(format!("helper of worker {}: a second helper thread; not started", worker.index));
        return;
    };
    let mut seen = ch.link.seen_now();
    // Whether the shadow before was cancelled (classified at the next pickup).
    let mut was_cancelled = false;
    loop {
        // Nothing in hand (the worker switched the helper off, or holds no
        // unit): park at once. A helper that spins or yields keeps its CPU
        // in the process's address space, so every TLB shootdown of the
        // worker's (a copy-on-write fault, an munmap) interrupts it too; a
        // parked one's CPU goes idle and is left out.
        let policy = if current.is_some() { c.idle } else { IdlePolicy::PARK };
        match ch.link.next_event(&mut seen, &parker, policy, &mut stats.idle) {
            Event::Finished => {
                stats.ends.at_end += u64::from(was_cancelled);
                break;
            }
            Event::Handed { unit, sample } => {
                current = unit;
                current_sample = sample.filter(|_| current.is_some());
                if let Some(seq) = current_sample {
                    ch.from_helper.1.store(seq + 1, Ordering::Relaxed);
                }
                if std::mem::take(&mut was_cancelled) {
                    stats.ends.overtaken += 1;
                }
                stats.picked += u64::from(current.is_some());
            }
            Event::Restarted => {
                if std::mem::take(&mut was_cancelled) {
                    stats.ends.restarted += 1;
                }
            }
        }
        // Tuning: compare a sampled shadow with what the worker touched.
        if let (Some(tuner), Some(accesses)) = (tuner.as_mut(), ch.accesses.take()) {
            let (seq, mut touched) = *accesses;
            let slot = &mut traces[(seq % 2) as usize];
            if let Some((_, loads, stop, logged)) = slot.take().filter(|t| t.0 == seq) {
                let sc = score(&loads, &mut touched, &mut scratch);
                let d = tuner.add(sc, stop, logged, shadow.lifespan(), shadow.log_capacity());
                if let Some(l) = d.lifespan {
                    let _ = shadow.set_lifespan(l);
                }
                if let Some(n) = d.log_capacity {
                    let _ = shadow.set_log_capacity(n);
                }
                if let Some(off) = d.off_for {
                    // Sit out the next `off` handoffs; drop the unit in hand.
                    ch.from_helper.0.store(off, Ordering::Relaxed);
                    current = None;
                }
            }
        }
        let Some(unit) = current.as_ref() else { continue };
        // Shadow the unit (again, after a restart).
        let record = tuner.is_some() && current_sample.is_some();
        shadow.record_loads(if record { c.adaptive.map_or(0, |t| t.sample_cap) } else { 0 });
        shadow.begin(Some((ch.link.events(), seen)));
        ctx.clear();
        IN_SHADOW.with(|f| f.set(true));
        let r = catch_unwind(AssertUnwindSafe(|| skeleton.process(&mut shadow, unit, &mut local, shared, &mut ctx)));
        IN_SHADOW.with(|f| f.set(false));
        let end: ShadowEnd = shadow.end();
        ctx.clear();
        stats.shadows += 1;
        stats.loads += end.loads;
        stats.log_hits += end.log_hits;
        match (&r, end.stop) {
            (Err(_), _) => {
                stats.ends.panicked += 1;
                // The local may be half-updated: make a new one.
                match make_local() {
                    Ok(l) => local = l,
                    Err(_) => {
                        ch.notes.lock().push(format!(
                            "helper of worker {}: init_helper panicked after a shadow panicked; helper stopped",
                            worker.index
                        ));
                        break;
                    }
                }
            }
            (Ok(_), Some(StopReason::Cancelled)) => was_cancelled = true,
            (Ok(_), Some(StopReason::LifespanExhausted)) => stats.ends.lifespan += 1,
            (Ok(_), Some(StopReason::WriteLogFull)) => stats.ends.log_full += 1,
            (Ok(_), Some(_)) => stats.ends.unsupported += 1,
            (Ok(Ok(())), None) => stats.ends.completed += 1,
            (Ok(Err(_)), None) => stats.ends.user_error += 1,
        }
        if let (true, Some(seq)) = (record, current_sample) {
            // What this shadow loaded (so far, if it was overtaken; a
            // restart replaces it).
            traces[(seq % 2) as usize] = Some((seq, shadow.loaded().to_vec(), end.stop, end.logged));
        }
    }
    stats.task_clock_ns = counters.as_mut().and_then(|c| c.read().task_clock_ns);
    stats.lifespan_final = shadow.lifespan();
    stats.log_capacity_final = shadow.log_capacity() as u64;
    stats.tuner = tuner;
    *ch.helper_end.lock() = Some(stats);
}
