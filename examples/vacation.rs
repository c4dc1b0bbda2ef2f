//! STAMP's vacation on the skelaff skeleton.
//!
//! ```sh
//! # low contention (STAMP's vacation-low), 2 clients, against the sequential version
//! cargo run --release --features stamp --example vacation -- -n2 -q90 -u98 -r16384 -t4096 -c2 --json
//! cargo run --release --features stamp --example vacation -- -n2 -q90 -u98 -r16384 -t4096 --sequential --json
//! # high contention (vacation-high)
//! cargo run --release --features stamp --example vacation -- -n4 -q60 -u90 -r16384 -t4096 -c2 --json
//! ```
//!
//! Exits with status 1 when the tables fail the consistency check, 2 on bad flags.

/// The applications' allocations follow each worker's page policy (SkelAff
/// switches it from cyclic to bind during the run).
#[global_allocator]
static ALLOC: skelaff::numa::alloc::NumaAlloc = skelaff::numa::alloc::NumaAlloc::new();

fn main() -> std::process::ExitCode {
    skelaff::stamp::app::main_for::<skelaff::stamp::vacation::Vacation>(std::env::args())
}
