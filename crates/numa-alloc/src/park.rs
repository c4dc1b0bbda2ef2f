//! One parker: how a thread waits for a condition another thread makes
//! true, blocked in the kernel rather than spinning, without missing the
//! wake-up ([`Parking`], over crossbeam-utils' [`Parker`] and `Unparker`).
//!
//! The waiting thread owns a [`Parker`] (a token that an unpark makes
//! available and a park consumes, so an unpark that comes before the park
//! is not lost) and shares a [`Parking`] with the threads that wake it,
//! which hold the parker's [`Unparker`]. The [`Parking`] holds one word,
//! `sleeping`, so that a waker pays an unpark (a read-modify-write on the
//! parker's line, and a `futex` wake if it sleeps) only when the waiter
//! may be parked, and otherwise one fence and one load of a line it only
//! reads while the waiter is awake.
//!
//! # The protocol
//!
//! One waiter per [`Parking`] at a time; any number of wakers.
//!
//! | waiter ([`Parking::park_until`]) | waker ([`Parking::wake`]) |
//! |---|---|
//! | `sleeping = true`, SeqCst fence, then looks at `ready()` | makes `ready()` true, SeqCst fence, then loads `sleeping` |
//! | `ready()`: `sleeping = false`, returns | `sleeping` false: done (the waiter is awake and will look) |
//! | not `ready()`: parks (consumes the token, or waits for it) | `sleeping` true: unparks (makes the token available) |
//! | woken: `sleeping = false`, looks at `ready()` again, and goes round | |
//!
//! The two fences order the two store-then-load pairs (Dekker's pattern):
//! of the waiter's announcement and the waker's condition, at least one
//! side sees the other's store. Either the waiter sees the condition and
//! does not park, or the waker sees `sleeping` and unparks it; an unpark
//! that lands before the park leaves the token, and the park returns at
//! once. No wake-up is lost, and a spurious return (the parker allows
//! them) only costs another round. `tests/loom_park.rs` model-checks it;
//! it fails when the waiter looks at its condition before it announces
//! itself, or when a waker skips its fence.
//!
//! A waker that has already issued a SeqCst fence after making the
//! condition true (as the STM's application thread does when it starts an
//! attempt) calls [`Parking::wake_after_fence`], which skips the second.
//!
//! # Timeouts
//!
//! With a timeout, [`Parking::park_until`] parks at most once: it returns
//! when the condition holds, or after one park that ended without it (the
//! time ran out, or the park returned spuriously). Either way `sleeping`
//! is false again, and an unpark that arrives after the timeout leaves a
//! token that only makes the next park return at once, to look again.

use std::cell::Cell;
use std::marker::PhantomData;
use std::time::Duration;

use crate::primitive::{AtomicBool, Ordering, RawParker, RawUnparker, fence};

/// A waiting thread's parker (crossbeam-utils' `Parker`): owned by the
/// thread that waits through it, never shared (it is `Send`, not `Sync`).
#[derive(Debug, Default)]
pub struct Parker {
    raw: RawParker,
    /// One thread parks on it at a time.
    _not_sync: PhantomData<Cell<()>>,
}

impl Parker {
    /// A parker with no token.
    pub fn new() -> Self {
        Parker::default()
    }

    /// The handle that wakes this parker; give a clone to each waker.
    pub fn unparker(&self) -> Unparker {
        Unparker { raw: self.raw.unparker().clone() }
    }
}

/// Wakes one [`Parker`] (crossbeam-utils' `Unparker`); clone it freely.
#[derive(Debug, Clone)]
pub struct Unparker {
    raw: RawUnparker,
}

impl Unparker {
    /// Makes the parker's token available, whether or not its thread is
    /// parked: its current or next park returns. For a wake-up that must
    /// not wait on `sleeping` (a shutdown that the waiter's condition
    /// includes); otherwise [`Parking::wake`] spares the unpark.
    pub fn unpark(&self) {
        self.raw.unpark();
    }
}

/// What one [`Parking::park_until`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a timed wait may return with its condition still false"]
pub struct Parked {
    /// Whether the condition held when it returned (false only with a
    /// timeout: the time ran out, or the park returned spuriously).
    pub ready: bool,
    /// Times the thread parked.
    pub parks: u64,
}

/// The word a waiting thread and its wakers share (see the module docs for
/// the protocol): whether the waiter may be parked.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use skelaff_numa_alloc::park::{Parker, Parking};
///
/// let (flag, parking, parker) = (AtomicBool::new(false), Parking::new(), Parker::new());
/// let unparker = parker.unparker();
/// let (flag, parking) = (&flag, &parking);
/// std::thread::scope(|s| {
///     // The parker moves to the thread that waits with it.
///     s.spawn(move || {
///         // Parks until the flag is up.
///         let parked = parking.park_until(&parker, None, || flag.load(Ordering::Acquire));
///         assert!(parked.ready);
///     });
///     flag.store(true, Ordering::Release);
///     parking.wake(&unparker);
/// });
/// ```
#[derive(Debug, Default)]
pub struct Parking {
    /// The waiter announced that it may park (set before it looks at its
    /// condition a last time, cleared once it runs again).
    sleeping: AtomicBool,
}

impl Parking {
    /// A parking nobody waits on.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Parking { sleeping: AtomicBool::new(false) }
    }

    /// A parking nobody waits on (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        Parking { sleeping: AtomicBool::new(false) }
    }

    /// Parks the calling thread on `parker` until `ready()` is true (the
    /// waiter's half of the protocol), looking again after every wake-up,
    /// spurious ones included. With a `timeout`, parks at most once, for
    /// at most that long (see the module docs).
    ///
    /// `ready` is called at least once, and again after each park: keep
    /// it to a few loads, and make it true only through stores that the
    /// waker then follows with [`wake`](Self::wake). Only one thread may
    /// wait on a parking at a time (a second waiter's return would clear
    /// the first one's announcement, and a wake-up could be lost: a
    /// missed wake-up, never undefined behaviour).
    pub fn park_until(&self, parker: &Parker, timeout: Option<Duration>, mut ready: impl FnMut() -> bool) -> Parked {
        let mut parks = 0;
        loop {
            self.sleeping.store(true, Ordering::Relaxed);
            // Pairs with the waker's fence: see the module docs.
            fence(Ordering::SeqCst);
            if ready() {
                self.sleeping.store(false, Ordering::Relaxed);
                return Parked { ready: true, parks };
            }
            parks += 1;
            match timeout {
                Some(t) => parker.raw.park_timeout(t),
                None => parker.raw.park(),
            }
            self.sleeping.store(false, Ordering::Relaxed);
            if ready() {
                return Parked { ready: true, parks };
            }
            if timeout.is_some() {
                return Parked { ready: false, parks };
            }
        }
    }

    /// Wakes the waiter if it may be parked, and returns whether it was
    /// (the waker's half of the protocol). Call it after making the
    /// waiter's condition true; `unparker` is the waiter's.
    #[inline]
    pub fn wake(&self, unparker: &Unparker) -> bool {
        fence(Ordering::SeqCst);
        self.wake_after_fence(unparker)
    }

    /// [`wake`](Self::wake) for a waker that has issued a SeqCst fence
    /// (`std::sync::atomic::fence`) itself after making the condition true
    /// and before this call: the same, without a second fence. Without
    /// such a fence a wake-up can be lost.
    #[inline]
    pub fn wake_after_fence(&self, unparker: &Unparker) -> bool {
        if self.sleeping.load(Ordering::Relaxed) {
            unparker.unpark();
            return true;
        }
        false
    }

    /// Whether the waiter has announced that it may park (for tests and
    /// figures: it can change at any moment).
    pub fn is_sleeping(&self) -> bool {
        self.sleeping.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::time::Instant;

    #[test]
    fn a_ready_condition_returns_without_parking_and_a_wake_finds_nobody() {
        let (parking, parker) = (Parking::new(), Parker::new());
        assert_eq!(parking.park_until(&parker, None, || true), Parked { ready: true, parks: 0 });
        assert!(!parking.is_sleeping());
        assert!(!parking.wake(&parker.unparker()));
    }

    #[test]
    fn a_timed_park_without_a_waker_times_out_awake() {
        let (parking, parker) = (Parking::new(), Parker::new());
        let start = Instant::now();
        let parked = parking.park_until(&parker, Some(Duration::from_millis(5)), || false);
        assert_eq!(parked, Parked { ready: false, parks: 1 });
        assert!(start.elapsed() >= Duration::from_millis(5), "{:?}", start.elapsed());
        assert!(!parking.is_sleeping(), "a waiter that timed out still says it sleeps");
    }

    #[test]
    fn rounds_in_lock_step_lose_no_wake_up() {
        // The waiter parks for each round until the waker makes it ready;
        // a lost wake-up leaves it parked: the waker's deadline passes,
        // it rescues the waiter with an unpark of its own and the test
        // fails instead of hanging. (tests/loom_park.rs checks every
        // interleaving; this runs the real parker.)
        const ROUNDS: u64 = 2000;
        const DEADLINE: Duration = Duration::from_secs(10);
        let (ready, seen, parking, parker) = (AtomicU64::new(0), AtomicU64::new(0), Parking::new(), Parker::new());
        let give_up = AtomicBool::new(false);
        let unparker = parker.unparker();
        let mut lost = None;
        let (ready, seen, parking, give_up) = (&ready, &seen, &parking, &give_up);
        std::thread::scope(|s| {
            // The parker moves to the waiting thread (it is not `Sync`).
            s.spawn(move || {
                for i in 1..=ROUNDS {
                    let _ = parking.park_until(&parker, None, || {
                        ready.load(Ordering::Acquire) >= i || give_up.load(Ordering::Acquire)
                    });
                    if give_up.load(Ordering::Acquire) {
                        return;
                    }
                    seen.store(i, Ordering::Release);
                }
            });
            for i in 1..=ROUNDS {
                if i % 3 == 0 {
                    std::thread::yield_now();
                }
                ready.store(i, Ordering::Release);
                parking.wake(&unparker);
                let start = Instant::now();
                while seen.load(Ordering::Acquire) < i {
                    if start.elapsed() > DEADLINE {
                        lost = Some(i);
                        give_up.store(true, Ordering::Release);
                        unparker.unpark();
                        return;
                    }
                    std::thread::yield_now();
                }
            }
        });
        assert_eq!(lost, None, "the waiter stayed parked with its round ready: a wake-up was lost");
    }
}
