//! Loom models of the worker-helper link (src/link.rs): a worker that
//! hands units, restarts and finishes, and a helper thread that waits for
//! each event (parking at once, as a helper with nothing in hand does) and
//! takes what it announced.
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p skelaff-helper-threads --test loom_link
//! ```
//!
//! - once the helper has seen the event of hand-off `k`, the unit it holds
//!   is hand-off `k`'s or a later one's (the unit is published before the
//!   event that announces it);
//! - what the worker wrote into a unit before handing it happens before
//!   the helper reads it (loom's cell reports the read as a race
//!   otherwise);
//! - no wake-up is lost: a helper parked while an event comes is woken
//!   (a helper left parked is a deadlock, which loom reports), and it
//!   returns once the worker finished.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use skelaff_helper_threads::link::{Event, Link};
use skelaff_numa_alloc::idle::{IdleCounts, IdlePolicy};

/// Preemption bound 2: a few seconds for both models; at 3 they pass too,
/// in about half a minute (tried), too long for the test command.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(f);
}

/// A unit: its hand-off number, and a payload the worker writes when it
/// makes the unit (through loom's cell, so a read of it by the helper that
/// is not ordered after that write is reported).
#[derive(Debug)]
struct Unit {
    id: u64,
    payload: UnsafeCell<u64>,
}

impl Unit {
    fn new(id: u64) -> Unit {
        Unit { id, payload: UnsafeCell::new(id * 10) }
    }

    fn read(&self) -> u64 {
        // SAFETY: the payload is written only by `new`; loom checks that
        // this read is ordered after it.
        self.payload.with(|p| unsafe { *p })
    }
}

/// What the worker does to the link.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Hands a unit with this number (1, 2, ... in order).
    Hand(u64),
    /// Its transaction restarts.
    Restart,
}

/// Runs the worker's `steps` then `finish` on one thread and the helper's
/// loop on another; checks the invariants in the module docs on every
/// event the helper sees.
fn worker_and_helper(steps: &'static [Step]) {
    let link: Arc<Link<Unit>> = Arc::new(Link::new());
    let parker = link.take_parker().expect("the helper's parker");
    // The helper starts before the worker's first event (as a run starts
    // its helpers before its workers' first hand-off).
    let mut seen = link.seen_now();
    let worker = {
        let link = link.clone();
        thread::spawn(move || {
            for step in steps {
                match *step {
                    Step::Hand(id) => {
                        link.hand(Some(Unit::new(id)), None);
                    }
                    Step::Restart => {
                        link.restarted();
                    }
                }
            }
            link.finish();
        })
    };
    // The number of the hand-off that each event count announces.
    let handed_by = |events: u64| {
        steps.iter().take(events as usize).filter_map(|s| if let Step::Hand(id) = s { Some(*id) } else { None }).last()
    };
    let mut current: Option<Unit> = None;
    let mut idle = IdleCounts::default();
    loop {
        match link.next_event(&mut seen, &parker, IdlePolicy::PARK, &mut idle) {
            Event::Finished => break,
            Event::Handed { unit, sample } => {
                assert_eq!(sample, None);
                let u = unit.expect("every hand-off of the model hands a unit");
                assert_eq!(u.read(), u.id * 10);
                current = Some(u);
            }
            Event::Restarted => {}
        }
        let held = current.as_ref().map(|u| u.id);
        assert!(
            held >= handed_by(seen),
            "after event {seen} the helper holds unit {held:?}, older than hand-off {:?}",
            handed_by(seen)
        );
    }
    worker.join().unwrap();
}

#[test]
fn the_helper_takes_the_unit_each_event_announces_and_is_woken_for_it() {
    static STEPS: [Step; 2] = [Step::Hand(1), Step::Hand(2)];
    model(|| worker_and_helper(&STEPS));
}

#[test]
fn a_restart_keeps_the_unit_and_wakes_the_helper() {
    static STEPS: [Step; 2] = [Step::Hand(1), Step::Restart];
    model(|| worker_and_helper(&STEPS));
}
