//! The helper link: the lock-free hand-off between a worker and its helper
//! thread (paper Fig. 6), both halves, independent of shadows, tuning and
//! threads, so that the loom model (`tests/loom_link.rs`) runs this very
//! code. [`HelperChannel`](crate::HelperChannel) holds one.
//!
//! The event count `events` counts every event the helper must react to;
//! the worker bumps it, and the helper compares it with the value it saw
//! when it started its shadow (the shadow's cancel word):
//!
//! | event (worker side) | `handed` box | `events` | helper ([`Link::next_event`]) |
//! |---|---|---|---|
//! | [`Link::hand`]`(Some(u))`: starts the unit it handed before, hands `u` | `Some(u)` | +1 | [`Event::Handed`]: stops the shadow (overtaken), shadows `u` |
//! | [`Link::hand`]`(None)`: starts the unit it handed before, hands nothing | `None` | +1 | [`Event::Handed`] with no unit: stops the shadow, idles |
//! | [`Link::restarted`]: its transaction runs again | — | +1 | [`Event::Restarted`]: restarts the shadow of the same unit |
//! | [`Link::finish`] | — (`done`) | +1 | [`Event::Finished`]: returns |
//!
//! A hand-off puts the unit in a box and swaps the box into `handed` (one
//! atomic swap: the unit is published before the event that announces it),
//! then bumps `events`, and wakes the helper only if it parked (a fence
//! and a load: the crate's parker, `skelaff_numa_alloc::park`). The helper
//! loads `events` and, when it moved, swaps the box out and gives the
//! emptied box back through `spare`, so a steady stream of hand-offs
//! allocates nothing. A box the helper never picked up (it was busy) comes
//! back to the worker at its next hand-off, which drops the stale unit and
//! keeps the box.
//!
//! Hence the invariant the model checks: **once the helper has seen the
//! event of hand-off `k`, the unit it shadows is hand-off `k`'s or a later
//! one's** (the `events` load that saw the bump is Acquire, the bump came
//! after the swap, so the helper's own swap finds that box or a later
//! one), and no wake-up is lost: a helper parked while `events` moves is
//! woken.

use crossbeam_utils::CachePadded;
use skelaff_numa_alloc::idle::{self, IdleCounts, IdlePolicy};
use skelaff_numa_alloc::park::{Parker, Parking, Unparker};

use crate::primitive::{AtomicBool, AtomicBox, AtomicU64, Mutex, Ordering};

/// A handed unit with its sample number (the box that travels).
#[derive(Debug)]
pub struct Handed<U> {
    /// The unit to shadow (`None`: nothing, the helper idles).
    pub unit: Option<U>,
    /// The unit is sampled for tuning, with this sequence number.
    pub sample: Option<u64>,
}

/// What the helper learns from [`Link::next_event`].
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub enum Event<U> {
    /// The worker finished: the helper returns.
    Finished,
    /// The worker handed a unit (`None`: nothing to shadow), with its
    /// sample number: the shadow before is overtaken.
    Handed {
        /// The unit to shadow next.
        unit: Option<U>,
        /// Its sample number, if it is sampled for tuning.
        sample: Option<u64>,
    },
    /// Events moved but no new unit came: the worker's transaction
    /// restarted (shadow the same unit again).
    Restarted,
}

/// The hand-off state a worker and its helper share (see the module docs).
pub struct Link<U> {
    /// The event count (the shadow's cancel word): written by the worker only.
    events: CachePadded<AtomicU64>,
    /// The unit handed last, until the helper picks it up.
    handed: CachePadded<AtomicBox<Handed<U>>>,
    /// An emptied box the helper gives back.
    spare: AtomicBox<Handed<U>>,
    /// The worker finished.
    done: AtomicBool,
    /// Where the helper parks, and the handle that wakes it.
    parking: Parking,
    unparker: Unparker,
    /// The helper's parker, until the helper thread takes it.
    parker: Mutex<Option<Parker>>,
}

impl<U> std::fmt::Debug for Link<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("events", &self.events.load(Ordering::Relaxed))
            .field("done", &self.done.load(Ordering::Relaxed))
            .field("parking", &self.parking)
            .finish_non_exhaustive()
    }
}

impl<U> Default for Link<U> {
    fn default() -> Self {
        Link::new()
    }
}

impl<U> Link<U> {
    /// A link with nothing handed.
    pub fn new() -> Self {
        let parker = Parker::new();
        Link {
            events: CachePadded::new(AtomicU64::new(0)),
            handed: CachePadded::new(AtomicBox::new(None)),
            spare: AtomicBox::new(None),
            done: AtomicBool::new(false),
            parking: Parking::new(),
            unparker: parker.unparker(),
            parker: Mutex::new(Some(parker)),
        }
    }

    /// The event count, the shadow's cancel word (written by the worker).
    #[inline]
    pub fn events(&self) -> &AtomicU64 {
        &self.events
    }

    /// Worker: hands `unit` (see the module docs) and returns whether the
    /// helper was parked and woken.
    #[inline]
    pub fn hand(&self, unit: Option<U>, sample: Option<u64>) -> bool {
        let mut b = self.spare.take().unwrap_or_else(|| Box::new(Handed { unit: None, sample: None }));
        b.unit = unit;
        b.sample = sample;
        if let Some(mut stale) = self.handed.swap(Some(b)) {
            // Never picked up: keep the box for the next time.
            stale.unit = None;
            drop(self.spare.swap(Some(stale)));
        }
        self.bump()
    }

    /// Worker: its transaction runs again. Returns whether the helper was
    /// parked and woken.
    #[inline]
    pub fn restarted(&self) -> bool {
        self.bump()
    }

    /// Worker: it is done; the helper returns.
    pub fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
        self.bump();
    }

    /// Bumps the event count and wakes the helper if it parked.
    #[inline]
    fn bump(&self) -> bool {
        self.events.fetch_add(1, Ordering::SeqCst);
        self.parking.wake(&self.unparker)
    }

    /// Helper: the parker it waits with. The first call takes it; later
    /// calls get `None` (one helper thread per link).
    pub fn take_parker(&self) -> Option<Parker> {
        self.parker.lock().take()
    }

    /// Helper: the event count now, to start from.
    pub fn seen_now(&self) -> u64 {
        self.events.load(Ordering::SeqCst)
    }

    /// Helper: waits (spinning, yielding and parking with `parker` as
    /// `policy` says, counted in `idle`) until the event count moves past
    /// `seen` or the worker finished, then takes what moved it. `seen` is
    /// updated to the count the event was read at.
    pub fn next_event(&self, seen: &mut u64, parker: &Parker, policy: IdlePolicy, idle: &mut IdleCounts) -> Event<U> {
        loop {
            if self.done.load(Ordering::Acquire) {
                return Event::Finished;
            }
            if self.events.load(Ordering::Acquire) == *seen {
                let s = *seen;
                let moved = || self.events.load(Ordering::Acquire) != s || self.done.load(Ordering::Acquire);
                idle.add(idle::wait_on(&self.parking, parker, policy, moved));
                continue;
            }
            // Something happened: a new unit, a restart, or the end.
            *seen = self.events.load(Ordering::SeqCst);
            let fresh = self.pick_up();
            if self.done.load(Ordering::Acquire) {
                return Event::Finished;
            }
            return match fresh {
                Some((unit, sample)) => Event::Handed { unit, sample },
                None => Event::Restarted,
            };
        }
    }

    /// Takes the unit handed last, if one is waiting, and gives the box back.
    fn pick_up(&self) -> Option<(Option<U>, Option<u64>)> {
        let mut b = self.handed.take()?;
        let got = (b.unit.take(), b.sample.take());
        drop(self.spare.swap(Some(b)));
        Some(got)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_handoff_box_is_lock_free_and_recycled() {
        assert!(AtomicBox::<Handed<Vec<u8>>>::is_lock_free());
        let link = Link::new();
        let parker = link.take_parker().expect("the first take gets the parker");
        assert!(link.take_parker().is_none());
        let mut seen = link.seen_now();
        let mut idle = IdleCounts::default();
        // The address of the box in `slot` (left in place).
        let addr = |slot: &AtomicBox<Handed<u32>>| {
            let b = slot.take().expect("a box");
            let a = &*b as *const Handed<u32>;
            slot.store(Some(b));
            a
        };
        assert!(!link.hand(Some(7u32), None), "nobody parked, nobody woken");
        let first = addr(&link.handed);
        assert_eq!(
            link.next_event(&mut seen, &parker, IdlePolicy::PARK, &mut idle),
            Event::Handed { unit: Some(7), sample: None }
        );
        // Picked up: the box came back through `spare` (still alive, so
        // its address is its own), and the next hand-off reuses it.
        assert_eq!(addr(&link.spare), first);
        link.hand(Some(8), Some(1));
        assert_eq!(addr(&link.handed), first);
        // Not picked up: the next hand-off replaces the unit and keeps the
        // stale box, emptied, for the time after.
        link.hand(Some(9), None);
        let stale = link.spare.take().expect("the stale box, kept");
        assert_eq!(&*stale as *const Handed<u32>, first);
        assert!(stale.unit.is_none());
        link.spare.store(Some(stale));
        assert_eq!(
            link.next_event(&mut seen, &parker, IdlePolicy::PARK, &mut idle),
            Event::Handed { unit: Some(9), sample: None }
        );
        assert_eq!(seen, 3);
        // An event without a box is a restart; the end is the end.
        link.restarted();
        assert_eq!(link.next_event(&mut seen, &parker, IdlePolicy::PARK, &mut idle), Event::Restarted);
        link.finish();
        assert_eq!(link.next_event(&mut seen, &parker, IdlePolicy::PARK, &mut idle), Event::Finished);
        assert_eq!(idle, IdleCounts::default(), "it never had to wait");
    }
}
