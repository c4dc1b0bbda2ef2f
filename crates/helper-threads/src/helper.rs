//! The worker–helper link and the helper thread's body (paper Fig. 6).
//!
//! The link's state word `events` counts every event the helper must react
//! to; the worker bumps it, the helper compares it with the value it saw
//! when it started its shadow (the shadow's cancel word):
//!
//! | event (worker side) | mailbox | `events` | helper |
//! |---|---|---|---|
//! | `handoff(Some(u))`: starts the unit it handed before, hands `u` | `next = clone(u)`, `fresh` | +1 | stops the shadow (overtaken), shadows `u` |
//! | `handoff(None)`: starts the unit it handed before, holds no other | `next = None`, `fresh` | +1 | stops the shadow (overtaken), idles |
//! | `restarted()`: its transaction runs again | — | +1 | restarts the shadow of the same unit |
//! | `finish()` | `done` | +1 | returns |
//!
//! `fresh` and `next` change under the mailbox lock, and `events` is bumped
//! inside it for a handoff, so the helper reads a unit and the `events` that
//! goes with it together. An idle helper spins for `idle.spin`, then yields
//! for `idle.yield_for`, then parks; before parking it raises `sleeping`
//! and looks at `events` again, and the worker looks at `sleeping` after its
//! bump (both sequentially consistent), so either the helper sees the bump
//! or the worker sees it asleep and unparks it.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use skelaff_stm::StopReason;
use skelaff_stm::sampler::{self, AccessKind};
use skelaff_worklist::{Assist, Ctx, HelperPlace, LinkFigures, Skeleton, WorkerInfo};

use crate::HelperThreads;
use crate::counters::ThreadCounters;
use crate::shadow::{ShadowEnd, ShadowTx};
use crate::tuning::{Probe, Tuner, score};

/// What an idle helper does while it waits for its worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdlePolicy {
    /// Spin (with the CPU's pause hint) this long first.
    pub spin: Duration,
    /// Then yield the CPU this long.
    pub yield_for: Duration,
    // Then park until the worker wakes it.
}

impl Default for IdlePolicy {
    /// 20 µs of spinning, then 200 µs of yielding, then parking (see the
    /// crate README for the measurement behind it).
    fn default() -> Self {
        IdlePolicy { spin: Duration::from_micros(20), yield_for: Duration::from_micros(200) }
    }
}

struct Mailbox<U> {
    next: Option<U>,
    fresh: bool,
    /// The handed unit is sampled (with its sequence number).
    sampled: Option<u64>,
    /// The lines the worker touched in a sampled unit, with its sequence number.
    worker_accesses: Option<(u64, Vec<usize>)>,
}

/// A sampled shadow's loads waiting for the worker's accesses: (sequence
/// number, addresses loaded in order, why it stopped, words logged).
type Trace = (u64, Vec<usize>, Option<StopReason>, usize);

/// Figures counted by the helper thread.
#[derive(Debug, Clone, Default)]
struct HelperStats {
    picked: u64,
    shadows: u64,
    completed: u64,
    lifespan: u64,
    log_full: u64,
    panicked: u64,
    overtaken: u64,
    restarted: u64,
    at_end: u64,
    unsupported: u64,
    user_error: u64,
    loads: u64,
    log_hits: u64,
    parks: u64,
    yields: u64,
    task_clock_ns: Option<u64>,
    tuner: Option<Tuner>,
    lifespan_final: u64,
    log_capacity_final: u64,
}

/// What a worker and its helper share (one per worker).
pub struct Link<U> {
    worker: WorkerInfo,
    place: Option<HelperPlace>,
    events: CachePadded<AtomicU64>,
    sleeping: AtomicBool,
    done: AtomicBool,
    thread: OnceLock<Thread>,
    mailbox: Mutex<Mailbox<U>>,
    /// Worker side (written by the worker thread only; atomics so the link is `Sync`).
    w: CachePadded<WorkerSide>,
    /// Handoffs the helper asked to sit out (written by the helper).
    off_for: AtomicU64,
    /// Sequence number + 1 of the sampled unit the helper picked up last
    /// (written by the helper; 0: none). The worker records its accesses
    /// only for a unit the helper really shadows: a unit superseded in the
    /// mailbox before the helper woke has no trace to compare with.
    picked_sample: AtomicU64,
    counters: Mutex<Option<ThreadCounters>>,
    worker_counts: Mutex<Vec<(String, u64)>>,
    stats: Mutex<HelperStats>,
    notes: Mutex<Vec<String>>,
}

struct WorkerSide {
    handed: AtomicU64,
    skipped: AtomicU64,
    off_left: AtomicU64,
    wakes: AtomicU64,
    /// Sequence number + 1 of the sampled unit running now (0: none).
    sampling: AtomicU64,
    /// Whether the last handoff gave the helper a unit.
    handing: AtomicBool,
    /// The timing probe (adaptive tuning only); locked by the worker alone.
    timing: Option<Mutex<Timing>>,
}

/// The worker's timing of its units, for [`Probe`].
struct Timing {
    probe: Probe,
    started: Option<Instant>,
    /// The unit running now was handed to the helper before.
    current_helped: bool,
    /// The unit handed last (the next to run) went to the helper.
    next_handed: bool,
}

impl<U> std::fmt::Debug for Link<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("worker", &self.worker.index)
            .field("place", &self.place)
            .field("events", &self.events.load(Ordering::Relaxed))
            .field("done", &self.done.load(Ordering::Relaxed))
            .finish()
    }
}

impl<U> Link<U> {
    fn new(worker: WorkerInfo, place: Option<HelperPlace>, probe: Option<Probe>) -> Self {
        Link {
            worker,
            place,
            events: CachePadded::new(AtomicU64::new(0)),
            sleeping: AtomicBool::new(false),
            done: AtomicBool::new(false),
            thread: OnceLock::new(),
            mailbox: Mutex::new(Mailbox { next: None, fresh: false, sampled: None, worker_accesses: None }),
            w: CachePadded::new(WorkerSide {
                handed: AtomicU64::new(0),
                skipped: AtomicU64::new(0),
                off_left: AtomicU64::new(0),
                wakes: AtomicU64::new(0),
                sampling: AtomicU64::new(0),
                handing: AtomicBool::new(false),
                timing: probe.map(|probe| {
                    Mutex::new(Timing { probe, started: None, current_helped: false, next_handed: false })
                }),
            }),
            off_for: AtomicU64::new(0),
            picked_sample: AtomicU64::new(0),
            counters: Mutex::new(None),
            worker_counts: Mutex::new(Vec::new()),
            stats: Mutex::new(HelperStats::default()),
            notes: Mutex::new(Vec::new()),
        }
    }

    /// Wakes the helper if it is parked (after a `events` bump).
    #[inline]
    fn wake(&self) {
        if self.sleeping.load(Ordering::SeqCst) {
            if let Some(t) = self.thread.get() {
                self.w.wakes.fetch_add(1, Ordering::Relaxed);
                t.unpark();
            }
        }
    }
}

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
    type Link = Link<S::Unit>;

    fn link(&self, worker: &WorkerInfo, helper: Option<HelperPlace>) -> Link<S::Unit> {
        let probe = self.config.adaptive.filter(|t| t.probe_units > 0).map(|t| Probe::new(t.probe_units, t.margin));
        Link::new(*worker, helper, probe)
    }

    fn worker_start(&self, link: &Link<S::Unit>) {
        if self.config.counters {
            *link.counters.lock() = Some(ThreadCounters::open());
        }
    }

    fn worker_end(&self, link: &Link<S::Unit>) {
        if let Some(mut c) = link.counters.lock().take() {
            *link.worker_counts.lock() = c.read();
            if let Some(n) = c.note() {
                let mut notes = link.notes.lock();
                if notes.iter().all(|x| x != n) {
                    notes.push(n.to_owned());
                }
            }
        }
    }

    fn helper(&self, link: &Link<S::Unit>, skeleton: &S, shared: &S::Shared, worker: &WorkerInfo) {
        run_helper(self, link, skeleton, shared, worker);
    }

    #[inline]
    fn handoff(&self, link: &Link<S::Unit>, next: Option<&S::Unit>) {
        let w = &link.w;
        // The unit starting now is the one handed last time, if that
        // handoff gave the helper a unit; if the helper picked it up as a
        // sample, record what the worker touches while it runs.
        let picked = link.picked_sample.swap(0, Ordering::Relaxed);
        let starting = w.handing.load(Ordering::Relaxed).then(|| w.handed.load(Ordering::Relaxed).wrapping_sub(1));
        if picked != 0 && starting == Some(picked - 1) {
            if let Some(t) = &self.config.adaptive {
                if sampler::enable(1, t.sample_cap).is_ok() {
                    w.sampling.store(picked, Ordering::Relaxed);
                }
            }
        }
        let off_for = link.off_for.swap(0, Ordering::Relaxed);
        if off_for > 0 {
            w.off_left.store(off_for, Ordering::Relaxed);
        }
        // Switched off by its coverage (the helper idles since), or by the
        // worker's timing probe?
        let off_left = w.off_left.load(Ordering::Relaxed);
        let mut hand = off_left == 0;
        if !hand {
            w.off_left.store(off_left - 1, Ordering::Relaxed);
        }
        if let Some(t) = &w.timing {
            let mut t = t.lock();
            t.started = Some(Instant::now());
            t.current_helped = t.next_handed;
            hand &= t.probe.helper_on();
            t.next_handed = hand && next.is_some();
        }
        if !hand {
            w.skipped.fetch_add(u64::from(next.is_some()), Ordering::Relaxed);
            if !w.handing.swap(false, Ordering::Relaxed) {
                return;
            }
            // The helper may still be on the unit starting now: stop it.
            let old = {
                let mut m = link.mailbox.lock();
                m.fresh = true;
                m.sampled = None;
                link.events.fetch_add(1, Ordering::SeqCst);
                m.next.take()
            };
            link.wake();
            drop(old);
            return;
        }
        w.handing.store(next.is_some(), Ordering::Relaxed);
        let seq = w.handed.load(Ordering::Relaxed);
        let sampled = match (&self.config.adaptive, next) {
            (Some(t), Some(_)) if seq % u64::from(t.sample_every) == 0 => Some(seq),
            _ => None,
        };
        w.handed.store(seq + u64::from(next.is_some()), Ordering::Relaxed);
        // Clone outside the lock; drop the superseded unit outside it too.
        let fresh = next.cloned();
        let old = {
            let mut m = link.mailbox.lock();
            m.fresh = true;
            m.sampled = sampled;
            link.events.fetch_add(1, Ordering::SeqCst);
            std::mem::replace(&mut m.next, fresh)
        };
        link.wake();
        drop(old);
    }

    #[inline]
    fn restarted(&self, link: &Link<S::Unit>) {
        link.events.fetch_add(1, Ordering::SeqCst);
        link.wake();
    }

    #[inline]
    fn committed(&self, link: &Link<S::Unit>) {
        if let Some(t) = &link.w.timing {
            let mut t = t.lock();
            if let Some(start) = t.started.take() {
                let helped = t.current_helped;
                t.probe.unit(start.elapsed(), helped);
            }
        }
        let sampling = link.w.sampling.swap(0, Ordering::Relaxed);
        if sampling != 0 {
            let taken = sampler::take();
            let _ = sampler::disable();
            if let Ok(s) = taken {
                let lines: Vec<usize> = s
                    .accesses
                    .iter()
                    .filter(|a| matches!(a.kind, AccessKind::Read | AccessKind::Write))
                    .map(|a| a.addr)
                    .collect();
                link.mailbox.lock().worker_accesses = Some((sampling - 1, lines));
            }
        }
    }

    fn finish(&self, link: &Link<S::Unit>) {
        link.done.store(true, Ordering::SeqCst);
        link.events.fetch_add(1, Ordering::SeqCst);
        if let Some(t) = link.thread.get() {
            t.unpark();
        }
    }

    fn figures(&self, link: Link<S::Unit>) -> LinkFigures {
        let worker = link.worker_counts.into_inner();
        let mut notes = link.notes.into_inner();
        let helper = link.place.map(|place| {
            let s = link.stats.into_inner();
            let w = &link.w;
            let mut v: Vec<(&str, u64)> = vec![
                ("cpu", place.cpu.map_or(u64::MAX, |c| c as u64)),
                ("dedicated_cpu", u64::from(place.dedicated)),
                ("units_handed", w.handed.load(Ordering::Relaxed)),
                ("units_shadowed", s.picked),
                ("shadows_run", s.shadows),
                ("completed", s.completed),
                ("stopped_lifespan", s.lifespan),
                ("stopped_log_full", s.log_full),
                ("stopped_panic", s.panicked),
                ("stopped_overtaken", s.overtaken),
                ("restarted_after_abort", s.restarted),
                ("stopped_at_end", s.at_end),
                ("stopped_unsupported", s.unsupported),
                ("stopped_user_error", s.user_error),
                ("words_prefetched", s.loads),
                ("log_hits", s.log_hits),
                ("idle_parks", s.parks),
                ("idle_yields", s.yields),
                ("worker_wakeups", w.wakes.load(Ordering::Relaxed)),
                ("lifespan_final", s.lifespan_final),
                ("log_capacity_final", s.log_capacity_final),
            ];
            if let Some(t) = s.task_clock_ns {
                v.push(("helper_task_clock_ns", t));
            }
            if let Some(t) = &s.tuner {
                let permille = |a: u64, b: u64| (a * 1000).checked_div(b).unwrap_or(0);
                v.extend([
                    ("tuning_samples", t.total_samples),
                    ("tuning_useful_lines", t.total.useful),
                    ("tuning_worker_lines", t.total.worker_lines),
                    ("tuning_shadow_lines", t.total.shadow_lines),
                    ("coverage_permille", permille(t.total.useful, t.total.worker_lines)),
                    ("accuracy_permille", permille(t.total.useful, t.total.shadow_lines)),
                    ("lifespan_changes", t.lifespan_changes),
                    ("log_capacity_changes", t.log_changes),
                    ("switched_off", t.switched_off),
                    ("units_skipped_off", w.skipped.load(Ordering::Relaxed)),
                ]);
            }
            if let Some(t) = &w.timing {
                let t = t.lock();
                let p = &t.probe;
                v.extend([
                    ("timing_probes", p.probes),
                    ("timing_paid", p.paid),
                    ("timing_switched_off", p.switched_off),
                    ("timing_last_on_ns", p.last_on_ns),
                    ("timing_last_off_ns", p.last_off_ns),
                ]);
            }
            v.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
        });
        notes.dedup();
        LinkFigures { worker, helper, notes }
    }
}

/// The helper thread: wait for a unit, shadow it, repeat until told to finish.
fn run_helper<S: Skeleton>(
    cfg: &HelperThreads,
    link: &Link<S::Unit>,
    skeleton: &S,
    shared: &S::Shared,
    worker: &WorkerInfo,
) where
    S::Unit: Clone,
{
    let _ = link.thread.set(std::thread::current());
    let c = &cfg.config;
    if c.quiet_panics {
        install_quiet_hook();
    }
    let mut counters = c.counters.then(ThreadCounters::open);
    let mut stats = HelperStats::default();
    let mut tuner = c.adaptive.map(Tuner::new);
    let Ok(mut shadow) = ShadowTx::new(&c.shadow) else {
        // HelperThreads::new checked the configuration.
        link.notes.lock().push("helper: invalid shadow configuration".to_owned());
        return;
    };
    let make_local = || catch_unwind(AssertUnwindSafe(|| skeleton.init_helper(shared, worker)));
    let Ok(mut local) = make_local() else {
        link.notes.lock().push(format!("helper of worker {}: init_helper panicked; no helper", worker.index));
        return;
    };
    let mut ctx: Ctx<S::Unit> = Ctx::new(*worker);
    let mut current: Option<S::Unit> = None;
    let mut current_sample: Option<u64> = None;
    // Traces of sampled shadows waiting for the worker's accesses: (seq, loads, stop, logged).
    let mut traces: [Option<Trace>; 2] = [None, None];
    let mut scratch = Vec::new();
    let mut seen = link.events.load(Ordering::SeqCst);
    // Whether the shadow before was cancelled (classified at the next pickup).
    let mut was_cancelled = false;
    loop {
        if link.done.load(Ordering::Acquire) {
            stats.at_end += u64::from(was_cancelled);
            break;
        }
        if link.events.load(Ordering::Acquire) == seen {
            idle_wait(link, seen, c.idle, &mut stats);
            continue;
        }
        // Something happened: a new unit, a restart, or the end.
        let (fresh, accesses) = {
            let mut m = link.mailbox.lock();
            seen = link.events.load(Ordering::SeqCst);
            let fresh = std::mem::take(&mut m.fresh);
            if fresh {
                current = m.next.take();
                current_sample = m.sampled.take().filter(|_| current.is_some());
                if let Some(seq) = current_sample {
                    link.picked_sample.store(seq + 1, Ordering::Relaxed);
                }
            }
            (fresh, m.worker_accesses.take())
        };
        if link.done.load(Ordering::Acquire) {
            stats.at_end += u64::from(was_cancelled);
            break;
        }
        if std::mem::take(&mut was_cancelled) {
            if fresh {
                stats.overtaken += 1;
            } else {
                stats.restarted += 1;
            }
        }
        if fresh {
            stats.picked += u64::from(current.is_some());
        }
        // Tuning: compare a sampled shadow with what the worker touched.
        if let (Some(tuner), Some((seq, mut touched))) = (tuner.as_mut(), accesses) {
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
                    link.off_for.store(off, Ordering::Relaxed);
                    current = None;
                }
            }
        }
        let Some(unit) = current.as_ref() else { continue };
        // Shadow the unit (again, after a restart).
        let record = tuner.is_some() && current_sample.is_some();
        shadow.record_loads(if record { c.adaptive.map_or(0, |t| t.sample_cap) } else { 0 });
        shadow.begin(Some((&*link.events, seen)));
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
                stats.panicked += 1;
                // The local may be half-updated: make a new one.
                match make_local() {
                    Ok(l) => local = l,
                    Err(_) => {
                        link.notes.lock().push(format!(
                            "helper of worker {}: init_helper panicked after a shadow panicked; helper stopped",
                            worker.index
                        ));
                        break;
                    }
                }
            }
            (Ok(_), Some(StopReason::Cancelled)) => was_cancelled = true,
            (Ok(_), Some(StopReason::LifespanExhausted)) => stats.lifespan += 1,
            (Ok(_), Some(StopReason::WriteLogFull)) => stats.log_full += 1,
            (Ok(_), Some(_)) => stats.unsupported += 1,
            (Ok(Ok(())), None) => stats.completed += 1,
            (Ok(Err(_)), None) => stats.user_error += 1,
        }
        if let (true, Some(seq)) = (record, current_sample) {
            // What this shadow loaded (so far, if it was overtaken; a
            // restart replaces it).
            traces[(seq % 2) as usize] = Some((seq, shadow.loaded().to_vec(), end.stop, end.logged));
        }
    }
    stats.task_clock_ns =
        counters.as_mut().and_then(|c| c.read().into_iter().find(|(k, _)| k == "task_clock_ns").map(|(_, v)| v));
    stats.lifespan_final = shadow.lifespan();
    stats.log_capacity_final = shadow.log_capacity() as u64;
    stats.tuner = tuner;
    *link.stats.lock() = stats;
}

/// Spin, then yield, then park, until `events` moves from `seen` or the run ends.
fn idle_wait<U>(link: &Link<U>, seen: u64, idle: IdlePolicy, stats: &mut HelperStats) {
    let moved = || link.events.load(Ordering::Acquire) != seen || link.done.load(Ordering::Acquire);
    let start = Instant::now();
    let mut i = 0u32;
    while !moved() {
        std::hint::spin_loop();
        i = i.wrapping_add(1);
        if i % 64 == 0 && start.elapsed() >= idle.spin {
            break;
        }
    }
    let yield_until = idle.spin + idle.yield_for;
    while !moved() && start.elapsed() < yield_until {
        std::thread::yield_now();
        stats.yields += 1;
    }
    while !moved() {
        link.sleeping.store(true, Ordering::SeqCst);
        if link.events.load(Ordering::SeqCst) == seen && !link.done.load(Ordering::SeqCst) {
            stats.parks += 1;
            std::thread::park();
        }
        link.sleeping.store(false, Ordering::SeqCst);
    }
}
