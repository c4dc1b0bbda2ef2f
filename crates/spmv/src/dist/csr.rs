//! [`DistCsr`]: a CSR matrix whose rows are split over MPI ranks. Each
//! rank keeps its block of rows as two MASA-placed CSR operators on its own
//! team: the *diagonal* part (the columns this rank owns, indexed into its
//! own `x`) and the *off-diagonal* part (every other column, indexed into
//! the halo buffer). An SpMV posts the halo exchange, multiplies the
//! diagonal part while the messages travel (thread 0 tests them between
//! chunks of its rows, so they progress without a progress thread), then
//! adds the off-diagonal part once the halo has arrived.

use core::cell::UnsafeCell;
use core::ops::Range;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::comm::{Lent, RankComm};
use super::halo::HaloPlan;
use crate::array::SharedArray;
use crate::cg::CgSystem;
use crate::engine::SpmvEngine;
use crate::error::{Error, Result};
use crate::masa::{Split, SplitKind, TeamAccess};
use crate::matrix::{Csr, check_len};
use crate::ops::{CsrSpmv, TeamSpmv};
use crate::team::{SharedMut, Team, TeamMember};

/// Entries of its diagonal part thread 0 multiplies between two tests of
/// the halo messages (about 0.4 MB of matrix: a few tens of microseconds).
const OVERLAP_CHUNK_NNZ: u32 = 1 << 15;

/// The halo exchanges of one rank so far.
#[derive(Clone, Copy, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct HaloStats {
    /// Exchanges (one per SpMV).
    pub exchanges: u64,
    /// Entries of `x` received per exchange.
    pub recv_entries: usize,
    /// Entries of `x` sent per exchange.
    pub send_entries: usize,
    /// Seconds from posting the messages until they all completed, summed.
    pub exchange_seconds: f64,
    /// Seconds thread 0 waited for messages after its overlapped work ran
    /// out, summed: the communication not hidden behind compute.
    pub exposed_seconds: f64,
}

/// The send and halo buffers of the exchange.
///
/// Protocol (what makes the `Sync` below sound): in an SpMV job, only
/// thread 0 touches them until a barrier; after it, every thread reads
/// `halo` and nobody writes either until the barrier that ends the SpMV.
struct HaloBuffers {
    send: UnsafeCell<Vec<f64>>,
    halo: UnsafeCell<SharedArray<f64>>,
}

// SAFETY: see the protocol above; `f64` is plain data.
unsafe impl Sync for HaloBuffers {}

/// A matrix with its rows split over the ranks of a communicator, each
/// rank's block on the rank's team (see the [module docs](crate::dist)).
///
/// It borrows the [`RankComm`], so like it, it stays on the thread that
/// initialised MPI (neither `Send` nor `Sync`).
///
/// # Examples
///
/// ```no_run
/// use skelaff_spmv::dist::{DistCsr, Mpi};
/// use skelaff_spmv::{SpmvEngine, SpmvEngineOptions, SplitKind, Triplets};
///
/// let mpi = Mpi::init()?;
/// let comm = mpi.world();
/// let engine = SpmvEngine::new(SpmvEngineOptions::default())?;
/// // Every rank builds the same 1-D Laplacian and keeps its own rows.
/// let n = 1000;
/// let mut t = Triplets::new(n, n)?;
/// for i in 0..n {
///     t.push(i, i, 2.0)?;
///     if i > 0 { t.push(i, i - 1, -1.0)?; }
///     if i + 1 < n { t.push(i, i + 1, -1.0)?; }
/// }
/// let mut a = DistCsr::from_global(&comm, &engine, &t.to_csr(), SplitKind::Rows)?;
/// let x = vec![1.0; a.local_cols()];
/// let mut y = vec![0.0; a.local_rows()];
/// a.apply(engine.team(), &x, &mut y)?;
/// let y = comm.all_gather_vec(&y); // the whole product on every rank
/// assert_eq!((y[0], y[1]), (1.0, 0.0));
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub struct DistCsr<'c> {
    comm: &'c RankComm,
    block: Block,
}

/// This rank's part of a [`DistCsr`], without the communicator: what every
/// thread of a team job reads (`Sync`), while thread 0 alone gets the
/// communicator, [`Lent`].
struct Block {
    rows: Split,
    cols: Split,
    diag: CsrSpmv<f64>,
    offdiag: CsrSpmv<f64>,
    plan: HaloPlan,
    bufs: HaloBuffers,
    stats: Mutex<HaloStats>,
}

impl<'c> DistCsr<'c> {
    /// This rank's block: `local` holds its rows (`rows.range(rank)`) with
    /// global column indices; `rows` and `cols` split the global rows and
    /// columns (the entries of `x`) over the ranks. Collective.
    ///
    /// # Errors
    ///
    /// [`Error::BadChunking`] when a split does not have one chunk per
    /// rank; [`Error::DimensionMismatch`] when `local` does not match its
    /// chunk or the column count; allocation and `mbind` errors; on every
    /// other rank, [`Error::RankFailed`] naming the rank that failed.
    pub fn new(comm: &'c RankComm, engine: &SpmvEngine, local: &Csr<f64>, rows: Split, cols: Split) -> Result<Self> {
        let checked = if rows.threads() != comm.size() {
            Err(Error::BadChunking { what: "one row chunk per rank", value: rows.threads() })
        } else if cols.threads() != comm.size() {
            Err(Error::BadChunking { what: "one column chunk per rank", value: cols.threads() })
        } else {
            check_len("the local block's rows", local.nrows(), rows.range(comm.rank()).len())
                .and_then(|()| check_len("the local block's columns", local.ncols(), cols.dim()))
        };
        comm.agree(checked)?;
        let plan = HaloPlan::new(comm, &cols, local.col_idx().iter().copied());
        let built = DistCsr::build(comm, engine, local, &cols, &plan);
        let (diag, offdiag, halo) = comm.agree(built)?;
        Ok(DistCsr {
            comm,
            block: Block {
                bufs: HaloBuffers { send: UnsafeCell::new(vec![0.0; plan.send_len()]), halo: UnsafeCell::new(halo) },
                stats: Mutex::new(HaloStats {
                    recv_entries: plan.recv_len(),
                    send_entries: plan.send_len(),
                    ..HaloStats::default()
                }),
                rows,
                cols,
                diag,
                offdiag,
                plan,
            },
        })
    }

    /// The diagonal and off-diagonal operators and the halo buffer.
    fn build(
        comm: &RankComm,
        engine: &SpmvEngine,
        local: &Csr<f64>,
        cols: &Split,
        plan: &HaloPlan,
    ) -> Result<(CsrSpmv<f64>, CsrSpmv<f64>, SharedArray<f64>)> {
        let mine = cols.range(comm.rank());
        let halo_cols = plan.halo_cols();
        let (mut dp, mut di, mut dv) = (vec![0u32], Vec::new(), Vec::new());
        let (mut op, mut oi, mut ov) = (vec![0u32], Vec::new(), Vec::new());
        for r in 0..local.nrows() {
            let (js, vs) = local.row(r);
            for (&j, &v) in js.iter().zip(vs) {
                if mine.contains(&(j as usize)) {
                    di.push(j - mine.start as u32);
                    dv.push(v);
                } else {
                    // Every column outside this rank's is in the halo (the plan was built from them).
                    let at = halo_cols
                        .binary_search(&j)
                        .map_err(|_| Error::InvalidStructure(format!("column {j} missing from the halo")))?;
                    oi.push(at as u32);
                    ov.push(v);
                }
            }
            dp.push(di.len() as u32);
            op.push(oi.len() as u32);
        }
        let opts = engine.options();
        let masa = engine.masa();
        // One row split for both parts, balanced over all of a row's entries.
        let split = masa.split(opts.split, local.row_ptr());
        let diag = Csr::from_parts(local.nrows(), mine.len(), dp, di, dv)?;
        let offdiag = Csr::from_parts(local.nrows(), halo_cols.len(), op, oi, ov)?;
        let diag = CsrSpmv::with_split(masa, &diag, opts, split.clone())?;
        let offdiag = CsrSpmv::with_split(masa, &offdiag, opts, split)?;
        let halo = masa.place_zeroed(halo_cols.len(), TeamAccess::NonDeterministic, opts.placement)?;
        Ok((diag, offdiag, halo))
    }

    /// Every rank holds the whole matrix `a` (read from one file, say) and
    /// keeps its block of rows: rows split over the ranks by `kind` (equal
    /// rows, or balanced entries), and the entries of `x` split like the
    /// rows when `a` is square, in equal chunks otherwise. Collective.
    ///
    /// # Errors
    ///
    /// As [`DistCsr::new`].
    pub fn from_global(comm: &'c RankComm, engine: &SpmvEngine, a: &Csr<f64>, kind: SplitKind) -> Result<Self> {
        let rows = match kind {
            SplitKind::Rows => Split::equal(a.nrows(), comm.size()),
            SplitKind::Nnz => Split::nnz(a.row_ptr(), comm.size()),
        };
        let cols = if a.nrows() == a.ncols() { rows.clone() } else { Split::equal(a.ncols(), comm.size()) };
        let local = a.row_block(rows.range(comm.rank()));
        DistCsr::new(comm, engine, &local, rows, cols)
    }

    /// The communicator.
    pub fn comm(&self) -> &'c RankComm {
        self.comm
    }

    /// Global rows and columns.
    pub fn shape(&self) -> (usize, usize) {
        (self.block.rows.dim(), self.block.cols.dim())
    }

    /// The split of the rows (and of `y`) over the ranks.
    pub fn rows(&self) -> &Split {
        &self.block.rows
    }

    /// The split of the columns (the entries of `x`) over the ranks.
    pub fn cols(&self) -> &Split {
        &self.block.cols
    }

    /// Rows this rank holds (the length of its `y`).
    pub fn local_rows(&self) -> usize {
        self.block.local_rows()
    }

    /// Entries of `x` this rank owns (the length of its `x`).
    pub fn local_cols(&self) -> usize {
        self.block.local_cols()
    }

    /// The team size the rank's block was split for.
    pub fn threads(&self) -> usize {
        self.block.diag.threads()
    }

    /// Entries stored on this rank.
    pub fn local_nnz(&self) -> usize {
        self.block.diag.nnz() + self.block.offdiag.nnz()
    }

    /// The halo plan.
    pub fn plan(&self) -> &HaloPlan {
        &self.block.plan
    }

    /// The exchanges so far.
    pub fn stats(&self) -> HaloStats {
        *self.block.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A zeroed vector of this rank's entries of `x`, placed as the
    /// diagonal part's input.
    ///
    /// # Errors
    ///
    /// Allocation and `mbind` errors.
    pub fn input_vector(&self) -> Result<SharedArray<f64>> {
        self.block.diag.input_vector()
    }

    /// A zeroed vector of this rank's rows of `y`, placed as the output.
    ///
    /// # Errors
    ///
    /// Allocation and `mbind` errors.
    pub fn output_vector(&self) -> Result<SharedArray<f64>> {
        self.block.diag.output_vector()
    }

    /// `y = A x` over every rank: `x` is this rank's entries of `x`, `y`
    /// its rows. Collective.
    ///
    /// # Errors
    ///
    /// [`Error::TeamMismatch`]; [`Error::DimensionMismatch`] for wrong
    /// lengths (checked on this rank only: a rank that fails here leaves the
    /// others waiting in the exchange, so check lengths before a collective
    /// loop, as the examples do).
    pub fn apply(&mut self, team: &Team, x: &[f64], y: &mut [f64]) -> Result<()> {
        if team.threads() != self.threads() {
            return Err(Error::TeamMismatch { expected: self.threads(), got: team.threads() });
        }
        check_len("x", x.len(), self.local_cols())?;
        check_len("y", y.len(), self.local_rows())?;
        let ys = SharedMut::new(y);
        let block = &self.block;
        // SAFETY: it reaches only the team job below, which this thread
        // starts and waits for.
        let comm = unsafe { Lent::new(self.comm) };
        // SAFETY: every team thread calls once with the same x and y, which
        // this job borrows for its whole length; `&mut self` rules out a
        // concurrent SpMV.
        team.run(|member| unsafe { block.apply_part(member, comm, x, ys) });
        Ok(())
    }

    /// Seconds of one halo exchange with nothing to overlap (the median of
    /// `reps`), run from the calling thread: what the overlapped SpMV's
    /// exposed wait is measured against. Collective.
    pub fn exchange_alone(&mut self, reps: usize) -> f64 {
        let x = vec![0.0; self.local_cols()];
        let b = &mut self.block;
        let mut times: Vec<f64> = (0..reps.max(1))
            .map(|_| {
                let (send, halo) = (b.bufs.send.get_mut(), b.bufs.halo.get_mut());
                b.plan.exchange(self.comm, &x, send, halo, || false).total
            })
            .collect();
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    }
}

impl Block {
    fn local_rows(&self) -> usize {
        self.diag.nrows()
    }

    fn local_cols(&self) -> usize {
        self.diag.ncols()
    }

    /// The rows of thread 0's chunk ending after about `OVERLAP_CHUNK_NNZ`
    /// diagonal entries past `from`.
    fn chunk_end(&self, from: usize, rows_end: usize) -> usize {
        let ptr = self.diag.arrays().0;
        let target = ptr[from].saturating_add(OVERLAP_CHUNK_NNZ);
        let end = from + ptr[from..=rows_end].partition_point(|&p| p < target);
        end.max(from + 1).min(rows_end)
    }

    /// This thread's part of the distributed SpMV, with `comm` lent to
    /// thread 0.
    ///
    /// # Safety
    ///
    /// As [`TeamSpmv::apply_part`], with `x` this rank's entries of `x` and
    /// `y` its rows; every rank runs it at once.
    unsafe fn apply_part(&self, member: &TeamMember<'_>, comm: Lent<'_>, x: &[f64], y: SharedMut<'_, f64>) {
        assert!(x.len() == self.local_cols() && y.len() == self.local_rows(), "x or y has the wrong length");
        let t = member.index();
        let rows = self.diag.owned_rows(t);
        // SAFETY: row ranges of different threads are disjoint and y is ours (contract).
        let yt = unsafe { y.range_mut(rows.clone()) };
        // Thread 0 (the only one `on` gives the communicator) exchanges the halo.
        if let Some(comm) = comm.on(member) {
            // SAFETY: thread 0 alone touches the buffers before the barrier below.
            let (send, halo) = unsafe { (&mut *self.bufs.send.get(), &mut *self.bufs.halo.get()) };
            let mut at = rows.start;
            let times = self.plan.exchange(comm, x, send, halo, || {
                if at < rows.end {
                    let end = self.chunk_end(at, rows.end);
                    self.diag.rows_into::<false>(x, at..end, &mut yt[at - rows.start..end - rows.start]);
                    at = end;
                }
                at < rows.end
            });
            let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            s.exchanges += 1;
            s.exchange_seconds += times.total;
            s.exposed_seconds += times.exposed;
        } else {
            self.diag.rows_into::<false>(x, rows.clone(), yt);
        }
        member.barrier();
        // SAFETY: after the barrier nobody writes the halo until the next one.
        let halo: &[f64] = unsafe { &*self.bufs.halo.get() };
        // SAFETY: as above, this thread's rows.
        let yt = unsafe { y.range_mut(rows.clone()) };
        self.offdiag.rows_into::<true>(halo, rows, yt);
        member.barrier();
    }

    /// The rows of this rank's vectors thread `t` of the team updates.
    fn owned_rows(&self, t: usize) -> Range<usize> {
        self.diag.owned_rows(t)
    }
}

impl core::fmt::Debug for DistCsr<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DistCsr")
            .field("comm", &self.comm)
            .field("rows", &self.block.rows)
            .field("cols", &self.block.cols)
            .field("local_nnz", &self.local_nnz())
            .field("halo", &(self.block.plan.recv_len(), self.block.plan.send_len()))
            .finish()
    }
}

/// A square [`DistCsr`] whose `x` is split like its rows, as the CG
/// iteration sees it: sums over every thread and then every rank.
pub(crate) struct DistSystem<'a> {
    block: &'a Block,
    comm: Lent<'a>,
}

impl<'a> DistSystem<'a> {
    /// `op` for the CG iteration's team jobs.
    ///
    /// # Safety
    ///
    /// As [`Lent::new`]: the result must reach no team job but those that
    /// the calling thread runs, as `cg::solve_on` and
    /// `nas::power::power_method` do when called from this thread (the
    /// methods of [`CgSystem`] that reach MPI take a `TeamMember`).
    pub(crate) unsafe fn new(op: &'a DistCsr<'_>) -> DistSystem<'a> {
        // SAFETY: the caller's contract is `Lent::new`'s.
        DistSystem { block: &op.block, comm: unsafe { Lent::new(op.comm) } }
    }
}

impl CgSystem for DistSystem<'_> {
    fn local_len(&self) -> usize {
        self.block.local_rows()
    }
    fn threads(&self) -> usize {
        self.block.diag.threads()
    }
    fn rows(&self, t: usize) -> Range<usize> {
        self.block.owned_rows(t)
    }
    unsafe fn apply_part(&self, member: &TeamMember<'_>, x: &[f64], y: SharedMut<'_, f64>) {
        // SAFETY: the caller's contract is the operator's.
        unsafe { self.block.apply_part(member, self.comm, x, y) }
    }
    fn sums<const N: usize>(&self, member: &TeamMember<'_>, v: [f64; N]) -> [f64; N] {
        let comm = self.comm.on(member);
        member.sums_then(v, |team| comm.expect("sums_then widens on thread 0, which `on` lends MPI to").sums(team))
    }
}
