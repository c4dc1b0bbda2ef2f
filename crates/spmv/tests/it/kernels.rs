//! Every operator, split, placement, kernel level and thread count against
//! the sequential reference on random sparse matrices (with empty rows and
//! columns, 1x1 and all-zero matrices), and CG against its own residual.

use std::sync::OnceLock;

use proptest::prelude::*;
use skelaff_numa_alloc::Topology;
use skelaff_spmv::cg::{self, CgOptions};
use skelaff_spmv::{
    ArrayPlacement, CscSpmv, Csr, CsrSpmv, Masa, Schedule, Simd, SplitKind, SpmvOptions, SymSpmv, SymVariant, Team,
    TeamSpmv, Triplets,
};

const MAX_THREADS: usize = 3;

/// One MASA state and team per thread count, shared by every case.
fn teams() -> &'static Vec<(Masa, Team)> {
    static TEAMS: OnceLock<Vec<(Masa, Team)>> = OnceLock::new();
    TEAMS.get_or_init(|| {
        (1..=MAX_THREADS)
            .map(|t| {
                let masa = Masa::preprocess_with(Topology::get().unwrap(), t, Schedule::Static).unwrap();
                let team = masa.team().unwrap();
                (masa, team)
            })
            .collect()
    })
}

/// A random sparse matrix: each entry is present with probability
/// `density`, so rows and columns are often empty; duplicates included.
fn matrix(max_dim: usize) -> impl Strategy<Value = Triplets<f64>> {
    (0..=max_dim, 0..=max_dim, 0.0f64..0.6, any::<u64>()).prop_map(|(nrows, ncols, density, seed)| {
        let mut t = Triplets::new(nrows, ncols).unwrap();
        let mut s = seed | 1;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for i in 0..nrows {
            for j in 0..ncols {
                if (next() % 1000) as f64 / 1000.0 < density {
                    let v = (next() % 2001) as f64 / 100.0 - 10.0;
                    t.push(i, j, v).unwrap();
                    if next() % 10 == 0 {
                        t.push(i, j, 0.5).unwrap(); // a duplicate to sum
                    }
                }
            }
        }
        t
    })
}

fn options() -> impl Strategy<Value = (usize, SpmvOptions)> {
    (
        1..=MAX_THREADS,
        prop::sample::select(vec![SplitKind::Rows, SplitKind::Nnz]),
        prop::sample::select(vec![ArrayPlacement::Masa, ArrayPlacement::FirstTouch, ArrayPlacement::Interleave]),
        prop::sample::select(Simd::available()),
    )
        .prop_map(|(threads, split, placement, simd)| (threads, SpmvOptions { split, placement, simd }))
}

fn input(n: usize, seed: u64) -> Vec<f64> {
    (0..n).map(|i| ((i as u64 * 7 + seed) % 23) as f64 / 4.0 - 2.5).collect()
}

fn assert_close(got: &[f64], want: &[f64], a: &Csr, x: &[f64]) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len());
    // Error bound: rounding in a reordered sum of |a_ij x_j| terms.
    let mut scale = vec![0.0; want.len()];
    a.for_each(|i, j, v| scale[i] += (v * x[j]).abs());
    for (i, ((g, w), s)) in got.iter().zip(want).zip(&scale).enumerate() {
        prop_assert!((g - w).abs() <= 1e-13 * s + 1e-300, "row {}: {} vs {} (scale {})", i, g, w, s);
    }
    Ok(())
}

fn check(op: &mut dyn TeamSpmv<f64>, team: &Team, a: &Csr, seed: u64) -> Result<(), TestCaseError> {
    let x = input(a.ncols(), seed);
    let mut want = vec![0.0; a.nrows()];
    a.mul_vec_seq(&x, &mut want).unwrap();
    // Twice: the second call must not see leftovers of the first.
    for _ in 0..2 {
        let mut y = vec![f64::NAN; a.nrows()];
        op.apply(team, &x, &mut y).unwrap();
        assert_close(&y, &want, a, &x)?;
    }
    // And into the operator's own placed vectors.
    let mut xv = op.input_vector().unwrap();
    xv.copy_from_slice(&x);
    let mut yv = op.output_vector().unwrap();
    op.apply(team, &xv, &mut yv).unwrap();
    assert_close(&yv, &want, a, &x)
}

/// The symmetric matrix whose lower triangle `t` holds.
fn symmetric(t: &Triplets<f64>) -> Triplets<f64> {
    let n = t.nrows().min(t.ncols());
    let mut s = Triplets::new(n, n).unwrap();
    for (i, j, v) in t.iter() {
        if i < n && j < n && i >= j {
            s.push(i, j, v).unwrap();
            if i != j {
                s.push(j, i, v).unwrap();
            }
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn csr_matches_the_reference(t in matrix(40), (threads, opts) in options(), seed in 0u64..100) {
        let (masa, team) = &teams()[threads - 1];
        let a = t.to_csr();
        let mut op = CsrSpmv::new(masa, &a, opts).unwrap();
        check(&mut op, team, &a, seed)?;
    }

    #[test]
    fn csc_matches_the_reference(t in matrix(40), (threads, opts) in options(), seed in 0u64..100) {
        let (masa, team) = &teams()[threads - 1];
        let mut op = CscSpmv::new(masa, &t.to_csc(), opts).unwrap();
        // Every window lies inside the matrix and covers the rows its columns touch.
        for w in op.windows() {
            prop_assert!(w.end <= t.nrows());
        }
        check(&mut op, team, &t.to_csr(), seed)?;
    }

    #[test]
    fn symmetric_variants_match_the_full_matrix(
        t in matrix(40),
        (threads, opts) in options(),
        variant in prop::sample::select(vec![SymVariant::Duplicated, SymVariant::Single]),
        seed in 0u64..100,
    ) {
        let (masa, team) = &teams()[threads - 1];
        let full = symmetric(&t).to_csr();
        let lower = full.lower_triangle();
        let mut op = SymSpmv::new(masa, &lower, variant, opts).unwrap();
        let stored = if variant == SymVariant::Duplicated {
            2 * lower.nnz() - (0..full.nrows()).filter(|&i| full.row(i).0.contains(&(i as u32))).count()
        } else {
            lower.nnz()
        };
        prop_assert_eq!(op.stored_nnz(), stored);
        check(&mut op, team, &full, seed)?;
    }

    #[test]
    fn cg_solves_diagonally_dominant_systems(t in matrix(30), (threads, opts) in options()) {
        let (masa, team) = &teams()[threads - 1];
        // Symmetric, with a diagonal larger than each row's other entries: SPD.
        let s = symmetric(&t);
        let n = s.nrows();
        let mut spd = Triplets::new(n, n).unwrap();
        let mut row_sum = vec![0.0; n];
        for (i, j, v) in s.iter() {
            spd.push(i, j, v).unwrap();
            row_sum[i] += v.abs();
        }
        for (i, r) in row_sum.iter().enumerate() {
            spd.push(i, i, r + 1.0).unwrap();
        }
        let a = spd.to_csr();
        let b = input(n, 3);
        let mut x = vec![0.0; n];
        let mut op = CsrSpmv::new(masa, &a, opts).unwrap();
        let report = cg::solve(team, &mut op, &b, &mut x, CgOptions { tolerance: 1e-10, max_iter: 10 * n + 10 }).unwrap();
        prop_assert!(report.converged, "{:?}", report);
        let mut ax = vec![0.0; n];
        a.mul_vec_seq(&x, &mut ax).unwrap();
        let res: f64 = ax.iter().zip(&b).map(|(p, q)| (p - q) * (p - q)).sum::<f64>().sqrt();
        let bn: f64 = b.iter().map(|v| v * v).sum::<f64>().sqrt();
        prop_assert!(res <= 1e-8 * bn.max(1e-300) + 1e-12, "true residual {} for |b| {}", res, bn);
    }
}

#[test]
fn one_by_one_and_all_zero() {
    let (masa, team) = &teams()[1];
    let mut t = Triplets::new(1, 1).unwrap();
    t.push(0, 0, -3.0).unwrap();
    let mut y = [0.0];
    CsrSpmv::new(masa, &t.to_csr(), SpmvOptions::default()).unwrap().apply(team, &[2.0], &mut y).unwrap();
    assert_eq!(y, [-6.0]);
    CscSpmv::new(masa, &t.to_csc(), SpmvOptions::default()).unwrap().apply(team, &[2.0], &mut y).unwrap();
    assert_eq!(y, [-6.0]);
    let zero = Triplets::<f64>::new(5, 4).unwrap();
    let mut y = [1.0; 5];
    CsrSpmv::new(masa, &zero.to_csr(), SpmvOptions::default()).unwrap().apply(team, &[1.0; 4], &mut y).unwrap();
    assert_eq!(y, [0.0; 5]);
    let mut y = [1.0; 5];
    CscSpmv::new(masa, &zero.to_csc(), SpmvOptions::default()).unwrap().apply(team, &[1.0; 4], &mut y).unwrap();
    assert_eq!(y, [0.0; 5]);
}

#[test]
fn wrong_sizes_and_teams_are_errors() {
    let (masa, team) = &teams()[1];
    let (_, other) = &teams()[0];
    let mut t = Triplets::new(3, 2).unwrap();
    t.push(2, 1, 1.0).unwrap();
    let mut op = CsrSpmv::new(masa, &t.to_csr(), SpmvOptions::default()).unwrap();
    let mut y = [0.0; 3];
    assert!(matches!(op.apply(team, &[1.0; 3], &mut y), Err(skelaff_spmv::Error::DimensionMismatch { what: "x", .. })));
    assert!(matches!(
        op.apply(team, &[1.0; 2], &mut [0.0; 2]),
        Err(skelaff_spmv::Error::DimensionMismatch { what: "y", .. })
    ));
    assert!(matches!(
        op.apply(other, &[1.0; 2], &mut y),
        Err(skelaff_spmv::Error::TeamMismatch { expected: 2, got: 1 })
    ));
    let mut above = Triplets::new(2, 2).unwrap();
    above.push(0, 1, 1.0).unwrap();
    let e = SymSpmv::new(masa, &above.to_csc(), SymVariant::Single, SpmvOptions::default()).unwrap_err();
    assert!(matches!(e, skelaff_spmv::Error::NotLowerTriangular { row: 0, col: 1 }), "{e}");
    let e = SymSpmv::new(masa, &t.to_csc(), SymVariant::Single, SpmvOptions::default()).unwrap_err();
    assert!(matches!(e, skelaff_spmv::Error::NotSquare { .. }), "{e}");
    let mut x = vec![0.0; 3];
    let e = cg::solve(team, &mut op, &[1.0; 3], &mut x, CgOptions::default()).unwrap_err();
    assert!(matches!(e, skelaff_spmv::Error::NotSquare { .. }), "{e}");
}

#[test]
fn symmetric_input_with_unsorted_rows_and_duplicates() {
    let (masa, team) = &teams()[1];
    // Lower triangle of [[4, 1, 0], [1, 5, 2], [0, 2, 6]], column 1 given as
    // rows 2, 1, 1 (unsorted, the diagonal split in two duplicates).
    let lower = skelaff_spmv::Csc::from_parts(
        3,
        3,
        vec![0, 2, 5, 6],
        vec![1, 0, 2, 1, 1, 2],
        vec![1.0, 4.0, 2.0, 3.0, 2.0, 6.0],
    )
    .unwrap();
    for v in [SymVariant::Duplicated, SymVariant::Single] {
        let mut y = [0.0; 3];
        SymSpmv::new(masa, &lower, v, SpmvOptions::default())
            .unwrap()
            .apply(team, &[1.0, 10.0, 100.0], &mut y)
            .unwrap();
        assert_eq!(y, [14.0, 251.0, 620.0], "{v}");
    }
}

#[test]
fn f32_matrices_work_through_the_portable_kernels() {
    let (masa, team) = &teams()[1];
    let mut t = Triplets::<f32>::new(3, 3).unwrap();
    for i in 0..3 {
        t.push(i, i, 1.5).unwrap();
        t.push(i, (i + 1) % 3, 1.0).unwrap();
    }
    let mut y = [0.0f32; 3];
    CsrSpmv::new(masa, &t.to_csr(), SpmvOptions::default()).unwrap().apply(team, &[1.0, 2.0, 4.0], &mut y).unwrap();
    assert_eq!(y, [3.5, 7.0, 7.0]);
}
