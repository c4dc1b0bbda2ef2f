//! The process's one engine: the global version clock and the striped
//! lock table every transaction runs on, and what may be asked of them
//! from outside a transaction (the clock, how many stripes are locked).
//!
//! Under `cfg(loom)` the table has 16 locks and is created afresh in each
//! model execution (a loom `lazy_static`), so the models run the runtime's
//! own code on a table small enough to explore.

use crate::lockword::is_locked;
use crate::primitive::{AtomicU64, Ordering};
use crate::raw::Engine;

/// log2 of the number of versioned locks (TinySTM's default, 2^20; 2^4
/// in loom models).
#[cfg(not(loom))]
pub const LOCK_TABLE_BITS: u32 = 20;
/// log2 of the number of versioned locks (TinySTM's default, 2^20; 2^4
/// in loom models).
#[cfg(loom)]
pub const LOCK_TABLE_BITS: u32 = 4;
/// The number of versioned locks in the global table.
pub const LOCK_TABLE_SIZE: usize = 1 << LOCK_TABLE_BITS;

/// The engine of the global table.
pub(crate) type GlobalEngine = Engine<LOCK_TABLE_SIZE>;

/// 8 MiB of locks in `.bss`, paged in when the first transaction registers
/// its thread (see [`prefault_lock_table`]).
#[cfg(not(loom))]
static ENGINE: GlobalEngine = Engine::new();

#[cfg(loom)]
loom::lazy_static! {
    static ref ENGINE: GlobalEngine = Engine::new();
}

/// The global engine.
#[inline(always)]
pub(crate) fn engine() -> &'static GlobalEngine {
    &ENGINE
}

/// Writes once to every page of the lock table, so that it is backed by
/// real pages before transactions run.
///
/// The table sits in `.bss`: until a page is written, reads map the shared
/// zero page, and the first commit that locks a stripe there takes a
/// write-protect fault which, in a process with threads on other CPUs,
/// flushes their TLBs by interprocessor interrupt. Inside a short parallel
/// run those faults cost more than the transactions (seen on vacation: the
/// commit path spent half its time in the fault handler's TLB shootdown).
/// Paying for them once, here, on one thread, costs a few milliseconds per
/// process.
pub(crate) fn prefault_lock_table() {
    // A loom table is a handful of model atomics, not pages.
    if cfg!(loom) {
        return;
    }
    const PAGE_WORDS: usize = 4096 / core::mem::size_of::<u64>();
    for i in (0..LOCK_TABLE_SIZE).step_by(PAGE_WORDS) {
        let lock = engine().lock(i);
        let w = lock.load(Ordering::Relaxed);
        // A compare-exchange of a word with itself changes nothing, and
        // fails harmlessly if a transaction changed the word meanwhile;
        // either way the processor writes the line, so the page is
        // faulted in writable. (An idempotent `fetch_add(0)` may compile
        // to a plain load.)
        let _ = lock.compare_exchange(w, w, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// How many stripes of the global lock table are locked right now (scans
/// all [`LOCK_TABLE_SIZE`] locks). Outside commits this is 0; a diagnostic
/// for tests (after a panic, every lock must be free).
///
/// # Examples
///
/// ```
/// assert_eq!(skelaff_stm::locked_stripes(), 0);
/// ```
pub fn locked_stripes() -> usize {
    (0..LOCK_TABLE_SIZE).filter(|&i| is_locked(engine().lock(i).load(Ordering::Relaxed))).count()
}

/// The global clock: the number of write commits (and non-transactional
/// stores) so far.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, clock, TVar, TxOps};
///
/// let v = TVar::new(0u8);
/// let before = clock();
/// atomically(|tx| tx.write(&v, 1));
/// assert!(clock() > before);
/// ```
pub fn clock() -> u64 {
    engine().now()
}

/// The lock word covering the address `addr` (for [`lock_addr`](crate::lock_addr)).
#[inline(always)]
pub(crate) fn lock_word_for(addr: usize) -> &'static AtomicU64 {
    engine().lock_for(addr).1
}
