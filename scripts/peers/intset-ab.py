#!/usr/bin/env python3
"""TinySTM's intset on several skelaff builds and on TinySTM, interleaved.

Usage:

    python3 scripts/peers/intset-ab.py --tinystm TINYSTM_DIR \\
        --build old=/path/to/old/intset --build new=target/release/examples/intset \\
        [--structures rb,hs,ll,sl] [--threads 1,2] [--rounds 5] [--duration 1000] [--json]

TINYSTM_DIR is a TinySTM 1.0.6 checkout (github.com/patrickmarlier/tinystm);
it is copied to target/peers/tinystm (or $TINYSTM_BUILD_DIR) and built there
with its own Makefiles (lib/libstm.a, then test/intset), so the checkout
stays untouched. Each --build is a skelaff `examples/intset` binary (build
one from any commit with `cargo build --release --example intset`).

Every round runs each program once per structure and thread count, with
the round's seed (1, 2, ...), the programs' order rotated by one each round:
the programs alternate, so a drift of the machine's speed touches them
alike, and none always runs first or right after a given other. The flags are TinySTM's:
-i 4096 -r 8192 -u 20 for rb, hs and sl, and its defaults -i 256 -r 512
-u 20 for ll (a list of 4096 would spend every transaction walking it).
Prints the median transactions per second of each program and, for each
skelaff build, the median over the rounds of its ratio to TinySTM and to
the first build within the same round (runs of one round are seconds
apart, so the ratio cancels the host's drift, which on a shared machine
moves a program's rate by more than the differences measured), and with
--json one JSON object as the last line. Exits 1 if a run fails or a
skelaff run's final size check fails.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

FLAGS = {
    "rb": ["-i", "4096", "-r", "8192", "-u", "20"],
    "hs": ["-i", "4096", "-r", "8192", "-u", "20"],
    "sl": ["-i", "4096", "-r", "8192", "-u", "20"],
    "ll": ["-i", "256", "-r", "512", "-u", "20"],
}


def build_tinystm(src):
    """Copies TinySTM to the build folder and builds its intset binaries."""
    build = os.environ.get("TINYSTM_BUILD_DIR", "target/peers/tinystm")
    if not os.path.isfile(os.path.join(src, "include", "stm.h")):
        sys.exit(f"intset-ab: {src} is not a TinySTM checkout (no include/stm.h)")
    if not os.path.isfile(os.path.join(build, "include", "stm.h")):
        shutil.copytree(src, build, dirs_exist_ok=True)
    for target in [build, os.path.join(build, "test", "intset")]:
        r = subprocess.run(["make", "-C", target], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"intset-ab: building TinySTM in {target} failed:\n{r.stderr[-2000:]}")
    return os.path.join(build, "test", "intset")


def run_skelaff(exe, structure, threads, seed, ms):
    cmd = [exe, "-b", structure, *FLAGS[structure], "-d", str(ms), "-n", str(threads), "-s", str(seed), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"intset-ab: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    fig = json.loads(r.stdout.strip().splitlines()[-1])
    if not fig.get("ok", False):
        sys.exit(f"intset-ab: {' '.join(cmd)}: the final size check failed")
    return fig["txs_per_s"]


def run_tinystm(bindir, structure, threads, seed, ms):
    cmd = [os.path.join(bindir, f"intset-{structure}"), *FLAGS[structure], "-d", str(ms), "-n", str(threads),
           "-s", str(seed)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"^#txs\s*:\s*\d+\s*\(([0-9.]+) / s\)", r.stdout, re.M)
    if r.returncode != 0 or not m:
        sys.exit(f"intset-ab: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-1000:]}{r.stderr[-1000:]}")
    return float(m.group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tinystm", required=True, help="a TinySTM 1.0.6 checkout")
    p.add_argument("--build", action="append", required=True, help="NAME=PATH of a skelaff intset binary")
    p.add_argument("--structures", default="rb,hs,ll,sl")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=1000, help="milliseconds per run")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    builds = []
    for b in a.build:
        name, sep, path = b.partition("=")
        if not sep or not os.access(path, os.X_OK):
            sys.exit(f"intset-ab: --build {b}: give NAME=PATH of an executable intset binary")
        builds.append((name, path))
    structures = a.structures.split(",")
    for s in structures:
        if s not in FLAGS:
            sys.exit(f"intset-ab: unknown structure {s}; use rb, hs, ll, sl")
    threads = [int(t) for t in a.threads.split(",")]
    if a.rounds < 1 or any(t < 1 for t in threads):
        sys.exit("intset-ab: --rounds and every thread count must be at least 1")
    bindir = build_tinystm(a.tinystm)
    programs = [*builds, ("tinystm", None)]
    tps = {(n, s, t): [] for n, _ in programs for s in structures for t in threads}
    for rnd in range(a.rounds):
        seed = rnd + 1
        for s in structures:
            for t in threads:
                k = rnd % len(programs)
                for name, path in programs[k:] + programs[:k]:
                    if path is None:
                        x = run_tinystm(bindir, s, t, seed, a.duration)
                    else:
                        x = run_skelaff(path, s, t, seed, a.duration)
                    tps[(name, s, t)].append(x)
        if not a.json:
            print(f"round {rnd + 1} of {a.rounds} done", file=sys.stderr)
    rows = []
    first = builds[0][0]
    for s in structures:
        for t in threads:
            med = {n: statistics.median(tps[(n, s, t)]) for n, _ in programs}

            def ratio(a, b):
                return statistics.median(x / y for x, y in zip(tps[(a, s, t)], tps[(b, s, t)]))

            row = {"structure": s, "threads": t, "median_txs_per_s": med,
                   "vs_tinystm": {n: ratio(n, "tinystm") for n, _ in builds},
                   f"vs_{first}": {n: ratio(n, first) for n, _ in builds},
                   "runs_txs_per_s": {n: tps[(n, s, t)] for n, _ in programs}}
            rows.append(row)
            cells = "  ".join(f"{n} {med[n] / 1e6:6.2f}M" for n, _ in programs)
            ratios = "  ".join(f"{n}/tinystm {row['vs_tinystm'][n]:.2f}" for n, _ in builds)
            steps = "  ".join(f"{n}/{first} {row[f'vs_{first}'][n]:.2f}" for n, _ in builds[1:])
            print(f"{s} {t} thread(s): {cells}  |  {ratios}  |  {steps}")
    if a.json:
        print(json.dumps({"benchmark": "intset-ab", "rounds": a.rounds, "duration_ms": a.duration,
                          "flags": {s: " ".join(FLAGS[s]) for s in structures}, "rows": rows}))


if __name__ == "__main__":
    main()
