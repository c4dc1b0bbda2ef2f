//! What skelaff's benches (`benches/`) and example binaries (`examples/`)
//! share, so that a criterion bench and the example that prints the same
//! figure time exactly the same code: the allocation workloads, the
//! helper threads' pointer chase, the skeleton-overhead workload and the
//! SpMV peers. Not published; a dev-dependency of the umbrella package.

pub mod alloc_workloads;
pub mod chase;
pub mod overhead;
#[cfg(feature = "spmv-peers")]
pub mod spmv_peers;

use std::process::ExitCode;
use std::time::Duration;

/// The median of `v`: its middle value, or the mean of the two middle
/// ones for an even count; NaN when `v` is empty. The same figure as the
/// CLI's tables and the STAMP comparison (`skelaff_stamp::peer::median`).
///
/// ```
/// assert_eq!(skelaff_bench_support::median(&[3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(skelaff_bench_support::median(&[4.0, 1.0]), 2.5);
/// assert!(skelaff_bench_support::median(&[]).is_nan());
/// ```
pub fn median(v: &[f64]) -> f64 {
    skelaff_stamp::peer::median(v).unwrap_or(f64::NAN)
}

/// The median of durations, as [`median`] (to the nanosecond); zero when `v` is empty.
///
/// ```
/// use std::time::Duration;
/// let ms = Duration::from_millis;
/// assert_eq!(skelaff_bench_support::median_duration(&[ms(4), ms(1)]), Duration::from_micros(2500));
/// ```
pub fn median_duration(v: &[Duration]) -> Duration {
    let ns: Vec<f64> = v.iter().map(|d| d.as_nanos() as f64).collect();
    skelaff_stamp::peer::median(&ns).map_or(Duration::ZERO, |m| Duration::from_nanos(m.round() as u64))
}

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
