#!/usr/bin/env python3
"""The scaling page from one sweep: docs/scaling/README.md and its SVG plots.

    python3 scripts/scaling-page.py OUT/scale.json docs/scaling/
    python3 scripts/scaling-page.py docs/scaling/scale.json docs/scaling/ --check

Reads the JSON that `scripts/scale.sh run` writes and writes, into the
folder given, README.md (the machine, its topology, tables of every
figure, the runs that failed or were skipped, and what the figures show)
and one SVG per plot, drawn here by hand. With --check it writes nothing
and exits 1 when the folder's files differ from what it would write (the
test command checks the committed example that way). The output depends
on the JSON alone, so the same JSON always gives the same page.

Standard library only.
"""

import argparse
import html
import json
import math
import os
import sys

STAMP_APPS = ["vacation", "kmeans", "intruder", "genome", "labyrinth", "yada"]
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"]


class BadInput(Exception):
    """The JSON is not a sweep's."""


def fmt(v, digits=2):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.{digits}f}"


def fmt_s(v):
    if v is None:
        return "-"
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def median(xs):
    xs = sorted(xs)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


# ------------------------------------------------------------------ SVG


def line_chart(title, xlabel, ylabel, series, xs, *, ideal=False, hline=None, notes=()):
    """A line chart over thread counts `xs` (log2 axis): `series` is a list
    of (name, {x: y}, dashed) drawn in order; `ideal` adds y = x, `hline` a
    grey line at that y."""
    w, h = 640, 400
    left, right, top, bottom = 64, 170, 40, 56
    pw, ph = w - left - right, h - top - bottom
    xs = sorted(set(xs))
    ys = [y for _, pts, _ in series for y in pts.values() if y is not None and math.isfinite(y)]
    if ideal:
        ys += [min(max(xs), max(ys, default=1) * 1.5)]
    if hline is not None:
        ys.append(hline)
    ymax = nice_ceiling(max(ys, default=1.0))
    lx = [math.log2(x) for x in xs]
    lo, hi = min(lx), max(lx)
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5

    def px(x):
        return left + (math.log2(x) - lo) / (hi - lo) * pw

    def py(y):
        return top + ph - min(y, ymax) / ymax * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{left + pw / 2:.1f}" y="22" text-anchor="middle" font-size="14">{html.escape(title)}</text>',
    ]
    for i in range(5):
        y = ymax * i / 4
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{left + pw}" y2="{py(y):.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{tick(y)}</text>')
    for x in xs:
        out.append(f'<line x1="{px(x):.1f}" y1="{top}" x2="{px(x):.1f}" y2="{top + ph}" stroke="#f0f0f0"/>')
        out.append(f'<text x="{px(x):.1f}" y="{top + ph + 16}" text-anchor="middle">{x}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{h - 14}" text-anchor="middle">{html.escape(xlabel)}</text>')
    out.append(
        f'<text x="16" y="{top + ph / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {top + ph / 2:.1f})">{html.escape(ylabel)}</text>'
    )
    legend = []
    if ideal:
        pts = " ".join(f"{px(x):.1f},{py(x):.1f}" for x in xs)
        out.append(f'<polyline points="{pts}" fill="none" stroke="#999" stroke-dasharray="2,4"/>')
        legend.append(("linear", "#999", "2,4"))
    if hline is not None:
        out.append(
            f'<line x1="{left}" y1="{py(hline):.1f}" x2="{left + pw}" y2="{py(hline):.1f}" '
            'stroke="#999" stroke-dasharray="6,3"/>'
        )
    for i, (name, pts, dashed) in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        dash = "6,3" if dashed else ""
        good = sorted((x, y) for x, y in pts.items() if y is not None and math.isfinite(y))
        if len(good) > 1:
            p = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in good)
            extra = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(f'<polyline points="{p}" fill="none" stroke="{colour}" stroke-width="2"{extra}/>')
        for x, y in good:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{colour}"/>')
        legend.append((name, colour, dash))
    for i, (name, colour, dash) in enumerate(legend):
        y = top + 10 + i * 18
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<line x1="{left + pw + 12}" y1="{y}" x2="{left + pw + 36}" y2="{y}" stroke="{colour}" '
            f'stroke-width="2"{extra}/>'
        )
        out.append(f'<text x="{left + pw + 42}" y="{y + 4}">{html.escape(name)}</text>')
    for i, note in enumerate(notes):
        out.append(
            f'<text x="{left + pw + 12}" y="{top + ph - 6 - 14 * (len(notes) - 1 - i)}" '
            f'font-size="10" fill="#555">{html.escape(note)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def nice_ceiling(v):
    if v <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= v * 1.05:
            return m * e
    return 10 * e


def tick(v):
    return f"{v:.0f}" if v >= 10 or v == int(v) else f"{v:.2g}"


# ------------------------------------------------------------------ reading


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise BadInput(f"{path} is not JSON: {e}") from e
    if not isinstance(data, dict) or data.get("schema") != "skelaff-scale/1" or not isinstance(data.get("runs"), list):
        raise BadInput(f"{path} is not a scaling sweep (scripts/scale.sh run writes one: schema skelaff-scale/1)")
    return data


def runs_of(data, section):
    return [r for r in data["runs"] if r.get("section") == section]


def ok(r):
    return r.get("status") == "ok" and isinstance(r.get("result"), dict)


class Stamp:
    """One application's runs at the size the sweep chose."""

    def __init__(self, data, app):
        self.app = app
        plans = [p for p in runs_of(data, "plan") if p.get("app") == app]
        self.plan = plans[-1] if plans else None
        self.level = self.plan.get("level") if self.plan else None
        runs = [r for r in runs_of(data, "stamp") if r["config"].get("app") == app]
        self.all = runs
        mine = [r for r in runs if r["config"].get("level") == self.level]
        seqs = [r for r in mine if r["config"].get("sequential") and ok(r)]
        self.seq = median([r["result"]["time_seconds"] for r in seqs])
        self.flags = mine[0]["config"].get("flags") if mine else (self.plan or {}).get("flags")
        self.par = [r for r in mine if not r["config"].get("sequential")]

    def cell(self, policy, threads, helpers="off"):
        rs = [
            r
            for r in self.par
            if r["config"]["policy"] == policy and r["config"]["threads"] == threads and r["config"]["helpers"] == helpers
        ]
        return rs

    def time(self, policy, threads, helpers="off"):
        return median([r["result"]["time_seconds"] for r in self.cell(policy, threads, helpers) if ok(r)])

    def speedup(self, policy, threads, helpers="off"):
        t = self.time(policy, threads, helpers)
        return self.seq / t if t and self.seq else None


# ------------------------------------------------------------------ the page


def page(data):
    files = {}
    m = data.get("machine") or {}
    b = data.get("bundle") or {}
    insp = data.get("inspect") or {}
    topo = insp.get("topology") or {}
    threads = sorted(set(data.get("threads") or []))
    policies = data.get("policies") or []
    hw = data.get("helper_workers")
    quick = bool(data.get("quick"))
    md = []
    w = md.append

    w("# Scaling sweep")
    w("")
    if quick:
        w(
            f"> **Example only.** This page comes from a `--quick` run on a {m.get('nproc', '?')}-CPU "
            f"machine (`{m.get('hostname', '?')}`): small inputs, "
            f"{', '.join(map(str, threads))} thread(s), sizes chosen to fit a few minutes. It shows what "
            "the page looks like and that the sweep works end to end; it is **not** evidence of how skelaff "
            "scales. The evidence is a full run on a 16-core machine."
        )
    else:
        w(
            f"A full sweep on `{m.get('hostname', '?')}` ({m.get('nproc', '?')} CPUs, "
            f"{data.get('numa_nodes', '?')} NUMA node(s)), in {fmt(data.get('elapsed_s'), 0)} s of a "
            f"{data.get('budget_s')} s budget."
        )
    w("")
    w(
        "Generated by `python3 scripts/scaling-page.py OUT/scale.json docs/scaling/` from the JSON that "
        "`scripts/scale.sh run` wrote (beside this page as `scale.json`); see the README's section \"Scaling sweep on another machine\". Speedups divide each "
        "application's sequential version's own time (no STM, one thread) by the run's own time "
        "(`time_seconds`: the parallel part, not reading the input); one run per configuration."
    )
    w("")

    # --- machine
    w("## The machine")
    w("")
    w("| | |")
    w("|---|---|")
    mem = m.get("mem_total_kib")
    rows = [
        ("host", m.get("hostname")),
        ("CPU", m.get("cpu_model")),
        ("CPUs (nproc)", m.get("nproc")),
        ("memory", f"{mem / 1048576:.1f} GiB" if isinstance(mem, (int, float)) else None),
        ("OS, kernel", f"{m.get('os') or '?'}, {m.get('kernel') or '?'}"),
        ("automatic NUMA balancing", m.get("numa_balancing")),
        ("transparent huge pages", m.get("thp_enabled")),
        ("CPU frequency governor", m.get("governor")),
        ("swept on", m.get("date")),
        ("bundle", f"commit `{b.get('commit', '?')[:12]}`{' (with uncommitted changes)' if b.get('dirty') else ''}, "
         f"built {b.get('built_at', '?')} with {b.get('rustc', '?')}"),
        ("sweep", f"{'quick, ' if quick else ''}budget {data.get('budget_s')} s, took {fmt(data.get('elapsed_s'), 0)} s"),
    ]
    for k, v in rows:
        w(f"| {k} | {v if v not in (None, '') else '-'} |")
    w("")

    # --- topology
    w("## Topology (hwloc, through `skelaff inspect`)")
    w("")
    nodes = topo.get("nodes") or []
    if not nodes:
        w("`skelaff inspect` gave no topology (see the failed runs below).")
    else:
        w(
            f"{len(nodes)} NUMA node(s), {topo.get('cores', '?')} core(s), {topo.get('pus', '?')} hardware "
            f"thread(s); allowed CPUs {topo.get('allowed_cpus', '?')}, nodes {topo.get('allowed_nodes', '?')}; "
            f"base page {topo.get('page_size', '?')} B, transparent huge page {topo.get('thp_size') or '-'} B."
        )
        w("")
        w("| node | CPUs | memory |")
        w("|---|---|---|")
        for n in nodes:
            w(f"| {n.get('os_index')} | {n.get('cpus') or '(memory only)'} | {(n.get('memory_bytes') or 0) >> 20} MiB |")
        w("")
        dist = topo.get("distances")
        if dist:
            w("Node distances:")
            w("")
            w("| | " + " | ".join(str(n.get("os_index")) for n in nodes) + " |")
            w("|---|" + "---|" * len(nodes))
            for n, row in zip(nodes, dist):
                w(f"| **{n.get('os_index')}** | " + " | ".join(str(d) for d in row) + " |")
        else:
            w("hwloc reports no node distances.")
        w("")
        groups = topo.get("cache_groups") or []
        if groups:
            w("Shared caches (the groups helper threads pair within):")
            w("")
            for i, g in enumerate(groups):
                size = g.get("size")
                w(
                    f"- group {i}: L{g.get('level')}"
                    f"{f' {size >> 20} MiB' if size and size >= 1 << 20 else (f' {size >> 10} KiB' if size else '')}"
                    f", CPUs {g.get('cpus')}"
                )
            w("")
        demo = insp.get("demo") or []
        if demo:
            w("Where each page policy put a region's pages (`skelaff inspect --demo`):")
            w("")
            w("| policy | pages per node | not resident |")
            w("|---|---|---|")
            for d in demo:
                per = ", ".join(f"node {p['node']}: {p['pages']}" for p in d.get("per_node", []))
                w(f"| {d.get('policy')} | {per or '-'} | {d.get('not_resident')} |")
            w("")

    # --- STAMP
    stamps = [Stamp(data, a) for a in STAMP_APPS]
    w("## STAMP applications")
    w("")
    w(
        f"Each application at the largest of its sizes that fitted the time left (the sweep timed its "
        f"sequential version at one size first and scaled the others' known times by that), at {', '.join(map(str, threads))} "
        f"worker(s) under the page policies {', '.join(policies)}, and with helper threads off and on "
        f"at {hw} worker(s) under SkelAff auto. Cells: speedup over the sequential version (run time in s)."
    )
    w("")
    w("| app | size | flags | sequential (s) | " + " | ".join(f"{p} x{t}" for p in policies for t in threads) + " |")
    w("|---|---|---|---|" + "---|" * (len(policies) * len(threads)))
    for s in stamps:
        cells = []
        for p in policies:
            for t in threads:
                tm, sp = s.time(p, t), s.speedup(p, t)
                cells.append("-" if tm is None else (f"{sp:.2f}× ({fmt_s(tm)})" if sp else fmt_s(tm)))
        w(f"| {s.app} | {s.level or '-'} | `{s.flags or '-'}` | {fmt_s(s.seq)} | " + " | ".join(cells) + " |")
    w("")
    for s in stamps:
        series = [(p, {t: s.speedup(p, t) for t in threads}, False) for p in policies]
        hon = s.speedup("auto", hw, "on")
        if hon is not None:
            series.append((f"auto + helpers (x{hw})", {hw: hon}, True))
        if not any(v is not None for _, pts, _ in series for v in pts.values()):
            continue
        name = f"stamp-{s.app}.svg"
        files[name] = line_chart(
            f"{s.app} ({s.level}): speedup over its sequential version",
            "workers",
            "speedup",
            series,
            threads,
            ideal=True,
            hline=1.0,
            notes=[f"sequential {fmt_s(s.seq)} s"],
        )
        w(f"![{s.app}]({name})")
        w("")

    w("### Helper threads")
    w("")
    w(f"SkelAff auto at {hw} worker(s), helpers off and on, run one after the other.")
    w("")
    w("| app | off (s) | on (s) | off / on | shadow units | helper notes |")
    w("|---|---|---|---|---|---|")
    helper_ratios = {}
    for s in stamps:
        off, on = s.time("auto", hw, "off"), s.time("auto", hw, "on")
        ratio = off / on if off and on else None
        if ratio:
            helper_ratios[s.app] = ratio
        shadow, notes = "-", ""
        for r in s.cell("auto", hw, "on"):
            if ok(r):
                hl = (r["result"].get("report") or {}).get("helpers") or {}
                per = hl.get("per_helper") or []
                done = [x.get("units_shadowed") for x in per if isinstance(x, dict)]
                handed = [x.get("units_handed") for x in per if isinstance(x, dict)]
                if done and all(isinstance(d, int) for d in done + handed):
                    shadow = f"{sum(done)} of {sum(handed)} handed"
                notes = "; ".join(str(n) for n in (hl.get("notes") or []))[:160]
        w(f"| {s.app} | {fmt_s(off)} | {fmt_s(on)} | {fmt(ratio)} | {shadow} | {notes or '-'} |")
    w("")

    # --- intset
    ints = runs_of(data, "intset")
    structures = [s for s in ("rb", "hs", "sl") if any(r["config"].get("structure") == s for r in ints)]
    intset_tp = {}
    if structures:
        w("## intset (TinySTM's workload on skelaff's collections)")
        w("")
        w(f"`intset {data.get('intset_args', '')}`: millions of transactions per second (speedup over 1 thread).")
        w("")
        w("| structure | " + " | ".join(f"x{t}" for t in threads) + " | aborts at the most threads |")
        w("|---|" + "---|" * len(threads) + "---|")
        for st in structures:
            tp = {}
            last = None
            for t in threads:
                rs = [r for r in ints if r["config"].get("structure") == st and r["config"].get("threads") == t and ok(r)]
                if rs:
                    tp[t] = median([r["result"]["txs_per_s"] for r in rs])
                    last = rs[-1]["result"]
            intset_tp[st] = tp
            base = tp.get(threads[0]) if threads else None
            cells = [
                f"{tp[t] / 1e6:.2f} ({tp[t] / base:.2f}×)" if t in tp and base else (f"{tp[t] / 1e6:.2f}" if t in tp else "-")
                for t in threads
            ]
            aborts = f"{last['aborts']} of {last['txs'] + last['aborts']}" if last else "-"
            w(f"| {st} | " + " | ".join(cells) + f" | {aborts} |")
        w("")
        files["intset.svg"] = line_chart(
            "intset: throughput over 1 thread",
            "threads",
            "speedup over 1 thread",
            [(st, {t: (v / intset_tp[st][threads[0]]) for t, v in intset_tp[st].items()} if threads[0] in intset_tp[st] else {}, False)
             for st in structures],
            threads,
            ideal=True,
            hline=1.0,
        )
        w("![intset](intset.svg)")
        w("")

    # --- SpMV
    sp = runs_of(data, "spmv")
    spmv_rows = {}
    if sp:
        w("## SpMV beside the STREAM triad")
        w("")
        w(
            f"NAS CG class {data.get('spmv_class')} matrix, CSR (`spmv --nas-class {data.get('spmv_class')} "
            f"{data.get('spmv_args', '')}`); the triad runs on the same team in the same run. GB/s by the "
            "byte model from the median SpMV; the triad's best pass."
        )
        w("")
        w("| placement | threads | SpMV GB/s | triad GB/s (4 KiB) | triad GB/s (THP) | SpMV / triad | correct |")
        w("|---|---|---|---|---|---|---|")
        placements = []
        for r in sp:
            c = r["config"]
            if c.get("placement") not in placements:
                placements.append(c.get("placement"))
            if ok(r):
                res = r["result"]
                spmv_rows[(c["placement"], c["threads"])] = res
                w(
                    f"| {c['placement']} | {c['threads']} | {fmt(res.get('gbs'))} | {fmt(res.get('triad_gbs'))} | "
                    f"{fmt(res.get('triad_thp_gbs'))} | {fmt(res.get('ratio_to_triad'))} | {res.get('correct')} |"
                )
        w("")
        series = [(f"SpMV {p}", {t: spmv_rows[(p, t)]["gbs"] for t in threads if (p, t) in spmv_rows}, False) for p in placements]
        first = placements[0] if placements else None
        series.append(("triad 4 KiB", {t: spmv_rows[(first, t)]["triad_gbs"] for t in threads if (first, t) in spmv_rows}, True))
        series.append(("triad THP", {t: spmv_rows[(first, t)]["triad_thp_gbs"] for t in threads if (first, t) in spmv_rows}, True))
        files["spmv.svg"] = line_chart(f"SpMV (NAS CG class {data.get('spmv_class')}) and the triad", "threads", "GB/s", series, threads)
        w("![spmv](spmv.svg)")
        w("")

    # --- what did not run
    bad = [r for r in data["runs"] if r.get("status") in ("failed", "timeout", "no-json")]
    skipped = [r for r in data["runs"] if r.get("status") == "skipped"]
    plans = runs_of(data, "plan")
    w("## Sizes, failures and skips")
    w("")
    for p in plans:
        sk = ", ".join(f"{x['level']} (predicted {fmt(x['predicted_s'], 0)} s)" for x in p.get("skipped_sizes", []))
        w(f"- {p.get('app')}: size {p.get('level') or 'none'}: {p.get('why')}{f'; left out: {sk}' if sk else ''}")
    if plans:
        w("")
    if not bad and not skipped:
        w("Every run finished with its JSON; none was skipped.")
    for r in bad:
        tail = (r.get("stderr_tail") or "").strip().splitlines()
        w(f"- **{r.get('name')}**: {r.get('status')} (exit {r.get('exit')}, {fmt(r.get('wall_s'))} s): `{tail[-1] if tail else ''}`")
    for r in skipped:
        w(f"- {r.get('name')}: skipped: {r.get('why')}")
    w("")

    # --- what it shows
    w("## What it shows")
    w("")
    for line in findings(data, stamps, helper_ratios, intset_tp, spmv_rows, bad, skipped):
        w(f"- {line}")
    w("")
    files["README.md"] = "\n".join(md).rstrip("\n") + "\n"
    return files


def findings(data, stamps, helper_ratios, intset_tp, spmv_rows, bad, skipped):
    out = []
    threads = sorted(set(data.get("threads") or []))
    policies = data.get("policies") or []
    nodes = data.get("numa_nodes") or 1
    quick = bool(data.get("quick"))
    tmax = max(threads) if threads else None
    if quick:
        out.append(
            "This is a quick run on small inputs: runs of tens of milliseconds, where thread start-up and "
            "the machine's other load decide the ratios. Read it as a check that every part runs, not as figures."
        )
    # Best speedup per application.
    best = []
    for s in stamps:
        pts = [(s.speedup(p, t), p, t) for p in policies for t in threads if s.speedup(p, t)]
        if pts:
            sp, p, t = max(pts)
            best.append((s.app, sp, p, t))
    if best:
        above = [b for b in best if b[1] > 1.05]
        out.append(
            "Best speedup over the sequential version: "
            + "; ".join(f"{a} {sp:.2f}× ({p}, {t} worker{'s' if t > 1 else ''})" for a, sp, p, t in best)
            + f". {len(above)} of {len(best)} applications beat their sequential version by more than 5% somewhere."
        )
    # Scaling from the fewest to the most workers under auto.
    if tmax and len(threads) > 1:
        sc = []
        for s in stamps:
            a, z = s.time("auto", threads[0]), s.time("auto", tmax)
            if a and z:
                sc.append(f"{s.app} {a / z:.2f}×")
        if sc:
            out.append(f"SkelAff auto from {threads[0]} to {tmax} workers (time ratio): " + ", ".join(sc) + ".")
    # Policies.
    if tmax and "auto" in policies and "first-touch" in policies:
        rs = []
        for s in stamps:
            a, f = s.time("auto", tmax), s.time("first-touch", tmax)
            if a and f:
                rs.append((s.app, f / a))
        if rs:
            txt = ", ".join(f"{a} {r:.2f}" for a, r in rs)
            if nodes <= 1:
                out.append(
                    f"First-touch time / auto time at {tmax} workers: {txt}. With one NUMA node every policy "
                    "puts every page on the same node, so these differences are noise and start-up, not placement."
                )
            else:
                wins = [a for a, r in rs if r > 1.05]
                out.append(
                    f"First-touch time / auto time at {tmax} workers ({nodes} nodes): {txt}; SkelAff auto is more "
                    f"than 5% faster for {', '.join(wins) if wins else 'none of them'}."
                )
    if helper_ratios:
        gains = [a for a, r in helper_ratios.items() if r > 1.05]
        out.append(
            f"Helper threads (off time / on time at {data.get('helper_workers')} workers): "
            + ", ".join(f"{a} {r:.2f}" for a, r in helper_ratios.items())
            + f"; they help (more than 5%) {', '.join(gains) if gains else 'none'}."
        )
    if intset_tp and threads and len(threads) > 1:
        parts = []
        for st, tp in intset_tp.items():
            if threads[0] in tp and tmax in tp:
                parts.append(f"{st} {tp[tmax] / tp[threads[0]]:.2f}×")
        if parts:
            out.append(f"intset throughput from {threads[0]} to {tmax} threads: " + ", ".join(parts) + ".")
    if spmv_rows:
        mx = max(t for _, t in spmv_rows)
        res = [(p, r) for (p, t), r in spmv_rows.items() if t == mx]
        for p, r in res:
            out.append(
                f"SpMV ({p}) at {mx} threads: {fmt(r.get('gbs'))} GB/s, {fmt(r.get('ratio_to_triad'))} of the triad "
                f"({fmt(r.get('triad_gbs'))} GB/s) measured in the same run; results {'correct' if r.get('correct') else 'WRONG'}."
            )
        groups = ((data.get("inspect") or {}).get("topology") or {}).get("cache_groups") or []
        llc = max((g.get("size") or 0 for g in groups), default=0)
        big = [r for r in spmv_rows.values() if r.get("ratio_to_triad", 0) > 1 and r.get("model_bytes")]
        if big and llc and min(r["model_bytes"] for r in big) < llc * len(groups):
            out.append(
                f"SpMV above the triad: what one multiply reads ({big[0]['model_bytes'] / 1e6:.0f} MB) fits in the "
                f"last-level caches ({len(groups)} x {llc >> 20} MiB) and the triad's arrays "
                f"({big[0].get('triad_mib_per_array')} MiB each) do not, so this sets cache against memory bandwidth "
                "(the full sweep's class B matrix does not fit)."
            )
        mn = min(t for _, t in spmv_rows)
        if mn != mx and ("masa", mn) in spmv_rows and ("masa", mx) in spmv_rows:
            a, z = spmv_rows[("masa", mn)], spmv_rows[("masa", mx)]
            out.append(
                f"Bandwidth from {mn} to {mx} threads: SpMV {z['gbs'] / a['gbs']:.2f}×, triad "
                f"{z['triad_gbs'] / a['triad_gbs']:.2f}× (memory-bound kernels scale with the bandwidth the "
                "threads reach, not with the thread count)."
            )
    failed_checks = [
        r.get("name") for r in data["runs"] if isinstance(r.get("result"), dict) and r["result"].get("check_passed") is False
    ]
    if failed_checks:
        out.append(f"Self-checks FAILED in: {', '.join(failed_checks)}.")
    else:
        out.append("Every run that finished passed its self-check.")
    if bad or skipped:
        out.append(f"{len(bad)} run(s) failed or timed out and {len(skipped)} were skipped for time (listed above).")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="the sweep's JSON (OUT/scale.json)")
    ap.add_argument("out", help="the folder to write README.md and the plots into (docs/scaling/)")
    ap.add_argument("--check", action="store_true", help="write nothing; fail when the folder differs from what would be written")
    args = ap.parse_args()
    try:
        data = load(args.json)
        files = page(data)
    except BadInput as e:
        print(f"scaling-page: {e}", file=sys.stderr)
        return 2
    except (KeyError, TypeError) as e:
        print(f"scaling-page: {args.json} lacks what a sweep writes ({type(e).__name__}: {e})", file=sys.stderr)
        return 2
    if args.check:
        stale = []
        for name, text in sorted(files.items()):
            path = os.path.join(args.out, name)
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() != text:
                        stale.append(name)
            except OSError:
                stale.append(name)
        if stale:
            print(
                f"scaling-page: {', '.join(stale)} in {args.out} differ from what {args.json} gives; regenerate with: "
                f"python3 scripts/scaling-page.py {args.json} {args.out}",
                file=sys.stderr,
            )
            return 1
        print(f"scaling-page: {args.out} matches {args.json} ({len(files)} files)")
        return 0
    os.makedirs(args.out, exist_ok=True)
    for name, text in sorted(files.items()):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write(text)
    print(f"scaling-page: wrote {', '.join(sorted(files))} in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
