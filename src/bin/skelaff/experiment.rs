//! `skelaff run` and `skelaff experiment`: the paper's matrix of
//! applications × page policies × thread counts, each configuration long
//! enough that thread start-up does not decide the ratio, with speedups
//! over each application's named sequential version.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result, anyhow, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use skelaff::locality::atomic_file;
use skelaff::stamp::peer::Comparison;
use skelaff::stamp::{self, CommonArgs, Entry};
use skelaff::worklist::{PagePolicy, TxAssist};

use crate::plot;
use crate::results::{Row, Summaries, Summary, summarize};

/// Options of `skelaff experiment`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Applications to run (default: all of them).
    #[arg(long, value_delimiter = ',')]
    apps: Vec<String>,
    /// Thread counts (default: 1 and the number of CPUs, and powers of two between).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Page policies.
    #[arg(long, value_delimiter = ',', default_value = "first-touch,bind,cyclic,auto")]
    policies: Vec<PagePolicy>,
    /// Assisted transactions in every parallel run (STM²): off, on, on+throttle.
    #[arg(long, default_value = "off")]
    assist: TxAssist,
    /// Runs per configuration; the tables show medians, the plots the spread.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    runs: u32,
    /// Each application's small built-in input instead of the default workload
    /// (tens of milliseconds: start-up costs show; for a quick check).
    #[arg(long)]
    quick: bool,
    /// The JSON of `cargo xtask stamp-vs-c` (STAMP's C programs on TinySTM beside
    /// skelaff): adds a plot per workload against that peer.
    #[arg(long)]
    peer: Option<PathBuf>,
    /// Where to write results.csv, results.md and the plots.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

/// An application's default workload and its sequential baseline.
struct Workload {
    app: &'static str,
    /// Its flags (STAMP's letters): sized so that its sequential run takes
    /// 0.2 to 0.6 s on a 2-CPU build machine (measured 2026-11-26: vacation
    /// 0.29 s, kmeans 0.40 s, intruder 0.37 s, genome 0.28 s, labyrinth
    /// 0.43 s, yada 0.27 s). genome's has the segments of STAMP's largest
    /// input (16 million, 256 MB) over a gene 16 times as long: STAMP's own
    /// gene takes its sequential version 0.07 s.
    flags: &'static [&'static str],
    /// What its `--sequential` version is: what every speedup divides by.
    baseline: &'static str,
}

const WORKLOADS: [Workload; 6] = [
    Workload {
        app: "vacation",
        flags: &["-n2", "-q90", "-u98", "-r65536", "-t393216"],
        baseline: "the same client operations on the standard library's BTreeMap tables, one thread, no STM",
    },
    Workload {
        app: "kmeans",
        flags: &["-m40", "-n40", "-t0.001", "-i", "random-n65536-d32-c16"],
        baseline: "the same clustering, one thread, no STM (sums added point by point)",
    },
    Workload {
        app: "intruder",
        flags: &["-a10", "-l128", "-n65536", "-s1"],
        baseline: "the same capture, reassembly and detection, one thread, no STM",
    },
    Workload {
        app: "genome",
        flags: &["-g262144", "-s64", "-n16777216"],
        baseline: "the same deduplication and overlap matching, one thread, no STM",
    },
    Workload {
        app: "labyrinth",
        flags: &["-i", "random-x256-y256-z3-n256"],
        baseline: "the same router over the pairs in STAMP's order, one thread, no STM",
    },
    Workload {
        app: "yada",
        flags: &["-a33", "-i", "@shipped:ttimeu10000.2"],
        baseline: "the same refinement step over plain loads and stores, in STAMP's heap order",
    },
];

fn workload(app: &str) -> Option<&'static Workload> {
    WORKLOADS.iter().find(|w| w.app == app)
}

/// The flags of `w`, with `@shipped:NAME` replaced by the path of the mesh
/// NAME shipped with skelaff-stamp.
fn flags(w: &Workload) -> Vec<String> {
    w.flags
        .iter()
        .map(|f| match f.strip_prefix("@shipped:") {
            Some(name) => stamp::yada::shipped_input(name).display().to_string(),
            None => (*f).to_owned(),
        })
        .collect()
}

/// `skelaff run APP [flags]`: the application's own command line.
pub(crate) fn run_app(app: &str, rest: Vec<String>) -> ExitCode {
    match stamp::find(app) {
        Some(entry) => (entry.main)(std::iter::once(format!("skelaff run {app}")).chain(rest).collect()),
        None => {
            let names: Vec<&str> = stamp::registry().iter().map(|e| e.name).collect();
            eprintln!("skelaff run: unknown application `{app}`; the applications are: {}", names.join(", "));
            ExitCode::from(2)
        }
    }
}

/// The experiment's JSON line.
#[derive(Debug, Serialize)]
struct Report<'a> {
    runs: u32,
    threads: &'a [usize],
    workloads: BTreeMap<&'static str, String>,
    baselines: BTreeMap<&'static str, &'static str>,
    results: Vec<&'a Summary>,
    failed_checks: Vec<String>,
    out: String,
    plots: Vec<String>,
}

pub(crate) fn experiment(args: &Args) -> Result<bool> {
    let registry = stamp::registry();
    let names: Vec<&str> = registry.iter().map(|e| e.name).collect();
    let apps: Vec<Entry> =
        if args.apps.is_empty() {
            registry.clone()
        } else {
            args.apps
                .iter()
                .map(|name| {
                    registry.iter().copied().find(|e| e.name == name).ok_or_else(|| {
                        anyhow!("unknown application `{name}`; the applications are: {}", names.join(", "))
                    })
                })
                .collect::<Result<_>>()?
        };
    if apps.is_empty() {
        bail!("no applications to run");
    }
    let threads = if args.threads.is_empty() { default_threads() } else { args.threads.clone() };
    if threads.contains(&0) {
        bail!("thread counts must be at least 1");
    }
    if args.policies.is_empty() {
        bail!("no page policies given");
    }
    let peer = match &args.peer {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("--peer {}", p.display()))?;
            Some(serde_json::from_str::<Comparison>(&text).with_context(|| format!("--peer {}", p.display()))?)
        }
        None => None,
    };
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;

    let per_app = 1 + threads.len() * args.policies.len();
    let total = (apps.len() * per_app) as u64 * u64::from(args.runs);
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            .context("the progress bar's template")?
            .progress_chars("=> "),
    );
    let mut rows = Vec::new();
    let mut used = BTreeMap::new();
    for app in &apps {
        let argv = match workload(app.name) {
            Some(w) if !args.quick => Some(flags(w)),
            _ => None,
        };
        used.insert(app.name, argv.as_ref().map_or_else(|| "(its small built-in input)".to_owned(), |a| a.join(" ")));
        let seq = CommonArgs { sequential: true, ..CommonArgs::default() };
        let mut configs = vec![("sequential".to_owned(), 1, seq)];
        for &t in &threads {
            for &p in &args.policies {
                configs.push((
                    p.to_string(),
                    t,
                    CommonArgs { policy: p, assist: args.assist, ..CommonArgs::default() },
                ));
            }
        }
        // Runs of one configuration are spread over the experiment: every
        // configuration runs once per round.
        for run in 0..args.runs {
            for (policy, t, common) in &configs {
                bar.set_message(format!("{} {policy} x{t}", app.name));
                let outcome = match &argv {
                    Some(a) => (app.run_args)(a, *t, common),
                    None => (app.run_small)(*t, common),
                }
                .with_context(|| format!("{} {policy} x{t}", app.name))?;
                if let Err(why) = &outcome.check {
                    bar.println(format!("{} {policy} x{t} run {run}: check FAILED: {}", app.name, why.with_causes()));
                }
                rows.push(Row {
                    app: app.name,
                    policy: policy.clone(),
                    threads: *t,
                    run,
                    seconds: outcome.time.as_secs_f64(),
                    units: outcome.report.as_ref().map_or(0, |r| r.units),
                    commits: outcome.report.as_ref().map_or(0, |r| r.commits()),
                    aborts: outcome.report.as_ref().map_or(0, |r| r.aborts()),
                    check_passed: outcome.passed(),
                });
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();

    write_csv(&args.out.join("results.csv"), &rows)?;
    let sums = summarize(&rows);
    let table = markdown(&apps, &threads, &args.policies, &sums, args.runs, &used);
    let md = args.out.join("results.md");
    atomic_file::write(&md, &table).with_context(|| format!("writing {}", md.display()))?;
    print!("{table}");
    let mut plots = Vec::new();
    for app in &apps {
        let path = args.out.join(format!("speedup-{}.svg", app.name));
        plot::speedup(&path, app.name, &threads, &args.policies, &sums, &rows)
            .with_context(|| format!("plotting {}", path.display()))?;
        plots.push(path.display().to_string());
        if let Some(peer) = &peer {
            for w in peer.workloads().into_iter().filter(|w| w.split('-').next() == Some(app.name)) {
                let path = args.out.join(format!("peer-{w}.svg"));
                plot::against_peer(&path, &w, peer).with_context(|| format!("plotting {}", path.display()))?;
                plots.push(path.display().to_string());
            }
        }
    }
    println!("wrote results.csv, results.md and {} plot(s) in {}", plots.len(), args.out.display());
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| !r.check_passed)
        .map(|r| format!("{} {} x{} run {}", r.app, r.policy, r.threads, r.run))
        .collect();
    if args.json {
        let report = Report {
            runs: args.runs,
            threads: &threads,
            workloads: used,
            baselines: apps.iter().filter_map(|a| workload(a.name).map(|w| (a.name, w.baseline))).collect(),
            results: sums.values().collect(),
            failed_checks: failed.clone(),
            out: args.out.display().to_string(),
            plots,
        };
        println!("{}", serde_json::to_string(&report).context("writing the report as JSON")?);
    }
    if !failed.is_empty() {
        eprintln!("skelaff experiment: {} self-check(s) failed: {}", failed.len(), failed.join("; "));
    }
    Ok(failed.is_empty())
}

fn default_threads() -> Vec<usize> {
    let cpus = skelaff::numa::Topology::get().map_or(1, |t| t.allowed_cpus().len()).max(1);
    let mut v: Vec<usize> =
        std::iter::successors(Some(1usize), |t| t.checked_mul(2)).take_while(|&t| t < cpus).collect();
    v.push(cpus);
    v.dedup();
    v
}

fn write_csv(path: &Path, rows: &[Row]) -> Result<()> {
    let mut s = String::from("app,policy,threads,run,seconds,units,commits,aborts,check_passed\n");
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{:.6},{},{},{},{}",
            r.app, r.policy, r.threads, r.run, r.seconds, r.units, r.commits, r.aborts, r.check_passed
        );
    }
    atomic_file::write(path, s).with_context(|| format!("writing {}", path.display()))
}

fn markdown(
    apps: &[Entry],
    threads: &[usize],
    policies: &[PagePolicy],
    sums: &Summaries,
    runs: u32,
    used: &BTreeMap<&'static str, String>,
) -> String {
    let mut s = format!(
        "# skelaff experiment: median of {runs} run(s); speedup = the application's sequential version's median \
         time / this median (> 1: faster than running without skelaff)\n\n"
    );
    let _ = write!(s, "| app | sequential (s) |");
    for t in threads {
        for p in policies {
            let _ = write!(s, " {p} x{t} |");
        }
    }
    s.push_str("\n|---|---|");
    for _ in 0..threads.len() * policies.len() {
        s.push_str("---|");
    }
    s.push('\n');
    for app in apps {
        let seq = sums.get(&(app.name, "sequential".to_owned(), 1)).map(|x| x.median_seconds);
        let _ = write!(s, "| {} | {} |", app.name, seq.map_or("-".to_owned(), |v| format!("{v:.4}")));
        for &t in threads {
            for p in policies {
                let cell = sums.get(&(app.name, p.to_string(), t)).map_or("-".to_owned(), |m| match m.speedup {
                    Some(sp) => format!("{sp:.2}× ({:.4} s)", m.median_seconds),
                    None => format!("{:.4} s", m.median_seconds),
                });
                let _ = write!(s, " {cell} |");
            }
        }
        s.push('\n');
    }
    s.push_str("\nWorkloads and the sequential version each speedup divides by:\n\n");
    for app in apps {
        let baseline = workload(app.name).map_or("its `--sequential` run", |w| w.baseline);
        let flags = used.get(app.name).map_or("", String::as_str);
        let _ = writeln!(s, "- {}: `{flags}`; baseline: {baseline}", app.name);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_application_has_a_default_workload_and_named_baseline() {
        for entry in stamp::registry() {
            let w = workload(entry.name).unwrap_or_else(|| panic!("{} has no default workload", entry.name));
            assert!(!w.baseline.is_empty());
            for f in flags(w).iter().filter(|f| f.contains("/data/")) {
                assert!(Path::new(&format!("{f}.node.gz")).is_file(), "{}: {f} is not shipped", entry.name);
            }
        }
    }
}
