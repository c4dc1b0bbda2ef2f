#!/bin/sh
# Builds and runs STREAM's C benchmark, the bandwidth peer of `examples/spmv`.
#
#   scripts/peers/stream.sh STREAM_DIR [THREADS] [MIB_PER_ARRAY]
#
# STREAM_DIR is a checkout of STREAM (stream.c); the binary is built there
# (stream_c.<MIB>m) with gcc -O3 -march=native -fopenmp and run with
# OMP_NUM_THREADS=THREADS (default: every CPU) and OMP_PROC_BIND=spread.
# MIB_PER_ARRAY defaults to STREAM's rule, four times the last-level cache
# (at least 128 MiB), so no array fits in a cache. Prints STREAM's report
# and, last, one JSON line with the four kernels' best rates in GB/s.
set -eu
src=${1:?usage: stream.sh STREAM_DIR [THREADS] [MIB_PER_ARRAY]}
threads=${2:-$(nproc)}
if [ -n "${3:-}" ]; then
    mib=$3
else
    llc=$(getconf LEVEL3_CACHE_SIZE 2>/dev/null || echo 0)
    [ "$llc" -gt 0 ] 2>/dev/null || llc=0
    mib=$(( llc * 4 / 1048576 ))
    [ "$mib" -ge 128 ] || mib=128
fi
[ -f "$src/stream.c" ] || { echo "stream.sh: $src/stream.c not found" >&2; exit 2; }
len=$(( mib * 1048576 / 8 ))
bin="$src/stream_c.${mib}m"
if [ ! -x "$bin" ] || [ "$src/stream.c" -nt "$bin" ]; then
    gcc -O3 -march=native -fopenmp -mcmodel=medium -DSTREAM_ARRAY_SIZE="$len" -DNTIMES=20 \
        "$src/stream.c" -o "$bin"
fi
out=$(OMP_NUM_THREADS=$threads OMP_PROC_BIND=spread "$bin")
echo "$out"
echo "$out" | awk -v t="$threads" -v m="$mib" '
    /^(Copy|Scale|Add|Triad):/ { sub(":", "", $1); r[$1] = $2 / 1000 }
    END { printf "{\"peer\":\"stream-c\",\"threads\":%d,\"mib_per_array\":%d,\"copy_gbs\":%.3f,\"scale_gbs\":%.3f,\"add_gbs\":%.3f,\"triad_gbs\":%.3f}\n", t, m, r["Copy"], r["Scale"], r["Add"], r["Triad"] }'
