//! STAMP's labyrinth on the skeleton beside its own sequential version (one
//! thread, plain grid, no transactions), on the same generated maze: the
//! skeleton at 1 and 2 workers against `sequential`. All route the pairs in
//! STAMP's order (longest first; `--shuffle 0`), so they do comparable
//! work; each iteration is one whole run, each result is checked once
//! before timing.
//!
//! - `small`: `random-x32-y32-z3-n96` (STAMP's simulator input);
//! - `medium`: `random-x128-y128-z5-n128`.
//!
//! `cargo bench --features stamp --bench labyrinth`; the ratio to report is
//! `sequential / skeleton_2t` (above 1: the skeleton is faster).

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use skelaff::stamp::app::CommonArgs;
use skelaff::stamp::labyrinth::{Costs, Maze, run_sequential, run_skeleton};

fn bench(c: &mut Criterion) {
    for (name, shape) in [("small", "random-x32-y32-z3-n96"), ("medium", "random-x128-y128-z5-n128")] {
        let maze = Maze::load(shape, 0, 0).expect("valid shape");
        let order = maze.routing_order();
        let costs = Costs::default();
        let common = CommonArgs { shuffle: 0, ..CommonArgs::default() };
        maze.check(&run_sequential(&maze, costs, &order)).expect("sequential check");
        for threads in [1, 2] {
            let (r, _) = run_skeleton(&maze, costs, &order, threads, &common).expect("skeleton runs");
            maze.check(&r).expect("skeleton check");
        }
        let mut g = c.benchmark_group(format!("labyrinth_{name}"));
        g.sample_size(10).measurement_time(Duration::from_secs(5));
        g.bench_function("sequential", |b| b.iter(|| black_box(run_sequential(&maze, costs, &order))));
        for threads in [1, 2] {
            g.bench_function(format!("skeleton_{threads}t"), |b| {
                b.iter(|| black_box(run_skeleton(&maze, costs, &order, threads, &common).expect("runs")))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
