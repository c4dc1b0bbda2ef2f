//! CSR SpMV on the NAS CG class B matrix (75000 rows, 13.7 M entries):
//! skelaff at 1 and 2 threads against `sprs` (serial: its rayon feature does
//! not parallelise SpMV) and `nalgebra-sparse`, in the same run; then the
//! row and entry splits on an irregular matrix, and the CSR, CSC and
//! symmetric kernels on the class B matrix. Throughput is the byte model of
//! `skelaff_spmv::ops` (for CSR: `nnz × 12 + rows × 12 + cols × 8` per SpMV).
//!
//! After the peer group, the medians criterion recorded are printed as
//! ratios (skelaff over each peer).
//!
//! ```sh
//! cargo bench --bench spmv --features spmv-peers
//! ```

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use skelaff_bench_support::spmv_peers as peers;

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use skelaff::numa::Topology;
use skelaff::spmv::nas::{self, Class};
use skelaff::spmv::{
    CscSpmv, Csr, CsrSpmv, Masa, Schedule, SharedArray, SplitKind, SpmvOptions, SymSpmv, SymVariant, Team, TeamSpmv,
    Triplets,
};

fn criterion_dir() -> PathBuf {
    // CARGO_TARGET_TMPDIR is <target>/tmp; reports go to <target>/criterion.
    Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap_or(Path::new("target")).join("criterion")
}

fn team(threads: usize) -> (Masa, Team) {
    let masa = Masa::preprocess_with(Topology::get().expect("topology"), threads, Schedule::Static).expect("masa");
    let team = masa.team().expect("team");
    (masa, team)
}

fn input(n: usize) -> Vec<f64> {
    (0..n).map(|i| 1.0 + (i % 17) as f64 / 16.0).collect()
}

/// Times `op` (x and y placed as the operator wants them) under `id`.
fn bench_op(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: BenchmarkId,
    team: &Team,
    op: &mut dyn TeamSpmv<f64>,
) {
    let mut x: SharedArray<f64> = op.input_vector().expect("x");
    x.copy_from_slice(&input(op.ncols()));
    let mut y: SharedArray<f64> = op.output_vector().expect("y");
    g.throughput(Throughput::Bytes(op.model_bytes()));
    g.bench_function(id, |b| b.iter(|| op.apply(team, &x, &mut y).expect("sizes match")));
}

/// The median criterion recorded for `group/id`, in seconds (read from
/// criterion's `estimates.json`: not a median of samples in hand, so not
/// `skelaff_bench_support::median`).
fn recorded_median(group: &str, id: &str) -> Option<f64> {
    let path = criterion_dir().join(group).join(id).join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64().map(|ns| ns * 1e-9)
}

fn peers_group(c: &mut Criterion, a: &Csr) {
    let group = "csr_nas_b";
    let mut g = c.benchmark_group(group);
    g.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    let bytes = CsrSpmv::new(&team(1).0, a, SpmvOptions::default()).expect("op").model_bytes();
    for threads in [1, 2] {
        let (masa, team) = team(threads);
        let mut op = CsrSpmv::new(&masa, a, SpmvOptions::default()).expect("op");
        bench_op(&mut g, BenchmarkId::new("skelaff", threads), &team, &mut op);
    }
    let x = input(a.ncols());
    g.throughput(Throughput::Bytes(bytes));
    // The peers must compute what skelaff computes.
    let mut want = vec![0.0; a.nrows()];
    a.mul_vec_seq(&x, &mut want).expect("sizes");
    let close = |y: &[f64]| y.iter().zip(&want).all(|(p, q)| (p - q).abs() <= 1e-12 * q.abs().max(1.0));
    let sp = peers::Sprs::new(a);
    let mut y = vec![0.0; a.nrows()];
    sp.mul(&x, &mut y);
    assert!(close(&y), "sprs disagrees with the reference");
    g.bench_function("sprs", |b| b.iter(|| sp.mul(&x, &mut y)));
    let mut na = peers::Nalgebra::new(a, &x);
    na.mul();
    assert!(close(na.y()), "nalgebra-sparse disagrees with the reference");
    g.bench_function("nalgebra-sparse", |b| b.iter(|| na.mul()));
    g.finish();

    println!("\nratios of medians (same run; > 1 means skelaff is faster):");
    for threads in [1, 2] {
        for peer in ["sprs", "nalgebra-sparse"] {
            match (recorded_median(group, &format!("skelaff/{threads}")), recorded_median(group, peer)) {
                (Some(s), Some(p)) => println!(
                    "  skelaff {threads} thread(s) vs {peer:<16} {:.2}x   ({:.2} GB/s vs {:.2} GB/s by the byte model)",
                    p / s,
                    bytes as f64 / s / 1e9,
                    bytes as f64 / p / 1e9
                ),
                _ => println!("  skelaff {threads} thread(s) vs {peer}: no criterion estimates found"),
            }
        }
    }
    println!();
}

/// Rows of very different lengths: a few thousand-entry rows among short ones.
fn irregular(n: usize) -> Csr {
    let mut t = Triplets::new(n, n).expect("dims");
    for i in 0..n {
        let len = if i < n / 50 { 2000 } else { 4 + i % 8 };
        for k in 0..len {
            t.push(i, (i * 7919 + k * 104_729) % n, 1.0).expect("in range");
        }
    }
    t.to_csr()
}

fn splits_group(c: &mut Criterion) {
    let a = irregular(200_000);
    let mut g = c.benchmark_group("csr_split_irregular");
    g.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    let (masa, team) = team(2);
    for split in [SplitKind::Rows, SplitKind::Nnz] {
        let mut op = CsrSpmv::new(&masa, &a, SpmvOptions::default().split(split)).expect("op");
        bench_op(&mut g, BenchmarkId::new("skelaff-2t", split), &team, &mut op);
    }
    g.finish();
}

fn formats_group(c: &mut Criterion, a: &Csr) {
    let mut g = c.benchmark_group("formats_nas_b_2t");
    g.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    let (masa, team) = team(2);
    let opts = SpmvOptions::default().split(SplitKind::Nnz);
    bench_op(&mut g, BenchmarkId::from_parameter("csr"), &team, &mut CsrSpmv::new(&masa, a, opts).expect("op"));
    bench_op(
        &mut g,
        BenchmarkId::from_parameter("csc"),
        &team,
        &mut CscSpmv::new(&masa, &a.to_csc(), opts).expect("op"),
    );
    let lower = a.lower_triangle();
    for v in [SymVariant::Duplicated, SymVariant::Single] {
        let mut op = SymSpmv::new(&masa, &lower, v, opts).expect("op");
        bench_op(&mut g, BenchmarkId::new("sym", v), &team, &mut op);
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    let a = nas::class_matrix(Class::B).expect("class B matrix");
    peers_group(c, &a);
    splits_group(c);
    formats_group(c, &a);
    if Topology::get().map(|t| t.nodes().len()).unwrap_or(1) == 1 {
        println!("note: this machine has 1 NUMA node, so MASA placement and first touch put every page on it alike");
    }
}

criterion_group! {
    name = spmv;
    config = Criterion::default().output_directory(&criterion_dir());
    targets = benches
}
criterion_main!(spmv);
