//! skelaff: NUMA-aware transactional worklists.
//!
//! This umbrella crate re-exports the workspace's crates:
//!
//! - [`numa`]: topology, page policies, NUMA regions and arrays, thread pinning.
#![doc = ""]

pub use skelaff_numa_alloc as numa;
