//! PageRank as Green-Marl generates it, over Shoal arrays and over plain
//! `Vec`s in the same run: time per iteration of each, the ratio, a check
//! that both rank alike, which implementation each array got and why, and
//! the memory each variant holds per node.
//!
//! ```sh
//! cargo run --release --example shoal_pagerank -- --scale 20 --threads 2
//! cargo run --release --example shoal_pagerank -- --arrays auto,single,distributed,replicated,partitioned --json
//! cargo run --release --example shoal_pagerank -- --graph web.mtx --arrays replicated --large-pages off
//! ```
//!
//! Every listed variant and the `Vec` version run the same number of
//! iterations in each of `--rounds` rounds, in rotating order, on one
//! pinned team (the spmv `Team`) with one static schedule; the figure is
//! the median over rounds. The `Vec` version always runs: it is the peer
//! and the reference result. Exits non-zero if any variant's ranks differ.

#[path = "shoal/mod.rs"]
mod shoal;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use shoal::{TeamRunner, Variant, VariantFigures, print_table};
use skelaff::arrays::workloads::pagerank::{ArraysPageRank, RankAgreement, VecPageRank};
use skelaff::arrays::workloads::{Graph, Runner};
use skelaff::arrays::{LargePages, Partition};
use skelaff_bench_support::median;

/// PageRank over Shoal arrays beside plain Vecs.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// An edge list (`FROM TO` per line, from 0) or a Matrix Market file
    /// (`.mtx`); otherwise an R-MAT graph of `--scale`.
    #[arg(long)]
    graph: Option<PathBuf>,
    /// R-MAT graph: 2^scale nodes.
    #[arg(long, default_value_t = 18, conflicts_with = "graph")]
    scale: u32,
    /// R-MAT graph: edges per node.
    #[arg(long, default_value_t = 16, conflicts_with = "graph")]
    edge_factor: u32,
    /// R-MAT seed.
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
    /// Iterations per round.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    /// Rounds (the figure is the median).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

/// One variant under test.
enum Run<'g> {
    Arrays(Box<ArraysPageRank>),
    Vec(VecPageRank<'g>),
}

impl Run<'_> {
    fn step(&mut self, runner: &dyn Runner) -> f64 {
        match self {
            Run::Arrays(a) => a.step(runner),
            Run::Vec(v) => v.step(runner),
        }
    }
    fn ranks(&self) -> &[f64] {
        match self {
            Run::Arrays(a) => a.ranks(),
            Run::Vec(v) => v.ranks(),
        }
    }
}

fn main() -> ExitCode {
    skelaff_bench_support::exit_code(
        "shoal_pagerank",
        run(&Args::parse()),
        "some variant's ranks differ from the Vec version's",
    )
}

fn run(args: &Args) -> Result<bool, Box<dyn std::error::Error>> {
    if args.iterations == 0 || args.rounds == 0 {
        return Err("--iterations and --rounds must be at least 1".into());
    }
    if args.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    let t0 = Instant::now();
    let graph = match &args.graph {
        Some(path) => Graph::read(path)?,
        None => Graph::rmat(args.scale, args.edge_factor, args.seed)?,
    };
    let load_seconds = t0.elapsed().as_secs_f64();
    let runner = TeamRunner::new(args.threads)?;
    let schedule = Partition::new(graph.nodes(), &runner.thread_nodes())?;
    println!(
        "graph: {} nodes, {} edges ({:.2} s to load); {} threads on nodes {:?}",
        graph.nodes(),
        graph.edges(),
        load_seconds,
        args.threads,
        runner.thread_nodes()
    );

    // The Vec version first (the peer), then each listed arrays variant.
    let mut variants: Vec<Variant> = vec![Variant::Vec];
    variants.extend(args.arrays.iter().copied().filter(|v| *v != Variant::Vec));
    let mut runs = Vec::new();
    let mut init = Vec::new();
    for v in &variants {
        let t = Instant::now();
        let r = match v {
            Variant::Vec => Run::Vec(VecPageRank::new(&graph, &schedule)?),
            Variant::Arrays(c) => Run::Arrays(Box::new(ArraysPageRank::new(&graph, &schedule, *c, args.large_pages)?)),
        };
        init.push(t.elapsed().as_secs_f64());
        runs.push(r);
    }

    let mut per_round: Vec<Vec<f64>> = vec![Vec::new(); runs.len()];
    for round in 0..args.rounds {
        for k in 0..runs.len() {
            let i = (k + round) % runs.len();
            let t = Instant::now();
            for _ in 0..args.iterations {
                runs[i].step(&runner);
            }
            per_round[i].push(t.elapsed().as_secs_f64() / args.iterations as f64);
        }
    }

    let vec_median = median(&per_round[0]);
    let mut figures = Vec::new();
    let mut all_agree = true;
    for (i, v) in variants.iter().enumerate() {
        let agreement = RankAgreement::of(runs[i].ranks(), runs[0].ranks());
        all_agree &= agreement.agrees();
        let detail = match &runs[i] {
            Run::Arrays(a) => a.arrays(),
            Run::Vec(_) => Vec::new(),
        };
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
    print_table(&figures, "s/iteration");
    let headline = figures.iter().find(|f| f.arrays != "vec").unwrap_or(&figures[0]);
    println!(
        "{}: {:.6} s per iteration, {:.3}x the Vec version ({} rounds of {} iterations, median)",
        headline.arrays, headline.seconds_per_iteration, headline.ratio_vs_vec, args.rounds, args.iterations
    );
    if args.json {
        let j = serde_json::json!({
            "workload": "pagerank",
            "graph": {
                "source": args.graph.as_ref().map(|p| p.display().to_string()).unwrap_or(format!("rmat scale {} edge factor {} seed {}", args.scale, args.edge_factor, args.seed)),
                "nodes": graph.nodes(),
                "edges": graph.edges(),
            },
            "threads": args.threads,
            "large_pages": args.large_pages.to_string(),
            "iterations": args.iterations,
            "rounds": args.rounds,
            "machine": shoal::machine(),
            "arrays": headline.arrays,
            "seconds_per_iteration": headline.seconds_per_iteration,
            "vec_seconds_per_iteration": vec_median,
            "ratio_vs_vec": headline.ratio_vs_vec,
            "agrees": all_agree,
            "variants": figures,
        });
        println!("{j}");
    }
    Ok(all_agree)
}
