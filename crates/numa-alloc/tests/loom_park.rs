//! Loom models of the parker (src/park.rs): a waiter parked until its
//! condition holds and the threads that make it hold and wake it.
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p skelaff-numa-alloc --test loom_park
//! ```
//!
//! A lost wake-up leaves the waiter parked for good while the others end:
//! loom reports the execution as a deadlock. Loom's parker (src/primitive.rs)
//! also returns from a park spuriously wherever it may, and a timed park's
//! time runs out at once (a model has no clock).
//!
//! - no wake-up is lost, whichever the interleaving: the waiter announces
//!   itself and fences before its last look; the waker fences before it
//!   loads the announcement (a wake that lands before the park leaves the
//!   token);
//! - the same with two wakers, the waiter parking until both are done;
//! - a waker that issued the fence itself ([`Parking::wake_after_fence`]);
//! - a timed park that runs out returns awake, and the next park still
//!   gets its wake-up.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering, fence};
use loom::thread;
use skelaff_numa_alloc::park::{Parker, Parking};

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// The state of a model: the parking and the waiter's conditions.
struct Shared {
    parking: Parking,
    flags: [AtomicBool; 2],
}

fn shared() -> Arc<Shared> {
    Arc::new(Shared { parking: Parking::new(), flags: [AtomicBool::new(false), AtomicBool::new(false)] })
}

#[test]
fn no_wake_up_is_lost() {
    model(|| {
        let s = shared();
        let parker = Parker::new();
        let unparker = parker.unparker();
        let waiter = {
            let s = s.clone();
            thread::spawn(move || s.parking.park_until(&parker, None, || s.flags[0].load(Ordering::Acquire)))
        };
        s.flags[0].store(true, Ordering::Release);
        s.parking.wake(&unparker);
        let parked = waiter.join().unwrap();
        assert!(parked.ready);
        assert!(!s.parking.is_sleeping(), "the waiter returned still announced");
    });
}

#[test]
fn a_wake_before_the_wait_is_not_needed_and_not_sent() {
    model(|| {
        let s = shared();
        let parker = Parker::new();
        s.flags[0].store(true, Ordering::Release);
        assert!(!s.parking.wake(&parker.unparker()), "woke a waiter that had not announced itself");
        let waiter = {
            let s = s.clone();
            thread::spawn(move || s.parking.park_until(&parker, None, || s.flags[0].load(Ordering::Acquire)))
        };
        let parked = waiter.join().unwrap();
        assert_eq!((parked.ready, parked.parks), (true, 0));
    });
}

#[test]
fn two_wakers_and_a_waiter_that_needs_both() {
    model(|| {
        let s = shared();
        let parker = Parker::new();
        let wakers: Vec<_> = (0..2)
            .map(|i| {
                let (s, unparker) = (s.clone(), parker.unparker());
                thread::spawn(move || {
                    s.flags[i].store(true, Ordering::Release);
                    s.parking.wake(&unparker);
                })
            })
            .collect();
        let ready = || s.flags.iter().all(|f| f.load(Ordering::Acquire));
        assert!(s.parking.park_until(&parker, None, ready).ready);
        for w in wakers {
            w.join().unwrap();
        }
    });
}

#[test]
fn a_waker_that_fenced_itself_wakes_after_the_fence() {
    model(|| {
        let s = shared();
        let parker = Parker::new();
        let unparker = parker.unparker();
        let waiter = {
            let s = s.clone();
            thread::spawn(move || s.parking.park_until(&parker, None, || s.flags[0].load(Ordering::Acquire)))
        };
        s.flags[0].store(true, Ordering::Relaxed);
        // The waker's own fence (as the STM's `AppCursor::begin` issues).
        fence(Ordering::SeqCst);
        s.parking.wake_after_fence(&unparker);
        assert!(waiter.join().unwrap().ready);
    });
}

#[test]
fn a_timed_park_that_runs_out_returns_awake_and_the_next_park_is_woken() {
    model(|| {
        let s = shared();
        let parker = Parker::new();
        let unparker = parker.unparker();
        let waiter = {
            let s = s.clone();
            thread::spawn(move || {
                let ready = || s.flags[0].load(Ordering::Acquire);
                let timed = s.parking.park_until(&parker, Some(std::time::Duration::from_millis(1)), ready);
                assert!(timed.ready || timed.parks == 1, "{timed:?}");
                assert!(!s.parking.is_sleeping(), "a waiter that timed out still says it sleeps");
                if !timed.ready {
                    // The wake-up may have come during the timed park:
                    // its token or the flag is still there for this one.
                    assert!(s.parking.park_until(&parker, None, ready).ready);
                }
            })
        };
        s.flags[0].store(true, Ordering::Release);
        s.parking.wake(&unparker);
        waiter.join().unwrap();
    });
}
