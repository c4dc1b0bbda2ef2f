//! Parallel SpMV operators on a [`Team`], with their arrays placed by MASA:
//! the [`TeamSpmv`] trait and the options and shape every operator shares.
//! One file per operator (`csr`, `csc`, `sym`), and `partial` for the
//! per-thread partial sums that CSC and the single symmetric kernel use.
//!
//! | operator | split | bound to the owning thread's node (MASA) | interleaved (MASA) |
//! |---|---|---|---|
//! | [`CsrSpmv`] (Table 1) | rows | `A`, `jA`, `ptrA`, `y` | `x` |
//! | [`CscSpmv`] (Table 2) | columns | `A`, `jA`, `ptrA`, `x`, partial sums | `y` |
//! | [`SymSpmv`], [`SymVariant::Duplicated`] (Fig. 7) | rows = columns | CSC and CSR copies of the triangle, `y` | `x` |
//! | [`SymSpmv`], [`SymVariant::Single`] | columns | `A`, `jA`, `ptrA`, `y`, partial sums | `x` |
//!
//! CSC writes `y[jA(k)]` for any row, so two threads may update the same
//! element. Instead of locks, each thread adds its columns into a private
//! buffer that covers only the rows its columns touch, and after a barrier
//! each thread sums the buffers over its own slice of `y`, in thread order
//! (so the result is deterministic for a given thread count).
//!
//! # Byte model
//!
//! [`TeamSpmv::model_bytes`] counts what one SpMV must move at least: every
//! stored value and index once (8 + 4 bytes per entry), every pointer once
//! (4 bytes per compressed row or column), the output once (8 bytes per
//! row) and the input once (8 bytes per column). For CSR that is the issue's
//! `nnz × (8 + 4) + rows × (4 + 8) + cols × 8`. It ignores re-reads of the
//! input and the partial-sum traffic of CSC, so it understates what those
//! kernels move.

mod csc;
mod csr;
mod partial;
mod sym;

use core::ops::Range;

pub use self::csc::CscSpmv;
pub use self::csr::CsrSpmv;
pub use self::sym::{SymSpmv, SymVariant};
use crate::array::SharedArray;
use crate::error::{Error, Result};
use crate::kernel::Simd;
use crate::masa::{ArrayPlacement, Masa, Split, SplitKind, TeamAccess};
use crate::matrix::check_len;
use crate::scalar::Scalar;
use crate::team::{SharedMut, Team, TeamMember};

/// How to build an operator.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{ArrayPlacement, SpmvOptions, SplitKind};
///
/// let o = SpmvOptions::default().split(SplitKind::Nnz).placement(ArrayPlacement::FirstTouch);
/// assert_eq!(o.split, SplitKind::Nnz);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SpmvOptions {
    /// How rows (or columns) are split among threads.
    pub split: SplitKind,
    /// Where the arrays go.
    pub placement: ArrayPlacement,
    /// Which `f64` kernels run.
    pub simd: Simd,
}

impl Default for SpmvOptions {
    fn default() -> Self {
        SpmvOptions { split: SplitKind::Rows, placement: ArrayPlacement::Masa, simd: Simd::best() }
    }
}

impl SpmvOptions {
    /// With this split.
    pub fn split(mut self, split: SplitKind) -> Self {
        self.split = split;
        self
    }

    /// With this placement.
    pub fn placement(mut self, placement: ArrayPlacement) -> Self {
        self.placement = placement;
        self
    }

    /// With these kernels (falls back to portable ones if the CPU lacks them).
    pub fn simd(mut self, simd: Simd) -> Self {
        self.simd = if simd.is_available() { simd } else { Simd::Portable };
        self
    }
}

/// What every operator shares: its sizes, the MASA state and options it
/// was built with, the rows of `y` each thread finishes, and how its input
/// and output vectors are split among the threads (which decides where
/// MASA puts their pages).
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{CsrSpmv, Masa, SpmvOptions, TeamSpmv, Triplets};
///
/// let mut t = Triplets::new(4, 3)?;
/// t.push(3, 2, 1.0)?;
/// let masa = Masa::preprocess(2)?;
/// let op = CsrSpmv::new(&masa, &t.to_csr(), SpmvOptions::default())?;
/// let shape = op.shape();
/// assert_eq!((shape.nrows(), shape.ncols(), shape.threads()), (4, 3, 2));
/// assert_eq!(shape.owned().bounds(), &[0, 2, 4]);
/// assert!(shape.input_split().is_none()); // CSR reads any element of x
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct OpShape {
    masa: Masa,
    opts: SpmvOptions,
    nrows: usize,
    ncols: usize,
    owned: Split,
    input: Option<Split>,
    output: Option<Split>,
}

impl OpShape {
    /// The shape of an `nrows x ncols` operator for `masa`'s team: thread
    /// `t` finishes rows `owned.range(t)` of `y`; `input` (`output`) is the
    /// split of `x` (`y`) when thread `t` alone touches its chunk `t`
    /// (a deterministic access: MASA binds the chunks), `None` when any
    /// thread may touch any element (MASA interleaves it).
    ///
    /// # Errors
    ///
    /// [`Error::BadChunking`] when a split does not cover its vector or has
    /// another thread count than the team.
    pub fn new(
        masa: &Masa,
        opts: SpmvOptions,
        (nrows, ncols): (usize, usize),
        owned: Split,
        input: Option<Split>,
        output: Option<Split>,
    ) -> Result<OpShape> {
        let fits = |s: &Split, dim: usize| s.threads() == masa.threads() && s.dim() == dim;
        if !fits(&owned, nrows)
            || input.as_ref().is_some_and(|s| !fits(s, ncols))
            || output.as_ref().is_some_and(|s| !fits(s, nrows))
        {
            return Err(Error::BadChunking {
                what: "splits with one chunk per team thread that cover their vector",
                value: owned.threads(),
            });
        }
        Ok(OpShape { masa: masa.clone(), opts, nrows, ncols, owned, input, output })
    }

    /// Rows of `A` (length of `y`).
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Columns of `A` (length of `x`).
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The team size the operator was split for.
    pub fn threads(&self) -> usize {
        self.owned.threads()
    }

    /// The rows of `y` each thread finishes.
    pub fn owned(&self) -> &Split {
        &self.owned
    }

    /// How `x` is split among the threads (`None`: any thread reads any element).
    pub fn input_split(&self) -> Option<&Split> {
        self.input.as_ref()
    }

    /// How `y` is split among the threads (`None`: any thread writes any element).
    pub fn output_split(&self) -> Option<&Split> {
        self.output.as_ref()
    }

    /// The options the operator was built with.
    pub fn options(&self) -> SpmvOptions {
        self.opts
    }

    /// The MASA state the operator's arrays were placed by.
    pub fn masa(&self) -> &Masa {
        &self.masa
    }

    /// A zeroed vector of `len` elements split as `split`, placed by the options.
    fn vector<T: Scalar>(&self, len: usize, split: Option<&Split>) -> Result<SharedArray<T>> {
        let access = split.map_or(TeamAccess::NonDeterministic, |s| TeamAccess::Deterministic(s.bounds()));
        self.masa.place_zeroed(len, access, self.opts.placement)
    }
}

/// A parallel `y = A x` that runs on every thread of a [`Team`] at once.
///
/// Implementations split the work statically: thread `t` always does the
/// same part, and finishes the rows [`owned_rows(t)`](TeamSpmv::owned_rows)
/// of `y`. They describe themselves by their [`OpShape`]; sizes, splits and
/// vector placement follow from it.
pub trait TeamSpmv<T: Scalar = f64>: Sync {
    /// Sizes, splits and placement.
    fn shape(&self) -> &OpShape;

    /// Bytes one SpMV moves by the [byte model](self#byte-model).
    fn model_bytes(&self) -> u64;

    /// This thread's part of `y = A x`, for SPMD code (such as CG) that
    /// runs its own job on the team.
    ///
    /// # Safety
    ///
    /// - Every thread of one [`Team::run`] job calls it (the team has
    ///   [`threads`](TeamSpmv::threads) threads), with the same `x` and `y`.
    /// - From the call until every thread has returned, no thread writes
    ///   `x`, and nothing but this call reads or writes `y`, except that
    ///   thread `t` may read `y[owned_rows(t)]` once its own call returned.
    /// - No other call of `apply_part` on this operator runs concurrently
    ///   outside this job.
    ///
    /// # Panics
    ///
    /// If `x` or `y` has the wrong length.
    unsafe fn apply_part(&self, member: &TeamMember<'_>, x: &[T], y: SharedMut<'_, T>);

    /// Rows of `A` (length of `y`).
    fn nrows(&self) -> usize {
        self.shape().nrows
    }

    /// Columns of `A` (length of `x`).
    fn ncols(&self) -> usize {
        self.shape().ncols
    }

    /// The team size the operator was split for.
    fn threads(&self) -> usize {
        self.shape().threads()
    }

    /// The rows of `y` thread `t` finishes; disjoint, covering `0..nrows`.
    ///
    /// # Panics
    ///
    /// If `t >= threads()`.
    fn owned_rows(&self, t: usize) -> Range<usize> {
        self.shape().owned.range(t)
    }

    /// A zeroed vector of `ncols` placed as this operator's input (`x`).
    ///
    /// # Errors
    ///
    /// Allocation or `mbind` errors.
    fn input_vector(&self) -> Result<SharedArray<T>> {
        let s = self.shape();
        s.vector(s.ncols, s.input.as_ref())
    }

    /// A zeroed vector of `nrows` placed as this operator's output (`y`).
    ///
    /// # Errors
    ///
    /// Allocation or `mbind` errors.
    fn output_vector(&self) -> Result<SharedArray<T>> {
        let s = self.shape();
        s.vector(s.nrows, s.output.as_ref())
    }

    /// `y = A x` on `team`.
    ///
    /// # Errors
    ///
    /// [`Error::TeamMismatch`] if the team's size differs from the split;
    /// [`Error::DimensionMismatch`] for wrong vector lengths.
    fn apply(&mut self, team: &Team, x: &[T], y: &mut [T]) -> Result<()> {
        if team.threads() != self.threads() {
            return Err(Error::TeamMismatch { expected: self.threads(), got: team.threads() });
        }
        check_len("x", x.len(), self.ncols())?;
        check_len("y", y.len(), self.nrows())?;
        let ys = SharedMut::new(y);
        let me = &*self;
        // SAFETY: every team thread calls once with the same x and y; `x`
        // is borrowed shared and `y` exclusively for the whole job, so no
        // one else touches them; `&mut self` rules out concurrent calls.
        team.run(|member| unsafe { me.apply_part(member, x, ys) });
        Ok(())
    }
}

/// Bounds for a pointer array of `dim + 1` entries split like `split`: the
/// last thread also owns the final pointer.
pub(crate) fn ptr_bounds(split: &Split) -> Vec<usize> {
    let mut b = split.bounds().to_vec();
    if let Some(last) = b.last_mut() {
        *last += 1;
    }
    b
}
