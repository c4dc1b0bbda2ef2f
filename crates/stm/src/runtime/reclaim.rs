//! Epoch-based reclamation on the STM clock: objects that committed
//! transactions freed wait, stamped with a clock value, until no running
//! transaction or epoch guard can still reach them; then they are dropped.
//!
//! # The rules
//!
//! - **Stamping.** A freed object is stamped with the clock read *after* a
//!   SeqCst fence that follows the freeing commit's write-back (the fence
//!   of the next collection, or of the hand-over at thread exit). A reader
//!   whose start is later than the stamp then cannot have read the old
//!   link: had it done so, its own announcement fence would precede ours,
//!   and our clock read would see at least the value the reader started
//!   from. (Stamping at commit, without that fence, let a guard reader —
//!   which reads links with plain loads, not through the lock protocol —
//!   start after the stamp and still see the old link: the loom model
//!   `guard_reader_never_reads_a_freed_object` found it.)
//! - **Freeing.** An object is dropped when its stamp is older than every
//!   announced start ([`min_active`](super::registry::Registry::min_active), after a SeqCst fence; see
//!   the registry's docs for why the two fences suffice).
//! - **Exiting threads** stamp what they hold and hand it to a shared
//!   orphan list; the next collection on any thread adopts it. Adopting
//!   *before* the collection's fence matters: the orphan's owner fenced
//!   before handing it over, so that fence precedes ours, and a reader our
//!   scan misses is one that cannot reach the orphan. (Adopting after the
//!   fence let an object unlinked and orphaned between the fence and the
//!   adoption be freed under a reader the scan had missed: the loom model
//!   `exiting_writer_hands_garbage_over` found it.)

use crate::engine::engine;
use crate::erased::ErasedBox;
use crate::primitive::Mutex;

use super::registry::{reclaim_fence, registry};

/// Garbage count that triggers a collection (1 in loom models, so that
/// every freeing commit collects).
#[cfg(not(loom))]
pub(crate) const COLLECT_MIN: usize = 64;
/// Garbage count that triggers a collection (1 in loom models, so that
/// every freeing commit collects).
#[cfg(loom)]
pub(crate) const COLLECT_MIN: usize = 1;

/// Garbage count that triggers a collection when collections use
/// `membarrier` (asymmetric fences): one costs 0.2 µs with no other thread
/// of the process running and 2.8 µs with one (measured on the 2-vCPU
/// build machine, where it interrupts the other CPU), so collections are
/// made rarer: about 1024 objects per thread wait at most (~100 KB of
/// intset nodes).
#[cfg(not(loom))]
const COLLECT_MIN_ASYMMETRIC: usize = 1024;

/// Garbage count that triggers a collection after a transaction in
/// [`Solo`](crate::Solo) mode, whatever the fences: the same threshold as
/// with SeqCst fences. Such a transaction almost always runs under the
/// solo gate (see the `solo` module), when no other thread runs a
/// transaction, so the barrier of a collection has no other CPU running
/// this process's transactions to interrupt (0.2 µs, above), and a worker
/// that frees as it allocates (yada: some two objects a transaction) gets
/// its freed memory back while it is still in its cache: with 1024 objects
/// waiting, yada's one-worker run (`-a20 -i 633.2`, 1312 transactions)
/// touched 2.7 thousand more cold cache lines (LL write misses under
/// callgrind's `--cache-sim=yes`: 10 322 against 7 606). Decided by the
/// mode, a constant, not by the gate's state: a solo-mode transaction pays
/// nothing for it (one that runs plain because the gate was given back
/// collects as often, at the barrier's higher price).
pub(crate) const COLLECT_MIN_SOLO: usize = COLLECT_MIN;

/// The smallest garbage count that triggers a collection.
#[inline]
fn collect_min() -> usize {
    #[cfg(not(loom))]
    if super::registry::asymmetric_fences() {
        return COLLECT_MIN_ASYMMETRIC;
    }
    COLLECT_MIN
}

/// An object freed by a committed transaction, with its stamp.
#[derive(Debug)]
struct Retired {
    obj: ErasedBox,
    /// No reader that started after this clock value can reach the object.
    stamp: u64,
}

/// Garbage left by threads that exited before it could be dropped.
#[cfg(not(loom))]
fn orphans() -> &'static Mutex<Vec<Retired>> {
    static ORPHANS: Mutex<Vec<Retired>> = Mutex::new(Vec::new());
    &ORPHANS
}

#[cfg(loom)]
fn orphans() -> &'static Mutex<Vec<Retired>> {
    loom::lazy_static! {
        static ref ORPHANS: Mutex<Vec<Retired>> = Mutex::new(Vec::new());
    }
    &ORPHANS
}

/// One thread's garbage (it lives in the thread's transaction descriptor).
#[derive(Debug)]
pub(crate) struct Garbage {
    /// Freed by committed transactions, not stamped yet.
    fresh: Vec<ErasedBox>,
    /// Stamped, oldest first.
    stamped: Vec<Retired>,
    /// An empty buffer that `collect` swaps with `stamped` (no allocation
    /// per collection).
    spare: Vec<Retired>,
    /// Collect when this many objects wait.
    next_collect: usize,
    /// Collect when this many objects wait and a solo-mode transaction has
    /// just ended ([`COLLECT_MIN_SOLO`], or twice what the last collection
    /// kept, as `next_collect`; so never above `next_collect`).
    next_solo: usize,
}

impl Default for Garbage {
    fn default() -> Self {
        Garbage {
            fresh: Vec::new(),
            stamped: Vec::new(),
            spare: Vec::new(),
            next_collect: collect_min(),
            next_solo: COLLECT_MIN_SOLO,
        }
    }
}

/// The clock after the reclaimer's fence (a SeqCst fence, or `membarrier`
/// with asymmetric fences; see the registry's docs): the stamp for
/// everything unlinked by this thread's earlier commits (see the module
/// docs). `None` if the fence could not be made.
///
/// The clock is read by moving it on ([`Engine::tick`](crate::raw::Engine::tick)):
/// transactions that start later have a newer snapshot than the stamp
/// even when no commit moves the clock
/// ([`ClockPolicy::Readers`](crate::ClockPolicy)), so the stamped objects
/// can be dropped once those running now have ended.
fn fenced_stamp() -> Option<u64> {
    reclaim_fence().then(|| engine().tick())
}

impl Garbage {
    /// Takes the frees of a transaction that has just committed.
    #[inline]
    pub(crate) fn retire(&mut self, frees: &mut Vec<ErasedBox>) {
        self.fresh.append(frees);
    }

    /// Whether enough garbage waits to collect; `solo`: the transaction
    /// that has just ended is in solo mode (a lower threshold, see
    /// [`COLLECT_MIN_SOLO`]; `next_solo` is never above `next_collect`).
    #[inline(always)]
    pub(crate) fn wants_collect(&self, solo: bool) -> bool {
        let limit = if solo { self.next_solo } else { self.next_collect };
        self.fresh.len() + self.stamped.len() >= limit
    }

    /// Adopts the orphans, stamps the fresh garbage, and drops every object
    /// that no running transaction or guard can reach. Call it between
    /// transactions (this thread's own start must not be announced).
    #[cold]
    pub(crate) fn collect(&mut self) {
        if let Some(mut orphans) = orphans().try_lock() {
            self.stamped.append(&mut orphans);
        }
        let Some(stamp) = fenced_stamp() else {
            // No barrier, so no stamp and no scan: free nothing this time.
            self.next_collect = (self.fresh.len() + self.stamped.len()) * 2;
            self.next_solo = self.next_collect;
            return;
        };
        self.stamped.extend(self.fresh.drain(..).map(|obj| Retired { obj, stamp }));
        let min = registry().min_active();
        // Oldest first, as they were freed: the allocator hands the most
        // recently freed (cache-warm) memory out first.
        core::mem::swap(&mut self.stamped, &mut self.spare);
        for r in self.spare.drain(..) {
            if r.stamp < min {
                // SAFETY: `ErasedBox::destroy`'s list. The object came from
                // `TxOps::alloc` or `TPtr::from_box` (`TxOps::free`'s
                // contract), is retired once (`free`'s contract: not freed
                // again; a retired object sits in exactly one list) and is
                // dropped here only. A committed transaction unlinked it; its
                // stamp is older than every start announced now, read after
                // our fence: by the module's rules no running reader can
                // reach it, and later readers start after the unlink.
                unsafe { r.obj.destroy() };
            } else {
                self.stamped.push(r);
            }
        }
        self.next_collect = (self.stamped.len() * 2).max(collect_min());
        self.next_solo = (self.stamped.len() * 2).max(COLLECT_MIN_SOLO);
    }

    /// The thread is exiting: stamp what waits and hand it to the orphans.
    pub(crate) fn hand_over(&mut self) {
        if !self.fresh.is_empty() {
            // Without a barrier the garbage is stamped with the clock's
            // largest value: kept, never freed (a leak, not a use after free).
            let stamp = fenced_stamp().unwrap_or(u64::MAX);
            self.stamped.extend(self.fresh.drain(..).map(|obj| Retired { obj, stamp }));
        }
        if !self.stamped.is_empty() {
            orphans().lock().append(&mut self.stamped);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::collect_min;
    use crate::{TPtr, TVar, TxOps, atomically, try_atomically};

    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn freed_objects_are_reclaimed_after_commit_only() {
        let drops = Arc::new(AtomicUsize::new(0));
        let head: TVar<Option<TPtr<Counted>>> = TVar::new(None);
        atomically(|tx| {
            let p = tx.alloc(Counted(drops.clone()))?;
            tx.write(&head, Some(p))
        });
        // An aborted allocation is dropped at once.
        let r: Result<(), ()> = try_atomically(|tx| {
            tx.alloc(Counted(drops.clone())).map_err(|_| ())?;
            Err(())
        });
        assert!(r.is_err());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        // Freed in a committed transaction: dropped later, when collected.
        atomically(|tx| {
            let p = tx.read(&head)?.unwrap();
            tx.write(&head, None)?;
            // SAFETY: unlinked above, freed once.
            unsafe { tx.free(p) }
        });
        assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped before a collection");
        collect_until(&drops, 2);
    }

    #[test]
    fn an_exiting_thread_hands_its_garbage_over() {
        let drops = Arc::new(AtomicUsize::new(0));
        let d = drops.clone();
        std::thread::spawn(move || {
            atomically(|tx| {
                let p = tx.alloc(Counted(d.clone()))?;
                // SAFETY: never published, freed once.
                unsafe { tx.free(p) }
            });
        })
        .join()
        .unwrap();
        // One free is below the exiting thread's collection threshold: it
        // was handed over, and a collection adopts it.
        collect_until(&drops, 1);
    }

    /// Frees objects on this thread, `2 * collect_min()` at a time (at least
    /// one collection), until `drops` reaches `want`. Other tests of this
    /// binary may be running transactions meanwhile: a collection cannot
    /// drop what a transaction that started before its stamp may reach, and
    /// another thread's collection may adopt an orphan first, so it can take
    /// more than one round; ten seconds without it fail.
    fn collect_until(drops: &AtomicUsize, want: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            for _ in 0..(2 * collect_min()) {
                atomically(|tx| {
                    let p = tx.alloc(0u64)?;
                    // SAFETY: never published, freed once.
                    unsafe { tx.free(p) }
                });
            }
            let n = drops.load(Ordering::SeqCst);
            assert!(n <= want, "{n} drops, expected {want}: an object was dropped twice");
            if n == want {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "{n} drops after 10 s of collections, expected {want}");
        }
    }
}
