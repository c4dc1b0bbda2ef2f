//! skelaff inside a long-running service: tokio tasks submit batches of
//! work-units, concurrently, to one [`WorkerPool`] built at start-up, and
//! await each batch's report without blocking the runtime's threads.
//! Prints the throughput, the per-batch latency percentiles (p50, p99) and
//! how much of a batch's latency it spent queued behind other tasks' batches
//! (the report's `queued`, p50 and p99); `--json` prints them as one JSON
//! object on the last line.
//!
//! ```sh
//! cargo run --release --example service -- --tasks 4 --batches 200 --units 16
//! ```
//!
//! Every batch checks its own result (the sum of its units); the program
//! exits non-zero if one is wrong.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use serde::Serialize;
use skelaff::stm::{TVar, TxError, TxOps};
use skelaff::worklist::{Builder, ProcessCtx, Skeleton, WorkerInfo, WorkerPool};

/// What a batch does with each unit: a little arithmetic, then one
/// transactional add.
struct Batch {
    spin: u32,
}

impl Skeleton for Batch {
    type Unit = u64;
    type Shared = TVar<u64>;
    type PerWorker = ();

    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        unit: &u64,
        _: &mut (),
        total: &'t TVar<u64>,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        let mut x = *unit;
        for _ in 0..self.spin {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        std::hint::black_box(x);
        tx.update(total, |t| t + unit).map(|_| ())
    }
}

/// A tokio service submitting skeleton runs to one worker pool.
#[derive(Parser, Debug, Clone)]
struct Args {
    /// Worker threads of the pool.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Concurrent tokio tasks submitting batches.
    #[arg(long, default_value_t = 4)]
    tasks: usize,
    /// Batches each task submits, one after the other.
    #[arg(long, default_value_t = 100)]
    batches: usize,
    /// Units per batch.
    #[arg(long, default_value_t = 16)]
    units: u64,
    /// Arithmetic steps per unit (its work besides the transaction).
    #[arg(long, default_value_t = 100)]
    spin: u32,
    /// Runtime worker threads of tokio.
    #[arg(long, default_value_t = 2)]
    runtime_threads: usize,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

/// What the service measured.
#[derive(Debug, Serialize)]
struct Figures {
    threads: usize,
    tasks: usize,
    batches: usize,
    units_per_batch: u64,
    seconds: f64,
    batches_per_second: f64,
    units_per_second: f64,
    latency_p50_us: f64,
    latency_p99_us: f64,
    latency_max_us: f64,
    /// The time a batch waited for the pool (behind other tasks' batches,
    /// and the workers' wake-up): part of its latency, not of its run.
    queued_p50_us: f64,
    queued_p99_us: f64,
    wrong_batches: usize,
}

/// The `q`-quantile of sorted `xs` (nearest rank).
fn quantile(xs: &[Duration], q: f64) -> Duration {
    if xs.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs[rank - 1]
}

/// Runs the service as `args` says and returns its figures.
async fn serve(args: Args) -> Result<Figures, skelaff::worklist::Error> {
    let builder = Builder::new().threads(args.threads);
    let pool = Arc::new(WorkerPool::new(&builder)?);
    let skeleton = Arc::new(Batch { spin: args.spin });
    let start = Instant::now();
    let tasks: Vec<_> = (0..args.tasks)
        .map(|task| {
            let (pool, skeleton, builder, args) = (pool.clone(), skeleton.clone(), builder.clone(), args.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(args.batches);
                let mut queued = Vec::with_capacity(args.batches);
                let mut wrong = 0;
                for b in 0..args.batches {
                    let total = Arc::new(TVar::new(0));
                    let mut wl = builder.clone().build_owned(skeleton.clone(), total.clone())?;
                    let first = (task * args.batches + b) as u64 * args.units;
                    wl.add_work_units(first..first + args.units);
                    let t = Instant::now();
                    let report = wl.submit(&pool)?.await?;
                    latencies.push(t.elapsed());
                    queued.push(report.queued);
                    let want: u64 = (first..first + args.units).sum();
                    if total.load() != want || report.units != args.units {
                        wrong += 1;
                    }
                }
                Ok::<_, skelaff::worklist::Error>((latencies, queued, wrong))
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut queued = Vec::new();
    let mut wrong_batches = 0;
    for t in tasks {
        let (l, q, w) = t.await.expect("a submitting task panicked")?;
        latencies.extend(l);
        queued.extend(q);
        wrong_batches += w;
    }
    let seconds = start.elapsed().as_secs_f64();
    latencies.sort_unstable();
    queued.sort_unstable();
    let batches = latencies.len();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    Ok(Figures {
        threads: args.threads,
        tasks: args.tasks,
        batches,
        units_per_batch: args.units,
        seconds,
        batches_per_second: batches as f64 / seconds.max(1e-9),
        units_per_second: (batches as u64 * args.units) as f64 / seconds.max(1e-9),
        latency_p50_us: us(quantile(&latencies, 0.50)),
        latency_p99_us: us(quantile(&latencies, 0.99)),
        latency_max_us: us(latencies.last().copied().unwrap_or_default()),
        queued_p50_us: us(quantile(&queued, 0.50)),
        queued_p99_us: us(quantile(&queued, 0.99)),
        wrong_batches,
    })
}

/// Builds the runtime and serves.
fn run(args: Args) -> Result<Figures, String> {
    if args.runtime_threads == 0 {
        return Err("--runtime-threads must be at least 1".into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.runtime_threads)
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    runtime.block_on(serve(args)).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let json = args.json;
    let f = match run(args) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("service: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{} tasks x {} batches of {} units on {} workers: {:.0} batches/s, {:.0} units/s; \
         latency per batch p50 {:.1} us, p99 {:.1} us, max {:.1} us; of it queued p50 {:.1} us, p99 {:.1} us",
        f.tasks,
        f.batches / f.tasks.max(1),
        f.units_per_batch,
        f.threads,
        f.batches_per_second,
        f.units_per_second,
        f.latency_p50_us,
        f.latency_p99_us,
        f.latency_max_us,
        f.queued_p50_us,
        f.queued_p99_us
    );
    let passed = f.wrong_batches == 0;
    println!(
        "service: check {}",
        if passed { "PASSED (every batch's sum)".into() } else { format!("FAILED: {} wrong batches", f.wrong_batches) }
    );
    if json {
        println!("{}", serde_json::to_string(&f).expect("figures serialize"));
    }
    if passed { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small service run in the test command: concurrent tasks, every
    /// batch's self-check passing.
    #[test]
    fn a_small_service_run_checks_out() {
        let args = Args::parse_from(["service", "--tasks", "3", "--batches", "20", "--units", "8", "--spin", "10"]);
        let f = run(args).unwrap();
        assert_eq!((f.batches, f.wrong_batches), (60, 0));
        assert!(f.latency_p50_us <= f.latency_p99_us);
        // A batch's wait for the pool is part of its latency.
        assert!(f.queued_p50_us <= f.queued_p99_us && f.queued_p99_us <= f.latency_max_us, "{f:?}");
    }

    #[test]
    fn zero_threads_is_an_error() {
        let args = Args::parse_from(["service", "--threads", "0"]);
        let e = run(args).unwrap_err();
        assert!(e.contains("at least one thread"), "{e}");
    }
}
