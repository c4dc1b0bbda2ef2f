//! [`CscSpmv`]: the CSC `y = A x` of the paper's Fig. 4 (bottom), columns
//! split among threads, arrays placed per Table 2, the conflicting writes
//! to `y` resolved with per-thread partial sums instead of locks.

use core::ops::Range;

use crate::array::SharedArray;
use crate::error::Result;
use crate::kernel;
use crate::masa::{Masa, Split, TeamAccess};
use crate::matrix::Csc;
use crate::ops::partial::{Partials, window};
use crate::ops::{OpShape, SpmvOptions, TeamSpmv, ptr_bounds};
use crate::scalar::Scalar;
use crate::team::{SharedMut, TeamMember};

/// CSC `y = A x` (Fig. 4, bottom), columns split among threads; placement
/// per Table 2; conflicting writes to `y` resolved with per-thread partial
/// sums over the touched rows (see [`crate::ops`]).
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
#[derive(Debug)]
pub struct CscSpmv<T: Scalar = f64> {
    /// Rows of `y` each thread finishes in phase 2 (`owned`), columns of
    /// each thread in phase 1 (`input_split`).
    shape: OpShape,
    ptr: SharedArray<u32>,
    idx: SharedArray<u32>,
    val: SharedArray<T>,
    partials: Partials<T>,
}

impl<T: Scalar> CscSpmv<T> {
    /// Copies `a` into arrays placed by `opts.placement`, splits its columns
    /// by `opts.split`, and allocates each thread's partial-sum window.
    ///
    /// # Errors
    ///
    /// Allocation and `mbind` errors.
    pub fn new(masa: &Masa, a: &Csc<T>, opts: SpmvOptions) -> Result<Self> {
        let split = masa.split(opts.split, a.col_ptr());
        let out_split = Split::equal(a.nrows(), split.threads());
        let shape = OpShape::new(masa, opts, (a.nrows(), a.ncols()), out_split, Some(split.clone()), None)?;
        let nnz_bounds = split.through(a.col_ptr());
        let p = opts.placement;
        let windows =
            (0..split.threads()).map(|t| window(a.col_ptr(), a.row_idx(), split.range(t), |_, _| false)).collect();
        Ok(CscSpmv {
            ptr: masa.place(a.col_ptr(), TeamAccess::Deterministic(&ptr_bounds(&split)), p)?,
            idx: masa.place(a.row_idx(), TeamAccess::Deterministic(&nnz_bounds), p)?,
            val: masa.place(a.values(), TeamAccess::Deterministic(&nnz_bounds), p)?,
            partials: Partials::new(masa, p, windows)?,
            shape,
        })
    }

    /// The column split.
    pub fn split(&self) -> &Split {
        self.shape.input_split().unwrap_or_else(|| self.shape.owned())
    }

    /// The placed arrays `(ptrA, jA, A)`.
    pub fn arrays(&self) -> (&SharedArray<u32>, &SharedArray<u32>, &SharedArray<T>) {
        (&self.ptr, &self.idx, &self.val)
    }

    /// The rows each thread's partial buffer covers.
    pub fn windows(&self) -> Vec<Range<usize>> {
        self.partials.windows()
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.val.len()
    }
}

impl<T: Scalar> TeamSpmv<T> for CscSpmv<T> {
    fn shape(&self) -> &OpShape {
        &self.shape
    }

    fn model_bytes(&self) -> u64 {
        (self.nnz() as u64) * 12 + (self.ncols() as u64) * 12 + (self.nrows() as u64) * 8
    }

    unsafe fn apply_part(&self, member: &TeamMember<'_>, x: &[T], y: SharedMut<'_, T>) {
        assert!(x.len() == self.ncols() && y.len() == self.nrows(), "x or y has the wrong length");
        let t = member.index();
        {
            // SAFETY: thread t alone writes its buffer in this phase, and
            // drops it before the barrier below.
            let (buf, off) = unsafe { self.partials.mine(t) };
            for j in self.split().range(t) {
                let r = self.ptr[j] as usize..self.ptr[j + 1] as usize;
                // SAFETY: r is inside idx/val (validated pointers), and every
                // row of column j lies in this thread's window by construction.
                unsafe { kernel::portable::scatter(&self.idx[r.clone()], &self.val[r], x[j], buf, off) };
            }
        }
        member.barrier();
        let rows = self.owned_rows(t);
        // SAFETY: phase-2 row ranges are disjoint and y is ours (contract).
        let yt = unsafe { y.range_mut(rows.clone()) };
        yt.fill(T::ZERO);
        // SAFETY: between the two barriers nobody writes a partial buffer.
        unsafe { self.partials.add_into(rows, yt) };
        member.barrier();
    }
}
