#!/bin/sh
# Every test: formatting, lints and API docs, unit/property/integration/doc tests, and
# the placement tests inside the emulated NUMA machines.
set -eu
cd "$(dirname "$0")/.."
. scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# The API docs build without broken or redundant links.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
cargo test --workspace --quiet
# Feature `mpi`: its lints and docs, the distributed operators under mpirun
# (1-4 ranks, --oversubscribe) and the CLI under mpirun. As root, mpirun
# needs these two variables (the tests also pass --allow-run-as-root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo clippy -p skelaff-spmv -p skelaff --all-targets --features mpi --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc -p skelaff-spmv --no-deps --features mpi --quiet
cargo test --quiet -p skelaff-spmv --features mpi --test mpi
cargo test --quiet -p skelaff --features mpi --test linear_cli
# The STM's loom models: the lock and commit protocol (tests/loom.rs), epoch
# reclamation and the thread registry (tests/loom_reclaim.rs, whose *_bites
# tests show each model fails without the fence after a reader's
# announcement), assisted execution's ring handshake (tests/loom_assist.rs).
# Own target directory: loom changes every dependency's cfg.
RUSTFLAGS="--cfg loom" cargo test --quiet -p skelaff-stm --test loom --test loom_reclaim --test loom_assist --target-dir target/loom
cargo xtask numa-vm
