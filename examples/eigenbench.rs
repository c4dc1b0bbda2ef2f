//! Eigenbench (Hong et al., IISWC 2010) on skelaff-stm: orthogonal knobs
//! for STM studies.
//!
//! Three arrays: a *hot* array shared by every thread (transactional), a
//! *mild* array per thread (transactional, never shared: conflict-free
//! transactional work), and a *cold* array per thread (plain memory, no
//! STM). Each transaction makes `r1`/`w1` accesses to the hot array, `r2`/`w2`
//! to its mild array, `r3i`/`w3i` to its cold array, with `nopi` no-op
//! padding between accesses; between transactions each thread makes
//! `r3o`/`w3o` cold accesses and `nopo` no-ops. With probability
//! `locality` an access goes to one of the last few addresses this thread
//! used in that array. Accesses are shuffled in each transaction.
//!
//! Every write increments its word, so the run checks itself: the hot and
//! mild arrays must sum to the committed writes, and the cold arrays to the
//! outside writes plus the inside writes of every attempt (plain writes are
//! not rolled back). Exit status 1 if not.
//!
//! STM² knobs (Rico et al.): `--nlocal` private accesses after each
//! transactional access inside the transaction (N_local), `--ep` the
//! fraction of time outside transactions (calibrated once against plain
//! transactions, then the same no-op count for every mode), and
//! `--validate-every N` a read-set validation every N transactional
//! accesses (1:N). `--assist off,on,on+throttle --repeat 5` runs each mode
//! (`on+park`, `on+pause` and `on+help` turn on one throttling lever each)
//! five times, interleaved, in this process, and reports each mode's median
//! time and its ratio to `off`.
//!
//! ```sh
//! cargo run --release --example eigenbench -- -n 2 --loops 200000 --a1 1024 --r1 8 --w1 2 --json
//! cargo run --release --example eigenbench -- -n 1 --loops 20000 --r1 0 --w1 0 --r2 18 --w2 2 \
//!     --nlocal 100 --assist off,on,on+throttle --repeat 5 --json
//! ```

use std::fmt;
use std::process::ExitCode;
use std::str::FromStr;
use std::time::Instant;

use clap::Parser;
use serde::Serialize;
use skelaff::numa;
use skelaff::stm::{self, AbortReason, Assist, Config, Mode, Stats, TVar, Throttle, TxOps};
use skelaff_bench_support::median;

/// How a run's transactions are assisted (`--assist`): plain, or with an
/// auxiliary thread and a set of throttling levers (each lever alone, so
/// its effect can be measured on its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AssistMode {
    /// Plain.
    Off,
    /// An auxiliary thread validates, with these levers.
    On(Throttle),
}

impl AssistMode {
    const NAMES: &'static [&'static str] = &["off", "on", "on+throttle", "on+park", "on+pause", "on+help"];
    const LEVER: Throttle = Throttle::NONE;
    /// Each name's mode, in [`Self::NAMES`] order.
    const MODES: [AssistMode; 6] = [
        AssistMode::Off,
        AssistMode::On(Throttle::NONE),
        AssistMode::On(Throttle::ALL),
        AssistMode::On(Throttle { park_idle: true, ..Self::LEVER }),
        AssistMode::On(Throttle { pause_at_commit: true, ..Self::LEVER }),
        AssistMode::On(Throttle { help_when_full: true, ..Self::LEVER }),
    ];

    /// One run with `base`'s settings in this mode (plain, or assisted
    /// with these levers: the transaction's mode is its type).
    fn run(self, args: &Args, base: &Config) -> Option<Run> {
        match self {
            AssistMode::Off => run_once(args, base),
            AssistMode::On(levers) => run_once(args, &base.assisted().throttle(levers)),
        }
    }

    fn name(self) -> &'static str {
        Self::MODES.iter().position(|m| *m == self).map_or("on+custom", |i| Self::NAMES[i])
    }
}

impl fmt::Display for AssistMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AssistMode {
    type Err = stm::ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::NAMES.iter().position(|n| *n == s).map(|i| Self::MODES[i]).ok_or_else(|| {
            stm::ConfigError::UnknownName(stm::UnknownName {
                what: "assist mode",
                given: s.to_owned(),
                allowed: Self::NAMES,
            })
        })
    }
}

impl Serialize for AssistMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Eigenbench: hot/mild/cold arrays, reads and writes inside and outside
/// transactions.
#[derive(Debug, Clone, Parser)]
#[command(name = "eigenbench")]
struct Args {
    /// Threads.
    #[arg(short = 'n', long, default_value_t = 2)]
    threads: usize,
    /// Transactions per thread.
    #[arg(long, default_value_t = 100_000)]
    loops: u64,
    /// Hot array size (words, shared).
    #[arg(long, default_value_t = 4096)]
    a1: usize,
    /// Mild array size (words, per thread).
    #[arg(long, default_value_t = 65536)]
    a2: usize,
    /// Cold array size (words, per thread).
    #[arg(long, default_value_t = 65536)]
    a3: usize,
    /// Hot reads per transaction.
    #[arg(long, default_value_t = 8)]
    r1: u32,
    /// Hot writes per transaction.
    #[arg(long, default_value_t = 2)]
    w1: u32,
    /// Mild reads per transaction.
    #[arg(long, default_value_t = 8)]
    r2: u32,
    /// Mild writes per transaction.
    #[arg(long, default_value_t = 2)]
    w2: u32,
    /// Cold reads inside a transaction.
    #[arg(long, default_value_t = 0)]
    r3i: u32,
    /// Cold writes inside a transaction.
    #[arg(long, default_value_t = 0)]
    w3i: u32,
    /// Cold reads between transactions.
    #[arg(long, default_value_t = 0)]
    r3o: u32,
    /// Cold writes between transactions.
    #[arg(long, default_value_t = 0)]
    w3o: u32,
    /// No-ops after each access inside a transaction.
    #[arg(long, default_value_t = 0)]
    nopi: u32,
    /// No-ops between transactions.
    #[arg(long, default_value_t = 0)]
    nopo: u32,
    /// Probability (0..=1) that an access reuses one of the last 8 addresses.
    #[arg(long, default_value_t = 0.0)]
    locality: f64,
    /// RNG seed.
    #[arg(short = 's', long, default_value_t = 1)]
    seed: u64,
    /// Contention manager: suicide or backoff.
    #[arg(short = 'c', long = "contention-manager", default_value = "suicide")]
    cm: String,
    /// Private (non-transactional) accesses after each transactional
    /// access, inside the transaction (STM²'s N_local).
    #[arg(long, default_value_t = 0)]
    nlocal: u32,
    /// Fraction of the time spent outside transactions, 0 <= ep < 1 (the
    /// embarrassingly parallel phases): sets --nopo by calibration against
    /// plain transactions, once, for every mode.
    #[arg(long)]
    ep: Option<f64>,
    /// Validate the read set every N transactional accesses (1:N; 0: never).
    #[arg(long, default_value_t = 0)]
    validate_every: u32,
    /// Assist modes, comma-separated: off, on (no throttling lever),
    /// on+throttle (every lever), on+park, on+pause, on+help (one lever:
    /// park an idle auxiliary; pause at commit; help a full ring).
    #[arg(long, value_delimiter = ',', default_value = "off")]
    assist: Vec<AssistMode>,
    /// Runs of each mode, interleaved (the median is reported).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Do not pin worker t to the t-th allowed CPU.
    #[arg(long)]
    no_pin: bool,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, thiserror::Error)]
enum ArgError {
    #[error("thread count {0} is not allowed: use 1..={max}", max = stm::MAX_THREADS)]
    Threads(usize),
    #[error("array {name} has size 0 but the run accesses it: give it at least 1 word")]
    EmptyArray { name: &'static str },
    #[error("locality {0} is not a probability: use 0.0..=1.0")]
    Locality(f64),
    #[error("--ep {0} is not a fraction of time below 1: use 0.0..1.0")]
    Ep(f64),
    #[error("--repeat 0: give at least 1 run per mode")]
    Repeat,
    #[error(transparent)]
    Config(#[from] stm::ConfigError),
}

impl Args {
    fn check(&self) -> Result<Config, ArgError> {
        if self.threads == 0 || self.threads > stm::MAX_THREADS {
            return Err(ArgError::Threads(self.threads));
        }
        if self.a1 == 0 && self.r1 + self.w1 > 0 {
            return Err(ArgError::EmptyArray { name: "a1 (hot)" });
        }
        if self.a2 == 0 && self.r2 + self.w2 > 0 {
            return Err(ArgError::EmptyArray { name: "a2 (mild)" });
        }
        if self.a3 == 0 && self.r3i + self.w3i + self.r3o + self.w3o > 0 {
            return Err(ArgError::EmptyArray { name: "a3 (cold)" });
        }
        if !(0.0..=1.0).contains(&self.locality) {
            return Err(ArgError::Locality(self.locality));
        }
        if let Some(ep) = self.ep {
            if !(0.0..1.0).contains(&ep) {
                return Err(ArgError::Ep(ep));
            }
        }
        if self.repeat == 0 {
            return Err(ArgError::Repeat);
        }
        Ok(Config::new().contention(self.cm.parse()?))
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        ((self.next() >> 11) % n as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// Picks indices with the locality knob: the last 8 picks are reused with
/// probability `locality`.
struct Picker {
    recent: [usize; 8],
    filled: usize,
    next: usize,
}

impl Picker {
    fn new() -> Self {
        Picker { recent: [0; 8], filled: 0, next: 0 }
    }
    fn pick(&mut self, rng: &mut Rng, len: usize, locality: f64) -> usize {
        if self.filled > 0 && rng.chance(locality) {
            return self.recent[rng.below(self.filled)];
        }
        let i = rng.below(len);
        self.recent[self.next] = i;
        self.next = (self.next + 1) % 8;
        self.filled = (self.filled + 1).min(8);
        i
    }
}

/// One planned access of a transaction: to which array, read or write.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    HotR,
    HotW,
    MildR,
    MildW,
    ColdR,
    ColdW,
}

#[inline(never)]
fn nops(n: u32) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

#[derive(Default)]
struct ThreadOut {
    stats: Stats,
    cold_inside_writes: u64,
    cold_sum: u64,
    mild_sum: u64,
    checksum: u64,
}

/// Words of each thread's private array for the N_local accesses.
const LOCAL_WORDS: usize = 1024;

fn worker<M: Mode>(a: &Args, cfg: &Config<M>, t: usize, hot: &[TVar<u64>]) -> ThreadOut {
    if !a.no_pin {
        if let Ok(topo) = numa::Topology::get() {
            if let Some(cpu) = topo.allowed_cpus().iter().nth(t % topo.allowed_cpus().len().max(1)) {
                let _ = numa::pin::pin_to_cpu(cpu);
            }
        }
    }
    if cfg.assist() != Assist::Off {
        if let Err(e) = stm::assist_pairing(cfg.placement) {
            eprintln!("eigenbench: worker {t}: {e}");
        }
    }
    let mild: Vec<TVar<u64>> = (0..a.a2).map(|_| TVar::new(0)).collect();
    let mut local = vec![0u64; LOCAL_WORDS];
    let mut lj = 0usize;
    let mut cold = vec![0u64; a.a3];
    let mut rng = Rng(a.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((t as u64 + 1) << 32) | 1);
    let (mut ph, mut pm, mut pc) = (Picker::new(), Picker::new(), Picker::new());
    let mut plan = Vec::new();
    let mut idx: Vec<usize> = Vec::new();
    let mut out = ThreadOut::default();
    Stats::take_thread();
    for _ in 0..a.loops {
        // The transaction's accesses, in a random order (the same order in
        // every attempt: Eigenbench's "persistent" transactions).
        plan.clear();
        plan.extend(std::iter::repeat_n(Op::HotR, a.r1 as usize));
        plan.extend(std::iter::repeat_n(Op::HotW, a.w1 as usize));
        plan.extend(std::iter::repeat_n(Op::MildR, a.r2 as usize));
        plan.extend(std::iter::repeat_n(Op::MildW, a.w2 as usize));
        plan.extend(std::iter::repeat_n(Op::ColdR, a.r3i as usize));
        plan.extend(std::iter::repeat_n(Op::ColdW, a.w3i as usize));
        for i in (1..plan.len()).rev() {
            plan.swap(i, rng.below(i + 1));
        }
        idx.clear();
        idx.extend(plan.iter().map(|acc| match acc {
            Op::HotR | Op::HotW => ph.pick(&mut rng, a.a1, a.locality),
            Op::MildR | Op::MildW => pm.pick(&mut rng, a.a2, a.locality),
            Op::ColdR | Op::ColdW => pc.pick(&mut rng, a.a3, a.locality),
        }));
        let sum = stm::atomically_with(cfg, |tx| {
            let mut sum = 0u64;
            for (k, (acc, &i)) in plan.iter().zip(&idx).enumerate() {
                match acc {
                    Op::HotR => sum = sum.wrapping_add(tx.read(&hot[i])?),
                    Op::HotW => {
                        tx.update(&hot[i], |x| x + 1)?;
                    }
                    Op::MildR => sum = sum.wrapping_add(tx.read(&mild[i])?),
                    Op::MildW => {
                        tx.update(&mild[i], |x| x + 1)?;
                    }
                    Op::ColdR => sum = sum.wrapping_add(cold[i]),
                    Op::ColdW => {
                        cold[i] += 1;
                        out.cold_inside_writes += 1;
                    }
                }
                for _ in 0..a.nlocal {
                    let w = &mut local[lj % LOCAL_WORDS];
                    *w = w.wrapping_add(sum | 1);
                    lj = lj.wrapping_add(1);
                }
                if a.validate_every > 0 && (k + 1) % a.validate_every as usize == 0 {
                    tx.validate()?;
                }
                nops(a.nopi);
            }
            Ok(sum)
        });
        out.checksum = out.checksum.wrapping_add(sum);
        for _ in 0..a.r3o {
            let i = pc.pick(&mut rng, a.a3, a.locality);
            out.checksum = out.checksum.wrapping_add(cold[i]);
        }
        for _ in 0..a.w3o {
            let i = pc.pick(&mut rng, a.a3, a.locality);
            cold[i] += 1;
        }
        nops(a.nopo);
    }
    out.stats = Stats::take_thread();
    out.checksum = out.checksum.wrapping_add(local.iter().fold(0, |x, &w| x ^ w));
    out.cold_sum = cold.iter().sum();
    out.mild_sum = mild.iter().map(TVar::load).sum();
    out
}

/// One run of every worker.
struct Run {
    secs: f64,
    stats: Stats,
    /// The arrays sum to the committed writes.
    ok: bool,
}

fn run_once<M: Mode>(args: &Args, cfg: &Config<M>) -> Option<Run> {
    let hot: Vec<TVar<u64>> = (0..args.a1).map(|_| TVar::new(0)).collect();
    let t0 = Instant::now();
    let outs: Vec<ThreadOut> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..args.threads)
            .map(|t| {
                s.spawn({
                    let (args, cfg, hot) = (args, cfg, &hot);
                    move || worker(args, cfg, t, hot)
                })
            })
            .collect();
        hs.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let secs = t0.elapsed().as_secs_f64();
    if outs.len() != args.threads {
        return None;
    }
    let mut stats = Stats::default();
    let (mut mild, mut cold_expected, mut cold) = (0u64, 0u64, 0u64);
    for o in &outs {
        stats.merge(&o.stats);
        mild += o.mild_sum;
        cold += o.cold_sum;
        cold_expected += o.cold_inside_writes + args.loops * u64::from(args.w3o);
    }
    let txs = args.loops * args.threads as u64;
    let hot_sum: u64 = hot.iter().map(TVar::load).sum();
    let ok = hot_sum == txs * u64::from(args.w1)
        && mild == txs * u64::from(args.w2)
        && cold == cold_expected
        && stats.commits == txs;
    Some(Run { secs, stats, ok })
}

/// The no-ops between transactions that make them `ep` of the time, for
/// plain transactions of worker 0 (calibrated on a short plain run).
fn calibrate_nopo(args: &Args, base: &Config, ep: f64) -> u32 {
    let mut probe = args.clone();
    probe.threads = 1;
    probe.loops = (args.loops / 4).clamp(200, 20_000);
    probe.nopo = 0;
    probe.r3o = 0;
    probe.w3o = 0;
    let plain = *base;
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = run_once(&probe, &plain); // warm-up
            let tx_secs = run_once(&probe, &plain).map_or(0.0, |r| r.secs) / probe.loops as f64;
            const NOPS: u32 = 2_000_000;
            let t = Instant::now();
            nops(NOPS);
            let nop_secs = t.elapsed().as_secs_f64() / f64::from(NOPS);
            (tx_secs * ep / (1.0 - ep) / nop_secs).round().min(f64::from(u32::MAX)) as u32
        })
        .join()
        .unwrap_or(0)
    })
}

/// One assist mode's figure: its runs, their median, and the ratio of the
/// median to plain's (`off`) in the same process.
#[derive(Debug, Serialize)]
struct ModeFigure {
    mode: AssistMode,
    seconds: Vec<f64>,
    median_s: f64,
    /// Median time over `off`'s median time (> 1: slower than plain).
    time_ratio_to_off: Option<f64>,
    txs_per_s: f64,
    abort_ratio: f64,
    aux_conflict_aborts: u64,
    ok: bool,
}

/// The whole report (the JSON line).
#[derive(Debug, Serialize)]
struct Report {
    benchmark: &'static str,
    threads: usize,
    loops: u64,
    r1: u32,
    w1: u32,
    r2: u32,
    w2: u32,
    nlocal: u32,
    ep: Option<f64>,
    nopo: u32,
    validate_every: u32,
    repeat: usize,
    modes: Vec<ModeFigure>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "eigenbench: {} threads x {} transactions; hot r{} w{}, mild r{} w{}; N_local {}; EP {}; nopo {}; validate 1:{}",
            self.threads,
            self.loops,
            self.r1,
            self.w1,
            self.r2,
            self.w2,
            self.nlocal,
            self.ep.map_or("-".to_owned(), |e| format!("{:.0}%", e * 100.0)),
            self.nopo,
            if self.validate_every == 0 { "never".to_owned() } else { self.validate_every.to_string() },
        )?;
        writeln!(f, "{:<12} {:>10} {:>12} {:>8} {:>8} check", "mode", "median s", "txs/s", "vs off", "aborts")?;
        for m in &self.modes {
            writeln!(
                f,
                "{:<12} {:>10.4} {:>12.0} {:>8} {:>8.4} {}",
                m.mode.to_string(),
                m.median_s,
                m.txs_per_s,
                m.time_ratio_to_off.map_or("-".to_owned(), |r| format!("{r:.3}")),
                m.abort_ratio,
                if m.ok { "ok" } else { "FAILED" }
            )?;
        }
        Ok(())
    }
}

fn main() -> ExitCode {
    let mut args = Args::parse();
    let base = match args.check() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("eigenbench: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(ep) = args.ep {
        args.nopo = calibrate_nopo(&args, &base, ep);
    }
    let mut modes = args.assist.clone();
    modes.dedup();
    let mut runs: Vec<Vec<Run>> = modes.iter().map(|_| Vec::new()).collect();
    // A discarded run first: the lock table, the registry and the heap
    // warm up before any mode is timed.
    if run_once(&args, &base).is_none() {
        eprintln!("eigenbench: a worker thread panicked");
        return ExitCode::FAILURE;
    }
    for round in 0..args.repeat {
        for (m, mode) in modes.iter().enumerate() {
            let Some(run) = mode.run(&args, &base) else {
                eprintln!("eigenbench: a worker thread panicked");
                return ExitCode::FAILURE;
            };
            if !args.json {
                println!("  run {round} {mode:<12} {:.4} s", run.secs);
            }
            runs[m].push(run);
        }
    }
    let txs = (args.loops * args.threads as u64) as f64;
    let mut figures: Vec<ModeFigure> = modes
        .iter()
        .zip(&runs)
        .map(|(&mode, rs)| {
            let seconds: Vec<f64> = rs.iter().map(|r| r.secs).collect();
            let median_s = median(&seconds);
            let mut stats = Stats::default();
            rs.iter().for_each(|r| stats.merge(&r.stats));
            ModeFigure {
                mode,
                median_s,
                time_ratio_to_off: None,
                txs_per_s: txs / median_s,
                abort_ratio: stats.total_aborts() as f64 / (stats.commits + stats.total_aborts()).max(1) as f64,
                aux_conflict_aborts: stats.aborts_for(AbortReason::AuxiliaryConflict),
                ok: rs.iter().all(|r| r.ok),
                seconds,
            }
        })
        .collect();
    if let Some(off) = figures.iter().find(|f| f.mode == AssistMode::Off).map(|f| f.median_s) {
        for f in &mut figures {
            f.time_ratio_to_off = Some(f.median_s / off);
        }
    }
    let ok = figures.iter().all(|f| f.ok);
    let report = Report {
        benchmark: "eigenbench",
        threads: args.threads,
        loops: args.loops,
        r1: args.r1,
        w1: args.w1,
        r2: args.r2,
        w2: args.w2,
        nlocal: args.nlocal,
        ep: args.ep,
        nopo: args.nopo,
        validate_every: args.validate_every,
        repeat: args.repeat,
        modes: figures,
    };
    print!("{report}");
    if args.json {
        match serde_json::to_string(&report) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("eigenbench: cannot write the JSON line: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("eigenbench: the arrays do not sum to the committed writes");
        ExitCode::FAILURE
    }
}
