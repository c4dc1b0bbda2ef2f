//! The NAS Parallel Benchmarks' CG kernel (NPB 3.x), on a [`Team`].
//!
//! The test matrix is built exactly as NPB builds it, so the official zeta
//! values verify: the linear congruential generator `randlc` (seed
//! 314159265, multiplier 5^13, modulus 2^46), `makea` drawing for each of
//! the `na` outer rows a sparse vector of `nonzer` distinct random
//! positions (`sprnvc`) plus the diagonal position set to 0.5 (`vecset`),
//! and `sparse` summing the outer products of those vectors, scaled by a
//! geometric factor from 1 down to `rcond` = 0.1, with `rcond - shift`
//! added on the diagonal. Duplicates are summed in generation order, as
//! NPB's insertion does.
//!
//! The benchmark then runs the inverse power method: `niter` times, 25 CG
//! steps on `A z = x`, `zeta = shift + 1 / (x · z)`, `x = z / ‖z‖`. One
//! untimed iteration comes first (NPB's warm-up), then `x` is reset.
//! Verification: `|zeta - zeta_verify| / zeta_verify <= 1e-10`.
//! Mop/s: `2 na niter (3 + nonzer (nonzer + 1) + 25 (5 + nonzer (nonzer + 1)) + 3) / t / 10^6`.

use core::fmt;
use core::str::FromStr;
use std::time::Instant;

use crate::array::SharedArray;
use crate::cg::{CgVecs, cg_steps};
use crate::error::{Error, Result};
use crate::masa::Masa;
use crate::matrix::{Csr, Triplets};
use crate::ops::{CsrSpmv, SpmvOptions, TeamSpmv};
use crate::team::{SharedMut, Team};

/// The generator's multiplier, 5^13.
pub const MULTIPLIER: u64 = 1_220_703_125;
/// The generator's seed.
pub const SEED: u64 = 314_159_265;
/// The lower bound NPB puts on the smallest eigenvalue.
pub const RCOND: f64 = 0.1;
/// The verification tolerance on zeta (relative).
pub const EPSILON: f64 = 1e-10;
/// CG steps per outer iteration.
pub const CG_STEPS: usize = 25;

/// NPB's `randlc`: `x <- 5^13 x mod 2^46`, returning `x / 2^46`.
///
/// NPB computes this in double precision by splitting into 23-bit halves;
/// every intermediate is an exact integer below 2^53, so 64-bit integer
/// arithmetic gives the same values.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::nas::Randlc;
///
/// let mut r = Randlc::new(314_159_265);
/// let u = r.next_f64();
/// assert!(u > 0.0 && u < 1.0);
/// assert_eq!(r.state(), (314_159_265u64 * 1_220_703_125) % (1 << 46));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Randlc {
    x: u64,
}

impl Randlc {
    const MASK: u64 = (1 << 46) - 1;

    /// A generator at state `seed` (taken mod 2^46).
    pub fn new(seed: u64) -> Randlc {
        Randlc { x: seed & Self::MASK }
    }

    /// The current state.
    pub fn state(&self) -> u64 {
        self.x
    }

    /// The next value, uniform in (0, 1).
    #[allow(clippy::should_implement_trait)]
    pub fn next_f64(&mut self) -> f64 {
        // 2^46 divides 2^64, so the product mod 2^64, masked, is the product mod 2^46.
        self.x = self.x.wrapping_mul(MULTIPLIER) & Self::MASK;
        self.x as f64 * (1.0 / (1u64 << 46) as f64)
    }
}

/// A problem class.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum Class {
    /// na 1400, nonzer 7, niter 15, shift 10.
    S,
    /// na 7000, nonzer 8, niter 15, shift 12.
    W,
    /// na 14000, nonzer 11, niter 15, shift 20.
    A,
    /// na 75000, nonzer 13, niter 75, shift 60.
    B,
    /// na 150000, nonzer 15, niter 75, shift 110.
    C,
}

/// A class's parameters and its official zeta.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct ClassParams {
    /// Matrix order.
    pub na: usize,
    /// Nonzeros per generated sparse vector.
    pub nonzer: usize,
    /// Outer (power method) iterations.
    pub niter: usize,
    /// The diagonal shift.
    pub shift: f64,
    /// The official `zeta_verify_value`.
    pub zeta_verify: f64,
}

impl Class {
    /// Every class, smallest first.
    pub const ALL: [Class; 5] = [Class::S, Class::W, Class::A, Class::B, Class::C];

    /// NPB's parameters for this class.
    pub fn params(self) -> ClassParams {
        let (na, nonzer, niter, shift, zeta_verify) = match self {
            Class::S => (1400, 7, 15, 10.0, 8.5971775078648),
            Class::W => (7000, 8, 15, 12.0, 10.362595087124),
            Class::A => (14000, 11, 15, 20.0, 17.130235054029),
            Class::B => (75000, 13, 75, 60.0, 22.712745482631),
            Class::C => (150_000, 15, 75, 110.0, 28.973605592845),
        };
        ClassParams { na, nonzer, niter, shift, zeta_verify }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl FromStr for Class {
    type Err = Error;
    fn from_str(s: &str) -> Result<Class> {
        match s.trim() {
            "S" | "s" => Ok(Class::S),
            "W" | "w" => Ok(Class::W),
            "A" | "a" => Ok(Class::A),
            "B" | "b" => Ok(Class::B),
            "C" | "c" => Ok(Class::C),
            _ => Err(Error::Parse { input: s.to_owned(), expected: "one of the classes S, W, A, B, C" }),
        }
    }
}

impl ClassParams {
    /// NPB's operation count divided by `seconds`, in millions per second.
    pub fn mops(&self, seconds: f64) -> f64 {
        let nz = (self.nonzer * (self.nonzer + 1)) as f64;
        let ops = 2.0 * self.niter as f64 * self.na as f64 * (3.0 + nz + 25.0 * (5.0 + nz) + 3.0);
        if seconds > 0.0 { ops / seconds / 1e6 } else { 0.0 }
    }

    /// Whether `zeta` verifies against the official value.
    pub fn verifies(&self, zeta: f64) -> bool {
        self.relative_error(zeta) <= EPSILON
    }

    /// `|zeta - zeta_verify| / zeta_verify` (NaN counts as infinitely wrong).
    pub fn relative_error(&self, zeta: f64) -> f64 {
        let e = (zeta - self.zeta_verify).abs() / self.zeta_verify;
        if e.is_nan() { f64::INFINITY } else { e }
    }
}

/// `sprnvc`: `nz` distinct positions in `1..=n` with random values, drawing
/// a value and then a position (`int(nn1 * u) + 1`, rejected if above `n`
/// or already drawn) from `rng`.
fn sprnvc(rng: &mut Randlc, n: usize, nz: usize, nn1: usize, v: &mut Vec<f64>, iv: &mut Vec<usize>) {
    v.clear();
    iv.clear();
    while v.len() < nz {
        let vecelt = rng.next_f64();
        let vecloc = rng.next_f64();
        let i = (nn1 as f64 * vecloc) as usize + 1;
        if i > n || iv.contains(&i) {
            continue;
        }
        v.push(vecelt);
        iv.push(i);
    }
}

/// `vecset`: sets position `i` of the sparse vector to `val`, appending it
/// if absent.
fn vecset(v: &mut Vec<f64>, iv: &mut Vec<usize>, i: usize, val: f64) {
    let mut set = false;
    for (vk, &ik) in v.iter_mut().zip(iv.iter()) {
        if ik == i {
            *vk = val;
            set = true;
        }
    }
    if !set {
        v.push(val);
        iv.push(i);
    }
}

/// NPB's `makea`: the `na x na` CG matrix for `nonzer` and `shift`, in CSR
/// with 0-based, ascending column indices. `rng` must be the benchmark's
/// generator after its first draw (see [`class_matrix`]).
///
/// # Errors
///
/// [`Error::TooLarge`] if the matrix does not fit 32-bit indices.
pub fn makea(rng: &mut Randlc, na: usize, nonzer: usize, shift: f64) -> Result<Csr<f64>> {
    let mut nn1 = 1usize;
    loop {
        nn1 *= 2;
        if nn1 >= na {
            break;
        }
    }
    // Generate every outer vector first (the random stream order), then sum.
    let mut acol: Vec<usize> = Vec::with_capacity(na * (nonzer + 1));
    let mut aelt: Vec<f64> = Vec::with_capacity(na * (nonzer + 1));
    let mut arow: Vec<usize> = Vec::with_capacity(na + 1);
    arow.push(0);
    let (mut v, mut iv) = (Vec::with_capacity(nonzer + 1), Vec::with_capacity(nonzer + 1));
    for iouter in 1..=na {
        sprnvc(rng, na, nonzer, nn1, &mut v, &mut iv);
        vecset(&mut v, &mut iv, iouter, 0.5);
        acol.extend_from_slice(&iv);
        aelt.extend_from_slice(&v);
        arow.push(acol.len());
    }
    let entries: usize = arow.windows(2).map(|w| (w[1] - w[0]) * (w[1] - w[0])).sum();
    let mut t = Triplets::with_capacity(na, na, entries)?;
    let ratio = RCOND.powf(1.0 / na as f64);
    let mut size = 1.0f64;
    for i in 1..=na {
        let (cols, vals) = (&acol[arow[i - 1]..arow[i]], &aelt[arow[i - 1]..arow[i]]);
        for (&j, &ej) in cols.iter().zip(vals) {
            let scale = size * ej;
            for (&jcol, &ejcol) in cols.iter().zip(vals) {
                let mut va = ejcol * scale;
                if jcol == j && j == i {
                    va = va + RCOND - shift;
                }
                t.push(j - 1, jcol - 1, va)?;
            }
        }
        size *= ratio;
    }
    Ok(t.to_csr())
}

/// The matrix of `class`, generated as NPB does from the start of the
/// random stream (the benchmark draws once before `makea`).
///
/// # Errors
///
/// As [`makea`].
///
/// # Examples
///
/// ```
/// use skelaff_spmv::nas::{Class, class_matrix};
///
/// let a = class_matrix(Class::S)?;
/// assert_eq!((a.nrows(), a.ncols()), (1400, 1400));
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub fn class_matrix(class: Class) -> Result<Csr<f64>> {
    let p = class.params();
    let mut rng = Randlc::new(SEED);
    rng.next_f64();
    makea(&mut rng, p.na, p.nonzer, p.shift)
}

/// One outer iteration as NPB prints it.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Iteration {
    /// 1-based iteration number.
    pub it: usize,
    /// `‖x - A z‖` after the 25 CG steps.
    pub rnorm: f64,
    /// `shift + 1 / (x · z)`.
    pub zeta: f64,
}

/// The outcome of a benchmark run.
#[derive(Clone, PartialEq, Debug)]
pub struct NasReport {
    /// The class.
    pub class: Class,
    /// Its parameters.
    pub params: ClassParams,
    /// Stored entries of the matrix.
    pub nnz: usize,
    /// Threads.
    pub threads: usize,
    /// The final zeta.
    pub zeta: f64,
    /// Its relative error against the official value.
    pub error: f64,
    /// Whether it verified.
    pub verified: bool,
    /// Seconds of the timed iterations.
    pub seconds: f64,
    /// Seconds to generate and place the matrix and vectors.
    pub init_seconds: f64,
    /// NPB's Mop/s.
    pub mops: f64,
    /// Every timed outer iteration.
    pub iterations: Vec<Iteration>,
}

/// Runs NAS CG for `class` on `team` with the matrix and vectors placed and
/// split by `opts` (see [`CsrSpmv`]; the SpMV input `p` is placed as `x` of
/// Table 1, the other vectors as `y`).
///
/// # Errors
///
/// [`Error::TeamMismatch`] if the team does not match `masa`; generation,
/// allocation and `mbind` errors.
pub fn run(masa: &Masa, team: &Team, class: Class, opts: SpmvOptions) -> Result<NasReport> {
    if team.threads() != masa.threads() {
        return Err(Error::TeamMismatch { expected: masa.threads(), got: team.threads() });
    }
    let params = class.params();
    let start = Instant::now();
    let op = {
        let a = class_matrix(class)?;
        CsrSpmv::new(masa, &a, opts)?
    };
    let mut vecs: Vec<SharedArray<f64>> = Vec::with_capacity(5);
    vecs.push(op.input_vector()?); // p
    for _ in 0..4 {
        vecs.push(op.output_vector()?); // q, r, z, x
    }
    let init_seconds = start.elapsed().as_secs_f64();
    let [p, q, r, z, x] = &mut vecs[..] else { unreachable!("five vectors were pushed") };
    let v = CgVecs { p: SharedMut::new(p), q: SharedMut::new(q), r: SharedMut::new(r), z: SharedMut::new(z) };
    let x = SharedMut::new(x);
    let op = &op;
    let power = |iterations: usize| {
        team.run_collect(|ctx| {
            let rows = op.owned_rows(ctx.index());
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
                let rho = ctx.sum(local);
                // SAFETY: same vectors on every thread; p complete.
                unsafe { cg_steps(ctx, op, &v, rho, CG_STEPS, f64::NEG_INFINITY) };
                // ‖x - A z‖: z is complete after the last step's barrier.
                // SAFETY: z is read-only here; r is written by the operator.
                unsafe { op.apply_part(ctx, v.z.as_slice(), v.r) };
                // SAFETY: own rows; x and z are not written by anyone else now.
                let (xr, zr, rr) =
                    unsafe { (x.range_mut(rows.clone()), v.z.range(rows.clone()), v.r.range(rows.clone())) };
                let (mut res, mut xz, mut zz) = (0.0, 0.0, 0.0);
                for ((&xi, &zi), &ri) in xr.iter().zip(zr).zip(rr) {
                    let d = xi - ri;
                    res += d * d;
                    xz += xi * zi;
                    zz += zi * zi;
                }
                let [res, xz, zz] = ctx.sums([res, xz, zz]);
                let zeta = params.shift + 1.0 / xz;
                let scale = 1.0 / zz.sqrt();
                for (xi, &zi) in xr.iter_mut().zip(zr) {
                    *xi = scale * zi;
                }
                log.push(Iteration { it, rnorm: res.sqrt(), zeta });
            }
            log
        })
    };
    // NPB's untimed warm-up iteration; x is reset to 1 inside the next job.
    power(1);
    let timer = Instant::now();
    let logs = power(params.niter);
    let seconds = timer.elapsed().as_secs_f64();
    let iterations = logs.into_iter().next().unwrap_or_default();
    let zeta = iterations.last().map_or(f64::NAN, |i| i.zeta);
    Ok(NasReport {
        class,
        params,
        nnz: op.nnz(),
        threads: team.threads(),
        zeta,
        error: params.relative_error(zeta),
        verified: params.verifies(zeta),
        seconds,
        init_seconds,
        mops: params.mops(seconds),
        iterations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn randlc_matches_npb_double_precision_arithmetic() {
        // NPB's randlc in doubles, transcribed, against the integer form.
        fn randlc_f64(x: &mut f64, a: f64) -> f64 {
            let (r23, t23) = (0.5f64.powi(23), 2.0f64.powi(23));
            let (r46, t46) = (r23 * r23, t23 * t23);
            let a1 = (r23 * a).trunc();
            let a2 = a - t23 * a1;
            let x1 = (r23 * *x).trunc();
            let x2 = *x - t23 * x1;
            let t1 = a1 * x2 + a2 * x1;
            let t2 = (r23 * t1).trunc();
            let z = t1 - t23 * t2;
            let t3 = t23 * z + a2 * x2;
            let t4 = (r46 * t3).trunc();
            *x = t3 - t46 * t4;
            r46 * *x
        }
        let mut x = SEED as f64;
        let mut r = Randlc::new(SEED);
        for _ in 0..10_000 {
            assert_eq!(r.next_f64(), randlc_f64(&mut x, MULTIPLIER as f64));
            assert_eq!(r.state() as f64, x);
        }
    }

    #[test]
    fn class_s_matrix_shape() {
        let a = class_matrix(Class::S).unwrap();
        assert_eq!(a.nrows(), 1400);
        // Every row has its diagonal, columns ascend, and the structure is symmetric.
        let t = a.transpose();
        assert_eq!(t.row_ptr(), a.row_ptr());
        assert_eq!(t.col_idx(), a.col_idx());
        for i in 0..a.nrows() {
            let (cols, _) = a.row(i);
            assert!(cols.windows(2).all(|w| w[0] < w[1]));
            assert!(cols.contains(&(i as u32)));
        }
        // Values are symmetric up to rounding of the product order.
        for (x, y) in a.values().iter().zip(t.values()) {
            assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0));
        }
    }

    #[test]
    fn class_parsing_and_mops() {
        assert_eq!("b".parse::<Class>().unwrap(), Class::B);
        assert!("D".parse::<Class>().is_err());
        let p = Class::B.params();
        // 2 * 75 * 75000 * (3 + 182 + 25 * 187 + 3) = 54_708_750_000 operations.
        assert!((p.mops(1.0) - 54_708.75).abs() < 1e-6);
        assert!(p.verifies(22.712745482631 * (1.0 + 5e-11)));
        assert!(!p.verifies(22.712745482631 * (1.0 + 2e-10)));
        assert!(!p.verifies(f64::NAN));
    }
}
