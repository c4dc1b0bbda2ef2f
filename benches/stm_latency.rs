//! Uncontended latency of small transactions on skelaff-stm, beside what a
//! user would pick instead: a parking_lot mutex around the same data, and
//! the crates.io STMs stm-core and fast-stm. One thread, no conflicts: the
//! cost of the transaction machinery itself.
//!
//! - `read_only`: read 4 words, return their sum;
//! - `read_write`: read 2 words, write both (a transfer).
//!
//! `cargo bench --bench stm_latency`; compare the lines of each group (the
//! note of the STM issue gives the ratios measured).

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use skelaff::stm::{self, TVar, TxOps};

fn read_only(c: &mut Criterion) {
    let mut g = c.benchmark_group("read_only_4_words");
    let vars: Vec<TVar<u64>> = (0..4).map(TVar::new).collect();
    g.bench_function("skelaff", |b| {
        b.iter(|| {
            stm::atomically(|tx| {
                let mut s = 0;
                for v in &vars {
                    s += tx.read(v)?;
                }
                Ok(black_box(s))
            })
        })
    });
    let m = parking_lot::Mutex::new([0u64, 1, 2, 3]);
    g.bench_function("parking_lot_mutex", |b| b.iter(|| black_box(m.lock().iter().sum::<u64>())));
    let core_vars: Vec<stm_core::TVar<u64>> = (0..4).map(stm_core::TVar::new).collect();
    g.bench_function("stm-core", |b| {
        b.iter(|| {
            stm_core::atomically(|tx| {
                let mut s = 0;
                for v in &core_vars {
                    s += v.read(tx)?;
                }
                Ok(black_box(s))
            })
        })
    });
    let fast_vars: Vec<fast_stm::TVar<u64>> = (0..4).map(fast_stm::TVar::new).collect();
    g.bench_function("fast-stm", |b| {
        b.iter(|| {
            fast_stm::atomically(|tx| {
                let mut s = 0;
                for v in &fast_vars {
                    s += v.read(tx)?;
                }
                Ok(black_box(s))
            })
        })
    });
    g.finish();
}

fn read_write(c: &mut Criterion) {
    let mut g = c.benchmark_group("read_write_2_words");
    let (a, b2) = (TVar::new(1_000_000u64), TVar::new(0u64));
    g.bench_function("skelaff", |b| {
        b.iter(|| {
            stm::atomically(|tx| {
                let x = tx.read(&a)?;
                let y = tx.read(&b2)?;
                tx.write(&a, x.wrapping_sub(1))?;
                tx.write(&b2, y.wrapping_add(1))
            })
        })
    });
    let m = parking_lot::Mutex::new((1_000_000u64, 0u64));
    g.bench_function("parking_lot_mutex", |b| {
        b.iter(|| {
            let mut g = m.lock();
            g.0 = g.0.wrapping_sub(1);
            g.1 = g.1.wrapping_add(1);
        })
    });
    let (ca, cb) = (stm_core::TVar::new(1_000_000u64), stm_core::TVar::new(0u64));
    g.bench_function("stm-core", |b| {
        b.iter(|| {
            stm_core::atomically(|tx| {
                let x = ca.read(tx)?;
                let y = cb.read(tx)?;
                ca.write(tx, x.wrapping_sub(1))?;
                cb.write(tx, y.wrapping_add(1))
            })
        })
    });
    let (fa, fb) = (fast_stm::TVar::new(1_000_000u64), fast_stm::TVar::new(0u64));
    g.bench_function("fast-stm", |b| {
        b.iter(|| {
            fast_stm::atomically(|tx| {
                let x = fa.read(tx)?;
                let y = fb.read(tx)?;
                fa.write(tx, x.wrapping_sub(1))?;
                fb.write(tx, y.wrapping_add(1))
            })
        })
    });
    g.finish();
}

criterion_group!(benches, read_only, read_write);
criterion_main!(benches);
