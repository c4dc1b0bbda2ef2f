#!/usr/bin/env python3
"""Same-run A/B of the earlier issues' figures on two skelaff builds: for
each example, OLD and NEW run alternately, the order rotated each round, so
drift of the machine's speed falls on both builds alike.

Usage:
    python3 scripts/figures-ab.py ROUNDS OLD_DIR NEW_DIR [--only NAME,...] [--json] [--smoke]

OLD_DIR and NEW_DIR each hold the six example binaries of one build:
intset, alloc_bench, spmv, nas_cg, helpers, skeleton_overhead. Build them
with `cargo build --release --example intset --example alloc_bench
--example spmv --example nas_cg --example helpers --example
skeleton_overhead` (since issue 39 add `--features
cli,spmv-peers,peer-jemalloc`: spmv needs `cli,spmv-peers`, nas_cg `cli`,
helpers `stamp`, and `peer-jemalloc` keeps jemalloc among alloc_bench's
allocators as it is in builds from before the feature existed), then copy
them out of `target/release/examples`.

Every round runs, per example, each of its invocations once on each build
(OLD first in odd rounds, NEW first in even ones), with the same arguments
and seed, and reads the figures from the run's last-line JSON (`--json`).
Per example and figure it prints the median over the rounds for OLD and
for NEW, the median of the per-round ratios NEW/OLD and their min and max,
and the load average (as `uptime` prints it) before and after the example.
A ratio NEW/OLD above 1 means NEW's figure is larger: better where the
figure is marked "higher is better", worse where it is marked "lower".

The figures (the first of each example is the one its issue was about):
  intset             transactions per second of skelaff-stm (rb, sl, ll, hs;
                     1 thread; the issue's peer, TinySTM, needs an install:
                     scripts/peers/intset-ab.py)
  alloc_bench        NumaAlloc / System (worst pattern, and each pattern),
                     NumaAlloc / mimalloc (worst), large prefault NumaAlloc / Vec
  spmv               MASA SpMV's speedup over sprs and nalgebra-sparse (NAS
                     class B, 2 threads), its fraction of the STREAM triad
  nas_cg             Mop/s (class A, 2 threads; zeta must verify)
  helpers            the pointer chase's speedup with helpers on (and
                     adaptive, and with a prefetch hint) over off; each STAMP
                     app's off/on (its small input, one example round per
                     A/B round); the idle helper's cost (default policy / off)
                     per unit length
  skeleton_overhead  ns per empty unit of skelaff (per-node and shared
                     queue) over the plain crossbeam-deque loop, 1 and 2
                     threads

--only NAME,... picks examples. --smoke runs the smallest arguments
(a functional check of the script and the builds, not a measurement).
With --json the last line is one JSON object with every figure, every
round's value and the loads. Exits 1 if a run fails, a self-check or
verification fails (intset's size check, spmv's result, nas_cg's zeta), or
a figure is missing from a run's JSON.

The arguments of the two builds' examples and the fields this script reads
are the same at 0d7f4e6 (before issue 39) and after it; only the features
the build needs differ (see above). The lead's run (5 rounds; one round
took about 2 minutes at nice 19 on a loaded 2-core machine, so 8-10
minutes in all):

    python3 scripts/figures-ab.py 5 /work/ab/fig-old /work/ab/fig-new --json
"""
import argparse
import json
import os
import statistics as st
import subprocess
import sys
import time


def load():
    """The 1, 5 and 15 minute load averages, as `uptime` prints them."""
    return [round(x, 2) for x in os.getloadavg()]


class Fail(Exception):
    """A run failed, a self-check failed or a figure is missing."""


def field(j, *path):
    """j[path[0]][path[1]]..., or Fail naming the missing key."""
    x = j
    for k in path:
        try:
            x = x[k]
        except (KeyError, IndexError, TypeError):
            raise Fail(f"no {'.'.join(map(str, path))} in the JSON line") from None
    return x


def get(j, *path):
    """The number at `path` in `j` (see `field`), as a float."""
    x = field(j, *path)
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise Fail(f"{'.'.join(map(str, path))} is {x!r}, not a number")
    return float(x)


def by(rows, key, value):
    """The element of `rows` whose `key` is `value`."""
    for r in rows:
        if r.get(key) == value:
            return r
    raise Fail(f"no row with {key} = {value!r} in the JSON line")


# ---- the examples: invocations (name, arguments), figures, checks --------
#
# Each figure function takes a run's JSON line and returns a list of
# (figure name, value, higher_is_better); it raises Fail when a check fails.

INTSET_FLAGS = {
    "rb": ["-i", "4096", "-r", "8192", "-u", "20"],
    "sl": ["-i", "4096", "-r", "8192", "-u", "20"],
    "ll": ["-i", "256", "-r", "512", "-u", "20"],
    "hs": ["-i", "4096", "-r", "8192", "-u", "20"],
}


def intset_invocations(ms):
    return [(s, ["-b", s, *f, "-d", str(ms), "-n", "1", "--json"]) for s, f in INTSET_FLAGS.items()]


def intset_figures(j):
    if j.get("ok") is not True:
        raise Fail(f"intset's final size check failed (size {j.get('size')}, expected {j.get('expected_size')})")
    return [(f"{j.get('structure')} txs/s", get(j, "txs_per_s"), True)]


def alloc_figures(j):
    out = [("worst numa/system", get(j, "worst_numa_over_system"), True)]
    for p in j.get("patterns") or []:
        out.append((f"numa/system {p.get('pattern')} t{p.get('threads')}", get(p, "numa_over_system"), True))
    out.append(("worst numa/mimalloc", get(j, "worst_numa_over_mimalloc"), True))
    out.append(("large prefault numa/vec", get(j, "large_prefault", "numa_over_vec"), True))
    return out


def spmv_figures(j):
    if j.get("correct") is not True:
        raise Fail(f"spmv's result is wrong (max relative error {j.get('max_rel_err')})")
    for peer in ("sprs", "nalgebra-sparse"):
        if field(j, "peers", peer, "correct") is not True:
            raise Fail(f"spmv's peer {peer} gave a wrong result")
    return [
        ("masa/sprs speedup", get(j, "peers", "sprs", "speedup_vs_peer"), True),
        ("masa/nalgebra speedup", get(j, "peers", "nalgebra-sparse", "speedup_vs_peer"), True),
        ("GB/s (median)", get(j, "gbs"), True),
        ("fraction of triad", get(j, "ratio_to_triad"), True),
    ]


def nas_figures(j):
    if j.get("verified") is not True:
        raise Fail(f"nas_cg's zeta {j.get('zeta')} did not verify (want {j.get('zeta_verify')})")
    return [("Mop/s", get(j, "mops"), True), ("seconds", get(j, "seconds"), False)]


def helpers_figures(j):
    out = []
    chase = j.get("chase")
    if chase is not None:
        rows = get_rows(chase, "results")
        out.append(("chase on: off/on", get(by(rows, "config", "on"), "speedup_vs_off"), True))
        out.append(("chase adaptive: off/on", get(by(rows, "config", "on, adaptive"), "speedup_vs_off"), True))
        out.append(("chase hint: off/on", get(by(rows, "config", "on, prefetch hint"), "speedup_vs_off"), True))
    for r in j.get("stamp") or []:
        out.append((f"stamp {r.get('app')}: off/on", get(r, "speedup_on_vs_off"), True))
    for r in j.get("idle") or []:
        if r.get("policy") == "spin-yield-park (default)":
            out.append((f"idle {r.get('unit_us')}us: default/off", get(r, "ratio_vs_off"), False))
    if not out:
        raise Fail("helpers printed no figures")
    return out


def get_rows(j, key):
    rows = j.get(key)
    if not isinstance(rows, list):
        raise Fail(f"no list {key} in the JSON line")
    return rows


def overhead_figures(j):
    out = []
    for r in get_rows(j, "results"):
        t = r.get("threads")
        out.append((f"t{t} per-node/crossbeam", get(r, "ratio_skelaff_per_node_vs_crossbeam"), False))
        out.append((f"t{t} shared/crossbeam", get(r, "ratio_skelaff_shared_vs_crossbeam"), False))
        out.append((f"t{t} per-node ns/unit", get(r, "ns_per_unit", "skelaff_per_node"), False))
    return out


# Odd --runs inside the examples: builds before issue 39 took the upper
# median of an even count (alloc_bench, helpers, skeleton_overhead), later
# ones the mean of the middle two; with an odd count both are the middle.
EXAMPLES = {
    "intset": {
        "bin": "intset",
        "runs": intset_invocations(1000),
        "smoke": intset_invocations(50),
        "figures": intset_figures,
        "seed": "-s",
    },
    "alloc_bench": {
        "bin": "alloc_bench",
        "runs": [("all", ["--runs", "3", "--scale", "0.1", "--json"])],
        "smoke": [("all", ["--runs", "1", "--scale", "0.002", "--json"])],
        "figures": alloc_figures,
    },
    "spmv": {
        "bin": "spmv",
        "runs": [("B", ["--nas-class", "B", "--threads", "2", "--placement", "masa", "--reps", "30", "--rounds", "10",
                        "--json"])],
        "smoke": [("S", ["--nas-class", "S", "--threads", "2", "--placement", "masa", "--reps", "2", "--rounds", "1",
                         "--stream-mib", "1", "--json"])],
        "figures": spmv_figures,
    },
    "nas_cg": {
        "bin": "nas_cg",
        "runs": [("A", ["--class", "A", "--threads", "2", "--placement", "masa", "--json"])],
        "smoke": [("S", ["--class", "S", "--threads", "2", "--placement", "masa", "--json"])],
        "figures": nas_figures,
    },
    "helpers": {
        "bin": "helpers",
        # STAMP with --runs 1: each of this script's rounds is one of the
        # example's rounds (helpers off, off beside an idle thread, on).
        "runs": [("chase,idle", ["--what", "chase,idle", "--runs", "3", "--json"]),
                 ("stamp", ["--what", "stamp", "--runs", "1", "--json"])],
        "smoke": [("chase,idle", ["--what", "chase,idle", "--runs", "1", "--nodes", "65536", "--units", "100",
                                  "--json"]),
                  ("stamp", ["--what", "stamp", "--runs", "1", "--apps", "vacation,kmeans", "--json"])],
        "figures": helpers_figures,
    },
    "skeleton_overhead": {
        "bin": "skeleton_overhead",
        "runs": [("all", ["--units", "1000000", "--threads", "1,2", "--runs", "5", "--json"])],
        "smoke": [("all", ["--units", "1000", "--threads", "1,2", "--runs", "1", "--json"])],
        "figures": overhead_figures,
    },
}


def run_once(exe, args, what):
    """Runs `exe args`; the parsed last line of its standard output."""
    t0 = time.monotonic()
    out = subprocess.run([exe, *args], capture_output=True, text=True)
    wall = time.monotonic() - t0
    if out.returncode != 0:
        raise Fail(f"{what}: `{exe} {' '.join(args)}` failed ({out.returncode}):\n"
                   f"{out.stdout[-1500:]}{out.stderr[-2000:]}")
    lines = out.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1]), wall
    except (IndexError, json.JSONDecodeError):
        raise Fail(f"{what}: `{exe} {' '.join(args)}`: the last line is not JSON:\n{out.stdout[-1500:]}") from None


def ab_example(name, ex, rounds, dirs, smoke):
    """Runs one example's rounds; its summary (a dict) and printed table."""
    invocations = ex["smoke"] if smoke else ex["runs"]
    for inv, args in invocations:
        print(f"{name} [{inv}]: {ex['bin']} {' '.join(args)}", flush=True)
    before = load()
    print(f"{name}: load before {before}", flush=True)
    # values[build][figure] = one value per round; higher[figure]
    values = {b: {} for b in dirs}
    higher = {}
    order_of_figures = []
    walls = {b: [] for b in dirs}
    for r in range(rounds):
        builds = list(dirs) if r % 2 == 0 else list(dirs)[::-1]
        for inv, args in invocations:
            if "seed" in ex:
                args = [*args, ex["seed"], str(r + 1)]
            for b in builds:
                exe = os.path.join(dirs[b], ex["bin"])
                what = f"{name} [{inv}] round {r + 1} {b}"
                j, wall = run_once(exe, args, what)
                try:
                    figs = ex["figures"](j)
                except Fail as e:
                    raise Fail(f"{what}: {e}") from None
                walls[b].append(wall)
                shown = []
                for f, v, hi in figs:
                    if f not in higher:
                        order_of_figures.append(f)
                    higher[f] = hi
                    values[b].setdefault(f, []).append(v)
                    shown.append(f"{f} {v:.4g}")
                print(f"round {r + 1} {name} [{inv}] {b} ({wall:.1f} s): " + ", ".join(shown[:4])
                      + (f", ... ({len(shown)} figures)" if len(shown) > 4 else ""), flush=True)
    after = load()
    old, new = dirs
    rows = {}
    missing = []
    for f in order_of_figures:
        o, n = values[old].get(f, []), values[new].get(f, [])
        if len(o) != rounds or len(n) != rounds:
            # A figure only one build prints (e.g. a STAMP app the other
            # lacks): reported, not compared.
            missing.append({"figure": f, "old_runs": len(o), "new_runs": len(n)})
            continue
        ratios = [y / x if x else float("nan") for x, y in zip(o, n)]
        rows[f] = {
            "higher_is_better": higher[f],
            "old_median": st.median(o),
            "new_median": st.median(n),
            "new_over_old_median": st.median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
            "old": o,
            "new": n,
        }
    print(f"== {name}: {rounds} round(s); load before {before}, after {after}; "
          f"run wall median old {st.median(walls[old]):.1f} s, new {st.median(walls[new]):.1f} s")
    width = max([len(f) for f in rows] + [6])
    print(f"   {'figure':<{width}} {'old':>12} {'new':>12} {'new/old':>8} {'min':>7} {'max':>7}")
    for f, x in rows.items():
        print(f"   {f:<{width}} {x['old_median']:>12.4g} {x['new_median']:>12.4g} "
              f"{x['new_over_old_median']:>8.3f} {x['ratio_min']:>7.3f} {x['ratio_max']:>7.3f}"
              f"  ({'higher' if x['higher_is_better'] else 'lower'} is better)")
    for m in missing:
        print(f"   {m['figure']}: not in every run of both builds (old {m['old_runs']}, new {m['new_runs']} of {rounds})")
    return {
        "invocations": [{"name": inv, "args": args} for inv, args in invocations],
        "load_before": before,
        "load_after": after,
        "wall_s_median": {b: st.median(walls[b]) for b in dirs},
        "primary": order_of_figures[0] if order_of_figures else None,
        "figures": rows,
        "not_compared": missing,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rounds", type=int, help="rounds (5 or more for a claim of 'within noise')")
    p.add_argument("old_dir", help="the OLD build's example binaries")
    p.add_argument("new_dir", help="the NEW build's example binaries")
    p.add_argument("--only", help=f"comma-separated, of: {','.join(EXAMPLES)}")
    p.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    p.add_argument("--smoke", action="store_true", help="the smallest arguments: a functional check, no figures")
    a = p.parse_args()
    if a.rounds < 1:
        sys.exit(f"figures-ab: ROUNDS must be at least 1, got {a.rounds}")
    names = list(EXAMPLES)
    if a.only:
        names = a.only.split(",")
        unknown = [n for n in names if n not in EXAMPLES]
        if unknown:
            sys.exit(f"figures-ab: --only: unknown example(s) {', '.join(unknown)}; allowed: {', '.join(EXAMPLES)}")
    dirs = {"old": a.old_dir, "new": a.new_dir}
    absent = [os.path.join(d, EXAMPLES[n]["bin"]) for d in dirs.values() for n in names
              if not os.access(os.path.join(d, EXAMPLES[n]["bin"]), os.X_OK)]
    if absent:
        sys.exit("figures-ab: no executable " + ", ".join(absent)
                 + " (build the examples and copy them there; see the usage)")
    if a.smoke:
        print("figures-ab: --smoke: the smallest arguments, a functional check; these figures are no measurement")
    start = load()
    print(f"figures-ab: {a.rounds} round(s), old {a.old_dir}, new {a.new_dir}; load {start}", flush=True)
    results = {}
    try:
        for n in names:
            results[n] = ab_example(n, EXAMPLES[n], a.rounds, dirs, a.smoke)
    except Fail as e:
        print(f"figures-ab: {e}", file=sys.stderr)
        sys.exit(1)
    end = load()
    print(f"figures-ab: done; load before {start}, after {end}")
    print("primary figures (median NEW/OLD, min-max):")
    for n, r in results.items():
        f = r["primary"]
        x = r["figures"].get(f)
        if x:
            print(f"   {n:<18} {f:<28} {x['new_over_old_median']:.3f} ({x['ratio_min']:.3f}-{x['ratio_max']:.3f})")
    if a.json:
        print(json.dumps({"benchmark": "figures-ab", "rounds": a.rounds, "smoke": a.smoke, "old": a.old_dir,
                          "new": a.new_dir, "load_before": start, "load_after": end, "examples": results}))


if __name__ == "__main__":
    main()
