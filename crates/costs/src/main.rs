//! `skelaff-costs`: counts the STM's per-operation costs under callgrind
//! and compares them with the committed baselines (see the crate docs).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde::Serialize;

use skelaff_costs::Error;
use skelaff_costs::baseline::{self, Baseline, Entry, Verdict};
use skelaff_costs::callgrind::{self, Counted};
use skelaff_costs::scenario::{self, SCENARIOS, Scenario};

/// The STM's instruction-count guard.
#[derive(Debug, Parser)]
#[command(name = "skelaff-costs")]
struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Counts every scenario (or those named) and fails when one grew by
    /// more than 3% over its baseline.
    Check {
        /// The scenarios (default: all).
        scenarios: Vec<String>,
        /// The baseline file.
        #[arg(long, default_value_os_t = default_baseline())]
        baseline: PathBuf,
        /// Print one JSON object as the last line.
        #[arg(long)]
        json: bool,
    },
    /// Counts the scenarios (or those named) and writes their baselines.
    Update {
        /// The scenarios (default: all).
        scenarios: Vec<String>,
        /// The baseline file.
        #[arg(long, default_value_os_t = default_baseline())]
        baseline: PathBuf,
    },
    /// Counts and prints per operation, without judging.
    Show {
        /// The scenarios (default: all).
        scenarios: Vec<String>,
        /// Also simulate the caches (D1 and last-level read misses; slower).
        #[arg(long)]
        cache_sim: bool,
        /// Print one JSON object as the last line.
        #[arg(long)]
        json: bool,
    },
    /// Lists the scenarios.
    List,
    /// Runs one scenario (what callgrind runs; not useful by hand).
    Measure {
        /// The scenario.
        scenario: String,
    },
}

/// Prints a line to standard output; a closed output (`| head`) stops the
/// printing, not the work (and never panics, as `println!` would).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

fn default_baseline() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("baseline.json")
}

const RUSTC: &str = env!("COSTS_RUSTC");
/// How the counted binary is built (what the baseline's counts belong to).
const BUILT_WITH: &str = "cargo run -p skelaff-costs --profile costs (release without LTO for the counted crates, opt-level 0 for the others)";

fn selected(names: &[String]) -> Result<Vec<&'static Scenario>, Error> {
    if names.is_empty() {
        return Ok(SCENARIOS.iter().collect());
    }
    names
        .iter()
        .map(|n| {
            scenario::find(n).ok_or_else(|| Error::UnknownScenario {
                given: n.clone(),
                known: SCENARIOS.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
            })
        })
        .collect()
}

fn count(s: &Scenario, cache_sim: bool) -> Result<Counted, Error> {
    let exe = std::env::current_exe().map_err(|e| Error::Valgrind { source: e })?;
    callgrind::count(&exe, s.name, cache_sim)
}

/// One scenario's line of `check`.
#[derive(Debug, Serialize)]
struct Row {
    scenario: &'static str,
    ops: u64,
    ir: u64,
    ir_per_op: f64,
    baseline_ir_per_op: Option<f64>,
    #[serde(flatten)]
    verdict: Verdict,
}

#[derive(Debug, Serialize)]
struct CheckReport {
    benchmark: &'static str,
    limit_percent: f64,
    rustc: &'static str,
    baseline_rustc: String,
    rows: Vec<Row>,
    ok: bool,
}

fn check(names: &[String], path: &Path, json: bool) -> Result<bool, Error> {
    let base = Baseline::load(path)?;
    if base.rustc != RUSTC {
        eprintln!(
            "skelaff-costs: note: the baselines were counted on a binary built by `{}`, this one by `{RUSTC}`",
            base.rustc
        );
    }
    let mut rows = Vec::new();
    for s in selected(names)? {
        let c = count(s, false)?;
        let b = base.scenarios.get(s.name);
        let verdict = baseline::judge(b, s.ops, c.ir);
        let row = Row {
            scenario: s.name,
            ops: s.ops,
            ir: c.ir,
            ir_per_op: c.ir as f64 / s.ops as f64,
            baseline_ir_per_op: b.map(Entry::per_op),
            verdict,
        };
        if !json {
            let (base_txt, change) = match (row.baseline_ir_per_op, verdict) {
                (Some(b), Verdict::Within { change_percent } | Verdict::Grew { change_percent }) => {
                    (format!("{b:10.1}"), format!("{change_percent:+6.2}%"))
                }
                (Some(b), _) => (format!("{b:10.1}"), "      -".to_owned()),
                (None, _) => ("         -".to_owned(), "      -".to_owned()),
            };
            let what = match verdict {
                Verdict::Within { .. } => "ok".to_owned(),
                Verdict::Grew { .. } => format!("GREW more than {}%", baseline::LIMIT_PERCENT),
                Verdict::NoBaseline => "NO BASELINE".to_owned(),
                Verdict::OtherOps { baseline_ops } => format!("BASELINE COUNTED {baseline_ops} OPS"),
            };
            say!("{:<16} {:>10.1} Ir/op  baseline {base_txt}  {change}  {what}", s.name, row.ir_per_op);
        }
        rows.push(row);
    }
    let ok = rows.iter().all(|r| !r.verdict.fails());
    if json {
        let report = CheckReport {
            benchmark: "stm-costs",
            limit_percent: baseline::LIMIT_PERCENT,
            rustc: RUSTC,
            baseline_rustc: base.rustc,
            rows,
            ok,
        };
        say!("{}", serde_json::to_string(&report).unwrap_or_default());
    } else if !ok {
        say!(
            "skelaff-costs: a count grew past its baseline. If the growth is deliberate, run `skelaff-costs update` and say why in the commit."
        );
    }
    Ok(ok)
}

fn update(names: &[String], path: &Path) -> Result<(), Error> {
    let mut base = if path.exists() { Baseline::load(path)? } else { Baseline::default() };
    let mut lines = Vec::new();
    for s in selected(names)? {
        let c = count(s, false)?;
        let old = base.scenarios.insert(s.name.to_owned(), Entry { ops: s.ops, ir: c.ir });
        let was = old.map_or_else(|| "new".to_owned(), |o| format!("was {:.1}", o.per_op()));
        lines.push(format!("{:<16} {:>10.1} Ir/op ({was})", s.name, c.ir as f64 / s.ops as f64));
    }
    base.rustc = RUSTC.to_owned();
    base.built_with = BUILT_WITH.to_owned();
    base.save(path)?;
    for l in lines {
        say!("{l}");
    }
    Ok(())
}

#[derive(Debug, Serialize)]
struct ShowRow {
    scenario: &'static str,
    op: &'static str,
    ops: u64,
    ir_per_op: f64,
    d1_read_misses_per_op: Option<f64>,
    ll_read_misses_per_op: Option<f64>,
}

fn show(names: &[String], cache_sim: bool, json: bool) -> Result<(), Error> {
    let mut rows = Vec::new();
    for s in selected(names)? {
        let c = count(s, cache_sim)?;
        let per = |x: Option<u64>| x.map(|x| x as f64 / s.ops as f64);
        let row = ShowRow {
            scenario: s.name,
            op: s.op,
            ops: s.ops,
            ir_per_op: c.ir as f64 / s.ops as f64,
            d1_read_misses_per_op: per(c.d1_read_misses),
            ll_read_misses_per_op: per(c.ll_read_misses),
        };
        if !json {
            let misses = match (row.d1_read_misses_per_op, row.ll_read_misses_per_op) {
                (Some(d1), Some(ll)) => format!("  D1mr/op {d1:7.2}  LLmr/op {ll:7.2}"),
                _ => String::new(),
            };
            say!("{:<16} {:>10.1} Ir/op{misses}  ({})", s.name, row.ir_per_op, s.op);
        }
        rows.push(row);
    }
    if json {
        let v = serde_json::json!({"benchmark": "stm-costs", "rustc": RUSTC, "cache_sim": cache_sim, "rows": rows});
        say!("{v}");
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.command {
        Cmd::Check { scenarios, baseline, json } => check(&scenarios, &baseline, json),
        Cmd::Update { scenarios, baseline } => update(&scenarios, &baseline).map(|()| true),
        Cmd::Show { scenarios, cache_sim, json } => show(&scenarios, cache_sim, json).map(|()| true),
        Cmd::List => {
            for s in SCENARIOS {
                say!("{:<16} {:>7} x {}", s.name, s.ops, s.op);
            }
            Ok(true)
        }
        Cmd::Measure { scenario } => match scenario::find(&scenario) {
            Some(s) => match s.run() {
                Ok(()) => Ok(true),
                Err(e) => {
                    eprintln!("skelaff-costs: scenario {scenario}: {:#}", anyhow::Error::from(e));
                    Ok(false)
                }
            },
            None => selected(&[scenario]).map(|_| true),
        },
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            // The error and its causes, on one line.
            eprintln!("skelaff-costs: {:#}", anyhow::Error::from(e));
            ExitCode::from(2)
        }
    }
}
