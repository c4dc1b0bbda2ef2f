//! vacation, kmeans and genome on the skeleton, each beside its own
//! sequential version (plain data structures, no transactions), measured
//! in the same run on the application's built-in small input.
//!
//! ```sh
//! cargo bench --features stamp --bench stamp_vs_sequential
//! ```
//!
//! vacation has a second sequential peer, `sequential-stamp`: its
//! transactional tables (red-black trees) run through the uninstrumented
//! `Plain` `TxOps`, as STAMP's sequential build (`--sequential-tables
//! stamp`); its line gives that ratio too.
//!
//! Each measurement is the application's timed phase (the input is
//! generated and the tables built outside it, as STAMP times only its
//! parallel part); every run's self-check must pass. After criterion's
//! report, one line per application gives the ratios of the sequential
//! version's mean time to the skeleton's at 1 and 2 threads (above 1: the
//! skeleton is faster).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};
use skelaff::stamp::genome::Genome;
use skelaff::stamp::kmeans::Kmeans;
use skelaff::stamp::vacation::{SequentialTables, Vacation, VacationArgs};
use skelaff::stamp::{App, CommonArgs};

/// Total timed-phase time and runs, per (application, configuration).
type Totals = BTreeMap<(&'static str, &'static str), (Duration, u64)>;
static TOTALS: Mutex<Totals> = Mutex::new(BTreeMap::new());

const CONFIGS: [(&str, usize, bool); 3] = [("sequential", 1, true), ("skeleton-1", 1, false), ("skeleton-2", 2, false)];

fn bench<A: App>(c: &mut Criterion) {
    bench_with::<A>(c, &[]);
}

/// The common configurations, then `extra` (a label and the flags of a
/// further sequential peer).
fn bench_with<A: App>(c: &mut Criterion, extra: &[(&'static str, A::Args)]) {
    let mut g = c.benchmark_group(A::NAME);
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    let configs = CONFIGS.iter().map(|&(label, threads, sequential)| {
        let mut args = A::small();
        A::set_threads(&mut args, threads);
        (label, args, sequential)
    });
    for (label, args, sequential) in configs.chain(extra.iter().map(|(l, a)| (*l, a.clone(), true))) {
        let common = CommonArgs { sequential, ..CommonArgs::default() };
        g.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let outcome = match A::run(&args, &common) {
                        Ok(o) => o,
                        Err(e) => panic!("{} {label}: {e}", A::NAME),
                    };
                    assert!(outcome.passed(), "{} {label}: self-check failed: {:?}", A::NAME, outcome.check);
                    total += outcome.time;
                }
                let mut totals = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
                let t = totals.entry((A::NAME, label)).or_default();
                t.0 += total;
                t.1 += iters;
                total
            });
        });
    }
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let stamp = VacationArgs { sequential_tables: SequentialTables::Stamp, ..Vacation::small() };
    bench_with::<Vacation>(&mut c, &[("sequential-stamp", stamp)]);
    bench::<Kmeans>(&mut c);
    bench::<Genome>(&mut c);
    c.final_summary();
    let totals = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
    let mean = |app, label| totals.get(&(app, label)).map(|(t, n)| t.as_secs_f64() / (*n).max(1) as f64);
    for app in [Vacation::NAME, Kmeans::NAME, Genome::NAME] {
        if let (Some(s), Some(p1), Some(p2)) =
            (mean(app, "sequential"), mean(app, "skeleton-1"), mean(app, "skeleton-2"))
        {
            println!(
                "{app}: sequential {:.3} ms, skeleton 1 thread {:.3} ms, 2 threads {:.3} ms; \
                 sequential/skeleton = {:.2} at 1 thread, {:.2} at 2 threads",
                s * 1e3,
                p1 * 1e3,
                p2 * 1e3,
                s / p1,
                s / p2
            );
        }
    }
    if let (Some(s), Some(p1), Some(p2)) = (
        mean(Vacation::NAME, "sequential-stamp"),
        mean(Vacation::NAME, "skeleton-1"),
        mean(Vacation::NAME, "skeleton-2"),
    ) {
        println!(
            "vacation: STAMP-style sequential (red-black trees, no STM) {:.3} ms; \
             sequential-stamp/skeleton = {:.2} at 1 thread, {:.2} at 2 threads",
            s * 1e3,
            s / p1,
            s / p2
        );
    }
}
