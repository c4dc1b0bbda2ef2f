//! The atomics the protocol is built on: from loom under `cfg(loom)` (so the
//! model checker sees every access), from `core` otherwise. Protocol code
//! imports atomics only from here.

#[cfg(loom)]
pub(crate) mod imp {
    pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};

    /// In a loom model a spin must yield, or the model never ends.
    #[inline]
    pub(crate) fn spin_loop() {
        loom::thread::yield_now();
    }
}

#[cfg(not(loom))]
pub(crate) mod imp {
    pub(crate) use core::hint::spin_loop;
    pub(crate) use core::sync::atomic::{AtomicU64, Ordering};
}

pub(crate) use imp::*;
