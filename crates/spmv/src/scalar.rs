//! The value types a matrix may hold.

use core::fmt::{Debug, Display};
use core::ops::Range;
use core::ops::{Add, AddAssign, Mul, Neg, Sub};

use skelaff_numa_alloc::Zeroable;

use crate::kernel::{self, Simd};

/// A matrix value type: `f64` (with vectorised kernels) or `f32`.
///
/// The kernels that matter for speed are methods here so that `f64` can
/// override the portable versions with SIMD ones chosen at run time.
pub trait Scalar:
    Copy
    + Default
    + Send
    + Sync
    + PartialEq
    + PartialOrd
    + Debug
    + Display
    + Zeroable
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + 'static
{
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;

    /// The nearest value of this type.
    fn from_f64(v: f64) -> Self;

    /// As `f64`.
    fn to_f64(self) -> f64;

    /// Parses a Matrix Market real field.
    fn parse_real(text: &str) -> Option<Self>;

    /// `y[r - rows.start] = Σ_k val[k] * x[idx[k]]` over `k in ptr[r]..ptr[r + 1]`,
    /// for each row `r` in `rows`: the CSR kernel on one chunk of rows.
    ///
    /// `simd` picks the instruction set where the type has a choice.
    ///
    /// # Safety
    ///
    /// `ptr.len() > rows.end`; `ptr` is non-decreasing over `rows` with
    /// `ptr[rows.end] <= idx.len()` and `<= val.len()`; every index in those
    /// rows is below `x.len()`; `y.len() >= rows.len()`. A validated
    /// matrix with `x.len() == ncols` satisfies all of it.
    unsafe fn csr_rows(
        simd: Simd,
        ptr: &[u32],
        idx: &[u32],
        val: &[Self],
        x: &[Self],
        y: &mut [Self],
        rows: Range<usize>,
    ) {
        let _ = simd;
        // SAFETY: the caller's contract is the kernel's.
        unsafe { kernel::portable::csr_rows(ptr, idx, val, x, y, rows) }
    }

    /// `Σ_k val[k] * x[idx[k]]`: one gathered dot product.
    ///
    /// # Safety
    ///
    /// `idx.len() <= val.len()` and every index is below `x.len()`.
    unsafe fn gather_dot(simd: Simd, idx: &[u32], val: &[Self], x: &[Self]) -> Self {
        let _ = simd;
        // SAFETY: the caller's contract is the kernel's.
        unsafe { kernel::portable::gather_dot(idx, val, x) }
    }
}

impl Scalar for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn parse_real(text: &str) -> Option<Self> {
        text.parse().ok()
    }
    unsafe fn csr_rows(
        simd: Simd,
        ptr: &[u32],
        idx: &[u32],
        val: &[f64],
        x: &[f64],
        y: &mut [f64],
        rows: Range<usize>,
    ) {
        // SAFETY: the trait's contract is the kernel's.
        unsafe { kernel::csr_rows_f64(simd, ptr, idx, val, x, y, rows) }
    }
    unsafe fn gather_dot(simd: Simd, idx: &[u32], val: &[f64], x: &[f64]) -> f64 {
        // SAFETY: the trait's contract is the kernel's (`idx.len() <= val.len()`).
        unsafe { kernel::gather_dot_f64(simd, idx, &val[..idx.len()], x) }
    }
}

impl Scalar for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn parse_real(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}
