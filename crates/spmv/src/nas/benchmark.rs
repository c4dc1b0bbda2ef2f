//! [`NasCg`]: one NAS CG benchmark set up for a team — the class's matrix
//! placed as a [`CsrSpmv`] and the power method's five vectors — which runs
//! the benchmark ([`NasCg::run`]) and can be traced while its buffers live
//! ([`NasCg::trace`], in `trace.rs`); [`run`] sets one up and runs it.

use core::fmt;
use core::num::NonZeroUsize;
use std::time::Instant;

use super::power::{PowerVecs, power_method};
use super::{Class, NasReport, class_matrix};
use crate::cg::OnTeam;
use crate::error::{Error, Result};
use crate::masa::Masa;
use crate::ops::{CsrSpmv, SpmvOptions, TeamSpmv};
use crate::team::Team;

/// NAS CG of one class, set up: the matrix placed and split by the
/// options (see [`CsrSpmv`]; the SpMV input `p` is placed as `x` of Table 1,
/// the other vectors `q`, `r`, `z`, `x` as `y`).
///
/// # Examples
///
/// ```
/// use skelaff_spmv::nas::{Class, NasCg};
/// use skelaff_spmv::{Masa, SpmvOptions};
///
/// let masa = Masa::preprocess(2)?;
/// let team = masa.team()?;
/// let mut cg = NasCg::new(&masa, Class::S, SpmvOptions::default())?;
/// let report = cg.run(&team)?;
/// assert!(report.verified, "{report}");
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub struct NasCg {
    pub(super) class: Class,
    pub(super) op: CsrSpmv<f64>,
    pub(super) vecs: PowerVecs,
    init_seconds: f64,
}

impl NasCg {
    /// Generates `class`'s matrix and places it and the vectors for
    /// `masa`'s team as `opts` says.
    ///
    /// # Errors
    ///
    /// Generation, allocation and `mbind` errors.
    pub fn new(masa: &Masa, class: Class, opts: SpmvOptions) -> Result<NasCg> {
        let start = Instant::now();
        let op = CsrSpmv::new(masa, &class_matrix(class)?, opts)?;
        let vecs = PowerVecs {
            p: op.input_vector()?,
            q: op.output_vector()?,
            r: op.output_vector()?,
            z: op.output_vector()?,
            x: op.output_vector()?,
        };
        Ok(NasCg { class, op, vecs, init_seconds: start.elapsed().as_secs_f64() })
    }

    /// Runs the benchmark on `team`: NPB's untimed warm-up iteration, then
    /// `niter` timed ones (`x` reset to ones at the start of each).
    ///
    /// # Errors
    ///
    /// [`Error::TeamMismatch`] if the team is not the one the matrix was
    /// split for.
    pub fn run(&mut self, team: &Team) -> Result<NasReport> {
        if team.threads() != self.op.threads() {
            return Err(Error::TeamMismatch { expected: self.op.threads(), got: team.threads() });
        }
        let params = self.class.params();
        let sys = OnTeam(&self.op);
        power_method(team, &sys, &mut self.vecs, &params, 1);
        let timer = Instant::now();
        let iterations = power_method(team, &sys, &mut self.vecs, &params, params.niter);
        let seconds = timer.elapsed().as_secs_f64();
        Ok(NasReport::new(self.class, self.op.nnz(), team.threads(), (seconds, self.init_seconds), iterations))
    }

    /// Runs only the first `iterations` outer iterations of the power
    /// method on `team` (no warm-up; `x` reset to ones first, as at the
    /// start of every [`NasCg::run`]), timed: the same iterations, on the
    /// same placed buffers, as the start of a full run, so their log equals
    /// the first entries of [`NasCg::run`]'s. Fewer than the class's
    /// `niter` do not reach the official zeta, and the report says so
    /// (`verified` is false; Mop/s count the operations of these
    /// iterations only); for what needs the benchmark's memory
    /// traffic and one iteration's zeta, not its verification (the
    /// emulated machines' locality test, where a class S iteration takes
    /// half a second).
    ///
    /// # Errors
    ///
    /// [`Error::TeamMismatch`] if the team is not the one the matrix was
    /// split for.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    ///
    /// use skelaff_spmv::nas::{Class, NasCg};
    /// use skelaff_spmv::{Masa, SpmvOptions};
    ///
    /// let masa = Masa::preprocess(2)?;
    /// let team = masa.team()?;
    /// let mut cg = NasCg::new(&masa, Class::S, SpmvOptions::default())?;
    /// let short = cg.run_iterations(&team, NonZeroUsize::MIN)?;
    /// assert_eq!(short.iterations.len(), 1);
    /// assert!(!short.verified);
    /// # Ok::<(), skelaff_spmv::Error>(())
    /// ```
    pub fn run_iterations(&mut self, team: &Team, iterations: NonZeroUsize) -> Result<NasReport> {
        if team.threads() != self.op.threads() {
            return Err(Error::TeamMismatch { expected: self.op.threads(), got: team.threads() });
        }
        let params = self.class.params();
        let timer = Instant::now();
        let log = power_method(team, &OnTeam(&self.op), &mut self.vecs, &params, iterations.get());
        let seconds = timer.elapsed().as_secs_f64();
        let mut report = NasReport::new(self.class, self.op.nnz(), team.threads(), (seconds, self.init_seconds), log);
        // NPB's operation count is for `niter` iterations: these made a share of it.
        report.mops *= iterations.get() as f64 / params.niter as f64;
        Ok(report)
    }

    /// The class.
    pub fn class(&self) -> Class {
        self.class
    }

    /// The placed matrix.
    pub fn operator(&self) -> &CsrSpmv<f64> {
        &self.op
    }
}

impl fmt::Debug for NasCg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NasCg").field("class", &self.class).field("op", &self.op).finish_non_exhaustive()
    }
}

/// Runs NAS CG for `class` on `team` with the matrix and vectors placed and
/// split by `opts` ([`NasCg::new`], then [`NasCg::run`]).
///
/// # Errors
///
/// [`Error::TeamMismatch`] if the team does not match `masa`; generation,
/// allocation and `mbind` errors.
pub fn run(masa: &Masa, team: &Team, class: Class, opts: SpmvOptions) -> Result<NasReport> {
    if team.threads() != masa.threads() {
        return Err(Error::TeamMismatch { expected: masa.threads(), got: team.threads() });
    }
    NasCg::new(masa, class, opts)?.run(team)
}
