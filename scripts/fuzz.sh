#!/bin/sh
# Fuzzes every reader of outside input for SECONDS each, one target after the
# other: Matrix Market matrices and the CLI's vector files (mm), kmeans points
# (kmeans), labyrinth mazes (labyrinth), Triangle's .node/.poly/.ele (yada),
# access profiles (profile) and placement plans (plan). The property: a reader
# returns a value or an error naming the input (and the line, for text), never
# panics, and never allocates more than 512 MiB on a short input.
#
#   scripts/fuzz.sh SECONDS [TARGET...]
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). The
# seeds are the committed fuzz/corpus/TARGET; what libFuzzer adds goes to
# fuzz/target/corpus/TARGET (not committed), crashes to fuzz/artifacts/TARGET.
# Runs at the lowest priority (nice 19). Prints, per target, the seconds, the
# executions (libFuzzer's final stats) and whether it crashed; fails if one did.
set -eu
usage() {
    echo "usage: $0 SECONDS [TARGET...]" >&2
    echo "  runs each fuzz target (default: all of: $(echo "$all" | tr '\n' ' ')) for SECONDS seconds" >&2
    exit 2
}
cd "$(dirname "$0")/.."
all="mm
kmeans
labyrinth
yada
profile
plan"
[ $# -ge 1 ] || usage
case "$1" in
'' | *[!0-9]*) echo "$0: SECONDS must be a whole number of seconds, got \`$1'" >&2; usage ;;
esac
secs=$1
shift
targets=${*:-$all}
for t in $targets; do
    echo "$all" | grep -qx "$t" || { echo "$0: unknown target \`$t'" >&2; usage; }
done
export CARGO_INCREMENTAL=0
nice -n 19 cargo +nightly fuzz build
summary=""
failed=0
for t in $targets; do
    mkdir -p "fuzz/target/corpus/$t"
    log="fuzz/target/$t.log"
    echo "== fuzz.sh: $t for $secs s (log: $log)"
    status=0
    nice -n 19 cargo +nightly fuzz run "$t" "fuzz/target/corpus/$t" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=512 -malloc_limit_mb=512 -print_final_stats=1 \
        >"$log" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
    if [ "$status" -eq 0 ]; then
        result="no crash"
    else
        result="CRASHED (exit $status): $(grep -m1 -E '^==[0-9]+==|panicked at|^SUMMARY' "$log" || echo 'see the log')"
        failed=1
    fi
    summary="$summary$t: ${took:-?} s, ${execs:-?} executions, $result
"
    tail -n 3 "$log"
done
echo "== fuzz.sh: per target"
printf '%s' "$summary"
exit "$failed"
