//! The conjugate gradient method on a [`Team`], one SPMD job per solve.
//!
//! Every thread updates only the rows its operator gives it
//! ([`TeamSpmv::owned_rows`]); dot products are [`TeamMember::sums`]
//! reductions (deterministic for a given thread count); a barrier separates
//! the update of the search direction from the next SpMV that reads all of
//! it. One CG step costs three barriers.
//!
//! The iteration is written once, over `CgSystem`: what CG needs from
//! where it runs (each thread's rows, its part of the SpMV, and sums over
//! every thread). One machine is `OnTeam`; the distributed operator of
//! the `mpi` feature is another, whose sums also cover every rank.

use core::fmt;
use core::ops::Range;
use std::time::Instant;

use crate::array::SharedArray;
use crate::error::{Error, Result};
use crate::matrix::check_len;
use crate::ops::TeamSpmv;
use crate::team::{SharedMut, Team, TeamMember};

/// What the CG iteration needs from the machine it runs on.
pub(crate) trait CgSystem: Sync {
    /// Length of the vectors this process holds.
    fn local_len(&self) -> usize;
    /// The team size the system was built for.
    fn threads(&self) -> usize;
    /// The rows of the local vectors thread `t` updates.
    fn rows(&self, t: usize) -> Range<usize>;
    /// This thread's part of `y = A x` on the local vectors.
    ///
    /// # Safety
    ///
    /// As [`TeamSpmv::apply_part`].
    unsafe fn apply_part(&self, member: &TeamMember<'_>, x: &[f64], y: SharedMut<'_, f64>);
    /// Sums over every thread (and every process), the same everywhere.
    fn sums<const N: usize>(&self, member: &TeamMember<'_>, v: [f64; N]) -> [f64; N];
}

/// A [`TeamSpmv`] on one machine as a [`CgSystem`].
pub(crate) struct OnTeam<'a, O>(pub(crate) &'a O);

impl<O: TeamSpmv<f64>> CgSystem for OnTeam<'_, O> {
    fn local_len(&self) -> usize {
        self.0.nrows()
    }
    fn threads(&self) -> usize {
        self.0.threads()
    }
    fn rows(&self, t: usize) -> Range<usize> {
        self.0.owned_rows(t)
    }
    unsafe fn apply_part(&self, member: &TeamMember<'_>, x: &[f64], y: SharedMut<'_, f64>) {
        // SAFETY: the caller's contract is the operator's.
        unsafe { self.0.apply_part(member, x, y) }
    }
    fn sums<const N: usize>(&self, member: &TeamMember<'_>, v: [f64; N]) -> [f64; N] {
        member.sums(v)
    }
}

/// The work vectors of CG: search direction `p`, `q = A p`, residual `r`,
/// iterate `z`.
pub(crate) struct CgVecs<'a> {
    pub(crate) p: SharedMut<'a, f64>,
    pub(crate) q: SharedMut<'a, f64>,
    pub(crate) r: SharedMut<'a, f64>,
    pub(crate) z: SharedMut<'a, f64>,
}

/// Where [`cg_steps`] stopped.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) struct Steps {
    /// Steps taken.
    pub(crate) steps: usize,
    /// `r·r` at the end.
    pub(crate) rho: f64,
    /// Whether a step found `p·Ap <= 0` (or NaN): `A` is not positive definite.
    pub(crate) breakdown: bool,
}

/// CG steps from the current state (`p` complete on every thread, `rho =
/// r·r`) until `max_iter` steps, `rho <= stop_rho`, or, if
/// `stop_on_breakdown`, a step with `pᵀAp <= 0` (NAS CG's shifted matrix is
/// indefinite, and NPB runs its 25 steps regardless).
///
/// # Safety
///
/// Called by every thread of one team job with the same vectors (each of
/// length `sys.local_len()`), which nothing else touches during the job;
/// `p` must be complete (written before a barrier all threads passed) on
/// entry.
pub(crate) unsafe fn cg_steps(
    member: &TeamMember<'_>,
    sys: &impl CgSystem,
    v: &CgVecs<'_>,
    mut rho: f64,
    max_iter: usize,
    stop_rho: f64,
    stop_on_breakdown: bool,
) -> Steps {
    let rows = sys.rows(member.index());
    let mut steps = 0;
    while steps < max_iter && rho > stop_rho {
        // SAFETY: p is complete and read-only until the update below; q is
        // written only through the operator.
        unsafe { sys.apply_part(member, v.p.as_slice(), v.q) };
        // SAFETY: this thread's rows of p and q; nobody writes them now.
        let (p, q) = unsafe { (v.p.range(rows.clone()), v.q.range(rows.clone())) };
        let [d] = sys.sums(member, [p.iter().zip(q).map(|(a, b)| a * b).sum()]);
        // Every thread (and rank) sees the same `d`, so all stop together.
        if stop_on_breakdown && (d.is_nan() || d <= 0.0) {
            return Steps { steps, rho, breakdown: true };
        }
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
        [rho] = sys.sums(member, [local]);
        let beta = rho / rho0;
        // SAFETY: after the reduction's barrier no thread reads p until the
        // barrier below; each thread writes its own rows.
        let p = unsafe { v.p.range_mut(rows.clone()) };
        for (pi, &ri) in p.iter_mut().zip(r.iter()) {
            *pi = ri + beta * *pi;
        }
        member.barrier();
        steps += 1;
    }
    Steps { steps, rho, breakdown: false }
}

/// When to stop.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct CgOptions {
    /// Stop when `‖r‖ <= tolerance × ‖b‖` for the recursively updated
    /// residual `r`.
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
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct CgReport {
    /// Steps taken.
    pub iterations: usize,
    /// `‖r‖` of the recursively updated residual at the end.
    pub residual_norm: f64,
    /// `‖b‖`.
    pub rhs_norm: f64,
    /// `‖b − A x‖ / ‖b‖` for the returned `x`, computed afresh (`‖b − A
    /// x‖` itself when `b = 0`).
    pub relative_residual: f64,
    /// Whether the tolerance was met.
    pub converged: bool,
    /// Seconds the iteration took (without setting up the vectors).
    pub seconds: f64,
}

impl fmt::Display for CgReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} after {} iterations: relative residual ‖b − Ax‖/‖b‖ = {:.3e} in {:.3} s",
            if self.converged { "converged" } else { "did not converge" },
            self.iterations,
            self.relative_residual,
            self.seconds
        )
    }
}

/// Solves `A x = b` for a symmetric positive definite `A` by conjugate
/// gradients on `team`, starting from the `x` given; `x` holds the result.
///
/// # Errors
///
/// [`Error::NotSquare`]; [`Error::DimensionMismatch`];
/// [`Error::TeamMismatch`]; [`Error::NotPositiveDefinite`] when a step
/// finds `pᵀAp <= 0`; allocation errors.
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
/// assert!(report.relative_residual < 1e-9);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub fn solve(team: &Team, op: &mut impl TeamSpmv<f64>, b: &[f64], x: &mut [f64], opts: CgOptions) -> Result<CgReport> {
    if op.ncols() != op.nrows() {
        return Err(Error::NotSquare { what: "CG", nrows: op.nrows(), ncols: op.ncols() });
    }
    let p = op.input_vector()?;
    let [q, r, z] = [op.output_vector()?, op.output_vector()?, op.output_vector()?];
    solve_on(team, &OnTeam(&*op), [p, q, r, z], b, x, opts)
}

/// CG on any [`CgSystem`], with its work vectors `[p, q, r, z]` (each
/// `sys.local_len()` long) given.
pub(crate) fn solve_on(
    team: &Team,
    sys: &impl CgSystem,
    vecs: [SharedArray<f64>; 4],
    b: &[f64],
    x: &mut [f64],
    opts: CgOptions,
) -> Result<CgReport> {
    if team.threads() != sys.threads() {
        return Err(Error::TeamMismatch { expected: sys.threads(), got: team.threads() });
    }
    let n = sys.local_len();
    check_len("b", b.len(), n)?;
    check_len("x", x.len(), n)?;
    let [mut p, mut q, mut r, mut z] = vecs;
    z.copy_from_slice(x);
    let v = CgVecs {
        p: SharedMut::new(&mut p),
        q: SharedMut::new(&mut q),
        r: SharedMut::new(&mut r),
        z: SharedMut::new(&mut z),
    };
    let start = Instant::now();
    let out = team.run_collect(|member| {
        let rows = sys.rows(member.index());
        // r = b - A z, with z complete (copied before the job) and read-only here.
        // SAFETY: z is not written until cg_steps; r is written only by the operator.
        unsafe { sys.apply_part(member, v.z.as_slice(), v.r) };
        // SAFETY: own rows of r and p.
        let (r, p) = unsafe { (v.r.range_mut(rows.clone()), v.p.range_mut(rows.clone())) };
        let (mut rr, mut bb) = (0.0, 0.0);
        for ((ri, pi), &bi) in r.iter_mut().zip(p.iter_mut()).zip(&b[rows.clone()]) {
            *ri = bi - *ri;
            *pi = *ri;
            rr += *ri * *ri;
            bb += bi * bi;
        }
        let [rho, bnorm2] = sys.sums(member, [rr, bb]);
        let stop = opts.tolerance * opts.tolerance * bnorm2;
        // SAFETY: every thread calls with the same vectors; p is complete
        // after the reduction's barrier.
        let steps = unsafe { cg_steps(member, sys, &v, rho, opts.max_iter, stop, true) };
        // The true residual of the final iterate: r = b - A z (z complete
        // after the last step's barrier; p is free to be overwritten).
        // SAFETY: z is read-only; r is written only by the operator.
        unsafe { sys.apply_part(member, v.z.as_slice(), v.r) };
        // SAFETY: own rows of r, read only.
        let r = unsafe { v.r.range(rows.clone()) };
        let local: f64 = r.iter().zip(&b[rows]).map(|(&ri, &bi)| (bi - ri) * (bi - ri)).sum();
        let [true_rr] = sys.sums(member, [local]);
        (steps, bnorm2, stop, true_rr)
    });
    let seconds = start.elapsed().as_secs_f64();
    let (steps, bnorm2, stop, true_rr) = out[0];
    if steps.breakdown {
        return Err(Error::NotPositiveDefinite { iteration: steps.steps + 1 });
    }
    x.copy_from_slice(&z);
    let relative_residual = if bnorm2 > 0.0 { (true_rr / bnorm2).sqrt() } else { true_rr.sqrt() };
    Ok(CgReport {
        iterations: steps.steps,
        residual_norm: steps.rho.sqrt(),
        rhs_norm: bnorm2.sqrt(),
        relative_residual,
        converged: steps.rho <= stop,
        seconds,
    })
}
