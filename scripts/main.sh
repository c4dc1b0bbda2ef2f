#!/bin/sh
# The main job: the skelaff CLI on a small built-in workload.
set -eu
cd "$(dirname "$0")/.."
. scripts/setup.sh
exec cargo run --release --quiet --features cli --bin skelaff -- experiment "$@"
