//! How a pinned thread waits for work without burning its CPU for long:
//! spin, then yield, then park ([`Wakeup`], with its [`IdlePolicy`]).
//!
//! A thread pinned to its own CPU (a helper beside its worker, a member of
//! a thread team) waits for another thread's signal. Spinning answers
//! fastest but keeps the CPU busy (and on a machine with hyper-threads
//! slows the sibling); parking frees the CPU but costs the signalling
//! thread a `futex` wake and the waiter a few microseconds to come back.
//! The usual compromise, written once here: spin for a short time, then
//! yield the CPU for a while, then park until woken.
//!
//! The protocol between the waiter and the waker (one waiter per
//! [`Wakeup`]; any number of wakers):
//!
//! | waiter ([`Wakeup::wait`]) | waker ([`Wakeup::wake`]) |
//! |---|---|
//! | before parking: `sleeping = true`, fence, checks `ready()` again | makes `ready()` true, fence, reads `sleeping` |
//! | parks only if `ready()` is still false | unparks the waiter if `sleeping` |
//!
//! Both fences are sequentially consistent, so at least one side sees the
//! other's write: either the waiter sees the condition and does not park,
//! or the waker sees `sleeping` and unparks it. No wake-up is lost. A
//! waker pays one fence and one load of a line it only reads while the
//! waiter is awake.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;

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
#[derive(Debug, Default)]
pub struct Wakeup {
    sleeping: AtomicBool,
    waiter: OnceLock<Thread>,
}

impl Wakeup {
    /// A wakeup nobody waits on yet.
    pub const fn new() -> Self {
        Wakeup { sleeping: AtomicBool::new(false), waiter: OnceLock::new() }
    }

    /// Wakes the waiter if it is parked, and returns whether it was. Call
    /// it after making the waiter's condition true.
    #[inline]
    pub fn wake(&self) -> bool {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) {
            if let Some(t) = self.waiter.get() {
                t.unpark();
                return true;
            }
        }
        false
    }

    /// Waits on the calling thread until `ready()` is true: spins for
    /// `policy.spin`, yields until `policy.spin + policy.yield_for` have
    /// passed, then parks until [`wake`](Wakeup::wake) (and looks again
    /// after every wake-up, spurious ones included).
    ///
    /// `ready` is called often: keep it to a few loads.
    pub fn wait(&self, policy: IdlePolicy, mut ready: impl FnMut() -> bool) -> IdleCounts {
        let mut counts = IdleCounts::default();
        if ready() {
            return counts;
        }
        let start = Instant::now();
        let backoff = Backoff::new();
        let mut n = 0u32;
        // Spin, looking at the clock every 16 rounds (it costs tens of ns).
        while !policy.spin.is_zero() {
            backoff.spin();
            if ready() {
                return counts;
            }
            n = n.wrapping_add(1);
            if n % 16 == 0 && start.elapsed() >= policy.spin {
                break;
            }
        }
        let yield_until = policy.spin + policy.yield_for;
        while start.elapsed() < yield_until {
            thread::yield_now();
            counts.yields += 1;
            if ready() {
                return counts;
            }
        }
        let me = thread::current();
        let parks = self.waiter.get_or_init(|| me.clone()).id() == me.id();
        loop {
            if !parks {
                thread::yield_now();
                counts.yields += 1;
                if ready() {
                    return counts;
                }
                continue;
            }
            self.sleeping.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if ready() {
                self.sleeping.store(false, Ordering::Relaxed);
                return counts;
            }
            counts.parks += 1;
            thread::park();
            self.sleeping.store(false, Ordering::Relaxed);
            if ready() {
                return counts;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

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
            let waiter = s.spawn(|| {
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
                        waiter.thread().unpark();
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
            while !w.sleeping.load(Ordering::SeqCst) {
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
                while !w.sleeping.load(Ordering::SeqCst) {
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
        let counts = thread::scope(|s| {
            let h = s.spawn(|| {
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
                    h.thread().unpark();
                }
                thread::sleep(Duration::from_millis(1));
            }
            h.join().unwrap()
        });
        assert_eq!(counts.parks, 0, "the second waiter parked");
        assert!(counts.yields > 0, "{counts:?}");
    }
}
