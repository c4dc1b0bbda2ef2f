//! Compressed sparse matrices (CSR and CSC) and triplet assembly.
//!
//! Both formats are the paper's three arrays: `A` (values), `jA` (the
//! minor index of each value: a column in CSR, a row in CSC) and `ptrA`
//! (where each row, or column, starts in `A` and `jA`). Indices and
//! pointers are `u32`; values are any [`Scalar`].

use core::fmt;

use crate::array::SharedArray;
use crate::error::{Error, Result};
use crate::scalar::Scalar;

/// The largest dimension or nonzero count the 32-bit indices allow.
pub const MAX_INDEX: usize = u32::MAX as usize;

/// The shared structure of CSR and CSC: `major` compressed lines (rows for
/// CSR, columns for CSC) of a `major x minor` (CSR) or `minor x major` (CSC)
/// matrix.
///
/// Invariant: `ptr.len() == major + 1`, `ptr[0] == 0`, `ptr` is
/// non-decreasing, `ptr[major] == idx.len() == val.len()`, every
/// `idx[k] < minor`, and `major`, `minor` and the nonzero count fit `u32`.
pub(crate) struct Compressed<T> {
    pub(crate) major: usize,
    pub(crate) minor: usize,
    pub(crate) ptr: SharedArray<u32>,
    pub(crate) idx: SharedArray<u32>,
    pub(crate) val: SharedArray<T>,
}

fn check_dim(what: &'static str, value: usize) -> Result<()> {
    if value > MAX_INDEX {
        return Err(Error::TooLarge { what, value: value as u64, max: MAX_INDEX as u64 });
    }
    Ok(())
}

impl<T: Scalar> Compressed<T> {
    fn new(
        major: usize,
        minor: usize,
        ptr: SharedArray<u32>,
        idx: SharedArray<u32>,
        val: SharedArray<T>,
        names: (&'static str, &'static str),
    ) -> Result<Self> {
        check_dim(names.0, major)?;
        check_dim(names.1, minor)?;
        check_dim("the nonzero count", idx.len())?;
        let bad = |msg: String| Err(Error::InvalidStructure(msg));
        if ptr.len() != major + 1 {
            return bad(format!(
                "the pointer array has {} entries; {} {} need {}",
                ptr.len(),
                major,
                names.0,
                major + 1
            ));
        }
        if ptr[0] != 0 {
            return bad(format!("the pointer array starts at {}, it must start at 0", ptr[0]));
        }
        if let Some(i) = ptr.windows(2).position(|w| w[0] > w[1]) {
            return bad(format!("pointers decrease at {i}: {} > {}", ptr[i], ptr[i + 1]));
        }
        if idx.len() != val.len() || ptr[major] as usize != idx.len() {
            return bad(format!(
                "the last pointer is {}, with {} indices and {} values; all three must agree",
                ptr[major],
                idx.len(),
                val.len()
            ));
        }
        if let Some(k) = idx.iter().position(|&j| j as usize >= minor) {
            return bad(format!("index {} at position {k} is not below the dimension {minor}", idx[k]));
        }
        Ok(Compressed { major, minor, ptr, idx, val })
    }

    fn line(&self, i: usize) -> (&[u32], &[T]) {
        let r = self.ptr[i] as usize..self.ptr[i + 1] as usize;
        (&self.idx[r.clone()], &self.val[r])
    }

    /// The same matrix compressed the other way (CSR <-> CSC). Within each
    /// new line, indices come out ascending, and equal indices (duplicates)
    /// keep their order.
    fn transposed(&self) -> Compressed<T> {
        let nnz = self.idx.len();
        let mut ptr = vec![0u32; self.minor + 1];
        for &j in self.idx.iter() {
            ptr[j as usize + 1] += 1;
        }
        for i in 0..self.minor {
            ptr[i + 1] += ptr[i];
        }
        let mut next: Vec<u32> = ptr[..self.minor].to_vec();
        let mut idx = vec![0u32; nnz];
        let mut val = vec![T::ZERO; nnz];
        for i in 0..self.major {
            let (js, vs) = self.line(i);
            for (&j, &v) in js.iter().zip(vs) {
                let slot = &mut next[j as usize];
                idx[*slot as usize] = i as u32;
                val[*slot as usize] = v;
                *slot += 1;
            }
        }
        Compressed { major: self.minor, minor: self.major, ptr: ptr.into(), idx: idx.into(), val: val.into() }
    }

    fn clone_heap(&self) -> Self {
        Compressed {
            major: self.major,
            minor: self.minor,
            ptr: self.ptr.clone(),
            idx: self.idx.clone(),
            val: self.val.clone(),
        }
    }

    fn eq(&self, other: &Self) -> bool {
        self.major == other.major
            && self.minor == other.minor
            && self.ptr == other.ptr
            && self.idx == other.idx
            && self.val == other.val
    }
}

macro_rules! compressed_common {
    ($name:ident, $lower:ident) => {
        impl<T: Scalar> $name<T> {
            /// Number of rows.
            pub fn nrows(&self) -> usize {
                self.dims().0
            }

            /// Number of columns.
            pub fn ncols(&self) -> usize {
                self.dims().1
            }

            /// Number of stored entries.
            pub fn nnz(&self) -> usize {
                self.0.idx.len()
            }

            /// The values array (`A`).
            pub fn values(&self) -> &[T] {
                &self.0.val
            }

            /// The three arrays `(ptrA, jA, A)`, consuming the matrix: what
            /// `from_parts` takes, e.g. to hand the arrays to another library
            /// without copying them.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use skelaff_spmv::{", stringify!($name), ", Triplets};")]
            ///
            /// let mut t = Triplets::new(2, 2)?;
            /// t.push(1, 1, 3.0)?;
            #[doc = concat!("let a = t.to_", stringify!($lower), "();")]
            /// let (ptr, idx, val) = a.clone().into_parts();
            /// assert_eq!((&ptr[..], &idx[..], &val[..]), (&[0, 0, 1][..], &[1][..], &[3.0][..]));
            #[doc = concat!("assert_eq!(", stringify!($name), "::from_parts(2, 2, ptr, idx, val)?, a);")]
            /// # Ok::<(), skelaff_spmv::Error>(())
            /// ```
            pub fn into_parts(self) -> (SharedArray<u32>, SharedArray<u32>, SharedArray<T>) {
                (self.0.ptr, self.0.idx, self.0.val)
            }

            /// The matrix as a dense row-major array (for tests and small examples).
            pub fn to_dense(&self) -> Vec<Vec<T>> {
                let (nrows, ncols) = self.dims();
                let mut d = vec![vec![T::ZERO; ncols]; nrows];
                self.for_each(|r, c, v| d[r][c] += v);
                d
            }
        }

        impl<T: Scalar> Clone for $name<T> {
            /// Clones onto the heap.
            fn clone(&self) -> Self {
                $name(self.0.clone_heap())
            }
        }

        impl<T: Scalar> PartialEq for $name<T> {
            fn eq(&self, other: &Self) -> bool {
                self.0.eq(&other.0)
            }
        }

        impl<T: Scalar> fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("nrows", &self.nrows())
                    .field("ncols", &self.ncols())
                    .field("nnz", &self.nnz())
                    .finish()
            }
        }
    };
}

/// A matrix in compressed sparse row format.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{Csr, Triplets};
///
/// let mut t = Triplets::new(2, 3)?;
/// t.push(0, 2, 1.5)?;
/// t.push(1, 0, 2.0)?;
/// t.push(0, 2, 0.5)?; // duplicates are summed
/// let a: Csr = t.to_csr();
/// assert_eq!(a.row_ptr(), &[0, 1, 2]);
/// assert_eq!(a.col_idx(), &[2, 0]);
/// assert_eq!(a.values(), &[2.0, 2.0]);
/// let mut y = [0.0; 2];
/// a.mul_vec_seq(&[1.0, 1.0, 1.0], &mut y)?;
/// assert_eq!(y, [2.0, 2.0]);
/// assert_eq!(a.to_csc().to_csr(), a);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub struct Csr<T = f64>(pub(crate) Compressed<T>);

/// A matrix in compressed sparse column format.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::Csc;
///
/// // [[1, 0], [2, 3]] by columns.
/// let a = Csc::from_parts(2, 2, vec![0, 2, 3], vec![0, 1, 1], vec![1.0, 2.0, 3.0])?;
/// let mut y = [0.0; 2];
/// a.mul_vec_seq(&[1.0, 10.0], &mut y)?;
/// assert_eq!(y, [1.0, 32.0]);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub struct Csc<T = f64>(pub(crate) Compressed<T>);

compressed_common!(Csr, csr);
compressed_common!(Csc, csc);

impl<T: Scalar> Csr<T> {
    /// A CSR matrix from its three arrays, validated.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidStructure`] if the pointers do not start at 0, decrease,
    /// disagree with the array lengths, or an index is not below `ncols`;
    /// [`Error::TooLarge`] when a size does not fit `u32`.
    pub fn from_parts(
        nrows: usize,
        ncols: usize,
        row_ptr: impl Into<SharedArray<u32>>,
        col_idx: impl Into<SharedArray<u32>>,
        values: impl Into<SharedArray<T>>,
    ) -> Result<Self> {
        let c = Compressed::new(nrows, ncols, row_ptr.into(), col_idx.into(), values.into(), ("rows", "columns"))?;
        Ok(Csr(c))
    }

    fn dims(&self) -> (usize, usize) {
        (self.0.major, self.0.minor)
    }

    /// The row pointers (`ptrA`, `nrows + 1` entries).
    pub fn row_ptr(&self) -> &[u32] {
        &self.0.ptr
    }

    /// The column index of each value (`jA`).
    pub fn col_idx(&self) -> &[u32] {
        &self.0.idx
    }

    /// Row `i`: its column indices and values.
    ///
    /// # Panics
    ///
    /// If `i >= nrows`.
    pub fn row(&self, i: usize) -> (&[u32], &[T]) {
        self.0.line(i)
    }

    /// Rows `rows` as a matrix of their own (row `rows.start` becomes row
    /// 0), every column kept: one rank's block of a row-distributed matrix.
    ///
    /// # Panics
    ///
    /// If `rows` is not inside `0..nrows`.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_spmv::Triplets;
    ///
    /// let mut t = Triplets::new(3, 3)?;
    /// t.push(2, 0, 5.0)?;
    /// let block = t.to_csr().row_block(1..3);
    /// assert_eq!(block.to_dense(), [[0.0; 3], [5.0, 0.0, 0.0]]);
    /// # Ok::<(), skelaff_spmv::Error>(())
    /// ```
    pub fn row_block(&self, rows: core::ops::Range<usize>) -> Csr<T> {
        assert!(rows.start <= rows.end && rows.end <= self.nrows(), "rows {rows:?} outside 0..{}", self.nrows());
        let (lo, hi) = (self.0.ptr[rows.start], self.0.ptr[rows.end]);
        let ptr: Vec<u32> = self.0.ptr[rows.start..=rows.end].iter().map(|&p| p - lo).collect();
        let (idx, val) = (self.0.idx[lo as usize..hi as usize].to_vec(), self.0.val[lo as usize..hi as usize].to_vec());
        Csr(Compressed { major: rows.len(), minor: self.0.minor, ptr: ptr.into(), idx: idx.into(), val: val.into() })
    }

    /// Calls `f(row, col, value)` for every stored entry, row by row.
    pub fn for_each(&self, mut f: impl FnMut(usize, usize, T)) {
        for i in 0..self.0.major {
            let (js, vs) = self.0.line(i);
            js.iter().zip(vs).for_each(|(&j, &v)| f(i, j as usize, v));
        }
    }

    /// The same matrix in CSC.
    pub fn to_csc(&self) -> Csc<T> {
        Csc(self.0.transposed())
    }

    /// The transpose, in CSR.
    pub fn transpose(&self) -> Csr<T> {
        Csr(self.0.transposed())
    }

    /// The lower triangle (diagonal included), in CSC: what MFDn stores of
    /// its symmetric matrix.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_spmv::Triplets;
    ///
    /// let mut t = Triplets::new(2, 2)?;
    /// t.push(0, 0, 2.0)?;
    /// t.push(0, 1, 1.0)?;
    /// t.push(1, 0, 1.0)?;
    /// let lower = t.to_csr().lower_triangle();
    /// assert_eq!(lower.to_dense(), [[2.0, 0.0], [1.0, 0.0]]);
    /// # Ok::<(), skelaff_spmv::Error>(())
    /// ```
    pub fn lower_triangle(&self) -> Csc<T> {
        let csc = self.to_csc();
        let mut ptr = Vec::with_capacity(csc.ncols() + 1);
        let (mut idx, mut val) = (Vec::new(), Vec::new());
        ptr.push(0u32);
        for j in 0..csc.ncols() {
            let (is, vs) = csc.col(j);
            for (&i, &v) in is.iter().zip(vs) {
                if i as usize >= j {
                    idx.push(i);
                    val.push(v);
                }
            }
            ptr.push(idx.len() as u32);
        }
        Csc(Compressed { major: csc.ncols(), minor: csc.nrows(), ptr: ptr.into(), idx: idx.into(), val: val.into() })
    }

    /// Checks that the matrix is square and equals its transpose exactly.
    ///
    /// # Errors
    ///
    /// [`Error::NotSquare`]; [`Error::NotSymmetric`] naming the first entry
    /// (by row) whose mirror differs.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_spmv::{Error, Triplets};
    ///
    /// let mut t = Triplets::new(2, 2)?;
    /// t.push(0, 1, 1.0)?;
    /// t.push(1, 0, 1.0)?;
    /// assert!(t.to_csr().check_symmetric().is_ok());
    /// t.push(1, 0, 0.5)?; // now (1, 0) holds 1.5
    /// assert!(matches!(t.to_csr().check_symmetric(), Err(Error::NotSymmetric { row: 0, col: 1, .. })));
    /// # Ok::<(), skelaff_spmv::Error>(())
    /// ```
    pub fn check_symmetric(&self) -> Result<()> {
        if self.nrows() != self.ncols() {
            return Err(Error::NotSquare { what: "a symmetric matrix", nrows: self.nrows(), ncols: self.ncols() });
        }
        // Row i of Aᵀ lists column i of A, columns ascending; compare it
        // with row i of A sorted the same way, explicit zeros left out.
        let t = self.transpose();
        let nonzero = |(js, vs): (&[u32], &[T])| -> Vec<(u32, T)> {
            js.iter().zip(vs).filter(|&(_, &v)| v != T::ZERO).map(|(&j, &v)| (j, v)).collect()
        };
        for i in 0..self.nrows() {
            let mut a = nonzero(self.row(i));
            a.sort_by_key(|&(j, _)| j);
            let b = nonzero(t.row(i));
            if a != b {
                let k = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
                let col = match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => x.0.min(y.0),
                    (Some(x), None) | (None, Some(x)) => x.0,
                    (None, None) => 0,
                };
                let at = |v: &[(u32, T)]| v.iter().filter(|e| e.0 == col).map(|e| e.1.to_f64()).sum::<f64>();
                return Err(Error::NotSymmetric { row: i, col: col as usize, value: at(&a), mirror: at(&b) });
            }
        }
        Ok(())
    }

    /// `y = A x`, sequentially, in the plainest way: the reference the
    /// parallel kernels are tested against.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] if `x` is not `ncols` long or `y` not `nrows`.
    pub fn mul_vec_seq(&self, x: &[T], y: &mut [T]) -> Result<()> {
        check_len("x", x.len(), self.ncols())?;
        check_len("y", y.len(), self.nrows())?;
        for (i, yi) in y.iter_mut().enumerate() {
            let (js, vs) = self.0.line(i);
            let mut s = T::ZERO;
            for (&j, &v) in js.iter().zip(vs) {
                s += v * x[j as usize];
            }
            *yi = s;
        }
        Ok(())
    }
}

impl<T: Scalar> Csc<T> {
    /// A CSC matrix from its three arrays, validated.
    ///
    /// # Errors
    ///
    /// As [`Csr::from_parts`], with rows and columns exchanged.
    pub fn from_parts(
        nrows: usize,
        ncols: usize,
        col_ptr: impl Into<SharedArray<u32>>,
        row_idx: impl Into<SharedArray<u32>>,
        values: impl Into<SharedArray<T>>,
    ) -> Result<Self> {
        let c = Compressed::new(ncols, nrows, col_ptr.into(), row_idx.into(), values.into(), ("columns", "rows"))?;
        Ok(Csc(c))
    }

    fn dims(&self) -> (usize, usize) {
        (self.0.minor, self.0.major)
    }

    /// The column pointers (`ptrA`, `ncols + 1` entries).
    pub fn col_ptr(&self) -> &[u32] {
        &self.0.ptr
    }

    /// The row index of each value (`jA`).
    pub fn row_idx(&self) -> &[u32] {
        &self.0.idx
    }

    /// Column `j`: its row indices and values.
    ///
    /// # Panics
    ///
    /// If `j >= ncols`.
    pub fn col(&self, j: usize) -> (&[u32], &[T]) {
        self.0.line(j)
    }

    /// Calls `f(row, col, value)` for every stored entry, column by column.
    pub fn for_each(&self, mut f: impl FnMut(usize, usize, T)) {
        for j in 0..self.0.major {
            let (is, vs) = self.0.line(j);
            is.iter().zip(vs).for_each(|(&i, &v)| f(i as usize, j, v));
        }
    }

    /// The same matrix in CSR.
    pub fn to_csr(&self) -> Csr<T> {
        Csr(self.0.transposed())
    }

    /// Checks that no entry lies above the diagonal (what the symmetric
    /// kernels and [`crate::mm::write_symmetric`] store).
    ///
    /// # Errors
    ///
    /// [`Error::NotLowerTriangular`] naming the first such entry, column by column.
    pub fn check_lower_triangular(&self) -> Result<()> {
        for j in 0..self.0.major {
            if let Some(&i) = self.0.line(j).0.iter().find(|&&i| (i as usize) < j) {
                return Err(Error::NotLowerTriangular { row: i as usize, col: j });
            }
        }
        Ok(())
    }

    /// `y = A x`, sequentially (the reference for the parallel kernels).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] if `x` is not `ncols` long or `y` not `nrows`.
    pub fn mul_vec_seq(&self, x: &[T], y: &mut [T]) -> Result<()> {
        check_len("x", x.len(), self.ncols())?;
        check_len("y", y.len(), self.nrows())?;
        y.fill(T::ZERO);
        for (j, &xj) in x.iter().enumerate() {
            let (is, vs) = self.0.line(j);
            for (&i, &v) in is.iter().zip(vs) {
                y[i as usize] += v * xj;
            }
        }
        Ok(())
    }
}

pub(crate) fn check_len(what: &'static str, got: usize, expected: usize) -> Result<()> {
    if got != expected {
        return Err(Error::DimensionMismatch { what, got, expected });
    }
    Ok(())
}

/// A list of `(row, col, value)` entries, 0-based, duplicates allowed; the
/// way to build a [`Csr`] or [`Csc`].
///
/// # Examples
///
/// ```
/// use skelaff_spmv::Triplets;
///
/// let mut t = Triplets::<f64>::new(3, 3)?;
/// t.push(2, 1, 4.0)?;
/// assert!(t.push(3, 0, 1.0).is_err()); // row 3 of a 3x3 matrix
/// let a = t.to_csc();
/// assert_eq!(a.col_ptr(), &[0, 0, 1, 1]);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Triplets<T = f64> {
    nrows: usize,
    ncols: usize,
    rows: Vec<u32>,
    cols: Vec<u32>,
    vals: Vec<T>,
}

impl<T: Scalar> Triplets<T> {
    /// An empty `nrows x ncols` list.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] if a dimension does not fit `u32`.
    pub fn new(nrows: usize, ncols: usize) -> Result<Self> {
        check_dim("the row count", nrows)?;
        check_dim("the column count", ncols)?;
        Ok(Triplets { nrows, ncols, rows: Vec::new(), cols: Vec::new(), vals: Vec::new() })
    }

    /// As [`Triplets::new`], with room for `cap` entries.
    ///
    /// # Errors
    ///
    /// As [`Triplets::new`].
    pub fn with_capacity(nrows: usize, ncols: usize, cap: usize) -> Result<Self> {
        let mut t = Self::new(nrows, ncols)?;
        t.rows.reserve(cap);
        t.cols.reserve(cap);
        t.vals.reserve(cap);
        Ok(t)
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Number of entries pushed (duplicates counted separately).
    pub fn len(&self) -> usize {
        self.vals.len()
    }

    /// Whether no entry was pushed.
    pub fn is_empty(&self) -> bool {
        self.vals.is_empty()
    }

    /// Adds an entry.
    ///
    /// # Errors
    ///
    /// [`Error::IndexOutOfRange`] if `(row, col)` is outside the matrix;
    /// [`Error::TooLarge`] past `u32::MAX` entries.
    pub fn push(&mut self, row: usize, col: usize, value: T) -> Result<()> {
        if row >= self.nrows || col >= self.ncols {
            return Err(Error::IndexOutOfRange { row, col, nrows: self.nrows, ncols: self.ncols });
        }
        if self.vals.len() >= MAX_INDEX {
            return Err(Error::TooLarge {
                what: "the entry count",
                value: MAX_INDEX as u64 + 1,
                max: MAX_INDEX as u64,
            });
        }
        self.rows.push(row as u32);
        self.cols.push(col as u32);
        self.vals.push(value);
        Ok(())
    }

    /// Iterates over the entries as pushed.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize, T)> + '_ {
        self.rows.iter().zip(&self.cols).zip(&self.vals).map(|((&r, &c), &v)| (r as usize, c as usize, v))
    }

    /// The CSR matrix: columns ascending within each row, duplicates summed
    /// in the order they were pushed.
    pub fn to_csr(&self) -> Csr<T> {
        Csr(self.compress(&self.rows, &self.cols, self.nrows, self.ncols))
    }

    /// The CSC matrix: rows ascending within each column, duplicates summed
    /// in the order they were pushed.
    pub fn to_csc(&self) -> Csc<T> {
        Csc(self.compress(&self.cols, &self.rows, self.ncols, self.nrows))
    }

    /// Two stable counting sorts (by minor, then by major) give the entries
    /// in (major, minor) order with duplicates in push order; then runs of
    /// equal positions are summed left to right.
    fn compress(&self, major: &[u32], minor: &[u32], nmajor: usize, nminor: usize) -> Compressed<T> {
        let by_minor = counting_order(minor, nminor, None);
        let order = counting_order(major, nmajor, Some(&by_minor));
        let mut ptr = vec![0u32; nmajor + 1];
        let mut idx: Vec<u32> = Vec::with_capacity(order.len());
        let mut val: Vec<T> = Vec::with_capacity(order.len());
        let mut last: Option<(u32, u32)> = None;
        for &k in &order {
            let (i, j, v) = (major[k as usize], minor[k as usize], self.vals[k as usize]);
            if last == Some((i, j)) {
                if let Some(acc) = val.last_mut() {
                    *acc += v;
                }
                continue;
            }
            last = Some((i, j));
            ptr[i as usize + 1] += 1;
            idx.push(j);
            val.push(v);
        }
        for i in 0..nmajor {
            ptr[i + 1] += ptr[i];
        }
        Compressed { major: nmajor, minor: nminor, ptr: ptr.into(), idx: idx.into(), val: val.into() }
    }
}

/// A stable ordering of positions by `key` (counting sort over `0..range`),
/// taking positions in the order `input` (or `0..key.len()`).
fn counting_order(key: &[u32], range: usize, input: Option<&[u32]>) -> Vec<u32> {
    let mut start = vec![0u32; range + 1];
    for &k in key {
        start[k as usize + 1] += 1;
    }
    for i in 0..range {
        start[i + 1] += start[i];
    }
    let mut out = vec![0u32; key.len()];
    let mut place = |p: u32| {
        let s = &mut start[key[p as usize] as usize];
        out[*s as usize] = p;
        *s += 1;
    };
    match input {
        Some(order) => order.iter().for_each(|&p| place(p)),
        None => (0..key.len() as u32).for_each(place),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Triplets<f64> {
        let mut t = Triplets::new(4, 3).unwrap();
        for &(r, c, v) in &[(3, 0, 1.0), (0, 2, 2.0), (0, 0, 3.0), (3, 0, 4.0), (1, 1, 5.0), (0, 2, -1.0)] {
            t.push(r, c, v).unwrap();
        }
        t
    }

    #[test]
    fn triplets_compress_sorted_and_summed() {
        let a = sample().to_csr();
        assert_eq!(a.row_ptr(), &[0, 2, 3, 3, 4]);
        assert_eq!(a.col_idx(), &[0, 2, 1, 0]);
        assert_eq!(a.values(), &[3.0, 1.0, 5.0, 5.0]);
        let c = sample().to_csc();
        assert_eq!(c.col_ptr(), &[0, 2, 3, 4]);
        assert_eq!(c.row_idx(), &[0, 3, 1, 0]);
        assert_eq!(c.values(), &[3.0, 5.0, 5.0, 1.0]);
        assert_eq!(c.to_csr(), a);
        assert_eq!(a.to_csc(), c);
        assert_eq!(a.transpose().transpose(), a);
        assert_eq!(a.to_dense()[3], vec![5.0, 0.0, 0.0]);
    }

    #[test]
    fn duplicates_sum_in_push_order() {
        // 1e16 + 1 - 1e16 is 0 in this order, 1 in others.
        let mut t = Triplets::new(1, 1).unwrap();
        for v in [1e16, 1.0, -1e16] {
            t.push(0, 0, v).unwrap();
        }
        assert_eq!(t.to_csr().values(), &[0.0]);
        assert_eq!(t.to_csc().values(), &[0.0]);
    }

    #[test]
    fn from_parts_validates() {
        assert!(Csr::<f64>::from_parts(2, 2, vec![0, 1, 1], vec![1], vec![1.0]).is_ok());
        let cases: Vec<(Vec<u32>, Vec<u32>, Vec<f64>)> = vec![
            (vec![0, 1], vec![0], vec![1.0]),            // too few pointers
            (vec![1, 1, 1], vec![0], vec![1.0]),         // does not start at 0
            (vec![0, 2, 1], vec![0, 1], vec![1.0, 2.0]), // decreasing
            (vec![0, 1, 2], vec![0], vec![1.0]),         // last pointer != nnz
            (vec![0, 1, 1], vec![2], vec![1.0]),         // index out of range
            (vec![0, 1, 1], vec![0], vec![]),            // values missing
        ];
        for (p, i, v) in cases {
            let e = Csr::<f64>::from_parts(2, 2, p.clone(), i, v).unwrap_err();
            assert!(matches!(e, Error::InvalidStructure(_)), "{p:?}: {e}");
        }
        let e = Csr::<f64>::from_parts(MAX_INDEX + 1, 1, vec![0; 1], vec![], vec![]).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    }

    #[test]
    fn empty_and_tiny_matrices() {
        let t = Triplets::<f64>::new(0, 0).unwrap();
        let a = t.to_csr();
        assert_eq!((a.nrows(), a.ncols(), a.nnz()), (0, 0, 0));
        a.mul_vec_seq(&[], &mut []).unwrap();
        let z = Triplets::<f64>::new(3, 2).unwrap().to_csc();
        let mut y = [7.0; 3];
        z.mul_vec_seq(&[1.0, 2.0], &mut y).unwrap();
        assert_eq!(y, [0.0; 3]);
        assert!(matches!(z.mul_vec_seq(&[1.0], &mut y), Err(Error::DimensionMismatch { what: "x", .. })));
        let mut t = Triplets::new(1, 1).unwrap();
        t.push(0, 0, 2.0f32).unwrap();
        let mut y = [0.0f32];
        t.to_csr().mul_vec_seq(&[3.0], &mut y).unwrap();
        assert_eq!(y, [6.0]);
    }
}
