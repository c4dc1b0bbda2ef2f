//! A batch of transfers between bank accounts, written as a user would
//! write it on the skelaff skeleton, beside its sequential twin and the
//! program a Rust user would write instead.
//!
//! Each transfer takes `amount` from one account to each of one to three
//! others (two to four accounts in all), all or nothing: if the source
//! holds less than it would pay, the transfer is declined and nothing
//! moves. Every transfer's outcome is recorded.
//!
//! - **skelaff**: a unit is `--batch` consecutive transfers (one by
//!   default), one transaction; balances are `TVar<i64>`s, outcomes a
//!   `THashMap<u32, Outcome>` whose values are an enum with
//!   `#[derive(Word)]`. After the run both are read back by value
//!   (`into_iter`, `TVar::into_inner`), without a transaction.
//! - **sequential**: the same loop over plain `i64`s and a `Vec` of outcomes.
//! - **rayon**: `par_iter` over the transfers, a `parking_lot::Mutex<i64>`
//!   per account (the finest sharding), each transfer locking its accounts
//!   in address order so that no two transfers wait on each other in a
//!   circle.
//!
//! Checks: for each program, replaying the transfers it says were done on
//! the starting balances gives its final balances exactly (so each moved
//! all of its money or none), and no balance is negative. When no program
//! declined anything, the order did not matter and all three must agree on
//! every balance and outcome. With a `--balance` small enough that some
//! transfers are declined, which ones depends on the order, so then each
//! program is held to its own replay and the counts are printed. Exit
//! status 1 if a check fails, 2 on bad flags.
//!
//! ```sh
//! cargo run --example bank                          # small defaults: seconds in the dev profile
//! cargo run --example bank -- --balance 200         # some transfers declined
//! cargo run --release --example bank -- --accounts 100000 --transfers 2000000 --threads 1,2 --rounds 5 --json
//! cargo run --release --example bank -- --accounts 64 --batch 8   # contended, and batched
//! ```
//!
//! Times are the median of `--rounds` runs, the three programs interleaved
//! in each round. They cover the transfers only (not building the
//! accounts); skelaff's include starting its workers, rayon's pool is
//! built beforehand.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use parking_lot::{Mutex, MutexGuard};
use rayon::prelude::*;
use serde::Serialize;
use skelaff::numa::alloc::NumaAlloc;
use skelaff::stm::{THashMap, TVar, TxError, TxOps, Word};
use skelaff::worklist::{Builder, ProcessCtx, Skeleton, WorkerInfo};
use skelaff_bench_support::median_duration;

/// Every allocation follows each worker's page policy (see the quickstart's
/// "Which allocator").
#[global_allocator]
static ALLOC: NumaAlloc = NumaAlloc::new();

#[derive(Parser, Debug)]
#[command(about = "Transfers between accounts: skelaff beside its sequential twin and a sharded-lock rayon peer")]
struct Args {
    /// Accounts (at least 4).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(4..))]
    accounts: u32,
    /// Transfers in the batch.
    #[arg(long, default_value_t = 50_000, value_parser = clap::value_parser!(u32).range(1..))]
    transfers: u32,
    /// Starting balance of every account.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(i64).range(0..=1 << 40))]
    balance: i64,
    /// Transfers per skelaff unit (one transaction).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    batch: u32,
    /// Seed of the transfer generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Thread counts for skelaff and rayon.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Rounds; the median time of each program is printed.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: u32,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

/// One transfer: `accounts[0]` pays `amount` to each of `accounts[1..len]`.
#[derive(Clone, Copy, Debug)]
struct Transfer {
    accounts: [u32; 4],
    len: usize,
    amount: i64,
}

impl Transfer {
    fn from(&self) -> usize {
        self.accounts[0] as usize
    }

    fn to(&self) -> impl Iterator<Item = usize> + '_ {
        self.accounts[1..self.len].iter().map(|&a| a as usize)
    }

    /// What the source pays.
    fn total(&self) -> i64 {
        self.amount * (self.len as i64 - 1)
    }
}

/// What became of a transfer: one word, so a `THashMap` holds it as a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
enum Outcome {
    Done,
    Declined,
}

/// `n` transfers over `accounts` accounts, two to four distinct accounts
/// each, amounts 1..=100.
fn generate(n: u32, accounts: u32, seed: u64) -> Vec<Transfer> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| {
            let len = 2 + rng.u64(..3) as usize;
            let mut a = [0u32; 4];
            let mut k = 0;
            while k < len {
                let x = rng.u64(..u64::from(accounts)) as u32;
                if !a[..k].contains(&x) {
                    a[k] = x;
                    k += 1;
                }
            }
            Transfer { accounts: a, len, amount: 1 + rng.u64(..100) as i64 }
        })
        .collect()
}

/// The transactional state.
struct Bank {
    balances: Vec<TVar<i64>>,
    outcomes: THashMap<u32, Outcome>,
}

/// The skelaff program: borrows the transfers for the worklist's life.
struct Transfers<'a> {
    list: &'a [Transfer],
    batch: u32,
}

impl Skeleton for Transfers<'_> {
    /// The first transfer of a batch.
    type Unit = u32;
    type Shared = Bank;
    type PerWorker = ();

    fn init_worker(&self, _: &Bank, _: &WorkerInfo) {}

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &first: &'t u32,
        _: &mut (),
        bank: &'t Bank,
        _: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        let end = (first + self.batch).min(self.list.len() as u32);
        for id in first..end {
            let t = &self.list[id as usize];
            let from = &bank.balances[t.from()];
            let have = tx.read(from)?;
            if have < t.total() {
                bank.outcomes.insert(tx, id, Outcome::Declined)?;
                continue;
            }
            tx.write(from, have - t.total())?;
            for to in t.to() {
                tx.update(&bank.balances[to], |b| b + t.amount)?;
            }
            bank.outcomes.insert(tx, id, Outcome::Done)?;
        }
        Ok(())
    }
}

/// Final balances and every transfer's outcome, from one program.
struct Outcomes {
    balances: Vec<i64>,
    outcomes: Vec<Outcome>,
    time: Duration,
}

fn skelaff(
    list: &[Transfer],
    accounts: u32,
    balance: i64,
    batch: u32,
    threads: usize,
) -> Result<(Outcomes, u64), skelaff::worklist::Error> {
    let bank = Bank {
        balances: (0..accounts).map(|_| TVar::new(balance)).collect(),
        outcomes: THashMap::with_buckets(list.len()),
    };
    let program = Transfers { list, batch };
    let start = Instant::now();
    let mut worklist = Builder::new().threads(threads).build(&program, &bank)?;
    worklist.add_work_units((0..list.len() as u32).step_by(batch as usize));
    let report = worklist.run()?;
    let time = start.elapsed();
    // The run is over: read everything back by value, no transaction.
    let mut outcomes = vec![Outcome::Declined; list.len()];
    let mut recorded = 0;
    for (id, outcome) in bank.outcomes {
        outcomes[id as usize] = outcome;
        recorded += 1;
    }
    if recorded != list.len() {
        eprintln!("bank: skelaff recorded {recorded} outcomes for {} transfers", list.len());
    }
    let balances = bank.balances.into_iter().map(TVar::into_inner).collect();
    Ok((Outcomes { balances, outcomes, time }, report.aborts()))
}

/// The sequential twin.
fn sequential(list: &[Transfer], accounts: u32, balance: i64) -> Outcomes {
    let mut balances = vec![balance; accounts as usize];
    let start = Instant::now();
    let outcomes = list
        .iter()
        .map(|t| {
            if balances[t.from()] < t.total() {
                return Outcome::Declined;
            }
            balances[t.from()] -= t.total();
            for to in t.to() {
                balances[to] += t.amount;
            }
            Outcome::Done
        })
        .collect();
    Outcomes { balances, outcomes, time: start.elapsed() }
}

/// The peer: rayon, a lock per account, taken in address order.
fn rayon_locks(list: &[Transfer], accounts: u32, balance: i64, pool: &rayon::ThreadPool) -> Outcomes {
    let locks: Vec<Mutex<i64>> = (0..accounts).map(|_| Mutex::new(balance)).collect();
    let start = Instant::now();
    let outcomes = pool.install(|| {
        list.par_iter()
            .map(|t| {
                // Address order is index order in one Vec. Each guard goes to
                // the account's place in the transfer: the source first.
                let mut order = t.accounts;
                order[..t.len].sort_unstable();
                let mut guards: [Option<MutexGuard<'_, i64>>; 4] = Default::default();
                for &a in &order[..t.len] {
                    let place = t.accounts[..t.len].iter().position(|&b| b == a).unwrap_or(0);
                    guards[place] = Some(locks[a as usize].lock());
                }
                let mut locked = guards.iter_mut().flatten();
                let Some(source) = locked.next() else { unreachable!("a transfer has a source") };
                if **source < t.total() {
                    return Outcome::Declined;
                }
                **source -= t.total();
                for to in locked {
                    **to += t.amount;
                }
                Outcome::Done
            })
            .collect()
    });
    let time = start.elapsed();
    Outcomes { balances: locks.into_iter().map(Mutex::into_inner).collect(), outcomes, time }
}

/// Whether replaying the transfers `o` says were done, on the starting
/// balances, gives `o`'s balances, and none is negative.
fn replays(list: &[Transfer], balance: i64, o: &Outcomes) -> bool {
    let mut b = vec![balance; o.balances.len()];
    for (t, outcome) in list.iter().zip(&o.outcomes) {
        if *outcome == Outcome::Done {
            b[t.from()] -= t.total();
            for to in t.to() {
                b[to] += t.amount;
            }
        }
    }
    b == o.balances && b.iter().all(|&x| x >= 0)
}

fn declined(o: &Outcomes) -> usize {
    o.outcomes.iter().filter(|&&x| x == Outcome::Declined).count()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[derive(Serialize)]
struct Row {
    threads: usize,
    skelaff_ms: f64,
    rayon_ms: f64,
    ratio_skelaff_vs_sequential: f64,
    ratio_skelaff_vs_rayon: f64,
    skelaff_aborts_max: u64,
    skelaff_declined_max: usize,
    rayon_declined_max: usize,
}

#[derive(Serialize)]
struct Summary {
    example: &'static str,
    accounts: u32,
    transfers: u32,
    balance: i64,
    batch: u32,
    rounds: u32,
    sequential_ms: f64,
    sequential_declined: usize,
    results: Vec<Row>,
    checks_passed: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.threads.is_empty() || args.threads.contains(&0) {
        eprintln!("bank: thread counts must be at least 1");
        return ExitCode::from(2);
    }
    let list = generate(args.transfers, args.accounts, args.seed);
    let pools: Result<Vec<_>, _> =
        args.threads.iter().map(|&t| rayon::ThreadPoolBuilder::new().num_threads(t).build()).collect();
    let pools = match pools {
        Ok(p) => p,
        Err(e) => {
            eprintln!("bank: cannot build a rayon pool: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "bank: {} transfers over {} accounts, balance {}, {} per skelaff unit; median of {} rounds",
        args.transfers, args.accounts, args.balance, args.batch, args.rounds
    );

    let mut ok = true;
    let mut check = |name: &str, t: Option<usize>, o: &Outcomes, reference: &Outcomes| {
        let at = t.map_or(String::new(), |t| format!(" at {t} threads"));
        if !replays(&list, args.balance, o) {
            eprintln!("bank: {name}{at}: its balances are not the replay of the transfers it says it did");
            ok = false;
        } else if declined(o) == 0
            && declined(reference) == 0
            && (o.balances != reference.balances || o.outcomes != reference.outcomes)
        {
            eprintln!("bank: {name}{at}: nothing declined, yet it disagrees with the sequential twin");
            ok = false;
        }
    };

    let n = args.threads.len();
    let (mut seq_times, mut seq_declined) = (Vec::new(), 0);
    let (mut skel_times, mut rayon_times) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    let (mut aborts, mut skel_declined, mut rayon_declined) = (vec![0; n], vec![0; n], vec![0; n]);
    for _ in 0..args.rounds {
        let seq = sequential(&list, args.accounts, args.balance);
        check("sequential", None, &seq, &seq);
        seq_declined = declined(&seq);
        seq_times.push(seq.time);
        for (i, (&t, pool)) in args.threads.iter().zip(&pools).enumerate() {
            let (run, a) = match skelaff(&list, args.accounts, args.balance, args.batch, t) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("bank: skelaff at {t} threads: {e}");
                    return ExitCode::FAILURE;
                }
            };
            check("skelaff", Some(t), &run, &seq);
            skel_times[i].push(run.time);
            aborts[i] = aborts[i].max(a);
            skel_declined[i] = skel_declined[i].max(declined(&run));
            let peer = rayon_locks(&list, args.accounts, args.balance, pool);
            check("rayon", Some(t), &peer, &seq);
            rayon_times[i].push(peer.time);
            rayon_declined[i] = rayon_declined[i].max(declined(&peer));
        }
    }

    let seq = ms(median_duration(&seq_times));
    println!(
        "{:>7} {:>13} {:>11} {:>9} {:>11} {:>13} {:>7} {:>21}",
        "threads",
        "sequential ms",
        "skelaff ms",
        "rayon ms",
        "skelaff/seq",
        "skelaff/rayon",
        "aborts",
        "declined seq/skel/ray"
    );
    let mut rows = Vec::new();
    for (i, &t) in args.threads.iter().enumerate() {
        let (s, r) = (ms(median_duration(&skel_times[i])), ms(median_duration(&rayon_times[i])));
        let row = Row {
            threads: t,
            skelaff_ms: s,
            rayon_ms: r,
            ratio_skelaff_vs_sequential: s / seq,
            ratio_skelaff_vs_rayon: s / r,
            skelaff_aborts_max: aborts[i],
            skelaff_declined_max: skel_declined[i],
            rayon_declined_max: rayon_declined[i],
        };
        let declined_cell = format!("{seq_declined}/{}/{}", row.skelaff_declined_max, row.rayon_declined_max);
        println!(
            "{t:>7} {seq:>13.2} {s:>11.2} {r:>9.2} {:>10.2}x {:>12.2}x {:>7} {declined_cell:>21}",
            row.ratio_skelaff_vs_sequential, row.ratio_skelaff_vs_rayon, row.skelaff_aborts_max,
        );
        rows.push(row);
    }
    println!(
        "checks: {}",
        if !ok {
            "FAILED"
        } else if seq_declined == 0 && skel_declined.iter().chain(&rayon_declined).all(|&d| d == 0) {
            "passed (nothing declined: all three agree on every balance and outcome)"
        } else {
            "passed (some transfers declined: each program's balances are the replay of its own outcomes)"
        }
    );
    if args.json {
        let summary = Summary {
            example: "bank",
            accounts: args.accounts,
            transfers: args.transfers,
            balance: args.balance,
            batch: args.batch,
            rounds: args.rounds,
            sequential_ms: seq,
            sequential_declined: seq_declined,
            results: rows,
            checks_passed: ok,
        };
        match serde_json::to_string(&summary) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("bank: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
