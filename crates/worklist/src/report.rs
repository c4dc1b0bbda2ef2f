//! What a run did: time, units, commits and aborts, per worker, and the
//! decisions the skeleton took.

use std::fmt;
use std::time::Duration;

use serde_json::{Value, json};
use skelaff_stm::{AbortReason, Stats};

/// A decision the skeleton took, and when (since the run started).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Time since the start of the run.
    pub at: Duration,
    /// The worker that took it (`None`: the skeleton, before the workers ran).
    pub worker: Option<usize>,
    /// What was decided, in words.
    pub what: String,
}

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
}

/// Helper-thread figures of a run (filled in by the helper implementation
/// given to [`Worklist::run_with`](crate::Worklist::run_with)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HelperFigures {
    /// Per helper: `(name, value)` pairs, e.g. units shadowed, words prefetched.
    pub per_helper: Vec<Vec<(String, u64)>>,
    /// Per worker, measured on the worker thread by the helper
    /// implementation (e.g. its cache misses or software counters), with
    /// or without a helper; empty for [`Worklist::run`](crate::Worklist::run).
    pub per_worker: Vec<Vec<(String, u64)>>,
    /// Notes (what was placed where, what could not be measured).
    pub notes: Vec<String>,
}

/// The outcome of [`Worklist::run`](crate::Worklist::run).
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// Wall-clock time from the first worker's start to the last one's end.
    pub wall: Duration,
    /// Units processed.
    pub units: u64,
    /// Threads used.
    pub threads: usize,
    /// The page policy that was asked for (`auto` for SkelAff).
    pub policy: String,
    /// The thread mapping.
    pub mapping: String,
    /// The distribution of units.
    pub distribution: String,
    /// Whether `NumaAlloc` is the global allocator, so thread policies apply
    /// to everything the program allocates.
    pub numa_alloc_global: bool,
    /// Per-worker figures.
    pub workers: Vec<WorkerReport>,
    /// Decisions and when they were taken.
    pub decisions: Vec<Decision>,
    /// Helper-thread figures.
    pub helpers: HelperFigures,
}

impl RunReport {
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

    /// Units per second of wall time.
    pub fn units_per_second(&self) -> f64 {
        self.units as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// The report as one JSON object.
    pub fn to_json(&self) -> Value {
        let stats = self.stats();
        let aborts = |s: &Stats| -> Value {
            AbortReason::ALL.iter().map(|r| (r.name().to_owned(), json!(s.aborts_for(*r)))).collect()
        };
        json!({
            "wall_seconds": self.wall.as_secs_f64(),
            "units": self.units,
            "units_per_second": self.units_per_second(),
            "threads": self.threads,
            "policy": self.policy,
            "mapping": self.mapping,
            "distribution": self.distribution,
            "numa_alloc_global": self.numa_alloc_global,
            "commits": stats.commits,
            "aborts": stats.total_aborts(),
            "aborts_by_reason": aborts(&stats),
            "workers": self.workers.iter().map(|w| json!({
                "index": w.index,
                "cpu": w.cpu,
                "node": w.node,
                "units": w.units,
                "commits": w.stats.commits,
                "aborts": w.stats.total_aborts(),
                "aborts_by_reason": aborts(&w.stats),
                "mean_read_set": w.stats.mean_read_set(),
                "mean_write_set": w.stats.mean_write_set(),
                "busy_seconds": w.busy.as_secs_f64(),
                "idle_seconds": w.idle.as_secs_f64(),
            })).collect::<Vec<_>>(),
            "decisions": self.decisions.iter().map(|d| json!({
                "at_seconds": d.at.as_secs_f64(),
                "worker": d.worker,
                "what": d.what,
            })).collect::<Vec<_>>(),
            "helpers": {
                "per_helper": self.helpers.per_helper.iter().map(|h| h.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>()).collect::<Vec<_>>(),
                "per_worker": self.helpers.per_worker.iter().map(|h| h.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>()).collect::<Vec<_>>(),
                "notes": self.helpers.notes,
            },
        })
    }
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.stats();
        writeln!(
            f,
            "{} units in {:.3} s ({:.0} units/s) on {} threads | policy {} | mapping {} | distribution {}{}",
            self.units,
            self.wall.as_secs_f64(),
            self.units_per_second(),
            self.threads,
            self.policy,
            self.mapping,
            self.distribution,
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
        for d in &self.decisions {
            let who = d.worker.map_or("skeleton".to_owned(), |w| format!("worker {w}"));
            writeln!(f, "  [{:>9.6} s] {who}: {}", d.at.as_secs_f64(), d.what)?;
        }
        for (i, h) in self.helpers.per_helper.iter().enumerate() {
            let items: Vec<String> = h.iter().map(|(k, v)| format!("{k}={v}")).collect();
            writeln!(f, "  helper {i}: {}", items.join(" "))?;
        }
        for (i, w) in self.helpers.per_worker.iter().enumerate().filter(|(_, w)| !w.is_empty()) {
            let items: Vec<String> = w.iter().map(|(k, v)| format!("{k}={v}")).collect();
            writeln!(f, "  worker {i} counters: {}", items.join(" "))?;
        }
        for n in &self.helpers.notes {
            writeln!(f, "  helpers: {n}")?;
        }
        Ok(())
    }
}
