//! The NAS Parallel Benchmarks' CG kernel (NPB 3.x), on a [`Team`](crate::Team): the
//! classes and the report. The generator is in `generate` ([`Generator`]),
//! the power method (written once for one machine and for MPI) in `power`,
//! the benchmark set up and run in `benchmark` ([`NasCg`], [`run`]), and
//! its traced iteration in `trace` ([`NasCg::trace`]).
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

mod benchmark;
mod generate;
pub(crate) mod power;
mod trace;

use core::fmt;

pub use self::benchmark::{NasCg, run};
pub use self::generate::{Generator, Randlc, class_matrix, makea};
use serde::{Deserialize, Serialize};

use crate::error::Error;

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

/// A problem class.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::nas::Class;
///
/// assert_eq!("b".parse::<Class>()?, Class::B);
/// assert_eq!(Class::B.to_string(), "B");
/// assert_eq!("D".parse::<Class>().unwrap_err().to_string(), "unknown NAS CG class `D`; expected one of: S, W, A, B, C");
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, Serialize, Deserialize)]
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

skelaff_numa_alloc::enum_names! {
    Class {
        S => "S",
        W => "W",
        A => "A",
        B => "B",
        C => "C",
    }
    parse: Error = unknown_class; ascii_case_insensitive
}

fn unknown_class(given: &str) -> Error {
    Error::unknown_name("NAS CG class", given, Class::VARIANTS)
}

/// A class's parameters and its official zeta.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
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

/// One outer iteration as NPB prints it.
#[derive(Clone, Copy, PartialEq, Debug, Serialize, Deserialize)]
pub struct Iteration {
    /// 1-based iteration number.
    pub it: usize,
    /// `‖x - A z‖` after the 25 CG steps.
    pub rnorm: f64,
    /// `shift + 1 / (x · z)`.
    pub zeta: f64,
}

/// The outcome of a benchmark run.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
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

/// [`NasReport::npb_log`].
struct NpbLog<'a>(&'a NasReport);

impl fmt::Display for NpbLog<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        writeln!(f, " Initialization time = {:15.3} seconds", r.init_seconds)?;
        writeln!(f, "\n   iteration           ||r||                 zeta")?;
        for i in &r.iterations {
            writeln!(f, "    {:5}       {:20.14e}{:20.13}", i.it, i.rnorm, i.zeta)?;
        }
        writeln!(f, " Benchmark completed")?;
        if r.verified {
            writeln!(f, " VERIFICATION SUCCESSFUL")?;
        } else {
            writeln!(f, " VERIFICATION UNSUCCESSFUL")?;
            writeln!(f, " The correct zeta is {:20.13e}", r.params.zeta_verify)?;
        }
        writeln!(f, " Zeta is    {:20.13e}", r.zeta)?;
        write!(f, " Error is   {:20.13e}", r.error)
    }
}

impl fmt::Display for NasReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NAS CG class {}: zeta {:.13} ({}, error {:.2e}), {:.3} s, {:.2} Mop/s on {} threads",
            self.class,
            self.zeta,
            if self.verified { "verified" } else { "NOT verified" },
            self.error,
            self.seconds,
            self.mops,
            self.threads
        )
    }
}

impl NasReport {
    /// NPB's CG log of the run, as its reference programs print it: the
    /// initialization time, ‖r‖ and zeta at every iteration, the
    /// verification and zeta's error (the examples print it between their
    /// own header and totals).
    pub fn npb_log(&self) -> impl fmt::Display + '_ {
        NpbLog(self)
    }

    /// The report of a run: zeta, its error and verification from the last
    /// iteration, Mop/s from `seconds`.
    pub(crate) fn new(
        class: Class,
        nnz: usize,
        threads: usize,
        (seconds, init_seconds): (f64, f64),
        iterations: Vec<Iteration>,
    ) -> NasReport {
        let params = class.params();
        let zeta = iterations.last().map_or(f64::NAN, |i| i.zeta);
        NasReport {
            class,
            params,
            nnz,
            threads,
            zeta,
            error: params.relative_error(zeta),
            verified: params.verifies(zeta),
            seconds,
            init_seconds,
            mops: params.mops(seconds),
            iterations,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
