//! What skelaff's benches (`benches/`) and example binaries (`examples/`)
//! share, so that a criterion bench and the example that prints the same
//! figure time exactly the same code: the allocation workloads, the
//! helper threads' pointer chase, the skeleton-overhead workload and the
//! SpMV peers. Not published; a dev-dependency of the umbrella package.

pub mod alloc_workloads;
pub mod chase;
pub mod overhead;
pub mod spmv_peers;
