//! Waiting in `retry`: a transaction that asked to wait sleeps until one of
//! the stripes it read moves past its snapshot, woken by committers.
//!
//! Committers look at the number of waiters (one relaxed load) and notify
//! only when someone waits; a missed notification costs a waiter at most
//! one poll interval (1 ms), so the condition variable needs no handshake
//! with the commit path. In loom models the wait is a yield loop (loom
//! models no timeouts); the models do not use `retry`.

use crate::engine::engine;
use crate::lockword::{is_locked, version};
use crate::primitive::Ordering;

/// Whether any stripe in `locks` is locked or newer than `rv`.
fn changed(locks: &[u32], rv: u64) -> bool {
    locks.iter().any(|&i| {
        let w = engine().lock(i as usize).load(Ordering::Acquire);
        is_locked(w) || version(w) > rv
    })
}

#[cfg(not(loom))]
mod wake {
    use std::time::Duration;

    use parking_lot::{Condvar, Mutex};

    use crate::primitive::{AtomicUsize, Ordering};

    struct Wake {
        waiters: AtomicUsize,
        lock: Mutex<()>,
        cv: Condvar,
    }

    static WAKE: Wake = Wake { waiters: AtomicUsize::new(0), lock: Mutex::new(()), cv: Condvar::new() };
    const POLL: Duration = Duration::from_millis(1);

    #[inline]
    pub(super) fn notify() {
        if WAKE.waiters.load(Ordering::Relaxed) != 0 {
            let _g = WAKE.lock.lock();
            WAKE.cv.notify_all();
        }
    }

    pub(super) fn wait(locks: &[u32], rv: u64) {
        WAKE.waiters.fetch_add(1, Ordering::SeqCst);
        while !super::changed(locks, rv) {
            let mut g = WAKE.lock.lock();
            if super::changed(locks, rv) {
                break;
            }
            WAKE.cv.wait_for(&mut g, POLL);
            if locks.is_empty() {
                // Nothing read can change: run again after one poll.
                break;
            }
        }
        WAKE.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(loom)]
mod wake {
    #[inline]
    pub(super) fn notify() {}

    pub(super) fn wait(locks: &[u32], rv: u64) {
        while !locks.is_empty() && !super::changed(locks, rv) {
            crate::primitive::yield_now();
        }
    }
}

/// A transaction that wrote has committed: wake the waiters, if any.
#[inline]
pub(crate) fn wake_waiters() {
    wake::notify();
}

/// Blocks until one of the stripes in `locks` (sorted, deduplicated) is
/// locked or newer than `rv`, or at once after one poll if `locks` is empty.
#[cold]
pub(crate) fn wait_for_change(locks: &[u32], rv: u64) {
    wake::wait(locks, rv);
}
