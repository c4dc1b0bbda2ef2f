//! Skeleton overhead per empty unit, beside a plain crossbeam-deque loop
//! and rayon, at 1 and 2 threads.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use skelaff::worklist::Distribution;

use skelaff_bench_support::overhead;

const UNITS: u64 = 200_000;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("empty_units");
    g.throughput(Throughput::Elements(UNITS));
    g.measurement_time(Duration::from_secs(4));
    g.sample_size(20);
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("rayon pool");
        g.bench_with_input(BenchmarkId::new("crossbeam", threads), &threads, |b, &t| {
            b.iter_custom(|iters| (0..iters).map(|_| overhead::crossbeam(UNITS, t)).sum())
        });
        g.bench_with_input(BenchmarkId::new("rayon", threads), &threads, |b, _| {
            b.iter_custom(|iters| (0..iters).map(|_| overhead::rayon(UNITS, &pool)).sum())
        });
        g.bench_with_input(BenchmarkId::new("skelaff_per_node", threads), &threads, |b, &t| {
            b.iter_custom(|iters| (0..iters).map(|_| overhead::skelaff(UNITS, t, Distribution::PerNode)).sum())
        });
        g.bench_with_input(BenchmarkId::new("skelaff_shared", threads), &threads, |b, &t| {
            b.iter_custom(|iters| (0..iters).map(|_| overhead::skelaff(UNITS, t, Distribution::Shared)).sum())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
