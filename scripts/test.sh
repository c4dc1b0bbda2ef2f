#!/bin/sh
# Every test: formatting, lints and API docs, unit/property/integration/doc tests, and
# the placement tests inside the emulated NUMA machines.
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
# Runs one step, after printing how long the run has taken so far.
step() {
    echo "== test.sh at $(($(date +%s) - start)) s: $*"
    "$@"
}
step . scripts/setup.sh
step cargo fmt --all -- --check
step cargo clippy --workspace --all-targets --quiet -- -D warnings
# No circle of imports between the modules of any crate (every target of
# every package): fails naming the files and lines that close each one.
step cargo xtask import-cycles
# The API docs build without broken or redundant links.
step env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
# Unit, integration and doc tests. The examples and benches are not built
# again here: clippy above has type-checked them (`--all-targets`).
step cargo test --workspace --lib --bins --tests --quiet
step cargo test --workspace --doc --quiet
# The STM's per-operation costs (a read, a write, a commit, one intset and
# one vacation transaction), counted under callgrind and compared with the
# committed baselines in crates/costs/baseline.json: fails when a count grew
# by more than 3% (crates/costs says why counts, not timings).
step cargo run --quiet -p skelaff-costs --profile costs -- check
# Feature `mpi`: its lints and docs, the distributed operators under mpirun
# (1-4 ranks, --oversubscribe) and the CLI under mpirun. As root, mpirun
# needs these two variables (the tests also pass --allow-run-as-root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Only the targets that the feature changes are linted again with it.
step cargo clippy -p skelaff-spmv --lib --tests --features mpi --quiet -- -D warnings
step cargo clippy -p skelaff --lib --bins --tests --example nas_cg_mpi --features mpi --quiet -- -D warnings
step env RUSTDOCFLAGS="-D warnings" cargo doc -p skelaff-spmv --no-deps --features mpi --quiet
step cargo test --quiet -p skelaff-spmv --features mpi --test mpi
# The distributed module's doc tests, which exist only with the feature:
# its examples compile, and its compile_fail examples show that `Mpi` and
# `RankComm` cannot be shared with or moved to another thread.
step cargo test --quiet -p skelaff-spmv --features mpi --doc dist::
step cargo test --quiet -p skelaff --features mpi --test linear_cli
# The STM's loom models: the lock and commit protocol (tests/loom.rs), epoch
# reclamation and the thread registry (tests/loom_reclaim.rs, whose *_bites
# tests show each model fails without the fence after a reader's
# announcement), assisted execution's ring handshake (tests/loom_assist.rs).
# Own target directory: loom changes every dependency's cfg.
step env RUSTFLAGS="--cfg loom" cargo test --quiet -p skelaff-stm --test loom --test loom_reclaim --test loom_assist --target-dir target/loom
step cargo xtask numa-vm
echo "== test.sh: every test passed in $(($(date +%s) - start)) s"
