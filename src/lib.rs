//! skelaff: NUMA-aware transactional worklists.
//!
#![doc = include_str!("../QUICKSTART.md")]
//!
//! # The crates
//!
//! This umbrella crate re-exports the workspace's crates: the first four
//! always, the others behind the cargo feature named beside them (see
//! "Features" below):
//!
//! - [`numa`]: topology (from Linux's sysfs; from hwloc with the feature
//!   `hwloc`), page policies, NUMA regions and arrays, thread pinning.
//! - [`stm`]: the word-based STM, transactional allocation and collections.
//! - [`worklist`]: the transactional worklist skeleton and the SkelAff heuristic.
//! - [`locality`]: page-access profiles, footprints, locality figures and the
//!   NUCA study's placement schemes (SVG plots: feature `plots`).
#![cfg_attr(
    feature = "arrays",
    doc = "- [`arrays`] (feature `arrays`, default): Shoal's arrays (single-node, distributed, replicated, partitioned) chosen from access hints."
)]
#![cfg_attr(
    feature = "spmv",
    doc = "- [`spmv`] (feature `spmv`): MASA-pinned sparse matrix-vector multiply, Matrix Market, CG and NAS CG."
)]
#![cfg_attr(
    feature = "helpers",
    doc = "- [`helpers`] (feature `helpers`, default): helper threads that shadow each worker's next unit to prefetch its data (perf counters: feature `perf`)."
)]
#![cfg_attr(feature = "stamp", doc = "- [`stamp`] (feature `stamp`): the STAMP applications on the skeleton.")]
#![cfg_attr(feature = "cli", doc = "- [`spmv_args`] (feature `cli`): the command-line flags the SpMV binaries share.")]
//! - [`performance`]: the performance guide (`docs/performance.md`), no items.
//!
//! # Features
//!
//! The default features (`arrays`, `helpers`) are the library: no SpMV,
//! command line, plotting, compression or perf counters. Every feature is
//! additive:
//!
//! | feature | brings |
//! |---|---|
//! | `arrays` (default) | `skelaff::arrays` |
//! | `spmv` | `skelaff::spmv` |
//! | `helpers` (default) | `skelaff::helpers` |
//! | `stamp` | `skelaff::stamp`: the STAMP applications, their flags and input readers (clap, flate2, rand_mt) |
//! | `plots` | `Footprint::plot_svg` in `skelaff::locality` (plotters) |
//! | `perf` | perf counters for the helper threads' report (perf-event) |
//! | `hwloc` | the topology from hwloc rather than Linux's sysfs (`Topology::from_hwloc`; the system's libhwloc) |
//! | `cli` | the `skelaff` binary and `skelaff::spmv_args`: `hwloc`, `stamp`, `spmv`, `plots`, `perf`, with clap, serde, serde_json, plotters, indicatif, anyhow |
//! | `mpi` | distributed SpMV and CG over MPI (the system's OpenMPI) |
//!
//! The README's "Features" says what the default build costs.

#[cfg(feature = "cli")]
pub mod spmv_args;

#[cfg(feature = "arrays")]
#[doc(inline)]
pub use skelaff_arrays as arrays;
#[cfg(feature = "helpers")]
#[doc(inline)]
pub use skelaff_helper_threads as helpers;
#[doc(inline)]
pub use skelaff_locality as locality;
#[doc(inline)]
pub use skelaff_numa_alloc as numa;
#[cfg(feature = "spmv")]
#[doc(inline)]
pub use skelaff_spmv as spmv;
#[cfg(feature = "stamp")]
#[doc(inline)]
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
#[doc(inline)]
pub use skelaff_worklist as worklist;

#[doc = include_str!("../docs/performance.md")]
pub mod performance {}
