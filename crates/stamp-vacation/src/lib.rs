//! STAMP's **vacation**: a travel agency's database of cars, flights and
//! rooms, and clients that reserve, cancel and restock.
//!
//! The manager keeps four tables, which STAMP keeps in red-black trees
//! (here in [`TBTreeMap`](skelaff_stm::TBTreeMap)s, copy-on-write B+trees:
//! the tables are read far more than they are reshaped, and a lookup in the
//! red-black tree stalled on a cold node at each of its ~17 levels; the
//! B+tree reads one link per level of four): cars, flights and rooms map an id to a
//! reservation entry (units in all, free and used, and a price), and the
//! customers map an id to the customer's ordered list of reservations. A
//! client transaction is one of STAMP's three actions, chosen by `-u`:
//!
//! - *make a reservation* (`-u` percent): query up to `-n` random entries,
//!   keep the most expensive of each kind, add the customer if needed and
//!   reserve them;
//! - *delete a customer* (half the rest): if it exists, cancel all its
//!   reservations and remove it;
//! - *update the tables* (the other half): up to `-n` times, restock 100
//!   units of an entry at a new price, or take 100 away (a whole flight,
//!   if no one holds a seat on it).
//!
//! Ids are drawn from the first `-q` percent of `1..=-r`.
//!
//! # On the skeleton
//!
//! STAMP runs `-t` transactions split evenly among `-c` client threads,
//! each client drawing its requests from its own generator. Here the `-t`
//! transactions are the work-units (`--batch` of them per unit, default
//! 1), and `-c` is the number of workers that take them. Transaction `i`'s
//! requests come from a generator seeded by `(--seed, i)`, so the same
//! flags issue the same requests whatever the number of clients, in the
//! skeleton's (shuffled) order. One transaction per unit keeps STAMP's
//! atomicity (each client request is its own transaction), and a unit is
//! long enough (a few tree searches, ~1–3 µs) that taking it from the
//! pool costs a fraction of it; batching several requests in one
//! transaction is available to measure that cost, not needed to hide it.
//!
//! The workers' commits leave the STM's clock alone by default
//! ([`CLOCK`], `--clock`): a client transaction reads entries other
//! clients updated long before, far more often than ones just written.
//!
//! # Data and STAMP's generator
//!
//! The initial tables are STAMP's own: the same `-r` (and `--seed 0`, the
//! default) gives the same ids, units and prices in the same order, drawn
//! from STAMP's Mersenne Twister in its order. The requests are not: STAMP
//! splits `-t` among `-c` clients and seeds client `c`'s generator with
//! `c`, so its requests change with the number of clients; here request
//! `i` comes from its own generator (`fastrand`, seeded by `(--seed, i)`),
//! so they are the same at every thread count and the sequential version
//! replays exactly the transactions the skeleton ran. The requests follow
//! STAMP's distributions (the action from `-u`, up to `-n` queries, ids
//! uniform in the first `-q` percent of `1..=-r`).
//!
//! # Self-check
//!
//! After the run, [`Snapshot::check`]: every entry has `used + free ==
//! total`, no negative count, `total >= 1`; every customer's reservations
//! name existing entries and, per entry, the number of customers holding
//! it equals its used count; the trees' red-black invariants hold; and no
//! transaction met an impossible state. STAMP's own `checkTables` checks a
//! subset of this.
//!
//! # Sequential versions
//!
//! `--sequential` runs the transactions on one thread without the STM, in
//! the order one worker would take them. `--sequential-tables std` (the
//! default) keeps the tables in the standard library's `BTreeMap`s: the
//! fastest plain program, and the baseline the speed targets use.
//! `--sequential-tables stamp` runs the transactional manager's own code
//! (its red-black trees and customer lists) through the uninstrumented
//! [`UninstrumentedTx`], which is what STAMP's sequential build measures: the
//! difference to it is the STM's cost alone, the difference between the
//! two sequential versions the cost of the transactional data structures.
//!
//! # Speed at two threads
//!
//! The time of a 2-thread run over the sequential time factors as `seq/2t =
//! seq/1t × 1t/2t`. With two CPUs `1t/2t` is at most 2, so beating the
//! sequential run by a factor `s` needs `seq/1t >= s/2`: the STM's
//! one-thread run may cost at most `2/s` times the same transactions
//! without barriers (1.25× for `s = 1.6`). Vacation is the hard case for
//! that: a transaction is a handful of red-black tree searches, about 40
//! words read and 4 written (the report's `mean_read_set` and
//! `mean_write_set`), and little else, so the read barriers (the word's
//! lock loaded around its value, the lock's address logged) come to nearly
//! half of a transaction's time rather than a small fraction of it. Measured,
//! before the locks moved beside the words, on a
//! 2-CPU machine (median of 5, `scripts/stamp-ratios.py`, `-t65536
//! --helpers off`): one thread costs 1.8× the `UninstrumentedTx` run (2.1× the
//! `BTreeMap` one) and 2 threads reach 1.5–1.75× one thread, so about as
//! fast as the `UninstrumentedTx` run and 0.7–0.8× the `BTreeMap` one. At the default
//! `-t4096` (2.5–3 ms of sequential work) there is also the start: a 2-unit
//! run (`-t2 -c2 --helpers off`) takes 0.6–1.0 ms, mostly creating two
//! threads and their first-use state in a fresh process, joining them, and
//! their first misses. If the scaling seen from one to two threads held
//! further, about four CPUs would reach 1.6× the sequential run; a 2-CPU
//! machine cannot show it.
//!
//! # Flags
//!
//! STAMP's letters and meanings; the defaults are STAMP's low-contention
//! input (`-n2 -q90 -u98 -r16384 -t4096`) rather than its program defaults
//! (`-n10 -q90 -u80 -r65536 -t67108864`), which take minutes.

mod check;
mod client;
mod manager;
mod seq;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use skelaff_stm::{TxError, TxOps, atomically};
use skelaff_worklist::{ProcessCtx, Skeleton, WorkerInfo};

pub use check::{BadTables, BrokenTable, Entry, Snapshot};
pub use client::Kind;

use client::{Workload, initial_entries, populate};
use manager::{Manager, TxTables};
use seq::SeqManager;
use skelaff_stamp_core::app::{App, AppError, CommonArgs, Outcome};
use skelaff_stamp_core::check::CheckFailed;
use skelaff_stamp_core::figures::{VacationActions, VacationFigures};
use skelaff_stamp_core::plain::UninstrumentedTx;

/// The vacation application (see the [module docs](self)).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::{App, CommonArgs};
/// use skelaff_stamp_vacation::{Vacation, VacationArgs};
///
/// let args = VacationArgs { relations: 256, transactions: 500, clients: 2, ..VacationArgs::default() };
/// let outcome = Vacation::run(&args, &CommonArgs::default())?;
/// assert!(outcome.passed(), "{:?}", outcome.check);
/// # Ok::<(), skelaff_stamp_core::AppError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Vacation;

/// Vacation's STAMP flags.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct VacationArgs {
    /// Number of clients: the worker threads.
    #[arg(short = 'c', long = "clients", default_value_t = 1)]
    pub clients: usize,
    /// Number of user queries (or table updates) per transaction, at most.
    #[arg(short = 'n', long = "number", default_value_t = 2)]
    pub number: u32,
    /// Percentage of the relations that are queried.
    #[arg(short = 'q', long = "queries", default_value_t = 90)]
    pub queries: u32,
    /// Number of possible relations (entries per table).
    #[arg(short = 'r', long = "relations", default_value_t = 16384)]
    pub relations: u32,
    /// Number of transactions.
    #[arg(short = 't', long = "transactions", default_value_t = 4096)]
    pub transactions: u32,
    /// Percentage of user transactions (reservations).
    #[arg(short = 'u', long = "user", default_value_t = 98)]
    pub user: u32,
    /// Transactions per work-unit (each unit is one transaction).
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// Seed of the tables and of the clients' requests.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The tables `--sequential` runs on: `std` (the standard library's
    /// `BTreeMap`s) or `stamp` (the transactional code and its red-black
    /// trees without the STM, as STAMP's sequential build).
    #[arg(long, value_enum, default_value_t = SequentialTables::Std)]
    pub sequential_tables: SequentialTables,
}

/// The data structures of the sequential version (`--sequential-tables`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SequentialTables {
    /// The standard library's ordered maps (`BTreeMap`), one sorted `Vec`
    /// per customer: the fastest plain program.
    #[default]
    Std,
    /// The transactional manager's own code ([`TBTreeMap`](skelaff_stm::TBTreeMap)
    /// tables, [`TList`](skelaff_stm::TList) customer lists) run
    /// through the uninstrumented [`UninstrumentedTx`]: STAMP's sequential build,
    /// whose transactional barriers compile to plain loads and stores.
    Stamp,
}

impl SequentialTables {
    /// Its flag value.
    pub fn name(self) -> &'static str {
        match self {
            SequentialTables::Std => "std",
            SequentialTables::Stamp => "stamp",
        }
    }
}

impl Default for VacationArgs {
    fn default() -> Self {
        VacationArgs {
            clients: 1,
            number: 2,
            queries: 90,
            relations: 16384,
            transactions: 4096,
            user: 98,
            batch: 1,
            seed: 0,
            sequential_tables: SequentialTables::Std,
        }
    }
}

/// The most relations accepted (four tables of this many entries, some
/// 80 bytes each).
pub const MAX_RELATIONS: u32 = 1 << 22;
/// The most transactions accepted (the work-units are held in memory).
pub const MAX_TRANSACTIONS: u32 = 1 << 28;

impl VacationArgs {
    /// The checked workload.
    fn workload(&self) -> Result<Workload, AppError> {
        let bad = |m: String| Err(AppError::Invalid(m));
        if self.clients == 0 {
            return bad("-c (clients) must be at least 1".into());
        }
        if self.number == 0 {
            return bad("-n (queries per transaction) must be at least 1".into());
        }
        if !(1..=100).contains(&self.queries) || self.user > 100 {
            return bad(format!("-q must be 1..=100 and -u 0..=100 (got -q{} -u{})", self.queries, self.user));
        }
        if !(1..=MAX_RELATIONS).contains(&self.relations) {
            return bad(format!("-r (relations) must be 1..={MAX_RELATIONS} (got {})", self.relations));
        }
        if !(1..=MAX_TRANSACTIONS).contains(&self.transactions) {
            return bad(format!("-t (transactions) must be 1..={MAX_TRANSACTIONS} (got {})", self.transactions));
        }
        if self.batch == 0 {
            return bad("--batch must be at least 1".into());
        }
        // STAMP: the first q percent of the ids, rounded.
        let query_range = (f64::from(self.queries) / 100.0 * f64::from(self.relations) + 0.5) as u32;
        if query_range == 0 {
            return bad(format!("-q{} of -r{} leaves no id to query", self.queries, self.relations));
        }
        Ok(Workload { seed: self.seed, per_transaction: self.number, query_range, percent_user: self.user })
    }

    /// The first transaction of every work-unit.
    fn units(&self) -> Vec<u32> {
        (0..self.transactions).step_by(self.batch as usize).collect()
    }
}

/// What every worker reaches.
#[derive(Debug)]
struct Shared {
    manager: Manager,
    anomalies: AtomicU64,
}

/// The skeleton: a unit is the index of its first transaction.
#[derive(Debug)]
struct Clients {
    workload: Workload,
    batch: u32,
    transactions: u32,
}

impl Skeleton for Clients {
    type Unit = u32;
    type Shared = Shared;
    /// Impossible states this worker met.
    type PerWorker = u64;

    fn init_worker(&self, _: &Shared, _: &WorkerInfo) -> u64 {
        0
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &first: &u32,
        anomalies: &mut u64,
        shared: &'t Shared,
        _: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        let mut db = TxTables { tx, m: &shared.manager, anomalies };
        for i in first..first.saturating_add(self.batch).min(self.transactions) {
            self.workload.run(&mut db, i)?;
        }
        Ok(())
    }

    fn destroy_worker(&self, anomalies: u64, shared: &Shared) {
        shared.anomalies.fetch_add(anomalies, Ordering::Relaxed);
    }
}

/// Initial entries added per transaction when the tables are built.
const POPULATE_CHUNK: usize = 256;

/// The workers' clock policy unless `--clock` says otherwise:
/// [`ClockPolicy::Readers`](skelaff_stm::ClockPolicy). Their commits leave
/// the STM's clock alone, so two workers do not pass its cache line back
/// and forth at every commit; a client transaction rarely reads an entry
/// another has just written, the case where `Readers` costs. Measured at
/// 2 workers on the built-in input against `commits`, same run: 0.93 to
/// 0.98 of the time in three runs of 5 to 11 rounds (the issue notes).
pub const CLOCK: skelaff_stm::ClockPolicy = skelaff_stm::ClockPolicy::Readers;

impl App for Vacation {
    const NAME: &'static str = "vacation";
    type Args = VacationArgs;

    /// Four times the low-contention input's transactions, so that the
    /// timed part is long enough to split over two threads.
    fn small() -> VacationArgs {
        VacationArgs { transactions: 16384, ..VacationArgs::default() }
    }

    fn threads(args: &VacationArgs) -> usize {
        args.clients
    }

    fn set_threads(args: &mut VacationArgs, threads: usize) {
        args.clients = threads;
    }

    fn run(args: &VacationArgs, common: &CommonArgs) -> Result<Outcome, AppError> {
        let workload = args.workload()?;
        let mut prepared = None;
        let (snapshot, anomalies, time, report) = if common.sequential {
            match args.sequential_tables {
                SequentialTables::Std => {
                    let (m, time) = run_sequential(args, &workload, common.shuffle);
                    (Ok(m.snapshot()), m.anomalies, time, None)
                }
                SequentialTables::Stamp => {
                    let (m, anomalies, time) = run_sequential_stamp(args, &workload, common.shuffle);
                    (m.snapshot().map_err(BadTables::Broken), anomalies, time, None)
                }
            }
        } else {
            let shared = Shared { manager: Manager::default(), anomalies: AtomicU64::new(0) };
            for chunk in initial_entries(args.seed, args.relations).chunks(POPULATE_CHUNK) {
                atomically(|tx| {
                    let mut anomalies = 0;
                    populate(&mut TxTables { tx, m: &shared.manager, anomalies: &mut anomalies }, chunk)
                });
            }
            let skel = Clients { workload, batch: args.batch, transactions: args.transactions };
            prepared = Some(skelaff_stamp_core::phases::prepare_before_timing(common, args.clients)?);
            let clock = common.clock.unwrap_or(CLOCK);
            let mut wl = common.builder(args.clients).clock(clock).build(&skel, &shared)?;
            wl.add_work_units(args.units());
            let start = Instant::now();
            let report = common.run(&mut wl)?;
            let time = start.elapsed();
            let anomalies = shared.anomalies.load(Ordering::Relaxed);
            (shared.manager.snapshot().map_err(BadTables::Broken), anomalies, time, Some(report))
        };
        let mut outcome = outcome(args, &workload, snapshot, anomalies, time, report);
        outcome.prepared = prepared;
        Ok(outcome)
    }
}

fn outcome(
    args: &VacationArgs,
    w: &Workload,
    snapshot: Result<Snapshot, BadTables>,
    anomalies: u64,
    time: Duration,
    report: Option<skelaff_worklist::RunReport>,
) -> Outcome {
    let mut actions = [0u64; 3];
    for i in 0..args.transactions {
        actions[w.action(i) as usize] += 1;
    }
    let mut figures = VacationFigures {
        clients: args.clients,
        sequential_tables: args.sequential_tables.name(),
        transactions: args.transactions,
        relations: args.relations,
        query_range: w.query_range,
        transactions_per_second: f64::from(args.transactions) / time.as_secs_f64().max(1e-9),
        anomalies,
        actions: VacationActions {
            make_reservation: actions[0],
            delete_customer: actions[1],
            update_tables: actions[2],
        },
        customers: None,
        reservations_held: None,
        tables_digest: None,
    };
    let check = snapshot.and_then(|s| {
        figures.customers = Some(s.customers.len());
        figures.reservations_held = Some(s.reservations_held());
        figures.tables_digest = Some(format!("{:016x}", s.digest()));
        let ok = s.check(args.relations)?;
        if anomalies > 0 {
            return Err(BadTables::Anomalies { count: anomalies });
        }
        Ok(ok)
    });
    let check = check.map_err(|e| CheckFailed::new(Vacation::NAME, e));
    Outcome { app: Vacation::NAME, report, time, prepared: None, check, figures: figures.into() }
}

/// Vacation's tables and clients, with each client transaction run on the
/// calling thread in its own [`atomically`]: the cost of one client
/// transaction on the STM without the skeleton around it (what the STM's
/// instruction-count guard, `crates/costs`, counts).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_vacation::{ClientBench, VacationArgs};
///
/// let args = VacationArgs { relations: 256, transactions: 200, ..VacationArgs::default() };
/// let mut bench = ClientBench::new(&args)?;
/// bench.run(0..200);
/// assert!(bench.check(256).is_ok());
/// # Ok::<(), skelaff_stamp_core::AppError>(())
/// ```
#[derive(Debug)]
pub struct ClientBench {
    manager: Manager,
    workload: Workload,
    anomalies: u64,
}

impl ClientBench {
    /// The tables of `args` (`-r`, `--seed`), built transactionally, and
    /// its clients' requests (`-n`, `-q`, `-u`); `-c`, `-t` and `--batch`
    /// are not used.
    ///
    /// # Errors
    ///
    /// [`AppError::Invalid`] for flags out of range.
    pub fn new(args: &VacationArgs) -> Result<Self, AppError> {
        let workload = args.workload()?;
        let manager = Manager::default();
        let mut anomalies = 0;
        for chunk in initial_entries(args.seed, args.relations).chunks(POPULATE_CHUNK) {
            atomically(|tx| populate(&mut TxTables { tx, m: &manager, anomalies: &mut anomalies }, chunk));
        }
        Ok(ClientBench { manager, workload, anomalies })
    }

    /// Runs client transactions `range` (the request of transaction `i`
    /// depends on `i` and the seed only), one transaction each.
    pub fn run(&mut self, range: std::ops::Range<u32>) {
        self.run_with(&skelaff_stm::Config::DEFAULT, range);
    }

    /// [`ClientBench::run`] with the transactions in `cfg`'s mode (a
    /// [`Solo`](skelaff_stm::Solo) one runs solo while the thread holds
    /// the [solo gate](skelaff_stm::solo)).
    pub fn run_with<M: skelaff_stm::Mode>(&mut self, cfg: &skelaff_stm::Config<M>, range: std::ops::Range<u32>) {
        let (manager, workload, anomalies) = (&self.manager, &self.workload, &mut self.anomalies);
        for i in range {
            skelaff_stm::atomically_with(cfg, |tx| workload.run(&mut TxTables { tx, m: manager, anomalies }, i));
        }
    }

    /// Vacation's self-check of the tables for `relations` entries per
    /// table, and no impossible state met.
    ///
    /// # Errors
    ///
    /// What the check found wrong: [`BadTables::Anomalies`] for impossible
    /// states met, [`BadTables::Broken`] for a broken tree, or what
    /// [`Snapshot::check`] finds.
    pub fn check(&self, relations: u32) -> Result<String, BadTables> {
        if self.anomalies > 0 {
            return Err(BadTables::Anomalies { count: self.anomalies });
        }
        self.manager.snapshot().map_err(BadTables::Broken)?.check(relations)
    }
}

/// Runs vacation's transactions sequentially and returns the final tables
/// (the same requests, in the order `shuffle` gives, as
/// `CommonArgs { sequential: true, .. }`).
///
/// # Errors
///
/// [`AppError::Invalid`] for flags out of range.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_vacation::{sequential_tables, VacationArgs};
///
/// let args = VacationArgs { relations: 128, transactions: 300, ..VacationArgs::default() };
/// let tables = sequential_tables(&args, 1)?;
/// assert!(tables.check(128).is_ok());
/// // Corrupt it: the check notices.
/// let mut bad = tables.clone();
/// bad.tables[0][0].used += 1;
/// assert!(bad.check(128).is_err());
/// # Ok::<(), skelaff_stamp_core::AppError>(())
/// ```
pub fn sequential_tables(args: &VacationArgs, shuffle: u64) -> Result<Snapshot, AppError> {
    Ok(run_sequential(args, &args.workload()?, shuffle).0.snapshot())
}

/// The units in the order the skeleton's `shuffle` would give one worker.
fn sequential_order(args: &VacationArgs, shuffle: u64) -> Vec<u32> {
    let mut units = args.units();
    if shuffle != 0 {
        fastrand::Rng::with_seed(shuffle).shuffle(&mut units);
    }
    units
}

/// The sequential version: builds the tables, then runs every transaction
/// in the order the skeleton's `shuffle` would give one worker; returns
/// the manager and the time of the transactions.
fn run_sequential(args: &VacationArgs, workload: &Workload, shuffle: u64) -> (SeqManager, Duration) {
    let units = sequential_order(args, shuffle);
    let mut m = SeqManager::default();
    let _ = populate(&mut m, &initial_entries(args.seed, args.relations));
    let start = Instant::now();
    for &first in &units {
        for i in first..first.saturating_add(args.batch).min(args.transactions) {
            let _ = workload.run(&mut m, i);
        }
    }
    (m, start.elapsed())
}

/// The STAMP-style sequential version (`--sequential-tables stamp`): the
/// transactional manager's code, tables built and transactions run in the
/// same order as [`run_sequential`], through [`UninstrumentedTx`] instead of the STM.
/// Returns the manager, the impossible states met and the time of the
/// transactions.
fn run_sequential_stamp(args: &VacationArgs, workload: &Workload, shuffle: u64) -> (Manager, u64, Duration) {
    let units = sequential_order(args, shuffle);
    let m = Manager::default();
    let mut anomalies = 0;
    // SAFETY: `m` is this thread's alone until the handle is dropped below.
    let mut tx = unsafe { UninstrumentedTx::new() };
    // `UninstrumentedTx` never fails: no conflicts, and the client never retries.
    let _ = populate(
        &mut TxTables { tx: &mut tx, m: &m, anomalies: &mut anomalies },
        &initial_entries(args.seed, args.relations),
    );
    tx.end();
    let start = Instant::now();
    for &first in &units {
        for i in first..first.saturating_add(args.batch).min(args.transactions) {
            let _ = workload.run(&mut TxTables { tx: &mut tx, m: &m, anomalies: &mut anomalies }, i);
            tx.end();
        }
    }
    let time = start.elapsed();
    drop(tx);
    (m, anomalies, time)
}
