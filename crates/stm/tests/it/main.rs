//! The STM's integration tests that can share a process, as modules of one
//! test binary (one link of the dependency graph instead of eight): the
//! bank and opacity stress tests, the collections, `#[derive(Word)]`,
//! `THashMap`'s growth, panic safety, read-only mode and the statistics'
//! JSON. Each uses its own variables, threads and per-thread statistics
//! (`Stats::take_thread` on a thread of its own), and nothing of the
//! process: every variable has its own lock, so tests running side by side
//! conflict on nothing they share.
//!
//! Test binaries of their own, beside this one: `assist_fault` (the fault
//! is injected process-wide), `assist_pairing` (the CPUs it claims are the
//! process's), `owned` (a counting global allocator), `solo` (the solo gate
//! is one per process, and no other transaction may run beside a solo
//! one), `stats_sampler` (`Stats::global` sums every thread's counters,
//! which other tests reset with `Stats::take_thread`), `bank_numa_alloc`
//! (`NumaAlloc` as the global allocator; run by scripts/sanitize.sh only)
//! and the loom models (`loom`, `loom_assist`, `loom_reclaim`, built with
//! `--cfg loom`).

mod bank;
mod collections;
mod common;
mod derive_word;
mod hash_growth;
mod opacity;
mod panic;
mod read_only;
mod stats_json;
