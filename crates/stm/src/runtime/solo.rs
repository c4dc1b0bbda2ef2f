//! The solo gate: one thread at a time may run its transactions alone,
//! without read sets, write sets, locks or validation (writing in place,
//! with an undo log), while every other thread's
//! transaction waits at its start (see the public [`solo`](crate::solo)
//! module for what users see).
//!
//! # The protocol
//!
//! The gate is one word, `owner`: 0 when open, else the owner id of the
//! thread that holds it. A thread enters by a CAS from 0 to its id, then
//! the reclaimer's fence (`membarrier`, or a SeqCst fence), then waits
//! until every other record announces no transaction. A transaction's
//! first attempt announces its start (the registry's announcement, with
//! its fence) and then loads `owner` (acquire): another id there means it
//! ends its announcement, counts itself in `waiting`, waits until the gate
//! opens, and starts again. Of the two fences one comes first (the
//! argument of the registry's docs, word for word with the CAS in place of
//! the unlink): either the entering thread's scan sees the announcement
//! and waits for that transaction to end (its end is a release store, read
//! with acquire, so all that transaction did happens before the solo
//! thread's reads), or the transaction's load sees the owner and it never
//! reads a word. So while the gate is held no other transaction runs, and
//! no `TVar::store` either (it announces the same way).
//!
//! The holder checks `waiting` at each of its transactions' start and
//! gives the gate back when someone waits (for good: the rest of its
//! transactions run plain), so a thread that wants to run transactions
//! concurrently with a solo thread waits at most one solo transaction.
//! The gate is given back with a release store, which the next
//! transaction's acquire load of `owner` reads: the solo thread's
//! in-place writes (and, for an attempt under way, their undoing, which
//! `give_back` does first) happen before that transaction's reads.
//!
//! A solo transaction is not announced to the gate any differently from a
//! plain one: the holder's own transactions pass its check.

use core::cell::{Cell, UnsafeCell};

use crossbeam_utils::CachePadded;

use crate::primitive::{AtomicU64, AtomicUsize, Backoff, Ordering};

use crate::raw::{UndoLog, VWord};

use super::registry::{INACTIVE, reclaim_fence, registry};

/// The gate: who holds it, and how many transactions wait for it.
#[derive(Debug)]
pub(crate) struct Gate {
    owner: CachePadded<AtomicU64>,
    waiting: CachePadded<AtomicUsize>,
}

#[cfg(not(loom))]
fn gate() -> &'static Gate {
    static GATE: Gate =
        Gate { owner: CachePadded::new(AtomicU64::new(0)), waiting: CachePadded::new(AtomicUsize::new(0)) };
    &GATE
}

#[cfg(loom)]
fn gate() -> &'static Gate {
    loom::lazy_static! {
        static ref GATE: Gate =
            Gate { owner: CachePadded::new(AtomicU64::new(0)), waiting: CachePadded::new(AtomicUsize::new(0)) };
    }
    &GATE
}

/// Where the calling thread stands with the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// It does not hold it (and holds no guard).
    Off,
    /// It holds the gate, and runs no solo transaction.
    Idle,
    /// It holds the gate and a solo transaction is running (set only by
    /// [`start_solo`], so the transaction's only record of being solo).
    Running,
    /// Its guard was dropped while a solo transaction ran: give the gate
    /// back when that transaction ends.
    ReleaseAtEnd,
    /// Its guard lives, but the gate was given back to let others run.
    GivenBack,
}

#[cfg(not(loom))]
std::thread_local! {
    static HELD: Cell<Held> = const { Cell::new(Held::Off) };
}

#[cfg(loom)]
loom::thread_local! {
    static HELD: Cell<Held> = Cell::new(Held::Off);
}

// The undo log of the calling thread's solo attempt. Here, not in the
// transaction descriptor, because `give_back` must empty it while the
// attempt's closure holds the descriptor (`&mut Tx`).
#[cfg(not(loom))]
std::thread_local! {
    static UNDO: ThreadLog = const { ThreadLog { growing: Cell::new(false), log: UnsafeCell::new(UndoLog::new()) } };
}

#[cfg(loom)]
loom::thread_local! {
    static UNDO: ThreadLog = ThreadLog { growing: Cell::new(false), log: UnsafeCell::new(UndoLog::new()) };
}

/// A thread's undo log, and whether it is growing. Every `&mut UndoLog`
/// is made by [`with_undo`] for one call of `UndoLog` that runs no code of
/// the crate or the user, but one: growing the log allocates, and a global
/// allocator may call [`give_back`], which would make a second `&mut`
/// (to undo the log) while the first lives. So the log grows in
/// [`grow_undo`], marked `growing`, and `give_back` called meanwhile
/// aborts the process instead.
struct ThreadLog {
    growing: Cell<bool>,
    log: UnsafeCell<UndoLog>,
}

/// `f` on the calling thread's undo log: one call of `UndoLog` that does
/// not allocate (see [`ThreadLog`]).
#[inline(always)]
fn with_undo<R>(f: impl FnOnce(&mut UndoLog) -> R) -> R {
    UNDO.with(|t| {
        if t.growing.get() {
            reentered();
        }
        // SAFETY: the log is this thread's own; every `f` passed here (in
        // this module) only works on the log and the atomics of the words
        // it names, and allocates nothing, so it runs no code that could
        // call back into `with_undo`; and the log is not growing (the one
        // call that runs foreign code, in `grow_undo`). So this is the only
        // reference to the log while it lives.
        f(unsafe { &mut *t.log.get() })
    })
}

/// Grows the calling thread's undo log, marked `growing` meanwhile.
#[cold]
#[inline(never)]
fn grow_undo() {
    UNDO.with(|t| {
        t.growing.set(true);
        // SAFETY: no other reference to the log exists (every one made by
        // `with_undo` has ended, and it makes none while `growing` is set).
        unsafe { &mut *t.log.get() }.grow();
        t.growing.set(false);
    });
}

#[cold]
#[inline(never)]
fn reentered() -> ! {
    use std::io::Write as _;
    let _ = std::io::stderr().write_all(
        b"skelaff-stm: solo::give_back was called while the STM was growing its undo log (from a global allocator?); aborting\n",
    );
    std::process::abort()
}

/// Writes `value` into `w` in place, in the calling thread's solo attempt.
///
/// # Safety
///
/// The calling thread runs a solo attempt with the gate ([`running`]),
/// and `w` stays alive and in place until that attempt ends (every attempt
/// empties the log before it ends: [`commit_in_place`] or [`undo_in_place`]).
#[inline(always)]
pub(crate) unsafe fn write_in_place(w: &VWord, value: u64) {
    let written = with_undo(|u| {
        if u.is_full() {
            return false;
        }
        // SAFETY: forwarded: the gate is held, `w` lives until the log is
        // emptied; the log has room, so the write does not allocate.
        unsafe { u.write(w, value) };
        true
    });
    if !written {
        grow_undo();
        // SAFETY: as above; `grow_undo` made room.
        with_undo(|u| unsafe { u.write(w, value) });
    }
}

/// Words written in place by the calling thread's solo attempt so far.
#[inline]
pub(crate) fn written_in_place() -> usize {
    with_undo(|u| u.len())
}

/// Stores back the old values of the words the calling thread's solo
/// attempt wrote in place, and empties the log. Called before the gate
/// opens ([`give_back`]) and when a solo attempt rolls back (with the gate
/// still closed to others: an attempt that began solo and lost the gate
/// was undone by `give_back` already).
#[inline]
pub(crate) fn undo_in_place() {
    // SAFETY: the log is not empty only inside the solo attempt that wrote
    // it (each attempt empties it before it ends), whose words are alive;
    // and no other thread's transaction runs: the gate is still closed
    // (every caller undoes before opening it).
    with_undo(|u| {
        if !u.is_empty() {
            // SAFETY: see above.
            unsafe { u.undo() }
        }
    });
}

/// The calling thread's solo attempt commits: calls `released` with each
/// written word's lock, empties the log, and returns how many words it
/// wrote.
#[inline]
pub(crate) fn commit_in_place(wake: bool, released: impl FnMut(&AtomicU64)) -> usize {
    with_undo(|u| {
        if wake {
            u.each_lock(released);
        }
        u.forget()
    })
}

/// Where the calling thread stands with the gate.
#[inline]
pub(crate) fn held() -> Held {
    HELD.with(Cell::get)
}

#[inline(always)]
fn set_held(h: Held) {
    HELD.with(|c| c.set(h));
}

/// Whether a transaction of the thread with owner id `me`, announced (with
/// its fence), may read: the gate is open or `me` holds it. One acquire
/// load.
#[inline(always)]
pub(crate) fn clear_for(me: u64) -> bool {
    #[cfg(loom)]
    if GATE_CHECK_REMOVED.with(Cell::get) {
        return true;
    }
    let o = gate().owner.load(Ordering::Acquire);
    o == 0 || o == me
}

// Whether the gate's check is removed (loom fault injection, see
// `loom_hooks::without_solo_gate`): a `std` thread-local, invisible to loom,
// as the registry's `START_FENCE_REMOVED`.
#[cfg(loom)]
std::thread_local! {
    pub(crate) static GATE_CHECK_REMOVED: Cell<bool> = const { Cell::new(false) };
}

/// Whether a rolled-back solo attempt drops its objects at once instead of
/// retiring them (loom fault injection, see
/// `loom_hooks::solo_allocs_dropped_at_once`; always false otherwise).
#[inline(always)]
pub(crate) fn allocs_dropped_at_once() -> bool {
    #[cfg(loom)]
    return SOLO_ALLOCS_DROPPED.with(Cell::get);
    #[cfg(not(loom))]
    false
}

#[cfg(loom)]
std::thread_local! {
    pub(crate) static SOLO_ALLOCS_DROPPED: Cell<bool> = const { Cell::new(false) };
}

/// Waits until the gate is open (the caller's transaction has ended its
/// announcement), counted in `waiting` so that the holder gives it back.
#[cold]
pub(crate) fn wait_open() {
    let g = gate();
    g.waiting.fetch_add(1, Ordering::SeqCst);
    let backoff = Backoff::new();
    while g.owner.load(Ordering::Acquire) != 0 {
        backoff.snooze();
    }
    g.waiting.fetch_sub(1, Ordering::SeqCst);
}

/// Why [`enter`] did not give the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The calling thread already has a guard.
    AlreadyHeld,
    /// Another thread holds the gate.
    Taken,
    /// The cross-thread barrier could not be made (`membarrier` failed).
    NoBarrier,
}

/// Takes the gate for the thread with owner id `me` (record `me - 1`):
/// close it, fence, wait for every other announced transaction to end.
pub(crate) fn enter(me: u64) -> Result<(), Refusal> {
    if held() != Held::Off {
        return Err(Refusal::AlreadyHeld);
    }
    let g = gate();
    if g.owner.compare_exchange(0, me, Ordering::SeqCst, Ordering::Relaxed).is_err() {
        return Err(Refusal::Taken);
    }
    if !reclaim_fence() {
        g.owner.store(0, Ordering::Release);
        return Err(Refusal::NoBarrier);
    }
    let backoff = Backoff::new();
    for (i, r) in registry().records().iter().enumerate() {
        if i as u64 + 1 == me {
            continue;
        }
        while r.tx_start() != INACTIVE {
            backoff.snooze();
        }
    }
    set_held(Held::Idle);
    Ok(())
}

/// Opens the gate (the caller holds it).
fn open() {
    gate().owner.store(0, Ordering::Release);
}

/// A solo-mode transaction starts: it runs solo if the calling thread
/// holds the gate between transactions ([`Held::Idle`]), and then the state
/// is [`Held::Running`] until [`end_solo`]. Gives the gate back first if a
/// transaction waits for it.
///
/// The state is the only record of the transaction being solo (the
/// transaction keeps no flag of its own): a solo transaction pays one
/// thread-local load and store here and one of each at its end.
#[inline]
pub(crate) fn start_solo() {
    if held() != Held::Idle {
        return;
    }
    if gate().waiting.load(Ordering::Relaxed) != 0 {
        give_back_for_waiter();
        return;
    }
    set_held(Held::Running);
}

/// A transaction waits for the gate: give it back (for good).
#[cold]
#[inline(never)]
fn give_back_for_waiter() {
    open();
    set_held(Held::GivenBack);
}

/// Whether the calling thread's solo transaction still runs with the gate
/// (started solo and not given back since, nor its guard dropped). A
/// thread-local load.
#[inline(always)]
pub(crate) fn running() -> bool {
    held() == Held::Running
}

/// Whether a solo transaction of the calling thread runs and the gate is
/// still closed for it: [`running`], or its guard was dropped meanwhile
/// (the gate opens at its end). Such a transaction gives the gate back
/// before it waits in `retry`.
#[inline]
pub(crate) fn in_solo() -> bool {
    matches!(held(), Held::Running | Held::ReleaseAtEnd)
}

/// Gives the calling thread's gate back now, if it holds it (for good: its
/// transactions run plain from here, the one under way included).
pub(crate) fn give_back() {
    match held() {
        Held::Running | Held::Idle => {
            // Inside a solo attempt: its words go back to their values
            // before it, while the gate still keeps others out (the attempt
            // cannot commit any more: see `TxCore::solo_attempt`).
            undo_in_place();
            open();
            set_held(Held::GivenBack);
        }
        Held::ReleaseAtEnd => {
            undo_in_place();
            open();
            set_held(Held::Off);
        }
        Held::Off | Held::GivenBack => {}
    }
}

/// A solo-mode transaction ended (committed, returned an error, or
/// unwound), whether it ran solo or not: only a solo one left the state
/// [`Held::Running`] or [`Held::ReleaseAtEnd`] (transactions do not nest,
/// and only [`start_solo`] sets `Running`).
#[inline]
pub(crate) fn end_solo() {
    let h = held();
    if h == Held::Running {
        set_held(Held::Idle);
    } else if h == Held::ReleaseAtEnd {
        release_at_end();
    }
}

/// A solo transaction whose guard was dropped ended: open the gate.
#[cold]
#[inline(never)]
fn release_at_end() {
    open();
    set_held(Held::Off);
}

/// The guard was dropped: open the gate now, or when the solo transaction
/// under way ends.
pub(crate) fn leave() {
    match held() {
        Held::Idle => {
            open();
            set_held(Held::Off);
        }
        Held::Running => set_held(Held::ReleaseAtEnd),
        Held::GivenBack => set_held(Held::Off),
        Held::Off | Held::ReleaseAtEnd => {}
    }
}

/// Whether the calling thread's guard had to give the gate back.
pub(crate) fn given_back() -> bool {
    held() == Held::GivenBack
}
