//! The loom shim: every atomic, fence, `UnsafeCell`, mutex, spin and yield
//! of the protocol, the thread registry and epoch reclamation comes from
//! here — from loom under `cfg(loom)`, so the model checker sees every
//! access and may switch threads at each, from `core`, `std`, parking_lot
//! and crossbeam otherwise. Code in this crate imports them only from here
//! (crossbeam-epoch's `mod primitive` is the model).
//!
//! `UnsafeCell` is reached only through `with` (shared) and `with_mut`
//! (exclusive), as loom's is: under loom every such access is checked
//! against the happens-before order, so a read not ordered before a
//! concurrent write is reported as a race.

#[cfg(loom)]
mod imp {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
    pub(crate) use loom::thread::yield_now;

    /// In a loom model a spin must yield, or the model never ends.
    #[inline]
    pub(crate) fn spin_loop() {
        loom::thread::yield_now();
    }

    /// A mutex with parking_lot's interface (no poisoning) over loom's.
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
        }

        pub(crate) fn try_lock(&self) -> Option<loom::sync::MutexGuard<'_, T>> {
            self.0.try_lock().ok()
        }
    }

    /// `crossbeam_utils::Backoff`'s `snooze` for a model: every wait yields
    /// to loom's scheduler.
    #[derive(Debug, Default)]
    pub(crate) struct Backoff;

    impl Backoff {
        pub(crate) fn new() -> Self {
            Backoff
        }

        pub(crate) fn snooze(&self) {
            loom::thread::yield_now();
        }
    }
}

#[cfg(not(loom))]
mod imp {
    pub(crate) use core::hint::spin_loop;
    pub(crate) use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
    pub(crate) use crossbeam_utils::Backoff;
    pub(crate) use parking_lot::Mutex;
    pub(crate) use std::thread::yield_now;

    /// `core::cell::UnsafeCell` with loom's closure interface.
    #[derive(Debug)]
    #[repr(transparent)]
    pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        /// A cell holding `value`.
        #[inline(always)]
        pub(crate) const fn new(value: T) -> Self {
            UnsafeCell(core::cell::UnsafeCell::new(value))
        }

        /// Calls `f` with a pointer for shared access.
        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Calls `f` with a pointer for exclusive access.
        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

pub(crate) use imp::*;
