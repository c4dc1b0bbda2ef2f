//! Criterion benchmarks of `NumaAlloc` beside glibc malloc (`System`),
//! mimalloc and (with `--features peer-jemalloc`) jemalloc, on the workloads of `skelaff_bench_support::alloc_workloads`: small
//! blocks on one thread and two, producer/consumer across two threads, a
//! mixed workload, and allocating-and-prefaulting a large region against a
//! `Vec` touched the same way. Every allocator runs in the same process and
//! run; compare the lines of a group. `examples/alloc_bench.rs` prints the
//! same comparisons as ratios in one pass.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use alloc_workloads::{NAMES, by_name};
use skelaff_bench_support::alloc_workloads;

const SMALL_OPS: usize = 200_000;
const MIXED_OPS: usize = 50_000;
const LARGE: usize = 64 << 20;

fn small(c: &mut Criterion) {
    for threads in [1, 2] {
        let mut g = c.benchmark_group(format!("small_same_thread/{threads}thr"));
        g.throughput(Throughput::Elements((SMALL_OPS * threads) as u64));
        for &name in NAMES {
            let a = by_name(name).expect("a known allocator");
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| a.same_thread(threads, SMALL_OPS)).sum::<Duration>())
            });
        }
        g.finish();
    }
    let mut g = c.benchmark_group("small_producer_consumer/2thr");
    g.throughput(Throughput::Elements(SMALL_OPS as u64));
    for &name in NAMES {
        let a = by_name(name).expect("a known allocator");
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| a.producer_consumer(SMALL_OPS)).sum::<Duration>())
        });
    }
    g.finish();
}

fn mixed(c: &mut Criterion) {
    for threads in [1, 2] {
        let mut g = c.benchmark_group(format!("mixed/{threads}thr"));
        g.throughput(Throughput::Elements((MIXED_OPS * threads) as u64));
        for &name in NAMES {
            let a = by_name(name).expect("a known allocator");
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| a.mixed(threads, MIXED_OPS)).sum::<Duration>())
            });
        }
        g.finish();
    }
}

fn large(c: &mut Criterion) {
    let mut g = c.benchmark_group("large_prefault_64MiB");
    g.throughput(Throughput::Bytes(LARGE as u64));
    g.sample_size(10);
    let numa = by_name("numa").expect("numa");
    g.bench_function("numa", |b| b.iter_custom(|iters| numa.large_prefault(LARGE, iters as usize)));
    g.bench_function("vec_first_touch", |b| {
        b.iter_custom(|iters| alloc_workloads::vec_prefault(LARGE, iters as usize))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = small, mixed, large
}
criterion_main!(benches);
