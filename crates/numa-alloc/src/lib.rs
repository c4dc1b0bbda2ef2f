#![doc = include_str!("../README.md")]

pub mod alloc;
pub mod array;
pub mod error;
mod fit;
mod frames;
pub mod idle;
pub mod node_memory;
pub mod pin;
mod placement;
pub mod policy;
pub mod region;
pub mod sets;
mod sys;
pub mod topology;

pub use array::{NumaBox, NumaVec, Zeroable};
#[cfg(feature = "hwloc")]
pub use error::HwlocError;
pub use error::{Error, Result, SetError, SysError, UnknownName};
pub use pin::{Mapping, Plan, WorkerPlace};
pub use policy::{Apply, Policy};
pub use region::{HugePages, NumaRegion, PageLocation, Placement, RegionOptions};
pub use sets::{CpuSet, MAX_NODES, NodeSet};
pub use topology::{CacheGroup, Core, HugePagePool, NumaNode, Pu, Source, SyntheticSpec, Topology};
