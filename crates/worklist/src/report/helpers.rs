//! The figures a helper implementation reports through
//! [`Assist::figures`](crate::Assist::figures), typed, and how the figures
//! of several runs add up.
//!
//! The fields are those of a helper that shadows its worker's next unit
//! (paper §4.2, the `skelaff-helper-threads` crate); an implementation
//! leaves at zero (or `None`) what it does not measure.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::placement::HelperPlace;

/// How the shadows of one helper ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ShadowEnds {
    /// The user code returned `Ok` by itself (the unit was shadowed to its end).
    pub completed: u64,
    /// Stopped by the lifespan (words read).
    pub lifespan: u64,
    /// Stopped by a full write log.
    pub log_full: u64,
    /// The user code panicked (caught).
    pub panicked: u64,
    /// The worker reached the unit first (it started running it).
    pub overtaken: u64,
    /// The worker's transaction re-ran: the shadow started again.
    pub restarted: u64,
    /// The run ended.
    pub at_end: u64,
    /// The user code did something a shadow cannot (a `retry`).
    pub unsupported: u64,
    /// The user code returned an error of its own.
    pub user_error: u64,
}

/// What the adaptive tuner saw and did (sampled units).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TuningFigures {
    /// Units sampled.
    pub samples: u64,
    /// Cache lines both the shadow and the worker touched.
    pub useful_lines: u64,
    /// Lines the worker touched.
    pub worker_lines: u64,
    /// Lines the shadow loaded.
    pub shadow_lines: u64,
    /// Lifespan changes.
    pub lifespan_changes: u64,
    /// Write-log capacity changes.
    pub log_capacity_changes: u64,
    /// Times the helper was switched off for low coverage.
    pub switched_off: u64,
}

impl TuningFigures {
    /// Of the lines the worker touched, the share the shadow loaded first (‰).
    pub fn coverage_permille(&self) -> u64 {
        (self.useful_lines * 1000).checked_div(self.worker_lines).unwrap_or(0)
    }

    /// Of the lines the shadow loaded, the share the worker touched (‰).
    pub fn accuracy_permille(&self) -> u64 {
        (self.useful_lines * 1000).checked_div(self.shadow_lines).unwrap_or(0)
    }
}

/// What the worker's timing probe measured (units with and without the helper).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TimingFigures {
    /// Probes decided.
    pub probes: u64,
    /// Probes where the helper paid.
    pub paid: u64,
    /// Probes after which it was switched off.
    pub switched_off: u64,
    /// Mean unit time with the helper in the last probe (ns).
    pub last_on_ns: u64,
    /// Mean unit time without it in the last probe (ns).
    pub last_off_ns: u64,
}

/// The figures of one helper (and the worker side of its link).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelperFigures {
    /// Where it ran.
    pub place: HelperPlace,
    /// Units the worker handed to it.
    pub units_handed: u64,
    /// Units the worker did not hand over because the helper was switched
    /// off (by the timing probe or the coverage tuner).
    pub units_skipped_off: u64,
    /// Units it picked up and shadowed.
    pub units_shadowed: u64,
    /// Shadows run (a restart runs one more).
    pub shadows_run: u64,
    /// How they ended.
    pub ends: ShadowEnds,
    /// Words loaded from shared memory (the prefetches).
    pub words_prefetched: u64,
    /// Reads answered by the shadow's write log.
    pub log_hits: u64,
    /// Times the helper yielded its CPU while idle.
    pub idle_yields: u64,
    /// Times it parked while idle.
    pub idle_parks: u64,
    /// Times the worker had to wake it (a `futex` wake on the worker's path).
    pub worker_wakeups: u64,
    /// The lifespan at the end.
    pub lifespan_final: u64,
    /// The write-log capacity at the end.
    pub log_capacity_final: u64,
    /// The helper thread's CPU time (ns), when counters are on.
    pub task_clock_ns: Option<u64>,
    /// The tuner's figures (adaptive tuning only).
    pub tuning: Option<TuningFigures>,
    /// The timing probe's figures (adaptive tuning only).
    pub timing: Option<TimingFigures>,
}

impl HelperFigures {
    /// Empty figures of a helper at `place`.
    pub fn new(place: HelperPlace) -> Self {
        HelperFigures {
            place,
            units_handed: 0,
            units_skipped_off: 0,
            units_shadowed: 0,
            shadows_run: 0,
            ends: ShadowEnds::default(),
            words_prefetched: 0,
            log_hits: 0,
            idle_yields: 0,
            idle_parks: 0,
            worker_wakeups: 0,
            lifespan_final: 0,
            log_capacity_final: 0,
            task_clock_ns: None,
            tuning: None,
            timing: None,
        }
    }

    /// Adds the figures of a later run of the same helper: counts are
    /// summed; the place and the final settings are the later run's.
    pub fn merge(&mut self, later: &HelperFigures) {
        self.place = later.place;
        self.units_handed += later.units_handed;
        self.units_skipped_off += later.units_skipped_off;
        self.units_shadowed += later.units_shadowed;
        self.shadows_run += later.shadows_run;
        let (e, l) = (&mut self.ends, &later.ends);
        e.completed += l.completed;
        e.lifespan += l.lifespan;
        e.log_full += l.log_full;
        e.panicked += l.panicked;
        e.overtaken += l.overtaken;
        e.restarted += l.restarted;
        e.at_end += l.at_end;
        e.unsupported += l.unsupported;
        e.user_error += l.user_error;
        self.words_prefetched += later.words_prefetched;
        self.log_hits += later.log_hits;
        self.idle_yields += later.idle_yields;
        self.idle_parks += later.idle_parks;
        self.worker_wakeups += later.worker_wakeups;
        self.lifespan_final = later.lifespan_final;
        self.log_capacity_final = later.log_capacity_final;
        self.task_clock_ns = add_options(self.task_clock_ns, later.task_clock_ns);
        self.tuning = match (self.tuning, later.tuning) {
            (Some(mut t), Some(l)) => {
                t.samples += l.samples;
                t.useful_lines += l.useful_lines;
                t.worker_lines += l.worker_lines;
                t.shadow_lines += l.shadow_lines;
                t.lifespan_changes += l.lifespan_changes;
                t.log_capacity_changes += l.log_capacity_changes;
                t.switched_off += l.switched_off;
                Some(t)
            }
            (a, b) => a.or(b),
        };
        self.timing = match (self.timing, later.timing) {
            (Some(mut t), Some(l)) => {
                t.probes += l.probes;
                t.paid += l.paid;
                t.switched_off += l.switched_off;
                t.last_on_ns = l.last_on_ns;
                t.last_off_ns = l.last_off_ns;
                Some(t)
            }
            (a, b) => a.or(b),
        };
    }
}

impl fmt::Display for HelperFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.place.cpu {
            Some(c) => write!(f, "cpu {c} ({})", self.place.site)?,
            None => write!(f, "unpinned")?,
        }
        let e = &self.ends;
        write!(
            f,
            " | handed {} skipped-off {} shadowed {} runs {} | completed {} lifespan {} log-full {} overtaken {} restarted {} \
             panicked {} at-end {} unsupported {} user-error {} | prefetched {} log-hits {} | yields {} parks {} \
             wakeups {} | lifespan {} log {}",
            self.units_handed,
            self.units_skipped_off,
            self.units_shadowed,
            self.shadows_run,
            e.completed,
            e.lifespan,
            e.log_full,
            e.overtaken,
            e.restarted,
            e.panicked,
            e.at_end,
            e.unsupported,
            e.user_error,
            self.words_prefetched,
            self.log_hits,
            self.idle_yields,
            self.idle_parks,
            self.worker_wakeups,
            self.lifespan_final,
            self.log_capacity_final
        )?;
        if let Some(t) = self.task_clock_ns {
            write!(f, " | cpu time {:.3} s", t as f64 / 1e9)?;
        }
        if let Some(t) = &self.tuning {
            write!(
                f,
                " | tuning: {} samples, coverage {}‰, accuracy {}‰, switched off {}",
                t.samples,
                t.coverage_permille(),
                t.accuracy_permille(),
                t.switched_off
            )?;
        }
        if let Some(t) = &self.timing {
            write!(
                f,
                " | timing: {} probes, paid {}, off {}, last {} ns on / {} ns off",
                t.probes, t.paid, t.switched_off, t.last_on_ns, t.last_off_ns
            )?;
        }
        Ok(())
    }
}

/// Per-thread event counts (a worker's, measured by the helper
/// implementation on the worker thread); `None` where a counter could not
/// be opened (no hardware counters on this machine, say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CounterFigures {
    /// Last-level cache read misses.
    pub llc_read_misses: Option<u64>,
    /// Last-level cache read accesses.
    pub llc_read_accesses: Option<u64>,
    /// CPU time (ns).
    pub task_clock_ns: Option<u64>,
    /// Page faults.
    pub page_faults: Option<u64>,
}

impl CounterFigures {
    /// Whether no counter was read.
    pub fn is_empty(&self) -> bool {
        *self == CounterFigures::default()
    }

    /// Adds a later run's counts (a counter missing in either stays as the other has it).
    pub fn merge(&mut self, later: &CounterFigures) {
        self.llc_read_misses = add_options(self.llc_read_misses, later.llc_read_misses);
        self.llc_read_accesses = add_options(self.llc_read_accesses, later.llc_read_accesses);
        self.task_clock_ns = add_options(self.task_clock_ns, later.task_clock_ns);
        self.page_faults = add_options(self.page_faults, later.page_faults);
    }
}

impl fmt::Display for CounterFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items = [
            ("llc_read_misses", self.llc_read_misses),
            ("llc_read_accesses", self.llc_read_accesses),
            ("task_clock_ns", self.task_clock_ns),
            ("page_faults", self.page_faults),
        ];
        let shown: Vec<String> = items.iter().filter_map(|(k, v)| v.map(|v| format!("{k}={v}"))).collect();
        f.write_str(&shown.join(" "))
    }
}

fn add_options(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// What a helper implementation reports about one worker and its helper.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelFigures {
    /// Counters measured on the worker thread.
    pub worker: CounterFigures,
    /// The helper's figures, if one ran.
    pub helper: Option<HelperFigures>,
    /// Notes for people (what could not be measured, what was switched off and why).
    pub notes: Vec<String>,
}

/// The helper-thread figures of a run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HelpersReport {
    /// One per helper that ran, in worker order.
    pub per_helper: Vec<HelperFigures>,
    /// One per worker (empty for [`Worklist::run`](crate::Worklist::run)).
    pub per_worker: Vec<CounterFigures>,
    /// Notes for people, each once.
    pub notes: Vec<String>,
}

impl HelpersReport {
    /// Adds a later run's figures: helpers and workers of the same index
    /// merge, notes not seen yet are added.
    pub fn merge(&mut self, later: HelpersReport) {
        for (i, h) in later.per_helper.into_iter().enumerate() {
            match self.per_helper.get_mut(i) {
                Some(x) => x.merge(&h),
                None => self.per_helper.push(h),
            }
        }
        for (i, w) in later.per_worker.into_iter().enumerate() {
            match self.per_worker.get_mut(i) {
                Some(x) => x.merge(&w),
                None => self.per_worker.push(w),
            }
        }
        for n in later.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
    }

    /// The figures of every helper summed (the place is the last one's).
    pub fn total(&self) -> Option<HelperFigures> {
        let mut it = self.per_helper.iter();
        let mut t = it.next()?.clone();
        for h in it {
            t.merge(h);
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::HelperSite;

    #[test]
    fn merging_sums_counts_and_keeps_the_later_settings() {
        let place = HelperPlace { cpu: Some(1), site: HelperSite::Dedicated };
        let mut a = HelperFigures::new(place);
        a.units_shadowed = 3;
        a.lifespan_final = 64;
        a.tuning = Some(TuningFigures { useful_lines: 10, worker_lines: 40, ..Default::default() });
        let mut b = HelperFigures::new(HelperPlace { cpu: Some(2), ..place });
        b.units_shadowed = 4;
        b.lifespan_final = 128;
        b.idle_parks = 1;
        b.tuning = Some(TuningFigures { useful_lines: 30, worker_lines: 40, ..Default::default() });
        b.task_clock_ns = Some(5);
        a.merge(&b);
        assert_eq!((a.units_shadowed, a.lifespan_final, a.idle_parks, a.place.cpu), (7, 128, 1, Some(2)));
        assert_eq!(a.task_clock_ns, Some(5));
        // Coverage comes from the summed lines: 40 of 80.
        assert_eq!(a.tuning.unwrap().coverage_permille(), 500);
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<HelperFigures>(&json).unwrap(), a);
        assert!(a.to_string().contains("shadowed 7"), "{a}");
    }

    #[test]
    fn reports_merge_by_index_and_keep_notes_once() {
        let place = HelperPlace { cpu: None, site: HelperSite::Unpinned };
        let one = |n: u64| {
            let mut h = HelperFigures::new(place);
            h.units_handed = n;
            HelpersReport {
                per_helper: vec![h],
                per_worker: vec![
                    CounterFigures { task_clock_ns: Some(n), ..Default::default() },
                    CounterFigures::default(),
                ],
                notes: vec!["no hardware counters".into()],
            }
        };
        let mut r = one(2);
        r.merge(one(5));
        assert_eq!(r.per_helper[0].units_handed, 7);
        assert_eq!(r.per_worker[0].task_clock_ns, Some(7));
        assert!(r.per_worker[1].is_empty());
        assert_eq!(r.notes.len(), 1);
        assert_eq!(r.total().unwrap().units_handed, 7);
    }
}
