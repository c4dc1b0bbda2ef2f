//! The monotonic clock read as a count of nanoseconds, for code that
//! subtracts many moments on a hot path (the worklist's time breakdown
//! reads the clock nine times in a timed unit's turn and sums eight
//! differences). [`Instant`](std::time::Instant) reads the same clock, but
//! each of its subtractions is a checked seconds-and-nanoseconds
//! difference made into a [`Duration`](std::time::Duration), several times
//! the cost of the read itself; a difference of two [`monotonic_ns`]
//! readings is one integer subtraction.

use crate::sys;

/// Nanoseconds on the monotonic clock (Linux's `CLOCK_MONOTONIC`, the
/// clock [`Instant`](std::time::Instant) reads, from the vDSO without a
/// system call) since an unspecified start, the same for every thread of
/// the process. It never goes back. 0 if the clock cannot be read (which
/// Linux does not do for this clock; `Instant::now` panics then).
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::clock::monotonic_ns;
///
/// let a = monotonic_ns();
/// std::thread::sleep(std::time::Duration::from_millis(2));
/// let b = monotonic_ns();
/// assert!(b - a >= 2_000_000);
/// ```
#[inline]
pub fn monotonic_ns() -> u64 {
    sys::monotonic_ns()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn it_is_the_clock_instant_reads_in_nanoseconds() {
        // Two readings around an Instant's, and a sleep between two
        // Instants: the nanosecond count moves as Instant does.
        let a = monotonic_ns();
        let i = Instant::now();
        std::thread::sleep(Duration::from_millis(5));
        let j = Instant::now();
        let b = monotonic_ns();
        let elapsed = u64::try_from((j - i).as_nanos()).unwrap();
        assert!(a > 0 && b >= a + elapsed, "{a} .. {b} around {elapsed} ns");
        assert!(b - a < elapsed + 1_000_000_000, "{a} .. {b} around {elapsed} ns: not nanoseconds");
    }
}
