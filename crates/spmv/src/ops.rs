//! Parallel SpMV operators on a [`Team`], with their arrays placed by MASA.
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

use core::cell::UnsafeCell;
use core::fmt;
use core::ops::Range;

use crate::array::SharedArray;
use crate::error::{Error, Result};
use crate::kernel::{self, Simd};
use crate::masa::{Access, ArrayPlacement, Masa, Split, SplitKind};
use crate::matrix::{Csc, Csr, check_len};
use crate::scalar::Scalar;
use crate::team::{Ctx, SharedMut, Team};

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

/// A parallel `y = A x` that runs on every thread of a [`Team`] at once.
///
/// Implementations split the work statically: thread `t` always does the
/// same part, and finishes the rows [`owned_rows(t)`](TeamSpmv::owned_rows)
/// of `y`.
pub trait TeamSpmv<T: Scalar = f64>: Sync {
    /// Rows of `A` (length of `y`).
    fn nrows(&self) -> usize;
    /// Columns of `A` (length of `x`).
    fn ncols(&self) -> usize;
    /// The team size the operator was split for.
    fn threads(&self) -> usize;
    /// The rows of `y` thread `t` finishes; disjoint, covering `0..nrows`.
    fn owned_rows(&self, t: usize) -> Range<usize>;
    /// Bytes one SpMV moves by the [byte model](self#byte-model).
    fn model_bytes(&self) -> u64;
    /// A zeroed vector of `ncols` placed as this operator's input (`x`).
    ///
    /// # Errors
    ///
    /// Allocation or `mbind` errors.
    fn input_vector(&self) -> Result<SharedArray<T>>;
    /// A zeroed vector of `nrows` placed as this operator's output (`y`).
    ///
    /// # Errors
    ///
    /// Allocation or `mbind` errors.
    fn output_vector(&self) -> Result<SharedArray<T>>;

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
    unsafe fn apply_part(&self, ctx: &Ctx<'_>, x: &[T], y: SharedMut<'_, T>);

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
        team.run(|ctx| unsafe { me.apply_part(ctx, x, ys) });
        Ok(())
    }
}

/// A per-thread buffer of partial sums over the window of rows the
/// thread's columns touch.
struct Partial<T> {
    window: Range<usize>,
    buf: UnsafeCell<SharedArray<T>>,
}

/// The rows touched by the entries of lines `lines` of a compressed matrix,
/// skipping entries for which `skip(line, index)` holds.
fn window(ptr: &[u32], idx: &[u32], lines: Range<usize>, skip: impl Fn(usize, u32) -> bool) -> Range<usize> {
    let (mut lo, mut hi) = (usize::MAX, 0usize);
    for j in lines {
        for &i in &idx[ptr[j] as usize..ptr[j + 1] as usize] {
            if !skip(j, i) {
                lo = lo.min(i as usize);
                hi = hi.max(i as usize + 1);
            }
        }
    }
    if lo >= hi { 0..0 } else { lo..hi }
}

/// Bounds that give every element of an array to thread `owner`.
fn all_to(owner: usize, threads: usize, len: usize) -> Vec<usize> {
    (0..=threads).map(|i| if i <= owner { 0 } else { len }).collect()
}

/// Bounds for a pointer array of `dim + 1` entries split like `split`: the
/// last thread also owns the final pointer.
fn ptr_bounds(split: &Split) -> Vec<usize> {
    let mut b = split.bounds().to_vec();
    if let Some(last) = b.last_mut() {
        *last += 1;
    }
    b
}

fn make_partials<T: Scalar>(
    masa: &Masa,
    placement: ArrayPlacement,
    windows: Vec<Range<usize>>,
) -> Result<Vec<Partial<T>>> {
    let threads = windows.len();
    windows
        .into_iter()
        .enumerate()
        .map(|(t, w)| {
            let bounds = all_to(t, threads, w.len());
            let buf = masa.place_zeroed::<T>(w.len(), Access::Deterministic(&bounds), placement)?;
            Ok(Partial { window: w, buf: UnsafeCell::new(buf) })
        })
        .collect()
}

/// Phase 2 of the lock-free scatter: `y[rows] += Σ_s partial_s` over each
/// partial's window, in thread order.
///
/// # Safety
///
/// No thread writes any partial buffer during the call.
unsafe fn add_partials<T: Scalar>(partials: &[Partial<T>], rows: Range<usize>, yt: &mut [T]) {
    for p in partials {
        let (lo, hi) = (rows.start.max(p.window.start), rows.end.min(p.window.end));
        if lo >= hi {
            continue;
        }
        // SAFETY: no writer (contract), so a shared view is sound.
        let buf = unsafe { &*p.buf.get() };
        let src = &buf[lo - p.window.start..hi - p.window.start];
        for (d, &s) in yt[lo - rows.start..hi - rows.start].iter_mut().zip(src) {
            *d += s;
        }
    }
}

/// CSR `y = A x` (Fig. 4, top), rows split among threads; placement per Table 1.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{CsrSpmv, Masa, SpmvOptions, TeamSpmv, Triplets};
///
/// let mut t = Triplets::new(3, 3)?;
/// for i in 0..3 { t.push(i, i, 2.0)?; }
/// t.push(0, 2, 1.0)?;
/// let masa = Masa::preprocess(2)?;
/// let team = masa.team()?;
/// let mut op = CsrSpmv::new(&masa, &t.to_csr(), SpmvOptions::default())?;
/// let mut y = vec![0.0; 3];
/// op.apply(&team, &[1.0, 2.0, 3.0], &mut y)?;
/// assert_eq!(y, [5.0, 4.0, 6.0]);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub struct CsrSpmv<T: Scalar = f64> {
    masa: Masa,
    opts: SpmvOptions,
    nrows: usize,
    ncols: usize,
    ptr: SharedArray<u32>,
    idx: SharedArray<u32>,
    val: SharedArray<T>,
    split: Split,
}

impl<T: Scalar> CsrSpmv<T> {
    /// Copies `a` into arrays placed by `opts.placement` and splits its rows
    /// by `opts.split` for `masa`'s team.
    ///
    /// # Errors
    ///
    /// Allocation and `mbind` errors.
    pub fn new(masa: &Masa, a: &Csr<T>, opts: SpmvOptions) -> Result<Self> {
        let split = masa.split(opts.split, a.row_ptr());
        let nnz_bounds = split.through(a.row_ptr());
        let p = opts.placement;
        Ok(CsrSpmv {
            masa: masa.clone(),
            opts,
            nrows: a.nrows(),
            ncols: a.ncols(),
            ptr: masa.place(a.row_ptr(), Access::Deterministic(&ptr_bounds(&split)), p)?,
            idx: masa.place(a.col_idx(), Access::Deterministic(&nnz_bounds), p)?,
            val: masa.place(a.values(), Access::Deterministic(&nnz_bounds), p)?,
            split,
        })
    }

    /// The row split.
    pub fn split(&self) -> &Split {
        &self.split
    }

    /// The placed arrays `(ptrA, jA, A)`.
    pub fn arrays(&self) -> (&SharedArray<u32>, &SharedArray<u32>, &SharedArray<T>) {
        (&self.ptr, &self.idx, &self.val)
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.val.len()
    }

    /// The options it was built with.
    pub fn options(&self) -> SpmvOptions {
        self.opts
    }
}

impl<T: Scalar> fmt::Debug for CsrSpmv<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CsrSpmv")
            .field("nrows", &self.nrows)
            .field("ncols", &self.ncols)
            .field("nnz", &self.nnz())
            .field("split", &self.split)
            .field("options", &self.opts)
            .finish()
    }
}

impl<T: Scalar> TeamSpmv<T> for CsrSpmv<T> {
    fn nrows(&self) -> usize {
        self.nrows
    }
    fn ncols(&self) -> usize {
        self.ncols
    }
    fn threads(&self) -> usize {
        self.split.threads()
    }
    fn owned_rows(&self, t: usize) -> Range<usize> {
        self.split.range(t)
    }
    fn model_bytes(&self) -> u64 {
        (self.nnz() as u64) * 12 + (self.nrows as u64) * 12 + (self.ncols as u64) * 8
    }
    fn input_vector(&self) -> Result<SharedArray<T>> {
        self.masa.place_zeroed(self.ncols, Access::NonDeterministic, self.opts.placement)
    }
    fn output_vector(&self) -> Result<SharedArray<T>> {
        self.masa.place_zeroed(self.nrows, Access::Deterministic(self.split.bounds()), self.opts.placement)
    }
    unsafe fn apply_part(&self, ctx: &Ctx<'_>, x: &[T], y: SharedMut<'_, T>) {
        assert!(x.len() == self.ncols && y.len() == self.nrows, "x or y has the wrong length");
        let rows = self.split.range(ctx.index());
        // SAFETY: row ranges of different threads are disjoint, and nothing
        // else touches y during the call (contract).
        let yt = unsafe { y.range_mut(rows.clone()) };
        // SAFETY: the arrays are copies of a validated CSR matrix (pointers
        // cover every row, indices below ncols == x.len()), and yt has
        // rows.len() elements.
        unsafe { T::csr_rows(self.opts.simd, &self.ptr, &self.idx, &self.val, x, yt, rows) };
    }
}

/// CSC `y = A x` (Fig. 4, bottom), columns split among threads; placement
/// per Table 2; conflicting writes to `y` resolved with per-thread partial
/// sums over the touched rows (see the [module docs](self)).
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{CscSpmv, Masa, SpmvOptions, TeamSpmv, Triplets};
///
/// let mut t = Triplets::new(2, 3)?;
/// t.push(0, 0, 1.0)?;
/// t.push(0, 2, 1.0)?; // columns 0 and 2 both write y[0]
/// t.push(1, 1, 3.0)?;
/// let masa = Masa::preprocess(2)?;
/// let team = masa.team()?;
/// let mut op = CscSpmv::new(&masa, &t.to_csc(), SpmvOptions::default())?;
/// let mut y = vec![0.0; 2];
/// op.apply(&team, &[1.0, 1.0, 1.0], &mut y)?;
/// assert_eq!(y, [2.0, 3.0]);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub struct CscSpmv<T: Scalar = f64> {
    masa: Masa,
    opts: SpmvOptions,
    nrows: usize,
    ncols: usize,
    ptr: SharedArray<u32>,
    idx: SharedArray<u32>,
    val: SharedArray<T>,
    /// Columns of each thread.
    split: Split,
    /// Rows of `y` each thread finishes in phase 2.
    out_split: Split,
    partials: Vec<Partial<T>>,
}

// SAFETY: the partial buffers behind `UnsafeCell` are written only inside
// `apply_part`, whose contract (one job at a time, disjoint writers, a
// barrier between the write and read phases) rules out data races; all
// other fields are `Sync`.
unsafe impl<T: Scalar> Sync for CscSpmv<T> {}

impl<T: Scalar> CscSpmv<T> {
    /// Copies `a` into arrays placed by `opts.placement`, splits its columns
    /// by `opts.split`, and allocates each thread's partial-sum window.
    ///
    /// # Errors
    ///
    /// Allocation and `mbind` errors.
    pub fn new(masa: &Masa, a: &Csc<T>, opts: SpmvOptions) -> Result<Self> {
        let split = masa.split(opts.split, a.col_ptr());
        let nnz_bounds = split.through(a.col_ptr());
        let p = opts.placement;
        let windows =
            (0..split.threads()).map(|t| window(a.col_ptr(), a.row_idx(), split.range(t), |_, _| false)).collect();
        Ok(CscSpmv {
            masa: masa.clone(),
            opts,
            nrows: a.nrows(),
            ncols: a.ncols(),
            ptr: masa.place(a.col_ptr(), Access::Deterministic(&ptr_bounds(&split)), p)?,
            idx: masa.place(a.row_idx(), Access::Deterministic(&nnz_bounds), p)?,
            val: masa.place(a.values(), Access::Deterministic(&nnz_bounds), p)?,
            out_split: Split::equal(a.nrows(), split.threads()),
            partials: make_partials(masa, p, windows)?,
            split,
        })
    }

    /// The column split.
    pub fn split(&self) -> &Split {
        &self.split
    }

    /// The placed arrays `(ptrA, jA, A)`.
    pub fn arrays(&self) -> (&SharedArray<u32>, &SharedArray<u32>, &SharedArray<T>) {
        (&self.ptr, &self.idx, &self.val)
    }

    /// The rows each thread's partial buffer covers.
    pub fn windows(&self) -> Vec<Range<usize>> {
        self.partials.iter().map(|p| p.window.clone()).collect()
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.val.len()
    }
}

impl<T: Scalar> fmt::Debug for CscSpmv<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CscSpmv")
            .field("nrows", &self.nrows)
            .field("ncols", &self.ncols)
            .field("nnz", &self.nnz())
            .field("split", &self.split)
            .field("windows", &self.windows())
            .field("options", &self.opts)
            .finish()
    }
}

impl<T: Scalar> TeamSpmv<T> for CscSpmv<T> {
    fn nrows(&self) -> usize {
        self.nrows
    }
    fn ncols(&self) -> usize {
        self.ncols
    }
    fn threads(&self) -> usize {
        self.split.threads()
    }
    fn owned_rows(&self, t: usize) -> Range<usize> {
        self.out_split.range(t)
    }
    fn model_bytes(&self) -> u64 {
        (self.nnz() as u64) * 12 + (self.ncols as u64) * 12 + (self.nrows as u64) * 8
    }
    fn input_vector(&self) -> Result<SharedArray<T>> {
        self.masa.place_zeroed(self.ncols, Access::Deterministic(self.split.bounds()), self.opts.placement)
    }
    fn output_vector(&self) -> Result<SharedArray<T>> {
        self.masa.place_zeroed(self.nrows, Access::NonDeterministic, self.opts.placement)
    }
    unsafe fn apply_part(&self, ctx: &Ctx<'_>, x: &[T], y: SharedMut<'_, T>) {
        assert!(x.len() == self.ncols && y.len() == self.nrows, "x or y has the wrong length");
        let t = ctx.index();
        let mine = &self.partials[t];
        {
            // SAFETY: only thread t touches its own buffer in this phase; the
            // previous call ended with a barrier after everyone's reads.
            let buf = unsafe { &mut *mine.buf.get() };
            buf.fill(T::ZERO);
            let off = mine.window.start;
            for j in self.split.range(t) {
                let r = self.ptr[j] as usize..self.ptr[j + 1] as usize;
                // SAFETY: r is inside idx/val (validated pointers), and every
                // row of column j lies in this thread's window by construction.
                unsafe { kernel::portable::scatter(&self.idx[r.clone()], &self.val[r], x[j], buf, off) };
            }
        }
        ctx.barrier();
        let rows = self.out_split.range(t);
        // SAFETY: phase-2 row ranges are disjoint and y is ours (contract).
        let yt = unsafe { y.range_mut(rows.clone()) };
        yt.fill(T::ZERO);
        // SAFETY: between the two barriers nobody writes a partial buffer.
        unsafe { add_partials(&self.partials, rows, yt) };
        ctx.barrier();
    }
}

/// Which symmetric kernel [`SymSpmv`] runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum SymVariant {
    /// The paper's Fig. 7: the lower triangle in CSC and again (strictly
    /// below the diagonal) in CSR, so both halves are gathers and no two
    /// threads write the same element. Stores the matrix twice.
    Duplicated,
    /// Only the CSC lower triangle: each column is read once for both its
    /// gather (the transpose half) and its scatter (the stored half), the
    /// scatter going into per-thread partial sums.
    #[default]
    Single,
}

impl fmt::Display for SymVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SymVariant::Duplicated => "duplicated",
            SymVariant::Single => "single",
        })
    }
}

impl core::str::FromStr for SymVariant {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "duplicated" | "csc+csr" => Ok(SymVariant::Duplicated),
            "single" => Ok(SymVariant::Single),
            _ => Err(Error::Parse { input: s.to_owned(), expected: "duplicated or single" }),
        }
    }
}

/// The lower triangle (diagonal included) of `a`, in CSC: what MFDn stores
/// of its symmetric matrix.
pub fn lower_triangle<T: Scalar>(a: &Csr<T>) -> Csc<T> {
    let csc = a.to_csc();
    let ptr = csc.col_ptr();
    let mut new_ptr = Vec::with_capacity(ptr.len());
    let (mut idx, mut val) = (Vec::new(), Vec::new());
    new_ptr.push(0u32);
    for j in 0..csc.ncols() {
        let (is, vs) = csc.col(j);
        for (&i, &v) in is.iter().zip(vs) {
            if i as usize >= j {
                idx.push(i);
                val.push(v);
            }
        }
        new_ptr.push(idx.len() as u32);
    }
    Csc(crate::matrix::Compressed {
        major: csc.ncols(),
        minor: csc.nrows(),
        ptr: new_ptr.into(),
        idx: idx.into(),
        val: val.into(),
    })
}

/// The MFDn symmetric SpMV: `y = A x` for a symmetric `A` of which only the
/// lower triangle `L` is stored (CSC), as `y = L x + Lᵀ x - diag(L) x`,
/// computed by [`SymVariant`].
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{Masa, SpmvOptions, SymSpmv, SymVariant, TeamSpmv, Triplets};
///
/// // A = [[2, 1], [1, 3]]; store the lower triangle only.
/// let mut t = Triplets::new(2, 2)?;
/// t.push(0, 0, 2.0)?;
/// t.push(1, 0, 1.0)?;
/// t.push(1, 1, 3.0)?;
/// let masa = Masa::preprocess(2)?;
/// let team = masa.team()?;
/// for v in [SymVariant::Duplicated, SymVariant::Single] {
///     let mut op = SymSpmv::new(&masa, &t.to_csc(), v, SpmvOptions::default())?;
///     let mut y = vec![0.0; 2];
///     op.apply(&team, &[1.0, 1.0], &mut y)?;
///     assert_eq!(y, [3.0, 4.0]);
/// }
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub struct SymSpmv<T: Scalar = f64> {
    masa: Masa,
    opts: SpmvOptions,
    variant: SymVariant,
    n: usize,
    /// The lower triangle in CSC.
    ptr: SharedArray<u32>,
    idx: SharedArray<u32>,
    val: SharedArray<T>,
    /// Duplicated: the strictly lower triangle in CSR (empty otherwise).
    rptr: SharedArray<u32>,
    ridx: SharedArray<u32>,
    rval: SharedArray<T>,
    split: Split,
    /// Single: scatter partial sums (empty otherwise).
    partials: Vec<Partial<T>>,
}

// SAFETY: as for `CscSpmv`: the partial buffers are only written inside
// `apply_part`, by their owner, in a phase separated by barriers from reads.
unsafe impl<T: Scalar> Sync for SymSpmv<T> {}

impl<T: Scalar> SymSpmv<T> {
    /// Builds the operator from the lower triangle `lower` (CSC, square).
    ///
    /// # Errors
    ///
    /// [`Error::NotSquare`]; [`Error::NotLowerTriangular`] for an entry
    /// above the diagonal; allocation and `mbind` errors.
    pub fn new(masa: &Masa, lower: &Csc<T>, variant: SymVariant, opts: SpmvOptions) -> Result<Self> {
        let n = lower.ncols();
        if lower.nrows() != n {
            return Err(Error::NotSquare { what: "the symmetric SpMV", nrows: lower.nrows(), ncols: n });
        }
        let mut above = None;
        lower.for_each(|i, j, _| {
            if i < j && above.is_none() {
                above = Some((i, j));
            }
        });
        if let Some((row, col)) = above {
            return Err(Error::NotLowerTriangular { row, col });
        }
        // The single variant relies on strictly ascending rows in each
        // column (the diagonal first); normalise a matrix that lacks them.
        let normalised;
        let lower = if (0..n).all(|j| lower.col(j).0.windows(2).all(|w| w[0] < w[1])) {
            lower
        } else {
            let mut t = crate::matrix::Triplets::with_capacity(n, n, lower.nnz())?;
            let mut pushed = Ok(());
            lower.for_each(|i, j, v| {
                if pushed.is_ok() {
                    pushed = t.push(i, j, v);
                }
            });
            pushed?;
            normalised = t.to_csc();
            &normalised
        };
        let p = opts.placement;
        // The strictly lower triangle by rows: the transpose of the CSC
        // without its diagonal. Only built for the duplicated variant.
        let strict = match variant {
            SymVariant::Duplicated => {
                let mut t = crate::matrix::Triplets::with_capacity(n, n, lower.nnz())?;
                let mut pushed = Ok(());
                lower.for_each(|i, j, v| {
                    if i != j && pushed.is_ok() {
                        pushed = t.push(i, j, v);
                    }
                });
                pushed?;
                Some(t.to_csr())
            }
            SymVariant::Single => None,
        };
        let csc_ptr = lower.col_ptr();
        let split = match (opts.split, &strict) {
            (SplitKind::Rows, _) => Split::from_sizes(&masa.compute_chunks(n).per_thread),
            (SplitKind::Nnz, Some(s)) => {
                let rp = s.row_ptr();
                Split::balanced(n, masa.threads(), |r| u128::from(csc_ptr[r]) + u128::from(rp[r]) + r as u128)
            }
            (SplitKind::Nnz, None) => Split::nnz(csc_ptr, masa.threads()),
        };
        let pb = ptr_bounds(&split);
        let nb = split.through(csc_ptr);
        let (rptr, ridx, rval) = match &strict {
            Some(s) => {
                let rb = split.through(s.row_ptr());
                (
                    masa.place(s.row_ptr(), Access::Deterministic(&pb), p)?,
                    masa.place(s.col_idx(), Access::Deterministic(&rb), p)?,
                    masa.place(s.values(), Access::Deterministic(&rb), p)?,
                )
            }
            None => (Vec::new().into(), Vec::new().into(), Vec::new().into()),
        };
        let partials = match variant {
            SymVariant::Single => {
                let windows = (0..split.threads())
                    .map(|t| window(csc_ptr, lower.row_idx(), split.range(t), |j, i| i as usize == j))
                    .collect();
                make_partials(masa, p, windows)?
            }
            SymVariant::Duplicated => Vec::new(),
        };
        Ok(SymSpmv {
            masa: masa.clone(),
            opts,
            variant,
            n,
            ptr: masa.place(csc_ptr, Access::Deterministic(&pb), p)?,
            idx: masa.place(lower.row_idx(), Access::Deterministic(&nb), p)?,
            val: masa.place(lower.values(), Access::Deterministic(&nb), p)?,
            rptr,
            ridx,
            rval,
            split,
            partials,
        })
    }

    /// The variant.
    pub fn variant(&self) -> SymVariant {
        self.variant
    }

    /// The split of rows (= columns).
    pub fn split(&self) -> &Split {
        &self.split
    }

    /// Entries stored (both copies for [`SymVariant::Duplicated`]).
    pub fn stored_nnz(&self) -> usize {
        self.val.len() + self.rval.len()
    }
}

impl<T: Scalar> fmt::Debug for SymSpmv<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SymSpmv")
            .field("n", &self.n)
            .field("variant", &self.variant)
            .field("stored_nnz", &self.stored_nnz())
            .field("split", &self.split)
            .field("options", &self.opts)
            .finish()
    }
}

impl<T: Scalar> TeamSpmv<T> for SymSpmv<T> {
    fn nrows(&self) -> usize {
        self.n
    }
    fn ncols(&self) -> usize {
        self.n
    }
    fn threads(&self) -> usize {
        self.split.threads()
    }
    fn owned_rows(&self, t: usize) -> Range<usize> {
        self.split.range(t)
    }
    fn model_bytes(&self) -> u64 {
        let ptrs = if self.variant == SymVariant::Duplicated { 2 } else { 1 };
        (self.stored_nnz() as u64) * 12 + (self.n as u64) * (4 * ptrs + 8 + 8)
    }
    fn input_vector(&self) -> Result<SharedArray<T>> {
        self.masa.place_zeroed(self.n, Access::NonDeterministic, self.opts.placement)
    }
    fn output_vector(&self) -> Result<SharedArray<T>> {
        self.masa.place_zeroed(self.n, Access::Deterministic(self.split.bounds()), self.opts.placement)
    }
    unsafe fn apply_part(&self, ctx: &Ctx<'_>, x: &[T], y: SharedMut<'_, T>) {
        assert!(x.len() == self.n && y.len() == self.n, "x or y has the wrong length");
        let t = ctx.index();
        let rows = self.split.range(t);
        // SAFETY: row ranges are disjoint and y is ours (contract).
        let yt = unsafe { y.range_mut(rows.clone()) };
        let simd = self.opts.simd;
        match self.variant {
            SymVariant::Duplicated => {
                for (yi, i) in yt.iter_mut().zip(rows) {
                    let c = self.ptr[i] as usize..self.ptr[i + 1] as usize;
                    let r = self.rptr[i] as usize..self.rptr[i + 1] as usize;
                    // SAFETY: both ranges come from validated pointers, and
                    // every index is below n == x.len().
                    *yi = unsafe {
                        T::gather_dot(simd, &self.idx[c.clone()], &self.val[c], x)
                            + T::gather_dot(simd, &self.ridx[r.clone()], &self.rval[r], x)
                    };
                }
            }
            SymVariant::Single => {
                let mine = &self.partials[t];
                {
                    // SAFETY: only thread t touches its buffer in this phase;
                    // the previous call ended with a barrier after all reads.
                    let buf: &mut [T] = unsafe { &mut *mine.buf.get() };
                    buf.fill(T::ZERO);
                    let off = mine.window.start;
                    let (ptr, idx, val) = (&self.ptr[..], &self.idx[..], &self.val[..]);
                    for (yj, j) in yt.iter_mut().zip(rows.clone()) {
                        let (xj, mut acc) = (x[j], T::ZERO);
                        let (is, vs) =
                            (&idx[ptr[j] as usize..ptr[j + 1] as usize], &val[ptr[j] as usize..ptr[j + 1] as usize]);
                        // Rows ascend and none is above the diagonal, so a
                        // diagonal entry can only come first.
                        let skip = match is.first() {
                            Some(&i) if i as usize == j => {
                                acc += vs[0] * xj;
                                1
                            }
                            _ => 0,
                        };
                        for (&i, &v) in is[skip..].iter().zip(&vs[skip..]) {
                            let i = i as usize;
                            acc += v * x[i];
                            // In the window: it spans every off-diagonal row of these columns.
                            buf[i - off] += v * xj;
                        }
                        *yj = acc;
                    }
                }
                ctx.barrier();
                // SAFETY: between the barriers nobody writes a partial buffer.
                unsafe { add_partials(&self.partials, rows, yt) };
                ctx.barrier();
            }
        }
    }
}
