//! Where a worker's time went: the [`TimeBreakdown`] of a run's report,
//! and the clock a worker times its sampled units with.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Among a worker's first [`TIME_DENSE_UNITS`] units, one in this many is
/// timed phase by phase (every 64th, from a random offset in each worker);
/// after them, one in [`TIME_EVERY_LATER`]. A timed unit reads the clock
/// nine times (20 to 50 nanoseconds each with Linux's vDSO clock, the
/// higher figure in virtual machines), so timing one unit in 64 cost an
/// empty unit about 10% of its time on a 2-core VM (`skeleton_overhead`,
/// 60 ns a unit); one in 512 costs it about 1%. An untimed unit pays one
/// comparison of its count.
pub const TIME_EVERY: u64 = 64;

/// How many of a worker's first units are timed one in [`TIME_EVERY`]:
/// enough for a short run's shares to rest on 64 units.
pub const TIME_DENSE_UNITS: u64 = 4096;

/// After its first [`TIME_DENSE_UNITS`] units, a worker times one unit in
/// this many. Each such unit weighs `TIME_EVERY_LATER / TIME_EVERY` (8) in
/// the shares, as many as the units it stands for, so the shares stay an
/// unbiased estimate when the first units differ from the later ones
/// (cold caches, first-touch faults).
pub const TIME_EVERY_LATER: u64 = 512;

/// Where a worker's time went (or the sum over a run's workers).
///
/// The worker's wall time from its start to its end is `setup` + `busy` +
/// `idle` ([`WorkerReport`](crate::WorkerReport)'s `busy` and `idle`), each
/// measured in full. The busy time is split into its parts by the timed
/// units (one in [`TIME_EVERY`], then one in [`TIME_EVERY_LATER`], each of
/// those weighted as the units it stands for): each part gets the share of
/// `busy` that it had of the timed units' weighted time (a ratio estimate, as a sampling
/// profiler's). So the parts add up to `busy` exactly, and a unit that
/// ran long (a page fault, a preemption, a big transaction) weighs in the
/// shares only if it was timed: a run of few units, or units of very
/// unequal length, gets rough shares. `timed` says how much time the
/// shares rest on. A worker that timed no unit (fewer than
/// [`TIME_EVERY`]) reports its busy time as `untimed`.
///
/// `process` is the skeleton's own code *and* its transactional reads,
/// writes and allocations (they interleave too finely to be timed apart
/// without slowing them); the STM's per-operation costs are counted by
/// `skelaff-costs` under callgrind, and [`Stats`](skelaff_stm::Stats)
/// gives how many reads and writes the units made.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TimeBreakdown {
    /// Units timed phase by phase.
    pub timed_units: u64,
    /// Units in all.
    pub units: u64,
    /// The timed units' own time, unweighted: what the shares rest on
    /// (in the shares, a unit timed after a worker's first
    /// [`TIME_DENSE_UNITS`] weighs `TIME_EVERY_LATER / TIME_EVERY`).
    pub timed: Duration,
    /// Taking units from the pool (its own queue, or stealing) and handing
    /// the units a transaction made to it, waking idle workers.
    pub pool: Duration,
    /// Attempts that rolled back (conflicts, retries, read-only upgrades),
    /// their commit attempts and back-off included.
    pub aborted: Duration,
    /// The committed attempt's `process`: the skeleton's code with its
    /// transactional reads, writes and allocations.
    pub process: Duration,
    /// The committed attempt's commit: from `process`'s return to the end
    /// of the transaction (validation, locking, write-back, freeing).
    pub commit: Duration,
    /// The rest of a unit's turn: [`Skeleton::committed`](crate::Skeleton::committed),
    /// affinity hints, SkelAff's switch to bind, the access sampler, the
    /// hand-off to a helper.
    pub other: Duration,
    /// Busy time of a worker that timed no unit, so could not split it.
    pub untimed: Duration,
    /// Waiting with nothing to take.
    pub idle: Duration,
    /// Before and after the unit loop: the page policy, `init_worker`,
    /// `update` and `destroy_worker`.
    pub setup: Duration,
}

impl TimeBreakdown {
    /// The busy time: the sum of its parts (pool, aborted, process,
    /// commit, other, untimed).
    pub fn busy(&self) -> Duration {
        self.pool + self.aborted + self.process + self.commit + self.other + self.untimed
    }

    /// The worker time: setup, busy and idle.
    pub fn total(&self) -> Duration {
        self.setup + self.busy() + self.idle
    }

    /// Adds another worker's (or run's) breakdown.
    pub fn merge(&mut self, o: &TimeBreakdown) {
        self.timed_units += o.timed_units;
        self.units += o.units;
        self.timed += o.timed;
        self.pool += o.pool;
        self.aborted += o.aborted;
        self.process += o.process;
        self.commit += o.commit;
        self.other += o.other;
        self.untimed += o.untimed;
        self.idle += o.idle;
        self.setup += o.setup;
    }
}

/// A moment of a timed turn: nanoseconds on the monotonic clock (the one
/// [`Instant`](std::time::Instant) reads; see [`now`]).
pub(crate) type Moment = u64;

/// The monotonic clock now. A timed turn subtracts eight pairs of its
/// moments: as integers that is eight subtractions, where `Instant`'s
/// checked differences made into `Duration`s cost most of the timed turn
/// (counted under callgrind: about 500 instructions a timed turn, against
/// about 20 now).
#[inline(always)]
pub(crate) fn now() -> Moment {
    skelaff_numa_alloc::clock::monotonic_ns()
}

/// The timed units' sums, kept by a worker while it runs: nanoseconds.
#[derive(Debug, Default)]
pub(crate) struct UnitClock {
    /// Units timed.
    timed: u64,
    /// Their own time, unweighted.
    own: u64,
    pool: u64,
    aborted: u64,
    process: u64,
    commit: u64,
    other: u64,
}

/// The moments of one timed unit's transaction (see [`UnitClock::add`]).
#[derive(Debug)]
pub(crate) struct Attempts {
    /// The first attempt's start (0: none started yet).
    first: Moment,
    last: Moment,
    returned: Moment,
}

impl Attempts {
    /// A transaction about to start at `now`.
    pub(crate) fn at(now: Moment) -> Self {
        Attempts { first: 0, last: now, returned: now }
    }

    /// An attempt starts.
    #[inline]
    pub(crate) fn start(&mut self) {
        let t = now();
        if self.first == 0 {
            self.first = t;
        }
        self.last = t;
    }

    /// The attempt's `process` returned.
    #[inline]
    pub(crate) fn returned(&mut self) {
        self.returned = now();
    }
}

/// The moments of one timed unit's turn, in the order the worker reaches them.
#[derive(Debug)]
pub(crate) struct Turn {
    /// Before taking the unit.
    pub(crate) take: Moment,
    /// After taking it.
    pub(crate) taken: Moment,
    /// Before its transaction.
    pub(crate) tx: Moment,
    /// The transaction's attempts.
    pub(crate) attempts: Attempts,
    /// After the transaction.
    pub(crate) done: Moment,
    /// Before handing its new units to the pool.
    pub(crate) push: Moment,
    /// After that.
    pub(crate) pushed: Moment,
    /// At the end of the turn.
    pub(crate) end: Moment,
}

impl Turn {
    /// A turn that starts (looks for its unit) at `take`; its later
    /// moments are set as the worker reaches them.
    pub(crate) fn starting(take: Moment) -> Self {
        Turn {
            take,
            taken: take,
            tx: take,
            attempts: Attempts::at(take),
            done: take,
            push: take,
            pushed: take,
            end: take,
        }
    }
}

/// `b - a` in nanoseconds, 0 if `b` is earlier (it never is: the clock does
/// not go back and the moments are read in order; but a clock that could
/// not be read gives 0).
#[inline(always)]
fn since(a: Moment, b: Moment) -> u64 {
    b.saturating_sub(a)
}

impl UnitClock {
    /// Adds a timed unit's turn, standing for `weight` units in the shares.
    pub(crate) fn add(&mut self, t: &Turn, weight: u64) {
        self.timed += 1;
        let first = if t.attempts.first == 0 { t.attempts.last } else { t.attempts.first };
        let pool = since(t.take, t.taken) + since(t.push, t.pushed);
        let aborted = since(first, t.attempts.last);
        let process = since(t.attempts.last, t.attempts.returned);
        let commit = since(t.attempts.returned, t.done);
        let other = since(t.taken, t.tx) + since(t.done, t.push) + since(t.pushed, t.end);
        self.own += pool + aborted + process + commit + other;
        self.pool += weight * pool;
        self.aborted += weight * aborted;
        self.process += weight * process;
        self.commit += weight * commit;
        self.other += weight * other;
    }

    /// The breakdown of a worker that processed `units` units in `busy`,
    /// waited `idle` and spent `setup` around its loop.
    pub(crate) fn finish(self, units: u64, busy: Duration, idle: Duration, setup: Duration) -> TimeBreakdown {
        let timed = self.pool + self.aborted + self.process + self.commit + self.other;
        let mut b = TimeBreakdown {
            timed_units: self.timed,
            units,
            timed: Duration::from_nanos(self.own),
            idle,
            setup,
            ..TimeBreakdown::default()
        };
        if timed == 0 {
            b.untimed = busy;
            return b;
        }
        let share = |part: u64| busy.mul_f64(part as f64 / timed as f64);
        b.pool = share(self.pool);
        b.aborted = share(self.aborted);
        b.process = share(self.process);
        b.commit = share(self.commit);
        // The rounding left over goes to `other`, so the parts add up exactly.
        b.other = busy.saturating_sub(b.pool + b.aborted + b.process + b.commit);
        b
    }
}

/// Which of a worker's units are timed: one in [`TIME_EVERY`] among its
/// first [`TIME_DENSE_UNITS`], then one in [`TIME_EVERY_LATER`], from a
/// random offset, so that the sample is not always led by a worker's first
/// unit (cold caches, first-touch page faults), which would inflate every
/// part of a short run's estimate.
///
/// It holds the count of committed units at which the next timed turn
/// starts, so an untimed turn costs one comparison (a modulo of the count
/// cost five instructions a unit, counted under callgrind).
#[derive(Debug)]
pub(crate) struct Sampler {
    next: u64,
}

impl Sampler {
    pub(crate) fn new() -> Self {
        Sampler { next: fastrand::u64(..TIME_EVERY) }
    }

    /// A sampler whose next timed unit is the one after `next` committed.
    #[cfg(test)]
    pub(crate) fn at(next: u64) -> Self {
        Sampler { next }
    }

    /// Whether the unit a worker takes after `units` committed ones is
    /// timed. A timed turn that finds no unit leaves the count where it
    /// is, so the next turn is timed instead.
    #[inline(always)]
    pub(crate) fn timed(&self, units: u64) -> bool {
        units == self.next
    }

    /// The timed unit committed: its weight in the shares, and the next
    /// timed unit chosen.
    pub(crate) fn committed(&mut self) -> u64 {
        let (weight, step) = if self.next < TIME_DENSE_UNITS {
            (1, TIME_EVERY)
        } else {
            (TIME_EVERY_LATER / TIME_EVERY, TIME_EVERY_LATER)
        };
        // Past the dense stretch the steps are TIME_EVERY_LATER, from the
        // first timed unit at or after TIME_DENSE_UNITS (the offset kept).
        self.next += step;
        weight
    }
}
