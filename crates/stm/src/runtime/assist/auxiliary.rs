//! The auxiliary thread: checks its application thread's reads round
//! after round (`AuxCursor::step`), and idles when there is nothing to
//! check — spinning, or with throttle lever (a) parking once its
//! application thread has left transactions.

use std::sync::Arc;
use std::time::Duration;

use skelaff_numa_alloc::park::{Parker, Unparker};

use crate::assist::AssistUnavailable;
use crate::engine::engine;
use crate::primitive::{Ordering, spin_loop, yield_now};

use super::ring::{AuxCursor, Channel};

/// Idle rounds before a throttled auxiliary parks (a few microseconds).
const SPINS_BEFORE_PARK: u32 = 1024;

/// Idle rounds between two yields of a spinning auxiliary.
const YIELD_EVERY: u32 = 256;

/// The longest park: a lost wake-up (there should be none; `park`'s loom
/// model checks the protocol) costs this much.
const PARK_LIMIT: Duration = Duration::from_millis(50);

/// Starts the auxiliary thread of channel `ch`, pinned to `cpu` if given;
/// returns the unparker of the parker it idles on.
pub(super) fn spawn(ch: Arc<Channel>, cpu: Option<usize>) -> Result<Unparker, AssistUnavailable> {
    use skelaff_numa_alloc::pin::{Birthplace, spawn_pinned};
    let start = |place: Birthplace| {
        let (ch, parker) = (ch.clone(), Parker::new());
        let unparker = parker.unparker();
        spawn_pinned("stm-auxiliary", place, move || run(&ch, &parker)).map(|_| unparker)
    };
    // Born on its CPU; unpinned if that CPU is refused: the pair still
    // works, only slower.
    match cpu.and_then(|cpu| start(Birthplace::Cpu(cpu)).ok()) {
        Some(unparker) => Ok(unparker),
        None => start(Birthplace::Inherited).map_err(|e| AssistUnavailable::Spawn { message: e.to_string() }),
    }
}

/// Marks the auxiliary gone when its loop ends, also by unwinding.
struct Alive<'a>(&'a Channel);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.alive.store(false, Ordering::Release);
    }
}

fn run(ch: &Channel, parker: &Parker) {
    let _alive = Alive(ch);
    let mut cur = AuxCursor::default();
    let mut idle = 0u32;
    while !ch.shutdown.load(Ordering::Acquire) {
        match super::fault() {
            0 => {}
            u64::MAX => panic!("skelaff-stm: injected auxiliary thread fault"),
            ms => std::thread::sleep(Duration::from_millis(ms)),
        }
        if cur.step(ch, engine()) {
            idle = 0;
            continue;
        }
        idle = idle.saturating_add(1);
        if idle >= SPINS_BEFORE_PARK && ch.park_idle.load(Ordering::Relaxed) && ch.app_outside() {
            // The crate's one parker: it announces this thread, fences and
            // looks again before parking; the application thread stores its
            // attempt, fences and wakes it if announced (`Assistant::begin`),
            // so either it wakes us or we see its attempt. At most one park:
            // then round the loop again.
            let _ = ch.parking.park_until(parker, Some(PARK_LIMIT), || {
                !ch.app_outside() || ch.shutdown.load(Ordering::Acquire) || ch.has_entries(&cur)
            });
            idle = 0;
        } else if idle % YIELD_EVERY == 0 {
            // Lets a thread that shares this CPU (oversubscribed, or
            // `AuxPlacement::Anywhere`) run; cheap when none waits.
            yield_now();
        } else {
            spin_loop();
        }
    }
}
