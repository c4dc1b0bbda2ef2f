//! A spin lock that never allocates.
//!
//! The arenas cannot use `parking_lot` or `std::sync::Mutex` on their slow
//! paths without care: `parking_lot` grows its parking hash table through the
//! global allocator, which is us. Critical sections here are short (a list
//! splice, a bitmap update), so spinning with a bounded busy-wait and then
//! yielding the CPU is enough; the yield matters on oversubscribed machines,
//! where the holder may have been preempted.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

/// A test-and-test-and-set lock around a `T`.
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: `Sync` lets several threads call `lock`; the lock hands the
// `&mut T` to one of them at a time, so `T` moves between threads (hence
// `T: Send`) but is never shared by two (so `T: Sync` is not needed), as for
// `std::sync::Mutex`. (`Send` needs no impl: it follows from `T: Send`.)
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_contended();
        }
        SpinGuard { lock: self, _not_send_sync: PhantomData }
    }

    /// Takes the lock without a guard, for the fork handlers, which take
    /// every allocator lock in one callback and release them in another.
    /// Pair it with [`unlock_held`](Self::unlock_held).
    pub(crate) fn lock_held(&self) {
        core::mem::forget(self.lock());
    }

    /// Releases a lock taken with [`lock_held`](Self::lock_held).
    ///
    /// # Safety
    ///
    /// - the calling thread took the lock with `lock_held` (in a child
    ///   process after `fork`: the thread that forked took it before the
    ///   fork), and has not released it since;
    /// - no guard of this lock exists.
    pub(crate) unsafe fn unlock_held(&self) {
        self.locked.store(false, Ordering::Release);
    }

    #[cold]
    fn lock_contended(&self) {
        let mut spins = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                if spins < 64 {
                    spins += 1;
                    core::hint::spin_loop();
                } else {
                    // sched_yield: no allocation, no lock.
                    std::thread::yield_now();
                }
            }
            if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return;
            }
        }
    }
}

/// Access to the locked value; unlocks on drop.
///
/// Not `Send` (it is dropped on the thread that locked, like a `MutexGuard`)
/// and `Sync` only when `T` is: a shared guard hands out `&T`.
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    /// Without it the guard would be `Sync` whenever `T: Send` (through
    /// `&SpinLock<T>`), letting two threads share a `&T` of a `!Sync` `T`.
    _not_send_sync: PhantomData<*mut T>,
}

// SAFETY: a shared guard gives out only `&T`, which other threads may hold
// when `T: Sync`.
unsafe impl<T: Sync> Sync for SpinGuard<'_, T> {}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: a guard exists only between a successful `lock` and its
        // drop, so no other guard (and no other reference to the value)
        // exists; the `&T` lives no longer than the borrow of the guard.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only
        // reference through the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excludes_other_threads() {
        static L: SpinLock<u64> = SpinLock::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        *L.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(*L.lock(), 80_000);
    }

    #[test]
    fn a_held_lock_excludes_until_released() {
        static L: SpinLock<u64> = SpinLock::new(0);
        L.lock_held();
        let other = std::thread::spawn(|| *L.lock() += 1);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!other.is_finished(), "a held lock let another thread in");
        // SAFETY: this thread took the lock with `lock_held`; no guard exists.
        unsafe { L.unlock_held() };
        other.join().unwrap();
        assert_eq!(*L.lock(), 1);
    }
}
