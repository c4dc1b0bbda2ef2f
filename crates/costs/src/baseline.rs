//! The committed baselines and the rule that judges a count against one.
//!
//! `baseline.json` beside this crate's manifest holds, for each scenario,
//! the operations counted and the instructions they took, with the
//! compiler that built the counted binary. Changing it is a deliberate
//! act: `skelaff-costs update` rewrites it, and the commit that carries it
//! says why the counts moved.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{BaselineError, Error};

/// How much a count may grow over its baseline, in percent, before
/// `check` fails.
pub const LIMIT_PERCENT: f64 = 3.0;

/// The baseline file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// `rustc -V` of the compiler that built the counted binary.
    pub rustc: String,
    /// The build profile and command the counts come from.
    pub built_with: String,
    /// Each scenario's baseline, by name.
    pub scenarios: BTreeMap<String, Entry>,
}

/// One scenario's baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Operations counted.
    pub ops: u64,
    /// Instructions they took.
    pub ir: u64,
}

impl Entry {
    /// Instructions per operation.
    pub fn per_op(&self) -> f64 {
        self.ir as f64 / self.ops.max(1) as f64
    }
}

impl Baseline {
    /// Reads the file at `path`.
    ///
    /// # Errors
    ///
    /// It cannot be read or is not a baseline file.
    pub fn load(path: &Path) -> Result<Baseline, Error> {
        let fail = |e: BaselineError| Error::Baseline { path: path.into(), source: e };
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.into()))?;
        serde_json::from_str(&text).map_err(|e| fail(e.into()))
    }

    /// Writes the file at `path` (pretty-printed, one scenario a line group).
    ///
    /// # Errors
    ///
    /// It cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        let fail = |e: BaselineError| Error::Baseline { path: path.into(), source: e };
        let text = serde_json::to_string_pretty(self).map_err(|e| fail(e.into()))?;
        std::fs::write(path, text + "\n").map_err(|e| fail(e.into()))
    }
}

/// How a count compares with its baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Within [`LIMIT_PERCENT`] above the baseline, or below it.
    Within {
        /// The change in percent (negative: fewer instructions).
        change_percent: f64,
    },
    /// More than [`LIMIT_PERCENT`] above: a regression.
    Grew {
        /// The change in percent.
        change_percent: f64,
    },
    /// No baseline for this scenario.
    NoBaseline,
    /// The baseline counted another number of operations: the scenario
    /// changed, and so must its baseline.
    OtherOps {
        /// The baseline's operations.
        baseline_ops: u64,
    },
}

impl Verdict {
    /// Whether `check` fails on it.
    pub fn fails(&self) -> bool {
        !matches!(self, Verdict::Within { .. })
    }
}

/// Judges `ir` instructions for `ops` operations against `base`.
pub fn judge(base: Option<&Entry>, ops: u64, ir: u64) -> Verdict {
    let Some(base) = base else { return Verdict::NoBaseline };
    if base.ops != ops {
        return Verdict::OtherOps { baseline_ops: base.ops };
    }
    let change_percent = (ir as f64 / base.ir.max(1) as f64 - 1.0) * 100.0;
    // Compare the counts themselves: `ir * 100 > base * (100 + limit)`.
    if u128::from(ir) * 100 > u128::from(base.ir) * (100 + LIMIT_PERCENT as u128) {
        Verdict::Grew { change_percent }
    } else {
        Verdict::Within { change_percent }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_past_the_limit_fails_and_nothing_else_does() {
        let base = Entry { ops: 10, ir: 10_000 };
        assert!(matches!(judge(Some(&base), 10, 10_300), Verdict::Within { .. }), "exactly 3% is allowed");
        assert!(matches!(judge(Some(&base), 10, 10_301), Verdict::Grew { .. }));
        assert!(matches!(judge(Some(&base), 10, 5_000), Verdict::Within { change_percent } if change_percent == -50.0));
        assert_eq!(judge(Some(&base), 20, 10_000), Verdict::OtherOps { baseline_ops: 10 });
        assert_eq!(judge(None, 10, 1), Verdict::NoBaseline);
        assert!(judge(Some(&base), 10, 10_301).fails() && judge(None, 1, 1).fails());
        assert!(!judge(Some(&base), 10, 9_000).fails());
    }

    #[test]
    fn the_committed_baseline_covers_every_scenario() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("baseline.json");
        let b = Baseline::load(&path).unwrap();
        for s in crate::scenario::SCENARIOS {
            let e = b.scenarios.get(s.name).unwrap_or_else(|| panic!("no baseline for {}", s.name));
            assert_eq!(e.ops, s.ops, "{}: the baseline counted other operations", s.name);
        }
        assert_eq!(b.scenarios.len(), crate::scenario::SCENARIOS.len(), "a baseline for a scenario that is gone");
    }
}
