//! The worklist's integration tests that can share a process, as modules
//! of one test binary (one link instead of four): the skeleton's behaviour,
//! the report's time breakdown, and worker pools with and without helper
//! threads. Each builds its own skeletons, pools and shared data; the
//! process's threads come and go as they run, which only
//! `helper_pool_threads` (a binary of its own: it counts them in
//! `/proc/self/task`) may not have. Also apart: the loom model of the
//! pool's hand-off (`loom_crew`, built with `--cfg loom`) and
//! `numa_vm_worklist` (run inside the emulated machine by `cargo xtask
//! numa-vm`, which finds it by name).

mod helper_pool;
mod pool_common;
mod skeleton;
mod time_breakdown;
mod worker_pool;
