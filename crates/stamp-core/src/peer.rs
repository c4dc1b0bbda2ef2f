//! The side-by-side comparison with STAMP's C programs on TinySTM: the
//! timings `cargo xtask stamp-vs-c` measures, their medians and ratios,
//! as a table and as the JSON `skelaff experiment --peer` reads back.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Which program ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// STAMP's C program: its sequential build, or its STM build on TinySTM.
    C,
    /// skelaff's port: its sequential version, or the skeleton.
    Skelaff,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::C => "C",
            Side::Skelaff => "skelaff",
        })
    }
}

/// One timed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The workload (`vacation-low`, `kmeans-high`, `yada`, …).
    pub workload: String,
    /// Which program.
    pub side: Side,
    /// Worker threads; `None` for the sequential program.
    pub threads: Option<u32>,
    /// The round (runs of one round are interleaved: every configuration
    /// of every workload runs once per round).
    pub round: u32,
    /// The time the program printed for its timed phase.
    pub seconds: f64,
    /// Whether the program's self-check passed (and it exited with 0).
    pub check_passed: bool,
}

/// The runs of one comparison.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// STAMP's standard inputs (`standard`) or its simulator inputs (`simulator`).
    pub inputs: String,
    /// Every run.
    pub samples: Vec<Sample>,
    /// Notes on the conditions (machine, load, versions).
    pub notes: Vec<String>,
}

/// The median of `v` (`None` when empty).
///
/// # Examples
///
/// ```
/// assert_eq!(skelaff_stamp_core::peer::median(&[3.0, 1.0, 2.0]), Some(2.0));
/// assert_eq!(skelaff_stamp_core::peer::median(&[4.0, 1.0]), Some(2.5));
/// assert_eq!(skelaff_stamp_core::peer::median(&[]), None);
/// ```
pub fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// [`Comparison::merge`]'s refusal: runs measured on other inputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot merge runs on {theirs} inputs with runs on {ours} inputs")]
pub struct OtherInputs {
    /// The inputs of the runs given.
    pub theirs: String,
    /// The inputs of the runs already held.
    pub ours: String,
}

/// The figures of one thread count of one workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadFigures {
    /// Worker threads.
    pub threads: u32,
    /// Median time of the C program on TinySTM.
    pub c: Option<f64>,
    /// Median time of skelaff's skeleton.
    pub skelaff: Option<f64>,
    /// `c / skelaff`: how many times faster skelaff is.
    pub c_over_skelaff: Option<f64>,
    /// C's sequential time over its time here.
    pub c_speedup: Option<f64>,
    /// skelaff's sequential time over its time here.
    pub skelaff_speedup: Option<f64>,
}

/// The figures of one workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The workload.
    pub workload: String,
    /// Median time of STAMP's sequential C program.
    pub c_seq: Option<f64>,
    /// Median time of skelaff's sequential version.
    pub skelaff_seq: Option<f64>,
    /// `c_seq / skelaff_seq`.
    pub seq_ratio: Option<f64>,
    /// Per thread count.
    pub threads: Vec<ThreadFigures>,
    /// Runs behind each median (the least over the configurations).
    pub runs: usize,
    /// Whether every run's self-check passed.
    pub checks_passed: bool,
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

impl Comparison {
    /// The times of one configuration.
    pub fn times(&self, workload: &str, side: Side, threads: Option<u32>) -> Vec<f64> {
        self.samples
            .iter()
            .filter(|s| s.workload == workload && s.side == side && s.threads == threads)
            .map(|s| s.seconds)
            .collect()
    }

    /// The workloads, in order of first appearance.
    pub fn workloads(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in &self.samples {
            if !out.contains(&s.workload) {
                out.push(s.workload.clone());
            }
        }
        out
    }

    /// The thread counts measured.
    pub fn thread_counts(&self) -> Vec<u32> {
        self.samples.iter().filter_map(|s| s.threads).collect::<BTreeSet<_>>().into_iter().collect()
    }

    /// Adds the runs of `other` (measured on the same inputs).
    ///
    /// # Errors
    ///
    /// [`OtherInputs`] when `other` was measured on other inputs.
    pub fn merge(&mut self, other: Comparison) -> Result<(), OtherInputs> {
        if self.samples.is_empty() && self.inputs.is_empty() {
            self.inputs = other.inputs.clone();
        }
        if other.inputs != self.inputs {
            return Err(OtherInputs { theirs: other.inputs, ours: self.inputs.clone() });
        }
        self.samples.extend(other.samples);
        for n in other.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
        Ok(())
    }

    /// The medians and ratios of every workload.
    pub fn rows(&self) -> Vec<Row> {
        let med = |w: &str, side, t| median(&self.times(w, side, t));
        self.workloads()
            .into_iter()
            .map(|w| {
                let (c_seq, skelaff_seq) = (med(&w, Side::C, None), med(&w, Side::Skelaff, None));
                let threads: Vec<ThreadFigures> = self
                    .thread_counts()
                    .into_iter()
                    .map(|t| {
                        let (c, sk) = (med(&w, Side::C, Some(t)), med(&w, Side::Skelaff, Some(t)));
                        ThreadFigures {
                            threads: t,
                            c,
                            skelaff: sk,
                            c_over_skelaff: ratio(c, sk),
                            c_speedup: ratio(c_seq, c),
                            skelaff_speedup: ratio(skelaff_seq, sk),
                        }
                    })
                    .collect();
                let mine: Vec<&Sample> = self.samples.iter().filter(|s| s.workload == w).collect();
                let mut counts = std::collections::BTreeMap::new();
                for s in &mine {
                    *counts.entry((s.side, s.threads)).or_insert(0usize) += 1;
                }
                Row {
                    workload: w.clone(),
                    c_seq,
                    skelaff_seq,
                    seq_ratio: ratio(c_seq, skelaff_seq),
                    threads,
                    runs: counts.values().copied().min().unwrap_or(0),
                    checks_passed: mine.iter().all(|s| s.check_passed),
                }
            })
            .collect()
    }
}

fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

impl fmt::Display for Comparison {
    /// A markdown table: per workload, the sequential medians and their
    /// ratio, then per thread count the medians, C/skelaff, and each
    /// side's speedup over its own sequential program.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let threads = self.thread_counts();
        writeln!(
            f,
            "STAMP (C, TinySTM) vs skelaff, {} inputs: median seconds; C/sk = C time / skelaff time (> 1: skelaff \
             faster); speedup = own sequential / own time",
            self.inputs
        )?;
        write!(f, "| workload | runs | C seq | sk seq | C/sk seq |")?;
        for t in &threads {
            write!(f, " C t{t} | sk t{t} | C/sk t{t} | C speedup t{t} | sk speedup t{t} |")?;
        }
        writeln!(f, " checks |")?;
        write!(f, "|---|---|---|---|---|")?;
        for _ in &threads {
            write!(f, "---|---|---|---|---|")?;
        }
        writeln!(f, "---|")?;
        for r in self.rows() {
            write!(
                f,
                "| {} | {} | {} | {} | {} |",
                r.workload,
                r.runs,
                cell(r.c_seq, 3),
                cell(r.skelaff_seq, 3),
                cell(r.seq_ratio, 2)
            )?;
            for t in &r.threads {
                write!(
                    f,
                    " {} | {} | {} | {} | {} |",
                    cell(t.c, 3),
                    cell(t.skelaff, 3),
                    cell(t.c_over_skelaff, 2),
                    cell(t.c_speedup, 2),
                    cell(t.skelaff_speedup, 2)
                )?;
            }
            writeln!(f, " {} |", if r.checks_passed { "passed" } else { "FAILED" })?;
        }
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(w: &str, side: Side, threads: Option<u32>, round: u32, seconds: f64) -> Sample {
        Sample { workload: w.into(), side, threads, round, seconds, check_passed: true }
    }

    #[test]
    fn rows_take_medians_and_ratios() {
        let mut c = Comparison { inputs: "simulator".into(), ..Comparison::default() };
        for (round, k) in [(0, 1.0), (1, 3.0), (2, 2.0)] {
            c.samples.push(s("yada", Side::C, None, round, 4.0 * k));
            c.samples.push(s("yada", Side::C, Some(2), round, 3.0 * k));
            c.samples.push(s("yada", Side::Skelaff, None, round, 2.0 * k));
            c.samples.push(s("yada", Side::Skelaff, Some(2), round, 1.0 * k));
        }
        let rows = c.rows();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.c_seq, r.skelaff_seq, r.seq_ratio, r.runs), (Some(8.0), Some(4.0), Some(2.0), 3));
        let t = &r.threads[0];
        assert_eq!(
            (t.threads, t.c_over_skelaff, t.c_speedup, t.skelaff_speedup),
            (2, Some(3.0), Some(8.0 / 6.0), Some(2.0))
        );
        let text = c.to_string();
        assert!(
            text.contains("| yada | 3 | 8.000 | 4.000 | 2.00 | 6.000 | 2.000 | 3.00 | 1.33 | 2.00 | passed |"),
            "{text}"
        );
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<Comparison>(&json).unwrap(), c);
    }

    #[test]
    fn merge_refuses_other_inputs() {
        let mut a = Comparison { inputs: "standard".into(), ..Comparison::default() };
        let b = Comparison { inputs: "simulator".into(), ..Comparison::default() };
        let e = a.merge(b).unwrap_err();
        assert_eq!(e.to_string(), "cannot merge runs on simulator inputs with runs on standard inputs");
        let mut e = Comparison::default();
        e.merge(Comparison { inputs: "simulator".into(), samples: vec![s("x", Side::C, None, 0, 1.0)], notes: vec![] })
            .unwrap();
        assert_eq!((e.inputs.as_str(), e.samples.len()), ("simulator", 1));
    }
}
