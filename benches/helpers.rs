//! Helper threads on a cold pointer chase: one worker with its helper
//! beside the same worker without (the ratio of the two is the figure),
//! and with the explicit prefetch hints (of the words, and of the words
//! and their STM lock words). The structure is 256 MiB, built
//! once; every iteration walks fresh units so that no run finds another's
//! lines in cache. `examples/helpers.rs` prints the full table.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::cell::Cell;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use skelaff::helpers::{HelperConfig, Prefetch, ShadowConfig};
use skelaff::worklist::Helpers;

use skelaff_bench_support::chase;

const NODES: usize = 4 << 20;
const HOPS: u32 = 64;
const UNITS: u64 = 2_000;

fn bench(c: &mut Criterion) {
    let big = chase::Chase::new(NODES, HOPS, 0, 1);
    let next = Cell::new(0u64);
    let fresh = || {
        let s = next.get();
        next.set(s + UNITS);
        s..s + UNITS
    };
    let fixed = |prefetch| HelperConfig {
        shadow: ShadowConfig { prefetch, ..ShadowConfig::default() },
        adaptive: None,
        ..HelperConfig::default()
    };
    let mut g = c.benchmark_group("cold_pointer_chase");
    g.throughput(Throughput::Elements(UNITS * u64::from(HOPS)));
    g.measurement_time(Duration::from_secs(5));
    g.sample_size(10);
    let configs: [(&str, Option<(Helpers, HelperConfig)>); 4] = [
        ("off", None),
        ("on", Some((Helpers::On, fixed(Prefetch::Load)))),
        ("on_hint", Some((Helpers::On, fixed(Prefetch::Hint)))),
        ("on_hint_locks", Some((Helpers::On, fixed(Prefetch::HintLocks)))),
    ];
    for (name, cfg) in &configs {
        g.bench_function(BenchmarkId::new(*name, HOPS), |b| {
            b.iter_custom(|iters| {
                (0..iters).map(|_| chase::run(&big, fresh(), cfg.as_ref().map(|(h, c)| (*h, c))).0).sum()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
