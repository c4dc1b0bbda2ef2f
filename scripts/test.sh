#!/bin/sh
# Every test: formatting and lints, unit/property/integration/doc tests, and
# the placement tests inside the emulated NUMA machines.
set -eu
cd "$(dirname "$0")/.."
. scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --quiet
cargo xtask numa-vm
