//! `skelaff run` and `skelaff experiment`: the paper's matrix of
//! applications × page policies × thread counts.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use skelaff::stamp::{self, CommonArgs, Entry};
use skelaff::worklist::PagePolicy;

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
    /// Runs per configuration; times are averaged.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    runs: u32,
    /// Where to write results.csv, results.md and the speedup plots.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
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

struct Row {
    app: &'static str,
    policy: String,
    threads: usize,
    run: u32,
    time: Duration,
    units: u64,
    commits: u64,
    aborts: u64,
    passed: bool,
}

pub(crate) fn experiment(args: &Args) -> Result<bool, String> {
    let registry = stamp::registry();
    let apps: Vec<Entry> = if args.apps.is_empty() {
        registry.clone()
    } else {
        args.apps
            .iter()
            .map(|name| {
                registry.iter().copied().find(|e| e.name == name).ok_or_else(|| {
                    let names: Vec<&str> = registry.iter().map(|e| e.name).collect();
                    format!("unknown application `{name}`; the applications are: {}", names.join(", "))
                })
            })
            .collect::<Result<_, _>>()?
    };
    if apps.is_empty() {
        return Err("no applications to run".to_owned());
    }
    let threads = if args.threads.is_empty() { default_threads() } else { args.threads.clone() };
    if threads.contains(&0) {
        return Err("thread counts must be at least 1".to_owned());
    }
    if args.policies.is_empty() {
        return Err("no page policies given".to_owned());
    }
    std::fs::create_dir_all(&args.out).map_err(|e| format!("creating {}: {e}", args.out.display()))?;

    let per_app = 1 + threads.len() * args.policies.len();
    let total = (apps.len() * per_app) as u64 * u64::from(args.runs);
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let mut rows = Vec::new();
    for app in &apps {
        let seq = CommonArgs { sequential: true, ..CommonArgs::default() };
        let mut configs = vec![("sequential".to_owned(), 1, seq)];
        for &t in &threads {
            for &p in &args.policies {
                configs.push((p.to_string(), t, CommonArgs { policy: p, ..CommonArgs::default() }));
            }
        }
        for (policy, t, common) in configs {
            for run in 0..args.runs {
                bar.set_message(format!("{} {policy} x{t}", app.name));
                let outcome = (app.run_small)(t, &common).map_err(|e| format!("{} {policy} x{t}: {e}", app.name))?;
                if let Err(why) = &outcome.check {
                    bar.println(format!("{} {policy} x{t} run {run}: check FAILED: {why}", app.name));
                }
                rows.push(Row {
                    app: app.name,
                    policy: policy.clone(),
                    threads: t,
                    run,
                    time: outcome.time,
                    units: outcome.report.as_ref().map_or(0, |r| r.units),
                    commits: outcome.report.as_ref().map_or(0, |r| r.commits()),
                    aborts: outcome.report.as_ref().map_or(0, |r| r.aborts()),
                    passed: outcome.passed(),
                });
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();

    write_csv(&args.out.join("results.csv"), &rows)?;
    let means = means(&rows);
    let table = markdown(&apps, &threads, &args.policies, &means, args.runs);
    std::fs::write(args.out.join("results.md"), &table).map_err(|e| e.to_string())?;
    print!("{table}");
    let mut plots = Vec::new();
    for app in &apps {
        let path = args.out.join(format!("speedup-{}.svg", app.name));
        plot(&path, app.name, &threads, &args.policies, &means)
            .map_err(|e| format!("plotting {}: {e}", path.display()))?;
        plots.push(path.display().to_string());
    }
    println!("wrote results.csv, results.md and {} plot(s) in {}", plots.len(), args.out.display());
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| !r.passed)
        .map(|r| format!("{} {} x{} run {}", r.app, r.policy, r.threads, r.run))
        .collect();
    if args.json {
        let summary: Vec<_> = means
            .iter()
            .map(|((app, policy, t), m)| {
                json!({"app": app, "policy": policy, "threads": t, "mean_seconds": m,
                       "speedup": seq_time(&means, app).map(|s| s / m)})
            })
            .collect();
        println!(
            "{}",
            json!({"runs": args.runs, "threads": threads, "results": summary, "failed_checks": failed,
                   "out": args.out.display().to_string(), "plots": plots})
        );
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

type Means = BTreeMap<(&'static str, String, usize), f64>;

fn means(rows: &[Row]) -> Means {
    let mut sums: BTreeMap<(&'static str, String, usize), (f64, u32)> = BTreeMap::new();
    for r in rows {
        let e = sums.entry((r.app, r.policy.clone(), r.threads)).or_default();
        e.0 += r.time.as_secs_f64();
        e.1 += 1;
    }
    sums.into_iter().map(|(k, (s, n))| (k, s / f64::from(n))).collect()
}

fn seq_time(means: &Means, app: &str) -> Option<f64> {
    means.iter().find(|((a, p, _), _)| *a == app && p == "sequential").map(|(_, m)| *m)
}

fn write_csv(path: &Path, rows: &[Row]) -> Result<(), String> {
    let mut s = String::from("app,policy,threads,run,seconds,units,commits,aborts,check_passed\n");
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{:.6},{},{},{},{}",
            r.app,
            r.policy,
            r.threads,
            r.run,
            r.time.as_secs_f64(),
            r.units,
            r.commits,
            r.aborts,
            r.passed
        );
    }
    std::fs::write(path, s).map_err(|e| format!("writing {}: {e}", path.display()))
}

fn markdown(apps: &[Entry], threads: &[usize], policies: &[PagePolicy], means: &Means, runs: u32) -> String {
    let mut s = format!("# skelaff experiment: mean of {runs} run(s); speedup over the sequential version\n\n");
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
        let seq = seq_time(means, app.name);
        let _ = write!(s, "| {} | {} |", app.name, seq.map_or("-".to_owned(), |v| format!("{v:.4}")));
        for &t in threads {
            for p in policies {
                let cell = means.get(&(app.name, p.to_string(), t)).map_or("-".to_owned(), |m| match seq {
                    Some(q) => format!("{:.2}× ({m:.4} s)", q / m),
                    None => format!("{m:.4} s"),
                });
                let _ = write!(s, " {cell} |");
            }
        }
        s.push('\n');
    }
    s
}

fn plot(path: &Path, app: &str, threads: &[usize], policies: &[PagePolicy], means: &Means) -> Result<(), String> {
    use plotters::prelude::*;
    let seq = seq_time(means, app).ok_or("no sequential time")?;
    let series: Vec<(String, Vec<(f64, f64)>)> = policies
        .iter()
        .map(|p| {
            let pts = threads
                .iter()
                .filter_map(|&t| means.get(&(app, p.to_string(), t)).map(|m| (t as f64, seq / m)))
                .collect();
            (p.to_string(), pts)
        })
        .collect();
    let max_y = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(1.0f64, f64::max) * 1.15;
    let max_x = threads.iter().copied().max().unwrap_or(1) as f64;
    let root = SVGBackend::new(path, (640, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{app}: speedup over sequential"), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(0.5f64..max_x + 0.5, 0f64..max_y)
        .map_err(|e| e.to_string())?;
    chart.configure_mesh().x_desc("threads").y_desc("speedup").draw().map_err(|e| e.to_string())?;
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = colors[i % colors.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled()))).map_err(|e| e.to_string())?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}
