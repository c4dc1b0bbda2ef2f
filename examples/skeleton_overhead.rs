//! Skeleton overhead: empty transactional units per second through the
//! worklist, beside a plain crossbeam-deque work-stealing loop and rayon
//! doing the same (non-transactional) nothing, in the same run.
//!
//! ```text
//! cargo run --release --example skeleton_overhead -- [--units N] [--threads 1,2] [--runs 5] [--json]
//! ```
//!
//! Prints ns per unit for each and the ratios skelaff / crossbeam (median of
//! the runs). The figures include seeding the pool and starting the threads.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use serde_json::json;
use skelaff::worklist::Distribution;

use skelaff_bench_support::{median_duration, overhead};

#[derive(Parser, Debug)]
struct Args {
    /// Units per run.
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    units: u64,
    /// Thread counts.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Runs per configuration (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.threads.contains(&0) {
        eprintln!("skeleton_overhead: thread counts must be at least 1");
        return ExitCode::from(2);
    }
    let mut rows = Vec::new();
    println!("{:>7} {:>22} {:>12} {:>10}", "threads", "system", "ns/unit", "vs crossbeam");
    for &t in &args.threads {
        let pool = match rayon::ThreadPoolBuilder::new().num_threads(t).build() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("skeleton_overhead: cannot build a rayon pool of {t} threads: {e}");
                return ExitCode::FAILURE;
            }
        };
        let mut times: [Vec<Duration>; 4] = Default::default();
        // Interleave the systems within each run so drift affects all alike.
        for _ in 0..args.runs {
            times[0].push(overhead::crossbeam(args.units, t));
            times[1].push(overhead::rayon(args.units, &pool));
            times[2].push(overhead::skelaff(args.units, t, Distribution::PerNode));
            times[3].push(overhead::skelaff(args.units, t, Distribution::Shared));
        }
        let names = ["crossbeam-deque loop", "rayon par_iter", "skelaff (per-node)", "skelaff (shared queue)"];
        let ns: Vec<f64> =
            times.into_iter().map(|v| median_duration(&v).as_secs_f64() * 1e9 / args.units as f64).collect();
        for (name, n) in names.iter().zip(&ns) {
            println!("{t:>7} {name:>22} {n:>12.1} {:>10.2}x", n / ns[0]);
        }
        rows.push(json!({
            "threads": t,
            "ns_per_unit": {"crossbeam": ns[0], "rayon": ns[1], "skelaff_per_node": ns[2], "skelaff_shared": ns[3]},
            "ratio_skelaff_per_node_vs_crossbeam": ns[2] / ns[0],
            "ratio_skelaff_shared_vs_crossbeam": ns[3] / ns[0],
            "ratio_skelaff_per_node_vs_rayon": ns[2] / ns[1],
        }));
    }
    if args.json {
        println!("{}", json!({"units": args.units, "runs": args.runs, "results": rows}));
    }
    ExitCode::SUCCESS
}
