//! How a pinned thread waits for work without burning its CPU for long:
//! spin, then yield, then park ([`Wakeup`], or [`wait_on`] for a thread
//! that owns its parker, with an [`IdlePolicy`]).
//!
//! A thread pinned to its own CPU (a helper beside its worker, a member of
//! a thread team) waits for another thread's signal. Spinning answers
//! fastest but keeps the CPU busy (and on a machine with hyper-threads
//! slows the sibling); parking frees the CPU but costs the signalling
//! thread a `futex` wake and the waiter a few microseconds to come back.
//! The usual compromise, written once here: spin for a short time, then
//! yield the CPU for a while, then park until woken.
//!
//! The park itself is the crate's one parker ([`park::Parking`](crate::park::Parking)
//! over a thread's own [`Parker`]): its protocol (the waiter announces
//! itself, fences and looks again before it parks; the waker fences and
//! unparks only an announced waiter) loses no wake-up, and a waker pays
//! one fence and one load of a line it only reads while the waiter is
//! awake. `tests/loom_park.rs` model-checks it. Loom builds compile
//! [`wait_on`] (the helper threads' model parks through it), not
//! [`Wakeup`], whose per-thread parker and owner are `std`'s.

#[cfg(not(loom))]
use std::sync::OnceLock;
#[cfg(not(loom))]
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;

#[cfg(not(loom))]
use crate::park::Unparker;
use crate::park::{Parker, Parking};
use crate::primitive::yield_now;

#[cfg(not(loom))]
thread_local! {
    /// The calling thread's parker, for every [`Wakeup`] it waits on (as
    /// `std::thread::park`'s token is per thread): a token one wakeup left
    /// only makes a wait on another look at its condition once more.
    static PARKER: Parker = Parker::new();
}

/// How long a waiting thread spins and yields before it parks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdlePolicy {
    /// Spin (with the CPU's pause hint, through [`Backoff::spin`]) this long first.
    pub spin: Duration,
    /// Then yield the CPU this long.
    pub yield_for: Duration,
    // Then park until woken.
}

impl IdlePolicy {
    /// Parks at once (no spinning, no yielding).
    pub const PARK: IdlePolicy = IdlePolicy { spin: Duration::ZERO, yield_for: Duration::ZERO };
}

impl Default for IdlePolicy {
    /// 20 µs of spinning, then 200 µs of yielding, then parking: a signal
    /// that comes within the spin costs the waker nothing but a load, and
    /// a thread idle for longer gives its CPU back within a quarter of a
    /// millisecond (the helper threads' measurement behind it is in their
    /// README).
    fn default() -> Self {
        IdlePolicy { spin: Duration::from_micros(20), yield_for: Duration::from_micros(200) }
    }
}

/// What one [`Wakeup::wait`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdleCounts {
    /// Times the thread yielded its CPU.
    pub yields: u64,
    /// Times it parked.
    pub parks: u64,
}

impl IdleCounts {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: IdleCounts) {
        self.yields += other.yields;
        self.parks += other.parks;
    }
}

/// A parking place for one waiting thread, and the way to wake it.
///
/// The first thread that calls [`wait`](Wakeup::wait) is the waiter; a
/// wait from any other thread spins and yields but never parks (it could
/// not be woken).
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use skelaff_numa_alloc::idle::{IdlePolicy, Wakeup};
///
/// let (flag, wakeup) = (AtomicBool::new(false), Wakeup::new());
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         // Parks at once, until the flag is up.
///         wakeup.wait(IdlePolicy::PARK, || flag.load(Ordering::Acquire));
///     });
///     flag.store(true, Ordering::Release);
///     wakeup.wake();
/// });
/// ```
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub struct Wakeup {
    parking: Parking,
    /// The thread that parks here (the first to wait), and its unparker.
    waiter: OnceLock<(ThreadId, Unparker)>,
}

#[cfg(not(loom))]
impl Wakeup {
    /// A wakeup nobody waits on yet.
    pub const fn new() -> Self {
        Wakeup { parking: Parking::new(), waiter: OnceLock::new() }
    }

    /// Wakes the waiter if it is parked, and returns whether it was. Call
    /// it after making the waiter's condition true.
    #[inline]
    pub fn wake(&self) -> bool {
        // The parking's waker half; nobody announced itself before a
        // waiter registered, so an empty `waiter` means nobody to wake.
        match self.waiter.get() {
            Some((_, unparker)) => self.parking.wake(unparker),
            None => false,
        }
    }

    /// Waits on the calling thread until `ready()` is true: spins for
    /// `policy.spin`, yields until `policy.spin + policy.yield_for` have
    /// passed, then parks until [`wake`](Wakeup::wake) (and looks again
    /// after every wake-up, spurious ones included).
    ///
    /// `ready` is called often: keep it to a few loads.
    pub fn wait(&self, policy: IdlePolicy, mut ready: impl FnMut() -> bool) -> IdleCounts {
        let mut counts = IdleCounts::default();
        if ready() || spin_then_yield(policy, &mut ready, &mut counts) {
            return counts;
        }
        let me = thread::current().id();
        let (owner, _) = self.waiter.get_or_init(|| (me, PARKER.with(Parker::unparker)));
        if *owner == me {
            let parked = PARKER.with(|parker| self.parking.park_until(parker, None, ready));
            counts.parks += parked.parks;
            return counts;
        }
        // Another thread parks here: this one could not be woken.
        loop {
            yield_now();
            counts.yields += 1;
            if ready() {
                return counts;
            }
        }
    }
}

/// Waits on the calling thread until `ready()` is true, as
/// [`Wakeup::wait`] does, but parks on `parking` with the caller's own
/// `parker` (a thread that owns its [`Parker`], such as a helper thread
/// given one with its channel; its wakers call
/// [`Parking::wake`] with the parker's unparker).
///
/// `ready` is called often: keep it to a few loads. Only one thread may
/// wait on `parking` at a time (see [`Parking::park_until`]).
pub fn wait_on(parking: &Parking, parker: &Parker, policy: IdlePolicy, mut ready: impl FnMut() -> bool) -> IdleCounts {
    let mut counts = IdleCounts::default();
    if ready() || spin_then_yield(policy, &mut ready, &mut counts) {
        return counts;
    }
    counts.parks += parking.park_until(parker, None, ready).parks;
    counts
}

/// The spinning and yielding phases of `policy`; returns whether `ready()`
/// turned true during them.
fn spin_then_yield(policy: IdlePolicy, ready: &mut impl FnMut() -> bool, counts: &mut IdleCounts) -> bool {
    if policy.spin.is_zero() && policy.yield_for.is_zero() {
        return false;
    }
    let start = Instant::now();
    let backoff = Backoff::new();
    let mut n = 0u32;
    // Spin, looking at the clock every 16 rounds (it costs tens of ns).
    while !policy.spin.is_zero() {
        backoff.spin();
        if ready() {
            return true;
        }
        n = n.wrapping_add(1);
        if n % 16 == 0 && start.elapsed() >= policy.spin {
            break;
        }
    }
    let yield_until = policy.spin + policy.yield_for;
    while start.elapsed() < yield_until {
        yield_now();
        counts.yields += 1;
        if ready() {
            return true;
        }
    }
    false
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    #[test]
    fn no_wakeup_is_lost_when_parking_at_once() {
        // Rounds in lock step: the waker makes round i ready and wakes the
        // waiter, which parks at once when it finds the round not ready
        // yet; the waker then waits (with a deadline) for the waiter to say
        // it saw round i. A lost wake-up leaves the waiter parked with its
        // round ready: the deadline passes, the waker records the round,
        // rescues the waiter (an unpark that `Wakeup` did not send) and the
        // test fails instead of hanging.
        const ROUNDS: u64 = 2000;
        // Far above a wake-up's microseconds, even on a loaded machine.
        const DEADLINE: Duration = Duration::from_secs(10);
        let (ready, seen, wakeup) = (AtomicU64::new(0), AtomicU64::new(0), Wakeup::new());
        let give_up = AtomicBool::new(false);
        let mut lost = None;
        thread::scope(|s| {
            s.spawn(|| {
                for i in 1..=ROUNDS {
                    wakeup.wait(IdlePolicy::PARK, || {
                        ready.load(Ordering::Acquire) >= i || give_up.load(Ordering::Acquire)
                    });
                    if give_up.load(Ordering::Acquire) {
                        return;
                    }
                    seen.store(i, Ordering::Release);
                }
            });
            for i in 1..=ROUNDS {
                // Now and then, give the waiter time to park before the round is ready.
                if i % 3 == 0 {
                    thread::yield_now();
                }
                ready.store(i, Ordering::Release);
                wakeup.wake();
                let start = Instant::now();
                while seen.load(Ordering::Acquire) < i {
                    if start.elapsed() > DEADLINE {
                        lost = Some(i);
                        give_up.store(true, Ordering::Release);
                        // The waiter parked, so it registered its unparker.
                        if let Some((_, unparker)) = wakeup.waiter.get() {
                            unparker.unpark();
                        }
                        return;
                    }
                    thread::yield_now();
                }
            }
        });
        assert_eq!(lost, None, "the waiter stayed parked with its round ready: a wake-up was lost");
        assert_eq!(seen.load(Ordering::Relaxed), ROUNDS);
    }

    #[test]
    fn a_ready_condition_returns_without_yielding_or_parking() {
        let w = Wakeup::new();
        assert_eq!(w.wait(IdlePolicy::default(), || true), IdleCounts::default());
        // Nobody parked, so waking finds nobody.
        assert!(!w.wake());
    }

    #[test]
    fn spins_then_yields_then_parks_and_the_waker_sees_it_parked() {
        let (flag, w) = (AtomicBool::new(false), Wakeup::new());
        // A yield phase long enough that a waiter descheduled through its
        // spin (on a loaded machine) still finds time left to yield in.
        let policy = IdlePolicy { spin: Duration::from_micros(50), yield_for: Duration::from_millis(20) };
        let counts = thread::scope(|s| {
            let h = s.spawn(|| w.wait(policy, || flag.load(Ordering::Acquire)));
            // Wait until it is parked (well past spin + yield).
            while !w.parking.is_sleeping() {
                thread::sleep(Duration::from_millis(1));
            }
            flag.store(true, Ordering::Release);
            assert!(w.wake(), "the waiter was parked");
            h.join().unwrap()
        });
        assert!(counts.yields > 0, "{counts:?}");
        assert!(counts.parks >= 1, "{counts:?}");
    }

    #[test]
    fn a_second_waiting_thread_never_parks() {
        // Far above any scheduling delay, even on a loaded machine.
        const DEADLINE: Duration = Duration::from_secs(10);
        let (first, flag, w) = (AtomicBool::new(false), AtomicBool::new(false), Wakeup::new());
        // The first thread to park owns the parking place: this one (woken
        // only once it has marked itself asleep, so it did park).
        thread::scope(|s| {
            s.spawn(|| {
                while !w.parking.is_sleeping() {
                    thread::sleep(Duration::from_millis(1));
                }
                first.store(true, Ordering::Release);
                w.wake();
            });
            w.wait(IdlePolicy::PARK, || first.load(Ordering::Acquire));
        });
        // Another thread's wait yields until its condition holds and never
        // parks (nothing would wake it). The condition turns true only
        // after the wait has looked at it twice: past its first look, in
        // the loop that yields (or parks).
        let looks = AtomicU64::new(0);
        let rescue = OnceLock::new();
        let counts = thread::scope(|s| {
            let h = s.spawn(|| {
                // The handle that reaches this thread's parker, should it park.
                let _ = rescue.set(PARKER.with(Parker::unparker));
                w.wait(IdlePolicy::PARK, || {
                    looks.fetch_add(1, Ordering::Relaxed);
                    flag.load(Ordering::Acquire)
                })
            });
            let start = Instant::now();
            while looks.load(Ordering::Relaxed) < 2 && start.elapsed() < DEADLINE {
                thread::yield_now();
            }
            flag.store(true, Ordering::Release);
            // A wait that parked would sleep forever: after the deadline it
            // is unparked here, and reports its park.
            let start = Instant::now();
            while !h.is_finished() {
                if start.elapsed() > DEADLINE {
                    if let Some(unparker) = rescue.get() {
                        unparker.unpark();
                    }
                }
                thread::sleep(Duration::from_millis(1));
            }
            h.join().unwrap()
        });
        assert_eq!(counts.parks, 0, "the second waiter parked");
        assert!(counts.yields > 0, "{counts:?}");
    }
}
