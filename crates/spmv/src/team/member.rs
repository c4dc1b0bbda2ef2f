//! What a team thread sees inside a job ([`TeamMember`]): its index, and
//! the team's barrier and deterministic sum reductions.
//!
//! The barrier is a counter and a generation word: the last thread to
//! arrive resets the counter and bumps the generation, the others wait for
//! the bump. Sums go through one cache-padded slot per thread; each thread
//! adds every slot in thread order, so every thread gets the same sum and
//! the result depends only on the thread count. [`TeamMember::sums_then`]
//! lets thread 0 turn the team's sum into a wider one (an MPI reduction
//! over ranks) that every thread then reads.

use core::cell::Cell;
use core::fmt;
use core::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

use super::layout::ThreadSlot;
use crossbeam_utils::Backoff;

/// The most sums one [`TeamMember::sums`] call reduces.
pub const MAX_SUMS: usize = 4;

/// One thread's reduction slot: up to [`MAX_SUMS`] sums, as `f64` bits.
type SumSlot = CachePadded<[AtomicU64; MAX_SUMS]>;

/// The barrier and reduction state a team's threads share.
pub(super) struct JobSync {
    threads: usize,
    /// Set when a thread panicked during the current job: barriers give up.
    pub(super) abort: AtomicBool,
    pub(super) bar_count: CachePadded<AtomicUsize>,
    bar_gen: CachePadded<AtomicUsize>,
    /// Two sets of reduction slots, used alternately (see `TeamMember::sums`).
    sums: [Vec<SumSlot>; 2],
    /// What thread 0 hands every thread in `sums_then`.
    broadcast: SumSlot,
    slots: Vec<ThreadSlot>,
}

impl JobSync {
    pub(super) fn new(slots: &[ThreadSlot]) -> JobSync {
        let n = slots.len();
        let new_slots = || (0..n).map(|_| CachePadded::new(Default::default())).collect::<Vec<SumSlot>>();
        JobSync {
            threads: n,
            abort: AtomicBool::new(false),
            bar_count: CachePadded::new(AtomicUsize::new(0)),
            bar_gen: CachePadded::new(AtomicUsize::new(0)),
            sums: [new_slots(), new_slots()],
            broadcast: CachePadded::new(Default::default()),
            slots: slots.to_vec(),
        }
    }
}

/// What a team thread knows inside a job: its index, and the team's
/// barrier and reductions. Every thread must make the same sequence of
/// `barrier`/`sum`/`sums`/`sums_then` calls in a job.
pub struct TeamMember<'a> {
    index: usize,
    sync: &'a JobSync,
    /// Which set of reduction slots the next `sums` uses.
    parity: Cell<usize>,
    _not_sync: PhantomData<*const ()>,
}

impl<'a> TeamMember<'a> {
    pub(super) fn new(index: usize, sync: &'a JobSync) -> TeamMember<'a> {
        TeamMember { index, sync, parity: Cell::new(0), _not_sync: PhantomData }
    }

    /// This thread's index, `0..threads()`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Number of threads in the team.
    pub fn threads(&self) -> usize {
        self.sync.threads
    }

    /// Where this thread runs.
    pub fn slot(&self) -> ThreadSlot {
        self.sync.slots[self.index]
    }

    /// Waits until every thread of the team has called `barrier` (the same
    /// number of times). Everything a thread wrote before it is visible to
    /// every thread after it.
    ///
    /// # Panics
    ///
    /// If another thread of the team panicked during this job.
    pub fn barrier(&self) {
        let sync = self.sync;
        if sync.threads == 1 {
            return;
        }
        let generation = sync.bar_gen.load(Ordering::Acquire);
        if sync.bar_count.fetch_add(1, Ordering::AcqRel) + 1 == sync.threads {
            sync.bar_count.store(0, Ordering::Relaxed);
            sync.bar_gen.store(generation.wrapping_add(1), Ordering::Release);
            return;
        }
        // Spins, then yields (a barrier inside a job does not park).
        let backoff = Backoff::new();
        while sync.bar_gen.load(Ordering::Acquire) == generation {
            if sync.abort.load(Ordering::Acquire) {
                panic!("team job abandoned: another team thread panicked");
            }
            backoff.snooze();
        }
    }

    /// The sum over all threads of `v`, the same on every thread (added in
    /// thread order, so it is deterministic for a given thread count).
    /// Includes a barrier.
    ///
    /// # Panics
    ///
    /// As [`TeamMember::barrier`].
    pub fn sum(&self, v: f64) -> f64 {
        self.sums([v])[0]
    }

    /// Several sums with one barrier (`N <= MAX_SUMS`).
    ///
    /// # Panics
    ///
    /// As [`TeamMember::barrier`]; at compile time if `N > MAX_SUMS`.
    pub fn sums<const N: usize>(&self, v: [f64; N]) -> [f64; N] {
        const { assert!(N <= MAX_SUMS, "at most MAX_SUMS sums per call") };
        // Two slot sets used alternately: a thread writes set P for call k
        // only after passing the barrier of call k-1, which every thread
        // reaches only after it finished reading set P for call k-2.
        let set = &self.sync.sums[self.parity.get()];
        self.parity.set(self.parity.get() ^ 1);
        for (slot, x) in set[self.index].iter().zip(v) {
            slot.store(x.to_bits(), Ordering::Relaxed);
        }
        self.barrier();
        let mut out = [0.0; N];
        for s in set.iter() {
            for (o, slot) in out.iter_mut().zip(s.iter()) {
                *o += f64::from_bits(slot.load(Ordering::Relaxed));
            }
        }
        out
    }

    /// The team's [`sums`](TeamMember::sums) of `v`, passed through `widen`
    /// on thread 0 only (e.g. an MPI reduction over ranks, so that only one
    /// thread per rank talks to MPI), and the result handed to every thread.
    /// Two barriers.
    ///
    /// # Panics
    ///
    /// As [`TeamMember::barrier`]; if `widen` panics on thread 0, the other
    /// threads panic at the next barrier.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_spmv::Team;
    ///
    /// let team = Team::with_threads(2)?;
    /// let got = team.run_collect(|m| m.sums_then([1.0, 2.0], |[a, b]| [a * 10.0, b * 10.0]));
    /// assert_eq!(got, vec![[20.0, 40.0], [20.0, 40.0]]);
    /// # Ok::<(), skelaff_spmv::Error>(())
    /// ```
    pub fn sums_then<const N: usize>(&self, v: [f64; N], widen: impl FnOnce([f64; N]) -> [f64; N]) -> [f64; N] {
        let team = self.sums(v);
        if self.index == 0 {
            // Every other thread read the previous broadcast before it
            // arrived at the barrier inside `sums` above.
            for (slot, x) in self.sync.broadcast.iter().zip(widen(team)) {
                slot.store(x.to_bits(), Ordering::Relaxed);
            }
        }
        self.barrier();
        let mut out = [0.0; N];
        for (o, slot) in out.iter_mut().zip(self.sync.broadcast.iter()) {
            *o = f64::from_bits(slot.load(Ordering::Relaxed));
        }
        out
    }
}

impl fmt::Debug for TeamMember<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TeamMember").field("index", &self.index).field("threads", &self.sync.threads).finish()
    }
}
