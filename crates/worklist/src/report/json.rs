//! The JSON form of a [`RunReport`]: derived views that borrow the report
//! and add what is computed from it (units per second, the totals over the
//! workers, each worker's mean set sizes, each decision's text, the time
//! breakdowns in seconds with their shares).

use serde::{Serialize, Serializer};
use skelaff_stm::{AbortsByReason, Stats};

use super::{DecisionAt, HelpersReport, RunReport, TimeBreakdown, WorkerReport};
use crate::affinity::AffinityFigures;
use crate::config::PagePolicy;
use crate::pool::{Distribution, LocalOrder};

/// A run report as `--json` prints it.
#[derive(Serialize)]
struct ReportJson<'a> {
    wall_seconds: f64,
    setup_seconds: f64,
    queued_seconds: f64,
    /// Summed over the workers.
    time: TimeJson,
    units: u64,
    units_per_second: f64,
    threads: usize,
    policy: PagePolicy,
    mapping: &'a str,
    distribution: Distribution,
    local_order: LocalOrder,
    clock: skelaff_stm::ClockPolicy,
    numa_alloc_global: bool,
    /// Summed over the workers.
    commits: u64,
    aborts: u64,
    aborts_by_reason: AbortsByReason<'a>,
    workers: Vec<WorkerJson<'a>>,
    decisions: Vec<DecisionJson<'a>>,
    helpers: &'a HelpersReport,
    /// Summed over the workers.
    affinity: AffinityFigures,
}

/// One worker's figures.
#[derive(Serialize)]
struct WorkerJson<'a> {
    index: usize,
    cpu: Option<usize>,
    node: Option<usize>,
    units: u64,
    commits: u64,
    aborts: u64,
    aborts_by_reason: AbortsByReason<'a>,
    mean_read_set: f64,
    mean_write_set: f64,
    busy_seconds: f64,
    idle_seconds: f64,
    time: TimeJson,
}

/// A time breakdown in seconds, with each part's share of the worker time.
#[derive(Serialize)]
struct TimeJson {
    timed_units: u64,
    units: u64,
    timed_seconds: f64,
    worker_seconds: f64,
    seconds: PartsJson,
    shares: PartsJson,
}

/// The parts of a breakdown (in seconds, or as shares of the worker time).
#[derive(Serialize)]
struct PartsJson {
    setup: f64,
    pool: f64,
    aborted: f64,
    process: f64,
    commit: f64,
    other: f64,
    untimed: f64,
    idle: f64,
}

impl PartsJson {
    /// `t`'s parts, each mapped by `f` from its seconds.
    fn new(t: &TimeBreakdown, f: impl Fn(f64) -> f64) -> Self {
        let s = |d: std::time::Duration| f(d.as_secs_f64());
        PartsJson {
            setup: s(t.setup),
            pool: s(t.pool),
            aborted: s(t.aborted),
            process: s(t.process),
            commit: s(t.commit),
            other: s(t.other),
            untimed: s(t.untimed),
            idle: s(t.idle),
        }
    }
}

impl TimeJson {
    fn new(t: &TimeBreakdown) -> Self {
        let total = t.total().as_secs_f64();
        TimeJson {
            timed_units: t.timed_units,
            units: t.units,
            timed_seconds: t.timed.as_secs_f64(),
            worker_seconds: total,
            seconds: PartsJson::new(t, |s| s),
            shares: PartsJson::new(t, |s| if total > 0.0 { s / total } else { 0.0 }),
        }
    }
}

/// One decision, with its text as the report's table prints it.
#[derive(Serialize)]
struct DecisionJson<'a> {
    at_seconds: f64,
    worker: Option<usize>,
    decision: &'a super::Decision,
    text: String,
}

impl<'a> WorkerJson<'a> {
    fn new(w: &'a WorkerReport) -> Self {
        WorkerJson {
            index: w.index,
            cpu: w.cpu,
            node: w.node,
            units: w.units,
            commits: w.stats.commits,
            aborts: w.stats.total_aborts(),
            aborts_by_reason: w.stats.aborts_by_reason(),
            mean_read_set: w.stats.mean_read_set(),
            mean_write_set: w.stats.mean_write_set(),
            busy_seconds: w.busy.as_secs_f64(),
            idle_seconds: w.idle.as_secs_f64(),
            time: TimeJson::new(&w.time),
        }
    }
}

impl<'a> DecisionJson<'a> {
    fn new(d: &'a DecisionAt) -> Self {
        DecisionJson {
            at_seconds: d.at.as_secs_f64(),
            worker: d.worker,
            decision: &d.decision,
            text: d.decision.to_string(),
        }
    }
}

impl<'a> ReportJson<'a> {
    /// `stats` is `r.stats()`, which the view borrows for its
    /// `aborts_by_reason`.
    fn new(r: &'a RunReport, stats: &'a Stats) -> Self {
        ReportJson {
            wall_seconds: r.wall.as_secs_f64(),
            setup_seconds: r.setup.as_secs_f64(),
            queued_seconds: r.queued.as_secs_f64(),
            time: TimeJson::new(&r.time()),
            units: r.units,
            units_per_second: r.units_per_second(),
            threads: r.threads,
            policy: r.policy,
            mapping: &r.mapping,
            distribution: r.distribution,
            local_order: r.local_order,
            clock: r.clock,
            numa_alloc_global: r.numa_alloc_global,
            commits: stats.commits,
            aborts: stats.total_aborts(),
            aborts_by_reason: stats.aborts_by_reason(),
            workers: r.workers.iter().map(WorkerJson::new).collect(),
            decisions: r.decisions.iter().map(DecisionJson::new).collect(),
            helpers: &r.helpers,
            affinity: r.affinity(),
        }
    }
}

/// The report's JSON form: `wall_seconds`, `setup_seconds`, `queued_seconds`, `time` (the
/// workers' [`TimeBreakdown`] summed: `timed_units`, `units`,
/// `timed_seconds`, `worker_seconds`, and each part's `seconds` and
/// `shares`), `units`, `units_per_second`, `threads`, `policy`, `mapping`,
/// `distribution`, `numa_alloc_global`, `commits`, `aborts` and
/// `aborts_by_reason` (summed over the workers), `workers` (each with
/// `index`, `cpu`, `node`, `units`, `commits`, `aborts`,
/// `aborts_by_reason`, `mean_read_set`, `mean_write_set`, `busy_seconds`,
/// `idle_seconds`, `time`), `decisions` (each with `at_seconds`,
/// `worker`, the tagged `decision` and its `text`), `helpers` and
/// `affinity` (summed). The access profile is not part of it (it has its
/// own file format).
impl Serialize for RunReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let stats = self.stats();
        ReportJson::new(self, &stats).serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use skelaff_stm::AbortReason;

    use super::super::{Decision, HelpersReport};
    use super::*;

    /// A report whose every figure is known.
    fn known() -> RunReport {
        let mut stats =
            Stats { commits: 10, read_only_commits: 2, read_set_total: 40, write_set_total: 5, ..Stats::default() };
        stats.aborts[AbortReason::ValidateOnCommit as usize] = 3;
        let worker = |index, stats: Stats| WorkerReport {
            index,
            cpu: Some(index * 2),
            node: Some(0),
            units: 8,
            stats,
            busy: Duration::from_millis(1500),
            idle: Duration::from_millis(250),
            affinity: AffinityFigures { hinted: 4, ..AffinityFigures::default() },
            time: TimeBreakdown {
                timed_units: 1,
                units: 8,
                timed: Duration::from_millis(100),
                pool: Duration::from_millis(500),
                process: Duration::from_millis(1000),
                idle: Duration::from_millis(250),
                setup: Duration::from_millis(250),
                ..TimeBreakdown::default()
            },
        };
        RunReport {
            wall: Duration::from_secs(2),
            setup: Duration::from_millis(125),
            queued: Duration::from_millis(5),
            units: 16,
            threads: 2,
            policy: PagePolicy::Bind,
            mapping: "scatter".to_owned(),
            distribution: Distribution::PerNode,
            local_order: LocalOrder::Fifo,
            clock: skelaff_stm::ClockPolicy::Commits,
            numa_alloc_global: false,
            workers: vec![worker(0, stats.clone()), worker(1, Stats { commits: 6, ..Stats::default() })],
            decisions: vec![DecisionAt {
                at: Duration::from_millis(500),
                worker: Some(1),
                decision: Decision::BoundToNode { node: 0 },
            }],
            helpers: HelpersReport::default(),
            access_profile: None,
        }
    }

    #[test]
    fn the_json_keeps_every_key_and_value_of_the_hand_written_form() {
        let reasons = |n: u64| -> serde_json::Value {
            AbortReason::ALL
                .iter()
                .map(|r| (r.name().to_owned(), json!(if *r == AbortReason::ValidateOnCommit { n } else { 0 })))
                .collect()
        };
        // The parts are setup, pool, aborted, process, commit, other, untimed, idle.
        let time = |n: u64| {
            let parts = |s: [f64; 8]| -> serde_json::Value {
                let names = ["setup", "pool", "aborted", "process", "commit", "other", "untimed", "idle"];
                names.iter().zip(s).map(|(k, v)| ((*k).to_owned(), json!(v))).collect()
            };
            let n_f = n as f64;
            json!({
                "timed_units": n,
                "units": 8 * n,
                "timed_seconds": 0.1 * n_f,
                "worker_seconds": 2.0 * n_f,
                "seconds": parts([0.25 * n_f, 0.5 * n_f, 0.0, 1.0 * n_f, 0.0, 0.0, 0.0, 0.25 * n_f]),
                "shares": parts([0.125, 0.25, 0.0, 0.5, 0.0, 0.0, 0.0, 0.125]),
            })
        };
        let worker = |index: usize, commits: u64, aborts: u64, mean_read: f64, mean_write: f64| {
            json!({
                "index": index, "cpu": index * 2, "node": 0, "units": 8, "commits": commits,
                "aborts": aborts, "aborts_by_reason": reasons(aborts),
                "mean_read_set": mean_read, "mean_write_set": mean_write,
                "busy_seconds": 1.5, "idle_seconds": 0.25, "time": time(1),
            })
        };
        // What the hand-written `json!` of commit d7822d1 gave for this report,
        // and `queued_seconds`, `local_order` and `clock` (new since).
        let before = json!({
            "wall_seconds": 2.0,
            "setup_seconds": 0.125,
            "queued_seconds": 0.005,
            "time": time(2),
            "units": 16,
            "units_per_second": 8.0,
            "threads": 2,
            "policy": "bind",
            "mapping": "scatter",
            "distribution": "per-node",
            "local_order": "fifo",
            "clock": "commits",
            "numa_alloc_global": false,
            "commits": 16,
            "aborts": 3,
            "aborts_by_reason": reasons(3),
            "workers": [worker(0, 10, 3, 4.0, 0.5), worker(1, 6, 0, 0.0, 0.0)],
            "decisions": [{
                "at_seconds": 0.5,
                "worker": 1,
                "decision": {"kind": "bound_to_node", "node": 0},
                "text": "SkelAff: page policy bind to node 0",
            }],
            "helpers": serde_json::to_value(HelpersReport::default()).unwrap(),
            "affinity": serde_json::to_value(AffinityFigures { hinted: 8, ..AffinityFigures::default() }).unwrap(),
        });
        assert_eq!(known().to_json(), before);
    }

    #[test]
    fn the_keys_come_in_the_order_they_are_listed() {
        let text = serde_json::to_string(&known()).unwrap();
        let at = |key: &str| text.find(&format!("\"{key}\":")).unwrap_or_else(|| panic!("no `{key}` in {text}"));
        let order =
            ["wall_seconds", "setup_seconds", "time", "units_per_second", "threads", "workers", "decisions", "helpers"];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
    }
}
