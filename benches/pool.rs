//! Start-up of a run: an empty run and a run of 16 trivial units on a warm
//! `WorkerPool`, beside the same run on per-run threads (created, pinned
//! and joined by the run, as before pools) and `rayon::scope` over the same
//! units on a warm rayon pool, at 1 and 2 workers.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use skelaff::stm::{TxError, TxOps};
use skelaff::worklist::{Builder, ProcessCtx, Skeleton, WorkerInfo, WorkerPool};

/// A unit adds itself to a plain counter: no transactional access, so
/// what is timed is the skeleton's start, hand-out and end.
struct Trivial;

impl Skeleton for Trivial {
    type Unit = u64;
    type Shared = AtomicU64;
    type PerWorker = ();
    fn init_worker(&self, _: &AtomicU64, _: &WorkerInfo) {}
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        _: &mut X,
        u: &u64,
        _: &mut (),
        sum: &'t AtomicU64,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        sum.fetch_add(*u, Ordering::Relaxed);
        Ok(())
    }
}

fn skelaff_run(builder: &Builder, pool: Option<&WorkerPool>, units: u64) {
    let sum = AtomicU64::new(0);
    let mut wl = builder.clone().build(&Trivial, &sum).expect("threads > 0");
    wl.add_work_units(0..units);
    let r = match pool {
        Some(p) => wl.run_on(p),
        None => wl.run(),
    }
    .expect("the trivial skeleton cannot fail");
    assert_eq!(r.units, units);
}

fn rayon_run(pool: &rayon::ThreadPool, units: u64) {
    let sum = AtomicU64::new(0);
    pool.scope(|s| {
        for u in 0..units {
            let sum = &sum;
            s.spawn(move |_| {
                sum.fetch_add(u, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(sum.into_inner(), units * units.saturating_sub(1) / 2);
}

fn bench(c: &mut Criterion) {
    for units in [0u64, 16] {
        let mut g = c.benchmark_group(if units == 0 { "empty_run" } else { "16_trivial_units" });
        g.measurement_time(Duration::from_secs(3));
        g.warm_up_time(Duration::from_secs(1));
        g.sample_size(30);
        for threads in [1usize, 2] {
            let builder = Builder::new().threads(threads);
            let pool = WorkerPool::new(&builder).expect("a worker pool");
            let per_run = builder.clone().per_run_threads(true);
            let rayon = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("rayon pool");
            g.bench_with_input(BenchmarkId::new("pool", threads), &threads, |b, _| {
                b.iter(|| skelaff_run(&builder, Some(&pool), units))
            });
            g.bench_with_input(BenchmarkId::new("process_pool", threads), &threads, |b, _| {
                b.iter(|| skelaff_run(&builder, None, units))
            });
            g.bench_with_input(BenchmarkId::new("per_run_threads", threads), &threads, |b, _| {
                b.iter(|| skelaff_run(&per_run, None, units))
            });
            g.bench_with_input(BenchmarkId::new("rayon_scope", threads), &threads, |b, _| {
                b.iter(|| rayon_run(&rayon, units))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
