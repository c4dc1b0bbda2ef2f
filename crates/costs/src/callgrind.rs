//! Running a scenario under callgrind and reading what it counted.
//!
//! The scenario runs in a child process, this same binary with
//! `measure NAME`, under `valgrind --tool=callgrind --collect-atstart=no
//! --toggle-collect=*costs_measured*`: collection is on only inside
//! [`costs_measured`](crate::scenario::costs_measured) and what it calls,
//! so the set-up is not counted. Callgrind executes the program on a
//! simulated CPU and counts the instructions executed: the same binary,
//! input and environment give the same count on every run, however busy
//! the machine is.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::Error;

/// What callgrind counted inside the measured function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counted {
    /// Instructions executed.
    pub ir: u64,
    /// Simulated first-level data-cache read misses (with `cache_sim`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d1_read_misses: Option<u64>,
    /// Simulated last-level data read misses (with `cache_sim`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ll_read_misses: Option<u64>,
}

/// Runs scenario `name` of the executable `exe` under callgrind, with its
/// cache simulation when `cache_sim`.
///
/// # Errors
///
/// valgrind cannot be started, the scenario failed (its check, or a
/// crash), or callgrind's output cannot be read.
pub fn count(exe: &Path, name: &str, cache_sim: bool) -> Result<Counted, Error> {
    let out = out_file(name);
    let mut cmd = Command::new("valgrind");
    cmd.arg("--tool=callgrind")
        .arg("--collect-atstart=no")
        .arg("--toggle-collect=*costs_measured*")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(format!("--cache-sim={}", if cache_sim { "yes" } else { "no" }))
        .arg(exe)
        .args(["measure", name]);
    let output = cmd.output().map_err(|e| Error::Valgrind { source: e })?;
    let text = std::fs::read_to_string(&out);
    let _ = std::fs::remove_file(&out);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().rfind(|l| !l.starts_with("==")).unwrap_or("").to_owned();
        return Err(Error::Scenario { name: name.to_owned(), status: output.status.to_string(), last });
    }
    let text = text.map_err(|e| Error::Output { path: out.clone(), source: e.into() })?;
    parse(&text).map_err(|e| Error::Output { path: out, source: e.into() })
}

/// A file name of this process for scenario `name`'s callgrind output.
fn out_file(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("skelaff-costs-{}-{name}.callgrind", std::process::id()))
}

/// The counts of a callgrind output file: its `events:` line names the
/// columns of its `summary:` (or, failing that, `totals:`) line.
///
/// # Errors
///
/// A line is missing or is not numbers.
pub fn parse(text: &str) -> Result<Counted, ParseError> {
    let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
    let events: Vec<&str> = field("events:").ok_or(ParseError::Missing("`events:` line"))?.split_whitespace().collect();
    let totals =
        field("summary:").or_else(|| field("totals:")).ok_or(ParseError::Missing("`summary:` or `totals:` line"))?;
    let values: Vec<u64> = totals
        .split_whitespace()
        .map(|v| v.parse::<u64>().map_err(|source| ParseError::Total { given: v.to_owned(), source }))
        .collect::<Result<_, _>>()?;
    // Callgrind leaves out trailing zero columns.
    let get = |name: &str| events.iter().position(|e| *e == name).map(|i| values.get(i).copied().unwrap_or(0));
    let ir = get("Ir").ok_or(ParseError::Missing("`Ir` event"))?;
    Ok(Counted { ir, d1_read_misses: get("D1mr"), ll_read_misses: get("DLmr") })
}

/// What is wrong with a callgrind output file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A line or event it must have is not there.
    #[error("no {0}")]
    Missing(&'static str),
    /// A value of the totals that is not a count.
    #[error("`{given}` in the totals is not a count")]
    Total {
        /// The value.
        given: String,
        /// Why it does not parse.
        source: std::num::ParseIntError,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_summary_and_events() {
        let c = parse("version: 1\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\nsummary: 100 40 20 1 7 2 1 3\n")
            .unwrap();
        assert_eq!(c, Counted { ir: 100, d1_read_misses: Some(7), ll_read_misses: Some(3) });
        let c = parse("events: Ir\ntotals: 12345\n").unwrap();
        assert_eq!(c, Counted { ir: 12345, d1_read_misses: None, ll_read_misses: None });
        // A trailing zero column is left out by callgrind.
        let c = parse("events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\nsummary: 5 1 1 0 2\n").unwrap();
        assert_eq!(c.ll_read_misses, Some(0));
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(parse("summary: 5\n").unwrap_err().to_string().contains("events"));
        assert!(parse("events: Ir\n").unwrap_err().to_string().contains("summary"));
        assert!(parse("events: Ir\nsummary: x\n").unwrap_err().to_string().contains("`x`"));
        assert!(parse("events: Dr\nsummary: 5\n").unwrap_err().to_string().contains("Ir"));
    }
}
