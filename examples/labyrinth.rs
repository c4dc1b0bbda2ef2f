//! STAMP's labyrinth on the skelaff skeleton: Lee's maze routing of many
//! pairs through one grid, exits non-zero when a routed path is broken,
//! overlaps another, crosses a wall, or a pair was left unrouted although
//! it could be routed.
//!
//! STAMP's command lines, and their equivalents here (the mazes are
//! generated in-process in the shape the file name gives, unless the file
//! exists, in which case it is read):
//!
//! ```text
//! labyrinth -i inputs/random-x32-y32-z3-n96.txt -t2     cargo run --release --features stamp --example labyrinth -- -i random-x32-y32-z3-n96 -t2
//! labyrinth -i inputs/random-x512-y512-z7-n512.txt -t2  cargo run --release --features stamp --example labyrinth -- -i random-x512-y512-z7-n512 -t2
//! ```
//!
//! Add `--sequential` for the sequential version, `--json` for a JSON last
//! line, `-p` to print the routed maze, `--seed` and `--walls` for other
//! generated mazes, `--policy`, `--distribution`, `--helpers` (see
//! `--help`).

/// The applications' allocations follow each worker's page policy (SkelAff
/// switches it from cyclic to bind during the run).
#[global_allocator]
static ALLOC: skelaff::numa::alloc::NumaAlloc = skelaff::numa::alloc::NumaAlloc::new();

fn main() -> std::process::ExitCode {
    skelaff::stamp::app::main_for::<skelaff::stamp::labyrinth::Labyrinth>(std::env::args())
}
