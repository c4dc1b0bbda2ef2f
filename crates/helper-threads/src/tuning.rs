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
//! from its start to its commit, and alternates windows of `probe_units`
//! units with the helper on and windows with it off. If the units run
//! with the helper are not faster by `margin`, the helper is switched off
//! for a stretch that grows fourfold each time (up to 256 windows); if
//! they are, the next probe comes after a stretch that doubles with every
//! paying probe in a row and starts again at one window after a probe that
//! did not pay (unit times are noisy: one lucky probe must not keep a
//! useless helper on for long). A
//! helper that cannot help (the data is in cache already, so shadowing it
//! only moves lines between the caches) is thus on for one window in the
//! first two, then for ever fewer (the four windows of its first 3000
//! units or so, then one in 258 windows: under half a percent of the
//! units in a long run). Where the probe
//! stands carries over to the next run of the same `HelperThreads` (kmeans
//! and genome are made of many short runs).

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
    /// Units per timing window (0: no timing probe). Small windows decide
    /// sooner, at the price of noisier means (the margin absorbs some).
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
    /// Helped units' time and count in the current on-window.
    on: (Duration, u64),
    /// Unhelped units' time and count in the current probe window.
    off: (Duration, u64),
    /// Windows before trying again after a probe where the helper did not
    /// pay: grows fourfold with every such probe, and never shrinks.
    stretch: u64,
    /// Windows before the next probe after one where it paid: doubles
    /// with every paying probe in a row, and starts again at one after a
    /// probe where it did not (so one lucky probe of a helper that does not
    /// pay keeps it on for one window, not for a long stretch).
    paid_stretch: u64,
    pub(crate) probes: u64,
    pub(crate) paid: u64,
    pub(crate) switched_off: u64,
    /// Mean unit time with and without the helper in the last probe (ns).
    pub(crate) last_on_ns: u64,
    pub(crate) last_off_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Helper on, measuring (or not, when `measure` is false) for `left` more units.
    On { left: u64, measure: bool },
    /// Helper off, measuring, for `left` more units.
    Probe { left: u64 },
    /// Helper off, not measuring, for `left` more units.
    Off { left: u64 },
}

/// Where a probe stands, carried from one skeleton run to the next of the
/// same [`HelperThreads`](crate::HelperThreads) (programs made of many
/// short runs would otherwise pay a fresh on-window in every one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProbeState {
    phase: Phase,
    stretch: u64,
    paid_stretch: u64,
}

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
            phase: Phase::On { left: units, measure: true },
            on: (Duration::ZERO, 0),
            off: (Duration::ZERO, 0),
            stretch: 1,
            paid_stretch: 1,
            probes: 0,
            paid: 0,
            switched_off: 0,
            last_on_ns: 0,
            last_off_ns: 0,
        }
    }

    /// A probe that goes on from `state` (with fresh figures).
    pub(crate) fn resume(units: u32, margin: f64, state: ProbeState) -> Self {
        Probe {
            phase: state.phase,
            stretch: state.stretch,
            paid_stretch: state.paid_stretch,
            ..Probe::new(units, margin)
        }
    }

    /// Where it stands now.
    pub(crate) fn state(&self) -> ProbeState {
        ProbeState { phase: self.phase, stretch: self.stretch, paid_stretch: self.paid_stretch }
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
        while n > 0 {
            match self.phase {
                // Within the off stretch: one subtraction.
                Phase::Off { left } if n < left => {
                    self.phase = Phase::Off { left: left - n };
                    n = 0;
                }
                _ => {
                    self.unit(None, false);
                    n -= 1;
                }
            }
        }
    }

    /// Whether the unit about to be handed over goes to the helper.
    pub(crate) fn helper_on(&self) -> bool {
        matches!(self.phase, Phase::On { .. })
    }

    /// Whether the unit starting now is timed.
    pub(crate) fn measuring(&self) -> bool {
        matches!(self.phase, Phase::On { measure: true, .. } | Phase::Probe { .. })
    }

    /// A unit finished; `took`: its time, if it was timed; `helped`: it
    /// had been handed to the helper.
    pub(crate) fn unit(&mut self, took: Option<Duration>, helped: bool) {
        self.phase = match self.phase {
            Phase::On { left, measure } => {
                if let (true, true, Some(t)) = (measure, helped, took) {
                    self.on.0 += t;
                    self.on.1 += 1;
                }
                match (left.saturating_sub(1), measure) {
                    (0, true) => Phase::Probe { left: self.units },
                    (0, false) => Phase::On { left: self.units, measure: true },
                    (l, m) => Phase::On { left: l, measure: m },
                }
            }
            Phase::Probe { left } => {
                if let (false, Some(t)) = (helped, took) {
                    self.off.0 += t;
                    self.off.1 += 1;
                }
                if left > 1 { Phase::Probe { left: left - 1 } } else { self.decide() }
            }
            Phase::Off { left } => {
                if left > 1 {
                    Phase::Off { left: left - 1 }
                } else {
                    Phase::On { left: self.units, measure: true }
                }
            }
        };
    }

    fn decide(&mut self) -> Phase {
        let mean = |(t, n): (Duration, u64)| if n == 0 { None } else { Some(t.as_nanos() as f64 / n as f64) };
        let (on, off) = (mean(self.on), mean(self.off));
        self.on = (Duration::ZERO, 0);
        self.off = (Duration::ZERO, 0);
        self.probes += 1;
        let (Some(on), Some(off)) = (on, off) else {
            return Phase::On { left: self.units, measure: true };
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

/// What the tuner asks for after a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Decision {
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
    ) -> Decision {
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
            return Decision::default();
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
        let mut d = Decision::default();
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
        assert_eq!(t.add(sample(90, 45), stop, 10, 1024, 1024), Decision::default());
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

    #[test]
    fn an_off_stretch_is_known_ahead_and_skipped_as_its_units_would_be() {
        let us = |n| Some(Duration::from_micros(n));
        // Helped 30 µs, unhelped 20 µs: the probe switches the helper off.
        let drive = |p: &mut Probe| {
            for _ in 0..4 {
                p.unit(us(30), true);
            }
            for _ in 0..4 {
                p.unit(us(20), false);
            }
        };
        let mut a = Probe::new(4, 0.02);
        assert_eq!(a.certainly_off_after(), 0, "on: nothing is certain");
        drive(&mut a);
        // Off for one window of 4: the unit starting now and 3 after it.
        assert_eq!(a.certainly_off_after(), 3);
        let mut b = a.clone();
        a.unit(None, false);
        a.skip(3);
        for _ in 0..4 {
            b.unit(None, false);
        }
        assert_eq!(a.state(), b.state(), "skip(n) is n untimed, unhelped units");
        assert!(a.helper_on() && a.measuring() && a.certainly_off_after() == 0);
    }

    #[test]
    fn probe_keeps_a_helper_that_pays_and_drops_one_that_does_not() {
        let us = |n| Some(Duration::from_micros(n));
        let mut p = Probe::new(4, 0.02);
        assert!(p.helper_on() && p.measuring());
        // Helped units take 10 µs, unhelped ones 20 µs: it pays.
        for _ in 0..4 {
            p.unit(us(10), true);
        }
        assert!(!p.helper_on(), "probe window: helper off");
        for _ in 0..4 {
            p.unit(us(20), false);
        }
        assert_eq!((p.probes, p.paid, p.switched_off), (1, 1, 0));
        assert!(p.helper_on() && !p.measuring());
        assert_eq!((p.last_on_ns, p.last_off_ns), (10_000, 20_000));
        // Unmeasured stretch of 4 units, then a measured window, then a probe.
        for _ in 0..4 {
            p.unit(None, true);
        }
        for _ in 0..4 {
            p.unit(us(30), true);
        }
        assert!(!p.helper_on());
        for _ in 0..4 {
            p.unit(us(20), false);
        }
        // 30 µs with, 20 µs without: it does not pay; off for 1 window
        // (the first "not paid"), the next time for 4.
        assert_eq!((p.probes, p.paid, p.switched_off), (2, 1, 1));
        for _ in 0..4 {
            assert!(!p.helper_on() && !p.measuring());
            p.unit(None, false);
        }
        assert!(p.helper_on(), "tried again after the stretch");
        for _ in 0..4 {
            p.unit(us(30), true);
        }
        for _ in 0..4 {
            p.unit(us(20), false);
        }
        assert_eq!(p.switched_off, 2);
        for _ in 0..16 {
            assert!(!p.helper_on());
            p.unit(None, false);
        }
        assert!(p.helper_on());
        // The state carries over to a new run's probe, without the figures.
        let q = Probe::resume(4, 0.02, p.state());
        assert_eq!((q.state(), q.probes), (p.state(), 0));
    }

    #[test]
    fn a_useless_helper_is_on_for_a_shrinking_share_of_the_units() {
        // Helped and unhelped units take the same time: the helper never pays.
        let mut p = Probe::new(32, 0.02);
        let mut on = 0u64;
        let n = 100_000;
        for _ in 0..n {
            let helped = p.helper_on();
            on += u64::from(helped);
            let took = p.measuring().then(|| Duration::from_micros(10));
            p.unit(took, helped);
        }
        // Stretches of 1, 4, 16, 64, then 256 windows off after each probe:
        // 4 on-windows in the first 2976 units (96 + 192 + 576 + 2112), then
        // one in 258 windows.
        assert!(on * 100 <= n, "{on} units of {n} with the helper on");
        let mut p = Probe::new(32, 0.02);
        let mut on = 0u64;
        for _ in 0..2976 {
            let helped = p.helper_on();
            on += u64::from(helped);
            p.unit(p.measuring().then(|| Duration::from_micros(10)), helped);
        }
        assert_eq!(on, 4 * 32);
        assert_eq!(p.paid, 0);
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
