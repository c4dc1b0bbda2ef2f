#![doc = include_str!("../README.md")]

pub mod array;
pub mod builder;
pub mod bulk;
mod bytes;
mod copy_team;
pub mod error;
pub mod hints;
pub mod home;
pub mod partition;
pub mod select;
pub mod storage;
pub mod workloads;

pub use array::{Array, Element};
pub use builder::ArrayBuilder;
pub use bulk::{Pending, Rejected};
pub use error::{Error, Result};
pub use hints::{AccessHints, AccessPattern, Choice, Implementation, LargePages};
pub use partition::{Partition, PartsMut};
pub use select::{PageChoice, Reason, Selection};
pub use storage::{CopyPlan, MemoryUse, NodeBytes};

#[cfg(all(test, not(loom)))]
mod names_tests;
