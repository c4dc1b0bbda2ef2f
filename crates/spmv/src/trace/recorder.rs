//! [`ThreadTrace`]: one team thread's bounded sample buffer, sampled per
//! array and thinned by halves when full (see the [module docs](super) for
//! what the samples then are).

use std::time::Instant;

use super::{Touch, TouchKind, TraceOptions, TracedArray};
use crate::team::ThreadSlot;

/// How many arrays are sampled apart.
const ARRAYS: usize = TracedArray::ALL.len();

/// One thread's samples of a traced pass.
///
/// Invariants: `samples.len() <= capacity`; `held[a]` counts the samples of
/// array `a` in `samples`; `countdown[a] >= 1` between calls (the accesses
/// of `a` until the next one due).
///
/// # Examples
///
/// ```
/// use std::time::Instant;
///
/// use skelaff_spmv::ThreadSlot;
/// use skelaff_spmv::trace::{ThreadTrace, TraceOptions, TracedArray};
///
/// let slot = ThreadSlot { cpu: 0, node: 0 };
/// let mut t = ThreadTrace::new(0, slot, TraceOptions::new(2, 9)?, Instant::now());
/// for i in 0..40 {
///     t.read(TracedArray::Values, 0x1000 + 8 * i);
/// }
/// // 20 were due at period 2; the buffer holds 9, so it thinned twice
/// // (period 8) and keeps accesses 2, 10, 18, 26 and 34 (1-based).
/// assert_eq!(t.period(), 8);
/// let kept: Vec<usize> = t.samples().iter().map(|s| (s.addr - 0x1000) / 8 + 1).collect();
/// assert_eq!(kept, [2, 10, 18, 26, 34]);
/// // Discarded: 4 thinned away and the overflowing access (20th), twice.
/// assert_eq!((t.seen(), t.discarded()), (40, 10));
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ThreadTrace {
    thread: usize,
    slot: ThreadSlot,
    ran_on: Option<usize>,
    period: u32,
    capacity: usize,
    countdown: [u64; ARRAYS],
    held: [u64; ARRAYS],
    seen: [u64; ARRAYS],
    discarded: u64,
    samples: Vec<Touch>,
    origin: Instant,
}

impl ThreadTrace {
    /// An empty trace for team thread `thread`, pinned as `slot`, timing
    /// from `origin`. Options that [`TraceOptions::checked`] would refuse
    /// are raised to the least valid ones (period 1, one sample per array).
    pub fn new(thread: usize, slot: ThreadSlot, options: TraceOptions, origin: Instant) -> ThreadTrace {
        let period = options.period.max(1);
        let capacity = options.capacity.max(ARRAYS);
        ThreadTrace {
            thread,
            slot,
            ran_on: None,
            period,
            capacity,
            countdown: [u64::from(period); ARRAYS],
            held: [0; ARRAYS],
            seen: [0; ARRAYS],
            discarded: 0,
            samples: Vec::with_capacity(capacity.min(4096)),
            origin,
        }
    }

    /// Counts a read of `addr` in `array`, and keeps it if it is due.
    #[inline]
    pub fn read(&mut self, array: TracedArray, addr: usize) {
        self.touch(array, TouchKind::Read, addr);
    }

    /// Counts a write of `addr` in `array`, and keeps it if it is due.
    #[inline]
    pub fn write(&mut self, array: TracedArray, addr: usize) {
        self.touch(array, TouchKind::Write, addr);
    }

    /// Counts an access of `array`, and keeps it if it is that array's
    /// `period`-th since the last one kept.
    #[inline]
    pub fn touch(&mut self, array: TracedArray, kind: TouchKind, addr: usize) {
        let a = array.index();
        self.seen[a] += 1;
        self.countdown[a] -= 1;
        if self.countdown[a] == 0 {
            self.take(array, kind, addr);
        }
    }

    #[cold]
    fn take(&mut self, array: TracedArray, kind: TouchKind, addr: usize) {
        let a = array.index();
        if self.samples.len() >= self.capacity {
            // Thinning leaves this access due (countdown 0) exactly when it
            // is one of the samples the doubled period keeps.
            self.thin();
            if self.countdown[a] != 0 {
                self.discarded += 1;
                return;
            }
            if self.samples.len() >= self.capacity {
                // Cannot happen with capacity >= ARRAYS (a full buffer with
                // this access due holds two samples of some array), but never
                // grow past the bound.
                self.discarded += 1;
                self.countdown[a] = u64::from(self.period);
                return;
            }
        }
        let time_ns = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.samples.push(Touch { addr, time_ns, array, kind });
        self.held[a] += 1;
        self.countdown[a] = u64::from(self.period);
    }

    /// Keeps every other sample of each array (the first, third, ...) and
    /// doubles the period. An array holding an even number of samples has
    /// just dropped its last, so its next due access is where it was; one
    /// holding an odd number kept its last, so its next is a period later.
    fn thin(&mut self) {
        let before = self.samples.len();
        let mut position = [0u64; ARRAYS];
        self.samples.retain(|s| {
            let p = &mut position[s.array.index()];
            *p += 1;
            *p % 2 == 1
        });
        self.discarded += (before - self.samples.len()) as u64;
        for a in 0..ARRAYS {
            if self.held[a] % 2 == 1 {
                self.countdown[a] += u64::from(self.period);
            }
            self.held[a] = self.held[a].div_ceil(2);
        }
        self.period = self.period.saturating_mul(2);
    }

    /// Thins until the period is at least `period` (periods grow by
    /// doubling, so two threads started alike meet exactly).
    pub(crate) fn thin_to(&mut self, period: u32) {
        while self.period < period && self.period < u32::MAX {
            self.thin();
        }
    }

    /// Records the CPU the thread found itself on (`getcpu`) during the pass.
    pub(crate) fn set_ran_on(&mut self, cpu: Option<usize>) {
        self.ran_on = cpu;
    }

    /// The team thread's index.
    pub fn thread(&self) -> usize {
        self.thread
    }

    /// Where the team pinned it: its CPU and that CPU's node.
    pub fn slot(&self) -> ThreadSlot {
        self.slot
    }

    /// The CPU the kernel said it was running on at the end of the pass
    /// (`None` when not asked or when `getcpu` failed); equal to
    /// `slot().cpu` for a pinned team thread.
    pub fn ran_on(&self) -> Option<usize> {
        self.ran_on
    }

    /// The number of accesses each kept sample stands for.
    pub fn period(&self) -> u32 {
        self.period
    }

    /// The most samples it holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Accesses counted, sampled or not.
    pub fn seen(&self) -> u64 {
        self.seen.iter().sum()
    }

    /// Accesses of `array` counted, sampled or not.
    pub fn seen_of(&self, array: TracedArray) -> u64 {
        self.seen[array.index()]
    }

    /// Samples thinned away (or, in a degenerate buffer, dropped).
    pub fn discarded(&self) -> u64 {
        self.discarded
    }

    /// The kept samples, in the order they were taken.
    pub fn samples(&self) -> &[Touch] {
        &self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SLOT: ThreadSlot = ThreadSlot { cpu: 3, node: 1 };

    fn trace(period: u32, capacity: usize) -> ThreadTrace {
        ThreadTrace::new(7, SLOT, TraceOptions { period, capacity }, Instant::now())
    }

    /// The 1-based access numbers of `array`'s kept samples (the tests
    /// touch address `n` for the `n`-th access of each array).
    fn kept(t: &ThreadTrace, array: TracedArray) -> Vec<u64> {
        t.samples().iter().filter(|s| s.array == array).map(|s| s.addr as u64).collect()
    }

    #[test]
    fn every_period_th_access_of_each_array() {
        let mut t = trace(3, 1000);
        for n in 1..=10 {
            t.read(TracedArray::Values, n);
            t.read(TracedArray::ColIdx, n);
            t.read(TracedArray::X, n);
            if n % 2 == 0 {
                t.write(TracedArray::Y, n / 2);
            }
        }
        assert_eq!(kept(&t, TracedArray::Values), [3, 6, 9]);
        assert_eq!(kept(&t, TracedArray::ColIdx), [3, 6, 9]);
        assert_eq!(kept(&t, TracedArray::X), [3, 6, 9]);
        assert_eq!(kept(&t, TracedArray::Y), [3]);
        assert!(t.samples().iter().filter(|s| s.array == TracedArray::Y).all(|s| s.kind == TouchKind::Write));
        assert_eq!((t.seen(), t.seen_of(TracedArray::Y), t.discarded(), t.period()), (35, 5, 0, 3));
        // One counter over all arrays would have kept only every third
        // access of the loop: always the x read.
        let times: Vec<u64> = t.samples().iter().map(|s| s.time_ns).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "times follow the order taken");
    }

    #[test]
    fn thread_attribution_is_the_constructors() {
        let mut t = trace(1, 16);
        t.set_ran_on(Some(3));
        t.write(TracedArray::Q, 8);
        assert_eq!((t.thread(), t.slot(), t.ran_on()), (7, SLOT, Some(3)));
        assert_eq!(
            t.samples()[0],
            Touch { addr: 8, time_ns: t.samples()[0].time_ns, array: TracedArray::Q, kind: TouchKind::Write }
        );
    }

    #[test]
    fn thinning_keeps_every_other_sample_of_each_array() {
        // Capacity 10: A takes 1..=6, B 1..=4 (at period 1), then A's 7th
        // finds the buffer full. A keeps 1, 3, 5 and its 7th is kept
        // (6 held, even: 7 is odd-numbered); B keeps 1, 3, and its next
        // due is its 5th (4 held: even, so unchanged).
        let mut t = trace(1, 10);
        for n in 1..=6 {
            t.read(TracedArray::Values, n);
        }
        for n in 1..=4 {
            t.read(TracedArray::ColIdx, n);
        }
        t.read(TracedArray::Values, 7);
        assert_eq!(t.period(), 2);
        assert_eq!(kept(&t, TracedArray::Values), [1, 3, 5, 7]);
        assert_eq!(kept(&t, TracedArray::ColIdx), [1, 3]);
        assert_eq!(t.discarded(), 3 + 2);
        for n in 5..=9 {
            t.read(TracedArray::ColIdx, n);
        }
        assert_eq!(kept(&t, TracedArray::ColIdx), [1, 3, 5, 7, 9]);
        for n in 8..=9 {
            t.read(TracedArray::Values, n);
        }
        assert_eq!(kept(&t, TracedArray::Values), [1, 3, 5, 7, 9]);
        assert_eq!(t.samples().len(), 10);
    }

    #[test]
    fn an_odd_count_skips_the_access_that_overflowed() {
        // Capacity 9 of one array at period 1: the 10th arrives with 9 held
        // (odd), so 1, 3, 5, 7, 9 stay and the 10th is dropped; next is the 11th.
        let mut t = trace(1, 9);
        for n in 1..=10 {
            t.read(TracedArray::P, n);
        }
        assert_eq!(kept(&t, TracedArray::P), [1, 3, 5, 7, 9]);
        assert_eq!((t.discarded(), t.period()), (4 + 1, 2));
        t.read(TracedArray::P, 11);
        assert_eq!(kept(&t, TracedArray::P), [1, 3, 5, 7, 9, 11]);
    }

    #[test]
    fn thin_to_meets_a_larger_period() {
        let mut t = trace(2, 1000);
        for n in 1..=40 {
            t.read(TracedArray::Z, n);
        }
        t.thin_to(8);
        assert_eq!(t.period(), 8);
        assert_eq!(kept(&t, TracedArray::Z), [2, 10, 18, 26, 34]);
        t.thin_to(8);
        assert_eq!(t.period(), 8, "already there");
    }

    #[test]
    fn invalid_options_are_raised_not_trusted() {
        let mut t = trace(0, 0);
        assert_eq!((t.period(), t.capacity()), (1, ARRAYS));
        for n in 1..=100 {
            t.read(TracedArray::R, n);
        }
        assert!(t.samples().len() <= ARRAYS);
    }

    proptest! {
        /// Whatever the interleaving of arrays, the buffer never exceeds its
        /// capacity and holds exactly the accesses `n ≡ period₀ (mod
        /// period)` of each array, at the final period; counts add up.
        #[test]
        fn bounded_and_exactly_the_residue_class(
            period in 1u32..6,
            capacity in ARRAYS..60,
            arrays in prop::collection::vec(0usize..ARRAYS, 0..3000),
        ) {
            let mut t = trace(period, capacity);
            let mut count = [0u64; ARRAYS];
            for &a in &arrays {
                count[a] += 1;
                t.touch(TracedArray::ALL[a], TouchKind::Read, count[a] as usize);
                prop_assert!(t.samples().len() <= capacity);
            }
            let p = u64::from(t.period());
            prop_assert_eq!(p % u64::from(period), 0);
            prop_assert!((p / u64::from(period)).is_power_of_two());
            for (a, &n) in count.iter().enumerate() {
                let want: Vec<u64> = (1..=n).filter(|k| k % p == u64::from(period) % p).collect();
                prop_assert_eq!(kept(&t, TracedArray::ALL[a]), want, "array {}", a);
                prop_assert_eq!(t.seen_of(TracedArray::ALL[a]), n);
            }
            // Every sample kept or discarded was due at the first period,
            // once; without thinning, every due access is kept.
            let due: u64 = count.iter().map(|&n| n / u64::from(period)).sum();
            let taken = t.samples().len() as u64 + t.discarded();
            if t.period() == period {
                prop_assert_eq!(taken, due);
            } else {
                prop_assert!(taken <= due);
            }
            prop_assert_eq!(t.seen(), arrays.len() as u64);
        }
    }
}
