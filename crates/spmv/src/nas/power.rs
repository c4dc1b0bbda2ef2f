//! The benchmark's inverse power method, once for every [`CgSystem`]: `n`
//! outer iterations of 25 CG steps on `A z = x`, `zeta = shift + 1 / (x ·
//! z)`, `x = z / ‖z‖`, with `x` reset to ones at the start.

use crate::array::SharedArray;
use crate::cg::{CgSystem, CgVecs, cg_steps};
use crate::team::{SharedMut, Team};

use super::{CG_STEPS, ClassParams, Iteration};

/// The five vectors of the benchmark: `p` (placed as an SpMV input), `q`,
/// `r`, `z` and `x` (placed as outputs), each `local_len()` long.
pub(crate) struct PowerVecs {
    pub(crate) p: SharedArray<f64>,
    pub(crate) q: SharedArray<f64>,
    pub(crate) r: SharedArray<f64>,
    pub(crate) z: SharedArray<f64>,
    pub(crate) x: SharedArray<f64>,
}

/// Runs `iterations` outer iterations on `team`; returns thread 0's log.
pub(crate) fn power_method(
    team: &Team,
    sys: &impl CgSystem,
    vecs: &mut PowerVecs,
    params: &ClassParams,
    iterations: usize,
) -> Vec<Iteration> {
    let v = CgVecs {
        p: SharedMut::new(&mut vecs.p),
        q: SharedMut::new(&mut vecs.q),
        r: SharedMut::new(&mut vecs.r),
        z: SharedMut::new(&mut vecs.z),
    };
    let x = SharedMut::new(&mut vecs.x);
    let logs = team.run_collect(|member| {
        let rows = sys.rows(member.index());
        // SAFETY: thread-owned rows of x.
        unsafe { x.range_mut(rows.clone()) }.fill(1.0);
        let mut log = Vec::with_capacity(iterations);
        for it in 1..=iterations {
            // conj_grad: q = z = 0, r = p = x, rho = r·r.
            let mut local = 0.0;
            // SAFETY: every vector is touched in this thread's rows only
            // until the reduction's barrier makes p complete.
            unsafe {
                v.q.range_mut(rows.clone()).fill(0.0);
                v.z.range_mut(rows.clone()).fill(0.0);
                let (xr, rr, pr) =
                    (x.range_mut(rows.clone()), v.r.range_mut(rows.clone()), v.p.range_mut(rows.clone()));
                for ((ri, pi), &xi) in rr.iter_mut().zip(pr.iter_mut()).zip(xr.iter()) {
                    *ri = xi;
                    *pi = xi;
                    local += xi * xi;
                }
            }
            let [rho] = sys.sums(member, [local]);
            // SAFETY: same vectors on every thread; p complete. NPB runs its
            // 25 steps whatever pᵀAp is (its shifted matrix is indefinite).
            unsafe { cg_steps(member, sys, &v, rho, CG_STEPS, f64::NEG_INFINITY, false) };
            // ‖x - A z‖: z is complete after the last step's barrier.
            // SAFETY: z is read-only here; r is written by the operator.
            unsafe { sys.apply_part(member, v.z.as_slice(), v.r) };
            // SAFETY: own rows; x and z are not written by anyone else now.
            let (xr, zr, rr) = unsafe { (x.range_mut(rows.clone()), v.z.range(rows.clone()), v.r.range(rows.clone())) };
            let (mut res, mut xz, mut zz) = (0.0, 0.0, 0.0);
            for ((&xi, &zi), &ri) in xr.iter().zip(zr).zip(rr) {
                let d = xi - ri;
                res += d * d;
                xz += xi * zi;
                zz += zi * zi;
            }
            let [res, xz, zz] = sys.sums(member, [res, xz, zz]);
            let zeta = params.shift + 1.0 / xz;
            let scale = 1.0 / zz.sqrt();
            for (xi, &zi) in xr.iter_mut().zip(zr) {
                *xi = scale * zi;
            }
            log.push(Iteration { it, rnorm: res.sqrt(), zeta });
        }
        log
    });
    logs.into_iter().next().unwrap_or_default()
}
