//! The inner loops: gathered dot products (CSR rows, CSC columns read as
//! rows of the transpose) and scattered updates (CSC columns).
//!
//! A plain CSR row loop is one chain of dependent additions, so it runs at
//! the latency of an add, not at memory bandwidth. The loops here keep
//! several independent accumulators; the `f64` gather loop also uses AVX2
//! gathers with fused multiply-adds and prefetches the value and index
//! streams ahead of use. Which one runs is chosen once per call from
//! [`Simd`], which the operators pick at construction
//! ([`Simd::best`] unless told otherwise).

use core::fmt;
use core::ops::Range;
use core::str::FromStr;

use crate::error::Error;
use crate::scalar::Scalar;

/// Which instruction set the `f64` kernels use.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum Simd {
    /// Plain Rust with four independent accumulators (every target).
    Portable,
    /// AVX2 gathers and FMA (x86-64 with `avx2` and `fma`), checked at run time.
    Avx2,
}

impl Simd {
    /// The fastest level this CPU supports.
    pub fn best() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Simd::Avx2;
            }
        }
        Simd::Portable
    }

    /// Every level this CPU supports (for tests and benchmarks).
    pub fn available() -> Vec<Simd> {
        let mut v = vec![Simd::Portable];
        if Simd::best() == Simd::Avx2 {
            v.push(Simd::Avx2);
        }
        v
    }

    /// Whether this CPU can run the level.
    pub fn is_available(self) -> bool {
        Simd::available().contains(&self)
    }
}

impl fmt::Display for Simd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Simd::Portable => "portable",
            Simd::Avx2 => "avx2",
        })
    }
}

impl FromStr for Simd {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim() {
            "portable" => Ok(Simd::Portable),
            "avx2" => Ok(Simd::Avx2),
            _ => Err(Error::Parse { input: s.to_owned(), expected: "portable or avx2" }),
        }
    }
}

/// The CSR kernel for `f64` at the chosen level; see [`Scalar::csr_rows`].
///
/// # Safety
///
/// As [`Scalar::csr_rows`]: `ptr` covers `rows` (`ptr.len() > rows.end`),
/// `ptr` is non-decreasing with `ptr[rows.end] <= idx.len() == val.len()`
/// (values past that are not read), every index in those rows is below
/// `x.len()`, and `y.len() >= rows.len()`.
pub(crate) unsafe fn csr_rows_f64(
    simd: Simd,
    ptr: &[u32],
    idx: &[u32],
    val: &[f64],
    x: &[f64],
    y: &mut [f64],
    rows: Range<usize>,
) {
    #[cfg(target_arch = "x86_64")]
    if simd == Simd::Avx2 && x.len() <= i32::MAX as usize && Simd::best() == Simd::Avx2 {
        // SAFETY: the CPU has AVX2 and FMA (checked above); the caller
        // guarantees the bounds `avx2::csr_rows` needs; indices below
        // `x.len() <= i32::MAX` are valid signed gather offsets.
        unsafe { avx2::csr_rows(ptr, idx, val, x, y, rows) };
        return;
    }
    let _ = simd;
    // SAFETY: same contract.
    unsafe { portable::csr_rows(ptr, idx, val, x, y, rows) }
}

/// One gathered dot product for `f64`; see [`Scalar::gather_dot`].
///
/// # Safety
///
/// `idx.len() == val.len()` and every index is below `x.len()`.
pub(crate) unsafe fn gather_dot_f64(simd: Simd, idx: &[u32], val: &[f64], x: &[f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if simd == Simd::Avx2 && x.len() <= i32::MAX as usize && Simd::best() == Simd::Avx2 {
        // SAFETY: AVX2 and FMA are present; the caller guarantees the bounds.
        return unsafe { avx2::dot(idx.as_ptr(), val.as_ptr(), idx.len().min(val.len()), x.as_ptr()) };
    }
    let _ = simd;
    // SAFETY: same contract.
    unsafe { portable::gather_dot(idx, val, x) }
}

pub(crate) mod portable {
    use super::*;

    /// See [`Scalar::csr_rows`].
    ///
    /// # Safety
    ///
    /// As [`csr_rows_f64`](super::csr_rows_f64).
    pub(crate) unsafe fn csr_rows<T: Scalar>(
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
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::*;
    use core::ops::Range;

    /// How far ahead (in elements) the value and index streams are
    /// prefetched: 2 KiB of values, 1 KiB of indices, past what the
    /// hardware prefetcher keeps ahead of at 4 KiB page boundaries.
    const PREFETCH: usize = 256;

    /// # Safety
    ///
    /// AVX2 and FMA are available; the bounds of `csr_rows_f64` hold; every
    /// index is below `x.len() <= i32::MAX`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn csr_rows(ptr: &[u32], idx: &[u32], val: &[f64], x: &[f64], y: &mut [f64], rows: Range<usize>) {
        let (ip, vp, xp) = (idx.as_ptr(), val.as_ptr(), x.as_ptr());
        for (yi, r) in y.iter_mut().zip(rows) {
            // SAFETY: `ptr.len() > r + 1` (contract).
            let (s, e) = unsafe { (*ptr.get_unchecked(r) as usize, *ptr.get_unchecked(r + 1) as usize) };
            // SAFETY: `s <= e <= idx.len() == val.len()`; indices in range (contract).
            *yi = unsafe { dot(ip.add(s), vp.add(s), e - s, xp) };
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_matches_a_plain_sum() {
        let n = 1000;
        let x: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
        for len in [0usize, 1, 3, 4, 5, 15, 16, 17, 33, 64, 999] {
            let idx: Vec<u32> = (0..len).map(|k| ((k * 7919) % n) as u32).collect();
            let val: Vec<f64> = (0..len).map(|k| 1.0 + k as f64 * 0.25).collect();
            let want: f64 = idx.iter().zip(&val).map(|(&i, &v)| v * x[i as usize]).sum();
            for simd in Simd::available() {
                // SAFETY: indices are below n = x.len(); lengths match.
                let got = unsafe { gather_dot_f64(simd, &idx, &val, &x) };
                assert!((got - want).abs() <= 1e-12 * (1.0 + want.abs()), "{simd} len {len}: {got} vs {want}");
            }
        }
        assert_eq!("avx2".parse::<Simd>().unwrap(), Simd::Avx2);
        assert!("sse9".parse::<Simd>().is_err());
        assert_eq!(Simd::Portable.to_string(), "portable");
    }
}
