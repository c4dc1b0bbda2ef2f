//! The STAMP applications' integration tests that can share a process, as
//! modules of one test binary (one link of the six applications and their
//! dependencies instead of seven): genome, intruder, kmeans, labyrinth and
//! vacation (self-checks under every policy, determinism, corrupted
//! results, bad flags), and every application with assisted transactions
//! and with helper threads. Each run builds its own input, workers and
//! tables; the temporary files of kmeans and labyrinth carry their own
//! names. What the process shares, the STM's solo gate, is taken by a
//! one-worker run when free and refused otherwise (the run then goes plain,
//! which computes the same), as between the tests of one file before.
//!
//! Test binaries of their own: `yada` (a peak-counting global allocator)
//! and `numa_vm_stamp_locality` (run inside the emulated machine by `cargo
//! xtask numa-vm`, which finds it by name).

mod assist;
mod common;
mod genome;
mod helpers;
mod intruder;
mod kmeans;
mod labyrinth;
mod vacation;
