//! skelaff: NUMA-aware transactional worklists.
//!
#![doc = include_str!("../QUICKSTART.md")]
//!
//! # The crates
//!
//! This umbrella crate re-exports the workspace's crates:
//!
//! - [`numa`]: topology, page policies, NUMA regions and arrays, thread pinning.
//! - [`arrays`]: Shoal's arrays (single-node, distributed, replicated, partitioned) chosen from access hints.
//! - [`stm`]: the word-based STM, transactional allocation and collections.
//! - [`worklist`]: the transactional worklist skeleton and the SkelAff heuristic.
//! - [`stamp`]: the STAMP applications on the skeleton.
//! - [`spmv`]: MASA-pinned sparse matrix-vector multiply, Matrix Market, CG and NAS CG.
//! - [`helpers`]: helper threads that shadow each worker's next unit to prefetch its data.
//! - [`locality`]: page-access profiles, footprints, locality figures and the NUCA study's placement schemes.
//! - [`spmv_args`]: the command-line flags the SpMV binaries share.
//! - [`performance`]: the performance guide (`docs/performance.md`), no items.

pub mod spmv_args;

pub use skelaff_arrays as arrays;
pub use skelaff_helper_threads as helpers;
pub use skelaff_locality as locality;
pub use skelaff_numa_alloc as numa;
pub use skelaff_spmv as spmv;
pub use skelaff_stamp as stamp;
/// The word-based STM, transactional allocation and collections: all of
/// [`skelaff_stm`], with `#[derive(Word)]` generating impls that name the
/// trait as `skelaff::stm::Word`, so a program that depends on `skelaff`
/// alone can derive it.
pub mod stm {
    /// `#[derive(Word)]` for a field-less enum or a single-field newtype
    /// over a `Word` (see the [`Word`](trait@Word) trait).
    pub use skelaff_derive::UmbrellaWord as Word;
    #[doc(inline)]
    pub use skelaff_stm::*;
}
pub use skelaff_worklist as worklist;

#[doc = include_str!("../docs/performance.md")]
pub mod performance {}
