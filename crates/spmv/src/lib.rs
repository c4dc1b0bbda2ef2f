#![doc = include_str!("../README.md")]

pub mod array;
pub mod cg;
#[cfg(feature = "mpi")]
pub mod dist;
pub mod engine;
pub mod error;
pub mod kernel;
pub mod masa;
pub mod matrix;
pub mod mm;
pub mod nas;
pub mod ops;
pub mod scalar;
pub mod stream;
pub mod team;
pub mod trace;

pub use array::SharedArray;
pub use engine::{SpmvEngine, SpmvEngineOptions};
pub use error::{Error, MmErrorKind, Result};
pub use kernel::Simd;
pub use masa::{ArrayPlacement, Chunks, Masa, Schedule, Split, SplitKind, TeamAccess, algorithm1};
pub use matrix::{Csc, Csr, Triplets};
pub use ops::{CscSpmv, CsrSpmv, OpShape, SpmvOptions, SymSpmv, SymVariant, TeamSpmv};
pub use scalar::Scalar;
pub use team::{SharedMut, Team, TeamLayout, TeamMember, ThreadSlot};

#[cfg(all(test, not(loom)))]
mod names_tests;
