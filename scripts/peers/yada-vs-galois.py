#!/usr/bin/env python3
"""skelaff's yada against Galois's Delaunay mesh refinement, interleaved.

Usage:

    cargo build --release --features stamp --example yada
    python3 scripts/peers/yada-vs-galois.py --galois GALOIS_DIR \\
        [--yada target/release/examples/yada] \\
        [--mesh /work/shared/stamp-inputs/yada/ttimeu100000.2] [--angle 30] \\
        [--threads 1,2] [--rounds 5] [--json]

--galois GALOIS_DIR builds Galois's Lonestar delaunayrefinement-cpu with
scripts/peers/galois-dmr.sh (out of tree, in $GALOIS_BUILD_DIR or
target/peers/galois-build); --galois-bin PATH takes a binary built already.

The mesh. --mesh is a basename of Triangle files (BASENAME.node, .ele and
.poly, each plain or .gz; STAMP's inputs are .gz and number vertices from
1). Galois reads only plain files numbered from 0 (Mesh.h stores vertex i
at tuples[i] of a vector of the declared size, so 1-based files write past
its end) and takes the field after x y as one attribute or marker. So the
mesh is rewritten once, with the same coordinates (copied as text), the
same triangles and segments in the same order, vertices renumbered from 0,
as plain files "i x y marker" / "i a b c" / "i a b marker" into --cache
(default target/peers/meshes/BASENAME); both programs read that copy, so
they refine the very same mesh. Galois writes .node.bin/.ele.bin/.poly.bin
beside it on its first run and reads those afterwards (outside its timer).

What runs. yada: `yada -a ANGLE -i MESH -t T --json` with skelaff's
default flags (SkelAff page policy auto, per-node distribution, scatter
mapping, seed units shuffled with seed 1; --yada-args adds flags).
Galois: `delaunayrefinement-cpu MESH -meshGraph -t T`, its default
non-deterministic schedule (PerThreadChunkLIFO<32>) with its verifier on.
The angle: Galois refines to a fixed 30 degrees (`#define MINANGLE 30.0`
in Element.h; no flag), so --angle must be 30; any other angle is refused
(with --galois, the checkout's MINANGLE is checked as well).

What is timed. yada's `time_seconds` is the skeleton's wall time: from
spawning the pinned workers to joining them, i.e. the refinement of the
initial bad elements and of every bad triangle it creates. It excludes
reading the files, building the mesh, finding the initial bad elements
(Mesh::build), queuing them on the skeleton and the final self-check. Galois's timer is its StatTimer
"refine" (`STAT, (NULL), refine, TMAX, ms`): the galois::for_each over the
initial bad triangles and every one it pushes. It excludes reading and
building the graph, the input verifier, galois::preAlloc (Galois
pre-faults its page pool, here ~0.9 GB, before the timer: yada's
allocator gets and faults its pages inside the timed run), findBad (timed
separately; Timer_0 = findBad + refine is recorded too), and the final
verifier. Galois's thread pool exists before the timer; yada's timer
includes spawning and pinning its workers (well under a millisecond).
Galois reports whole milliseconds: fine for runs of a second or more.

What is counted. Both count elements as triangles plus boundary segments
(Galois's graph nodes: its "total triangles" includes the segments; yada's
initial_elements/final_elements likewise), so the initial counts must
agree: that is a self-check. The two refine by different rules, so the
final counts differ and are reported, not compared: yada (STAMP's rule)
calls a triangle bad when it has an angle below -a OR an obtuse angle
facing a boundary segment (it encroaches on it), and refines the latter by
splitting the segment; Galois calls a triangle bad only for an angle below
30 degrees (Element::isBad) and splits a segment only when the
circumcentre it is inserting falls in the segment's diametral circle (and
starts from the opposite neighbour of an obtuse triangle). yada thus adds
more elements for the same angle (ttimeu100000.2, 30 degrees, 1 thread:
963 568 final elements against Galois's 768 638), so besides the time
ratio the report gives each side's elements added per second. With more
than one thread both are non-deterministic: the final count varies by run.
The initial bad counts are reported by both (yada: initial_bad; Galois:
"bad triangles" of its configuration line).

Self-checks (any failure exits 1): every run exits 0; yada's own check
passed (consistent mesh, every input segment covered, nothing refinable
left bad) with no element given up, its smallest angle at least --angle,
and its thread count as asked; Galois printed "Refinement OK" (its
verifier: no bad triangle left, the mesh consistent; it aborts otherwise),
its Threads parameter is as asked; both sides' initial element counts
agree.

Every round runs, for each thread count, yada and Galois once each, the
order of the two swapped each round (a drift of the machine's speed
touches both alike). Prints per thread count the median seconds of each
side, the median over the rounds of the per-round ratio yada/Galois
(below 1: yada faster), both sides' initial and final element counts, the
elements added per second, and with --json one JSON object as the last
line.
"""
import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GALOIS_APP = "lonestar/scientific/cpu/delaunayrefinement"
GALOIS_ANGLE = 30.0


def fail(msg):
    print(f"yada-vs-galois: {msg}", file=sys.stderr)
    sys.exit(1)


def galois_minangle(src):
    """The MINANGLE a Galois checkout's delaunayrefinement is compiled with."""
    path = os.path.join(src, GALOIS_APP, "Element.h")
    try:
        with open(path) as f:
            m = re.search(r"^#define\s+MINANGLE\s+([0-9.]+)", f.read(), re.M)
    except OSError as e:
        fail(f"cannot read {path}: {e}")
    if not m:
        fail(f"{path} defines no MINANGLE: not the delaunayrefinement this script knows")
    return float(m.group(1))


def build_galois(src):
    """Builds delaunayrefinement-cpu with galois-dmr.sh; returns its path."""
    cmd = ["sh", os.path.join(HERE, "galois-dmr.sh"), src]
    if os.environ.get("GALOIS_BUILD_DIR"):
        cmd.append(os.environ["GALOIS_BUILD_DIR"])
    r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        print(f"yada-vs-galois: {' '.join(cmd)} failed ({r.returncode})", file=sys.stderr)
        sys.exit(r.returncode)
    return r.stdout.strip().splitlines()[-1]


def open_text(base, suffix):
    """BASENAME+suffix, plain or .gz, opened as text; and its path."""
    for path, opener in [(base + suffix, open), (base + suffix + ".gz", gzip.open)]:
        if os.path.isfile(path):
            return opener(path, "rt"), path
    fail(f"neither {base + suffix} nor {base + suffix}.gz exists")


def records(base, suffix):
    """The non-comment lines of a Triangle file, split into fields."""
    f, path = open_text(base, suffix)
    with f:
        rows = [line.split("#", 1)[0].split() for line in f]
    return [r for r in rows if r], path


def convert_mesh(base, out):
    """Writes BASENAME's mesh to OUT.{node,ele,poly}, plain, numbered from 0."""
    node, npath = records(base, ".node")
    ele, epath = records(base, ".ele")
    poly, ppath = records(base, ".poly")
    try:
        n, dim = int(node[0][0]), int(node[0][1])
        if dim != 2 or len(node) < n + 1:
            fail(f"{npath}: expected {n} 2-dimensional vertices")
        ids = [int(r[0]) for r in node[1:n + 1]]
        first = min(ids)
        if sorted(ids) != list(range(first, first + n)) or first not in (0, 1):
            fail(f"{npath}: vertices must be numbered 0..n-1 or 1..n")
        m = int(ele[0][0])
        if len(ele) < m + 1 or any(len(r) < 4 for r in ele[1:m + 1]):
            fail(f"{epath}: expected {m} triangles")
        if int(poly[0][0]) != 0:
            fail(f"{ppath}: the .poly file lists vertices; both programs take them from the .node file")
        s = int(poly[1][0])
        if len(poly) < s + 2 or any(len(r) < 3 for r in poly[2:s + 2]):
            fail(f"{ppath}: expected {s} segments")

        def v(x):
            i = int(x) - first
            if not 0 <= i < n:
                fail(f"{base}: vertex {x} is not in the .node file")
            return i

        tmp = out + ".tmp"
        with open(tmp + ".node", "w") as o:
            o.write(f"{n} 2 0 1\n")
            attrs = int(node[0][2]) if len(node[0]) > 2 else 0
            has_marker = len(node[0]) > 3 and int(node[0][3]) > 0
            for r in node[1:n + 1]:
                marker = r[3 + attrs] if has_marker and len(r) > 3 + attrs else "0"
                o.write(f"{int(r[0]) - first} {r[1]} {r[2]} {marker}\n")
        with open(tmp + ".ele", "w") as o:
            o.write(f"{m} 3 0\n")
            for i, r in enumerate(ele[1:m + 1]):
                o.write(f"{i} {v(r[1])} {v(r[2])} {v(r[3])}\n")
        with open(tmp + ".poly", "w") as o:
            o.write(f"0 2 0 1\n{s} 1\n")
            for i, r in enumerate(poly[2:s + 2]):
                o.write(f"{i} {v(r[1])} {v(r[2])} {r[3] if len(r) > 3 else 0}\n")
            o.write("0\n")
    except (ValueError, IndexError) as e:
        fail(f"{base}: malformed Triangle file ({e})")
    for suffix in [".node", ".ele", ".poly"]:
        # Galois's binary cache of an older copy would shadow the new one.
        if os.path.exists(out + suffix + ".bin"):
            os.remove(out + suffix + ".bin")
        os.replace(tmp + suffix, out + suffix)
    return {"vertices": n, "triangles": m, "segments": s, "renumbered_from": first}


def prepare_mesh(base, cache):
    """The plain 0-based copy of BASENAME in CACHE (made once); its basename."""
    os.makedirs(cache, exist_ok=True)
    out = os.path.join(cache, os.path.basename(base))
    sources = [open_text(base, s)[1] for s in [".node", ".ele", ".poly"]]
    copies = [out + s for s in [".node", ".ele", ".poly"]]
    if all(os.path.isfile(c) for c in copies) and \
            min(os.path.getmtime(c) for c in copies) >= max(os.path.getmtime(s) for s in sources):
        return out
    convert_mesh(base, out)
    return out


def run_yada(exe, mesh, angle, threads, extra, timeout):
    cmd = [exe, "-a", f"{angle:g}", "-i", mesh, "-t", str(threads), "--json", *extra]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(cmd)} ran past {timeout} s")
    if r.returncode != 0:
        fail(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
        fig = out["figures"]
        res = {"seconds": float(out["time_seconds"]), "initial_elements": int(fig["initial_elements"]),
               "initial_bad": int(fig["initial_bad"]), "final_elements": int(fig["final_elements"]),
               "gave_up": int(fig["gave_up"]), "min_angle": fig.get("min_angle"),
               "threads": int(fig["threads"]), "check_passed": bool(out["check_passed"]),
               "check": out.get("check", "")}
    except (ValueError, KeyError, IndexError, TypeError) as e:
        fail(f"{' '.join(cmd)}: no yada JSON line with the expected figures ({e}):\n{r.stdout[-1500:]}")
    if not res["check_passed"]:
        fail(f"{' '.join(cmd)}: yada's self-check failed: {res['check']}")
    if res["gave_up"] != 0:
        fail(f"{' '.join(cmd)}: yada gave up on {res['gave_up']} element(s): bad triangles are left")
    if res["min_angle"] is None or res["min_angle"] < angle - 1e-9:
        fail(f"{' '.join(cmd)}: yada's smallest angle {res['min_angle']} is below {angle}")
    if res["threads"] != threads:
        fail(f"{' '.join(cmd)}: yada ran {res['threads']} thread(s), not {threads}")
    return res


def run_galois(exe, mesh, threads, timeout):
    cmd = [exe, mesh, "-meshGraph", "-t", str(threads)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(cmd)} ran past {timeout} s")
    out = r.stdout
    if r.returncode != 0:
        fail(f"{' '.join(cmd)} failed ({r.returncode}):\n{out[-1500:]}{r.stderr[-1500:]}")

    def find(pattern, what):
        m = re.search(pattern, out, re.M)
        if not m:
            fail(f"{' '.join(cmd)}: no {what} in its output:\n{out[-2000:]}{r.stderr[-500:]}")
        return m

    conf = find(r"^configuration: (\d+) total triangles, (\d+) bad triangles", "configuration line")
    final = find(r"^(\d+) total triangles\s*$", "final triangle count")
    find(r"^Refinement OK\s*$", "\"Refinement OK\" (its verifier did not pass)")
    refine_ms = int(find(r"^STAT, \(NULL\), refine, TMAX, (\d+)", "refine timer").group(1))
    timer0_ms = int(find(r"^STAT, \(NULL\), Timer_0, TMAX, (\d+)", "Timer_0").group(1))
    ran = int(find(r"^PARAM, \(NULL\), Threads, SINGLE, (\d+)", "Threads parameter").group(1))
    if ran != threads:
        fail(f"{' '.join(cmd)}: Galois ran {ran} thread(s), not {threads}")
    stat = {}
    for k in ["Iterations", "Commits", "Conflicts", "Pushes"]:
        m = re.search(rf"^STAT, refine, {k}, TSUM, (\d+)", out, re.M)
        if m:
            stat[k.lower()] = int(m.group(1))
    return {"seconds": refine_ms / 1000.0, "findbad_and_refine_seconds": timer0_ms / 1000.0,
            "initial_elements": int(conf.group(1)), "initial_bad": int(conf.group(2)),
            "final_elements": int(final.group(1)), "threads": ran, **stat}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--galois-bin", help="a built Galois delaunayrefinement-cpu")
    g.add_argument("--galois", help="a Galois checkout, built with scripts/peers/galois-dmr.sh")
    p.add_argument("--yada", default="target/release/examples/yada")
    p.add_argument("--yada-args", default="", help="extra flags for yada, space-separated (e.g. '--shuffle 0')")
    p.add_argument("--mesh", default="/work/shared/stamp-inputs/yada/ttimeu100000.2",
                   help="basename of Triangle .node/.ele/.poly files (plain or .gz)")
    p.add_argument("--cache", default="target/peers/meshes", help="where the plain 0-based copy of the mesh goes")
    p.add_argument("--angle", type=float, default=GALOIS_ANGLE, help="minimum angle; Galois's is fixed at 30")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--timeout", type=int, default=1800, help="seconds allowed to one run")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()

    if a.angle != GALOIS_ANGLE:
        print(f"yada-vs-galois: --angle {a.angle:g}: Galois's delaunayrefinement refines to a fixed "
              f"{GALOIS_ANGLE:g} degrees (#define MINANGLE in {GALOIS_APP}/Element.h, no flag), "
              f"so only --angle {GALOIS_ANGLE:g} compares like with like", file=sys.stderr)
        sys.exit(2)
    try:
        threads = [int(t) for t in a.threads.split(",")]
    except ValueError:
        p.error(f"--threads {a.threads}: give a comma-separated list of integers")
    if a.rounds < 1 or not threads or any(t < 1 for t in threads):
        p.error("--rounds and every thread count must be at least 1")
    if not os.access(a.yada, os.X_OK):
        fail(f"{a.yada} is not an executable yada (build it: cargo build --release --features stamp --example yada)")
    if a.galois:
        if galois_minangle(a.galois) != GALOIS_ANGLE:
            fail(f"{a.galois}: MINANGLE is {galois_minangle(a.galois):g}, not {GALOIS_ANGLE:g}")
        galois = build_galois(a.galois)
    else:
        galois = a.galois_bin
    if not os.access(galois, os.X_OK):
        fail(f"{galois} is not an executable Galois delaunayrefinement-cpu")
    mesh = prepare_mesh(a.mesh, a.cache)
    extra = a.yada_args.split()

    programs = ["yada", "galois"]
    runs = {(n, t): [] for n in programs for t in threads}
    for rnd in range(a.rounds):
        for t in threads:
            k = rnd % len(programs)
            for name in programs[k:] + programs[:k]:
                if name == "yada":
                    runs[(name, t)].append(run_yada(a.yada, mesh, a.angle, t, extra, a.timeout))
                else:
                    runs[(name, t)].append(run_galois(galois, mesh, t, a.timeout))
        if not a.json:
            print(f"round {rnd + 1} of {a.rounds} done", file=sys.stderr)

    rows = []
    for t in threads:
        y, gl = runs[("yada", t)], runs[("galois", t)]
        init = {"yada": y[0]["initial_elements"], "galois": gl[0]["initial_elements"]}
        if any(r["initial_elements"] != init["yada"] for r in y + gl):
            fail(f"{t} thread(s): the initial element counts differ ({init}): the two did not read the same mesh")
        med = {n: statistics.median(r["seconds"] for r in runs[(n, t)]) for n in programs}
        ratio = statistics.median(a_["seconds"] / b["seconds"] for a_, b in zip(y, gl))
        finals = {n: [r["final_elements"] for r in runs[(n, t)]] for n in programs}
        added_per_s = {n: statistics.median((r["final_elements"] - r["initial_elements"]) / r["seconds"]
                                            for r in runs[(n, t)]) for n in programs}
        row = {"threads": t, "median_seconds": med, "yada_over_galois": ratio,
               "initial_elements": init,
               "initial_bad": {n: runs[(n, t)][0]["initial_bad"] for n in programs},
               "final_elements_median": {n: statistics.median(finals[n]) for n in programs},
               "added_elements_per_s_median": added_per_s,
               "galois_findbad_and_refine_seconds_median":
                   statistics.median(r["findbad_and_refine_seconds"] for r in gl),
               "runs": {"yada": [{k: r[k] for k in ["seconds", "final_elements", "min_angle"]} for r in y],
                        "galois": [{k: r[k] for k in ["seconds", "final_elements", "iterations", "conflicts"]
                                    if k in r} for r in gl]}}
        rows.append(row)
        fin = "  ".join(f"{n} {min(finals[n])}" + (f"-{max(finals[n])}" if min(finals[n]) != max(finals[n]) else "")
                        for n in programs)
        print(f"{t} thread(s): yada {med['yada']:.3f} s  galois {med['galois']:.3f} s  |  yada/galois {ratio:.2f}  |  "
              f"elements initial {init['yada']} (both), final {fin}  |  added/s yada {added_per_s['yada'] / 1e3:.0f}k "
              f"galois {added_per_s['galois'] / 1e3:.0f}k")
    if a.json:
        print(json.dumps({"benchmark": "yada-vs-galois", "mesh": a.mesh, "mesh_copy": mesh, "angle": a.angle,
                          "rounds": a.rounds, "yada": a.yada, "yada_args": extra, "galois": galois,
                          "galois_timer": "StatTimer refine (ms)", "yada_timer": "time_seconds (skeleton wall)",
                          "rows": rows}))


if __name__ == "__main__":
    main()
