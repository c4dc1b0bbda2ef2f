//! The experiment's measurements: a [`Row`] per run, a [`Summary`] per
//! configuration ([`summarize`]). Below both `experiment`, which takes
//! them, and `plot`, which draws them.

use std::collections::BTreeMap;

use serde::Serialize;
use skelaff::stamp::peer::median;

/// One run of one configuration.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    pub(crate) app: &'static str,
    /// `sequential` or a page policy.
    pub(crate) policy: String,
    pub(crate) threads: usize,
    pub(crate) run: u32,
    pub(crate) seconds: f64,
    pub(crate) units: u64,
    pub(crate) commits: u64,
    pub(crate) aborts: u64,
    pub(crate) check_passed: bool,
}

/// The summary of one configuration.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Summary {
    pub(crate) app: &'static str,
    pub(crate) policy: String,
    pub(crate) threads: usize,
    pub(crate) median_seconds: f64,
    pub(crate) min_seconds: f64,
    pub(crate) max_seconds: f64,
    /// Median sequential time over this median.
    pub(crate) speedup: Option<f64>,
}

/// Summaries by (app, policy, threads).
pub(crate) type Summaries = BTreeMap<(&'static str, String, usize), Summary>;

/// Medians, extremes and speedups (over the median sequential time) of
/// every configuration.
pub(crate) fn summarize(rows: &[Row]) -> Summaries {
    let mut times: BTreeMap<(&'static str, String, usize), Vec<f64>> = BTreeMap::new();
    for r in rows {
        times.entry((r.app, r.policy.clone(), r.threads)).or_default().push(r.seconds);
    }
    let seq: BTreeMap<&str, f64> = times
        .iter()
        .filter(|((_, p, _), _)| p == "sequential")
        .filter_map(|((a, _, _), v)| median(v).map(|m| (*a, m)))
        .collect();
    times
        .into_iter()
        .filter_map(|((app, policy, threads), v)| {
            let m = median(&v)?;
            let summary = Summary {
                app,
                policy: policy.clone(),
                threads,
                median_seconds: m,
                min_seconds: v.iter().copied().fold(f64::INFINITY, f64::min),
                max_seconds: v.iter().copied().fold(0.0, f64::max),
                speedup: seq.get(app).filter(|_| m > 0.0).map(|s| s / m),
            };
            Some(((app, policy, threads), summary))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(policy: &str, threads: usize, run: u32, seconds: f64) -> Row {
        Row {
            app: "yada",
            policy: policy.into(),
            threads,
            run,
            seconds,
            units: 0,
            commits: 0,
            aborts: 0,
            check_passed: true,
        }
    }

    #[test]
    fn speedups_divide_the_median_sequential_time_by_each_median() {
        let rows = [
            row("sequential", 1, 0, 1.0),
            row("sequential", 1, 1, 3.0),
            row("sequential", 1, 2, 2.0),
            row("auto", 2, 0, 0.5),
            row("auto", 2, 1, 4.0),
            row("auto", 2, 2, 1.0),
        ];
        let s = summarize(&rows);
        let auto = &s[&("yada", "auto".to_owned(), 2)];
        assert_eq!((auto.median_seconds, auto.min_seconds, auto.max_seconds), (1.0, 0.5, 4.0));
        assert_eq!(auto.speedup, Some(2.0));
        assert_eq!(s[&("yada", "sequential".to_owned(), 1)].speedup, Some(1.0));
    }
}
