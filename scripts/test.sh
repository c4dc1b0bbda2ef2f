#!/bin/sh
# Every test: formatting, lints and API docs, unit/property/integration/doc tests, the
# STM's instruction-count guard, the loom models, and the placement tests inside the
# emulated NUMA machines.
#
# Built for a clean machine (CI: two cores, nothing cached), where compiling is most of
# the time. So: no incremental compilation (it only adds work to a clean build); one
# build of the tests, with the features `cli` (the `skelaff` binary and everything it
# brings) and `mpi` on, rather than one without `mpi` and a second for the MPI tests
# (the emulated machines' tests are taken from it); without `mpi`, clippy lints the
# only code that exists only then, and the library with its default features alone.
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
# Runs one step, after printing how long the run has taken so far.
step() {
    echo "== test.sh at $(($(date +%s) - start)) s: $*"
    "$@"
}
step . scripts/setup.sh
# No debug info in the dev profile either: nothing here prints a backtrace (panics
# print their location without it), and line tables cost compile and link time.
export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=0
# As root, mpirun needs these two variables (the tests also pass --allow-run-as-root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
step cargo fmt --all -- --check
# The scaling sweep (scripts/scale.sh) parses, and docs/scaling/ is what the page
# generator makes of the committed sweep's JSON. The sweep itself needs a release
# build: the README's "Scaling sweep on another machine" names its check.
step sh -n scripts/scale.sh
if command -v python3 >/dev/null 2>&1; then
    step python3 scripts/scaling-page.py docs/scaling/scale.json docs/scaling --check
else
    echo "== test.sh: no python3: the scaling page's check is skipped"
fi
# Lints, every target of every package, with the features `cli` and `mpi` (the features
# of the test build below, whose dependencies' checks the docs reuse) and `spmv-peers`
# (the SpMV example and bench need it; the test build leaves nalgebra out); then without
# `mpi`, the CLI, whose refusal to run under mpirun is the only code that exists only
# then; then the library as `cargo add skelaff` builds it: default features only (no
# CLI, STAMP, plotters or perf-event: the README's "Features").
step cargo clippy --workspace --all-targets --features skelaff/cli,skelaff/mpi,skelaff/spmv-peers --quiet -- -D warnings
step cargo clippy -p skelaff --lib --bin skelaff --features cli --quiet -- -D warnings
step cargo clippy -p skelaff --lib --quiet -- -D warnings
# No circle of imports between the modules of any crate (every target of
# every package): fails naming the files and lines that close each one.
step cargo import-cycles
# The API docs build without broken or redundant links (with the features `cli` and
# `mpi`, so that every optional module's docs are checked too).
step env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --features skelaff/cli,skelaff/mpi --quiet
# Unit, integration and doc tests, with the features `cli` (the `skelaff` binary and
# its tests) and `mpi`: the distributed
# operators under mpirun (1-4 ranks, --oversubscribe), the CLI under mpirun,
# and the doc tests whose compile_fail examples show that `Mpi` and
# `RankComm` cannot be shared with or moved to another thread. The examples
# and benches are not built again here: clippy above has type-checked them.
step cargo test --workspace --lib --bins --tests --features skelaff/cli,skelaff/mpi --quiet --no-run
# The instruction-count guard's build (its own profile, below) compiles
# while the tests run: they leave a core idle much of the time (one test
# binary at a time; many wait on threads, timers or mpirun). Its output
# goes to a file, printed when the step below waits for it.
costs_log="${CARGO_TARGET_DIR:-target}/costs-build.log"
mkdir -p "$(dirname "$costs_log")"
echo "== test.sh at $(($(date +%s) - start)) s: in the background: cargo build -p skelaff-costs --profile costs"
cargo build --quiet -p skelaff-costs --profile costs >"$costs_log" 2>&1 &
costs_build=$!
# A step that fails ends the script: the build goes with it.
trap 'kill "$costs_build" 2>/dev/null || true' EXIT
step cargo test --workspace --lib --bins --tests --features skelaff/cli,skelaff/mpi --quiet
step cargo test --workspace --doc --features skelaff/cli,skelaff/mpi --quiet
costs_built() {
    status=0
    wait "$costs_build" || status=$?
    cat "$costs_log"
    [ "$status" -eq 0 ] || echo "test.sh: building the instruction-count guard failed (exit $status)"
    return "$status"
}
step costs_built
# The STM's per-operation costs (a read, a write, a commit, one intset and
# one vacation transaction), counted under callgrind and compared with the
# committed baselines in crates/costs/baseline.json: fails when a count grew
# by more than 3% (crates/costs says why counts, not timings).
step cargo run --quiet -p skelaff-costs --profile costs -- check
# The loom models. The STM's: the lock and commit protocol (tests/loom.rs),
# epoch reclamation, the thread registry and the solo gate
# (tests/loom_reclaim.rs, whose *_bites tests show each model fails without
# the fence after a reader's announcement, or without the gate's check),
# assisted execution's ring handshake (tests/loom_assist.rs). The one
# parker (crates/numa-alloc/tests/loom_park.rs) and the worker-helper link
# (crates/helper-threads/tests/loom_link.rs).
# `--cfg loom` changes every crate it reaches, so they build apart; with the
# target named, RUSTFLAGS reach only the target's crates, and the build
# scripts and proc macros of the builds above are used as they are.
# The models' binaries run at once, side by side.
host=$(rustc -vV | sed -n 's/^host: //p')
# Line tables for these (and only these): each *_bites test checks that its
# twin failed on the tracker's cell by the frames of the backtrace it prints.
loom_models() {
    # With the worker pool's hand-off and the asynchronous run's wake-up
    # (crates/worklist/tests/loom_crew.rs, about 8 s): a loom build of the
    # worklist crate compiles only src/crew.rs and its shim (its other
    # dependencies are cfg(not(loom))); so do those of numa-alloc (the
    # parker, the idle wait) and helper-threads (the link). One build for
    # the six, so that loom and its dependencies are compiled once, with
    # the line tables the _bites tests read. The STM at opt-level 2 here,
    # as in the dev profile, though the test build above has it at 1
    # (Cargo.toml says why): at 1 its models ran 35 s instead of 25.
    bins=$(env RUSTFLAGS="--cfg loom" CARGO_PROFILE_DEV_DEBUG=line-tables-only cargo test --quiet -p skelaff-stm \
        --config 'profile.test.package.skelaff-stm.opt-level=2' \
        -p skelaff-worklist -p skelaff-numa-alloc -p skelaff-helper-threads --test loom --test loom_reclaim \
        --test loom_assist --test loom_crew --test loom_park --test loom_link --target "$host" \
        --no-run --message-format=json-render-diagnostics | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p')
    [ "$(echo "$bins" | wc -w)" -eq 6 ] || { echo "loom: expected 6 test binaries, got: $bins"; return 1; }
    pids=""
    for b in $bins; do
        (cd crates/stm && "$b" -q) &
        pids="$pids $!"
    done
    status=0
    for p in $pids; do wait "$p" || status=1; done
    return "$status"
}
step loom_models
# The emulated NUMA machines, with the test targets the test build above
# made (same features), run by the xtask binary that the same build made
# for xtask's own tests (`cargo xtask` would resolve its dependencies'
# features for xtask alone and compile a third of the workspace again): the
# same as `cargo xtask numa-vm`. After the two steps above, not beside them:
# run side by side on a clean clone (two cores), the guard took 250 s
# instead of 113, the models 122 instead of 67, the guests 310 instead of
# 195: no time saved.
step "${CARGO_TARGET_DIR:-target}/debug/xtask" numa-vm --features skelaff/cli,skelaff/mpi
echo "== test.sh: every test passed in $(($(date +%s) - start)) s"
