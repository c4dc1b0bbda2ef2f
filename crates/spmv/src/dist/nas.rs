//! NAS CG over MPI: every rank draws NPB's outer vectors (the whole random
//! stream, cheap), sums only its own block of rows, and runs the same power
//! method as one machine ([`crate::nas`]) on a [`DistCsr`]. The matrix is
//! the same whatever the rank count; zeta differs only by the rounding of
//! sums taken in another order (far inside NPB's 1e-10).

use core::fmt;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::comm::RankComm;
use super::csr::{DistCsr, DistSystem};
use crate::engine::SpmvEngine;
use crate::error::Result;
use crate::masa::{Split, SplitKind};
use crate::nas::power::{PowerVecs, power_method};
use crate::nas::{Class, Generator, NasReport};

/// A NAS CG run over MPI: the benchmark's report (time and Mop/s over the
/// slowest rank, nonzeros over all ranks) and what the halo cost.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct DistNasReport {
    /// zeta, verification, seconds, Mop/s (threads: per rank).
    pub report: NasReport,
    /// Ranks.
    pub ranks: usize,
    /// How the rows were split over the ranks.
    pub split: SplitKind,
    /// Entries of `x` received per SpMV, summed over every rank.
    pub halo_entries_per_spmv: u64,
    /// Bytes moved between ranks per SpMV (8 per halo entry).
    pub halo_bytes_per_spmv: u64,
    /// SpMVs in the timed iterations (26 per outer iteration).
    pub spmvs: u64,
    /// Mean seconds from posting an exchange until it completed (the
    /// slowest rank's mean).
    pub exchange_seconds: f64,
    /// Mean seconds an SpMV waited for its halo after the overlapped work
    /// ran out (the slowest rank's mean).
    pub exposed_seconds: f64,
    /// Median seconds of one exchange with nothing to overlap (the slowest
    /// rank's), measured after the run.
    pub exchange_alone_seconds: f64,
    /// `1 - exposed / alone`, clamped to [0, 1]: the share of the
    /// communication hidden behind the multiply of the local columns
    /// (1 when nothing is exchanged).
    pub hidden_fraction: f64,
}

impl fmt::Display for DistNasReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on {} ranks; halo {} entries ({} bytes) per SpMV, {:.1}% of the exchange hidden",
            self.report,
            self.ranks,
            self.halo_entries_per_spmv,
            self.halo_bytes_per_spmv,
            100.0 * self.hidden_fraction
        )
    }
}

/// Runs NAS CG for `class` over every rank of `comm`, each rank's block of
/// rows on `engine`'s team, rows split over the ranks by `split` (equal
/// rows, or balanced by the products `makea` adds into each row).
/// Collective.
///
/// # Errors
///
/// Generation, allocation and `mbind` errors (agreed: every rank fails
/// together).
pub fn run(comm: &RankComm, engine: &SpmvEngine, class: Class, split: SplitKind) -> Result<DistNasReport> {
    let params = class.params();
    let start = Instant::now();
    let generator = Generator::for_class(class);
    let rows = match split {
        SplitKind::Rows => Split::equal(params.na, comm.size()),
        SplitKind::Nnz => {
            let w = generator.row_weights();
            let mut prefix = Vec::with_capacity(w.len() + 1);
            prefix.push(0u128);
            for (i, &x) in w.iter().enumerate() {
                prefix.push(prefix[i] + u128::from(x) + 1);
            }
            Split::balanced(params.na, comm.size(), |r| prefix[r])
        }
    };
    let local = comm.agree(generator.rows(rows.range(comm.rank())))?;
    let mut op = DistCsr::new(comm, engine, &local, rows.clone(), rows)?;
    drop(local);
    let mut vecs = comm.agree((|| {
        Ok(PowerVecs {
            p: op.input_vector()?,
            q: op.output_vector()?,
            r: op.output_vector()?,
            z: op.output_vector()?,
            x: op.output_vector()?,
        })
    })())?;
    let init_seconds = comm.max(start.elapsed().as_secs_f64());
    let team = engine.team();
    // SAFETY: `power_method` hands the system only to the team job it runs
    // from this thread (`Team::run_collect`), here twice; this thread's own
    // MPI calls come between the two, outside any job.
    let sys = unsafe { DistSystem::new(&op) };
    // NPB's untimed warm-up iteration; x is reset to 1 inside the next job.
    power_method(team, &sys, &mut vecs, &params, 1);
    let warm = op.stats();
    comm.barrier();
    let timer = Instant::now();
    let iterations = power_method(team, &sys, &mut vecs, &params, params.niter);
    let seconds = comm.max(timer.elapsed().as_secs_f64());
    let timed = op.stats();
    let spmvs = timed.exchanges - warm.exchanges;
    let per = |total: f64| if spmvs > 0 { total / spmvs as f64 } else { 0.0 };
    let exchange_seconds = comm.max(per(timed.exchange_seconds - warm.exchange_seconds));
    let exposed_seconds = comm.max(per(timed.exposed_seconds - warm.exposed_seconds));
    let exchange_alone_seconds = comm.max(op.exchange_alone(20));
    let halo_entries = comm.sums([op.plan().recv_len() as f64])[0] as u64;
    let nnz = comm.sums([op.local_nnz() as f64])[0] as usize;
    let hidden_fraction = if exchange_alone_seconds > 0.0 {
        (1.0 - exposed_seconds / exchange_alone_seconds).clamp(0.0, 1.0)
    } else {
        1.0
    };
    Ok(DistNasReport {
        report: NasReport::new(class, nnz, team.threads(), (seconds, init_seconds), iterations),
        ranks: comm.size(),
        split,
        halo_entries_per_spmv: halo_entries,
        halo_bytes_per_spmv: 8 * halo_entries,
        spmvs,
        exchange_seconds,
        exposed_seconds,
        exchange_alone_seconds,
        hidden_fraction,
    })
}
