//! Streamcluster's hot loop (PARSEC's `pgain`) over Shoal arrays and over
//! plain `Vec`s in the same run: time per `pgain` of each, the ratio, a
//! check that both cluster alike, which implementation each array got and
//! why, and the memory each variant holds per node.
//!
//! ```sh
//! cargo run --release --example shoal_streamcluster -- --points 200000 --dim 32 --threads 2
//! cargo run --release --example shoal_streamcluster -- --arrays auto,replicated,distributed --json
//! ```
//!
//! The points stream in `--chunks` chunks; each is written into the
//! coordinates' master copy and published with `repl_sync` (the paper's
//! change to Streamcluster), then `--iterations` candidates are tried.
//! Only the `pgain` calls are timed; the time to publish a chunk is
//! reported beside. Every variant does the same work in each of
//! `--rounds` rounds, in rotating order; the figure is the median.

#[path = "shoal/mod.rs"]
mod shoal;

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use shoal::{TeamRunner, Variant, VariantFigures, print_table};
use skelaff::arrays::workloads::streamcluster::{
    ArrayPoints, ClusterAgreement, Params, PointStore, Streamcluster, VecPoints,
};
use skelaff::arrays::workloads::{ArrayReport, Runner};
use skelaff::arrays::{LargePages, Partition};
use skelaff_bench_support::median;

/// Streamcluster's pgain over Shoal arrays beside plain Vecs.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Points per chunk.
    #[arg(long, default_value_t = 200_000)]
    points: usize,
    /// Coordinates per point.
    #[arg(long, default_value_t = 32)]
    dim: usize,
    /// Chunks of the stream per round.
    #[arg(long, default_value_t = 2)]
    chunks: u64,
    /// Candidates (pgain calls) per chunk.
    #[arg(long, default_value_t = 20)]
    iterations: usize,
    /// Seed of the points and candidates.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Variants, comma-separated: auto, single, distributed, replicated, partitioned, vec.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    arrays: Vec<Variant>,
    /// Team threads, pinned (scatter over nodes).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Large pages for the arrays: auto, off, transparent, explicit.
    #[arg(long, default_value = "auto")]
    large_pages: LargePages,
    /// Rounds (the figure is the median).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

/// One round of a variant: every chunk, loaded and published, then its
/// candidates; returns (seconds per pgain, seconds publishing).
fn round<S: PointStore>(sc: &mut Streamcluster<S>, runner: &dyn Runner, chunks: u64, iterations: usize) -> (f64, f64) {
    let (mut pgain, mut publish) = (0.0, 0.0);
    for k in 0..chunks {
        let t = Instant::now();
        sc.load_chunk(k);
        publish += t.elapsed().as_secs_f64();
        sc.start_chunk(runner);
        let candidates = sc.candidates(k, iterations);
        let t = Instant::now();
        for x in candidates {
            sc.pgain(runner, x);
        }
        pgain += t.elapsed().as_secs_f64();
    }
    (pgain / (chunks as usize * iterations) as f64, publish / chunks as f64)
}

enum Run {
    Arrays(Box<Streamcluster<ArrayPoints>>),
    Vec(Box<Streamcluster<VecPoints>>),
}

fn main() -> ExitCode {
    skelaff_bench_support::exit_code(
        "shoal_streamcluster",
        run(&Args::parse()),
        "some variant's clustering differs from the Vec version's",
    )
}

fn run(args: &Args) -> Result<bool, Box<dyn std::error::Error>> {
    if args.iterations == 0 || args.rounds == 0 || args.chunks == 0 {
        return Err("--iterations, --rounds and --chunks must be at least 1".into());
    }
    if args.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    let params = Params { points: args.points, dim: args.dim, seed: args.seed };
    params.check()?;
    let runner = TeamRunner::new(args.threads)?;
    let schedule = Partition::new(params.points, &runner.thread_nodes())?;
    println!(
        "{} points x {} dims, {} chunks x {} candidates; {} threads on nodes {:?}",
        params.points,
        params.dim,
        args.chunks,
        args.iterations,
        args.threads,
        runner.thread_nodes()
    );
    let mut variants: Vec<Variant> = vec![Variant::Vec];
    variants.extend(args.arrays.iter().copied().filter(|v| *v != Variant::Vec));
    let mut runs = Vec::new();
    let mut init = Vec::new();
    for v in &variants {
        let t = Instant::now();
        runs.push(match v {
            Variant::Vec => Run::Vec(Box::new(Streamcluster::new(VecPoints::new(&params)?, params, &schedule)?)),
            Variant::Arrays(c) => {
                let store = ArrayPoints::new(&params, &schedule, *c, args.large_pages)?;
                Run::Arrays(Box::new(Streamcluster::new(store, params, &schedule)?))
            }
        });
        init.push(t.elapsed().as_secs_f64());
    }
    let mut per_round: Vec<Vec<f64>> = vec![Vec::new(); runs.len()];
    let mut publish: Vec<Vec<f64>> = vec![Vec::new(); runs.len()];
    for r in 0..args.rounds {
        for k in 0..runs.len() {
            let i = (k + r) % runs.len();
            let (t, p) = match &mut runs[i] {
                Run::Arrays(sc) => round(sc, &runner, args.chunks, args.iterations),
                Run::Vec(sc) => round(sc, &runner, args.chunks, args.iterations),
            };
            per_round[i].push(t);
            publish[i].push(p);
        }
    }
    let Run::Vec(reference) = &runs[0] else { unreachable!("the Vec version runs first") };
    let vec_median = median(&per_round[0]);
    let mut figures = Vec::new();
    let mut all_agree = true;
    for (i, v) in variants.iter().enumerate() {
        let (agreement, detail): (ClusterAgreement, Vec<ArrayReport>) = match &runs[i] {
            Run::Arrays(sc) => (ClusterAgreement::of(sc, reference), sc.store().arrays()),
            Run::Vec(sc) => (ClusterAgreement::of(sc, reference), Vec::new()),
        };
        all_agree &= agreement.agrees();
        let (memory_per_node, memory_vs_one_copy) = VariantFigures::memory_factor(&detail);
        let m = median(&per_round[i]);
        figures.push(VariantFigures {
            arrays: v.to_string(),
            seconds_per_iteration: m,
            rounds: per_round[i].clone(),
            ratio_vs_vec: m / vec_median,
            init_seconds: init[i],
            agrees: agreement.agrees(),
            memory_per_node,
            memory_vs_one_copy,
            arrays_detail: detail,
        });
    }
    print_table(&figures, "s/pgain");
    let publish_median: Vec<f64> = publish.iter().map(|p| median(p)).collect();
    for (f, p) in figures.iter().zip(&publish_median) {
        println!("{}: {:.4} s to write and publish a chunk (not timed above)", f.arrays, p);
    }
    let hi = figures.iter().position(|f| f.arrays != "vec").unwrap_or(0);
    let headline = &figures[hi];
    println!(
        "{}: {:.6} s per pgain, {:.3}x the Vec version ({} rounds, median); {} centers",
        headline.arrays,
        headline.seconds_per_iteration,
        headline.ratio_vs_vec,
        args.rounds,
        reference.centers().len()
    );
    if args.json {
        let j = serde_json::json!({
            "workload": "streamcluster",
            "points": params.points,
            "dim": params.dim,
            "chunks": args.chunks,
            "iterations": args.iterations,
            "threads": args.threads,
            "large_pages": args.large_pages.to_string(),
            "rounds": args.rounds,
            "machine": shoal::machine(),
            "arrays": headline.arrays,
            "seconds_per_iteration": headline.seconds_per_iteration,
            "vec_seconds_per_iteration": vec_median,
            "ratio_vs_vec": headline.ratio_vs_vec,
            "publish_seconds_per_chunk": publish_median[hi],
            "centers": reference.centers().len(),
            "agrees": all_agree,
            "variants": figures,
        });
        println!("{j}");
    }
    Ok(all_agree)
}
