#![doc = include_str!("../README.md")]

pub mod error;
pub mod lockword;
mod primitive;
pub mod raw;

#[cfg(not(loom))]
pub mod collections;
#[cfg(not(loom))]
mod config;
#[cfg(not(loom))]
mod runtime;
#[cfg(not(loom))]
pub mod sampler;
#[cfg(not(loom))]
mod stats;
#[cfg(not(loom))]
mod tvar;
#[cfg(not(loom))]
mod txops;
#[cfg(not(loom))]
mod word;

pub use error::{AbortReason, ConfigError, SamplerError, Stop, TxError};

#[cfg(not(loom))]
pub use collections::{THashMap, TList, TMap, TQueue};
#[cfg(not(loom))]
pub use config::{Config, ContentionManager};
#[cfg(not(loom))]
pub use runtime::{
    LOCK_TABLE_BITS, LOCK_TABLE_SIZE, MAX_THREADS, Pin, Tx, atomically, atomically_with, clock, in_transaction,
    lock_addr, locked_stripes, pin, startup, try_atomically, try_atomically_with,
};
#[cfg(not(loom))]
pub use stats::Stats;
#[cfg(not(loom))]
pub use tvar::TVar;
#[cfg(not(loom))]
pub use txops::TxOps;
#[cfg(not(loom))]
pub use word::{TPtr, Word};
