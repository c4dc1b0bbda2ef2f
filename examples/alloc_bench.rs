//! `cargo run --release --example alloc_bench -- [--json] [--runs N] [--scale X]`
//!
//! Measures `NumaAlloc` against glibc malloc (`System`), mimalloc and
//! (with `--features peer-jemalloc`) jemalloc in one run, on the same workloads (see `skelaff_bench_support::alloc_workloads`):
//! small-block alloc/free on one thread and on two, producer/consumer
//! across two threads, a mixed workload on one and two threads, and
//! allocating-and-prefaulting a 64 MiB region against a `Vec` touched the
//! same way. Prints operations per second per allocator and the ratios
//! `numa / system` and `numa / mimalloc` (above 1: NumaAlloc is faster).
//! With `--runs N` every measurement is taken N times, allocators
//! interleaved, and the median is reported. With `--json` the last line is
//! one JSON object with every figure.
//!
//! What this machine cannot show: NUMA effects (one node here), so the
//! figures compare allocator overheads only.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use serde_json::{Value, json};

use skelaff_bench_support::alloc_workloads as workloads;
use skelaff_bench_support::median;

use workloads::{DynAlloc, NAMES};

#[derive(Debug, Parser)]
#[command(about = "NumaAlloc against System, mimalloc and jemalloc, as ratios")]
struct Args {
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
    /// Measurements per figure (the median is reported).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=99))]
    runs: u32,
    /// Multiplies the operation counts (1.0: about 10 s per run in all).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Only the patterns whose name contains this text (e.g. `mixed`).
    #[arg(long)]
    pattern: Option<String>,
}

struct Pattern {
    name: &'static str,
    threads: usize,
    /// Operations per measurement (per thread where the pattern runs one
    /// workload per thread).
    ops: usize,
    run: fn(&'static dyn DynAlloc, usize, usize) -> Duration,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !(args.scale.is_finite() && args.scale > 0.0 && args.scale <= 1000.0) {
        eprintln!("alloc_bench: --scale must be a number in (0, 1000], got {}", args.scale);
        return ExitCode::FAILURE;
    }
    let n = |base: f64| ((base * args.scale) as usize).max(1);
    let patterns = [
        Pattern { name: "small same-thread", threads: 1, ops: n(4e6), run: |a, t, o| a.same_thread(t, o) },
        Pattern { name: "small same-thread", threads: 2, ops: n(4e6), run: |a, t, o| a.same_thread(t, o) },
        Pattern { name: "small producer/consumer", threads: 2, ops: n(2e6), run: |a, _, o| a.producer_consumer(o) },
        Pattern { name: "mixed", threads: 1, ops: n(1e6), run: |a, t, o| a.mixed(t, o) },
        Pattern { name: "mixed", threads: 2, ops: n(1e6), run: |a, t, o| a.mixed(t, o) },
    ];
    println!("alloc_bench: {} run(s) per figure, scale {}", args.runs, args.scale);
    if !NAMES.contains(&"jemalloc") {
        println!("alloc_bench: jemalloc is left out (build with `--features peer-jemalloc` to add it)");
    }
    let names: String = NAMES.iter().map(|n| format!(" {n:>14}")).collect();
    println!("{:<26} {:>3}{names} {:>9} {:>9}", "pattern", "thr", "/system", "/mimalloc");
    let mut rows = Vec::new();
    for p in patterns.iter().filter(|p| args.pattern.as_ref().is_none_or(|f| p.name.contains(f.as_str()))) {
        // Warm every allocator (first chunks, thread caches) once.
        for name in NAMES {
            (p.run)(alloc(name), p.threads, (p.ops / 20).max(1));
        }
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); NAMES.len()];
        for _ in 0..args.runs {
            for (i, name) in NAMES.iter().enumerate() {
                times[i].push((p.run)(alloc(name), p.threads, p.ops).as_secs_f64());
            }
        }
        // Total operations over all threads (producer/consumer: blocks).
        let total = if p.name.contains("producer") { p.ops } else { p.ops * p.threads };
        let rates: Vec<f64> = times.iter().map(|t| total as f64 / median(t)).collect();
        rows.push(row(p.name, p.threads, &rates));
    }
    // Large regions: NumaAlloc (large path, first-touch) against Vec.
    let bytes = 64 << 20;
    let reps = n(20.0);
    large_prefault_warm(bytes);
    let mut numa_t = Vec::new();
    let mut vec_t = Vec::new();
    for _ in 0..args.runs {
        numa_t.push(workloads::NUMA.large_prefault(bytes, reps).as_secs_f64());
        vec_t.push(workloads::vec_prefault(bytes, reps).as_secs_f64());
    }
    let gib = (bytes * reps) as f64 / (1u64 << 30) as f64;
    let (numa_rate, vec_rate) = (gib / median(&numa_t), gib / median(&vec_t));
    println!(
        "{:<26} {:>3} {:>11.2} GiB/s (Vec with first touch: {:.2} GiB/s) ratio {:.3}",
        "large 64 MiB prefault",
        1,
        numa_rate,
        vec_rate,
        numa_rate / vec_rate
    );
    let worst_system = rows.iter().map(|r| r["numa_over_system"].as_f64().unwrap_or(0.0)).fold(f64::INFINITY, f64::min);
    let worst_mimalloc =
        rows.iter().map(|r| r["numa_over_mimalloc"].as_f64().unwrap_or(0.0)).fold(f64::INFINITY, f64::min);
    println!(
        "worst ratios: numa/system {worst_system:.3} (target >= 1), numa/mimalloc {worst_mimalloc:.3} (target >= 0.8)"
    );
    println!("note: one NUMA node on this machine; these are allocator overheads, not NUMA effects");
    if args.json {
        let out = json!({
            "bench": "alloc",
            "runs": args.runs,
            "scale": args.scale,
            "patterns": rows,
            "large_prefault": {
                "bytes": bytes,
                "reps": reps,
                "numa_gib_per_s": numa_rate,
                "vec_gib_per_s": vec_rate,
                "numa_over_vec": numa_rate / vec_rate,
            },
            "worst_numa_over_system": worst_system,
            "worst_numa_over_mimalloc": worst_mimalloc,
        });
        println!("{out}");
    }
    ExitCode::SUCCESS
}

fn alloc(name: &str) -> &'static dyn DynAlloc {
    // NAMES lists exactly the names `by_name` knows.
    workloads::by_name(name).unwrap_or(&workloads::NUMA)
}

fn large_prefault_warm(bytes: usize) {
    workloads::NUMA.large_prefault(bytes, 1);
    workloads::vec_prefault(bytes, 1);
}

fn row(name: &str, threads: usize, rates: &[f64]) -> Value {
    let (numa, system, mimalloc) = (rates[0], rates[1], rates[2]);
    let figures: String = rates.iter().map(|r| format!(" {r:>14.0}")).collect();
    println!("{name:<26} {threads:>3}{figures} {:>9.3} {:>9.3}", numa / system, numa / mimalloc);
    let per: serde_json::Map<String, Value> =
        NAMES.iter().zip(rates).map(|(n, r)| ((*n).to_owned(), json!(r))).collect();
    json!({
        "pattern": name,
        "threads": threads,
        "ops_per_s": per,
        "numa_over_system": numa / system,
        "numa_over_mimalloc": numa / mimalloc,
    })
}
