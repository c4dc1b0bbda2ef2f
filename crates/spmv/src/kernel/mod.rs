//! The inner loops: gathered dot products (CSR rows, CSC columns read as
//! rows of the transpose) and scattered updates (CSC columns).
//!
//! A plain CSR row loop is one chain of dependent additions, so it runs at
//! the latency of an add, not at memory bandwidth. The loops here keep
//! several independent accumulators (`portable`, every [`Scalar`]); for
//! `f64` the AVX2 loop (`avx2`) also gathers with fused multiply-adds and
//! prefetches the value and index streams ahead of use. Which one runs is
//! chosen once per call from [`Simd`], which the operators pick at
//! construction ([`Simd::best`] unless told otherwise).
//!
//! Layering: this module builds on [`Scalar`] (it asks
//! [`Scalar::as_f64_slice`] whether the vectorised path applies); the
//! scalar types know nothing of the kernels.

#[cfg(target_arch = "x86_64")]
mod avx2;
pub(crate) mod portable;

use core::ops::Range;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::scalar::Scalar;

/// Which instruction set the `f64` kernels use.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::Simd;
///
/// assert_eq!("portable".parse::<Simd>()?, Simd::Portable);
/// assert!(Simd::available().contains(&Simd::best()));
/// assert!("sse9".parse::<Simd>().is_err());
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Simd {
    /// Plain Rust with four independent accumulators (every target).
    Portable,
    /// AVX2 gathers and FMA (x86-64 with `avx2` and `fma`), checked at run time.
    Avx2,
}

skelaff_numa_alloc::enum_names! {
    Simd {
        Portable => "portable",
        Avx2 => "avx2",
    }
    parse: Error = unknown_simd;
}

fn unknown_simd(given: &str) -> Error {
    Error::unknown_name("kernel level", given, Simd::VARIANTS)
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

    /// Whether the AVX2 path may run on `x` (the CPU has it, and every
    /// index of `x` is a valid signed 32-bit gather offset).
    fn avx2_for(self, x_len: usize) -> bool {
        cfg!(target_arch = "x86_64") && self == Simd::Avx2 && x_len <= i32::MAX as usize && Simd::best() == Simd::Avx2
    }
}

/// The CSR kernel on one chunk of rows: `y[r - rows.start] = Σ_k val[k] *
/// x[idx[k]]` over `k in ptr[r]..ptr[r + 1]`, for each row `r` in `rows`
/// (`+=` instead when `ADD`), at the level `simd` where `T` is `f64`.
///
/// # Safety
///
/// `ptr.len() > rows.end`; `ptr` is non-decreasing over `rows` with
/// `ptr[rows.end] <= idx.len()` and `<= val.len()`; every index in those
/// rows is below `x.len()`; `y.len() >= rows.len()`. A validated matrix
/// with `x.len() == ncols` satisfies all of it.
pub(crate) unsafe fn csr_rows<T: Scalar, const ADD: bool>(
    simd: Simd,
    ptr: &[u32],
    idx: &[u32],
    val: &[T],
    x: &[T],
    y: &mut [T],
    rows: Range<usize>,
) {
    #[cfg(target_arch = "x86_64")]
    if simd.avx2_for(x.len()) {
        if let (Some(val), Some(x), Some(y)) = (T::as_f64_slice(val), T::as_f64_slice(x), T::as_f64_slice_mut(y)) {
            // SAFETY: the CPU has AVX2 and FMA (`avx2_for`); the caller
            // guarantees the bounds `avx2::csr_rows` needs; indices below
            // `x.len() <= i32::MAX` are valid signed gather offsets.
            unsafe { avx2::csr_rows::<ADD>(ptr, idx, val, x, y, rows) };
            return;
        }
    }
    let _ = simd;
    // SAFETY: same contract.
    unsafe { portable::csr_rows::<T, ADD>(ptr, idx, val, x, y, rows) }
}

/// One gathered dot product `Σ_k val[k] * x[idx[k]]` at the level `simd`
/// where `T` is `f64`.
///
/// # Safety
///
/// `idx.len() <= val.len()` and every index is below `x.len()`.
pub(crate) unsafe fn gather_dot<T: Scalar>(simd: Simd, idx: &[u32], val: &[T], x: &[T]) -> T {
    #[cfg(target_arch = "x86_64")]
    if simd.avx2_for(x.len()) {
        if let (Some(val), Some(xf)) = (T::as_f64_slice(val), T::as_f64_slice(x)) {
            // SAFETY: AVX2 and FMA are present; `idx.len() <= val.len()`
            // values are readable and every index is below `x.len()`.
            let s = unsafe { avx2::dot(idx.as_ptr(), val.as_ptr(), idx.len(), xf.as_ptr()) };
            return T::from_f64(s);
        }
    }
    let _ = simd;
    // SAFETY: same contract.
    unsafe { portable::gather_dot(idx, val, x) }
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
                let got = unsafe { gather_dot(simd, &idx, &val, &x) };
                assert!((got - want).abs() <= 1e-12 * (1.0 + want.abs()), "{simd} len {len}: {got} vs {want}");
            }
            let (xf, vf): (Vec<f32>, Vec<f32>) =
                (x.iter().map(|&v| v as f32).collect(), val.iter().map(|&v| v as f32).collect());
            // SAFETY: as above.
            let got = unsafe { gather_dot(Simd::best(), &idx, &vf, &xf) };
            assert!((f64::from(got) - want).abs() <= 1e-4 * (1.0 + want.abs()), "f32 len {len}: {got} vs {want}");
        }
        assert_eq!(Simd::Portable.to_string(), "portable");
        assert!(matches!(
            "sse9".parse::<Simd>(),
            Err(Error::UnknownName(skelaff_numa_alloc::UnknownName { what: "kernel level", .. }))
        ));
    }
}
