//! What a run did: time, units, commits and aborts, per worker, the
//! decisions the skeleton took and the helpers' figures; and how the
//! reports of several runs add up ([`RunReport::merge`]).

mod decision;
mod helpers;
mod json;
pub(crate) mod time;

use std::fmt;
use std::time::Duration;

use serde_json::Value;
use skelaff_stm::{AbortReason, Stats};

use crate::access_profile::AccessProfile;
use crate::affinity::AffinityFigures;
use crate::config::PagePolicy;
use crate::pool::{Distribution, LocalOrder};

pub use decision::{Decision, DecisionAt, NoHelper};
pub use helpers::{
    ChannelFigures, CounterFigures, HelperFigures, HelpersReport, ShadowEnds, TimingFigures, TuningFigures,
};
pub use time::{TIME_DENSE_UNITS, TIME_EVERY, TIME_EVERY_LATER, TimeBreakdown};

/// One worker's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerReport {
    /// Worker index.
    pub index: usize,
    /// Its CPU, when pinned.
    pub cpu: Option<usize>,
    /// The node of that CPU.
    pub node: Option<usize>,
    /// Units it processed (committed).
    pub units: u64,
    /// Its transaction statistics (units and the final `update`).
    pub stats: Stats,
    /// Time spent taking and processing units.
    pub busy: Duration,
    /// Time spent with nothing to take.
    pub idle: Duration,
    /// What affinity scheduling did for this worker's units (zero when off).
    pub affinity: AffinityFigures,
    /// Where its time went.
    pub time: TimeBreakdown,
}

/// The outcome of [`Worklist::run`](crate::Worklist::run).
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// Wall-clock time from the first worker's start of this run to the
    /// last one's end. It leaves out what happens before the workers start:
    /// creating and pinning threads (a pool's are created once, when it is
    /// built; per-run threads are created before this clock starts), the
    /// time a run waits behind other runs of the same pool ([`queued`](Self::queued)), and the seeding
    /// of the pool with the units added before `run`.
    pub wall: Duration,
    /// Units processed.
    pub units: u64,
    /// The run's set-up before the workers start (inside `run`, so after
    /// the pool's threads exist): the unit pool and its seeding (shuffled
    /// and routed when asked), the layout's decisions, the migration thread.
    pub setup: Duration,
    /// From the run being handed to the pool's threads (after `setup`) to
    /// the first worker starting it: the wait behind the runs given to the
    /// same pool before it (first come, first served), and the parked
    /// workers' wake-up. Not part of `wall`.
    pub queued: Duration,
    /// Threads used.
    pub threads: usize,
    /// The page policy that was asked for (`auto` for SkelAff).
    pub policy: PagePolicy,
    /// The placement's name (the thread mapping for the default placement).
    pub mapping: String,
    /// The distribution of units.
    pub distribution: Distribution,
    /// The order each worker ran the units of its own deque in.
    pub local_order: LocalOrder,
    /// Whether the workers' writing commits moved the STM's clock.
    pub clock: skelaff_stm::ClockPolicy,
    /// Whether `NumaAlloc` is the global allocator, so thread policies apply
    /// to everything the program allocates.
    pub numa_alloc_global: bool,
    /// Per-worker figures.
    pub workers: Vec<WorkerReport>,
    /// Decisions and when they were taken.
    pub decisions: Vec<DecisionAt>,
    /// Helper-thread figures.
    pub helpers: HelpersReport,
    /// The sampled page-access profile, when the builder asked for one
    /// ([`Builder::access_profile`](crate::Builder::access_profile)).
    pub access_profile: Option<AccessProfile>,
}

impl RunReport {
    /// Adds the report of a later run (programs made of several skeleton
    /// runs, such as kmeans's iterations): wall time, units and every
    /// worker's figures are summed per worker index, helper figures merge
    /// per index ([`HelpersReport::merge`]), and a later decision is kept
    /// only if no equal one is there yet (so SkelAff's switch to bind shows
    /// once, not once per run).
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{TVar, TxError, TxOps};
    /// use skelaff_worklist::{Builder, ProcessCtx, Skeleton, WorkerInfo};
    ///
    /// struct Add;
    /// impl Skeleton for Add {
    ///     type Unit = u64;
    ///     type Shared = TVar<u64>;
    ///     type PerWorker = ();
    ///     fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}
    ///     fn process<'t, X: TxOps<'t>>(&'t self, tx: &mut X, u: &u64, _: &mut (), t: &'t TVar<u64>, _: &mut ProcessCtx<u64>) -> Result<(), TxError> {
    ///         tx.update(t, |v| v + u).map(|_| ())
    ///     }
    /// }
    ///
    /// let total = TVar::new(0);
    /// let mut merged = None::<skelaff_worklist::RunReport>;
    /// for _ in 0..3 {
    ///     let mut wl = Builder::new().threads(1).build(&Add, &total)?;
    ///     wl.add_work_units([1, 2, 3]);
    ///     let r = wl.run()?;
    ///     match &mut merged { Some(m) => m.merge(r), None => merged = Some(r) }
    /// }
    /// let m = merged.unwrap();
    /// assert_eq!((m.units, total.load()), (9, 18));
    /// assert_eq!(m.workers[0].units, 9);
    /// # Ok::<(), skelaff_worklist::Error>(())
    /// ```
    pub fn merge(&mut self, later: RunReport) {
        if let Some(l) = later.access_profile {
            match &mut self.access_profile {
                Some(p) => p.merge(l, self.wall),
                None => self.access_profile = Some(l),
            }
        }
        self.wall += later.wall;
        self.setup += later.setup;
        self.units += later.units;
        for w in later.workers {
            match self.workers.iter_mut().find(|x| x.index == w.index) {
                Some(x) => {
                    x.units += w.units;
                    x.stats.merge(&w.stats);
                    x.busy += w.busy;
                    x.idle += w.idle;
                    x.affinity.merge(&w.affinity);
                    x.time.merge(&w.time);
                }
                None => self.workers.push(w),
            }
        }
        for d in later.decisions {
            if !self.decisions.iter().any(|k| k.decision == d.decision && k.worker == d.worker) {
                self.decisions.push(d);
            }
        }
        self.helpers.merge(later.helpers);
    }

    /// The transaction statistics summed over the workers.
    pub fn stats(&self) -> Stats {
        let mut s = Stats::default();
        for w in &self.workers {
            s.merge(&w.stats);
        }
        s
    }

    /// Committed transactions (units plus the final updates).
    pub fn commits(&self) -> u64 {
        self.stats().commits
    }

    /// Aborted attempts, all reasons.
    pub fn aborts(&self) -> u64 {
        self.stats().total_aborts()
    }

    /// Where the workers' time went, summed over them.
    pub fn time(&self) -> TimeBreakdown {
        let mut t = TimeBreakdown::default();
        for w in &self.workers {
            t.merge(&w.time);
        }
        t
    }

    /// Affinity scheduling's figures summed over the workers.
    pub fn affinity(&self) -> AffinityFigures {
        let mut a = AffinityFigures::default();
        for w in &self.workers {
            a.merge(&w.affinity);
        }
        a
    }

    /// Units per second of wall time.
    pub fn units_per_second(&self) -> f64 {
        self.units as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// The report as one JSON value: its [`Serialize`](serde::Serialize)
    /// form (see the impl for the keys), for callers that index into it.
    pub fn to_json(&self) -> Value {
        // Only `Value::Object`'s string keys are refused by `to_value`, and
        // every map of the form is keyed by strings.
        serde_json::to_value(self).expect("a run report serialises to a JSON value")
    }
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.stats();
        writeln!(
            f,
            "{} units in {:.3} s ({:.0} units/s) on {} threads | policy {} | mapping {} | distribution {} ({}) | clock moved by {}{}",
            self.units,
            self.wall.as_secs_f64(),
            self.units_per_second(),
            self.threads,
            self.policy,
            self.mapping,
            self.distribution,
            self.local_order,
            self.clock,
            if self.numa_alloc_global { "" } else { " | NumaAlloc not global: kernel thread policies used" }
        )?;
        write!(f, "commits {} aborts {}", s.commits, s.total_aborts())?;
        for r in AbortReason::ALL {
            let n = s.aborts_for(r);
            if n > 0 {
                write!(f, " {}={n}", r.name())?;
            }
        }
        writeln!(f)?;
        let t = self.time();
        let total = t.total().as_secs_f64();
        let pc = |d: Duration| if total > 0.0 { 100.0 * d.as_secs_f64() / total } else { 0.0 };
        writeln!(
            f,
            "worker time {total:.3} s: pool {:.1}% | aborted {:.1}% | process {:.1}% | commit {:.1}% | other {:.1}% | idle {:.1}% | setup {:.1}%{} (shares of {} timed units, 1 in {TIME_EVERY}, after {TIME_DENSE_UNITS} units a worker 1 in {TIME_EVERY_LATER}); run set-up {:.3} s, queued {:.6} s",
            pc(t.pool),
            pc(t.aborted),
            pc(t.process),
            pc(t.commit),
            pc(t.other),
            pc(t.idle),
            pc(t.setup),
            if t.untimed.is_zero() { String::new() } else { format!(" | untimed {:.1}%", pc(t.untimed)) },
            t.timed_units,
            self.setup.as_secs_f64(),
            self.queued.as_secs_f64(),
        )?;
        writeln!(
            f,
            "  {:>6} {:>4} {:>4} {:>10} {:>10} {:>9} {:>8} {:>8}",
            "worker", "cpu", "node", "units", "commits", "aborts", "busy s", "idle s"
        )?;
        let opt = |o: Option<usize>| o.map_or("-".to_owned(), |v| v.to_string());
        for w in &self.workers {
            writeln!(
                f,
                "  {:>6} {:>4} {:>4} {:>10} {:>10} {:>9} {:>8.3} {:>8.3}",
                w.index,
                opt(w.cpu),
                opt(w.node),
                w.units,
                w.stats.commits,
                w.stats.total_aborts(),
                w.busy.as_secs_f64(),
                w.idle.as_secs_f64()
            )?;
        }
        let a = self.affinity();
        if a.hinted + a.unresolved > 0 {
            writeln!(f, "  affinity: {a}")?;
        }
        for d in &self.decisions {
            writeln!(f, "  {d}")?;
        }
        for (i, h) in self.helpers.per_helper.iter().enumerate() {
            writeln!(f, "  helper {i}: {h}")?;
        }
        for (i, w) in self.helpers.per_worker.iter().enumerate().filter(|(_, w)| !w.is_empty()) {
            writeln!(f, "  worker {i} counters: {w}")?;
        }
        for n in &self.helpers.notes {
            writeln!(f, "  helpers: {n}")?;
        }
        Ok(())
    }
}
