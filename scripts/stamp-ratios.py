#!/usr/bin/env python3
"""Sequential vs skeleton times of one STAMP example, as ratios.

Usage (after `cargo build --release --example APP`):

    python3 scripts/stamp-ratios.py APP THREAD_FLAG ROUNDS [APP FLAGS...]
    python3 scripts/stamp-ratios.py labyrinth -t 5 -i random-x512-y512-z7-n512
    python3 scripts/stamp-ratios.py vacation -c 11 -n2 -q90 -u98 -r16384 -t4096

Runs `target/release/examples/APP FLAGS --json` with `--sequential`, with one
and with two threads, in interleaved rounds, takes the median of each JSON
last line's `time_seconds`, and prints the medians and the ratios
sequential/1-thread, sequential/2-threads and 1-thread/2-threads. Exits 1
when a run fails (including a failed self-check).
"""
import json
import statistics
import subprocess
import sys

if len(sys.argv) < 4 or not sys.argv[3].isdigit() or int(sys.argv[3]) < 1:
    sys.exit(__doc__)
app, thread_flag, rounds, flags = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
exe = f"target/release/examples/{app}"
configs = {"sequential": ["--sequential"], "1 thread": [f"{thread_flag}1"], "2 threads": [f"{thread_flag}2"]}
times = {name: [] for name in configs}
for _ in range(rounds):
    for name, extra in configs.items():
        run = subprocess.run([exe, *flags, *extra, "--json"], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{app} {' '.join(flags + extra)} failed ({run.returncode}):\n{run.stdout[-800:]}{run.stderr[-800:]}")
        times[name].append(json.loads(run.stdout.strip().splitlines()[-1])["time_seconds"])
med = {name: statistics.median(v) for name, v in times.items()}
seq, one, two = med["sequential"], med["1 thread"], med["2 threads"]
print(f"{app} {' '.join(flags)}: median of {rounds}: sequential {seq:.6f} s, 1 thread {one:.6f} s, 2 threads {two:.6f} s")
print(f"seq/1t {seq / one:.2f}  seq/2t {seq / two:.2f}  1t/2t {one / two:.2f}")
print(json.dumps({"app": app, "flags": flags, "rounds": rounds, "median_seconds": med,
                  "seq_over_1t": seq / one, "seq_over_2t": seq / two, "1t_over_2t": one / two}))
