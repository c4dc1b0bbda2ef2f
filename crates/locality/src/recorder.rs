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
use crate::profile::{Access, Profile, ProfileHeader, Sampling};

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
/// use skelaff_locality::{Access, Overflow, Recorder, Sampling};
///
/// let mut r = Recorder::new(Sampling::new(1, 4)?, Overflow::Thin);
/// for t in 0..16 {
///     r.offer(Access::read(t, 0, 0, t));
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
    buf: Vec<Access>,
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
    pub fn offer(&mut self, access: Access) -> bool {
        self.seen += 1;
        self.countdown -= 1;
        if self.countdown == 0 {
            self.keep(access);
            return true;
        }
        false
    }

    /// Whether the next [`offer`](Self::offer) would keep its access (so a
    /// caller can skip building an access that would not be kept).
    #[inline]
    pub fn due(&self) -> bool {
        self.countdown == 1
    }

    #[cold]
    fn keep(&mut self, access: Access) {
        self.countdown = self.period;
        if self.buf.len() < self.capacity {
            self.buf.push(access);
            return;
        }
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
    pub fn samples(&self) -> &[Access] {
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
        let total: usize = recorders.iter().map(|r| r.buf.len()).sum();
        let (mut seen, mut discarded) = (0, 0);
        let mut recorders = recorders.into_iter();
        // The first recorder's buffer becomes the profile's when it keeps
        // all its samples (the usual case): grown in place rather than
        // copied, which for a long run spares megabytes of fresh pages.
        let mut accesses = Vec::new();
        let mut first = None;
        if let Some(r) = recorders.next() {
            if r.period == period {
                seen += r.seen;
                discarded += r.discarded;
                accesses = r.buf;
            } else {
                first = Some(r);
            }
        }
        accesses.reserve(total - accesses.len());
        for r in first.into_iter().chain(recorders) {
            seen += r.seen;
            discarded += r.discarded;
            // Periods are the configured one times powers of two, so the
            // ratio is whole when all recorders started alike; round otherwise.
            let step = (f64::from(period) / f64::from(r.period)).round().max(1.0) as usize;
            let len = r.buf.len();
            // Keep the last of each `step` (the samples the larger period would have taken).
            accesses.extend(r.buf.into_iter().enumerate().filter(|(i, _)| (i + 1) % step == 0).map(|(_, a)| a));
            discarded += (len - len / step) as u64;
        }
        header.sampling.period = period;
        header.seen += seen;
        header.discarded += discarded;
        Profile::new(header, accesses)
    }
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
            r.offer(Access::read(i, 0, 0, i));
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
            slow.offer(Access::read(100 + i, 1, 1, i));
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
