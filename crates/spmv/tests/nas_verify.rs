//! NAS CG classes S and W verify against the official zeta (NPB's 1e-10
//! relative tolerance), at 1 and 2 threads, with each split and placement.

use skelaff_spmv::nas::{self, Class};
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
