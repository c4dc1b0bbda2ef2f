//! The access profile's overhead: each STAMP application's small input with
//! the profile off and on (the STM's sampler at `--sample-period`, drained
//! into the bounded recorder after each unit, attributed at the end), the
//! two alternating in the same process.
//!
//! ```text
//! cargo run --release --example sampler_overhead -- [--apps vacation,intruder] [--threads 2] \
//!     [--runs 5] [--sample-period 64] [--json]
//! ```
//!
//! Prints, per application, the median time off and on and their ratio (on
//! / off) twice: the workers' time (the skeleton runs' wall time: sampling
//! and draining the samples) and the application's timed phase, which also
//! holds each run's end (merging the recorders, asking the kernel where the
//! sampled pages are, the allocator's intended nodes). The target is at
//! most 1.05 at the default period.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use serde_json::json;
use skelaff::locality::Sampling;
use skelaff::stamp::{self, CommonArgs};

/// The applications' allocations follow each worker's page policy, as in `skelaff run`.
#[global_allocator]
static ALLOC: skelaff::numa::alloc::NumaAlloc = skelaff::numa::alloc::NumaAlloc::new();

#[derive(Parser, Debug)]
struct Args {
    /// Applications (default: all).
    #[arg(long, value_delimiter = ',')]
    apps: Vec<String>,
    /// Worker threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    threads: u16,
    /// Runs of each setting (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// One transactional access in this many is sampled.
    #[arg(long, default_value_t = Sampling::DEFAULT.period, value_parser = clap::value_parser!(u32).range(1..))]
    sample_period: u32,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let args = Args::parse();
    let registry = stamp::registry();
    let mut apps = Vec::new();
    for name in &args.apps {
        match registry.iter().find(|e| e.name == name) {
            Some(e) => apps.push(*e),
            None => {
                let names: Vec<&str> = registry.iter().map(|e| e.name).collect();
                eprintln!("sampler_overhead: unknown application `{name}`; the applications are: {}", names.join(", "));
                return ExitCode::from(2);
            }
        }
    }
    if apps.is_empty() {
        apps = registry;
    }
    let off = CommonArgs::default();
    let on = CommonArgs {
        profile: Some("unused.prof".into()), // switches the profile on; run_small writes no file
        sample_period: args.sample_period,
        ..CommonArgs::default()
    };
    println!(
        "{:>10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8} {:>9}",
        "app", "wkr off ms", "wkr on ms", "on/off", "total off", "total on", "on/off", "samples"
    );
    let mut rows = Vec::new();
    for app in apps {
        let (mut t_off, mut t_on, mut samples) = (Vec::new(), Vec::new(), 0);
        let (mut w_off, mut w_on) = (Vec::new(), Vec::new());
        for _ in 0..args.runs {
            for (profiled, times, walls) in [(false, &mut t_off, &mut w_off), (true, &mut t_on, &mut w_on)] {
                let common = if profiled { &on } else { &off };
                let outcome = match (app.run_small)(usize::from(args.threads), common) {
                    Ok(o) => o,
                    Err(e) => {
                        eprintln!("sampler_overhead: {}: {e}", app.name);
                        return ExitCode::FAILURE;
                    }
                };
                if let Err(why) = &outcome.check {
                    eprintln!("sampler_overhead: {}: self-check failed: {why}", app.name);
                    return ExitCode::FAILURE;
                }
                if let Some(p) = outcome.report.as_ref().and_then(|r| r.access_profile.as_ref()) {
                    samples = p.profile.accesses().len();
                }
                times.push(outcome.time);
                walls.push(outcome.report.as_ref().map_or(outcome.time, |r| r.wall));
            }
        }
        let (off_t, on_t) = (median(t_off), median(t_on));
        let (off_w, on_w) = (median(w_off), median(w_on));
        let ratio = on_t.as_secs_f64() / off_t.as_secs_f64().max(1e-9);
        let wall_ratio = on_w.as_secs_f64() / off_w.as_secs_f64().max(1e-9);
        println!(
            "{:>10} {:>10.3} {:>10.3} {:>8.3} {:>10.3} {:>10.3} {:>8.3} {:>9}",
            app.name,
            off_w.as_secs_f64() * 1e3,
            on_w.as_secs_f64() * 1e3,
            wall_ratio,
            off_t.as_secs_f64() * 1e3,
            on_t.as_secs_f64() * 1e3,
            ratio,
            samples
        );
        rows.push(json!({
            "app": app.name,
            "workers_off_seconds": off_w.as_secs_f64(),
            "workers_on_seconds": on_w.as_secs_f64(),
            "workers_ratio": wall_ratio,
            "off_seconds": off_t.as_secs_f64(),
            "on_seconds": on_t.as_secs_f64(),
            "ratio": ratio,
            "samples": samples,
        }));
    }
    if args.json {
        println!(
            "{}",
            json!({ "threads": args.threads, "runs": args.runs, "sample_period": args.sample_period, "apps": rows })
        );
    }
    ExitCode::SUCCESS
}
