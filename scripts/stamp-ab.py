#!/usr/bin/env python3
"""Same-run A/B of skelaff builds on STAMP examples: each round runs every
build once per workload and thread count, in an order rotated by round, so
drift of the machine's speed falls on all builds alike.

Usage:
    python3 scripts/stamp-ab.py ROUNDS THREADS NAME=DIR[|EXTRA FLAGS] ...

DIR holds the built examples (`cargo build --release --features stamp
--example vacation --example intruder`, then `target/release/examples`);
text after `|` is passed to the example (`--solo false`, `--sequential`).
The first build is the base of the ratios. Prints one line per run, one
summary line per workload (medians, and the median, min and max of the
per-round ratios to the base), and a JSON object as the last line.
ONLY=vacation-low,intruder picks workloads. Example (the issue 35 A/B):

    python3 scripts/stamp-ab.py 5 1 old=/tmp/old/examples new=target/release/examples \\
        'plain=target/release/examples|--solo false' 'seq=/tmp/old/examples|--sequential'
"""
import json
import os
import statistics as st
import subprocess
import sys

WORK = {
    "vacation-low": ("vacation", ["-n2", "-q90", "-u98", "-r1048576", "-t1048576"], "-c"),
    "intruder": ("intruder", ["-a10", "-l128", "-n65536", "-s1"], "-t"),
}


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    threads = [int(t) for t in sys.argv[2].split(",")]
    builds = dict(a.split("=", 1) for a in sys.argv[3:])
    work = WORK
    if os.environ.get("ONLY"):
        work = {k: v for k, v in WORK.items() if k in os.environ["ONLY"].split(",")}
    names = list(builds)
    res = {}
    for r in range(rounds):
        for w, (app, flags, tflag) in work.items():
            for t in threads:
                k = r % len(names)
                for b in names[k:] + names[:k]:
                    d, _, extra = builds[b].partition("|")
                    out = subprocess.run([f"{d}/{app}", *flags, f"{tflag}{t}", *extra.split(), "--json"],
                                         capture_output=True, text=True)
                    if out.returncode != 0:
                        sys.exit(f"{b} {app} failed ({out.returncode}):\n{out.stderr[-2000:]}")
                    j = json.loads(out.stdout.strip().splitlines()[-1])
                    res.setdefault((w, t), {}).setdefault(b, []).append(j["time_seconds"])
                    print(f"round {r + 1} {w} t{t} {b}: {j['time_seconds']:.3f} s check {j.get('check_passed')}",
                          flush=True)
    summary = {}
    base = names[0]
    for (w, t), v in res.items():
        row = {}
        for b in names:
            ratios = [x / y for x, y in zip(v[b], v[base])]
            row[b] = {"median_s": st.median(v[b]), "over_base_median": st.median(ratios),
                      "ratio_min": min(ratios), "ratio_max": max(ratios)}
        summary[f"{w} t{t}"] = row
        print(f"{w} t{t}: " + "  ".join(
            f"{b} {row[b]['median_s']:.3f}s ({row[b]['over_base_median']:.3f}x "
            f"{row[b]['ratio_min']:.3f}-{row[b]['ratio_max']:.3f})" for b in names))
    print(json.dumps({"base": base, "rounds": rounds, "results": summary}))


if __name__ == "__main__":
    main()
