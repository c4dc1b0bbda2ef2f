//! Adaptive tuning of the lifespan and the write-log size, and switching a
//! helper off when it does not pay (the paper leaves this as future work,
//! §7).
//!
//! Every `sample_every`-th unit handed to a helper is *sampled*: the helper
//! records the addresses its shadow of that unit loaded, and the worker
//! turns the STM's access sampler on while it runs the unit, so after the
//! commit the helper gets the addresses the worker touched. Both are
//! compared at cache-line granularity (what a prefetch brings in):
//!
//! - coverage: of the lines the worker touched, the share the shadow loaded
//!   first (the hit rate of the prefetch);
//! - accuracy: of the lines the shadow loaded, the share the worker went
//!   on to touch (the rest pollutes the cache);
//! - tail accuracy: the same over the second half of the shadow's loads,
//!   in order (the value of reading further).
//!
//! After every `window` samples:
//!
//! | observation over the window | action |
//! |---|---|
//! | coverage below `min_coverage` | helper off for `off_units` handoffs (doubling each time it happens again, up to 64×), then on again to measure anew |
//! | most shadows stopped by the lifespan and tail accuracy ≥ ½ | lifespan × 2 (up to the maximum) |
//! | tail accuracy < ¼ | lifespan ÷ 2 (down to the minimum) |
//! | a shadow stopped with a full log and accuracy ≥ ½ | log capacity × 2 (up to the maximum) |
//! | no shadow used more than ¼ of the log | log capacity ÷ 2 (down to the minimum) |
//!
//! Coverage says whether the shadow reads what the worker reads, not
//! whether that was worth it (the data may have been in cache anyway). So
//! the worker also measures it directly ([`Probe`]): it times each unit
//! from its start to its commit, and compares a window of `probe_units`
//! helped units with the unhelped windows on both sides of it (off, on,
//! off, so that a trend in unit times, such as a phase whose later units
//! find less left to do, falls on both sides alike; a worker's first
//! measurement starts with its off window too, so that the loss rule below
//! can cut its first on-window short). Windows, not units in turn: the
//! helper shadows the unit *after* the one the worker runs, so what it costs
//! falls on the unit before a helped one. If the helped units are not
//! faster by `margin`, the helper is switched off for a stretch that grows
//! fourfold each time (up to 256 windows); if they are, the next
//! measurement comes after a stretch that doubles with every paying one in
//! a row and starts again at one window after one that did not pay (unit
//! times are noisy: one lucky measurement must not keep a useless helper
//! on for long). An on-window ends early once it has [`EARLY_UNITS`]
//! helped units that take [`CLEAR_LOSS`] longer on average than the off
//! window before it: a helper that slows units down (genome's shadows read
//! the hash-set lines the worker then writes, so on cores without a shared
//! cache each write becomes a coherence miss) then costs a quarter of a
//! window per measurement, not a whole one. A helper that cannot help (the
//! data is in cache already, so shadowing it only moves lines between the
//! caches) is thus on for one window in the first three, then for ever
//! fewer (the four on-windows of its first 3000 units or so, then one in
//! 259 windows: under half a percent of the units in a long run). Where the probe
//! stands, a half-measured window's figures included, carries over to the
//! next run of the same `HelperThreads` (kmeans and genome are made of
//! many short runs), and a run starts its helper thread only if, as long as
//! the last one, it would reach an on-window ([`Probe::wants_thread`]).

use std::time::Duration;

use crate::stop::StopReason;

use crate::error::ConfigError;

/// The bounds and thresholds of adaptive tuning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Every n-th handed unit is sampled (≥ 1; 1 samples every unit).
    pub sample_every: u32,
    /// Samples per decision.
    pub window: u32,
    /// Lifespan bounds (words read).
    pub lifespan: (u64, u64),
    /// Write-log capacity bounds (entries).
    pub log_capacity: (usize, usize),
    /// Below this coverage over a window the helper is switched off for a while.
    pub min_coverage: f64,
    /// Handoffs a switched-off helper sits out the first time.
    pub off_units: u64,
    /// Most worker accesses recorded per sampled unit.
    pub sample_cap: usize,
    /// Timed units per measurement, half of them helped (0: no timing
    /// probe; rounded up to a multiple of 4). Small windows decide sooner,
    /// at the price of noisier means (the margin absorbs some).
    pub probe_units: u32,
    /// How much faster units must run with the helper for it to stay on.
    pub margin: f64,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            sample_every: 16,
            window: 8,
            lifespan: (64, 1 << 16),
            log_capacity: (64, 1 << 14),
            min_coverage: 0.05,
            off_units: 256,
            sample_cap: 1 << 14,
            probe_units: 32,
            margin: 0.02,
        }
    }
}

impl Tuning {
    pub(crate) fn check(&self, lifespan: u64, log_capacity: usize) -> Result<(), ConfigError> {
        if self.sample_every == 0 || self.window == 0 {
            return Err(ConfigError::SamplePeriod);
        }
        let (lo, hi) = self.lifespan;
        if lo == 0 || lo > lifespan || lifespan > hi {
            return Err(ConfigError::TuningBounds { what: "lifespan", min: lo, start: lifespan, max: hi });
        }
        let (lo, hi) = self.log_capacity;
        if lo == 0 || lo > log_capacity || log_capacity > hi {
            return Err(ConfigError::TuningBounds {
                what: "log capacity",
                min: lo as u64,
                start: log_capacity as u64,
                max: hi as u64,
            });
        }
        Ok(())
    }
}

/// The worker's timing probe: is the helper worth it? Runs on the worker
/// thread only (it lives in the worker's own state, behind no lock).
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    units: u64,
    margin: f64,
    phase: Phase,
    /// Helped units' time and count in the current measurement's on-window.
    on: (Duration, u64),
    /// Unhelped units' time and count in its off windows.
    off: (Duration, u64),
    /// Windows before trying again after a probe where the helper did not
    /// pay: grows fourfold with every such probe, and never shrinks.
    stretch: u64,
    /// Windows before the next probe after one where it paid: doubles
    /// with every paying probe in a row, and starts again at one after a
    /// probe where it did not (so one lucky probe of a helper that does not
    /// pay keeps it on for one window, not for a long stretch).
    paid_stretch: u64,
    /// Units told so far in this run ...
    run_units: u64,
    /// ... and in the last run that told any (`None`: no run yet).
    last_run_units: Option<u64>,
    pub(crate) probes: u64,
    pub(crate) paid: u64,
    pub(crate) switched_off: u64,
    /// Mean unit time with and without the helper in the last probe (ns).
    pub(crate) last_on_ns: u64,
    pub(crate) last_off_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Helper on, measuring (or not, when `measure` is false) for `left`
    /// more units.
    On { left: u64, measure: bool },
    /// Helper off, measuring, for `left` more units.
    Probe { left: u64 },
    /// Helper off, not measuring, for `left` more units.
    Off { left: u64 },
}

/// Where a probe stands, carried from one skeleton run to the next of the
/// same [`HelperThreads`](crate::HelperThreads) (programs made of many
/// short runs would otherwise pay a fresh measurement in every one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProbeState {
    phase: Phase,
    on: (Duration, u64),
    off: (Duration, u64),
    stretch: u64,
    paid_stretch: u64,
    run_units: Option<u64>,
}

/// Units on each side a measurement needs before it can end early on a
/// clear loss ...
pub(crate) const EARLY_UNITS: u64 = 8;
/// ... which is when the helped units' mean time is this much above the
/// unhelped units' (a quarter slower: far outside the few percent a mean
/// moves between runs of the same units).
pub(crate) const CLEAR_LOSS: f64 = 0.25;

/// Each stretch is this many times the one before ...
const GROWTH: u64 = 4;
/// ... up to this many windows.
const MAX_STRETCH: u64 = 256;

impl Probe {
    pub(crate) fn new(units: u32, margin: f64) -> Self {
        let units = u64::from(units.max(1));
        Probe {
            units,
            margin,
            // The baseline first: a helper that slows units down is then
            // cut short in its first on-window too (labyrinth's 91-unit
            // run paid a whole on-window, a third of its units, 27% slower).
            phase: Phase::Probe { left: units },
            on: (Duration::ZERO, 0),
            off: (Duration::ZERO, 0),
            stretch: 1,
            paid_stretch: 1,
            run_units: 0,
            last_run_units: None,
            probes: 0,
            paid: 0,
            switched_off: 0,
            last_on_ns: 0,
            last_off_ns: 0,
        }
    }

    /// A probe that goes on from `state`, with fresh counts (they are a
    /// run's report). A measurement's figures carry over with it: programs
    /// made of many short runs (kmeans runs 16 units per iteration on its
    /// small input) would otherwise never finish one.
    pub(crate) fn resume(units: u32, margin: f64, state: ProbeState) -> Self {
        Probe {
            phase: state.phase,
            on: state.on,
            off: state.off,
            stretch: state.stretch,
            paid_stretch: state.paid_stretch,
            last_run_units: state.run_units,
            ..Probe::new(units, margin)
        }
    }

    /// Where it stands now.
    pub(crate) fn state(&self) -> ProbeState {
        ProbeState {
            phase: self.phase,
            on: self.on,
            off: self.off,
            stretch: self.stretch,
            paid_stretch: self.paid_stretch,
            run_units: if self.run_units > 0 { Some(self.run_units) } else { self.last_run_units },
        }
    }

    /// Units after the one starting now that the probe is sure to keep
    /// the helper off for, untimed: the rest of an off stretch (0 in any
    /// other phase).
    pub(crate) fn certainly_off_after(&self) -> u64 {
        match self.phase {
            Phase::Off { left } => left - 1,
            _ => 0,
        }
    }

    /// `n` units finished that were neither timed nor helped (what
    /// [`unit`](Self::unit) would have been told for each).
    pub(crate) fn skip(&mut self, mut n: u64) {
        self.run_units += n;
        while n > 0 {
            match self.phase {
                // Within the off stretch: one subtraction.
                Phase::Off { left } if n < left => {
                    self.phase = Phase::Off { left: left - n };
                    n = 0;
                }
                _ => {
                    self.unit(None, false);
                    self.run_units -= 1;
                    n -= 1;
                }
            }
        }
    }

    /// Whether the unit handed over now goes to the helper.
    pub(crate) fn helper_on(&self) -> bool {
        matches!(self.phase, Phase::On { .. })
    }

    /// Whether a run starting now needs a helper thread: when it is
    /// likely to reach an on-window, judged by the length of the last run
    /// (a thread costs tens of microseconds to start and join, and kmeans'
    /// iterations are runs of a few units). Before any run, always (its
    /// length is not known). A run without a thread that reaches an on-window
    /// keeps the helper off until the next run.
    pub(crate) fn wants_thread(&self) -> bool {
        let to_on = match self.phase {
            Phase::On { .. } => return true,
            Phase::Probe { left } => left,
            Phase::Off { left } => left + self.units,
        };
        self.last_run_units.is_none_or(|n| n > to_on)
    }

    /// Whether the unit starting now is timed.
    pub(crate) fn measuring(&self) -> bool {
        matches!(self.phase, Phase::On { measure: true, .. } | Phase::Probe { .. })
    }

    /// A unit finished; `took`: its time, if it was timed; `helped`: it
    /// had been handed to the helper.
    pub(crate) fn unit(&mut self, took: Option<Duration>, helped: bool) {
        self.run_units += 1;
        self.phase = match self.phase {
            Phase::On { left, measure } => {
                if let (true, true, Some(t)) = (measure, helped, took) {
                    self.on.0 += t;
                    self.on.1 += 1;
                    if self.clear_loss() {
                        self.phase = self.decide();
                        return;
                    }
                }
                match left {
                    2.. => Phase::On { left: left - 1, measure },
                    // The off window after the on-window (or the first
                    // off window of the next measurement).
                    _ => Phase::Probe { left: self.units },
                }
            }
            Phase::Probe { left } => {
                if let (false, Some(t)) = (helped, took) {
                    self.off.0 += t;
                    self.off.1 += 1;
                }
                match left {
                    2.. => Phase::Probe { left: left - 1 },
                    // The off window after the on-window: decide.
                    _ if self.on.1 > 0 => self.decide(),
                    _ => Phase::On { left: self.units, measure: true },
                }
            }
            Phase::Off { left } => {
                if left > 1 {
                    Phase::Off { left: left - 1 }
                } else {
                    Phase::Probe { left: self.units }
                }
            }
        };
    }

    /// Whether the measurement so far is a clear loss.
    fn clear_loss(&self) -> bool {
        let (on, off) = (self.on, self.off);
        on.1 >= EARLY_UNITS
            && off.1 >= EARLY_UNITS
            && on.0.as_nanos() as f64 * off.1 as f64 > off.0.as_nanos() as f64 * on.1 as f64 * (1.0 + CLEAR_LOSS)
    }

    fn decide(&mut self) -> Phase {
        let mean = |(t, n): (Duration, u64)| if n == 0 { None } else { Some(t.as_nanos() as f64 / n as f64) };
        let (on, off) = (mean(self.on), mean(self.off));
        self.on = (Duration::ZERO, 0);
        self.off = (Duration::ZERO, 0);
        self.probes += 1;
        let (Some(on), Some(off)) = (on, off) else {
            return Phase::Probe { left: self.units };
        };
        self.last_on_ns = on as u64;
        self.last_off_ns = off as u64;
        if on < off * (1.0 - self.margin) {
            self.paid += 1;
            let next = self.paid_stretch * self.units;
            self.paid_stretch = (self.paid_stretch * 2).min(MAX_STRETCH);
            Phase::On { left: next, measure: false }
        } else {
            self.switched_off += 1;
            let next = self.stretch * self.units;
            self.stretch = (self.stretch * GROWTH).min(MAX_STRETCH);
            self.paid_stretch = 1;
            Phase::Off { left: next }
        }
    }
}

/// How one sampled shadow compared with what its worker did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Score {
    /// Distinct lines the shadow loaded.
    pub(crate) shadow_lines: u64,
    /// Distinct lines the worker touched.
    pub(crate) worker_lines: u64,
    /// Lines in both.
    pub(crate) useful: u64,
    /// Loads in the second half of the shadow's loads.
    pub(crate) tail: u64,
    /// Of those, loads of lines the worker touched.
    pub(crate) tail_useful: u64,
}

const LINE: u32 = 6;

/// Compares the shadow's loads (in order) with the worker's accesses.
/// Sorts `worker` in place (as lines).
pub(crate) fn score(shadow: &[usize], worker: &mut Vec<usize>, scratch: &mut Vec<usize>) -> Score {
    for w in worker.iter_mut() {
        *w >>= LINE;
    }
    worker.sort_unstable();
    worker.dedup();
    let touched = |line: usize| worker.binary_search(&line).is_ok();
    let half = shadow.len() / 2;
    let tail = &shadow[half..];
    let tail_useful = tail.iter().filter(|&&a| touched(a >> LINE)).count() as u64;
    scratch.clear();
    scratch.extend(shadow.iter().map(|a| a >> LINE));
    scratch.sort_unstable();
    scratch.dedup();
    let useful = scratch.iter().filter(|&&l| touched(l)).count() as u64;
    Score {
        shadow_lines: scratch.len() as u64,
        worker_lines: worker.len() as u64,
        useful,
        tail: tail.len() as u64,
        tail_useful,
    }
}

/// What the tuner asks for after a window: an adjustment of the helper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Adjustment {
    pub(crate) lifespan: Option<u64>,
    pub(crate) log_capacity: Option<usize>,
    /// Switch the helper off for this many handoffs.
    pub(crate) off_for: Option<u64>,
}

/// The tuner of one helper.
#[derive(Debug, Clone)]
pub(crate) struct Tuner {
    cfg: Tuning,
    window: Score,
    samples: u32,
    by_lifespan: u32,
    log_full: u32,
    max_logged: usize,
    offs: u32,
    /// Totals over the run (for the report).
    pub(crate) total: Score,
    pub(crate) total_samples: u64,
    pub(crate) lifespan_changes: u64,
    pub(crate) log_changes: u64,
    pub(crate) switched_off: u64,
}

impl Tuner {
    pub(crate) fn new(cfg: Tuning) -> Self {
        Tuner {
            cfg,
            window: Score::default(),
            samples: 0,
            by_lifespan: 0,
            log_full: 0,
            max_logged: 0,
            offs: 0,
            total: Score::default(),
            total_samples: 0,
            lifespan_changes: 0,
            log_changes: 0,
            switched_off: 0,
        }
    }

    /// Adds a sample; after a full window, decides.
    pub(crate) fn add(
        &mut self,
        s: Score,
        stop: Option<StopReason>,
        logged: usize,
        lifespan: u64,
        log_capacity: usize,
    ) -> Adjustment {
        for (w, t) in [(&mut self.window, s), (&mut self.total, s)] {
            w.shadow_lines += t.shadow_lines;
            w.worker_lines += t.worker_lines;
            w.useful += t.useful;
            w.tail += t.tail;
            w.tail_useful += t.tail_useful;
        }
        self.total_samples += 1;
        self.samples += 1;
        self.by_lifespan += u32::from(stop == Some(StopReason::LifespanExhausted));
        self.log_full += u32::from(stop == Some(StopReason::WriteLogFull));
        self.max_logged = self.max_logged.max(logged);
        if self.samples < self.cfg.window {
            return Adjustment::default();
        }
        let w = std::mem::take(&mut self.window);
        let (samples, by_lifespan, log_full, max_logged) =
            (self.samples, self.by_lifespan, self.log_full, self.max_logged);
        self.samples = 0;
        self.by_lifespan = 0;
        self.log_full = 0;
        self.max_logged = 0;

        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let coverage = ratio(w.useful, w.worker_lines);
        let accuracy = ratio(w.useful, w.shadow_lines);
        let tail_accuracy = ratio(w.tail_useful, w.tail);
        let mut d = Adjustment::default();
        if w.worker_lines > 0 && coverage < self.cfg.min_coverage {
            let off = self.cfg.off_units << self.offs.min(6);
            self.offs += 1;
            self.switched_off += 1;
            d.off_for = Some(off);
            return d;
        }
        let (lo, hi) = self.cfg.lifespan;
        if 2 * by_lifespan > samples && tail_accuracy >= 0.5 && lifespan < hi {
            d.lifespan = Some((lifespan * 2).min(hi));
        } else if w.tail > 0 && tail_accuracy < 0.25 && lifespan > lo {
            d.lifespan = Some((lifespan / 2).max(lo));
        }
        let (lo, hi) = self.cfg.log_capacity;
        if log_full > 0 && accuracy >= 0.5 && log_capacity < hi {
            d.log_capacity = Some((log_capacity * 2).min(hi));
        } else if log_full == 0 && max_logged * 4 < log_capacity && log_capacity > lo {
            d.log_capacity = Some((log_capacity / 2).max(lo));
        }
        self.lifespan_changes += u64::from(d.lifespan.is_some());
        self.log_changes += u64::from(d.log_capacity.is_some());
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_counts_lines_and_the_tail() {
        // The shadow loads 4 lines; the worker touches the first two and another.
        let shadow = [0x1000, 0x1008, 0x1040, 0x2000, 0x3000];
        let mut worker = vec![0x1010, 0x1048, 0x9000];
        let s = score(&shadow, &mut worker, &mut Vec::new());
        assert_eq!((s.shadow_lines, s.worker_lines, s.useful), (4, 3, 2));
        // Tail = the last 3 loads: 0x1040 (touched), 0x2000, 0x3000.
        assert_eq!((s.tail, s.tail_useful), (3, 1));
    }

    fn sample(useful: u64, tail_useful: u64) -> Score {
        Score { shadow_lines: 100, worker_lines: 100, useful, tail: 50, tail_useful }
    }

    #[test]
    fn grows_the_lifespan_while_the_tail_pays_and_shrinks_it_when_not() {
        let cfg = Tuning { window: 2, ..Tuning::default() };
        let mut t = Tuner::new(cfg);
        let stop = Some(StopReason::LifespanExhausted);
        assert_eq!(t.add(sample(90, 45), stop, 10, 1024, 1024), Adjustment::default());
        let d = t.add(sample(90, 45), stop, 10, 1024, 1024);
        assert_eq!(d.lifespan, Some(2048));
        // Small log use shrinks the log.
        assert_eq!(d.log_capacity, Some(512));
        t.add(sample(30, 5), None, 10, 2048, 512);
        let d = t.add(sample(30, 5), None, 10, 2048, 512);
        assert_eq!(d.lifespan, Some(1024));
        // A full log with accurate shadows grows it.
        t.add(sample(80, 40), Some(StopReason::WriteLogFull), 512, 1024, 512);
        let d = t.add(sample(80, 40), None, 300, 1024, 512);
        assert_eq!(d.log_capacity, Some(1024));
    }

    #[test]
    fn switches_off_when_coverage_is_too_low_backing_off() {
        let cfg = Tuning { window: 1, off_units: 10, ..Tuning::default() };
        let mut t = Tuner::new(cfg);
        assert_eq!(t.add(sample(1, 0), None, 0, 1024, 1024).off_for, Some(10));
        assert_eq!(t.add(sample(1, 0), None, 0, 1024, 1024).off_for, Some(20));
        assert_eq!(t.switched_off, 2);
        assert_eq!(t.add(sample(50, 25), None, 0, 1024, 1024).off_for, None);
    }

    /// Drives a probe as the worker does: whether a unit is helped was
    /// decided when the unit before it started.
    struct Worker {
        p: Probe,
        next_helped: bool,
        helped: u64,
    }

    impl Worker {
        fn new(p: Probe) -> Self {
            Worker { p, next_helped: false, helped: 0 }
        }

        /// One unit taking `on_us` helped and `off_us` unhelped (when timed).
        fn unit(&mut self, on_us: u64, off_us: u64) {
            let helped = std::mem::replace(&mut self.next_helped, self.p.helper_on());
            self.helped += u64::from(helped);
            let took = self.p.measuring().then(|| Duration::from_micros(if helped { on_us } else { off_us }));
            self.p.unit(took, helped);
        }

        /// Units until the measurement under way ends; returns how many.
        fn measure(&mut self, on_us: u64, off_us: u64) -> u64 {
            let probes = self.p.probes;
            let mut n = 0;
            while self.p.probes == probes {
                self.unit(on_us, off_us);
                n += 1;
            }
            n
        }

        /// Units until the next measurement starts.
        fn rest(&mut self) {
            while !self.p.measuring() {
                self.unit(0, 0);
            }
        }
    }

    #[test]
    fn an_off_stretch_is_known_ahead_and_skipped_as_its_units_would_be() {
        // Helped 30 µs, unhelped 20 µs: the probe switches the helper off.
        let mut w = Worker::new(Probe::new(4, 0.02));
        assert_eq!(w.p.certainly_off_after(), 0, "on: nothing is certain");
        assert_eq!(w.measure(30, 20), 12, "the first measurement: off, on, off");
        assert_eq!(w.p.switched_off, 1);
        // Off for one window of 4: the unit starting now and 3 after it.
        assert_eq!(w.p.certainly_off_after(), 3);
        let mut a = w.p.clone();
        let mut b = w.p.clone();
        a.unit(None, false);
        a.skip(3);
        for _ in 0..4 {
            b.unit(None, false);
        }
        assert_eq!(a.state(), b.state(), "skip(n) is n untimed, unhelped units");
        assert!(!a.helper_on() && a.measuring() && a.certainly_off_after() == 0, "the next baseline");
    }

    #[test]
    fn probe_keeps_a_helper_that_pays_and_drops_one_that_does_not() {
        let mut w = Worker::new(Probe::new(4, 0.02));
        assert!(
            !w.p.helper_on() && w.p.measuring() && w.p.wants_thread(),
            "the first measurement starts with its baseline, in a run with a helper thread"
        );
        // Helped units take 10 µs, unhelped ones 20 µs: it pays.
        assert_eq!(w.measure(10, 20), 12);
        assert_eq!((w.p.probes, w.p.paid, w.p.switched_off), (1, 1, 0));
        assert_eq!((w.p.last_on_ns, w.p.last_off_ns), (10_000, 20_000));
        // On, unmeasured, for one window; then off, on, off, measured.
        for _ in 0..4 {
            assert!(w.p.helper_on() && !w.p.measuring());
            w.unit(0, 0);
        }
        // 21 µs with, 20 µs without: it does not pay; off for 1 window
        // (the first "not paid"), the next time for 4.
        assert_eq!(w.measure(21, 20), 12, "off, on, off");
        assert_eq!((w.p.probes, w.p.paid, w.p.switched_off), (2, 1, 1));
        for _ in 0..4 {
            assert!(!w.p.helper_on() && !w.p.measuring());
            w.unit(0, 0);
        }
        assert!(!w.p.helper_on() && w.p.measuring(), "the baseline first");
        w.measure(21, 20);
        assert_eq!(w.p.switched_off, 2);
        for _ in 0..16 {
            assert!(!w.p.helper_on() && !w.p.measuring());
            w.unit(0, 0);
        }
        assert!(w.p.measuring());
        // The state carries over to a new run's probe, without the counts.
        let q = Probe::resume(4, 0.02, w.p.state());
        assert_eq!((q.state(), q.probes), (w.p.state(), 0));
    }

    #[test]
    fn off_windows_on_both_sides_cancel_a_trend() {
        // Units get shorter through each measurement (as a phase whose
        // later units find less left to do) and the helper changes
        // nothing: neither a gain nor a loss.
        let mut w = Worker::new(Probe::new(32, 0.02));
        w.measure(10, 10);
        for _ in 0..4 {
            w.rest();
            let probes = w.p.probes;
            let mut i = 0;
            while w.p.probes == probes {
                w.unit(200 - i, 200 - i);
                i += 1;
            }
            assert_eq!(i, 96, "off, on, off: nothing ended it early");
        }
        assert_eq!((w.p.probes, w.p.paid), (5, 0));
    }

    #[test]
    fn an_on_window_ends_early_on_a_clear_loss_and_only_then() {
        let second = || {
            let mut w = Worker::new(Probe::new(32, 0.02));
            w.measure(10, 10);
            w.rest();
            w
        };
        // Helped units take twice as long: the on-window ends after
        // EARLY_UNITS of them.
        let mut w = second();
        let n = w.measure(20, 10);
        assert_eq!(n, 32 + 1 + EARLY_UNITS, "the baseline, the lead-in unit, {EARLY_UNITS} helped");
        assert_eq!((w.p.switched_off, w.p.last_on_ns, w.p.last_off_ns), (2, 20_000, 10_000));
        // A loss short of a clear one runs the whole measurement.
        let mut w = second();
        assert_eq!(w.measure(12, 10), 96);
        // The first measurement too: its baseline comes first.
        let mut w = Worker::new(Probe::new(32, 0.02));
        assert_eq!(w.measure(40, 10), 32 + 1 + EARLY_UNITS);
    }

    #[test]
    fn a_helper_thread_is_started_for_runs_that_reach_the_on_window() {
        let mut w = Worker::new(Probe::new(32, 0.02));
        assert!(w.p.wants_thread(), "before any run: a thread, the run's length is not known");
        w.measure(20, 20);
        assert!(!w.p.measuring() && !w.p.helper_on(), "no gain: 32 off, then 32 baseline");
        // A run as long as this one (96 units) would reach the next
        // on-window: it gets a thread.
        w.p = Probe::resume(32, 0.02, w.p.state());
        assert!(w.p.wants_thread());
        // It is a run of 3 units (as kmeans' iterations); so are the next
        // ones: no thread until a run can reach the on-window.
        for _ in 0..3 {
            w.unit(20, 20);
        }
        let mut runs_without = 0;
        loop {
            w.p = Probe::resume(32, 0.02, w.p.state());
            if w.p.wants_thread() {
                break;
            }
            runs_without += 1;
            for _ in 0..3 {
                w.unit(20, 20);
            }
        }
        assert_eq!(runs_without, 20, "61 units to the on-window: 60 in 20 runs, then 1 < 3");
        assert!(!w.p.helper_on() && w.p.measuring());
    }

    #[test]
    fn a_measurement_goes_on_in_the_next_run_with_its_figures() {
        let us = |n| Some(Duration::from_micros(n));
        // Runs of three units each (as kmeans' iterations), windows of 2:
        // the measurement spans two runs, and decides on all its units.
        let mut p = Probe::new(2, 0.02);
        p.unit(us(20), false);
        p.unit(us(30), false);
        p.unit(us(20), true);
        p = Probe::resume(2, 0.02, p.state());
        assert_eq!(p.probes, 0);
        p.unit(us(10), true);
        p.unit(us(20), false);
        assert_eq!(p.probes, 0);
        p.unit(us(10), false);
        assert_eq!((p.probes, p.paid, p.last_on_ns, p.last_off_ns), (1, 1, 15_000, 20_000));
    }

    #[test]
    fn a_useless_helper_is_on_for_a_shrinking_share_of_the_units() {
        // Helped and unhelped units take the same time: the helper never pays.
        let mut w = Worker::new(Probe::new(32, 0.02));
        let n = 100_000;
        for _ in 0..n {
            w.unit(10, 10);
        }
        // Stretches of 1, 4, 16, 64, then 256 windows off after each
        // measurement, which has one on-window.
        assert!(w.helped * 100 <= n, "{} units of {n} with the helper on", w.helped);
        let mut w = Worker::new(Probe::new(32, 0.02));
        // Four measurements of 96 (off, on, off) and the stretches after
        // the first three; the fourth's stretch is all that is left.
        for _ in 0..96 + (32 + 96) + (128 + 96) + (512 + 96) {
            w.unit(10, 10);
        }
        assert_eq!((w.p.probes, w.p.paid, w.helped), (4, 0, 4 * 32));
        for _ in 0..2048 {
            w.unit(10, 10);
            assert!(!w.p.helper_on());
        }
        assert_eq!((w.p.probes, w.helped), (4, 4 * 32), "off for 64 windows after the fourth");
        assert!(!w.p.helper_on() && w.p.measuring(), "then the fifth measurement's baseline");
    }

    #[test]
    fn bounds_are_checked() {
        let t = Tuning::default();
        assert!(t.check(4096, 1024).is_ok());
        assert!(t.check(1, 1024).is_err());
        assert!(t.check(4096, 1 << 20).is_err());
        assert!(Tuning { sample_every: 0, ..t }.check(4096, 1024).is_err());
    }
}
