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
//! ```sh
//! cargo run --release --example eigenbench -- -n 2 --loops 200000 --a1 1024 --r1 8 --w1 2 --json
//! ```

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use skelaff::stm::{self, AbortReason, Config, Stats, TVar, TxOps};

/// Eigenbench: hot/mild/cold arrays, reads and writes inside and outside
/// transactions.
#[derive(Debug, Parser)]
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
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

fn worker(a: &Args, cfg: &Config, t: usize, hot: &[TVar<u64>]) -> ThreadOut {
    let mild: Vec<TVar<u64>> = (0..a.a2).map(|_| TVar::new(0)).collect();
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
        plan.extend(std::iter::repeat_n(Access::HotR, a.r1 as usize));
        plan.extend(std::iter::repeat_n(Access::HotW, a.w1 as usize));
        plan.extend(std::iter::repeat_n(Access::MildR, a.r2 as usize));
        plan.extend(std::iter::repeat_n(Access::MildW, a.w2 as usize));
        plan.extend(std::iter::repeat_n(Access::ColdR, a.r3i as usize));
        plan.extend(std::iter::repeat_n(Access::ColdW, a.w3i as usize));
        for i in (1..plan.len()).rev() {
            plan.swap(i, rng.below(i + 1));
        }
        idx.clear();
        idx.extend(plan.iter().map(|acc| match acc {
            Access::HotR | Access::HotW => ph.pick(&mut rng, a.a1, a.locality),
            Access::MildR | Access::MildW => pm.pick(&mut rng, a.a2, a.locality),
            Access::ColdR | Access::ColdW => pc.pick(&mut rng, a.a3, a.locality),
        }));
        let sum = stm::atomically_with(cfg, |tx| {
            let mut sum = 0u64;
            for (acc, &i) in plan.iter().zip(&idx) {
                match acc {
                    Access::HotR => sum = sum.wrapping_add(tx.read(&hot[i])?),
                    Access::HotW => {
                        tx.update(&hot[i], |x| x + 1)?;
                    }
                    Access::MildR => sum = sum.wrapping_add(tx.read(&mild[i])?),
                    Access::MildW => {
                        tx.update(&mild[i], |x| x + 1)?;
                    }
                    Access::ColdR => sum = sum.wrapping_add(cold[i]),
                    Access::ColdW => {
                        cold[i] += 1;
                        out.cold_inside_writes += 1;
                    }
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
    out.cold_sum = cold.iter().sum();
    out.mild_sum = mild.iter().map(TVar::load).sum();
    out
}

fn main() -> ExitCode {
    let args = Args::parse();
    let cfg = match args.check() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("eigenbench: {e}");
            return ExitCode::from(2);
        }
    };
    let hot: Vec<TVar<u64>> = (0..args.a1).map(|_| TVar::new(0)).collect();
    let t0 = Instant::now();
    let outs: Vec<ThreadOut> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..args.threads)
            .map(|t| {
                s.spawn({
                    let (args, cfg, hot) = (&args, &cfg, &hot);
                    move || worker(args, cfg, t, hot)
                })
            })
            .collect();
        hs.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let secs = t0.elapsed().as_secs_f64();
    if outs.len() != args.threads {
        eprintln!("eigenbench: a worker thread panicked");
        return ExitCode::FAILURE;
    }
    let mut stats = Stats::default();
    let mut ok = true;
    let (mut mild, mut cold_expected, mut cold) = (0u64, 0u64, 0u64);
    for o in &outs {
        stats.merge(&o.stats);
        mild += o.mild_sum;
        cold += o.cold_sum;
        cold_expected += o.cold_inside_writes + args.loops * u64::from(args.w3o);
    }
    let txs = args.loops * args.threads as u64;
    let hot_sum: u64 = hot.iter().map(TVar::load).sum();
    let hot_expected = txs * u64::from(args.w1);
    let mild_expected = txs * u64::from(args.w2);
    if hot_sum != hot_expected || mild != mild_expected || cold != cold_expected || stats.commits != txs {
        ok = false;
    }
    println!("eigenbench: {} threads x {} transactions, {:.3} s", args.threads, args.loops, secs);
    println!(
        "  hot {} words: r{} w{}; mild {} words/thread: r{} w{}; cold {} words/thread: in r{} w{}, out r{} w{}",
        args.a1, args.r1, args.w1, args.a2, args.r2, args.w2, args.a3, args.r3i, args.w3i, args.r3o, args.w3o
    );
    println!("  nop in {} out {}, locality {}", args.nopi, args.nopo, args.locality);
    println!("txs/s         : {:.0}", txs as f64 / secs);
    println!("{stats}");
    for r in AbortReason::ALL {
        if stats.aborts_for(r) > 0 {
            println!("  aborts {:<16}: {}", r.name(), stats.aborts_for(r));
        }
    }
    println!(
        "check         : hot {hot_sum}/{hot_expected}, mild {mild}/{mild_expected}, cold {cold}/{cold_expected}: {}",
        if ok { "ok" } else { "FAILED" }
    );
    if args.json {
        println!(
            "{{\"benchmark\":\"eigenbench\",\"threads\":{},\"loops\":{},\"a1\":{},\"a2\":{},\"a3\":{},\"r1\":{},\"w1\":{},\
             \"r2\":{},\"w2\":{},\"r3i\":{},\"w3i\":{},\"r3o\":{},\"w3o\":{},\"nopi\":{},\"nopo\":{},\"locality\":{},\
             \"seconds\":{:.4},\"txs_per_s\":{:.1},\"abort_ratio\":{:.4},\"ok\":{ok},\"stats\":{}}}",
            args.threads,
            args.loops,
            args.a1,
            args.a2,
            args.a3,
            args.r1,
            args.w1,
            args.r2,
            args.w2,
            args.r3i,
            args.w3i,
            args.r3o,
            args.w3o,
            args.nopi,
            args.nopo,
            args.locality,
            secs,
            txs as f64 / secs,
            stats.total_aborts() as f64 / (stats.commits + stats.total_aborts()).max(1) as f64,
            stats.to_json()
        );
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("eigenbench: the arrays do not sum to the committed writes");
        ExitCode::FAILURE
    }
}
