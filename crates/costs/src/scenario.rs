//! What the guard counts: each scenario sets up its data, runs once
//! outside the count (so the thread is registered, the lock table paged
//! in and the descriptor's buffers grown), then runs its operations inside
//! [`costs_measured`], the one function callgrind counts.

use skelaff_stamp_vacation::{ClientBench, VacationArgs};
use skelaff_stm::{Config, Solo, TVar, TxError, TxOps, atomically, atomically_with, try_atomically};

use crate::intset::{BrokenSet, Counts, IntSet, Mix, Rng, StmSet, fill};

/// Why a scenario's run failed: the counted work was not what it claims to be.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The operations' result is wrong.
    #[error("{what} are not what the operations must give")]
    WrongResult {
        /// What was checked.
        what: &'static str,
    },
    /// The set's structure is broken after the operations.
    #[error(transparent)]
    BrokenSet(#[from] BrokenSet),
    /// More operations than vacation's client numbers.
    #[error("{ops} transactions: fewer than {} please", u32::MAX)]
    TooManyOperations {
        /// The operations asked for.
        ops: u64,
    },
    /// Vacation's clients could not be set up.
    #[error("setting up vacation's clients")]
    VacationSetup(#[source] skelaff_stamp_core::AppError),
    /// The solo gate could not be taken.
    #[error("taking the STM's solo gate")]
    Solo(#[source] skelaff_stm::solo::SoloError),
    /// Vacation's tables are inconsistent after the run.
    #[error("vacation's tables after the run: {0}")]
    VacationCheck(String),
}

/// One measured scenario.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// Its name on the command line and in the baseline file.
    pub name: &'static str,
    /// What one operation is.
    pub op: &'static str,
    /// Operations counted: the instructions per operation are the count
    /// divided by this.
    pub ops: u64,
    run: fn(u64) -> Result<(), ScenarioError>,
}

impl Scenario {
    /// Sets up and runs the scenario's operations (those counted inside
    /// [`costs_measured`]), then checks their result.
    ///
    /// # Errors
    ///
    /// The scenario's own check failed: the counted work was not what it
    /// claims to be.
    pub fn run(&self) -> Result<(), ScenarioError> {
        (self.run)(self.ops)
    }
}

/// Runs `f`: the function whose instructions the guard counts (callgrind's
/// `--toggle-collect` names it). Never inlined, so that it exists.
#[inline(never)]
pub fn costs_measured<R>(f: impl FnOnce() -> R) -> R {
    std::hint::black_box(f())
}

/// Words read or written per transaction in `read` and `write`.
const WORDS: usize = 64;

/// Every scenario, in the order they are reported.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "read",
        op: "one transactional read (64 per transaction that only reads, each word on its own cache line)",
        ops: 1000 * WORDS as u64,
        run: reads,
    },
    Scenario {
        name: "read-ro",
        op: "one read in a read-only transaction (64 per transaction, Config::read_only: no read set)",
        ops: 1000 * WORDS as u64,
        run: reads_read_only,
    },
    Scenario {
        name: "write",
        op: "one transactional write (64 per transaction, which then rolls back)",
        ops: 1000 * WORDS as u64,
        run: writes,
    },
    Scenario {
        name: "commit-ro",
        op: "one read-only transaction of one read (begin, read, commit)",
        ops: 10_000,
        run: commit_read_only,
    },
    Scenario {
        name: "commit-update",
        op: "one updating transaction of one read and one write (begin, read, write, commit)",
        ops: 10_000,
        run: commit_update,
    },
    Scenario {
        name: "intset-ll",
        op: "one intset transaction on TList (-i 256 -r 512 -u 20)",
        ops: 2_000,
        run: |ops| intset(StmSet::ll(), 256, ops),
    },
    Scenario {
        name: "intset-rb",
        op: "one intset transaction on TMap (-i 4096 -r 8192 -u 20)",
        ops: 10_000,
        run: |ops| intset(StmSet::rb(), 4096, ops),
    },
    Scenario {
        name: "intset-hs",
        op: "one intset transaction on THashMap (-i 4096 -r 8192 -u 20)",
        ops: 10_000,
        run: |ops| intset(StmSet::hs(), 4096, ops),
    },
    Scenario {
        name: "intset-sl",
        op: "one intset transaction on TSkipMap (-i 4096 -r 8192 -u 20)",
        ops: 10_000,
        run: |ops| intset(StmSet::sl(), 4096, ops),
    },
    Scenario {
        name: "vacation-client",
        op: "one vacation client transaction (-n2 -q90 -u98 -r16384: STAMP's vacation-low)",
        ops: 2_000,
        run: |ops| vacation_client(ops, false),
    },
    Scenario {
        name: "read-solo",
        op: "one solo read (as `read`, in Solo mode with the solo gate held)",
        ops: 1000 * WORDS as u64,
        run: reads_solo,
    },
    Scenario {
        name: "commit-solo",
        op: "one solo transaction incrementing one word (as `commit-update`, solo)",
        ops: 10_000,
        run: commit_solo,
    },
    Scenario {
        name: "vacation-client-solo",
        op: "one vacation client transaction, solo (as `vacation-client`)",
        ops: 2_000,
        run: |ops| vacation_client(ops, true),
    },
];

/// The scenario named `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// Words that each lie on a stripe of their own (stripes are 32 bytes).
fn spread_words(n: usize) -> Vec<[TVar<u64>; 4]> {
    (0..n as u64).map(|i| [TVar::new(i), TVar::new(0), TVar::new(0), TVar::new(0)]).collect()
}

fn reads(ops: u64) -> Result<(), ScenarioError> {
    let words = spread_words(WORDS);
    let read_all = || atomically(|tx| words.iter().try_fold(0u64, |s, w| Ok(s + tx.read(&w[0])?)));
    let expected = read_all();
    let rounds = ops / WORDS as u64;
    let sums = costs_measured(|| (0..rounds).map(|_| read_all()).sum::<u64>());
    check(sums == expected * rounds, "the reads' sums")
}

fn reads_read_only(ops: u64) -> Result<(), ScenarioError> {
    let words = spread_words(WORDS);
    let ro = Config::new().read_only();
    let read_all = || atomically_with(&ro, |tx| words.iter().try_fold(0u64, |s, w| Ok(s + tx.read(&w[0])?)));
    let expected = read_all();
    let rounds = ops / WORDS as u64;
    let sums = costs_measured(|| (0..rounds).map(|_| read_all()).sum::<u64>());
    check(sums == expected * rounds, "the reads' sums")
}

/// A user error that rolls the transaction back.
#[derive(Debug)]
struct Abandon;

impl From<TxError> for Abandon {
    fn from(_: TxError) -> Self {
        Abandon
    }
}

fn writes(ops: u64) -> Result<(), ScenarioError> {
    let words = spread_words(WORDS);
    let write_all = |k: u64| {
        try_atomically(|tx| {
            for w in &words {
                tx.write(&w[0], k)?;
            }
            Err::<(), Abandon>(Abandon)
        })
    };
    let _ = write_all(1);
    let rounds = ops / WORDS as u64;
    costs_measured(|| {
        for k in 0..rounds {
            let _ = write_all(k);
        }
    });
    check(words.iter().enumerate().all(|(i, w)| w[0].load() == i as u64), "rolled-back writes leave the words")
}

fn commit_read_only(ops: u64) -> Result<(), ScenarioError> {
    let v = TVar::new(7u64);
    atomically(|tx| tx.read(&v));
    let sum = costs_measured(|| (0..ops).map(|_| atomically(|tx| tx.read(&v))).sum::<u64>());
    check(sum == 7 * ops, "the read-only transactions' sum")
}

fn commit_update(ops: u64) -> Result<(), ScenarioError> {
    let v = TVar::new(0u64);
    atomically(|tx| tx.update(&v, |x| x + 1));
    costs_measured(|| {
        for _ in 0..ops {
            atomically(|tx| tx.update(&v, |x| x + 1));
        }
    });
    check(v.load() == ops + 1, "the counter")
}

/// Fills `set` with `initial` values of `1..=2 * initial` (seed 1), runs one
/// uncounted operation, then `ops` counted ones; checks the size and the
/// structure.
fn intset(set: impl IntSet, initial: u64, ops: u64) -> Result<(), ScenarioError> {
    let range = 2 * initial;
    let mut rng = Rng::new(1);
    fill(&set, initial, range, &mut rng);
    let mut mix = Mix::new(rng.below(u64::MAX), range, 20, true);
    let mut c = Counts::default();
    mix.step(&set, &mut c);
    costs_measured(|| {
        for _ in 0..ops {
            mix.step(&set, &mut c);
        }
    });
    set.verify()?;
    let expected = initial as i64 + c.diff;
    check(set.size() as i64 == expected, "the set's size")
}

fn vacation_client(ops: u64, solo: bool) -> Result<(), ScenarioError> {
    let args = VacationArgs { number: 2, queries: 90, user: 98, relations: 16384, ..VacationArgs::default() };
    let mut bench = ClientBench::new(&args).map_err(ScenarioError::VacationSetup)?;
    let end = u32::try_from(ops + 1).map_err(|_| ScenarioError::TooManyOperations { ops })?;
    if solo {
        let _gate = enter_solo()?;
        let cfg = Config::new().mode::<Solo>();
        bench.run_with(&cfg, 0..1);
        costs_measured(|| bench.run_with(&cfg, 1..end));
    } else {
        bench.run(0..1);
        costs_measured(|| bench.run(1..end));
    }
    // The check describes an inconsistency in words (skelaff-stamp's API).
    bench.check(args.relations).map(drop).map_err(|e| ScenarioError::VacationCheck(e.to_string()))
}

/// The solo gate, for a scenario that runs solo.
fn enter_solo() -> Result<skelaff_stm::solo::SoloGuard, ScenarioError> {
    skelaff_stm::solo::enter().map_err(ScenarioError::Solo)
}

fn reads_solo(ops: u64) -> Result<(), ScenarioError> {
    let words = spread_words(WORDS);
    let _gate = enter_solo()?;
    let cfg = Config::new().mode::<Solo>();
    let read_all = || atomically_with(&cfg, |tx| words.iter().try_fold(0u64, |s, w| Ok(s + tx.read(&w[0])?)));
    let expected = read_all();
    let rounds = ops / WORDS as u64;
    let sums = costs_measured(|| (0..rounds).map(|_| read_all()).sum::<u64>());
    check(sums == expected * rounds, "the reads' sums")
}

fn commit_solo(ops: u64) -> Result<(), ScenarioError> {
    let v = TVar::new(0u64);
    let _gate = enter_solo()?;
    let cfg = Config::new().mode::<Solo>();
    atomically_with(&cfg, |tx| tx.update(&v, |x| x + 1));
    costs_measured(|| {
        for _ in 0..ops {
            atomically_with(&cfg, |tx| tx.update(&v, |x| x + 1));
        }
    });
    check(v.load() == ops + 1, "the counter")
}

fn check(ok: bool, what: &'static str) -> Result<(), ScenarioError> {
    if ok { Ok(()) } else { Err(ScenarioError::WrongResult { what }) }
}
