//! The bank test (`it/bank.rs`) with `NumaAlloc` as the global allocator, so
//! that the transactional allocation and epoch reclamation run on it.
//! Not run by `cargo test` (`test = false`): `scripts/sanitize.sh` runs it
//! under AddressSanitizer, beside `it`'s `bank` on the system allocator,
//! whose allocations AddressSanitizer can see into.
#![cfg(not(loom))]

#[global_allocator]
static GLOBAL: skelaff_numa_alloc::alloc::NumaAlloc = skelaff_numa_alloc::alloc::NumaAlloc::new();

#[path = "it/bank.rs"]
mod bank;
#[path = "it/common.rs"]
mod common;
