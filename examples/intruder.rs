//! STAMP's intruder on the skelaff skeleton: network intrusion detection
//! (capture, reassembly, detection), exits non-zero when the flagged flows
//! are not exactly the generated attacks.
//!
//! STAMP's command lines, and their equivalents here:
//!
//! ```text
//! intruder -a10 -l4 -n2048 -s1 -t2       cargo run --release --features stamp --example intruder -- -a10 -l4 -n2048 -s1 -t2
//! intruder -a10 -l128 -n262144 -s1 -t2   cargo run --release --features stamp --example intruder -- -a10 -l128 -n262144 -s1 -t2
//! ```
//!
//! Add `--sequential` for the sequential version, `--json` for a JSON last
//! line, `--policy`, `--distribution`, `--helpers`, `--detect-in` (see
//! `--help`).

/// The applications' allocations follow each worker's page policy (SkelAff
/// switches it from cyclic to bind during the run).
#[global_allocator]
static ALLOC: skelaff::numa::alloc::NumaAlloc = skelaff::numa::alloc::NumaAlloc::new();

fn main() -> std::process::ExitCode {
    skelaff::stamp::app::main_for::<skelaff::stamp::intruder::Intruder>(std::env::args())
}
