#!/bin/sh
# A scaling sweep that runs on a machine with no Rust, no network and no
# package manager (issue 37): `bundle` builds the binaries here and packs them
# with the shared libraries a bare Linux may lack and the STAMP inputs the
# sweep reads; `run` uses the bundle alone and writes one JSON file with every
# figure and the machine's description. `scripts/scaling-page.py` turns that
# file into docs/scaling/.
#
#   scripts/scale.sh bundle DIR [--inputs STAMP_INPUTS]
#   DIR/run.sh OUT [--quick] [--budget SECONDS] [--threads LIST] [--policies LIST]
#   scripts/scale.sh run DIR OUT [...]            (the same as DIR/run.sh OUT ...)
#
# The run side is POSIX sh with coreutils' `timeout`, awk, sed, tr and
# /proc: no python, no cargo, no repository.
set -eu

PROG=scale.sh

usage() {
    cat <<'EOF'
usage: scale.sh bundle DIR [--inputs STAMP_INPUTS]
       scale.sh run DIR OUT [--quick] [--budget SECONDS] [--threads LIST] [--policies LIST]

bundle  builds (release) the skelaff CLI and the intset and spmv examples, and
        writes DIR: bin/ (the binaries), lib/ (the shared libraries they load
        that a bare Linux may lack), inputs/ (the STAMP inputs the sweep reads,
        taken from --inputs, else $SKELAFF_STAMP_INPUTS, else
        ../shared/stamp-inputs beside the repository), scale.sh, run.sh and
        bundle.json (commit, compiler, files). DIR must be new, empty, or an
        earlier bundle.

run     from the bundle alone: the machine's description and `skelaff
        inspect`; the STAMP applications (sequential, and 1,2,4,8,16 workers
        capped at the CPU count, under first-touch and SkelAff auto, plus bind
        and cyclic when there are several NUMA nodes; helpers off and on at 8
        workers); intset rb/hs/sl; SpMV on NAS CG class B beside the STREAM
        triad. Writes OUT/scale.json (every figure) and OUT/logs/ (each run's
        output). Every run has a time limit; failures and skips are recorded,
        not fatal.
        --quick          1-2 threads, small inputs (a couple of minutes)
        --budget S       overall time budget in seconds (default 480; quick 180)
        --threads LIST   thread counts, comma-separated (default above)
        --policies LIST  page policies for the STAMP runs, comma-separated
                         (default first-touch,auto; with several nodes also
                         bind,cyclic)
EOF
}

die_usage() {
    echo "$PROG: $*" >&2
    echo "$PROG: see '$PROG --help'" >&2
    exit 2
}

die() {
    echo "$PROG: $*" >&2
    exit 1
}

# The STAMP inputs the sweep reads, relative to the inputs folder. A file
# may also be there gzip-compressed (NAME.gz): the applications read both.
INPUT_FILES="kmeans/random-n2048-d16-c16.txt kmeans/random-n16384-d24-c16.txt kmeans/random-n65536-d32-c16.txt
labyrinth/random-x32-y32-z3-n96.txt labyrinth/random-x128-y128-z3-n128.txt labyrinth/random-x256-y256-z3-n256.txt
labyrinth/random-x512-y512-z7-n512.txt
yada/633.2.node yada/633.2.ele yada/633.2.poly yada/ttimeu10000.2.node yada/ttimeu10000.2.ele yada/ttimeu10000.2.poly
yada/ttimeu100000.2.node yada/ttimeu100000.2.ele yada/ttimeu100000.2.poly"

# Shared libraries every Linux has (glibc's and libgcc's): not bundled.
is_base_lib() {
    case $1 in
    linux-vdso.so* | linux-gate.so* | ld-linux*.so* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
        librt.so.* | libgcc_s.so.* | libutil.so.* | libresolv.so.*) return 0 ;;
    *) return 1 ;;
    esac
}

# ---------------------------------------------------------------- bundle

bundle() {
    [ $# -ge 1 ] || die_usage "bundle needs a directory: scale.sh bundle DIR [--inputs STAMP_INPUTS]"
    dir=$1
    shift
    inputs=${SKELAFF_STAMP_INPUTS:-}
    while [ $# -gt 0 ]; do
        case $1 in
        --inputs)
            [ $# -ge 2 ] || die_usage "--inputs needs a folder"
            inputs=$2
            shift 2
            ;;
        --inputs=*)
            inputs=${1#--inputs=}
            shift
            ;;
        *) die_usage "bundle: unknown argument '$1'" ;;
        esac
    done
    repo=$(cd "$(dirname "$0")/.." && pwd)
    [ -f "$repo/Cargo.toml" ] && [ -d "$repo/crates/stamp" ] ||
        die "bundle builds from a skelaff checkout, and $repo is not one (run the repository's scripts/scale.sh)"
    [ -n "$inputs" ] || inputs=$repo/../shared/stamp-inputs
    [ -d "$inputs" ] || die "no STAMP inputs at '$inputs': give their folder with --inputs DIR or SKELAFF_STAMP_INPUTS (it holds kmeans/, labyrinth/, yada/)"
    for tool in cargo ldd strip du; do
        command -v "$tool" >/dev/null 2>&1 || die "bundle needs '$tool' on PATH"
    done
    for f in $INPUT_FILES; do
        [ -f "$inputs/$f" ] || [ -f "$inputs/$f.gz" ] ||
            die "STAMP input '$f' (or $f.gz) is missing from $inputs"
    done
    if [ -e "$dir" ]; then
        [ -d "$dir" ] || die "'$dir' exists and is not a directory"
        if [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/bundle.json" ]; then
            die "'$dir' is not empty and not an earlier bundle (no bundle.json): refusing to write into it"
        fi
        rm -rf "$dir/bin" "$dir/lib" "$dir/inputs" "$dir/bundle.json" "$dir/run.sh" "$dir/scale.sh"
    fi
    mkdir -p "$dir/bin" "$dir/lib" "$dir/inputs"
    dir=$(cd "$dir" && pwd)

    echo "$PROG: building the release binaries (fat LTO: several minutes)"
    (cd "$repo" && cargo build --release --quiet --features cli,spmv-peers --bin skelaff --example intset --example spmv)
    target=${CARGO_TARGET_DIR:-$repo/target}
    case $target in /*) ;; *) target=$repo/$target ;; esac
    cp "$target/release/skelaff" "$dir/bin/skelaff"
    cp "$target/release/examples/intset" "$dir/bin/intset"
    cp "$target/release/examples/spmv" "$dir/bin/spmv"
    strip "$dir/bin/"*

    # The libraries each binary loads (ldd lists them transitively), but
    # glibc's own: copied under their soname, symbolic links followed.
    for b in "$dir/bin/"*; do
        ldd "$b" | while read -r name arrow path _; do
            [ "$arrow" = "=>" ] || continue
            is_base_lib "$name" && continue
            [ "$path" != "not" ] || die "$b needs $name, which this machine cannot find"
            [ -f "$dir/lib/$name" ] || cp -L "$path" "$dir/lib/$name"
        done
    done
    # hwloc looks for plugins (pci, gl, opencl, xml) in a folder compiled into
    # it; an empty folder of our own keeps another hwloc's plugins out.
    mkdir -p "$dir/lib/hwloc-plugins"

    for f in $INPUT_FILES; do
        mkdir -p "$dir/inputs/$(dirname "$f")"
        if [ -f "$inputs/$f" ]; then cp "$inputs/$f" "$dir/inputs/$f"; else cp "$inputs/$f.gz" "$dir/inputs/$f.gz"; fi
    done

    cp "$repo/scripts/scale.sh" "$dir/scale.sh"
    cat >"$dir/run.sh" <<'EOF'
#!/bin/sh
# The scaling sweep from this bundle: run.sh OUT [--quick] [--budget SECONDS] ...
# (see scale.sh --help). Needs only this folder: no Rust, no network.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec sh "$here/scale.sh" run "$here" "$@"
EOF
    chmod +x "$dir/run.sh" "$dir/scale.sh"

    commit=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
    dirty=false
    [ -z "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ] || dirty=true
    glibc=$(for b in "$dir/bin/"*; do strings "$b" 2>/dev/null || true; done | sed -n 's/^GLIBC_\([0-9][0-9.]*\)$/\1/p' |
        sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)
    libs=$(cd "$dir/lib" && for l in *.so*; do [ -f "$l" ] && printf '"%s",' "$l"; done)
    {
        printf '{"commit":"%s","dirty":%s,' "$commit" "$dirty"
        printf '"describe":"%s",' "$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)"
        printf '"built_at":"%s","built_on":"%s",' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(uname -srm)"
        printf '"rustc":"%s","glibc_needed":"%s",' "$(rustc -V 2>/dev/null || echo unknown)" "${glibc:-unknown}"
        printf '"binaries":["skelaff","intset","spmv"],"libraries":[%s],' "${libs%,}"
        printf '"inputs_from":"%s"}\n' "$(cd "$inputs" && pwd)"
    } >"$dir/bundle.json"

    check_bundle "$dir"
    size_kib=$(du -sk "$dir" | awk '{print $1}')
    [ "$size_kib" -lt 65536 ] || die "the bundle is $((size_kib / 1024)) MiB: over the 64 MiB limit"
    echo "$PROG: bundle in $dir: $((size_kib / 1024)) MiB ($(du -sh "$dir" | awk '{print $1}')), commit $commit$([ "$dirty" = false ] || echo ' (with uncommitted changes)'), needs glibc ${glibc:-?} or newer"
    echo "$PROG: on the target: $dir/run.sh OUT   (or: sh scale.sh run DIR OUT)"
}

# Every bundled binary resolves every library from the bundle or from the
# base system alone, in an empty environment.
check_bundle() {
    for b in "$1/bin/"*; do
        env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$1/lib" ldd "$b" | while read -r name arrow path _; do
            [ "$arrow" = "=>" ] || continue
            [ "$path" != "not" ] || die "$b: $name not found with LD_LIBRARY_PATH=$1/lib"
            case $path in
            "$1"/lib/*) ;;
            *) is_base_lib "$name" || die "$b: $name comes from $path, outside the bundle" ;;
            esac
        done
    done
}

# ---------------------------------------------------------------- run: helpers

# Seconds since boot, with hundredths (/proc/uptime: no GNU date needed).
now() {
    awk '{ print $1 }' /proc/uptime
}

# awk arithmetic: calc 'EXPR' prints the value with 3 decimals.
calc() {
    awk "BEGIN { printf \"%.3f\", $1 }"
}

# True when the awk condition holds.
holds() {
    awk "BEGIN { exit !($1) }"
}

# stdin as the body of a JSON string: printable ASCII kept, quotes and
# backslashes escaped, lines joined with \n.
jesc() {
    LC_ALL=C tr -cd '\11\12\15\40-\176' | LC_ALL=C sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e "s/$(printf '\t')/\\\\t/g" \
        -e "s/$(printf '\r')//g" | awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }'
}

# A JSON string of $1.
jstr() {
    printf '"%s"' "$(printf '%s' "$1" | jesc)"
}

# A file's contents as a JSON string, or null when it cannot be read.
jfile() {
    if [ -r "$1" ]; then jstr "$(cat "$1" 2>/dev/null || true)"; else printf null; fi
}

# The number after "$2": in the JSON object $1 (its last occurrence), or nothing.
jnum() {
    printf '%s' "$1" | sed -n "s/.*\"$2\":\\([-0-9.eE+]*\\).*/\\1/p"
}

say() {
    printf '[%4.0f/%s s] %s\n' "$(calc "$(now) - $T0")" "$BUDGET" "$*"
}

# Appends a record to the runs file.
record() {
    printf '%s\n' "$1" >>"$RUNS"
}

# Records a run that was not started, and why.
skip() { # section name config why
    record "{\"section\":\"$1\",\"name\":\"$2\",\"config\":$3,\"status\":\"skipped\",\"why\":$(jstr "$4")}"
    say "$2: skipped: $4"
}

# run_one SECTION NAME CONFIG TIMEOUT CMD...: runs CMD (from the bundle
# folder) under a time limit and records its status, wall time, its JSON
# (the last line of its output) and the end of its error output. Sets
# LAST_STATUS, LAST_WALL and LAST_JSON.
run_one() {
    section=$1 name=$2 config=$3 tmo=$4
    shift 4
    NRUN=$((NRUN + 1))
    log=$OUT/logs/$(printf '%03d-%s' "$NRUN" "$name" | tr -c 'A-Za-z0-9.+-' '_')
    t_start=$(now)
    rc=0
    # shellcheck disable=SC2086
    timeout $TIMEOUT_KILL "$tmo" "$@" >"$log.out" 2>"$log.err" </dev/null || rc=$?
    LAST_WALL=$(calc "$(now) - $t_start")
    LAST_JSON=$(tail -n 1 "$log.out")
    case $LAST_JSON in
    '{'*'}') ;;
    *) LAST_JSON=null ;;
    esac
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        LAST_STATUS=timeout
    elif [ "$rc" -ne 0 ]; then
        LAST_STATUS=failed
    elif [ "$LAST_JSON" = null ]; then
        LAST_STATUS=no-json
    else
        LAST_STATUS=ok
    fi
    record "{\"section\":\"$section\",\"name\":\"$name\",\"config\":$config,\"command\":$(jstr "$*"),\"status\":\"$LAST_STATUS\",\"exit\":$rc,\"wall_s\":$LAST_WALL,\"timeout_s\":$tmo,\"result\":$LAST_JSON,\"stderr_tail\":$(jstr "$(tail -n 6 "$log.err")"),\"log\":$(jstr "logs/${log##*/}")}"
    case $LAST_STATUS in
    ok) say "$name: ${LAST_WALL} s" ;;
    timeout) say "$name: TIMEOUT after ${tmo} s" ;;
    *) say "$name: $LAST_STATUS (exit $rc) after ${LAST_WALL} s: $(tail -n 1 "$log.err")" ;;
    esac
}

# The time limit of a run estimated to take $1 s: four times that, at least
# $2 s, never past $3 (a deadline, in uptime seconds).
limit_for() {
    awk -v e="$1" -v lo="$2" -v left="$(calc "$3 - $(now)")" \
        'BEGIN { t = 4 * e; if (t < lo) t = lo; if (t > left) t = left; if (t < 1) t = 1; printf "%d", t + 0.999 }'
}

# ---------------------------------------------------------------- run: STAMP

# Each application's sizes, smallest first ("std": STAMP's standard
# input): its flags (inputs relative to the bundle), and the wall time
# and the application's own time (`time_seconds`) of its sequential
# version as measured on a 2-core build machine under other builds' load
# (2026-11-28). Only their ratios matter: the sweep times the calibration
# size's sequential version on the machine it runs on, scales the rest by
# that, and takes the largest size whose runs fit the time left. The rest
# of the wall time (reading or generating the input, the self-check) does
# not shrink with more workers.
stamp_levels() {
    case $1 in
    vacation) echo "s m l std" ;;
    kmeans) echo "s m l std" ;;
    intruder) echo "s m std" ;;
    genome) echo "s std l" ;;
    labyrinth) echo "s m std" ;;
    yada) echo "s m l xl" ;;
    esac
}

# stamp_level APP LEVEL: sets FLAGS, REF_WALL, REF_TIME.
stamp_level() {
    case $1/$2 in
    vacation/s) FLAGS="-n2 -q90 -u98 -r16384 -t4096" REF_WALL=0.28 REF_TIME=0.025 ;;
    vacation/m) FLAGS="-n2 -q90 -u98 -r65536 -t393216" REF_WALL=2.47 REF_TIME=1.71 ;;
    vacation/l) FLAGS="-n2 -q90 -u98 -r262144 -t1048576" REF_WALL=9.84 REF_TIME=6.42 ;;
    vacation/std) FLAGS="-n2 -q90 -u98 -r1048576 -t4194304" REF_WALL=58.5 REF_TIME=36.4 ;;
    kmeans/s) FLAGS="-m15 -n15 -t0.05 -i inputs/kmeans/random-n2048-d16-c16.txt" REF_WALL=0.03 REF_TIME=0.0003 ;;
    kmeans/m) FLAGS="-m40 -n40 -t0.001 -i inputs/kmeans/random-n16384-d24-c16.txt" REF_WALL=0.28 REF_TIME=0.17 ;;
    kmeans/l) FLAGS="-m40 -n40 -t0.001 -i inputs/kmeans/random-n65536-d32-c16.txt" REF_WALL=2.46 REF_TIME=1.81 ;;
    kmeans/std) FLAGS="-m40 -n40 -t0.00001 -i inputs/kmeans/random-n65536-d32-c16.txt" REF_WALL=4.75 REF_TIME=3.83 ;;
    intruder/s) FLAGS="-a10 -l4 -n2048 -s1" REF_WALL=0.01 REF_TIME=0.0005 ;;
    intruder/m) FLAGS="-a10 -l128 -n65536 -s1" REF_WALL=3.29 REF_TIME=2.61 ;;
    intruder/std) FLAGS="-a10 -l128 -n262144 -s1" REF_WALL=19.3 REF_TIME=16.4 ;;
    genome/s) FLAGS="-g256 -s16 -n16384" REF_WALL=0.02 REF_TIME=0.004 ;;
    genome/std) FLAGS="-g16384 -s64 -n16777216" REF_WALL=2.82 REF_TIME=0.31 ;;
    genome/l) FLAGS="-g262144 -s64 -n16777216" REF_WALL=5.63 REF_TIME=2.41 ;;
    labyrinth/s) FLAGS="-i inputs/labyrinth/random-x32-y32-z3-n96.txt" REF_WALL=0.02 REF_TIME=0.008 ;;
    labyrinth/m) FLAGS="-i inputs/labyrinth/random-x256-y256-z3-n256.txt" REF_WALL=2.06 REF_TIME=2.04 ;;
    labyrinth/std) FLAGS="-i inputs/labyrinth/random-x512-y512-z7-n512.txt" REF_WALL=34.6 REF_TIME=34.5 ;;
    yada/s) FLAGS="-a20 -i inputs/yada/633.2" REF_WALL=0.04 REF_TIME=0.002 ;;
    yada/m) FLAGS="-a15 -i inputs/yada/ttimeu10000.2" REF_WALL=0.35 REF_TIME=0.03 ;;
    yada/l) FLAGS="-a15 -i inputs/yada/ttimeu100000.2" REF_WALL=2.14 REF_TIME=0.29 ;;
    yada/xl) FLAGS="-a25 -i inputs/yada/ttimeu100000.2" REF_WALL=3.07 REF_TIME=0.60 ;;
    *) die "internal: no size $2 for $1" ;;
    esac
}

# The flag that sets an application's worker count.
threads_flag() {
    case $1 in
    vacation) echo -c ;;
    kmeans) echo -p ;;
    *) echo -t ;;
    esac
}

# How many times its sequential work a run of an application does on one
# worker (the STM's instrumentation, retries): measured on the build
# machine, rounded up.
stm_factor() {
    case $1 in
    vacation | kmeans) echo 3.5 ;;
    intruder) echo 2.5 ;;
    *) echo 1.5 ;;
    esac
}

# stamp_estimate WALL TIME T: a run at T workers of an application whose
# sequential version takes WALL s, TIME of it its own: the load as it is,
# the work times the STM factor, split over T workers.
stamp_estimate() {
    calc "($1 - $2) + $(stm_factor "$app") * $2 / $3 + 0.05"
}

# The configurations of one application at one size, in the order they
# run: a line "label threads policy helpers" each. The most workers
# first, then helpers off and on, then fewer and fewer workers: the
# shortest runs first, so that a shortage of time drops the longest ones
# (the sequential version, not one worker, is what speedups divide by).
stamp_configs() {
    first=true
    for t in $(for t in $THREADS; do echo "$t"; done | sort -rn); do
        for p in $POLICIES; do echo "$p-x$t $t $p off"; done
        if [ "$first" = true ]; then
            echo "auto-x$HELPER_WORKERS-helpers-off $HELPER_WORKERS auto off"
            echo "auto-x$HELPER_WORKERS-helpers-on $HELPER_WORKERS auto on"
            first=false
        fi
    done
}

# The predicted time of the whole matrix of an application whose
# sequential version takes WALL s (TIME its own).
stamp_matrix_estimate() {
    total=$1
    for t in $(stamp_configs | awk '{ print $2 }'); do
        total=$(calc "$total + $(stamp_estimate "$1" "$2" "$t")")
    done
    echo "$total"
}

stamp_config_json() { # app level flags threads policy helpers sequential
    printf '{"app":"%s","level":"%s","flags":"%s","threads":%s,"policy":"%s","helpers":"%s","sequential":%s}' "$@"
}

stamp_app() { # app deadline
    app=$1 app_deadline=$2
    # The sizes to choose from, and the one every estimate is scaled from
    # (timed on this machine first): with --quick the two smallest and the
    # smallest, else all of them and the second.
    levels=$(stamp_levels "$app")
    if [ "$QUICK" = true ]; then
        levels=$(echo "$levels" | awk '{ print $1, $2 }')
        cal=$(echo "$levels" | awk '{ print $1 }')
    else
        cal=$(echo "$levels" | awk '{ print $2 }')
    fi
    stamp_level "$app" "$cal"
    cflags=$FLAGS cref_wall=$REF_WALL
    tmo=$(limit_for "$(calc "$REF_WALL * 10")" 30 "$app_deadline")
    # shellcheck disable=SC2086
    run_one stamp "$app-$cal-sequential" "$(stamp_config_json "$app" "$cal" "$cflags" 1 none off true)" "$tmo" \
        bin/skelaff run "$app" $cflags --sequential --json
    if [ "$LAST_STATUS" != ok ] && [ "$LAST_STATUS" != failed ]; then
        record "{\"section\":\"plan\",\"name\":\"$app\",\"app\":\"$app\",\"level\":null,\"why\":$(jstr "its sequential run at size $cal ended $LAST_STATUS: nothing more of $app")}"
        return 0
    fi
    # How much slower (> 1) or faster this machine runs it; at least 0.1, as
    # a tiny calibration run's wall time is mostly noise.
    scale=$(calc "$LAST_WALL / $cref_wall")
    holds "$scale >= 0.1" || scale=0.100
    # The largest size whose matrix fits four fifths of the time left (half
    # with --quick, whose calibration run takes milliseconds: noise).
    share=0.8
    [ "$QUICK" = false ] || share=0.5
    avail=$(calc "$share * ($app_deadline - $(now))")
    level=$cal why="" skipped=""
    for l in $levels; do
        stamp_level "$app" "$l"
        pred=$(stamp_matrix_estimate "$(calc "$REF_WALL * $scale")" "$(calc "$REF_TIME * $scale")")
        [ "$l" = "$cal" ] || pred=$(calc "$pred + $REF_WALL * $scale")
        if holds "$pred <= $avail"; then
            level=$l why="predicted $pred s of $avail s available"
        else
            skipped="$skipped{\"level\":\"$l\",\"flags\":\"$FLAGS\",\"predicted_s\":$pred},"
        fi
    done
    [ -n "$why" ] || why="no size fits $avail s: the calibration size, as far as the time allows"
    record "{\"section\":\"plan\",\"name\":\"$app\",\"app\":\"$app\",\"level\":\"$level\",\"scale\":$scale,\"available_s\":$avail,\"why\":$(jstr "$why"),\"skipped_sizes\":[${skipped%,}]}"
    stamp_level "$app" "$level"
    flags=$FLAGS
    seq_wall=$(calc "$REF_WALL * $scale") seq_time=$(calc "$REF_TIME * $scale")
    if [ "$level" != "$cal" ]; then
        tmo=$(limit_for "$seq_wall" 20 "$app_deadline")
        # shellcheck disable=SC2086
        run_one stamp "$app-$level-sequential" "$(stamp_config_json "$app" "$level" "$flags" 1 none off true)" "$tmo" \
            bin/skelaff run "$app" $flags --sequential --json
    fi
    if [ "$LAST_STATUS" = ok ] || [ "$LAST_STATUS" = failed ]; then
        seq_wall=$LAST_WALL
        t=$(jnum "$LAST_JSON" time_seconds)
        [ -z "$t" ] || seq_time=$t
    fi
    tflag=$(threads_flag "$app")
    # Read from a file, not a pipe: the loop runs in this shell, so the
    # run counter goes on counting.
    stamp_configs >"$OUT/logs/configs"
    # Once a run has finished, the next is estimated from it: its load as it
    # was, its work scaled by the ratio of workers (as if it scaled
    # linearly: from more workers to fewer, an overestimate).
    prev_t="" prev_wall=""
    while read -r label t p h; do
        config=$(stamp_config_json "$app" "$level" "$flags" "$t" "$p" "$h" false)
        if [ -n "$prev_t" ]; then
            est=$(awk -v w="$prev_wall" -v l="$(calc "$seq_wall - $seq_time")" -v a="$prev_t" -v b="$t" \
                'BEGIN { x = w - l; if (x < 0) x = 0; printf "%.3f", l + x * a / b }')
        else
            est=$(stamp_estimate "$seq_wall" "$seq_time" "$t")
        fi
        if holds "$(now) + $est > $app_deadline"; then
            skip stamp "$app-$level-$label" "$config" "estimated $est s; $(calc "$app_deadline - $(now)") s left for $app"
            continue
        fi
        # shellcheck disable=SC2086
        run_one stamp "$app-$level-$label" "$config" "$(limit_for "$est" 20 "$app_deadline")" \
            bin/skelaff run "$app" $flags "$tflag$t" --policy "$p" --helpers "$h" --json
        [ "$LAST_STATUS" != ok ] || prev_t=$t prev_wall=$LAST_WALL
    done <"$OUT/logs/configs"
    rm -f "$OUT/logs/configs"
}

# ---------------------------------------------------------------- run: intset, SpMV

intset_section() { # deadline
    for s in rb hs sl; do
        for t in $THREADS; do
            config="{\"structure\":\"$s\",\"threads\":$t,\"args\":\"$INTSET_ARGS\",\"duration_ms\":$INTSET_MS}"
            est=$(calc "$INTSET_MS / 1000 + 0.5")
            if holds "$(now) + $est > $1"; then
                skip intset "intset-$s-x$t" "$config" "estimated $est s; $(calc "$1 - $(now)") s left for intset"
                continue
            fi
            # shellcheck disable=SC2086
            run_one intset "intset-$s-x$t" "$config" "$(limit_for "$est" 20 "$1")" \
                bin/intset -b "$s" $INTSET_ARGS -d "$INTSET_MS" -n "$t" --json
        done
    done
}

spmv_section() { # deadline
    est=$SPMV_FIRST_ESTIMATE
    for placement in $SPMV_PLACEMENTS; do
        for t in $THREADS; do
            config="{\"class\":\"$SPMV_CLASS\",\"threads\":$t,\"placement\":\"$placement\",\"args\":\"$SPMV_ARGS\"}"
            if holds "$(now) + $est > $1"; then
                skip spmv "spmv-$placement-x$t" "$config" "estimated $est s; $(calc "$1 - $(now)") s left for SpMV"
                continue
            fi
            # shellcheck disable=SC2086
            run_one spmv "spmv-$placement-x$t" "$config" "$(limit_for "$est" 30 "$1")" \
                bin/spmv --nas-class "$SPMV_CLASS" --threads "$t" --placement "$placement" $SPMV_ARGS --json
            # The matrix is built again by every run: the next one takes
            # about as long as this one.
            [ "$LAST_STATUS" != ok ] || est=$LAST_WALL
        done
    done
}

# ---------------------------------------------------------------- run: the machine

machine_json() {
    cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
    lscpu_json=null
    if command -v lscpu >/dev/null 2>&1; then
        j=$(lscpu -J 2>/dev/null | tr -d '\n' || true)
        case $j in '{'*'}') lscpu_json=$j ;; esac
    fi
    nodes_sys=$(cd /sys/devices/system/node 2>/dev/null && for n in node[0-9]*; do
        [ -d "$n" ] && printf '{"node":%s,"cpulist":%s,"mem_kib":%s},' "${n#node}" \
            "$(jfile "$n/cpulist")" "$(awk '/MemTotal/ { print $4 }' "$n/meminfo" 2>/dev/null || echo null)"
    done || true)
    printf '{"hostname":%s,"nproc":%s,"online_cpus":%s,"kernel":%s,"os":%s,"cpu_model":%s,' \
        "$(jstr "$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)")" "$cpus" \
        "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo null)" "$(jstr "$(uname -srvm)")" \
        "$(jstr "$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"')")" \
        "$(jstr "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)")"
    printf '"mem_total_kib":%s,"numa_balancing":%s,"thp_enabled":%s,"thp_defrag":%s,"governor":%s,' \
        "$(awk '/^MemTotal/ { print $2 }' /proc/meminfo)" "$(jfile /proc/sys/kernel/numa_balancing)" \
        "$(jfile /sys/kernel/mm/transparent_hugepage/enabled)" "$(jfile /sys/kernel/mm/transparent_hugepage/defrag)" \
        "$(jfile /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor)"
    printf '"sys_nodes":[%s],"lscpu":%s,"date":"%s"}' "${nodes_sys%,}" "$lscpu_json" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}

# ---------------------------------------------------------------- run

run_sweep() {
    [ $# -ge 2 ] || die_usage "run needs a bundle and an output folder: scale.sh run DIR OUT [--quick] [--budget SECONDS]"
    dir=$1 OUT=$2
    shift 2
    QUICK=false BUDGET="" THREADS="" POLICIES=""
    while [ $# -gt 0 ]; do
        case $1 in
        --quick) QUICK=true ;;
        --budget | --threads | --policies)
            [ $# -ge 2 ] || die_usage "$1 needs a value"
            case $1 in
            --budget) BUDGET=$2 ;;
            --threads) THREADS=$2 ;;
            --policies) POLICIES=$2 ;;
            esac
            shift
            ;;
        *) die_usage "run: unknown argument '$1'" ;;
        esac
        shift
    done
    case $BUDGET in
    '') if [ "$QUICK" = true ]; then BUDGET=180; else BUDGET=480; fi ;;
    *[!0-9]* | 0*) die_usage "--budget takes a whole number of seconds (at least 1), not '$BUDGET'" ;;
    esac
    THREADS=$(echo "$THREADS" | tr ',' ' ')
    for t in $THREADS; do
        case $t in *[!0-9]* | 0*) die_usage "--threads takes positive whole numbers, not '$t'" ;; esac
    done
    POLICIES=$(echo "$POLICIES" | tr ',' ' ')
    for p in $POLICIES; do
        case $p in first-touch | auto | bind | cyclic | interleave) ;;
        *) die_usage "--policies: unknown policy '$p' (first-touch, auto, bind, cyclic, interleave)" ;;
        esac
    done
    [ -x "$dir/bin/skelaff" ] && [ -f "$dir/bundle.json" ] ||
        die "'$dir' is not a bundle (no bin/skelaff or bundle.json): make one with 'scale.sh bundle DIR' on a machine with Rust"
    for tool in timeout awk sed tr tail; do
        command -v "$tool" >/dev/null 2>&1 || die "the sweep needs '$tool' (coreutils, awk, sed) on PATH"
    done
    [ -r /proc/uptime ] || die "the sweep needs /proc (Linux)"
    # coreutils' timeout kills what ignores its TERM 5 s later; busybox's has no -k.
    TIMEOUT_KILL="-k 5"
    timeout -k 1 5 true 2>/dev/null || TIMEOUT_KILL=""
    dir=$(cd "$dir" && pwd)
    mkdir -p "$OUT/logs" || die "cannot create '$OUT'"
    OUT=$(cd "$OUT" && pwd)
    RUNS=$OUT/runs.jsonl
    : >"$RUNS"
    rm -f "$OUT/logs/"*
    NRUN=0
    cd "$dir"
    export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export HWLOC_PLUGINS_PATH="$dir/lib/hwloc-plugins"
    T0=$(now)
    deadline=$(calc "$T0 + $BUDGET")

    # The binaries start here at all (a glibc too old says so now).
    for b in skelaff intset spmv; do
        "bin/$b" --help >/dev/null 2>"$OUT/logs/preflight.err" ||
            die "bin/$b does not start on this machine: $(tail -n 3 "$OUT/logs/preflight.err") (the bundle needs glibc $(sed -n 's/.*"glibc_needed":"\([^"]*\)".*/\1/p' bundle.json) or newer)"
    done

    CPUS=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
    say "machine: $(hostname 2>/dev/null || true), $CPUS CPUs, budget $BUDGET s$([ "$QUICK" = false ] || echo ', quick')"
    machine=$(machine_json)
    run_one inspect inspect '{}' 30 bin/skelaff inspect --demo --json
    inspect=$LAST_JSON
    nodes=1
    [ "$inspect" = null ] || nodes=$(printf '%s' "$inspect" | grep -o '"os_index":' | wc -l | tr -d ' ')
    [ "$nodes" -ge 1 ] || nodes=1

    if [ -z "$THREADS" ]; then
        if [ "$QUICK" = true ]; then THREADS="1 2"; else THREADS="1 2 4 8 16"; fi
        THREADS=$(for t in $THREADS; do [ "$t" -le "$CPUS" ] && echo "$t"; done | tr '\n' ' ')
        # The machine's own CPU count when it is not a power of two.
        case " $THREADS " in *" $CPUS "*) ;; *) [ "$CPUS" -ge 16 ] || THREADS="$THREADS $CPUS" ;; esac
    fi
    if [ -z "$POLICIES" ]; then
        POLICIES="first-touch auto"
        [ "$nodes" -le 1 ] || POLICIES="$POLICIES bind cyclic"
    fi
    # Helpers sit on a core beside their worker: 8 workers on 16 CPUs.
    HELPER_WORKERS=$((CPUS / 2))
    [ "$HELPER_WORKERS" -le 8 ] || HELPER_WORKERS=8
    [ "$HELPER_WORKERS" -ge 1 ] || HELPER_WORKERS=1
    if [ "$QUICK" = true ]; then
        INTSET_MS=300 SPMV_CLASS=W SPMV_ARGS="--no-peers --reps 10 --rounds 3 --stream-mib 32" SPMV_FIRST_ESTIMATE=3
    else
        INTSET_MS=2000 SPMV_CLASS=B SPMV_ARGS="--no-peers" SPMV_FIRST_ESTIMATE=15
    fi
    INTSET_ARGS="-i 4096 -r 8192 -u 20"
    SPMV_PLACEMENTS=masa
    [ "$nodes" -le 1 ] || SPMV_PLACEMENTS="masa first-touch"
    THREADS=$(for t in $THREADS; do echo "$t"; done | sort -n | uniq | tr '\n' ' ')
    THREADS=${THREADS% }
    say "threads: $THREADS; policies: $POLICIES; helpers at $HELPER_WORKERS workers; $nodes NUMA node(s)"

    # The fixed-length parts first (intset runs for a set time, SpMV's
    # size is fixed), each within a share of the budget; the STAMP
    # applications last, sized to what is left.
    n_threads=$(echo "$THREADS" | wc -w)
    intset_deadline=$(calc "$(now) + 3 * $n_threads * ($INTSET_MS / 1000 + 0.6) + 5")
    holds "$intset_deadline <= $T0 + 0.15 * $BUDGET" || intset_deadline=$(calc "$T0 + 0.15 * $BUDGET")
    intset_section "$intset_deadline"
    spmv_deadline=$(calc "$(now) + 0.2 * $BUDGET")
    spmv_section "$spmv_deadline"
    # The STAMP part ends 10 s before the whole budget (the JSON is written
    # after it); each application gets an equal share of what is left, and
    # what one leaves goes to the next.
    stamp_deadline=$(calc "$deadline - 10")
    apps_left=6
    for app in vacation kmeans intruder genome labyrinth yada; do
        app_deadline=$(calc "$(now) + ($stamp_deadline - $(now)) / $apps_left")
        stamp_app "$app" "$app_deadline"
        apps_left=$((apps_left - 1))
    done

    elapsed=$(calc "$(now) - $T0")
    {
        printf '{"schema":"skelaff-scale/1","quick":%s,"budget_s":%s,"elapsed_s":%s,' "$QUICK" "$BUDGET" "$elapsed"
        printf '"threads":[%s],"policies":[%s],"helper_workers":%s,"numa_nodes":%s,' \
            "$(echo $THREADS | tr ' ' ',')" "$(for p in $POLICIES; do printf '"%s",' "$p"; done | sed 's/,$//')" \
            "$HELPER_WORKERS" "$nodes"
        printf '"intset_args":"%s -d %s","spmv_class":"%s","spmv_args":"%s",' "$INTSET_ARGS" "$INTSET_MS" "$SPMV_CLASS" "$SPMV_ARGS"
        printf '"bundle":%s,"machine":%s,"inspect":%s,"runs":[\n' "$(tr -d '\n' <bundle.json)" "$machine" "$inspect"
        sed '$!s/$/,/' "$RUNS"
        printf ']}\n'
    } >"$OUT/scale.json"
    rm -f "$RUNS"
    bad=$(grep -c '"status":"\(failed\|timeout\|no-json\)"' "$OUT/scale.json" || true)
    skipped=$(grep -c '"status":"skipped"' "$OUT/scale.json" || true)
    say "wrote $OUT/scale.json: $NRUN runs ($bad failed or timed out), $skipped skipped, in $elapsed s"
}

# ---------------------------------------------------------------- main

[ $# -ge 1 ] || {
    usage >&2
    exit 2
}
case $1 in
bundle)
    shift
    bundle "$@"
    ;;
run)
    shift
    run_sweep "$@"
    ;;
-h | --help | help) usage ;;
*) die_usage "unknown command '$1': use 'bundle' or 'run'" ;;
esac
