//! [`CsrSpmv`]: the CSR `y = A x` of the paper's Fig. 4 (top), rows split
//! among threads, arrays placed per Table 1.

use crate::array::SharedArray;
use crate::error::Result;
use crate::kernel;
use crate::masa::{Masa, Split, TeamAccess};
use crate::matrix::Csr;
use crate::ops::{OpShape, SpmvOptions, TeamSpmv, ptr_bounds};
use crate::scalar::Scalar;
use crate::team::{SharedMut, TeamMember};

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
#[derive(Debug)]
pub struct CsrSpmv<T: Scalar = f64> {
    shape: OpShape,
    ptr: SharedArray<u32>,
    idx: SharedArray<u32>,
    val: SharedArray<T>,
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
        CsrSpmv::with_split(masa, a, opts, split)
    }

    /// As [`CsrSpmv::new`] with an explicit row split (one chunk per team thread).
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadChunking`] when `split` does not fit the matrix
    /// or the team; allocation and `mbind` errors.
    pub fn with_split(masa: &Masa, a: &Csr<T>, opts: SpmvOptions, split: Split) -> Result<Self> {
        let shape = OpShape::new(masa, opts, (a.nrows(), a.ncols()), split.clone(), None, Some(split.clone()))?;
        let nnz_bounds = split.through(a.row_ptr());
        let p = opts.placement;
        Ok(CsrSpmv {
            ptr: masa.place(a.row_ptr(), TeamAccess::Deterministic(&ptr_bounds(&split)), p)?,
            idx: masa.place(a.col_idx(), TeamAccess::Deterministic(&nnz_bounds), p)?,
            val: masa.place(a.values(), TeamAccess::Deterministic(&nnz_bounds), p)?,
            shape,
        })
    }

    /// The row split.
    pub fn split(&self) -> &Split {
        self.shape.owned()
    }

    /// The placed arrays `(ptrA, jA, A)`.
    pub fn arrays(&self) -> (&SharedArray<u32>, &SharedArray<u32>, &SharedArray<T>) {
        (&self.ptr, &self.idx, &self.val)
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.val.len()
    }

    /// The rows `rows` of `y = A x` (`yt` holds exactly those rows; with
    /// `ADD`, `y += A x`): the kernel on one chunk, for callers that run
    /// their own schedule.
    ///
    /// # Panics
    ///
    /// If `x` is not `ncols` long, `rows` is not inside the matrix, or `yt`
    /// is not `rows.len()` long.
    pub(crate) fn rows_into<const ADD: bool>(&self, x: &[T], rows: core::ops::Range<usize>, yt: &mut [T]) {
        let s = &self.shape;
        assert!(x.len() == s.ncols() && rows.end <= s.nrows() && rows.start <= rows.end, "x or rows out of range");
        assert_eq!(yt.len(), rows.len(), "yt must hold the rows");
        // SAFETY: the arrays are copies of a validated CSR matrix (pointers
        // cover every row, indices below ncols == x.len()), rows are inside
        // it, and yt has rows.len() elements.
        unsafe { kernel::csr_rows::<T, ADD>(s.options().simd, &self.ptr, &self.idx, &self.val, x, yt, rows) };
    }
}

impl<T: Scalar> TeamSpmv<T> for CsrSpmv<T> {
    fn shape(&self) -> &OpShape {
        &self.shape
    }

    fn model_bytes(&self) -> u64 {
        (self.nnz() as u64) * 12 + (self.nrows() as u64) * 12 + (self.ncols() as u64) * 8
    }

    unsafe fn apply_part(&self, member: &TeamMember<'_>, x: &[T], y: SharedMut<'_, T>) {
        assert!(x.len() == self.ncols() && y.len() == self.nrows(), "x or y has the wrong length");
        let rows = self.owned_rows(member.index());
        // SAFETY: row ranges of different threads are disjoint, and nothing
        // else touches y during the call (contract).
        let yt = unsafe { y.range_mut(rows.clone()) };
        self.rows_into::<false>(x, rows, yt);
    }
}
