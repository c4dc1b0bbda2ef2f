//! The value types a matrix may hold. The kernels build on this trait;
//! it knows nothing of them.

use core::fmt::{Debug, Display};
use core::ops::{Add, AddAssign, Mul, Neg, Sub};

use skelaff_numa_alloc::Zeroable;

/// A matrix value type: `f64` (with vectorised kernels) or `f32`.
///
/// The kernels ([`crate::kernel`]) are generic over it and take their
/// vectorised paths when [`Scalar::as_f64_slice`] says the values are `f64`.
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

    /// `s` itself when `Self` is `f64`, else `None`: how the kernels find
    /// the values their vectorised `f64` paths can take.
    fn as_f64_slice(s: &[Self]) -> Option<&[f64]> {
        let _ = s;
        None
    }

    /// `s` itself when `Self` is `f64`, else `None` (see
    /// [`Scalar::as_f64_slice`]).
    fn as_f64_slice_mut(s: &mut [Self]) -> Option<&mut [f64]> {
        let _ = s;
        None
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
    fn as_f64_slice(s: &[f64]) -> Option<&[f64]> {
        Some(s)
    }
    fn as_f64_slice_mut(s: &mut [f64]) -> Option<&mut [f64]> {
        Some(s)
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
