//! The access profile's overhead: each STAMP application's small input (or,
//! with `--args`, one application's own flags) with the profile off and on
//! (the STM's sampler at `--sample-period`, drained into the bounded
//! recorder every few units, attributed at the end), the two alternating in
//! the same process (in ABBA order).
//!
//! ```text
//! cargo run --release --features stamp --example sampler_overhead -- [--apps vacation,intruder] [--threads 2] \
//!     [--runs 5] [--sample-period 64] [--json]
//! cargo run --release --features stamp --example sampler_overhead -- --apps vacation \
//!     --args "-n2 -q90 -u98 -r65536 -t393216" --runs 5
//! ```
//!
//! Prints, per application, the median ratio on/off of the workers' busy
//! time (summed over workers, waiting left out), then the median time off
//! and on and their ratio twice: the workers' time (the skeleton runs' wall
//! time: sampling and draining the samples) and the application's timed
//! phase, which also holds each run's end (merging the recorders, asking
//! the kernel where the sampled pages are, the allocator's intended nodes:
//! about half a microsecond per distinct sampled page, a fixed cost that
//! weighs on runs of a few milliseconds). The target is at most 1.05 at the
//! default period.

use std::process::ExitCode;

use clap::Parser;
use serde_json::json;
use skelaff::locality::Sampling;
use skelaff::stamp::{self, CommonArgs};
use skelaff_bench_support::median_duration;

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
    /// Run the (single) application of `--apps` with these flags, as on
    /// its command line (e.g. `skelaff experiment`'s default workload),
    /// instead of its small input.
    #[arg(long, allow_hyphen_values = true)]
    args: Option<String>,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
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
    let flags: Option<Vec<String>> = args.args.as_ref().map(|a| a.split_whitespace().map(str::to_owned).collect());
    if flags.is_some() && apps.len() != 1 {
        eprintln!("sampler_overhead: --args needs exactly one application in --apps (got {})", apps.len());
        return ExitCode::from(2);
    }
    let off = CommonArgs::default();
    let on = CommonArgs {
        profile: Some("unused.prof".into()), // switches the profile on; run_small writes no file
        sample_period: args.sample_period,
        ..CommonArgs::default()
    };
    println!(
        "{:>10} {:>8} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8} {:>9}",
        "app", "busy on/off", "wkr off ms", "wkr on ms", "on/off", "total off", "total on", "on/off", "samples"
    );
    let mut rows = Vec::new();
    for app in apps {
        let (mut t_off, mut t_on, mut samples) = (Vec::new(), Vec::new(), 0);
        let (mut w_off, mut w_on) = (Vec::new(), Vec::new());
        let (mut b_off, mut b_on) = (Vec::new(), Vec::new());
        for round in 0..args.runs {
            // ABBA order: off first in even rounds, on first in odd ones, so
            // neither setting always follows the other (the end of a profiled
            // run leaves the allocator and caches in another state).
            let mut order = [(false, &mut t_off, &mut w_off, &mut b_off), (true, &mut t_on, &mut w_on, &mut b_on)];
            if round % 2 == 1 {
                order.reverse();
            }
            for (profiled, times, walls, busys) in order {
                let common = if profiled { &on } else { &off };
                let threads = usize::from(args.threads);
                let run = match &flags {
                    Some(f) => (app.run_args)(f, threads, common),
                    None => (app.run_small)(threads, common),
                };
                let outcome = match run {
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
                busys.push(outcome.report.as_ref().map_or(outcome.time, |r| r.workers.iter().map(|w| w.busy).sum()));
            }
        }
        let (off_t, on_t) = (median_duration(&t_off), median_duration(&t_on));
        let (off_w, on_w) = (median_duration(&w_off), median_duration(&w_on));
        let (off_b, on_b) = (median_duration(&b_off), median_duration(&b_on));
        let busy_ratio = on_b.as_secs_f64() / off_b.as_secs_f64().max(1e-9);
        let ratio = on_t.as_secs_f64() / off_t.as_secs_f64().max(1e-9);
        let wall_ratio = on_w.as_secs_f64() / off_w.as_secs_f64().max(1e-9);
        println!(
            "{:>10} {:>11.3} {:>10.3} {:>10.3} {:>8.3} {:>10.3} {:>10.3} {:>8.3} {:>9}",
            app.name,
            busy_ratio,
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
            "busy_off_seconds": off_b.as_secs_f64(),
            "busy_on_seconds": on_b.as_secs_f64(),
            "busy_ratio": busy_ratio,
            "off_seconds": off_t.as_secs_f64(),
            "on_seconds": on_t.as_secs_f64(),
            "ratio": ratio,
            "samples": samples,
        }));
    }
    if args.json {
        println!(
            "{}",
            json!({ "threads": args.threads, "runs": args.runs, "sample_period": args.sample_period, "args": args.args, "apps": rows })
        );
    }
    ExitCode::SUCCESS
}
