//! Across machines (feature `mpi`): a CSR matrix whose rows are split over
//! MPI ranks, each rank's block MASA-placed on the rank's own pinned team
//! (one rank per NUMA node is MFDn's layout), CG and NAS CG over it.
//!
//! - [`Mpi`] / [`RankComm`] (`comm`): MPI at the `Serialized` thread
//!   level; agreeing on failure so that no rank waits forever for one that
//!   gave up; sums that every rank gets bit for bit.
//! - [`HaloPlan`] (`halo`): which entries of `x` go from which rank to
//!   which, computed once from the column pattern.
//! - [`DistCsr`] (`csr`): the distributed SpMV, the halo exchanged with
//!   nonblocking point-to-point messages while the local columns multiply.
//! - [`cg`]: CG; [`nas`]: NAS CG, verified at every rank count.
//!
//! MPI is OpenMPI (or any MPI) through the `mpi` crate; run the programs
//! under `mpirun`. The team of each rank is laid out over the CPUs the rank
//! may use, so ask `mpirun` to give each rank a NUMA node:
//! `mpirun --map-by ppr:1:numa --bind-to numa -np NODES prog --threads CORES_PER_NODE`.

mod comm;
mod csr;
mod halo;

pub mod cg;
pub mod nas;

pub use comm::{Mpi, PANIC_EXIT_CODE, RankComm};
pub use csr::{DistCsr, HaloStats};
pub use halo::HaloPlan;

use std::path::Path;

use crate::error::Result;
use crate::matrix::Csr;
use crate::mm;

/// Reads a Matrix Market file on every rank (a file every rank can see,
/// e.g. on a shared file system) into CSR, agreeing on the outcome: if any
/// rank cannot read it, every rank returns an error. Collective.
///
/// # Errors
///
/// On the rank that failed, the reading error ([`crate::Error::Io`], [`crate::Error::Read`],
/// [`crate::Error::MatrixMarket`]); on the others, [`crate::Error::RankFailed`]
/// naming that rank and its reason.
pub fn read_csr(comm: &RankComm, path: impl AsRef<Path>) -> Result<Csr<f64>> {
    comm.agree(mm::read_path::<f64>(path).map(|m| m.triplets.to_csr()))
}
