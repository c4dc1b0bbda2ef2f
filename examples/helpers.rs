//! Helper threads (paper §4.2): what they buy on a workload where
//! prefetching must pay, what they cost when idle, and what they do for the
//! STAMP applications, each beside the same run without helpers.
//!
//! ```text
//! cargo run --release --features stamp --example helpers -- [--what chase,idle,stamp] [--nodes N] [--hops H]
//!     [--units U] [--runs R] [--lifespans 16,64,...] [--apps A,B] [--stamp-threads T] [--json]
//! ```
//!
//! - `chase`: units that follow `--hops` links through a random cycle of
//!   `--nodes` cache-line nodes (512 MiB by default, far beyond any real
//!   last-level cache). First the plain pointer chase, cold and warm (a
//!   structure of 1 MiB), in ns per hop, to show the big one is cold; then
//!   one worker with helpers off, on, on with a prefetch hint, and on with
//!   adaptive tuning, rounds interleaved, fresh units each run; the ratio
//!   off / on is the speedup. `--lifespans` adds a sweep of fixed lifespans.
//! - `idle`: units whose shadow stops after one read, so the helper idles
//!   for most of each unit: the worker's time per unit with helpers off and
//!   with the idle policies spin-yield-park (default), park at once, and
//!   spin only, for several unit lengths; plus the helper's CPU time.
//! - `stamp`: every STAMP application's small input (or those `--apps`
//!   names) with helpers off, off beside an idle thread parked on the
//!   helper's CPU (the control), and on, interleaved, and the helper
//!   figures. `off/on` is what helpers cost or buy; `idle/on` leaves out
//!   what any parked thread costs the run on this machine.
//!
//! Prints tables and, with `--json`, one JSON object as the last line.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{Value, json};
use skelaff::helpers::{HelperConfig, IdlePolicy, Prefetch, ShadowConfig};
use skelaff::stm::{TVar, TxError, TxOps};
use skelaff::worklist::{
    Builder, HelperFigures, HelperPlace, HelperSite, Helpers, ProcessCtx, RunReport, Skeleton, WorkerInfo,
};

use skelaff_bench_support::{chase, median};

/// The applications' allocations follow each worker's page policy, as in
/// `skelaff run`: the STAMP figures are then those of the CLI's runs (with
/// the C library's allocator, a helper's shadow of yada spent a fifth of
/// its time consolidating free lists the worker's frees had filled).
#[global_allocator]
static ALLOC: skelaff::numa::alloc::NumaAlloc = skelaff::numa::alloc::NumaAlloc::new();

#[derive(Parser, Debug)]
struct Args {
    /// Which figures: chase, idle, stamp (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "chase,idle,stamp")]
    what: Vec<String>,
    /// Nodes of the chase structure (64 bytes each).
    #[arg(long, default_value_t = 8 << 20, value_parser = clap::value_parser!(u64).range(2..=(1 << 28)))]
    nodes: u64,
    /// Links followed per unit.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    hops: u32,
    /// Plain computation per hop (multiply-adds).
    #[arg(long, default_value_t = 0)]
    work: u32,
    /// Units per chase run.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    units: u64,
    /// Rounds (each runs every configuration once; medians are reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Also sweep these fixed lifespans on the chase.
    #[arg(long, value_delimiter = ',')]
    lifespans: Vec<u64>,
    /// Only these STAMP applications (comma-separated; default: all).
    #[arg(long, value_delimiter = ',')]
    apps: Vec<String>,
    /// Threads for the STAMP runs (1 leaves a CPU for the helper on a 2-CPU machine).
    #[arg(long, default_value_t = 1)]
    stamp_threads: usize,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

/// Every helper's figures of a run, summed (zeros when no helper ran).
fn helpers_total(r: &RunReport) -> HelperFigures {
    r.helpers.total().unwrap_or_else(|| HelperFigures::new(HelperPlace { cpu: None, site: HelperSite::Unpinned }))
}

/// The first worker's CPU time, when its counters were on.
fn worker_clock(r: &RunReport) -> Option<u64> {
    r.helpers.per_worker.first().and_then(|c| c.task_clock_ns)
}

/// Fixed settings (no tuning), with counters so the worker's CPU time is reported.
fn fixed(lifespan: u64, prefetch: Prefetch) -> HelperConfig {
    HelperConfig {
        shadow: ShadowConfig { lifespan, prefetch, ..ShadowConfig::default() },
        adaptive: None,
        counters: true,
        ..HelperConfig::default()
    }
}

fn chase_figures(args: &Args) -> Result<Value, String> {
    let nodes = usize::try_from(args.nodes).map_err(|_| "--nodes too large for this machine".to_owned())?;
    let t = Instant::now();
    let big = chase::Chase::new(nodes, args.hops, args.work, 1);
    let small = chase::Chase::new(1 << 14, args.hops, args.work, 2);
    println!(
        "chase: {} nodes ({} MiB) built in {:.1} s; {} hops per unit, {} units per run",
        big.node_count(),
        (big.node_count() * 64) >> 20,
        t.elapsed().as_secs_f64(),
        args.hops,
        args.units
    );
    // Is the big structure cold? Plain loads, ns per hop, beside a 1 MiB one.
    let probe = 2000.min(args.units);
    let _ = small.plain_ns_per_hop(0..probe);
    let warm = small.plain_ns_per_hop(0..probe);
    let cold = big.plain_ns_per_hop(1_000_000_000..1_000_000_000 + probe);
    let rewalk = big.plain_ns_per_hop(1_000_000_000..1_000_000_000 + probe);
    // Does a second thread chasing elsewhere slow the first one down (a
    // shared core, memory bandwidth)? On a machine where helpers can pay it
    // should not.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let beside = std::thread::scope(|s| {
        s.spawn(|| {
            let mut u = 2_000_000_000u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                big.plain_ns_per_hop(u..u + 10);
                u += 10;
            }
        });
        let ns = big.plain_ns_per_hop(3_000_000_000..3_000_000_000 + probe);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        ns
    });
    println!(
        "plain pointer chase, ns/hop: 1 MiB structure (warm) {warm:.1}, {} MiB fresh units {cold:.1} ({:.1}x warm), the same units again {rewalk:.1}, with a second thread chasing elsewhere {beside:.1}",
        (big.node_count() * 64) >> 20,
        cold / warm
    );

    let mut configs: Vec<(String, Option<(Helpers, HelperConfig)>)> = vec![
        ("off (run)".to_owned(), None),
        ("off (run_with)".to_owned(), Some((Helpers::Off, HelperConfig { counters: true, ..HelperConfig::default() }))),
        ("on".to_owned(), Some((Helpers::On, fixed(ShadowConfig::DEFAULT_LIFESPAN, Prefetch::Load)))),
        ("on, prefetch hint".to_owned(), Some((Helpers::On, fixed(ShadowConfig::DEFAULT_LIFESPAN, Prefetch::Hint)))),
        (
            "on, hint + STM locks".to_owned(),
            Some((Helpers::On, fixed(ShadowConfig::DEFAULT_LIFESPAN, Prefetch::HintLocks))),
        ),
        ("on, adaptive".to_owned(), Some((Helpers::On, HelperConfig::default()))),
    ];
    for &l in &args.lifespans {
        configs.push((format!("on, lifespan {l}"), Some((Helpers::On, fixed(l, Prefetch::Load)))));
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut last: Vec<Option<RunReport>> = vec![None; configs.len()];
    let mut next_unit = 0u64;
    let mut totals = std::collections::HashSet::new();
    for _ in 0..args.runs {
        for (i, (_, c)) in configs.iter().enumerate() {
            // Fresh units every run, so no run finds another's lines in cache.
            let units = next_unit..next_unit + args.units;
            next_unit += args.units;
            let (d, total, report) = chase::run(&big, units.clone(), c.as_ref().map(|(h, cfg)| (*h, cfg)));
            // The same units without helpers must give the same total.
            if i == 2 {
                let (_, plain, _) = chase::run(&big, units, None);
                totals.insert(plain == total);
            }
            times[i].push(d.as_secs_f64());
            last[i] = Some(report);
        }
    }
    if totals.contains(&false) {
        return Err("the chase's result differs with helpers on".to_owned());
    }
    let hops_per_run = args.units as f64 * f64::from(args.hops);
    let base = median(&times[0]);
    println!(
        "{:>22} {:>9} {:>8} {:>9} {:>10} {:>10} {:>10} {:>12}",
        "one worker", "ns/hop", "off/this", "shadowed", "completed", "overtaken", "lifespan", "prefetched"
    );
    let mut rows = Vec::new();
    for (i, (name, _)) in configs.iter().enumerate() {
        let m = median(&times[i]);
        let r = last[i].as_ref().expect("ran");
        let ns = m * 1e9 / hops_per_run;
        let h = helpers_total(r);
        println!(
            "{name:>22} {ns:>9.1} {:>7.2}x {:>9} {:>10} {:>10} {:>10} {:>12}",
            base / m,
            h.units_shadowed,
            h.ends.completed,
            h.ends.overtaken,
            h.ends.lifespan,
            h.words_prefetched
        );
        rows.push(json!({
            "config": name,
            "ns_per_hop": ns,
            "speedup_vs_off": base / m,
            "seconds_median": m,
            "helper": r.helpers.per_helper.first(),
            "worker_counters": r.helpers.per_worker.first(),
        }));
    }
    if let Some(r) = &last[2] {
        for n in &r.helpers.notes {
            println!("note: {n}");
        }
        let (off_clock, on_clock) = (last[1].as_ref().and_then(worker_clock), worker_clock(r));
        if let (Some(a), Some(b)) = (off_clock, on_clock) {
            println!("worker task clock, last run: off {:.3} s, on {:.3} s", a as f64 / 1e9, b as f64 / 1e9);
        }
    }
    Ok(json!({
        "nodes": big.node_count(),
        "bytes": big.node_count() * 64,
        "hops": args.hops,
        "work": args.work,
        "units": args.units,
        "plain_ns_per_hop": {"warm_1mib": warm, "cold": cold, "same_units_again": rewalk, "cold_over_warm": cold / warm, "cold_with_a_second_chaser": beside},
        "results": rows,
        "notes": last[2].as_ref().map(|r| r.helpers.notes.clone()),
    }))
}

/// A unit of `segments` reads, each followed by `spin` of computation; its
/// shadow stops after the first read (lifespan 1), so the helper idles for
/// the rest of the unit.
struct Segments {
    x: TVar<u64>,
    segments: u32,
    spin: Duration,
}

impl Skeleton for Segments {
    type Unit = u64;
    type Shared = ();
    type PerWorker = ();
    fn init_worker(&self, _: &(), _: &WorkerInfo) {}
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        _: &u64,
        _: &mut (),
        _: &'t (),
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        for _ in 0..self.segments {
            std::hint::black_box(tx.read(&self.x)?);
            let t = Instant::now();
            while t.elapsed() < self.spin {
                std::hint::spin_loop();
            }
        }
        Ok(())
    }
}

fn idle_figures(args: &Args) -> Value {
    let policies: [(&str, Option<IdlePolicy>); 4] = [
        ("off", None),
        ("spin-yield-park (default)", Some(IdlePolicy::default())),
        ("park at once", Some(IdlePolicy { spin: Duration::ZERO, yield_for: Duration::ZERO })),
        ("spin only", Some(IdlePolicy { spin: Duration::from_secs(3600), yield_for: Duration::ZERO })),
    ];
    println!(
        "{:>9} {:>26} {:>12} {:>10} {:>10} {:>14}",
        "unit", "idle policy", "ns/unit", "vs off", "wakeups", "helper CPU %"
    );
    let mut rows = Vec::new();
    for unit_us in [10u64, 100, 1000] {
        let skel = Segments { x: TVar::new(1), segments: 10, spin: Duration::from_micros(unit_us / 10) };
        let units = (20_000 / unit_us).max(200);
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); policies.len()];
        let mut last: Vec<Option<RunReport>> = vec![None; policies.len()];
        for _ in 0..args.runs {
            for (i, (_, p)) in policies.iter().enumerate() {
                let cfg = HelperConfig {
                    shadow: ShadowConfig { lifespan: 1, ..ShadowConfig::default() },
                    idle: p.unwrap_or_default(),
                    adaptive: None,
                    counters: true,
                    ..HelperConfig::default()
                };
                let mut wl = Builder::new()
                    .threads(1)
                    .helpers(if p.is_some() { Helpers::On } else { Helpers::Off })
                    .build(&skel, &())
                    .expect("one thread");
                wl.add_work_units(0..units);
                let t = Instant::now();
                let r = wl.run_with(&skelaff::helpers::HelperThreads::new(cfg).expect("valid")).expect("cannot fail");
                times[i].push(t.elapsed().as_secs_f64());
                last[i] = Some(r);
            }
        }
        let base = median(&times[0]);
        for (i, (name, _)) in policies.iter().enumerate() {
            let m = median(&times[i]);
            let r = last[i].as_ref().expect("ran");
            let h = helpers_total(r);
            let cpu = h.task_clock_ns.unwrap_or(0) as f64 / (r.wall.as_secs_f64() * 1e9) * 100.0;
            let ns = m * 1e9 / units as f64;
            println!(
                "{:>7}µs {name:>26} {ns:>12.0} {:>9.3}x {:>10} {:>13.1}%",
                unit_us,
                m / base,
                h.worker_wakeups,
                if i == 0 { 0.0 } else { cpu }
            );
            rows.push(json!({
                "unit_us": unit_us,
                "policy": name,
                "ns_per_unit": ns,
                "ratio_vs_off": m / base,
                "worker_wakeups": h.worker_wakeups,
                "idle_parks": h.idle_parks,
                "helper_cpu_percent": if i == 0 { 0.0 } else { cpu },
            }));
        }
    }
    json!(rows)
}

fn stamp_figures(args: &Args) -> Result<Value, String> {
    let mut apps = skelaff::stamp::registry();
    if let Some(unknown) = args.apps.iter().find(|a| !apps.iter().any(|e| e.name == a.as_str())) {
        let known: Vec<_> = apps.iter().map(|e| e.name).collect();
        return Err(format!("--apps: no application named {unknown:?} (known: {})", known.join(", ")));
    }
    if !args.apps.is_empty() {
        apps.retain(|e| args.apps.iter().any(|a| a == e.name));
    }
    if apps.is_empty() {
        println!("stamp: no applications are registered in this build");
        return Ok(json!([]));
    }
    println!(
        "{:>10} {:>10} {:>10} {:>10} {:>9} {:>11} {:>9} {:>10} {:>11} {:>11} {:>9}",
        "app",
        "off s",
        "idle s",
        "on s",
        "off/on",
        "off/idle",
        "idle/on",
        "shadowed",
        "completed",
        "prefetched",
        "skipped"
    );
    let mut rows = Vec::new();
    for app in apps {
        let run = |h: Helpers| -> Result<skelaff::stamp::Outcome, String> {
            let common = skelaff::stamp::CommonArgs { helpers: h, ..Default::default() };
            let out = (app.run_small)(args.stamp_threads, &common).map_err(|e| format!("{}: {e}", app.name))?;
            if let Err(e) = &out.check {
                return Err(format!("{} failed its self-check with helpers {h}: {e}", app.name));
            }
            Ok(out)
        };
        // One run first (not counted) to learn the helper's CPU: the
        // control's idle thread parks there.
        let helper_cpu = run(Helpers::On)?.report.and_then(|r| r.helpers.per_helper.first().and_then(|h| h.place.cpu));
        // 0: helpers off; 1: helpers off with an idle thread parked on the
        // helper's CPU (the control); 2: helpers on.
        let mut t = [Vec::new(), Vec::new(), Vec::new()];
        let mut last = None;
        for round in 0..args.runs {
            // Forwards, then backwards (ABBA): the later runs of a round tend
            // to be slower on this machine, and a fixed order charged that to
            // helpers on (0.88-0.92 instead of 0.95-0.96 on yada and vacation).
            let order = if round % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
            for i in order {
                let idle = (i == 1).then(|| IdleThread::start(helper_cpu));
                let out = run(if i == 2 { Helpers::On } else { Helpers::Off })?;
                drop(idle);
                t[i].push(out.time.as_secs_f64());
                if i == 2 {
                    last = out.report;
                }
            }
        }
        let (off, idle, on) = (median(&t[0]), median(&t[1]), median(&t[2]));
        // The median of each round's own ratio: what runs back to back
        // say, free of drift between rounds.
        let paired = |a: usize, b: usize| median(&t[a].iter().zip(&t[b]).map(|(x, y)| x / y).collect::<Vec<_>>());
        let (off_on, off_idle, idle_on) = (paired(0, 2), paired(0, 1), paired(1, 2));
        let r = last.ok_or_else(|| format!("{}: no report", app.name))?;
        let h = helpers_total(&r);
        println!(
            "{:>10} {off:>10.4} {idle:>10.4} {on:>10.4} {off_on:>8.3}x {off_idle:>10.3}x {idle_on:>8.3}x {:>10} {:>11} {:>11} {:>9}",
            app.name, h.units_shadowed, h.ends.completed, h.words_prefetched, h.units_skipped_off
        );
        rows.push(json!({
            "app": app.name,
            "threads": args.stamp_threads,
            "off_seconds": off,
            "idle_thread_seconds": idle,
            "on_seconds": on,
            "speedup_on_vs_off": off_on,
            "speedup_idle_thread_vs_off": off_idle,
            "speedup_on_vs_idle_thread": idle_on,
            "ratio_of_medians": off / on,
            "helper": r.helpers.per_helper.first(),
        }));
    }
    Ok(json!(rows))
}

/// The control of the STAMP figures: a thread that does nothing but park
/// on the helper's CPU while a helpers-off run goes on. On the 2-vCPU
/// build VMs one parked thread in the process costs a 10 ms run about as
/// much as a helper that never helps, so `idle/on` is the helper's own
/// cost and `off/idle` that of a parked thread.
struct IdleThread {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl IdleThread {
    fn start(cpu: Option<usize>) -> IdleThread {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("idle-control".into())
            .spawn(move || {
                if let Some(c) = cpu {
                    // Unpinned, it still parks: the control stays meaningful.
                    let _ = skelaff::numa::pin::pin_to_cpu(c);
                }
                let _ = ready_tx.send(());
                while !flag.load(Ordering::Acquire) {
                    std::thread::park();
                }
            })
            .ok();
        // Started (and parked, or about to) before the run begins.
        let _ = ready_rx.recv_timeout(Duration::from_secs(1));
        IdleThread { stop, handle }
    }
}

impl Drop for IdleThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    for w in &args.what {
        if !["chase", "idle", "stamp"].contains(&w.as_str()) {
            eprintln!("helpers: unknown figure set `{w}`; allowed: chase, idle, stamp");
            return ExitCode::from(2);
        }
    }
    if args.lifespans.iter().any(|&l| l == 0 || l > skelaff::helpers::MAX_LIFESPAN) {
        eprintln!("helpers: lifespans must be 1 to {}", skelaff::helpers::MAX_LIFESPAN);
        return ExitCode::from(2);
    }
    if args.stamp_threads == 0 {
        eprintln!("helpers: --stamp-threads must be at least 1");
        return ExitCode::from(2);
    }
    let mut out = serde_json::Map::new();
    if args.what.iter().any(|w| w == "chase") {
        match chase_figures(&args) {
            Ok(v) => {
                out.insert("chase".into(), v);
            }
            Err(e) => {
                eprintln!("helpers: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if args.what.iter().any(|w| w == "idle") {
        out.insert("idle".into(), idle_figures(&args));
    }
    if args.what.iter().any(|w| w == "stamp") {
        match stamp_figures(&args) {
            Ok(v) => {
                out.insert("stamp".into(), v);
            }
            Err(e) => {
                eprintln!("helpers: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if args.json {
        println!("{}", Value::Object(out));
    }
    ExitCode::SUCCESS
}
