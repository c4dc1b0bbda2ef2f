//! What skelaff's benches (`benches/`) and example binaries (`examples/`)
//! share, so that a criterion bench and the example that prints the same
//! figure time exactly the same code: the allocation workloads, the
//! helper threads' pointer chase, the skeleton-overhead workload and the
//! SpMV peers. Not published; a dev-dependency of the umbrella package.

pub mod alloc_workloads;
pub mod chase;
pub mod overhead;
pub mod spmv_peers;

use std::process::ExitCode;

/// The exit of an example binary whose `run` checks its own results:
/// success when they held; otherwise `failed` (what did not hold) or the
/// error, on standard error after the program's name, and failure.
pub fn exit_code<E: std::fmt::Display>(program: &str, result: Result<bool, E>, failed: &str) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            if !failed.is_empty() {
                eprintln!("{program}: {failed}");
            }
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{program}: {e}");
            ExitCode::FAILURE
        }
    }
}
