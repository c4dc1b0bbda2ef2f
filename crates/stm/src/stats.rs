//! Transaction statistics: the [`Stats`] figures, and reading them for the
//! calling thread or summed over the process (from the counters each
//! thread keeps in its registry record).

use core::fmt;

use serde::{Serialize, Serializer};

use crate::error::AbortReason;
use crate::primitive::{AtomicU64, Ordering};
use crate::runtime::counters::ThreadCounters;
use crate::runtime::registry::registry;
use crate::runtime::thread::this_record;

/// Counters of one thread (or a sum of threads).
///
/// Kept always on: a commit updates a handful of counters in a cache line
/// only its own thread writes (plain loads and stores; see the crate
/// README for the measured cost).
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, Stats, TVar, TxOps};
///
/// let v = TVar::new(0u32);
/// Stats::take_thread();
/// atomically(|tx| tx.update(&v, |x| x + 1));
/// atomically(|tx| tx.read(&v));
/// let s = Stats::thread();
/// assert_eq!(s.commits, 2);
/// assert_eq!(s.read_only_commits, 1);
/// assert_eq!(s.total_aborts(), 0);
/// ```
///
/// # JSON
///
/// `Stats` serialises (with serde, to any format) as one object: `commits`,
/// `read_only_commits`, `aborts` (the total, not the array),
/// `aborts_by_reason` (each [`AbortReason::name`] with its count, in
/// [`AbortReason::ALL`] order), `read_set_total`, `write_set_total`,
/// `read_set_max`, `write_set_max`.
///
/// ```
/// use skelaff_stm::Stats;
///
/// let s = Stats { commits: 3, read_only_commits: 1, ..Stats::default() };
/// let json = serde_json::to_string(&s)?;
/// assert!(json.starts_with(r#"{"commits":3,"read_only_commits":1,"aborts":0,"aborts_by_reason":{"locked_read":0,"#));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Committed transactions (including read-only ones).
    pub commits: u64,
    /// Committed transactions that wrote nothing.
    pub read_only_commits: u64,
    /// Rolled-back attempts, indexed by `AbortReason as usize` (see [`Stats::aborts_for`]).
    pub aborts: [u64; AbortReason::COUNT],
    /// Sum of the read-set sizes of committed transactions.
    pub read_set_total: u64,
    /// Sum of the write-set sizes of committed transactions.
    pub write_set_total: u64,
    /// The largest read set committed.
    pub read_set_max: u64,
    /// The largest write set committed.
    pub write_set_max: u64,
}

impl Stats {
    /// Rolled-back attempts for `reason`.
    pub fn aborts_for(&self, reason: AbortReason) -> u64 {
        self.aborts[reason as usize]
    }

    /// All rolled-back attempts.
    pub fn total_aborts(&self) -> u64 {
        self.aborts.iter().sum()
    }

    /// Rolled-back attempts because of conflicts (re-run automatically).
    pub fn conflict_aborts(&self) -> u64 {
        AbortReason::ALL.iter().filter(|r| r.is_conflict()).map(|&r| self.aborts_for(r)).sum()
    }

    /// Mean read-set size of committed transactions.
    pub fn mean_read_set(&self) -> f64 {
        if self.commits == 0 { 0.0 } else { self.read_set_total as f64 / self.commits as f64 }
    }

    /// Mean write-set size of committed transactions.
    pub fn mean_write_set(&self) -> f64 {
        if self.commits == 0 { 0.0 } else { self.write_set_total as f64 / self.commits as f64 }
    }

    /// Adds `other` into `self` (sums; maxima for the maxima).
    pub fn merge(&mut self, other: &Stats) {
        self.commits += other.commits;
        self.read_only_commits += other.read_only_commits;
        for (a, b) in self.aborts.iter_mut().zip(other.aborts) {
            *a += b;
        }
        self.read_set_total += other.read_set_total;
        self.write_set_total += other.write_set_total;
        self.read_set_max = self.read_set_max.max(other.read_set_max);
        self.write_set_max = self.write_set_max.max(other.write_set_max);
    }

    /// The rolled-back attempts per reason, as a map from each reason's
    /// [`name`](AbortReason::name) to its count, in [`AbortReason::ALL`]
    /// order (the `aborts_by_reason` of the JSON forms).
    pub fn aborts_by_reason(&self) -> AbortsByReason<'_> {
        AbortsByReason(&self.aborts)
    }
}

/// The rolled-back attempts of each [`AbortReason`]
/// ([`Stats::aborts_by_reason`]): serialises as a map from each reason's
/// [`name`](AbortReason::name) to its count, in [`AbortReason::ALL`] order.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{AbortReason, Stats};
///
/// let mut s = Stats::default();
/// s.aborts[AbortReason::Retry as usize] = 2;
/// assert_eq!(s.aborts_by_reason().iter().find(|(r, _)| *r == AbortReason::Retry), Some((AbortReason::Retry, 2)));
/// assert_eq!(serde_json::to_value(s.aborts_by_reason())?["retry"], 2);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortsByReason<'a>(&'a [u64; AbortReason::COUNT]);

impl AbortsByReason<'_> {
    /// Each reason with its count, in [`AbortReason::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (AbortReason, u64)> + '_ {
        AbortReason::ALL.into_iter().map(|r| (r, self.0[r as usize]))
    }
}

impl Serialize for AbortsByReason<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter().map(|(r, n)| (r.name(), n)))
    }
}

/// The JSON form described on [`Stats`]: the derived mirror below, with
/// the total where the struct holds the array.
impl Serialize for Stats {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            commits: u64,
            read_only_commits: u64,
            aborts: u64,
            aborts_by_reason: AbortsByReason<'a>,
            read_set_total: u64,
            write_set_total: u64,
            read_set_max: u64,
            write_set_max: u64,
        }
        Json {
            commits: self.commits,
            read_only_commits: self.read_only_commits,
            aborts: self.total_aborts(),
            aborts_by_reason: self.aborts_by_reason(),
            read_set_total: self.read_set_total,
            write_set_total: self.write_set_total,
            read_set_max: self.read_set_max,
            write_set_max: self.write_set_max,
        }
        .serialize(serializer)
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "commits {} (read-only {}), aborts {}", self.commits, self.read_only_commits, self.total_aborts())?;
        let mut first = true;
        for r in AbortReason::ALL {
            let n = self.aborts_for(r);
            if n > 0 {
                write!(f, "{}{} {}", if first { " (" } else { ", " }, r.name(), n)?;
                first = false;
            }
        }
        if !first {
            f.write_str(")")?;
        }
        write!(f, ", mean read set {:.1}, mean write set {:.1}", self.mean_read_set(), self.mean_write_set())
    }
}

impl Stats {
    /// What `counters` hold now.
    fn read(counters: &ThreadCounters) -> Stats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            commits: get(&counters.commits),
            read_only_commits: get(&counters.read_only_commits),
            aborts: core::array::from_fn(|i| get(&counters.aborts[i])),
            read_set_total: get(&counters.read_set_total),
            write_set_total: get(&counters.write_set_total),
            read_set_max: get(&counters.read_set_max),
            write_set_max: get(&counters.write_set_max),
        }
    }

    /// The calling thread's counters.
    pub fn thread() -> Stats {
        Stats::read(&this_record().counters)
    }

    /// The calling thread's counters, and resets them to zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, Stats, TVar, TxOps};
    ///
    /// let v = TVar::new(0u32);
    /// atomically(|tx| tx.read(&v));
    /// assert!(Stats::take_thread().commits >= 1);
    /// assert_eq!(Stats::thread().commits, 0);
    /// ```
    pub fn take_thread() -> Stats {
        let counters = &this_record().counters;
        let taken = Stats::read(counters);
        counters.reset();
        taken
    }

    /// The sum over every thread of the process, running or exited (counters
    /// that threads reset with [`Stats::take_thread`] are not included).
    pub fn global() -> Stats {
        let reg = registry();
        let mut sum = reg.with_exited_counters(Stats::read);
        for r in reg.records() {
            sum.merge(&Stats::read(&r.counters));
        }
        sum
    }
}
