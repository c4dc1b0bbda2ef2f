//! The bank test (`bank.rs`) with `NumaAlloc` as the global allocator, so
//! that the transactional allocation and epoch reclamation run on it.
//! Not run by `cargo test` (`test = false`): `scripts/sanitize.sh` runs it
//! under AddressSanitizer, beside `bank` on the system allocator, whose
//! allocations AddressSanitizer can see into.
#![cfg(not(loom))]

#[global_allocator]
static GLOBAL: skelaff_numa_alloc::alloc::NumaAlloc = skelaff_numa_alloc::alloc::NumaAlloc::new();

#[path = "bank.rs"]
mod bank;
