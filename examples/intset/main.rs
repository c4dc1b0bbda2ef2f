//! TinySTM's intset workload on skelaff-stm and on its peers.
//!
//! ```sh
//! cargo run --release --example intset -- -b rb -i 4096 -r 8192 -u 20 -d 2000 -n 1
//! cargo run --release --example intset -- -b hs -n 2 --backend stm-core --json
//! ```
//!
//! Each thread loops until the duration ends: with probability `-u` percent
//! an update, otherwise a lookup of a random value in `1..=range`. Updates
//! alternate (unless `-a`): add a random value, and when that add succeeded,
//! the next update removes that same value. Every operation is one
//! transaction. At the end the set's size must equal the initial size plus
//! the successful adds minus the successful removes (exit status 1 if not),
//! and skelaff's ordered maps (`-b rb|bt|sl`) must pass their `verify`.
//!
//! On skelaff each structure is one of its collections (`ll` `TList`, `rb`
//! `TMap`, `bt` `TBTreeMap`, `sl` `TSkipMap`, `hs` `THashMap`); on stm-core
//! and fast-stm the same shapes are written once over their TVars in
//! `arena.rs` (no `bt`); under the locks, std's collections.

mod arena;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use serde::Serialize;

use arena::{Hash, List, RbTree, SkipList, TxSet, WordStm};
use skelaff::stm::{self, Config, ContentionManager, Stats};
use skelaff_costs::intset::{Counts, IntSet, Mix, Rng, StmSet, fill};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Structure {
    /// sorted linked list
    Ll,
    /// red-black tree
    Rb,
    /// B+tree (skelaff's TBTreeMap; std's BTreeSet under the locks)
    Bt,
    /// skip list (skelaff's TSkipMap; the arena skip list on stm-core and fast-stm; std's BTreeSet under the locks)
    Sl,
    /// hash set
    Hs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Backend {
    /// skelaff-stm (its TList / TMap / TBTreeMap / TSkipMap / THashMap)
    Skelaff,
    /// a parking_lot Mutex around a std collection
    Mutex,
    /// a parking_lot RwLock around a std collection (lookups share it)
    Rwlock,
    /// the stm-core crate (arena structures)
    StmCore,
    /// the fast-stm crate (arena structures)
    FastStm,
}

/// Integer-set stress test (TinySTM's intset), one transaction per operation.
#[derive(Debug, Parser)]
#[command(name = "intset")]
struct Args {
    /// Data structure: ll (sorted list), rb (red-black tree), bt (B+tree), sl (skip list), hs (hash set).
    #[arg(short = 'b', long = "structure", value_enum, default_value = "ll")]
    structure: Structure,
    /// Number of elements inserted before the test.
    #[arg(short = 'i', long = "initial-size", default_value_t = 256)]
    initial: u64,
    /// Range of the values (1..=range); default twice the initial size.
    #[arg(short = 'r', long = "range")]
    range: Option<u64>,
    /// Percentage of update operations.
    #[arg(short = 'u', long = "update-rate", default_value_t = 20)]
    update: u32,
    /// Duration of the test in milliseconds.
    #[arg(short = 'd', long = "duration", default_value_t = 10000)]
    duration: u64,
    /// Number of threads.
    #[arg(short = 'n', long = "num-threads", default_value_t = 1)]
    threads: usize,
    /// RNG seed (0: from the clock).
    #[arg(short = 's', long = "seed", default_value_t = 0)]
    seed: u64,
    /// Do not alternate insertions and removals (each update is an add or a
    /// remove of a random value, half and half).
    #[arg(short = 'a', long = "do-not-alternate")]
    no_alternate: bool,
    /// Which implementation runs the workload.
    #[arg(long, value_enum, default_value = "skelaff")]
    backend: Backend,
    /// skelaff contention manager: suicide or backoff.
    #[arg(short = 'c', long = "contention-manager", default_value = "suicide")]
    cm: String,
    /// skelaff clock policy: commits (every writing commit moves the global
    /// clock, TL2's GV4) or readers (commits leave it; a transaction that
    /// reads a newer word moves it, GV5).
    #[arg(long, default_value = "commits")]
    clock: stm::ClockPolicy,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, thiserror::Error)]
enum ArgError {
    #[error("thread count {0} is not allowed: use 1..={max}", max = stm::MAX_THREADS)]
    Threads(usize),
    #[error("update rate {0}% is not allowed: use 0..=100")]
    Update(u32),
    #[error(
        "range {range} is too small for {initial} initial elements: the range must be at least the initial size and at least 1"
    )]
    Range { range: u64, initial: u64 },
    #[error("range {0} is too large: at most {max}", max = u32::MAX)]
    RangeTooLarge(u64),
    #[error("duration 0 ms: give a positive duration")]
    Duration,
    #[error(
        "-b bt is skelaff's TBTreeMap (std's BTreeSet under mutex and rwlock); stm-core and fast-stm have no B+tree here: use -b rb"
    )]
    NoBTree,
    #[error(transparent)]
    Config(#[from] stm::ConfigError),
}

/// The `--json` line: the run's figures (`aborts` and `stats` are null
/// for the backends that count no aborts).
#[derive(Serialize)]
struct JsonLine<'a> {
    benchmark: &'static str,
    structure: Structure,
    backend: Backend,
    threads: usize,
    initial: usize,
    range: u64,
    update: u32,
    alternate: bool,
    /// skelaff's clock policy (null for the other backends).
    clock: Option<stm::ClockPolicy>,
    duration_s: f64,
    txs: u64,
    txs_per_s: f64,
    read_txs: u64,
    update_txs: u64,
    commits: u64,
    aborts: Option<u64>,
    size: usize,
    expected_size: i64,
    ok: bool,
    stats: Option<&'a Stats>,
}

/// `x` rounded to `digits` decimals (the precision the figures print with).
fn round_to(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

struct Params {
    range: u64,
    update: u32,
    alternate: bool,
    cm: ContentionManager,
    clock: stm::ClockPolicy,
}

impl Args {
    fn check(&self) -> Result<Params, ArgError> {
        if self.structure == Structure::Bt && matches!(self.backend, Backend::StmCore | Backend::FastStm) {
            return Err(ArgError::NoBTree);
        }
        if self.threads == 0 || self.threads > stm::MAX_THREADS {
            return Err(ArgError::Threads(self.threads));
        }
        if self.update > 100 {
            return Err(ArgError::Update(self.update));
        }
        let range = self.range.unwrap_or(2 * self.initial);
        if range == 0 || range < self.initial {
            return Err(ArgError::Range { range, initial: self.initial });
        }
        if range > u64::from(u32::MAX) {
            return Err(ArgError::RangeTooLarge(range));
        }
        if self.duration == 0 {
            return Err(ArgError::Duration);
        }
        Ok(Params {
            range,
            update: self.update,
            alternate: !self.no_alternate,
            cm: self.cm.parse()?,
            clock: self.clock,
        })
    }
}

// ---- peers --------------------------------------------------------------

struct StmCore;

impl WordStm for StmCore {
    type Tx = stm_core::Transaction;
    type Err = stm_core::StmError;
    type Var = stm_core::TVar<u64>;
    fn var(x: u64) -> Self::Var {
        stm_core::TVar::new(x)
    }
    fn read(tx: &mut Self::Tx, v: &Self::Var) -> Result<u64, Self::Err> {
        v.read(tx)
    }
    fn write(tx: &mut Self::Tx, v: &Self::Var, x: u64) -> Result<(), Self::Err> {
        v.write(tx, x)
    }
    fn restart() -> Self::Err {
        stm_core::StmError::Failure
    }
    fn atomically<R>(&self, f: impl Fn(&mut Self::Tx) -> Result<R, Self::Err>) -> R {
        stm_core::atomically(f)
    }
}

struct FastStm;

impl WordStm for FastStm {
    type Tx = fast_stm::Transaction;
    type Err = fast_stm::StmError;
    type Var = fast_stm::TVar<u64>;
    fn var(x: u64) -> Self::Var {
        fast_stm::TVar::new(x)
    }
    fn read(tx: &mut Self::Tx, v: &Self::Var) -> Result<u64, Self::Err> {
        v.read(tx)
    }
    fn write(tx: &mut Self::Tx, v: &Self::Var, x: u64) -> Result<(), Self::Err> {
        v.write(tx, x)
    }
    fn restart() -> Self::Err {
        fast_stm::StmError::Failure
    }
    fn atomically<R>(&self, f: impl Fn(&mut Self::Tx) -> Result<R, Self::Err>) -> R {
        fast_stm::atomically(f)
    }
}

/// An arena set on word STM `S`.
struct OnWords<S: WordStm, T> {
    stm: S,
    set: T,
}

impl<S: WordStm, T: TxSet<S>> IntSet for OnWords<S, T> {
    #[inline]
    fn add(&self, v: u64) -> bool {
        self.stm.atomically(|tx| self.set.add(tx, v))
    }
    #[inline]
    fn remove(&self, v: u64) -> bool {
        self.stm.atomically(|tx| self.set.remove(tx, v))
    }
    #[inline]
    fn contains(&self, v: u64) -> bool {
        self.stm.atomically(|tx| self.set.contains(tx, v))
    }
    fn size(&self) -> usize {
        self.stm.atomically(|tx| self.set.size(tx))
    }
}

/// A std collection behind a parking_lot lock.
trait StdSet: Send + Sync + Default {
    fn add(&mut self, v: u64) -> bool;
    fn remove(&mut self, v: u64) -> bool;
    fn contains(&self, v: u64) -> bool;
    fn size(&self) -> usize;
}

impl StdSet for std::collections::BTreeSet<u64> {
    fn add(&mut self, v: u64) -> bool {
        self.insert(v)
    }
    fn remove(&mut self, v: u64) -> bool {
        std::collections::BTreeSet::remove(self, &v)
    }
    fn contains(&self, v: u64) -> bool {
        std::collections::BTreeSet::contains(self, &v)
    }
    fn size(&self) -> usize {
        self.len()
    }
}

impl StdSet for std::collections::HashSet<u64> {
    fn add(&mut self, v: u64) -> bool {
        self.insert(v)
    }
    fn remove(&mut self, v: u64) -> bool {
        std::collections::HashSet::remove(self, &v)
    }
    fn contains(&self, v: u64) -> bool {
        std::collections::HashSet::contains(self, &v)
    }
    fn size(&self) -> usize {
        self.len()
    }
}

/// A sorted `LinkedList`: the std list, walked like the transactional one.
#[derive(Default)]
struct SortedList(std::collections::LinkedList<u64>);

impl StdSet for SortedList {
    fn add(&mut self, v: u64) -> bool {
        let at = self.0.iter().position(|&x| x >= v).unwrap_or(self.0.len());
        if self.0.iter().nth(at) == Some(&v) {
            return false;
        }
        let mut tail = self.0.split_off(at);
        self.0.push_back(v);
        self.0.append(&mut tail);
        true
    }
    fn remove(&mut self, v: u64) -> bool {
        let Some(at) = self.0.iter().position(|&x| x >= v) else { return false };
        if self.0.iter().nth(at) != Some(&v) {
            return false;
        }
        let mut tail = self.0.split_off(at);
        tail.pop_front();
        self.0.append(&mut tail);
        true
    }
    fn contains(&self, v: u64) -> bool {
        self.0.iter().find(|&&x| x >= v) == Some(&v)
    }
    fn size(&self) -> usize {
        self.0.len()
    }
}

struct Locked<T>(parking_lot::Mutex<T>);
struct RwLocked<T>(parking_lot::RwLock<T>);

impl<T: StdSet> IntSet for Locked<T> {
    fn add(&self, v: u64) -> bool {
        self.0.lock().add(v)
    }
    fn remove(&self, v: u64) -> bool {
        self.0.lock().remove(v)
    }
    fn contains(&self, v: u64) -> bool {
        self.0.lock().contains(v)
    }
    fn size(&self) -> usize {
        self.0.lock().size()
    }
}

impl<T: StdSet> IntSet for RwLocked<T> {
    fn add(&self, v: u64) -> bool {
        self.0.write().add(v)
    }
    fn remove(&self, v: u64) -> bool {
        self.0.write().remove(v)
    }
    fn contains(&self, v: u64) -> bool {
        self.0.read().contains(v)
    }
    fn size(&self) -> usize {
        self.0.read().size()
    }
}

fn make(structure: Structure, backend: Backend, p: &Params) -> Box<dyn IntSet + Send> {
    use std::collections::{BTreeSet, HashSet};
    let cfg = Config::new().contention(p.cm);
    let r = p.range;
    match (backend, structure) {
        (Backend::Skelaff, Structure::Ll) => Box::new(StmSet::ll().with_config(cfg)),
        (Backend::Skelaff, Structure::Rb) => Box::new(StmSet::rb().with_config(cfg)),
        (Backend::Skelaff, Structure::Bt) => Box::new(StmSet::bt().with_config(cfg)),
        (Backend::Skelaff, Structure::Hs) => Box::new(StmSet::hs().with_config(cfg)),
        (Backend::Skelaff, Structure::Sl) => Box::new(StmSet::sl().with_config(cfg)),
        (Backend::Mutex, Structure::Ll) => Box::new(Locked(parking_lot::Mutex::new(SortedList::default()))),
        (Backend::Mutex, Structure::Hs) => Box::new(Locked(parking_lot::Mutex::new(HashSet::<u64>::new()))),
        (Backend::Mutex, _) => Box::new(Locked(parking_lot::Mutex::new(BTreeSet::<u64>::new()))),
        (Backend::Rwlock, Structure::Ll) => Box::new(RwLocked(parking_lot::RwLock::new(SortedList::default()))),
        (Backend::Rwlock, Structure::Hs) => Box::new(RwLocked(parking_lot::RwLock::new(HashSet::<u64>::new()))),
        (Backend::Rwlock, _) => Box::new(RwLocked(parking_lot::RwLock::new(BTreeSet::<u64>::new()))),
        (Backend::StmCore, s) => words(StmCore, s, r),
        (Backend::FastStm, s) => words(FastStm, s, r),
    }
}

fn words<S: WordStm>(stm: S, structure: Structure, range: u64) -> Box<dyn IntSet + Send> {
    match structure {
        Structure::Ll => Box::new(OnWords { stm, set: List::new(range) }),
        // `Args::check` refuses bt for these backends.
        Structure::Rb | Structure::Bt => Box::new(OnWords { stm, set: RbTree::new() }),
        Structure::Sl => Box::new(OnWords { stm, set: SkipList::new(range) }),
        Structure::Hs => Box::new(OnWords { stm, set: Hash::new(range) }),
    }
}

#[derive(Default)]
struct ThreadResult {
    counts: Counts,
    stats: Stats,
}

fn worker(set: &dyn IntSet, p: &Params, seed: u64, stop: &AtomicBool, start: &Barrier) -> ThreadResult {
    let mut mix = Mix::new(seed, p.range, p.update, p.alternate);
    let mut r = ThreadResult::default();
    Stats::take_thread();
    // The worker thread's commits move the clock or not (skelaff only;
    // the other backends ignore it).
    stm::set_thread_clock(p.clock);
    start.wait();
    while !stop.load(Ordering::Relaxed) {
        mix.step(set, &mut r.counts);
    }
    r.stats = Stats::take_thread();
    r
}

fn main() -> ExitCode {
    let args = Args::parse();
    let p = match args.check() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("intset: {e}");
            return ExitCode::from(2);
        }
    };
    let seed = if args.seed == 0 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    } else {
        args.seed
    };
    let set: Arc<dyn IntSet + Send> = Arc::from(make(args.structure, args.backend, &p));
    let mut rng = Rng::new(seed);
    fill(&*set, args.initial, p.range, &mut rng);
    let initial_size = set.size();
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(args.threads + 1));
    let handles: Vec<_> = (0..args.threads)
        .map(|t| {
            let (set, stop, start) = (set.clone(), stop.clone(), start.clone());
            let p = Params { range: p.range, update: p.update, alternate: p.alternate, cm: p.cm, clock: p.clock };
            let tseed = rng.below(u64::MAX) ^ t as u64;
            std::thread::spawn(move || worker(&*set, &p, tseed, &stop, &start))
        })
        .collect();
    start.wait();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(args.duration));
    stop.store(true, Ordering::Relaxed);
    let elapsed = t0.elapsed();
    let mut results = Vec::new();
    for h in handles {
        match h.join() {
            Ok(r) => results.push(r),
            Err(_) => {
                eprintln!("intset: a worker thread panicked");
                return ExitCode::FAILURE;
            }
        }
    }
    let mut stats = Stats::default();
    let (mut reads, mut updates, mut diff) = (0u64, 0u64, 0i64);
    for r in &results {
        stats.merge(&r.stats);
        reads += r.counts.contains;
        updates += r.counts.adds + r.counts.removes;
        diff += r.counts.diff;
    }
    let expected = initial_size as i64 + diff;
    let final_size = set.size();
    let verify = set.verify();
    let ok = final_size as i64 == expected && verify.is_ok();
    let secs = elapsed.as_secs_f64();
    let txs = reads + updates;
    let stm_stats = args.backend == Backend::Skelaff;
    println!(
        "intset: structure {:?}, backend {:?}, {} thread(s), seed {seed}",
        args.structure, args.backend, args.threads
    );
    println!(
        "initial {} range {} update {}% alternate {} duration {:.3} s",
        initial_size, p.range, p.update, p.alternate, secs
    );
    println!("#txs          : {txs} ({:.0} / s)", txs as f64 / secs);
    println!("#read txs     : {reads}");
    println!("#update txs   : {updates}");
    if stm_stats {
        println!("#commits      : {}", stats.commits);
        println!("#aborts       : {} ({:.0} / s)", stats.total_aborts(), stats.total_aborts() as f64 / secs);
        for r in stm::AbortReason::ALL {
            if stats.aborts_for(r) > 0 {
                println!("  #{:<14}: {}", r.name(), stats.aborts_for(r));
            }
        }
        println!("mean read set : {:.1}, mean write set {:.2}", stats.mean_read_set(), stats.mean_write_set());
    } else {
        println!("#commits      : {txs} (operations; this backend reports no aborts)");
    }
    println!("Set size      : {final_size} (expected: {expected})");
    if let Err(e) = &verify {
        println!("structure check failed: {e}");
    }
    if args.json {
        let line = JsonLine {
            benchmark: "intset",
            structure: args.structure,
            backend: args.backend,
            threads: args.threads,
            initial: initial_size,
            range: p.range,
            update: p.update,
            alternate: p.alternate,
            clock: (args.backend == Backend::Skelaff).then_some(p.clock),
            duration_s: round_to(secs, 4),
            txs,
            txs_per_s: round_to(txs as f64 / secs, 1),
            read_txs: reads,
            update_txs: updates,
            commits: if stm_stats { stats.commits } else { txs },
            aborts: stm_stats.then(|| stats.total_aborts()),
            size: final_size,
            expected_size: expected,
            ok,
            stats: stm_stats.then_some(&stats),
        };
        match serde_json::to_string(&line) {
            Ok(json) => println!("{json}"),
            Err(e) => {
                eprintln!("intset: writing the JSON line: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("intset: final size {final_size} differs from the expected {expected} (or the structure is broken)");
        ExitCode::FAILURE
    }
}
