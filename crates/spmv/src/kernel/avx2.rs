//! The AVX2 + FMA `f64` kernels: 4-wide gathers of `x`, four independent
//! accumulators, and software prefetch of the value and index streams.
//! Compiled on x86-64 only and entered only when the CPU has both
//! features (checked by the caller).

use core::arch::x86_64::*;
use core::ops::Range;

/// How far ahead (in elements) the value and index streams are
/// prefetched: 2 KiB of values, 1 KiB of indices, past what the
/// hardware prefetcher keeps ahead of at 4 KiB page boundaries.
const PREFETCH: usize = 256;

/// The CSR rows `rows` into `y` (stored, or added when `ADD`).
///
/// # Safety
///
/// AVX2 and FMA are available; the bounds of [`super::csr_rows`] hold;
/// every index is below `x.len() <= i32::MAX`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn csr_rows<const ADD: bool>(
    ptr: &[u32],
    idx: &[u32],
    val: &[f64],
    x: &[f64],
    y: &mut [f64],
    rows: Range<usize>,
) {
    let (ip, vp, xp) = (idx.as_ptr(), val.as_ptr(), x.as_ptr());
    for (yi, r) in y.iter_mut().zip(rows) {
        // SAFETY: `ptr.len() > r + 1` (contract).
        let (s, e) = unsafe { (*ptr.get_unchecked(r) as usize, *ptr.get_unchecked(r + 1) as usize) };
        // SAFETY: `s <= e <= idx.len() == val.len()`; indices in range (contract).
        let d = unsafe { dot(ip.add(s), vp.add(s), e - s, xp) };
        if ADD { *yi += d } else { *yi = d }
    }
}

/// `Σ_{k<n} val[k] * x[idx[k]]`, four 4-wide accumulators.
///
/// # Safety
///
/// AVX2 and FMA are available; `idx` and `val` point to `n` readable
/// elements; every `idx[k] <= i32::MAX` indexes a readable `x` element.
/// Prefetches past the end are hints and never fault.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn dot(idx: *const u32, val: *const f64, n: usize, x: *const f64) -> f64 {
    // SAFETY: all loads are within the `n` elements of `idx`/`val` or at
    // valid indices of `x` (contract); `_mm_prefetch` never faults.
    unsafe {
        let mut a0 = _mm256_setzero_pd();
        let mut a1 = _mm256_setzero_pd();
        let mut a2 = _mm256_setzero_pd();
        let mut a3 = _mm256_setzero_pd();
        let mut k = 0;
        while k + 16 <= n {
            _mm_prefetch::<_MM_HINT_T0>(val.wrapping_add(k + PREFETCH).cast());
            _mm_prefetch::<_MM_HINT_T0>(val.wrapping_add(k + PREFETCH + 8).cast());
            _mm_prefetch::<_MM_HINT_T0>(idx.wrapping_add(k + PREFETCH).cast());
            let i0 = _mm_loadu_si128(idx.add(k).cast());
            let i1 = _mm_loadu_si128(idx.add(k + 4).cast());
            let i2 = _mm_loadu_si128(idx.add(k + 8).cast());
            let i3 = _mm_loadu_si128(idx.add(k + 12).cast());
            a0 = _mm256_fmadd_pd(_mm256_loadu_pd(val.add(k)), _mm256_i32gather_pd::<8>(x, i0), a0);
            a1 = _mm256_fmadd_pd(_mm256_loadu_pd(val.add(k + 4)), _mm256_i32gather_pd::<8>(x, i1), a1);
            a2 = _mm256_fmadd_pd(_mm256_loadu_pd(val.add(k + 8)), _mm256_i32gather_pd::<8>(x, i2), a2);
            a3 = _mm256_fmadd_pd(_mm256_loadu_pd(val.add(k + 12)), _mm256_i32gather_pd::<8>(x, i3), a3);
            k += 16;
        }
        while k + 4 <= n {
            let i0 = _mm_loadu_si128(idx.add(k).cast());
            a0 = _mm256_fmadd_pd(_mm256_loadu_pd(val.add(k)), _mm256_i32gather_pd::<8>(x, i0), a0);
            k += 4;
        }
        let sum = _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3));
        let pair = _mm_add_pd(_mm256_castpd256_pd128(sum), _mm256_extractf128_pd::<1>(sum));
        let mut s = _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
        while k < n {
            s += *val.add(k) * *x.add(*idx.add(k) as usize);
            k += 1;
        }
        s
    }
}
