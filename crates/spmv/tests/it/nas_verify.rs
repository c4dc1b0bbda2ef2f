//! NAS CG classes S and W verify against the official zeta (NPB's 1e-10
//! relative tolerance), at 1 and 2 threads, with each split and placement;
//! a short run (`NasCg::run_iterations`) makes the first iterations of a
//! full one.

use std::num::NonZeroUsize;

use skelaff_spmv::nas::{self, Class, NasCg};
use skelaff_spmv::{ArrayPlacement, Masa, Schedule, Simd, SplitKind, SpmvOptions};

fn run(class: Class, threads: usize, opts: SpmvOptions) -> nas::NasReport {
    let masa = Masa::preprocess_with(skelaff_numa_alloc::Topology::get().unwrap(), threads, Schedule::Static).unwrap();
    let team = masa.team().unwrap();
    nas::run(&masa, &team, class, opts).unwrap()
}

fn check(r: &nas::NasReport) {
    assert!(r.verified, "class {} zeta {:.13} vs {:.13}: error {:e}", r.class, r.zeta, r.params.zeta_verify, r.error);
    assert_eq!(r.iterations.len(), r.params.niter);
    assert!(r.iterations.iter().all(|i| i.rnorm.is_finite() && i.rnorm < 1e-10), "{:?}", r.iterations.last());
    assert!(r.mops > 0.0 && r.seconds > 0.0);
}

#[test]
fn class_s_verifies_every_way() {
    for threads in [1, 2] {
        for split in [SplitKind::Rows, SplitKind::Nnz] {
            for placement in [ArrayPlacement::FirstTouch, ArrayPlacement::Masa, ArrayPlacement::Interleave] {
                for simd in Simd::available() {
                    let r = run(Class::S, threads, SpmvOptions { split, placement, simd });
                    check(&r);
                }
            }
        }
    }
}

#[test]
fn class_w_verifies() {
    for threads in [1, 2] {
        let r = run(Class::W, threads, SpmvOptions::default().split(SplitKind::Nnz));
        check(&r);
    }
}

#[test]
fn class_a_verifies() {
    let r = run(Class::A, 2, SpmvOptions::default());
    check(&r);
}

/// The emulated machines' locality test checks one verified run and short
/// ones against its first zeta: a short run's log must be the full run's
/// first entries, on a fresh benchmark and on one that has already run.
#[test]
fn a_short_run_makes_the_first_iterations_of_a_full_one() {
    let masa = Masa::preprocess_with(skelaff_numa_alloc::Topology::get().unwrap(), 2, Schedule::Static).unwrap();
    let team = masa.team().unwrap();
    let opts = SpmvOptions::default().placement(ArrayPlacement::Interleave);
    let full = NasCg::new(&masa, Class::S, opts).unwrap().run(&team).unwrap();
    check(&full);
    let two = NonZeroUsize::new(2).unwrap();
    let mut cg = NasCg::new(&masa, Class::S, opts).unwrap();
    for short in [cg.run_iterations(&team, two).unwrap(), cg.run_iterations(&team, two).unwrap()] {
        assert_eq!(short.iterations.len(), 2);
        for (s, f) in short.iterations.iter().zip(&full.iterations) {
            assert_eq!(s.it, f.it);
            assert!((s.zeta - f.zeta).abs() <= 1e-12 * f.zeta.abs(), "zeta {} vs the full run's {}", s.zeta, f.zeta);
            assert!(
                (s.rnorm - f.rnorm).abs() <= 1e-9 * f.rnorm.abs(),
                "rnorm {} vs the full run's {}",
                s.rnorm,
                f.rnorm
            );
        }
        assert!(!short.verified, "two iterations verified: {short}");
        assert!(short.mops > 0.0 && short.mops.is_finite());
    }
}
