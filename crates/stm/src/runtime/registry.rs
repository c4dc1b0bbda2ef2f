//! The thread registry: one record per thread that runs transactions or
//! holds an epoch guard. A thread announces in its record the clock value
//! its running transaction (or outermost guard) started from, so that
//! reclamation knows what it may still reach; its statistics counters live
//! there too, and its record number (+1) is its owner id in the lock words.
//!
//! # The announcement protocol
//!
//! A reader (a transaction's first attempt, or a guard) stores its start
//! and then issues a SeqCst fence before it reads anything shared; a
//! reclaimer issues a SeqCst fence and then scans the records
//! ([`Registry::min_active`]). Of the two fences one comes first: if the
//! reader's, the scan sees its start; if the reclaimer's, the reader's
//! loads see every unlink that preceded the reclaimer's fence, so it cannot
//! reach what the reclaimer frees. Later attempts of the same transaction
//! only move the start forward (a release store, no fence): the earlier,
//! fenced start covered everything until then. Ends are release stores that
//! the scan reads with acquire, so every read a reader made happens before
//! the free of anything the scan lets go.
//!
//! # Asymmetric fences
//!
//! Readers announce once per transaction; reclaimers scan rarely (once the
//! garbage has doubled). So on Linux the reader's SeqCst fence is replaced
//! by a compiler fence, and the reclaimer's by `membarrier(2)`'s
//! `PRIVATE_EXPEDITED` command, which makes every running thread of the
//! process execute a full barrier before it returns (a descheduled thread
//! passes one when it is switched). The argument above holds with that
//! pair: for each reader, its barrier point comes either after its
//! announcement (the scan then sees the start) or before it (its loads then
//! see every unlink the reclaimer saw). This is the pairing of Linux's RCU
//! and folly's `asymmetricThreadFence{Light,Heavy}`. The process registers
//! for it when the registry is made, before any record exists; if the
//! kernel refuses, both sides use SeqCst fences, as do loom builds (the
//! models check the symmetric protocol; `membarrier` cannot be modelled)
//! and runs with `SKELAFF_STM_FENCES=symmetric` (for comparisons).

use crossbeam_utils::CachePadded;

use super::counters::ThreadCounters;
use crate::lockword::MAX_OWNER;
use crate::primitive::{AtomicU64, AtomicUsize, Mutex, Ordering, fence};

/// The most threads that can run transactions (or hold epoch guards) at
/// once: the lock word's owner field is 10 bits. (4 in loom models.)
#[cfg(not(loom))]
pub const MAX_THREADS: usize = MAX_OWNER as usize;
/// The most threads that can run transactions (or hold epoch guards) at
/// once: the lock word's owner field is 10 bits. (4 in loom models.)
#[cfg(loom)]
pub const MAX_THREADS: usize = 4;

const _: () = assert!(MAX_THREADS as u64 <= MAX_OWNER, "record numbers must fit the lock word's owner field");

/// A record's start when no transaction (or guard) is running there.
pub(crate) const INACTIVE: u64 = u64::MAX;

/// The shared half of a thread's registration (the other half is the
/// thread's [`ThreadState`](super::thread::ThreadState)).
#[derive(Debug)]
pub(crate) struct ThreadRecord {
    /// The snapshot the running transaction attempt started from, or INACTIVE.
    tx_start: AtomicU64,
    /// The clock when the outermost epoch guard was taken, or INACTIVE.
    guard_start: AtomicU64,
    /// This thread's statistics.
    pub(crate) counters: ThreadCounters,
}

impl ThreadRecord {
    fn new() -> Self {
        ThreadRecord {
            tx_start: AtomicU64::new(INACTIVE),
            guard_start: AtomicU64::new(INACTIVE),
            counters: ThreadCounters::default(),
        }
    }

    /// A transaction's first attempt starts at `start`: announce it, then
    /// fence, before the first shared read (see the module docs).
    #[inline]
    pub(crate) fn announce_tx(&self, start: u64) {
        self.tx_start.store(start, Ordering::Relaxed);
        start_fence();
    }

    /// A later attempt of the same transaction starts at `start` (not
    /// older than the announced start, which protected everything until now).
    #[inline]
    pub(crate) fn advance_tx(&self, start: u64) {
        self.tx_start.store(start, Ordering::Release);
    }

    /// The transaction ended (committed, returned an error, unwound, or
    /// waits in `retry`): it reaches nothing any more.
    #[inline]
    pub(crate) fn end_tx(&self) {
        self.tx_start.store(INACTIVE, Ordering::Release);
    }

    /// The announced start of this record's transaction (INACTIVE if none),
    /// by an acquire load: its end orders all it did before what follows.
    #[inline]
    pub(crate) fn tx_start(&self) -> u64 {
        self.tx_start.load(Ordering::Acquire)
    }

    /// An outermost epoch guard taken at `start`: announce it, then fence.
    #[inline]
    pub(crate) fn announce_guard(&self, start: u64) {
        self.guard_start.store(start, Ordering::Relaxed);
        start_fence();
    }

    /// The outermost epoch guard was dropped.
    #[inline]
    pub(crate) fn end_guard(&self) {
        self.guard_start.store(INACTIVE, Ordering::Release);
    }
}

/// The fence after an announcement: the light half of the asymmetric
/// pair (a compiler fence) once the process is registered for
/// `membarrier`, else a SeqCst fence (see the module docs).
#[inline(always)]
fn start_fence() {
    #[cfg(loom)]
    if START_FENCE_REMOVED.with(core::cell::Cell::get) {
        return;
    }
    #[cfg(not(loom))]
    if asymmetric::ON.load(Ordering::Relaxed) {
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
        return;
    }
    fence(Ordering::SeqCst);
}

/// The reclaimer's fence before it stamps garbage and scans the records:
/// the heavy half (`membarrier`) when readers use the light one, else a
/// SeqCst fence. False if the barrier could not be made: the caller must
/// then free nothing.
#[must_use]
pub(crate) fn reclaim_fence() -> bool {
    #[cfg(not(loom))]
    if asymmetric::ON.load(Ordering::Relaxed) {
        return crate::sys::membarrier_all().is_ok();
    }
    fence(Ordering::SeqCst);
    true
}

/// Whether readers use light fences (set once, when the registry is made).
#[cfg(not(loom))]
mod asymmetric {
    use std::sync::atomic::AtomicBool;

    pub(super) static ON: AtomicBool = AtomicBool::new(false);

    /// Turns asymmetric fences on if the kernel offers `membarrier`'s
    /// expedited private barrier and `SKELAFF_STM_FENCES` is not
    /// `symmetric`. Called once, before any thread has announced.
    pub(super) fn setup() {
        let symmetric = std::env::var_os("SKELAFF_STM_FENCES").is_some_and(|v| v == "symmetric");
        if !symmetric && crate::sys::membarrier_register().is_ok() {
            ON.store(true, core::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Whether this process uses asymmetric fences for reclamation: a
/// transaction's start costs a compiler fence instead of a SeqCst fence,
/// and each garbage collection a `membarrier(2)` call (Linux 4.14 and
/// later; off with `SKELAFF_STM_FENCES=symmetric`). Decided once, at the
/// first transaction.
///
/// # Examples
///
/// ```
/// skelaff_stm::startup();
/// let on = skelaff_stm::asymmetric_fences();
/// println!("reclamation fences: {}", if on { "asymmetric (membarrier)" } else { "SeqCst" });
/// ```
pub fn asymmetric_fences() -> bool {
    let _ = registry();
    #[cfg(not(loom))]
    return asymmetric::ON.load(Ordering::Relaxed);
    #[cfg(loom)]
    false
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn asymmetric_fences_are_on_where_the_kernel_offers_them() {
        let symmetric = std::env::var_os("SKELAFF_STM_FENCES").is_some_and(|v| v == "symmetric");
        // Registering again is harmless; it says whether the kernel offers it.
        let offered = crate::sys::membarrier_register().is_ok();
        assert_eq!(super::asymmetric_fences(), offered && !symmetric);
        if super::asymmetric_fences() {
            crate::sys::membarrier_all().expect("a registered process can ask for a barrier");
        }
    }
}

/// What exited threads leave in the registry.
#[derive(Debug, Default)]
struct Exited {
    /// Record numbers free for reuse.
    free: Vec<usize>,
    /// The summed statistics of threads that have exited.
    counters: ThreadCounters,
}

/// The records of every thread, and what exited threads left.
#[derive(Debug)]
pub(crate) struct Registry {
    records: Box<[CachePadded<ThreadRecord>]>,
    /// Records `0..hwm` have ever been handed out.
    hwm: AtomicUsize,
    exited: Mutex<Exited>,
}

#[cfg(not(loom))]
pub(crate) fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(Registry::new)
}

#[cfg(loom)]
pub(crate) fn registry() -> &'static Registry {
    loom::lazy_static! {
        static ref REGISTRY: Registry = Registry::new();
    }
    &REGISTRY
}

impl Registry {
    fn new() -> Self {
        // Before any record exists: no reader has announced with a fence
        // of the other kind.
        #[cfg(not(loom))]
        asymmetric::setup();
        Registry {
            records: (0..MAX_THREADS).map(|_| CachePadded::new(ThreadRecord::new())).collect(),
            hwm: AtomicUsize::new(0),
            exited: Mutex::new(Exited::default()),
        }
    }

    /// Record `i` (from [`Registry::register`]).
    #[inline]
    pub(crate) fn record(&self, i: usize) -> &ThreadRecord {
        &self.records[i]
    }

    /// Hands out a record number for the calling thread.
    ///
    /// # Panics
    ///
    /// If [`MAX_THREADS`] records are in use.
    pub(crate) fn register(&self) -> usize {
        if let Some(i) = self.exited.lock().free.pop() {
            return i;
        }
        let i = self.hwm.fetch_add(1, Ordering::AcqRel);
        if i >= MAX_THREADS {
            self.hwm.fetch_sub(1, Ordering::AcqRel);
            panic!(
                "skelaff-stm: more than {MAX_THREADS} threads use transactions at once; \
                 the lock word has room for {MAX_THREADS} owners"
            );
        }
        i
    }

    /// Gives record `i` back (its thread is exiting); its counters join
    /// the exited threads' sum.
    pub(crate) fn unregister(&self, i: usize) {
        let record = &self.records[i];
        record.end_tx();
        record.end_guard();
        let mut exited = self.exited.lock();
        exited.counters.absorb(&record.counters);
        record.counters.reset();
        exited.free.push(i);
    }

    /// The records handed out so far.
    pub(crate) fn records(&self) -> &[CachePadded<ThreadRecord>] {
        let n = self.hwm.load(Ordering::Acquire).min(MAX_THREADS);
        &self.records[..n]
    }

    /// Runs `f` on the summed counters of exited threads.
    pub(crate) fn with_exited_counters<R>(&self, f: impl FnOnce(&ThreadCounters) -> R) -> R {
        f(&self.exited.lock().counters)
    }

    /// The oldest start of any running transaction or guard (INACTIVE if
    /// none). The caller has issued a SeqCst fence after its last unlink
    /// (see the module docs); the acquire loads order the ends read here
    /// before whatever the caller frees next.
    pub(crate) fn min_active(&self) -> u64 {
        self.records()
            .iter()
            .map(|r| r.tx_start.load(Ordering::Acquire).min(r.guard_start.load(Ordering::Acquire)))
            .min()
            .unwrap_or(INACTIVE)
    }
}

// Whether the announcement fence is removed (loom fault injection, see
// `loom_hooks`): a `std` thread-local, invisible to loom. Loom runs a
// model's threads as coroutines on the calling OS thread, so the switch
// covers exactly the model that the test thread runs.
#[cfg(loom)]
std::thread_local! {
    pub(crate) static START_FENCE_REMOVED: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}
