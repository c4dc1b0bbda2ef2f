//! The statistics counters of one thread, in its registry record: written
//! only by that thread (relaxed load and store, no read-modify-write), read
//! by anyone summing. [`Stats`](crate::Stats) is what they read as.

use crate::error::AbortReason;
use crate::primitive::{AtomicU64, Ordering};

/// One thread's counters (or the sum of exited threads').
#[derive(Debug, Default)]
pub(crate) struct ThreadCounters {
    pub(crate) commits: AtomicU64,
    pub(crate) read_only_commits: AtomicU64,
    pub(crate) aborts: [AtomicU64; AbortReason::COUNT],
    pub(crate) read_set_total: AtomicU64,
    pub(crate) write_set_total: AtomicU64,
    pub(crate) read_set_max: AtomicU64,
    pub(crate) write_set_max: AtomicU64,
}

#[inline(always)]
fn bump(a: &AtomicU64, by: u64) {
    a.store(a.load(Ordering::Relaxed).wrapping_add(by), Ordering::Relaxed);
}

#[inline(always)]
fn raise(a: &AtomicU64, to: u64) {
    if a.load(Ordering::Relaxed) < to {
        a.store(to, Ordering::Relaxed);
    }
}

impl ThreadCounters {
    /// A commit with these set sizes. Only the owning thread records.
    #[inline(always)]
    pub(crate) fn commit(&self, read_only: bool, reads: usize, writes: usize) {
        bump(&self.commits, 1);
        if read_only {
            bump(&self.read_only_commits, 1);
        }
        bump(&self.read_set_total, reads as u64);
        bump(&self.write_set_total, writes as u64);
        raise(&self.read_set_max, reads as u64);
        raise(&self.write_set_max, writes as u64);
    }

    /// A rolled-back attempt. Only the owning thread records.
    #[inline]
    pub(crate) fn abort(&self, reason: AbortReason) {
        bump(&self.aborts[reason as usize], 1);
    }

    fn sums(&self) -> impl Iterator<Item = &AtomicU64> {
        [&self.commits, &self.read_only_commits, &self.read_set_total, &self.write_set_total]
            .into_iter()
            .chain(&self.aborts)
    }

    fn maxima(&self) -> [&AtomicU64; 2] {
        [&self.read_set_max, &self.write_set_max]
    }

    /// Zeroes every counter. Only the owning thread (or one holding the
    /// exited threads' lock) resets.
    pub(crate) fn reset(&self) {
        for a in self.sums().chain(self.maxima()) {
            a.store(0, Ordering::Relaxed);
        }
    }

    /// Adds `other` into `self` (sums; maxima for the maxima). The caller
    /// is the only writer of `self` (it holds the exited threads' lock).
    pub(crate) fn absorb(&self, other: &ThreadCounters) {
        for (a, b) in self.sums().zip(other.sums()) {
            bump(a, b.load(Ordering::Relaxed));
        }
        for (a, b) in self.maxima().into_iter().zip(other.maxima()) {
            raise(a, b.load(Ordering::Relaxed));
        }
    }
}
