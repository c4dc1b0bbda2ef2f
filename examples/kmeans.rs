//! STAMP's kmeans on the skelaff skeleton (inputs generated in-process).
//!
//! ```sh
//! # kmeans-low (many clusters) and kmeans-high (few) on STAMP's small input
//! cargo run --release --features stamp --example kmeans -- -m40 -n40 -t0.05 -i random-n2048-d16-c16 -p2
//! cargo run --release --features stamp --example kmeans -- -m15 -n15 -t0.05 -i random-n2048-d16-c16 -p2
//! # the inputs for runs without a simulator, against the sequential version
//! cargo run --release --features stamp --example kmeans -- -m40 -n40 -t0.00001 -i random-n65536-d32-c16 -p2 --json
//! cargo run --release --features stamp --example kmeans -- -m40 -n40 -t0.00001 -i random-n65536-d32-c16 --sequential --json
//! ```
//!
//! Exits with status 1 when the clustering differs from the sequential
//! run's, 2 on bad flags.

/// The applications' allocations follow each worker's page policy (SkelAff
/// switches it from cyclic to bind during the run).
#[global_allocator]
static ALLOC: skelaff::numa::alloc::NumaAlloc = skelaff::numa::alloc::NumaAlloc::new();

fn main() -> std::process::ExitCode {
    skelaff::stamp::app::main_for::<skelaff::stamp::kmeans::Kmeans>(std::env::args())
}
