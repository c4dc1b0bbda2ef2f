//! STAMP's genome on the skelaff skeleton.
//!
//! ```sh
//! # STAMP's standard input, and its large one (genome+)
//! cargo run --release --features stamp --example genome -- -g256 -s16 -n16384 -t2
//! cargo run --release --features stamp --example genome -- -g16384 -s64 -n16777216 -t2 --json
//! cargo run --release --features stamp --example genome -- -g16384 -s64 -n16777216 --sequential --json
//! ```
//!
//! Exits with status 1 when the reconstructed sequence differs from the
//! gene, 2 on bad flags.

/// The applications' allocations follow each worker's page policy (SkelAff
/// switches it from cyclic to bind during the run).
#[global_allocator]
static ALLOC: skelaff::numa::alloc::NumaAlloc = skelaff::numa::alloc::NumaAlloc::new();

fn main() -> std::process::ExitCode {
    skelaff::stamp::app::main_for::<skelaff::stamp::genome::Genome>(std::env::args())
}
