//! Single-source shortest paths on a generated random graph, written as a
//! user would write it on the skelaff skeleton, beside its sequential twin
//! and the program a Rust user would write instead.
//!
//! - **skelaff**: a unit is a vertex to relax, with the distance it was
//!   queued with; it lowers its neighbours' distances (`TVar<u64>`s) and adds
//!   each neighbour it improved as a new unit (units add units: chaotic
//!   relaxation, Bellman-Ford style). A unit whose vertex got a shorter
//!   distance since it was queued is stale and only reads.
//! - **sequential**: the same worklist on a `VecDeque`, plain `u64`s.
//! - **rayon**: frontier by frontier (Bellman-Ford rounds), distances in
//!   `AtomicU64`s lowered with `fetch_min`, each round's frontier collected
//!   in parallel.
//!
//! What it shows: a `Skeleton` that borrows its read-only input (the graph,
//! `&'a Graph`) for the worklist's life, units that add units, and the
//! `RunReport`'s units and aborts. Shortest distances are unique, so all
//! three must find the same ones; the program exits with status 1 if they
//! do not, 2 on bad flags.
//!
//! ```sh
//! cargo run --example sssp                       # small defaults: seconds in the dev profile
//! cargo run --release --example sssp -- --vertices 1000000 --degree 8 --threads 1,2 --rounds 5 --json
//! ```
//!
//! Times are the median of `--rounds` runs, the three programs interleaved
//! in each round. They cover the search only (not generating the graph or
//! allocating the distances); skelaff's include starting its workers,
//! rayon's pool is built beforehand.

use std::collections::VecDeque;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use rayon::prelude::*;
use serde::Serialize;
use skelaff::numa::alloc::NumaAlloc;
use skelaff::stm::{TVar, TxError, TxOps};
use skelaff::worklist::{Builder, ProcessCtx, Skeleton, WorkerInfo};
use skelaff_bench_support::median_duration;

/// Every allocation follows each worker's page policy (see the quickstart's
/// "Which allocator").
#[global_allocator]
static ALLOC: NumaAlloc = NumaAlloc::new();

/// Not reached.
const INF: u64 = u64::MAX;

#[derive(Parser, Debug)]
#[command(about = "SSSP on a random graph: skelaff beside its sequential twin and a rayon peer")]
struct Args {
    /// Vertices of the graph.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(1..))]
    vertices: u32,
    /// Out-edges of each vertex (to random targets).
    #[arg(long, default_value_t = 8)]
    degree: u32,
    /// Edge weights are drawn from 1..=max-weight.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    max_weight: u64,
    /// Seed of the graph generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Thread counts for skelaff and rayon.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Rounds; the median time of each program is printed.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: u32,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

/// A directed graph in compressed sparse rows.
struct Graph {
    offsets: Vec<usize>,
    targets: Vec<u32>,
    weights: Vec<u64>,
}

impl Graph {
    /// `n` vertices with `degree` out-edges each, to uniformly drawn targets.
    fn random(n: u32, degree: u32, max_weight: u64, seed: u64) -> Graph {
        let mut rng = fastrand::Rng::with_seed(seed);
        let edges = n as usize * degree as usize;
        let (mut targets, mut weights) = (Vec::with_capacity(edges), Vec::with_capacity(edges));
        for _ in 0..edges {
            targets.push(rng.u64(..u64::from(n)) as u32);
            weights.push(1 + rng.u64(..max_weight));
        }
        let offsets = (0..=n as usize).map(|v| v * degree as usize).collect();
        Graph { offsets, targets, weights }
    }

    fn vertices(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The out-edges of `v`: (target, weight).
    fn edges(&self, v: u32) -> impl Iterator<Item = (u32, u64)> + '_ {
        let r = self.offsets[v as usize]..self.offsets[v as usize + 1];
        self.targets[r.clone()].iter().copied().zip(self.weights[r].iter().copied())
    }
}

/// The skelaff program: borrows the graph for the worklist's life.
struct Sssp<'a> {
    graph: &'a Graph,
}

impl Skeleton for Sssp<'_> {
    /// A vertex and the distance it had when it was queued.
    type Unit = (u32, u64);
    /// The distances.
    type Shared = Vec<TVar<u64>>;
    type PerWorker = ();

    fn init_worker(&self, _: &Vec<TVar<u64>>, _: &WorkerInfo) {}

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &(v, d): &'t (u32, u64),
        _: &mut (),
        dist: &'t Vec<TVar<u64>>,
        ctx: &mut ProcessCtx<(u32, u64)>,
    ) -> Result<(), TxError> {
        if tx.read(&dist[v as usize])? < d {
            return Ok(()); // stale: a later unit relaxes v from its shorter distance
        }
        for (w, weight) in self.graph.edges(v) {
            let nd = d + weight;
            if nd < tx.read(&dist[w as usize])? {
                tx.write(&dist[w as usize], nd)?;
                ctx.add_work_unit((w, nd));
            }
        }
        Ok(())
    }
}

/// What one skelaff run did.
struct SkelaffRun {
    dist: Vec<u64>,
    time: Duration,
    units: u64,
    aborts: u64,
}

fn skelaff(g: &Graph, source: u32, threads: usize) -> Result<SkelaffRun, skelaff::worklist::Error> {
    let dist: Vec<TVar<u64>> = (0..g.vertices()).map(|_| TVar::new(INF)).collect();
    dist[source as usize].store(0);
    let program = Sssp { graph: g };
    let start = Instant::now();
    let mut worklist = Builder::new().threads(threads).build(&program, &dist)?;
    worklist.add_work_unit((source, 0));
    let report = worklist.run()?;
    let time = start.elapsed();
    // The run is over: read the distances back by value, no transaction.
    let dist = dist.into_iter().map(TVar::into_inner).collect();
    Ok(SkelaffRun { dist, time, units: report.units, aborts: report.aborts() })
}

/// The sequential twin: the same worklist, no transactions.
fn sequential(g: &Graph, source: u32) -> (Vec<u64>, Duration) {
    let mut dist = vec![INF; g.vertices()];
    let start = Instant::now();
    dist[source as usize] = 0;
    let mut queue = VecDeque::from([(source, 0)]);
    while let Some((v, d)) = queue.pop_front() {
        if dist[v as usize] < d {
            continue;
        }
        for (w, weight) in g.edges(v) {
            let nd = d + weight;
            if nd < dist[w as usize] {
                dist[w as usize] = nd;
                queue.push_back((w, nd));
            }
        }
    }
    (dist, start.elapsed())
}

/// The peer: rayon, frontier by frontier, `fetch_min` on atomic distances.
fn rayon_frontiers(g: &Graph, source: u32, pool: &rayon::ThreadPool) -> (Vec<u64>, Duration) {
    let dist: Vec<AtomicU64> = (0..g.vertices()).map(|_| AtomicU64::new(INF)).collect();
    // The last round in which each vertex was put in the next frontier.
    let queued: Vec<AtomicU32> = (0..g.vertices()).map(|_| AtomicU32::new(u32::MAX)).collect();
    let start = Instant::now();
    dist[source as usize].store(0, Ordering::Relaxed);
    pool.install(|| {
        let mut frontier = vec![source];
        let mut round = 0u32;
        while !frontier.is_empty() {
            frontier = frontier
                .par_iter()
                .flat_map_iter(|&v| {
                    let d = dist[v as usize].load(Ordering::Relaxed);
                    let (dist, queued) = (&dist, &queued);
                    g.edges(v).filter_map(move |(w, weight)| {
                        let nd = d + weight;
                        let lowered = dist[w as usize].fetch_min(nd, Ordering::Relaxed) > nd;
                        (lowered && queued[w as usize].swap(round, Ordering::Relaxed) != round).then_some(w)
                    })
                })
                .collect();
            round += 1;
        }
    });
    let time = start.elapsed();
    (dist.into_iter().map(AtomicU64::into_inner).collect(), time)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[derive(Serialize)]
struct Row {
    threads: usize,
    skelaff_ms: f64,
    rayon_ms: f64,
    ratio_skelaff_vs_sequential: f64,
    ratio_skelaff_vs_rayon: f64,
    units_median_round: u64,
    aborts_median_round: u64,
}

#[derive(Serialize)]
struct Summary {
    example: &'static str,
    vertices: u32,
    edges: usize,
    source: u32,
    reached: usize,
    rounds: u32,
    sequential_ms: f64,
    results: Vec<Row>,
    agree: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.threads.is_empty() || args.threads.contains(&0) {
        eprintln!("sssp: thread counts must be at least 1");
        return ExitCode::from(2);
    }
    let g = Graph::random(args.vertices, args.degree, args.max_weight, args.seed);
    let source = 0;
    let pools: Result<Vec<_>, _> =
        args.threads.iter().map(|&t| rayon::ThreadPoolBuilder::new().num_threads(t).build()).collect();
    let pools = match pools {
        Ok(p) => p,
        Err(e) => {
            eprintln!("sssp: cannot build a rayon pool: {e}");
            return ExitCode::FAILURE;
        }
    };

    let (expected, _) = sequential(&g, source);
    let reached = expected.iter().filter(|&&d| d != INF).count();
    println!(
        "sssp: {} vertices, {} edges, source {source}, {reached} reached; median of {} rounds",
        g.vertices(),
        g.targets.len(),
        args.rounds
    );

    let mut agree = true;
    let mut seq_times = Vec::new();
    let mut skel_times = vec![Vec::new(); args.threads.len()];
    let mut rayon_times = vec![Vec::new(); args.threads.len()];
    let mut units = vec![Vec::new(); args.threads.len()];
    let mut aborts = vec![Vec::new(); args.threads.len()];
    for _ in 0..args.rounds {
        let (dist, time) = sequential(&g, source);
        agree &= dist == expected;
        seq_times.push(time);
        for (i, (&t, pool)) in args.threads.iter().zip(&pools).enumerate() {
            let run = match skelaff(&g, source, t) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("sssp: skelaff at {t} threads: {e}");
                    return ExitCode::FAILURE;
                }
            };
            if run.dist != expected {
                eprintln!("sssp: skelaff at {t} threads found other distances than the sequential twin");
                agree = false;
            }
            skel_times[i].push(run.time);
            units[i].push(run.units);
            aborts[i].push(run.aborts);
            let (dist, time) = rayon_frontiers(&g, source, pool);
            if dist != expected {
                eprintln!("sssp: rayon at {t} threads found other distances than the sequential twin");
                agree = false;
            }
            rayon_times[i].push(time);
        }
    }

    let seq = ms(median_duration(&seq_times));
    println!(
        "{:>7} {:>13} {:>11} {:>9} {:>11} {:>13} {:>9} {:>7}",
        "threads", "sequential ms", "skelaff ms", "rayon ms", "skelaff/seq", "skelaff/rayon", "units", "aborts"
    );
    let mut rows = Vec::new();
    for (i, &t) in args.threads.iter().enumerate() {
        let (s, r) = (ms(median_duration(&skel_times[i])), ms(median_duration(&rayon_times[i])));
        let mid = |v: &Vec<u64>| {
            let mut v = v.clone();
            v.sort_unstable();
            v[v.len() / 2]
        };
        let row = Row {
            threads: t,
            skelaff_ms: s,
            rayon_ms: r,
            ratio_skelaff_vs_sequential: s / seq,
            ratio_skelaff_vs_rayon: s / r,
            units_median_round: mid(&units[i]),
            aborts_median_round: mid(&aborts[i]),
        };
        println!(
            "{t:>7} {seq:>13.2} {s:>11.2} {r:>9.2} {:>10.2}x {:>12.2}x {:>9} {:>7}",
            row.ratio_skelaff_vs_sequential,
            row.ratio_skelaff_vs_rayon,
            row.units_median_round,
            row.aborts_median_round
        );
        rows.push(row);
    }
    println!("all three agree: {}", if agree { "yes" } else { "NO" });
    if args.json {
        let summary = Summary {
            example: "sssp",
            vertices: args.vertices,
            edges: g.targets.len(),
            source,
            reached,
            rounds: args.rounds,
            sequential_ms: seq,
            results: rows,
            agree,
        };
        match serde_json::to_string(&summary) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("sssp: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if agree { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
