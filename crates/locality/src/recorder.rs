//! A bounded per-thread recorder of sampled accesses, and the merge of
//! several threads' recorders into one [`Profile`].
//!
//! Each thread offers its accesses to its own [`Recorder`] (no sharing, no
//! locks); every `period`-th is kept. When the buffer is full the recorder
//! never grows: by default ([`Overflow::Thin`]) it keeps every other sample
//! and doubles its period, so the samples stay evenly spread over the whole
//! run (a footprint over time needs the end of the run as much as the
//! start) and each still stands for `period` accesses. [`Overflow::Drop`]
//! keeps the first `capacity` samples instead and counts the rest.

use crate::error::Result;
use crate::profile::{PageAccess, Profile, ProfileHeader, Sampling};

/// What a full recorder does with the next sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overflow {
    /// Keep every other sample and double the period.
    #[default]
    Thin,
    /// Keep the samples taken so far; count later ones as discarded.
    Drop,
}

/// One thread's bounded sample buffer.
///
/// # Examples
///
/// ```
/// use skelaff_locality::{PageAccess, Overflow, Recorder, Sampling};
///
/// let mut r = Recorder::new(Sampling::new(1, 4)?, Overflow::Thin);
/// for t in 0..16 {
///     r.offer(PageAccess::read(t, 0, 0, t));
/// }
/// // Never more than 4 samples; the period doubled twice (1 -> 4), and the
/// // samples are the accesses 0, 4, 8 and 12: evenly spread over the run.
/// assert_eq!(r.period(), 4);
/// assert_eq!(r.samples().iter().map(|a| a.page).collect::<Vec<_>>(), [0, 4, 8, 12]);
/// # Ok::<(), skelaff_locality::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Recorder {
    period: u32,
    countdown: u32,
    capacity: usize,
    overflow: Overflow,
    buf: Vec<PageAccess>,
    seen: u64,
    discarded: u64,
}

impl Recorder {
    /// An empty recorder. It reserves at most 4096 samples up front and never
    /// holds more than `sampling.capacity`.
    pub fn new(sampling: Sampling, overflow: Overflow) -> Recorder {
        Recorder {
            period: sampling.period,
            countdown: sampling.period,
            capacity: sampling.capacity,
            overflow,
            buf: Vec::new(),
            seen: 0,
            discarded: 0,
        }
    }

    /// Counts one access and keeps it if it is the period's turn; returns
    /// whether it was its turn (the sample may still be thinned or dropped
    /// when the buffer is full).
    #[inline]
    pub fn offer(&mut self, access: PageAccess) -> bool {
        self.seen += 1;
        self.countdown -= 1;
        if self.countdown != 0 {
            return false;
        }
        // Inline while there is room (a worker's recorder keeps every sample
        // the STM gives it: this is its path for each one); only a full
        // buffer's thinning or dropping is out of line.
        if self.buf.len() < self.capacity {
            self.countdown = self.period;
            self.buf.push(access);
        } else {
            self.overflow(access);
        }
        true
    }

    /// Whether the next [`offer`](Self::offer) would keep its access (so a
    /// caller can skip building an access that would not be kept).
    #[inline]
    pub fn due(&self) -> bool {
        self.countdown == 1
    }

    /// The period's sample arrived with the buffer full.
    #[cold]
    fn overflow(&mut self, access: PageAccess) {
        self.countdown = self.period;
        match self.overflow {
            Overflow::Drop => self.discarded += 1,
            Overflow::Thin => {
                // The kept samples and this one are samples 0..=capacity at
                // the old period; keep the even ones, spaced 2 x period.
                let before = self.buf.len();
                let mut i = 0;
                self.buf.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.discarded += (before - self.buf.len()) as u64;
                let old = self.period;
                self.period = old.saturating_mul(2);
                if self.capacity % 2 == 0 {
                    // This sample is number `capacity`: even, kept.
                    self.buf.push(access);
                    self.countdown = self.period;
                } else {
                    // It is odd: drop it; the next kept one is `old` later.
                    self.discarded += 1;
                    self.countdown = old;
                }
            }
        }
    }

    /// The period the kept samples currently stand for.
    pub fn period(&self) -> u32 {
        self.period
    }

    /// Accesses offered so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Samples discarded on overflow (thinned or dropped).
    pub fn discarded(&self) -> u64 {
        self.discarded
    }

    /// Reserves room for `additional` more samples, never beyond the
    /// capacity: a recorder that reserves what it expects to keep grows its
    /// buffer once rather than by doubling (each doubling copies what was
    /// kept and touches fresh pages).
    pub fn reserve(&mut self, additional: usize) {
        let room = self.capacity.saturating_sub(self.buf.len());
        self.buf.reserve(additional.min(room));
    }

    /// The kept samples, in the order offered.
    pub fn samples(&self) -> &[PageAccess] {
        &self.buf
    }
}

impl Profile {
    /// Merges the threads' recorders into one profile. Recorders whose
    /// period grew less than the largest are thinned to it (keeping every
    /// `largest / own`-th sample), so every sample of the profile stands for
    /// the same number of accesses; `header.sampling.period` becomes that
    /// period and `seen`/`discarded` the sums.
    ///
    /// # Errors
    ///
    /// [`Error::BadAccess`](crate::Error::BadAccess) when a sample names a
    /// thread or node the header lacks.
    pub fn from_recorders(mut header: ProfileHeader, recorders: Vec<Recorder>) -> Result<Profile> {
        let period = recorders.iter().map(|r| r.period).max().unwrap_or(header.sampling.period);
        let (mut seen, mut discarded) = (0, 0);
        let mut runs = Vec::with_capacity(recorders.len());
        for mut r in recorders {
            seen += r.seen;
            discarded += r.discarded;
            // Periods are the configured one times powers of two, so the
            // ratio is whole when all recorders started alike; round otherwise.
            let step = (f64::from(period) / f64::from(r.period)).round().max(1.0) as usize;
            if step > 1 {
                // Keep the last of each `step` (the samples the larger period would have taken).
                let len = r.buf.len();
                let mut i = 0;
                r.buf.retain(|_| {
                    i += 1;
                    i % step == 0
                });
                discarded += (len - r.buf.len()) as u64;
            }
            runs.push(r.buf);
        }
        header.sampling.period = period;
        header.seen += seen;
        header.discarded += discarded;
        Profile::new(header, merge_by_time(runs))
    }
}

/// The runs' accesses in one buffer, in time order; equal times keep the
/// runs' order (as a stable sort of the runs one after the other would).
///
/// A recorder's samples are in the order offered, which for a worker is
/// time order: its drains are stamped with a clock that never goes back.
/// Such runs are merged a block at a time (a drain's samples share their
/// time, so the blocks are long), from the end, into the largest run's
/// buffer grown to hold them all: its samples stay on the pages they are
/// on, and only the growth is fresh memory (at the end of a run each fresh
/// page is a fault: sorting the concatenated runs, which copies every
/// sample twice through scratch as large as the samples, was the largest
/// part of the end of a profiled vacation run). A run out of time order (a
/// recorder fed by hand) is sorted instead.
fn merge_by_time(mut runs: Vec<Vec<PageAccess>>) -> Vec<PageAccess> {
    runs.retain(|r| !r.is_empty());
    let total = runs.iter().map(Vec::len).sum();
    if runs.len() <= 1 || !runs.iter().all(|r| r.is_sorted_by_key(|a| a.time_ns)) {
        // One run is taken as it is (and sorted in place if it must be).
        let mut runs = runs.into_iter();
        let mut all = runs.next().unwrap_or_default();
        all.reserve_exact(total - all.len());
        for r in runs {
            all.extend(r);
        }
        if !all.is_sorted_by_key(|a| a.time_ns) {
            all.sort_by_key(|a| a.time_ns);
        }
        return all;
    }
    let base = (0..runs.len()).max_by_key(|&i| runs[i].capacity()).unwrap_or(0);
    let mut out = std::mem::take(&mut runs[base]);
    // What is left of each run to merge: `..left[i]`.
    let mut left: Vec<usize> = runs.iter().map(Vec::len).collect();
    left[base] = out.len();
    let filler = out[0];
    out.reserve_exact(total - out.len());
    out.resize(total, filler);
    let mut end = total;
    loop {
        // The run whose last sample left goes last (the highest index among
        // equal times), and the last sample left of any other run: the
        // block taken from the first starts after it.
        let mut last: Option<(u64, usize)> = None;
        let mut other: Option<(u64, usize)> = None;
        for (i, &n) in left.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let time = if i == base { out[n - 1].time_ns } else { runs[i][n - 1].time_ns };
            let key = (time, i);
            match last {
                Some(l) if l > key => {
                    if other.is_none_or(|o| key > o) {
                        other = Some(key);
                    }
                }
                _ => {
                    other = last;
                    last = Some(key);
                }
            }
        }
        let Some((_, i)) = last else { break };
        let rest = if i == base { &out[..left[i]] } else { &runs[i][..left[i]] };
        let from = match other {
            None => 0,
            // Back to the first sample that comes after the other's (this
            // run's samples at the other's time come before it when this
            // run comes first among equals). A scan, not a binary search:
            // blocks are short, and a search over the whole run missed the
            // cache at every step (it made the merge slower than the sort).
            Some((t, j)) => {
                let after = |a: &&PageAccess| a.time_ns > t || (a.time_ns == t && i > j);
                rest.len() - rest.iter().rev().take_while(after).count()
            }
        };
        let len = left[i] - from;
        // The base run's samples left are below `end - len`: nothing unmerged is overwritten.
        if i == base {
            out.copy_within(from..left[i], end - len);
        } else {
            out[end - len..end].copy_from_slice(&runs[i][from..left[i]]);
        }
        left[i] = from;
        end -= len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pages(r: &Recorder) -> Vec<u64> {
        r.samples().iter().map(|a| a.page).collect()
    }

    fn feed(r: &mut Recorder, n: u64) {
        for i in 1..=n {
            // Page = the access's ordinal (1-based), so samples show which were kept.
            r.offer(PageAccess::read(i, 0, 0, i));
        }
    }

    #[test]
    fn period_keeps_every_nth() {
        let mut r = Recorder::new(Sampling::new(3, 100).unwrap(), Overflow::Thin);
        feed(&mut r, 10);
        assert_eq!(pages(&r), [3, 6, 9]);
        assert_eq!((r.seen(), r.discarded(), r.period()), (10, 0, 3));
    }

    #[test]
    fn drop_keeps_the_first_and_counts_the_rest() {
        let mut r = Recorder::new(Sampling::new(2, 3).unwrap(), Overflow::Drop);
        feed(&mut r, 20);
        assert_eq!(pages(&r), [2, 4, 6]);
        assert_eq!((r.seen(), r.discarded(), r.period()), (20, 7, 2));
    }

    #[test]
    fn thinning_with_odd_capacity_stays_evenly_spaced() {
        let mut r = Recorder::new(Sampling::new(1, 3).unwrap(), Overflow::Thin);
        feed(&mut r, 12);
        // 1,2,3 kept; 4 arrives full: keep 1,3, drop 4, period 2 -> 5 kept
        // (1,3,5); 7 arrives full: keep 1,5, drop 7, period 4 -> 9 kept.
        // Discarded: 2 and 4, then 3 and 7.
        assert_eq!(pages(&r), [1, 5, 9]);
        assert_eq!((r.period(), r.discarded()), (4, 4));
    }

    #[test]
    fn recorders_merge_at_the_largest_period() {
        let mut fast = Recorder::new(Sampling::new(1, 4).unwrap(), Overflow::Thin);
        feed(&mut fast, 8); // 1-4 kept; 5 arrives full: 1,3 + 5, period 2; then 7
        let mut slow = Recorder::new(Sampling::new(1, 64).unwrap(), Overflow::Thin);
        for i in 1..=8 {
            slow.offer(PageAccess::read(100 + i, 1, 1, i));
        }
        let header = ProfileHeader::new("2x1".parse().unwrap(), "t", "x", 2);
        let p = Profile::from_recorders(header, vec![fast, slow]).unwrap();
        assert_eq!(p.header().sampling.period, 2);
        let mut got: Vec<u64> = p.accesses().iter().map(|a| a.page).collect();
        got.sort_unstable();
        assert_eq!(got, [1, 3, 5, 7, 102, 104, 106, 108]);
        assert_eq!((p.header().seen, p.header().discarded), (16, 2 + 4));
    }

    proptest! {
        /// Runs merge into what a stable sort of their samples, one run
        /// after the other, gives: block by block when every run is in
        /// time order (few distinct times, so equal times across runs are
        /// common), by that sort when one is not.
        #[test]
        fn merging_is_a_stable_sort_of_the_runs(
            runs in proptest::collection::vec(proptest::collection::vec(0u64..6, 0..40), 0..6),
            in_order in any::<bool>(),
        ) {
            let runs: Vec<Vec<PageAccess>> = runs
                .into_iter()
                .enumerate()
                .map(|(r, mut times)| {
                    if in_order {
                        times.sort_unstable();
                    }
                    // The page says which run and which sample it was.
                    times.iter().enumerate().map(|(i, &t)| PageAccess::read((r * 1000 + i) as u64, 0, 0, t)).collect()
                })
                .collect();
            let mut expected: Vec<PageAccess> = runs.concat();
            expected.sort_by_key(|a| a.time_ns);
            prop_assert_eq!(merge_by_time(runs), expected);
        }

        /// Memory stays bounded and samples stay evenly spaced at the
        /// reported period, however many accesses overflow the buffer.
        #[test]
        fn bounded_and_even(period in 1u32..5, capacity in 1usize..40, n in 0u64..5000) {
            let mut r = Recorder::new(Sampling::new(period, capacity).unwrap(), Overflow::Thin);
            feed(&mut r, n);
            let p = pages(&r);
            prop_assert!(p.len() <= capacity);
            prop_assert!(r.samples().len() <= capacity);
            let step = u64::from(r.period());
            for w in p.windows(2) {
                prop_assert_eq!(w[1] - w[0], step);
            }
            // Every sample is a multiple of the original period, and nothing
            // after the last kept sample was due.
            if let Some(&last) = p.last() {
                prop_assert_eq!(last % u64::from(period), 0);
                prop_assert!(n - last < step);
            }
            prop_assert_eq!(r.seen(), n);
        }
    }
}
