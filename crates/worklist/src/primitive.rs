//! The loom shim of the worker pool's hand-off ([`crew`](crate::crew)):
//! its atomics, locks, condition variables, `Arc` and spin waits come from
//! loom under `cfg(loom)`, so the model checker sees every access and may
//! switch threads at each, and from `std` and crossbeam otherwise. The
//! crew imports them only from here (crossbeam-epoch's `mod primitive` is
//! the model; `skelaff-stm` has its own for its protocol).
//!
//! The locks are `std`'s (wrapped so that a poisoned lock is simply
//! taken: the crew runs no user code while it holds one), because loom
//! models `std`'s `Mutex` and `Condvar`, not parking_lot's.

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use loom::sync::{Arc, Condvar as RawCondvar, Mutex as RawMutex, MutexGuard};

    /// A model does not spin: every wait goes straight to the lock and
    /// the condition variable, which decide on their own (the spin before
    /// them only reads what the locked path reads again), and each spin
    /// would multiply the interleavings loom explores.
    #[derive(Debug, Default)]
    pub(crate) struct Backoff;

    impl Backoff {
        pub(crate) fn new() -> Self {
            Backoff
        }

        pub(crate) fn yielding() -> Self {
            Backoff
        }

        pub(crate) fn snooze(&self) {}

        pub(crate) fn is_completed(&self) -> bool {
            true
        }
    }
}

#[cfg(not(loom))]
mod imp {
    use std::cell::Cell;
    use std::time::{Duration, Instant};

    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use std::sync::{Arc, Condvar as RawCondvar, Mutex as RawMutex, MutexGuard};

    /// How long a wait yields the CPU, after its spin, before it blocks.
    ///
    /// Runs given back to back (a service's batches, kmeans's iterations)
    /// come a few microseconds apart, the time the caller takes to build
    /// and hand over the next one. A crew thread still awake then takes
    /// the run at once; one that blocked must be woken through the kernel
    /// (a `futex` wake for the caller, and tens of microseconds on a
    /// virtual machine before the thread runs). crossbeam's backoff alone
    /// gives up after about ten microseconds. Yielding, not spinning,
    /// keeps a thread that shares its CPU with the caller (two workers and
    /// the caller on two cores) from holding the CPU the caller needs.
    const YIELD_FOR: Duration = Duration::from_micros(100);

    /// A spin wait: crossbeam's backoff (the pause hint, doubling, then a
    /// few yields), then yields until [`YIELD_FOR`] has passed since it
    /// began; [`is_completed`](Backoff::is_completed) then says to block.
    #[derive(Debug, Default)]
    pub(crate) struct Backoff {
        spin: crossbeam_utils::Backoff,
        /// Yields from the start, without spinning first.
        no_spin: bool,
        /// When the yielding phase began.
        yielding: Cell<Option<Instant>>,
    }

    impl Backoff {
        pub(crate) fn new() -> Self {
            Backoff::default()
        }

        /// A wait that yields from the start: for a thread whose CPU the
        /// threads it waits for may need (a pause loop would hold the CPU
        /// until the scheduler's next tick takes it away).
        pub(crate) fn yielding() -> Self {
            Backoff { no_spin: true, ..Backoff::default() }
        }

        pub(crate) fn snooze(&self) {
            if self.no_spin || self.spin.is_completed() {
                std::thread::yield_now();
            } else {
                self.spin.snooze();
            }
        }

        pub(crate) fn is_completed(&self) -> bool {
            if !self.no_spin && !self.spin.is_completed() {
                return false;
            }
            match self.yielding.get() {
                Some(since) => since.elapsed() >= YIELD_FOR,
                None => {
                    self.yielding.set(Some(Instant::now()));
                    false
                }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_wait_blocks_only_after_its_spin_and_its_time_of_yielding() {
            for backoff in [Backoff::new(), Backoff::yielding()] {
                // Not completed before it has yielded for its time, which
                // starts at its first look or later: so, from before that
                // look, at least YIELD_FOR passes before it completes (the
                // clock only says "at least"; a loaded machine makes it more).
                let began = Instant::now();
                assert!(!backoff.is_completed());
                while !backoff.is_completed() {
                    backoff.snooze();
                }
                assert!(began.elapsed() >= YIELD_FOR, "completed after {:?}", began.elapsed());
                // The spinning one spun its crossbeam backoff out first.
                assert!(backoff.no_spin || backoff.spin.is_completed());
                assert!(backoff.is_completed(), "completion is for good");
            }
            // The yielding one starts its time at once: after its time has
            // passed it is completed on the next look, with no spin first.
            let backoff = Backoff::yielding();
            assert!(!backoff.is_completed());
            std::thread::sleep(std::time::Duration::from_millis(1));
            assert!(backoff.is_completed());
        }
    }
}

pub(crate) use imp::*;

/// A mutex that ignores poisoning (std's and loom's return a `LockResult`).
#[derive(Debug)]
pub(crate) struct Mutex<T>(RawMutex<T>);

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex(RawMutex::new(value))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A condition variable over [`Mutex`] that ignores poisoning.
#[derive(Debug, Default)]
pub(crate) struct Condvar(RawCondvar);

impl Condvar {
    pub(crate) fn new() -> Self {
        Condvar(RawCondvar::new())
    }

    pub(crate) fn wait<'g, T>(&self, guard: MutexGuard<'g, T>) -> MutexGuard<'g, T> {
        self.0.wait(guard).unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}
