#!/bin/sh
# The concurrent code under the sanitizers, on nightly:
#
# - AddressSanitizer: the STM's stress tests (bank transfers, opacity,
#   collections under contention) and the worklist's skeleton tests on the
#   system allocator (AddressSanitizer sees into its blocks, not into
#   NumaAlloc's own mappings); the allocator's tests, whose binaries install
#   NumaAlloc as the global allocator where they test it; and the bank test
#   once more with NumaAlloc as the global allocator (bank_numa_alloc).
# - ThreadSanitizer: the STM's bank and opacity tests and the worklist's
#   skeleton tests, with std rebuilt instrumented (-Zbuild-std; without it
#   std's own synchronisation, which TSan cannot see, gives false reports).
#   With std instrumented, the first run (2026-11-28) gave no warning.
#
# The target is named, so RUSTFLAGS reach only the target's crates: build
# scripts and proc macros are built as usual. Each sanitizer has its own
# target directory under target/. Needs the nightly toolchain with rust-src
# (`rustup component add rust-src --toolchain nightly`). From empty target
# directories, 20 minutes on a shared two-core machine (ASan 9, TSan 11),
# nearly all of it compiling; the tests themselves take about 2 minutes.
# The STM's and the worklist's integration tests are modules of one test
# binary per crate (`it`): the filters after `--` pick the modules named.
# Fails when a sanitizer reports.
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
step() {
    echo "== sanitize.sh at $(($(date +%s) - start)) s: $*"
    "$@"
}
host=$(rustc +nightly -vV | sed -n 's/^host: //p')
export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
status=0

asan() {
    env RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address" \
        ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1" \
        cargo +nightly test --quiet --target "$host" --target-dir target/sanitize-asan "$@"
}
step asan -p skelaff-stm --test it --test bank_numa_alloc -- bank:: opacity:: collections:: || status=1
step asan -p skelaff-numa-alloc --lib --tests || status=1
step asan -p skelaff-worklist --test it -- skeleton:: || status=1

tsan() {
    env RUSTFLAGS="-Zsanitizer=thread" RUSTDOCFLAGS="-Zsanitizer=thread" \
        TSAN_OPTIONS="halt_on_error=0:report_signal_unsafe=0" \
        cargo +nightly test --quiet -Zbuild-std --target "$host" --target-dir target/sanitize-tsan "$@"
}
step tsan -p skelaff-stm --test it -- bank:: opacity:: || status=1
step tsan -p skelaff-worklist --test it -- skeleton:: || status=1

echo "== sanitize.sh: done in $(($(date +%s) - start)) s, $([ "$status" -eq 0 ] && echo 'no reports' || echo 'REPORTS above')"
exit "$status"
