//! [`SymSpmv`]: MFDn's symmetric SpMV with only the lower triangle stored,
//! as the paper's CSC + CSR pair (Fig. 7) or as one CSC pass.

use serde::{Deserialize, Serialize};

use crate::array::SharedArray;
use crate::error::{Error, Result};
use crate::kernel;
use crate::masa::{Masa, Split, SplitKind, TeamAccess};
use crate::matrix::{Csc, Triplets};
use crate::ops::partial::{Partials, window};
use crate::ops::{OpShape, SpmvOptions, TeamSpmv, ptr_bounds};
use crate::scalar::Scalar;
use crate::team::{SharedMut, TeamMember};

/// Which symmetric kernel [`SymSpmv`] runs.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::SymVariant;
///
/// assert_eq!("csc+csr".parse::<SymVariant>()?, SymVariant::Duplicated);
/// assert_eq!(SymVariant::Duplicated.to_string(), "duplicated");
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

skelaff_numa_alloc::enum_names! {
    SymVariant {
        Duplicated => "duplicated" | "csc+csr",
        Single => "single",
    }
    parse: Error = unknown_variant;
}

fn unknown_variant(given: &str) -> Error {
    Error::unknown_name("symmetric variant", given, SymVariant::VARIANTS)
}

/// The entries of `a` at `(i, j)` where `keep(i, j)`, as triplets.
fn triplets_where<T: Scalar>(a: &Csc<T>, keep: impl Fn(usize, usize) -> bool) -> Result<Triplets<T>> {
    let mut t = Triplets::with_capacity(a.nrows(), a.ncols(), a.nnz())?;
    let mut pushed = Ok(());
    a.for_each(|i, j, v| {
        if keep(i, j) && pushed.is_ok() {
            pushed = t.push(i, j, v);
        }
    });
    pushed.map(|()| t)
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
#[derive(Debug)]
pub struct SymSpmv<T: Scalar = f64> {
    shape: OpShape,
    variant: SymVariant,
    /// The lower triangle in CSC.
    ptr: SharedArray<u32>,
    idx: SharedArray<u32>,
    val: SharedArray<T>,
    /// Duplicated: the strictly lower triangle in CSR (empty otherwise).
    rptr: SharedArray<u32>,
    ridx: SharedArray<u32>,
    rval: SharedArray<T>,
    /// Single: scatter partial sums (none otherwise).
    partials: Partials<T>,
}

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
        lower.check_lower_triangular()?;
        // The single variant relies on strictly ascending rows in each
        // column (the diagonal first); normalise a matrix that lacks them.
        let normalised;
        let lower = if (0..n).all(|j| lower.col(j).0.windows(2).all(|w| w[0] < w[1])) {
            lower
        } else {
            normalised = triplets_where(lower, |_, _| true)?.to_csc();
            &normalised
        };
        let p = opts.placement;
        // The strictly lower triangle by rows: the transpose of the CSC
        // without its diagonal. Only built for the duplicated variant.
        let strict = match variant {
            SymVariant::Duplicated => Some(triplets_where(lower, |i, j| i != j)?.to_csr()),
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
                    masa.place(s.row_ptr(), TeamAccess::Deterministic(&pb), p)?,
                    masa.place(s.col_idx(), TeamAccess::Deterministic(&rb), p)?,
                    masa.place(s.values(), TeamAccess::Deterministic(&rb), p)?,
                )
            }
            None => (Vec::new().into(), Vec::new().into(), Vec::new().into()),
        };
        let partials = match variant {
            SymVariant::Single => {
                let windows = (0..split.threads())
                    .map(|t| window(csc_ptr, lower.row_idx(), split.range(t), |j, i| i as usize == j))
                    .collect();
                Partials::new(masa, p, windows)?
            }
            SymVariant::Duplicated => Partials::none(),
        };
        Ok(SymSpmv {
            shape: OpShape::new(masa, opts, (n, n), split.clone(), None, Some(split))?,
            variant,
            ptr: masa.place(csc_ptr, TeamAccess::Deterministic(&pb), p)?,
            idx: masa.place(lower.row_idx(), TeamAccess::Deterministic(&nb), p)?,
            val: masa.place(lower.values(), TeamAccess::Deterministic(&nb), p)?,
            rptr,
            ridx,
            rval,
            partials,
        })
    }

    /// The variant.
    pub fn variant(&self) -> SymVariant {
        self.variant
    }

    /// The split of rows (= columns).
    pub fn split(&self) -> &Split {
        self.shape.owned()
    }

    /// Entries stored (both copies for [`SymVariant::Duplicated`]).
    pub fn stored_nnz(&self) -> usize {
        self.val.len() + self.rval.len()
    }
}

impl<T: Scalar> TeamSpmv<T> for SymSpmv<T> {
    fn shape(&self) -> &OpShape {
        &self.shape
    }

    fn model_bytes(&self) -> u64 {
        let ptrs = if self.variant == SymVariant::Duplicated { 2 } else { 1 };
        (self.stored_nnz() as u64) * 12 + (self.nrows() as u64) * (4 * ptrs + 8 + 8)
    }

    unsafe fn apply_part(&self, member: &TeamMember<'_>, x: &[T], y: SharedMut<'_, T>) {
        assert!(x.len() == self.ncols() && y.len() == self.nrows(), "x or y has the wrong length");
        let t = member.index();
        let rows = self.owned_rows(t);
        // SAFETY: row ranges are disjoint and y is ours (contract).
        let yt = unsafe { y.range_mut(rows.clone()) };
        let simd = self.shape.options().simd;
        match self.variant {
            SymVariant::Duplicated => {
                for (yi, i) in yt.iter_mut().zip(rows) {
                    let c = self.ptr[i] as usize..self.ptr[i + 1] as usize;
                    let r = self.rptr[i] as usize..self.rptr[i + 1] as usize;
                    // SAFETY: both ranges come from validated pointers, and
                    // every index is below n == x.len().
                    *yi = unsafe {
                        kernel::gather_dot(simd, &self.idx[c.clone()], &self.val[c], x)
                            + kernel::gather_dot(simd, &self.ridx[r.clone()], &self.rval[r], x)
                    };
                }
            }
            SymVariant::Single => {
                {
                    // SAFETY: thread t alone writes its buffer in this phase,
                    // and drops it before the barrier below.
                    let (buf, off) = unsafe { self.partials.mine(t) };
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
                member.barrier();
                // SAFETY: between the barriers nobody writes a partial buffer.
                unsafe { self.partials.add_into(rows, yt) };
                member.barrier();
            }
        }
    }
}
