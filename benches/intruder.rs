//! STAMP's intruder on the skeleton beside its own sequential version (one
//! thread, plain ordered map, no transactions), on the same generated
//! stream: the skeleton at 1 and 2 workers against `sequential`, both with
//! STAMP's ordered reassembly map (`--map rbtree`). Each
//! iteration is one whole run (reassembly state built, every packet
//! processed, the result collected); the stream is generated once, outside
//! the timing, and each result is checked once before timing.
//!
//! - `default`: `-a10 -l4 -n2048 -s1` (STAMP's simulator input, the flags' default);
//! - `small`: `-a10 -l16 -n4096 -s1` (`Intruder::small()`).
//!
//! `cargo bench --features stamp --bench intruder`; the ratio to report is
//! `sequential / skeleton_2t` (above 1: the skeleton is faster).

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use skelaff::stamp::app::CommonArgs;
use skelaff::stamp::intruder::{MapKind, Stream, Variant, run_sequential, run_skeleton};

fn bench(c: &mut Criterion) {
    for (name, (a, l, n)) in [("default", (10, 4, 2048)), ("small", (10, 16, 4096))] {
        let stream = Stream::generate(a, l, n, 1).expect("valid input");
        let common = CommonArgs::default();
        stream.check(&run_sequential(&stream, MapKind::Rbtree)).expect("sequential check");
        for threads in [1, 2] {
            let (d, _) = run_skeleton(&stream, threads, Variant::default(), &common).expect("skeleton runs");
            stream.check(&d).expect("skeleton check");
        }
        let mut g = c.benchmark_group(format!("intruder_{name}"));
        g.sample_size(20).measurement_time(Duration::from_secs(5));
        g.bench_function("sequential", |b| b.iter(|| black_box(run_sequential(&stream, MapKind::Rbtree))));
        for threads in [1, 2] {
            g.bench_function(format!("skeleton_{threads}t"), |b| {
                b.iter(|| black_box(run_skeleton(&stream, threads, Variant::default(), &common).expect("runs")))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
