//! The locality report: one table per application and machine, rows for
//! each measured policy and each modelled scheme, columns local fraction,
//! imbalance and cost relative to first touch.
//!
//! A run (one application under one policy in one guest) is summarised as a
//! [`RunLocality`] — its measured figures and, for a profiling run, the
//! schemes computed from its profile — and printed as JSON; the report
//! gathers those into [`LocalityTable`]s.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::cost::{CostModel, LocalityFigures};
use crate::error::Result;
use crate::profile::Profile;
use crate::schemes::{MigrationRule, Scheme};

/// Whether a row was measured in a run or computed from a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RowKind {
    /// The kernel placed the pages; the figures count where they were.
    Measured,
    /// A scheme applied to a profile's accesses.
    Modelled,
}

skelaff_numa_alloc::enum_names! {
    RowKind {
        Measured => "measured",
        Modelled => "modelled",
    }
    parse: crate::Error = unknown_row_kind;
}

fn unknown_row_kind(given: &str) -> crate::Error {
    crate::Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "row kind",
        given: given.to_owned(),
        allowed: RowKind::VARIANTS,
    })
}

/// One scheme's figures on a profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SchemeFigures {
    /// The scheme.
    pub scheme: Scheme,
    /// Its figures.
    pub figures: LocalityFigures,
}

/// What one run reports (a guest prints it as one JSON line).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunLocality {
    /// The application.
    pub app: String,
    /// The machine's name.
    pub machine: String,
    /// Threads.
    pub threads: u16,
    /// The policy or applied scheme of the run.
    pub placement: String,
    /// Where the run's sampled accesses landed (when they were attributed).
    pub measured: Option<LocalityFigures>,
    /// The schemes computed from the run's profile.
    pub modelled: Vec<SchemeFigures>,
}

impl RunLocality {
    /// The measured figures of `profile` and, with `schemes`, those schemes
    /// computed from it.
    ///
    /// # Errors
    ///
    /// [`Error::EmptyProfile`](crate::Error::EmptyProfile) when the profile has no access.
    pub fn from_profile(
        profile: &Profile,
        schemes: &[Scheme],
        rule: &MigrationRule,
        model: &CostModel,
    ) -> Result<RunLocality> {
        let h = profile.header();
        let measured = match profile.measured(model) {
            Ok(f) => Some(f),
            Err(crate::Error::EmptyProfile { .. }) if !profile.accesses().is_empty() => None,
            Err(e) => return Err(e),
        };
        let modelled = schemes
            .iter()
            .map(|&scheme| Ok(SchemeFigures { scheme, figures: profile.scheme(scheme, rule, model)? }))
            .collect::<Result<_>>()?;
        Ok(RunLocality {
            app: h.app.clone(),
            machine: h.machine.name().to_owned(),
            threads: h.threads,
            placement: h.placement.clone(),
            measured,
            modelled,
        })
    }
}

/// A row of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalityRow {
    /// The policy or scheme.
    pub label: String,
    /// Measured or modelled.
    pub kind: RowKind,
    /// Its figures.
    pub figures: LocalityFigures,
    /// Cost per access over the first-touch row's (measured first-touch
    /// when the table has it, else the first-touch scheme).
    pub cost_vs_first_touch: Option<f64>,
}

/// One application on one machine.
///
/// # Examples
///
/// ```
/// use skelaff_locality::{PageAccess, CostModel, LocalityTable, MigrationRule, Profile, ProfileHeader, RunLocality, Scheme};
///
/// let h = ProfileHeader::new("2x1".parse()?, "demo", "first-touch", 2);
/// let p = Profile::new(h, vec![PageAccess::write(1, 0, 0, 0).at_home(0), PageAccess::read(1, 1, 1, 1).at_home(0)])?;
/// let run = RunLocality::from_profile(&p, &[Scheme::FirstTouch, Scheme::Ideal], &MigrationRule::default(), &CostModel::default())?;
/// let tables = LocalityTable::gather(&[run]);
/// assert_eq!(tables.len(), 1);
/// assert_eq!(tables[0].rows.len(), 3); // measured first-touch, modelled first-touch and ideal
/// assert!(tables[0].to_string().contains("| ideal | modelled | 1.000 |"));
/// # Ok::<(), skelaff_locality::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalityTable {
    /// The application.
    pub app: String,
    /// The machine.
    pub machine: String,
    /// Threads.
    pub threads: u16,
    /// Measured rows first (in the order the runs came), then modelled ones.
    pub rows: Vec<LocalityRow>,
}

impl LocalityTable {
    /// Groups runs into one table per (application, machine, threads), in
    /// the order the groups first appear.
    pub fn gather(runs: &[RunLocality]) -> Vec<LocalityTable> {
        let mut order = Vec::new();
        let mut groups: BTreeMap<(String, String, u16), Vec<&RunLocality>> = BTreeMap::new();
        for r in runs {
            let key = (r.app.clone(), r.machine.clone(), r.threads);
            if !groups.contains_key(&key) {
                order.push(key.clone());
            }
            groups.entry(key).or_default().push(r);
        }
        order
            .into_iter()
            .map(|key| {
                let runs = &groups[&key];
                let mut rows: Vec<LocalityRow> = runs
                    .iter()
                    .filter_map(|r| {
                        let figures = r.measured.clone()?;
                        Some(LocalityRow {
                            label: r.placement.clone(),
                            kind: RowKind::Measured,
                            figures,
                            cost_vs_first_touch: None,
                        })
                    })
                    .collect();
                for r in runs {
                    for s in &r.modelled {
                        let label = modelled_label(s.scheme, &r.placement);
                        if !rows.iter().any(|x| x.kind == RowKind::Modelled && x.label == label) {
                            rows.push(LocalityRow {
                                label,
                                kind: RowKind::Modelled,
                                figures: s.figures.clone(),
                                cost_vs_first_touch: None,
                            });
                        }
                    }
                }
                let ft = Scheme::FirstTouch.to_string();
                let base = rows
                    .iter()
                    .find(|r| r.kind == RowKind::Measured && r.label == ft)
                    .or_else(|| rows.iter().find(|r| r.label == ft))
                    .map(|r| r.figures.clone());
                for r in &mut rows {
                    r.cost_vs_first_touch = base.as_ref().map(|b| r.figures.relative_cost(b));
                }
                let (app, machine, threads) = key;
                LocalityTable { app, machine, threads, rows }
            })
            .collect()
    }

    /// The row with this label and kind.
    pub fn row(&self, label: &str, kind: RowKind) -> Option<&LocalityRow> {
        self.rows.iter().find(|r| r.label == label && r.kind == kind)
    }

    /// The row of `scheme` modelled on the accesses of the run under
    /// `placement` (see [`modelled_label`]).
    pub fn modelled_on(&self, scheme: Scheme, placement: &str) -> Option<&LocalityRow> {
        self.row(&modelled_label(scheme, placement), RowKind::Modelled)
    }
}

/// The label of `scheme`'s row when modelled on the accesses of the run
/// under `placement`: the scheme's name for first touch's run (the
/// profiling pass the NUCA study computes its schemes from), else the
/// scheme's name followed by whose accesses it was modelled on, e.g.
/// `oracle-high on auto`. A scheme on a policy's own accesses is the best
/// that scheme could have done for exactly those accesses, so SkelAff's
/// measured row can be set against it without the difference in the
/// accessors' mix between two runs.
///
/// # Examples
///
/// ```
/// use skelaff_locality::{Scheme, modelled_label};
///
/// assert_eq!(modelled_label(Scheme::OracleHigh, "first-touch"), "oracle-high");
/// assert_eq!(modelled_label(Scheme::OracleHigh, "auto"), "oracle-high on auto");
/// ```
pub fn modelled_label(scheme: Scheme, placement: &str) -> String {
    if placement == Scheme::FirstTouch.to_string() { scheme.to_string() } else { format!("{scheme} on {placement}") }
}

impl fmt::Display for LocalityTable {
    /// A markdown table.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} on {}, {} threads", self.app, self.machine, self.threads)?;
        writeln!(f, "| placement | source | local fraction | imbalance | cost vs first-touch | sampled accesses |")?;
        writeln!(f, "|---|---|---:|---:|---:|---:|")?;
        for r in &self.rows {
            let rel = r.cost_vs_first_touch.map_or_else(|| "-".to_owned(), |c| format!("{c:.3}"));
            writeln!(
                f,
                "| {} | {} | {:.3} | {:.2} | {} | {} |",
                r.label, r.kind, r.figures.local_fraction, r.figures.imbalance, rel, r.figures.accesses
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{PageAccess, ProfileHeader};

    fn run(placement: &str, home: u16, schemes: &[Scheme]) -> RunLocality {
        let h = ProfileHeader::new("2x1".parse().unwrap(), "app", placement, 2);
        let p = Profile::new(
            h,
            vec![
                PageAccess::write(1, 0, 0, 0).at_home(home),
                PageAccess::read(1, 1, 1, 1).at_home(home),
                PageAccess::read(2, 1, 1, 2).at_home(home),
            ],
        )
        .unwrap();
        RunLocality::from_profile(&p, schemes, &MigrationRule::default(), &CostModel::default()).unwrap()
    }

    #[test]
    fn rows_are_relative_to_measured_first_touch() {
        let runs = [
            run("first-touch", 0, &[Scheme::FirstTouch, Scheme::OracleHigh]),
            run("bind", 1, &[]),
            run("auto", 1, &[Scheme::OracleHigh]),
        ];
        let t = &LocalityTable::gather(&runs)[0];
        let labels: Vec<(&str, RowKind)> = t.rows.iter().map(|r| (r.label.as_str(), r.kind)).collect();
        assert_eq!(
            labels,
            [
                ("first-touch", RowKind::Measured),
                ("bind", RowKind::Measured),
                ("auto", RowKind::Measured),
                ("first-touch", RowKind::Modelled),
                ("oracle-high", RowKind::Modelled),
                ("oracle-high on auto", RowKind::Modelled)
            ]
        );
        // Oracle_High on auto's own accesses (all on node 1 there): page 1
        // (one access from each node; the tie goes to the lowest node) on
        // node 0, page 2 on node 1: the same as modelled first touch.
        let own = t.modelled_on(Scheme::OracleHigh, "auto").unwrap();
        assert_eq!(own.label, "oracle-high on auto");
        assert!((own.cost_vs_first_touch.unwrap() - 4.5 / 6.5).abs() < 1e-12);
        assert_eq!(t.modelled_on(Scheme::OracleHigh, "first-touch").unwrap().label, "oracle-high");
        assert!(t.modelled_on(Scheme::OracleHigh, "bind").is_none());
        // Measured first touch: all on node 0: local 1 of 3; distance 1+2+2 = 5; loads [3,0]: excess 1.5.
        // Bind to node 1: local 2 of 3; distance 2+1+1 = 4; excess 1.5.
        let bind = t.row("bind", RowKind::Measured).unwrap();
        assert!((bind.cost_vs_first_touch.unwrap() - 5.5 / 6.5).abs() < 1e-12);
        assert_eq!(t.row("first-touch", RowKind::Measured).unwrap().cost_vs_first_touch, Some(1.0));
        // Modelled first touch (page 1 on node 0, page 2 on node 1): local 2 of 3, loads [2,1]:
        // distance 1 + 2 + 1 = 4, excess 0.5 -> 4.5 / 6.5.
        let rel = t.row("first-touch", RowKind::Modelled).unwrap().cost_vs_first_touch.unwrap();
        assert!((rel - 4.5 / 6.5).abs() < 1e-12, "{rel}");
        let text = t.to_string();
        assert!(text.contains("| bind | measured | 0.667 | 2.00 | 0.846 | 3 |"), "{text}");
        let json = serde_json::to_string(&runs[0]).unwrap();
        assert_eq!(serde_json::from_str::<RunLocality>(&json).unwrap(), runs[0]);
    }
}
