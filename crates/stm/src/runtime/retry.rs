//! Waiting in `retry`: a transaction that asked to wait sleeps until a word
//! it read may have changed, woken by committers.
//!
//! A waiter cannot look at the words it read once its transaction has
//! ended: reclamation may free them. So the waiting goes through a small
//! table of *wake slots*, indexed by a hash of a word's lock address: a
//! writing commit, when anyone waits, bumps the slot of every lock it
//! releases (after releasing it) and notifies. A waiter, while its
//! transaction still protects what it read, registers, notes its slots'
//! values, then validates its read set: a word already changed since the
//! snapshot means no sleep at all. Otherwise it sleeps until one of its
//! slots moves. A commit that released a lock before the waiter
//! registered is seen by that validation; one that releases after it
//! finds the waiter registered and bumps the slot. Between the two, a
//! committer may find the waiter count still zero (the count is read with
//! a relaxed load, so the commit path pays no fence): the waiter then
//! misses that bump, and its sleep is bounded: after 50 ms with no slot
//! moved it runs the transaction again anyway. A slot shared by two locks wakes a
//! waiter for nothing; it runs again and, if nothing it read changed,
//! waits again.
//!
//! In loom models the wait is a short yield loop; the models do not use
//! `retry`.

use crate::primitive::AtomicU64;

/// Wake slots (a power of two).
#[cfg_attr(loom, allow(dead_code))]
const SLOTS: usize = 1024;

/// The wake slot of the lock at `lock`.
#[cfg_attr(loom, allow(dead_code))]
#[inline(always)]
fn slot_of(lock: *const AtomicU64) -> usize {
    ((lock as usize as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize & (SLOTS - 1)
}

/// A waiter's slots and the values it saw in them.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    seen: Vec<(u32, u64)>,
}

#[cfg(not(loom))]
mod wake {
    use std::time::Duration;

    use parking_lot::{Condvar, Mutex};

    use super::{SLOTS, Slots, slot_of};
    use crate::primitive::{AtomicU64, AtomicUsize, Ordering};

    struct Wake {
        waiters: AtomicUsize,
        lock: Mutex<()>,
        cv: Condvar,
        slots: [AtomicU64; SLOTS],
    }

    static WAKE: Wake = Wake {
        waiters: AtomicUsize::new(0),
        lock: Mutex::new(()),
        cv: Condvar::new(),
        slots: [const { AtomicU64::new(0) }; SLOTS],
    };
    /// How often a waiter looks at its slots (besides being woken).
    const POLL: Duration = Duration::from_millis(1);
    /// How long a waiter whose slots did not move waits before running its
    /// transaction again anyway (a missed bump costs at most this).
    const FALLBACK: Duration = Duration::from_millis(50);

    #[inline(always)]
    pub(super) fn waiting() -> bool {
        WAKE.waiters.load(Ordering::Relaxed) != 0
    }

    #[inline]
    pub(super) fn bump(lock: &AtomicU64) {
        WAKE.slots[slot_of(lock)].fetch_add(1, Ordering::Release);
    }

    pub(super) fn notify() {
        let _g = WAKE.lock.lock();
        WAKE.cv.notify_all();
    }

    pub(super) fn register(locks: &[*const AtomicU64], into: &mut Slots) {
        WAKE.waiters.fetch_add(1, Ordering::SeqCst);
        into.seen.clear();
        into.seen.extend(locks.iter().map(|&l| (slot_of(l) as u32, 0)));
        into.seen.sort_unstable();
        into.seen.dedup();
        for (s, v) in &mut into.seen {
            *v = WAKE.slots[*s as usize].load(Ordering::Acquire);
        }
    }

    fn moved(slots: &Slots) -> bool {
        slots.seen.iter().any(|&(s, v)| WAKE.slots[s as usize].load(Ordering::Acquire) != v)
    }

    pub(super) fn wait(slots: &Slots) {
        let start = std::time::Instant::now();
        let mut g = WAKE.lock.lock();
        loop {
            if !slots.seen.is_empty() && moved(slots) {
                break;
            }
            WAKE.cv.wait_for(&mut g, POLL);
            // Nothing read can change, or a bump may have been missed (see
            // the module docs): run again after a while.
            if slots.seen.is_empty() || start.elapsed() >= FALLBACK {
                break;
            }
        }
        drop(g);
        unregister();
    }

    pub(super) fn unregister() {
        WAKE.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(loom)]
mod wake {
    use super::Slots;
    use crate::primitive::AtomicU64;

    #[inline(always)]
    pub(super) fn waiting() -> bool {
        false
    }
    pub(super) fn bump(_: &AtomicU64) {}
    pub(super) fn notify() {}
    pub(super) fn register(_: &[*const AtomicU64], into: &mut Slots) {
        into.seen.clear();
    }
    pub(super) fn wait(_: &Slots) {
        crate::primitive::yield_now();
    }
    pub(super) fn unregister() {}
}

/// Whether any transaction waits in `retry` (a writing commit then bumps
/// the slots of the locks it releases). One relaxed load.
#[inline(always)]
pub(crate) fn waiters_exist() -> bool {
    wake::waiting()
}

/// A writing commit released `lock` (call only when [`waiters_exist`]).
#[inline]
pub(crate) fn released(lock: &AtomicU64) {
    wake::bump(lock);
}

/// A writing commit that bumped slots is done: wake the waiters.
#[cold]
pub(crate) fn wake_waiters() {
    wake::notify();
}

/// Registers the calling thread as a waiter on the words whose locks are
/// `locks` (the read set of a transaction that still protects them), noting
/// their slots in `into`. Follow it with [`wait`] or [`give_up`].
#[cold]
pub(crate) fn register(locks: &[*const AtomicU64], into: &mut Slots) {
    wake::register(locks, into);
}

/// Sleeps until one of the slots of `slots` moves, or one poll interval
/// passes; then the caller runs its transaction again. Unregisters.
#[cold]
pub(crate) fn wait(slots: &Slots) {
    wake::wait(slots);
}

/// Unregisters without sleeping (a word read had already changed).
#[cold]
pub(crate) fn give_up() {
    wake::unregister();
}
