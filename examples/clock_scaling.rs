//! Who moves the STM's global clock, measured: each thread commits
//! transactions on a word of its own (nothing shared but the STM itself),
//! under each [`ClockPolicy`], beside the same increments as plain atomic
//! `fetch_add`s on per-thread counters (the floor: no STM), in the same run.
//!
//! ```text
//! cargo run --release --example clock_scaling -- [--threads 1,2] [--txs 2000000] [--runs 5] [--json]
//! ```
//!
//! Two transactions: `write` stores to the thread's word without reading
//! it; `update` reads it and writes it back, so each transaction reads what
//! the thread's last one wrote (the case where a `readers` commit costs the
//! next reader a move of the clock). Prints ns per transaction per thread,
//! the median of the runs, and each policy's time over `commits`'.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::json;
use skelaff::stm::{ClockPolicy, TVar, TxOps, atomically, set_thread_clock};

use skelaff_bench_support::median_duration;

#[derive(Parser, Debug)]
struct Args {
    /// Thread counts.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Transactions per thread per run.
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    txs: u64,
    /// Runs per configuration (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Write,
    Update,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Write => "write",
            Kind::Update => "update",
        }
    }
}

/// `threads` threads, each committing `txs` transactions of `kind` on its
/// own word with clock policy `policy`; the wall time. Every word must end
/// at `txs` (checked).
fn stm(threads: usize, txs: u64, kind: Kind, policy: ClockPolicy) -> Result<Duration, String> {
    // A cache line per word: the threads share nothing but the STM.
    let words: Vec<crossbeam_utils::CachePadded<TVar<u64>>> =
        (0..threads).map(|_| crossbeam_utils::CachePadded::new(TVar::new(0))).collect();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for w in &words {
            s.spawn(move || {
                let before = set_thread_clock(policy);
                for i in 1..=txs {
                    match kind {
                        Kind::Write => atomically(|tx| tx.write(w, i)),
                        Kind::Update => {
                            atomically(|tx| tx.update(w, |x| x + 1));
                        }
                    }
                }
                set_thread_clock(before);
            });
        }
    });
    let took = t0.elapsed();
    match words.iter().map(|w| w.load()).find(|&v| v != txs) {
        Some(v) => Err(format!("a thread's word ended at {v}, not {txs}")),
        None => Ok(took),
    }
}

/// The same increments as plain `fetch_add`s on per-thread counters, each
/// on a cache line of its own.
fn atomics(threads: usize, txs: u64) -> Duration {
    let counters: Vec<crossbeam_utils::CachePadded<AtomicU64>> =
        (0..threads).map(|_| crossbeam_utils::CachePadded::new(AtomicU64::new(0))).collect();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for c in &counters {
            s.spawn(move || {
                for _ in 0..txs {
                    c.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    t0.elapsed()
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.threads.iter().any(|&t| t == 0 || t > skelaff::stm::MAX_THREADS) {
        eprintln!("clock_scaling: thread counts must be in 1..={}", skelaff::stm::MAX_THREADS);
        return ExitCode::from(2);
    }
    let policies = [ClockPolicy::Commits, ClockPolicy::Readers, ClockPolicy::Auto];
    let per_tx = |d: Duration| d.as_nanos() as f64 / args.txs as f64;
    let mut rows = Vec::new();
    println!("{:>7} {:>7} {:>9} {:>11} {:>12}", "threads", "tx", "system", "ns/tx", "/commits");
    for &t in &args.threads {
        for kind in [Kind::Write, Kind::Update] {
            let mut times: Vec<Vec<Duration>> = vec![Vec::new(); policies.len() + 1];
            // Interleave the systems within each run so drift affects all alike.
            for _ in 0..args.runs {
                for (i, &p) in policies.iter().enumerate() {
                    match stm(t, args.txs, kind, p) {
                        Ok(d) => times[i].push(d),
                        Err(e) => {
                            eprintln!("clock_scaling: {e}");
                            return ExitCode::FAILURE;
                        }
                    }
                }
                times[policies.len()].push(atomics(t, args.txs));
            }
            let medians: Vec<f64> = times.iter().map(|v| per_tx(median_duration(v))).collect();
            let names = policies.iter().map(|p| p.name()).chain(["atomics"]);
            for (name, &ns) in names.zip(&medians) {
                let ratio = ns / medians[0];
                println!("{t:>7} {:>7} {name:>9} {ns:>11.1} {ratio:>12.2}", kind.name());
                rows.push(json!({
                    "threads": t, "tx": kind.name(), "system": name,
                    "ns_per_tx": ns, "over_commits": ratio,
                }));
            }
        }
    }
    if args.json {
        println!("{}", json!({ "benchmark": "clock_scaling", "txs": args.txs, "runs": args.runs, "rows": rows }));
    }
    ExitCode::SUCCESS
}
