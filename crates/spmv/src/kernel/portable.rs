//! Portable kernels for every [`Scalar`]: gathered dot products with four
//! independent accumulators (so a row is not one chain of dependent adds)
//! and scattered column updates.

use core::ops::Range;

use crate::scalar::Scalar;

/// `y[r - rows.start] = Σ_k val[k] * x[idx[k]]` over `k in ptr[r]..ptr[r + 1]`,
/// for each row `r` in `rows` (`+=` when `ADD`).
///
/// # Safety
///
/// As [`csr_rows`](super::csr_rows).
pub(crate) unsafe fn csr_rows<T: Scalar, const ADD: bool>(
    ptr: &[u32],
    idx: &[u32],
    val: &[T],
    x: &[T],
    y: &mut [T],
    rows: Range<usize>,
) {
    for (yi, r) in y.iter_mut().zip(rows) {
        // SAFETY: `ptr` covers `rows` (caller).
        let (s, e) = unsafe { (*ptr.get_unchecked(r) as usize, *ptr.get_unchecked(r + 1) as usize) };
        // SAFETY: `s <= e <= idx.len() == val.len()`, indices below `x.len()` (caller).
        *yi = unsafe { gather_dot(idx.get_unchecked(s..e), val.get_unchecked(s..e), x) };
    }
}

/// `Σ val[k] * x[idx[k]]` with four independent accumulators.
///
/// # Safety
///
/// `idx.len() <= val.len()` and every index is below `x.len()`.
pub(crate) unsafe fn gather_dot<T: Scalar>(idx: &[u32], val: &[T], x: &[T]) -> T {
    let n = idx.len();
    let mut acc = [T::ZERO; 4];
    let mut k = 0;
    // SAFETY: every `get_unchecked` below reads position `k < n <=
    // val.len()` of `idx`/`val` and `x[idx[k]]` with `idx[k] < x.len()`
    // (the contract).
    unsafe {
        let g = |k: usize| *val.get_unchecked(k) * *x.get_unchecked(*idx.get_unchecked(k) as usize);
        while k + 4 <= n {
            acc[0] += g(k);
            acc[1] += g(k + 1);
            acc[2] += g(k + 2);
            acc[3] += g(k + 3);
            k += 4;
        }
        let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        while k < n {
            s += g(k);
            k += 1;
        }
        s
    }
}

/// `y[idx[k] - offset] += val[k] * xj` for every `k`: one CSC column
/// scattered into a window of the output that starts at row `offset`.
///
/// # Safety
///
/// `idx.len() <= val.len()` and `offset <= idx[k] < offset + y.len()` for every `k`.
pub(crate) unsafe fn scatter<T: Scalar>(idx: &[u32], val: &[T], xj: T, y: &mut [T], offset: usize) {
    for (k, &i) in idx.iter().enumerate() {
        // SAFETY: `k < idx.len() <= val.len()`, and the row is inside the window (caller).
        unsafe { *y.get_unchecked_mut(i as usize - offset) += *val.get_unchecked(k) * xj };
    }
}
