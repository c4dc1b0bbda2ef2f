#![doc = include_str!("../README.md")]

// Loom builds (`RUSTFLAGS="--cfg loom"`: `tests/loom_park.rs`, the STM's
// models, whose channel parks its auxiliary thread, and the helper
// threads' link) compile only the parker, the idle wait around it and
// their shim; the crate's other dependencies are `cfg(not(loom))` (see
// Cargo.toml).

#[cfg(not(loom))]
pub mod alloc;
#[cfg(not(loom))]
pub mod array;
#[cfg(not(loom))]
pub mod clock;
#[cfg(not(loom))]
pub mod error;
#[cfg(not(loom))]
mod fit;
#[cfg(not(loom))]
mod frames;
pub mod idle;
#[doc(hidden)]
pub mod names;
#[cfg(not(loom))]
pub mod node_memory;
pub mod park;
#[cfg(not(loom))]
pub mod pin;
#[cfg(not(loom))]
mod placement;
#[cfg(not(loom))]
pub mod policy;
mod primitive;
#[cfg(not(loom))]
pub mod region;
#[cfg(not(loom))]
pub mod sets;
#[cfg(not(loom))]
mod sys;
#[cfg(not(loom))]
pub mod topology;

#[cfg(not(loom))]
pub use array::{NumaBox, NumaVec, Zeroable};
#[cfg(all(not(loom), feature = "hwloc"))]
pub use error::HwlocError;
#[cfg(not(loom))]
pub use error::{Error, Result, SetError, SysError, UnknownName};
#[cfg(not(loom))]
pub use pin::{Mapping, Plan, WorkerPlace};
#[cfg(not(loom))]
pub use policy::{Apply, Policy};
#[cfg(not(loom))]
pub use region::{HugePages, NumaRegion, PageLocation, Placement, RegionOptions};
#[cfg(not(loom))]
pub use sets::{CpuSet, MAX_NODES, NodeSet};
#[cfg(not(loom))]
pub use topology::{CacheGroup, Core, HugePagePool, NumaNode, Pu, Source, SyntheticSpec, Topology};

#[cfg(all(test, not(loom)))]
mod names_tests;
