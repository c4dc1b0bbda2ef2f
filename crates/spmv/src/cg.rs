//! The conjugate gradient method on a [`Team`], one SPMD job per solve.
//!
//! Every thread updates only the rows its operator gives it
//! ([`TeamSpmv::owned_rows`]); dot products are [`Ctx::sums`] reductions
//! (deterministic for a given thread count); a barrier separates the
//! update of the search direction from the next SpMV that reads all of it.
//! One CG step costs three barriers.

use crate::array::SharedArray;
use crate::error::{Error, Result};
use crate::matrix::check_len;
use crate::ops::TeamSpmv;
use crate::team::{Ctx, SharedMut, Team};

/// The work vectors of CG: search direction `p`, `q = A p`, residual `r`,
/// iterate `z`.
pub(crate) struct CgVecs<'a> {
    pub(crate) p: SharedMut<'a, f64>,
    pub(crate) q: SharedMut<'a, f64>,
    pub(crate) r: SharedMut<'a, f64>,
    pub(crate) z: SharedMut<'a, f64>,
}

/// CG steps from the current state (`p` complete on every thread, `rho =
/// r·r`) until `max_iter` steps or `rho <= stop_rho`. Returns the steps
/// taken and the final `rho`.
///
/// # Safety
///
/// Called by every thread of one team job with the same vectors (each of
/// length `op.nrows() == op.ncols()`), which nothing else touches during
/// the job; `p` must be complete (written before a barrier all threads
/// passed) on entry.
pub(crate) unsafe fn cg_steps(
    ctx: &Ctx<'_>,
    op: &impl TeamSpmv<f64>,
    v: &CgVecs<'_>,
    mut rho: f64,
    max_iter: usize,
    stop_rho: f64,
) -> (usize, f64) {
    let rows = op.owned_rows(ctx.index());
    let mut steps = 0;
    while steps < max_iter && rho > stop_rho {
        // SAFETY: p is complete and read-only until the update below; q is
        // written only through the operator.
        unsafe { op.apply_part(ctx, v.p.as_slice(), v.q) };
        // SAFETY: this thread's rows of p and q; nobody writes them now.
        let (p, q) = unsafe { (v.p.range(rows.clone()), v.q.range(rows.clone())) };
        let d = ctx.sum(p.iter().zip(q).map(|(a, b)| a * b).sum());
        let alpha = rho / d;
        let rho0 = rho;
        // SAFETY: each thread writes only its own rows of z and r; nobody
        // reads other threads' rows of them until the next barrier.
        let (z, r) = unsafe { (v.z.range_mut(rows.clone()), v.r.range_mut(rows.clone())) };
        let mut local = 0.0;
        for (((zi, ri), &pi), &qi) in z.iter_mut().zip(r.iter_mut()).zip(p).zip(q) {
            *zi += alpha * pi;
            *ri -= alpha * qi;
            local += *ri * *ri;
        }
        rho = ctx.sum(local);
        let beta = rho / rho0;
        // SAFETY: after the reduction's barrier no thread reads p until the
        // barrier below; each thread writes its own rows.
        let p = unsafe { v.p.range_mut(rows.clone()) };
        for (pi, &ri) in p.iter_mut().zip(r.iter()) {
            *pi = ri + beta * *pi;
        }
        ctx.barrier();
        steps += 1;
    }
    (steps, rho)
}

/// When to stop.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct CgOptions {
    /// Stop when `‖b - A x‖ <= tolerance × ‖b‖`.
    pub tolerance: f64,
    /// Stop after this many steps.
    pub max_iter: usize,
}

impl Default for CgOptions {
    fn default() -> Self {
        CgOptions { tolerance: 1e-10, max_iter: 1000 }
    }
}

/// What a solve did.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct CgReport {
    /// Steps taken.
    pub iterations: usize,
    /// `‖r‖` of the recursively updated residual at the end.
    pub residual_norm: f64,
    /// `‖b‖`.
    pub rhs_norm: f64,
    /// Whether the tolerance was met.
    pub converged: bool,
}

/// Solves `A x = b` for a symmetric positive definite `A` by conjugate
/// gradients on `team`, starting from the `x` given; `x` holds the result.
///
/// # Errors
///
/// [`Error::NotSquare`]; [`Error::DimensionMismatch`];
/// [`Error::TeamMismatch`]; allocation errors.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{CsrSpmv, Masa, SpmvOptions, Triplets, cg};
///
/// // The 1-D Laplacian, tridiagonal (-1, 2, -1).
/// let n = 50;
/// let mut t = Triplets::new(n, n)?;
/// for i in 0..n {
///     t.push(i, i, 2.0)?;
///     if i > 0 { t.push(i, i - 1, -1.0)?; }
///     if i + 1 < n { t.push(i, i + 1, -1.0)?; }
/// }
/// let masa = Masa::preprocess(2)?;
/// let team = masa.team()?;
/// let mut op = CsrSpmv::new(&masa, &t.to_csr(), SpmvOptions::default())?;
/// let b = vec![1.0; n];
/// let mut x = vec![0.0; n];
/// let report = cg::solve(&team, &mut op, &b, &mut x, cg::CgOptions::default())?;
/// assert!(report.converged && report.iterations <= n);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub fn solve(team: &Team, op: &mut impl TeamSpmv<f64>, b: &[f64], x: &mut [f64], opts: CgOptions) -> Result<CgReport> {
    let n = op.nrows();
    if op.ncols() != n {
        return Err(Error::NotSquare { what: "CG", nrows: n, ncols: op.ncols() });
    }
    if team.threads() != op.threads() {
        return Err(Error::TeamMismatch { expected: op.threads(), got: team.threads() });
    }
    check_len("b", b.len(), n)?;
    check_len("x", x.len(), n)?;
    let mut p: SharedArray<f64> = op.input_vector()?;
    let mut q: SharedArray<f64> = op.output_vector()?;
    let mut r: SharedArray<f64> = op.output_vector()?;
    let mut z: SharedArray<f64> = op.output_vector()?;
    z.copy_from_slice(x);
    let v = CgVecs {
        p: SharedMut::new(&mut p),
        q: SharedMut::new(&mut q),
        r: SharedMut::new(&mut r),
        z: SharedMut::new(&mut z),
    };
    let op = &*op;
    let out = team.run_collect(|ctx| {
        let rows = op.owned_rows(ctx.index());
        // r = b - A z, with z complete (copied before the job) and read-only here.
        // SAFETY: z is not written until cg_steps; r is written only by the operator.
        unsafe { op.apply_part(ctx, v.z.as_slice(), v.r) };
        // SAFETY: own rows of r and p.
        let (r, p) = unsafe { (v.r.range_mut(rows.clone()), v.p.range_mut(rows.clone())) };
        let (mut rr, mut bb) = (0.0, 0.0);
        for ((ri, pi), &bi) in r.iter_mut().zip(p.iter_mut()).zip(&b[rows]) {
            *ri = bi - *ri;
            *pi = *ri;
            rr += *ri * *ri;
            bb += bi * bi;
        }
        let [rho, bnorm2] = ctx.sums([rr, bb]);
        let stop = opts.tolerance * opts.tolerance * bnorm2;
        // SAFETY: every thread calls with the same vectors; p is complete
        // after the reduction's barrier.
        let (steps, rho) = unsafe { cg_steps(ctx, op, &v, rho, opts.max_iter, stop) };
        (steps, rho, bnorm2, stop)
    });
    let (iterations, rho, bnorm2, stop) = out[0];
    x.copy_from_slice(&z);
    Ok(CgReport { iterations, residual_norm: rho.sqrt(), rhs_norm: bnorm2.sqrt(), converged: rho <= stop })
}
