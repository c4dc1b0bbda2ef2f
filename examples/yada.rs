//! STAMP's yada (Delaunay mesh refinement) on the skelaff skeleton.
//!
//! ```sh
//! # STAMP's simulator input (shipped with skelaff-stamp) and its standard one
//! cargo run --release --features stamp --example yada -- -a20 -i crates/stamp-core/data/yada/633.2 -t2
//! cargo run --release --features stamp --example yada -- -a15 -i path/to/stamp/yada/inputs/ttimeu100000.2 -t2 --json
//! cargo run --release --features stamp --example yada -- -a15 -i path/to/stamp/yada/inputs/ttimeu100000.2 --sequential --json
//! ```
//!
//! Exits with status 1 when the refined mesh fails its check, 2 on bad flags.

/// The applications' allocations follow each worker's page policy (SkelAff
/// switches it from cyclic to bind during the run).
#[global_allocator]
static ALLOC: skelaff::numa::alloc::NumaAlloc = skelaff::numa::alloc::NumaAlloc::new();

fn main() -> std::process::ExitCode {
    skelaff::stamp::app::main_for::<skelaff::stamp::yada::Yada>(std::env::args())
}
