//! The loom shim of the helper link ([`link`](crate::link)): its atomics,
//! its lock and its box slots come from loom under `cfg(loom)`, so the
//! model checker sees every access and may switch threads at each, and
//! from `std`, parking_lot and crossbeam-utils otherwise. The link imports
//! them only from here (crossbeam-epoch's `mod primitive` is the model).

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use loom::sync::atomic::AtomicPtr;
    use std::marker::PhantomData;
    use std::ptr;

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
    }

    /// crossbeam-utils' `AtomicCell<Option<Box<T>>>` for a model (loom
    /// cannot see into crossbeam's): a box's pointer in an atomic, moved
    /// in and out with one swap (AcqRel, as the lock-free `AtomicCell`'s
    /// swap).
    ///
    /// Invariant: a non-null pointer in `ptr` came from `Box::into_raw`
    /// and is owned by the slot alone: every way in (`new`, `swap`) gives
    /// the slot a box it now owns, and every way out (`swap`, `take`, the
    /// drop) takes the pointer out with the same atomic swap that puts
    /// another in, so no two owners ever hold one pointer.
    #[derive(Debug)]
    pub(crate) struct AtomicBox<T> {
        ptr: AtomicPtr<T>,
        _owns: PhantomData<Box<T>>,
    }

    // SAFETY: the slot owns at most one `Box<T>` and hands it over whole
    // (see the invariant), as a `Mutex<Option<Box<T>>>` would: sending or
    // sharing the slot moves `T` values between threads, never shares
    // one, so `T: Send` is all it needs (`AtomicCell`'s own bound).
    unsafe impl<T: Send> Send for AtomicBox<T> {}
    // SAFETY: as for `Send`: through `&AtomicBox<T>` a thread can only
    // swap whole boxes in and out, never reach a `T` another thread holds.
    unsafe impl<T: Send> Sync for AtomicBox<T> {}

    impl<T> AtomicBox<T> {
        pub(crate) fn new(b: Option<Box<T>>) -> Self {
            AtomicBox { ptr: AtomicPtr::new(b.map_or(ptr::null_mut(), Box::into_raw)), _owns: PhantomData }
        }

        pub(crate) fn swap(&self, b: Option<Box<T>>) -> Option<Box<T>> {
            let old = self.ptr.swap(b.map_or(ptr::null_mut(), Box::into_raw), Ordering::AcqRel);
            // SAFETY: by the invariant, a non-null `old` came from
            // `Box::into_raw` and was owned by this slot alone; the swap
            // took it out, so this call is now its only owner. The
            // Acquire half of the swap orders the writes into the box made
            // before it was swapped in (Release half) before this use.
            (!old.is_null()).then(|| unsafe { Box::from_raw(old) })
        }

        pub(crate) fn take(&self) -> Option<Box<T>> {
            self.swap(None)
        }
    }

    impl<T> Drop for AtomicBox<T> {
        fn drop(&mut self) {
            drop(self.take());
        }
    }
}

#[cfg(not(loom))]
mod imp {
    pub(crate) use parking_lot::Mutex;
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    /// A box's pointer in an atomic (lock-free: `AtomicCell` of a
    /// pointer-sized `Option`), moved in and out with one swap.
    pub(crate) type AtomicBox<T> = crossbeam_utils::atomic::AtomicCell<Option<Box<T>>>;
}

pub(crate) use imp::*;
