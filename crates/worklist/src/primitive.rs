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

        pub(crate) fn snooze(&self) {}

        pub(crate) fn is_completed(&self) -> bool {
            true
        }
    }
}

#[cfg(not(loom))]
mod imp {
    pub(crate) use crossbeam_utils::Backoff;
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use std::sync::{Arc, Condvar as RawCondvar, Mutex as RawMutex, MutexGuard};
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
