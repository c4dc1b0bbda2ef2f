//! CG over MPI: the one-machine iteration ([`crate::cg`]) on a square
//! [`DistCsr`], each rank updating its own rows, dot products summed over
//! the team and then over the ranks in rank order (so every rank takes
//! the same stopping decision).

use super::csr::{DistCsr, DistSystem};
use crate::cg::{CgOptions, CgReport, solve_on};
use crate::error::{Error, Result};
use crate::matrix::check_len;
use crate::team::Team;

/// Solves `A x = b` for a symmetric positive definite `A` split over the
/// ranks: `b` and `x` are this rank's rows (`x` is the start and holds the
/// result). Collective.
///
/// # Errors
///
/// [`Error::NotSquare`] unless `A` is square with `x` split like its rows;
/// otherwise as [`crate::cg::solve`] (every rank gets the same
/// [`Error::NotPositiveDefinite`]).
///
/// # Examples
///
/// ```no_run
/// use skelaff_spmv::dist::{self, DistCsr, Mpi};
/// use skelaff_spmv::{SpmvEngine, SpmvEngineOptions, SplitKind, Triplets, cg::CgOptions};
///
/// let mpi = Mpi::init()?;
/// let comm = mpi.world();
/// let engine = SpmvEngine::new(SpmvEngineOptions::default())?;
/// let n = 100;
/// let mut t = Triplets::new(n, n)?;
/// for i in 0..n {
///     t.push(i, i, 2.0)?;
///     if i > 0 { t.push(i, i - 1, -1.0)?; }
///     if i + 1 < n { t.push(i, i + 1, -1.0)?; }
/// }
/// let mut a = DistCsr::from_global(&comm, &engine, &t.to_csr(), SplitKind::Rows)?;
/// let b = vec![1.0; a.local_rows()];
/// let mut x = vec![0.0; a.local_rows()];
/// let report = dist::cg::solve(engine.team(), &mut a, &b, &mut x, CgOptions::default())?;
/// assert!(report.converged);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub fn solve(team: &Team, op: &mut DistCsr<'_>, b: &[f64], x: &mut [f64], opts: CgOptions) -> Result<CgReport> {
    let (nrows, ncols) = op.shape();
    if nrows != ncols || op.rows() != op.cols() {
        return Err(Error::NotSquare { what: "distributed CG (x split like the rows)", nrows, ncols });
    }
    let comm = op.comm();
    let checked = if team.threads() != op.threads() {
        Err(Error::TeamMismatch { expected: op.threads(), got: team.threads() })
    } else {
        check_len("b", b.len(), op.local_rows()).and_then(|()| check_len("x", x.len(), op.local_rows()))
    };
    comm.agree(checked)?;
    let vecs =
        comm.agree((|| Ok([op.input_vector()?, op.output_vector()?, op.output_vector()?, op.output_vector()?]))())?;
    // SAFETY: `solve_on` hands the system only to the team job it runs from
    // this thread (`Team::run_collect`).
    let sys = unsafe { DistSystem::new(op) };
    solve_on(team, &sys, vecs, b, x, opts)
}
