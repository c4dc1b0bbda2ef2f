//! skelaff: NUMA-aware transactional worklists.
//!
//! This umbrella crate re-exports the workspace's crates:
//!
//! - [`numa`]: topology, page policies, NUMA regions and arrays, thread pinning.
//! - [`stm`]: the word-based STM, transactional allocation and collections.
//! - [`spmv`]: MASA-pinned sparse matrix-vector multiply, Matrix Market, CG and NAS CG.
#![doc = ""]

pub use skelaff_numa_alloc as numa;
pub use skelaff_spmv as spmv;
pub use skelaff_stm as stm;
