//! The TL2/LSA protocol itself, without the thread-local runtime: the
//! global clock ([`Engine`]), a transactional word beside its versioned
//! lock ([`VWord`], what a [`TVar`](crate::TVar) is), and one
//! transaction's read set, redo write set and snapshot bound
//! ([`TxState`]).
//!
//! [`atomically`](crate::atomically) drives one global engine; the loom
//! models (`tests/loom.rs`) build small engines of their own and run this
//! same code under the model checker. The crate README describes the
//! protocol step by step.
//!
//! The module is public only in loom builds (for those models): a
//! [`TxState`] records the addresses of the words it reads (their locks,
//! loaded again at validation) and writes (stored at commit), so recording
//! either is `unsafe` ([`TxState::read`], [`TxState::write`]), and outside
//! the crate only the runtime's safe API is offered.

use crossbeam_utils::CachePadded;

use crate::error::AbortReason;
use crate::lockword::{bound_version, current_at, is_locked, lock_bits, owner, snapshot_bound, unlocked, version};
use crate::primitive::{AtomicBool, AtomicU64, Backoff, Ordering, spin_loop};

/// How many times a read re-checks a word locked by a committer before
/// giving up. Locks are held only for the short commit write-back, so a
/// short wait is usually cheaper than an abort.
pub const READ_SPIN: u32 = 64;

/// `w`'s value with the lock word it was read under: the lock was unlocked
/// and unchanged around the value's load, so the pair is consistent. Spins
/// while the word is locked, at most [`READ_SPIN`] times in a row, then
/// gives up with [`AbortReason::LockedOnRead`]. The reads' slow paths.
fn consistent_load(w: &VWord) -> Result<(u64, u64), AbortReason> {
    let mut spins = 0;
    loop {
        let l1 = w.lock.load(Ordering::SeqCst);
        if is_locked(l1) {
            spins += 1;
            if spins > READ_SPIN {
                return Err(AbortReason::LockedOnRead);
            }
            spin_loop();
            continue;
        }
        let v = w.value.load(Ordering::Acquire);
        if w.lock.load(Ordering::Relaxed) == l1 {
            return Ok((v, l1));
        }
    }
}
/// Stands in, in loom builds, for the SeqCst accesses around the clock
/// that [`ClockPolicy::Readers`] relies on (loom models SeqCst loads and
/// read-modify-writes as AcqRel, and SeqCst fences fully): a fence after
/// each read of the clock by a reader, and between a commit's locks and
/// its validation. Nothing in other builds, where the accesses themselves
/// are SeqCst (on x86-64 the loads are plain `mov`s and the
/// read-modify-writes the `lock`ed instructions they were already).
#[inline(always)]
fn loom_sc_fence() {
    #[cfg(loom)]
    crate::primitive::fence(Ordering::SeqCst);
}

/// How many times commit re-checks a word held by another committer
/// before aborting (bounded, so two committers cannot deadlock).
pub const COMMIT_SPIN: u32 = 128;

/// A transactional word and the versioned lock that guards it, side by
/// side: 16 bytes aligned to 16, so both always lie in one cache line and
/// a transactional read loads one line, not a line of the value and a line
/// of a lock table.
///
/// The lock word's states are drawn in [`lockword`](crate::lockword). The
/// value is an `AtomicU64`, so every load, even by a doomed transaction, is
/// an atomic load: no data race.
#[derive(Debug)]
#[repr(C, align(16))]
pub struct VWord {
    value: AtomicU64,
    lock: AtomicU64,
}

impl VWord {
    /// A word holding `value`, unlocked at version 0.
    #[cfg(not(loom))]
    #[inline]
    pub const fn new(value: u64) -> Self {
        VWord { value: AtomicU64::new(value), lock: AtomicU64::new(0) }
    }

    /// A word holding `value`, unlocked at version 0.
    #[cfg(loom)]
    pub fn new(value: u64) -> Self {
        VWord { value: AtomicU64::new(value), lock: AtomicU64::new(0) }
    }

    /// The value.
    #[inline(always)]
    pub fn value(&self) -> &AtomicU64 {
        &self.value
    }

    /// The versioned lock.
    #[inline(always)]
    pub fn lock(&self) -> &AtomicU64 {
        &self.lock
    }

    /// The value, through exclusive access.
    #[inline]
    pub fn get_mut(&mut self) -> u64 {
        #[cfg(not(loom))]
        let w = *self.value.get_mut();
        #[cfg(loom)]
        let w = self.value.with_mut(|w| *w);
        w
    }

    /// Sets the value through exclusive access (nobody can hold a snapshot
    /// that includes the word, so its version need not move).
    #[inline]
    pub fn set_mut(&mut self, value: u64) {
        #[cfg(not(loom))]
        {
            *self.value.get_mut() = value;
        }
        #[cfg(loom)]
        self.value.with_mut(|w| *w = value);
    }
}

/// Whether a writing commit moves the global clock: a setting of each
/// thread ([`set_thread_clock`](crate::set_thread_clock); the worklist's
/// `Builder::clock` sets it on its workers); threads of both kinds may run
/// side by side.
///
/// - [`Commits`](ClockPolicy::Commits) (the default; TL2's GV4): the
///   commit moves the clock from `c` to `c + 1` (one CAS after taking its
///   locks) and writes its words at that version.
/// - [`Readers`](ClockPolicy::Readers) (TL2's GV5): the commit loads the
///   clock after taking its locks and writes its words at `c + 1` *without
///   storing the clock*.
///
/// Whatever the commits do, a transaction that reads a word newer than its
/// snapshot first moves the clock up to that word's version (a `fetch_max`,
/// only when the clock is below it) and then extends its snapshot (or,
/// read-only, restarts), so no word stays above the clock for long.
///
/// Why a `Readers` commit is safe: it loads `c` after it has locked every
/// word it writes, and the clock never goes down, so a snapshot at or
/// above its write version `c + 1` was read after those locks were taken:
/// such a transaction finds each of the commit's words locked or already
/// written back, never the value before it. A transaction whose snapshot
/// is below `c + 1` finds the commit's words newer than its snapshot and
/// validates before it moves on, as always. What is given up is a
/// commit's shortcut: a `Commits` commit whose CAS finds the clock still
/// at its snapshot knows that nobody committed since and skips validating
/// its read set; once any `Readers` commit has run in the process, an
/// unmoved clock no longer says that, and every writing commit validates.
/// (The first `Readers` commit raises a process-wide flag before it loads
/// the clock; a `Commits` commit reads the flag after its CAS. Whichever
/// comes first in their SeqCst order, the skip is sound: a `Readers`
/// commit that raised the flag after the `Commits` commit read it loaded
/// the clock later still, so it writes above that commit's version, and
/// writes back after that commit's linearization point.)
///
/// Why `Readers` is there: the clock is one cache line that every
/// `Commits` commit of every thread writes. On the 2-core machine this was
/// written on, two threads committing transactions on words nobody else
/// touches took 3 to 4 times as long per transaction as one thread alone,
/// and barely longer when the clock was not written (see the crate
/// README). Under `Readers` the line is written only when a transaction
/// meets another's recent write. The cost moves to those readers: one that
/// reads a word written since the clock last moved pays a `fetch_max` and
/// an extension (a validation of what it read so far). Workloads whose
/// transactions mostly touch data others wrote long ago (vacation's
/// reservations) gain; a sorted linked list, where every lookup walks
/// through the last update, loses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ClockPolicy {
    /// The commit moves the clock (TL2's GV4). The default.
    #[default]
    Commits,
    /// The commit leaves the clock; readers that meet its words move it
    /// (TL2's GV5).
    Readers,
    /// `Readers`, except for the next [`AUTO_HOLD`] writing commits after
    /// one of the thread's reads had to move the clock up to a word's
    /// version: those commits move the clock themselves. A thread whose
    /// transactions read what was just written (its own last update, a
    /// list everyone walks through) runs as `Commits`; one whose
    /// transactions touch data written long ago runs as `Readers`. (A
    /// policy of the runtime's threads: the protocol's own `TxState`, given
    /// `Auto` directly, commits as `Commits`.)
    Auto,
}

/// How many writing commits of a thread under [`ClockPolicy::Auto`] move
/// the clock after one of its reads had to move it.
pub const AUTO_HOLD: u32 = 64;

impl ClockPolicy {
    /// The names, as [`FromStr`](core::str::FromStr) takes them.
    pub const NAMES: &'static [&'static str] = &["commits", "readers", "auto"];

    /// The policy's name: `commits` or `readers`.
    pub const fn name(self) -> &'static str {
        match self {
            ClockPolicy::Commits => "commits",
            ClockPolicy::Readers => "readers",
            ClockPolicy::Auto => "auto",
        }
    }
}

impl core::fmt::Display for ClockPolicy {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl core::str::FromStr for ClockPolicy {
    type Err = crate::error::UnknownName;

    /// `commits`, `readers` or `auto`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "commits" => Ok(ClockPolicy::Commits),
            "readers" => Ok(ClockPolicy::Readers),
            "auto" => Ok(ClockPolicy::Auto),
            other => Err(crate::error::UnknownName {
                what: "clock policy",
                given: other.to_owned(),
                allowed: ClockPolicy::NAMES,
            }),
        }
    }
}

/// The validation bound of a commit that must validate its read set
/// (above every snapshot): a [`ClockPolicy::Readers`] commit, or any
/// writing commit once one has run in the process.
pub const VALIDATE_ALWAYS: u64 = u64::MAX;

/// The global version clock.
///
/// Invariant: every transaction that touches a given set of words uses the
/// same engine.
#[derive(Debug)]
pub struct Engine {
    clock: CachePadded<AtomicU64>,
    /// Set (for good) before the first [`ClockPolicy::Readers`] commit
    /// loads the clock; read by every `Commits` commit after its CAS. On a
    /// line of its own, away from the clock, so it stays in every core's
    /// cache.
    readers_seen: CachePadded<AtomicBool>,
}

impl Engine {
    /// A fresh engine: clock 0, no [`ClockPolicy::Readers`] commit yet.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Engine { clock: CachePadded::new(AtomicU64::new(0)), readers_seen: CachePadded::new(AtomicBool::new(false)) }
    }

    /// A fresh engine: clock 0, no [`ClockPolicy::Readers`] commit yet.
    #[cfg(loom)]
    pub fn new() -> Self {
        Engine { clock: CachePadded::new(AtomicU64::new(0)), readers_seen: CachePadded::new(AtomicBool::new(false)) }
    }

    /// Whether a [`ClockPolicy::Readers`] commit has run on this engine
    /// (from then on every writing commit validates its read set).
    #[cfg(any(loom, test))]
    pub fn readers_seen(&self) -> bool {
        self.readers_seen.load(Ordering::Relaxed)
    }

    /// The clock's current value.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        let c = self.clock.load(Ordering::SeqCst);
        loom_sc_fence();
        c
    }

    /// Moves the clock on by one and returns the value it had: a clock read
    /// after which every later snapshot is newer (reclamation's stamp,
    /// which could otherwise wait for a reader to move the clock when
    /// commits leave it alone).
    #[inline]
    pub fn tick(&self) -> u64 {
        let c = self.clock.fetch_add(1, Ordering::SeqCst);
        loom_sc_fence();
        c
    }

    /// Moves the clock up to `version`, a word's version a reader found
    /// above its snapshot, if it is below (a [`ClockPolicy::Readers`]
    /// commit wrote the word; after a `Commits` one the clock is already
    /// there, and this is one load).
    #[inline]
    fn catch_up(&self, version: u64) -> bool {
        let below = self.clock.load(Ordering::SeqCst) < version;
        if below {
            self.clock.fetch_max(version, Ordering::SeqCst);
        }
        loom_sc_fence();
        below
    }

    /// Takes the clock for a commit under `policy`; call only while
    /// holding the write locks. Returns the write version `wv` and the
    /// *validation bound*: the clock value up to which other commits may
    /// have written a word this transaction read (a bound equal to the
    /// snapshot `rv` means nobody committed since the snapshot, and the
    /// read set needs no validation; [`VALIDATE_ALWAYS`] is above every
    /// snapshot).
    ///
    /// [`ClockPolicy::Commits`] moves the clock GV4-style: when this call's
    /// CAS moved it from `c` to `c + 1` the bound is `c` (no other commit
    /// has a version in `(c, wv)`); when another committer moved it first
    /// and `wv` is shared, the bound is `wv` itself; once a `Readers`
    /// commit has run, the bound is `VALIDATE_ALWAYS`.
    /// [`ClockPolicy::Readers`] only loads it: `wv = c + 1`, bound
    /// `VALIDATE_ALWAYS`.
    #[inline]
    fn advance(&self, policy: ClockPolicy) -> (u64, u64) {
        if policy == ClockPolicy::Readers {
            if !self.readers_seen.load(Ordering::Relaxed) {
                self.readers_seen.store(true, Ordering::SeqCst);
            }
            loom_sc_fence();
            let c = self.clock.load(Ordering::SeqCst);
            return (c + 1, VALIDATE_ALWAYS);
        }
        let c = self.clock.load(Ordering::Acquire);
        let r = match self.clock.compare_exchange(c, c + 1, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => (c + 1, c),
            Err(actual) => (actual, actual),
        };
        loom_sc_fence();
        // Read after the CAS (see `ClockPolicy`): once a `Readers` commit
        // has run, the clock no longer counts the commits, so the bound
        // proves nothing, for the skip below or for an auxiliary's verdict.
        if self.readers_seen.load(Ordering::SeqCst) { (r.0, VALIDATE_ALWAYS) } else { r }
    }

    /// Writes `value` to `w` outside any transaction, as a transaction of
    /// one write would: lock the word, store, advance the clock, release
    /// with the new version, locking as owner `owner_id` (0: none).
    /// Concurrent transactions see it atomically.
    ///
    /// The word may be locked by a committer (for a short write-back) or by
    /// another non-transactional store: the wait spins, then yields
    /// (crossbeam's `Backoff`), as it waits for a release, not for a turn.
    pub fn store_single(&self, w: &VWord, value: u64, owner_id: u64) {
        let backoff = Backoff::new();
        loop {
            let l = w.lock.load(Ordering::Relaxed);
            if !is_locked(l)
                && w.lock
                    .compare_exchange_weak(l, l | lock_bits(owner_id), Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                break;
            }
            backoff.snooze();
        }
        w.value.store(value, Ordering::Release);
        let wv = self.clock.fetch_add(1, Ordering::AcqRel) + 1;
        w.lock.store(unlocked(wv), Ordering::Release);
    }
}

#[cfg(not(loom))]
impl Default for Engine {
    fn default() -> Self {
        Self::new()
    }
}

/// The undo log of a solo attempt, which writes its words in place: each
/// write stores the new value at once and logs the word with the value it
/// replaced; a commit forgets the log, a rollback stores the old values
/// back, newest first (so a word written twice gets its value from before
/// the first write). Reads need no write-set lookup: the word holds the
/// attempt's own latest value.
///
/// Only sound while no other thread runs a transaction or stores to the
/// words (the solo gate): another transaction would read values that may
/// still be rolled back, with versions that say nothing changed. Loads
/// outside transactions ([`TVar::load`](crate::TVar::load), epoch-guard
/// readers) may see such values; see the `solo` module for why objects
/// they can reach that way are retired, not dropped, on rollback.
///
/// # Type invariant
///
/// Every logged word was written by [`UndoLog::write`] in the attempt that
/// runs now, whose caller keeps it alive and in place until the attempt
/// ends; the log is emptied ([`UndoLog::undo`] or [`UndoLog::forget`])
/// before then.
#[derive(Debug)]
pub struct UndoLog {
    entries: Vec<(*const VWord, u64)>,
}

impl Default for UndoLog {
    fn default() -> Self {
        Self::new()
    }
}

impl UndoLog {
    /// An empty log.
    pub const fn new() -> Self {
        UndoLog { entries: Vec::new() }
    }

    /// Words written since the log was last emptied (a word written twice
    /// counts twice).
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was written since the log was last emptied.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether the next [`UndoLog::write`] must grow the log (allocate).
    #[inline(always)]
    pub fn is_full(&self) -> bool {
        self.entries.len() == self.entries.capacity()
    }

    /// Makes room for at least one more write (doubling the log).
    #[cold]
    pub fn grow(&mut self) {
        self.entries.reserve(self.entries.capacity().max(32));
    }

    /// Stores `value` into `w` in place, logging the value it replaces.
    /// Allocates only when [`UndoLog::is_full`].
    ///
    /// # Safety
    ///
    /// `w` stays alive and in place until this log is emptied (the attempt
    /// ends), and no other thread runs a transaction or stores to `w`
    /// meanwhile (the solo gate is held).
    #[inline(always)]
    pub unsafe fn write(&mut self, w: &VWord, value: u64) {
        let old = w.value.load(Ordering::Relaxed);
        self.entries.push((w, old));
        // Release: an object linked by this store was initialised before
        // it, for a reader outside transactions that loads the link with
        // acquire (as after a commit's write-back).
        w.value.store(value, Ordering::Release);
    }

    /// Stores every logged word's old value back, newest first, and
    /// empties the log.
    ///
    /// # Safety
    ///
    /// No other thread runs a transaction or stores to the logged words
    /// until this returns (the solo gate is still held).
    #[inline]
    pub unsafe fn undo(&mut self) {
        for &(w, old) in self.entries.iter().rev() {
            // SAFETY: the type invariant: the word is alive and in place
            // until the log is emptied, which is what this call does.
            unsafe { &*w }.value.store(old, Ordering::Release);
        }
        self.entries.clear();
    }

    /// Calls `f` with each logged word's lock (unchanged: a solo attempt
    /// locks nothing), for the wake slots of transactions waiting in
    /// `retry`.
    #[inline]
    pub fn each_lock(&self, mut f: impl FnMut(&AtomicU64)) {
        for &(w, _) in &self.entries {
            // SAFETY: the type invariant: alive until the log is emptied.
            f(&unsafe { &*w }.lock);
        }
    }

    /// Empties the log, keeping the new values (the attempt committed).
    /// Returns how many words were written.
    #[inline(always)]
    pub fn forget(&mut self) -> usize {
        let n = self.entries.len();
        self.entries.clear();
        n
    }
}

/// One entry of the redo log.
#[derive(Debug, Clone, Copy)]
struct WEntry {
    word: *const VWord,
    value: u64,
}

/// Above this many entries the write set keeps a hash index; below, a
/// linear scan (behind the Bloom filter) is faster.
const LINEAR_MAX: usize = 16;

/// The redo write set: entries in program order, a 64-bit Bloom filter of
/// their addresses, and an open-addressing index once it grows.
#[derive(Debug, Default)]
struct WriteSet {
    entries: Vec<WEntry>,
    bloom: u64,
    /// Entry number + 1 per slot, 0 = empty; length a power of two or 0.
    index: Vec<u32>,
}

#[inline(always)]
fn bloom_bit(addr: usize) -> u64 {
    1u64 << (((addr >> 4) ^ (addr >> 10)) & 63)
}

#[inline(always)]
fn hash_addr(addr: usize) -> usize {
    ((addr as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize
}

impl WriteSet {
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    #[inline(always)]
    fn find(&self, addr: usize) -> Option<usize> {
        if self.bloom & bloom_bit(addr) == 0 {
            return None;
        }
        self.find_slow(addr)
    }

    fn find_slow(&self, addr: usize) -> Option<usize> {
        if self.index.is_empty() {
            return self.entries.iter().rposition(|e| e.word as usize == addr);
        }
        let mask = self.index.len() - 1;
        let mut i = hash_addr(addr) & mask;
        loop {
            let slot = self.index[i];
            if slot == 0 {
                return None;
            }
            let e = (slot - 1) as usize;
            if self.entries[e].word as usize == addr {
                return Some(e);
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    fn insert(&mut self, word: &VWord, value: u64) {
        let addr = word as *const VWord as usize;
        if let Some(e) = self.find(addr) {
            self.entries[e].value = value;
            return;
        }
        self.bloom |= bloom_bit(addr);
        self.entries.push(WEntry { word, value });
        let n = self.entries.len();
        if n > LINEAR_MAX {
            if self.index.len() < 2 * n {
                self.rebuild_index();
            } else {
                self.index_insert(n - 1);
            }
        }
    }

    #[cold]
    fn rebuild_index(&mut self) {
        let cap = (self.entries.len() * 4).next_power_of_two();
        self.index.clear();
        self.index.resize(cap, 0);
        for e in 0..self.entries.len() {
            self.index_insert(e);
        }
    }

    fn index_insert(&mut self, e: usize) {
        let mask = self.index.len() - 1;
        let mut i = hash_addr(self.entries[e].word as usize) & mask;
        while self.index[i] != 0 {
            i = (i + 1) & mask;
        }
        self.index[i] = e as u32 + 1;
    }

    #[inline]
    fn clear(&mut self) {
        self.entries.clear();
        self.bloom = 0;
        if !self.index.is_empty() {
            self.index.clear();
        }
    }
}

/// The outcome of a successful commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    /// Nothing was written: the read snapshot was already consistent, no
    /// lock was taken and the clock did not move.
    ReadOnly,
    /// The write set was published with this write version.
    Wrote(u64),
}

/// One transaction's bookkeeping: the snapshot bound `rv`, the read set
/// (the locks of the words read) and the redo write set. Reused across
/// attempts and transactions, so steady-state transactions allocate
/// nothing.
///
/// Type invariant: the pointers in the read and write sets were recorded by
/// [`TxState::read`] and [`TxState::write`] during the attempt under way,
/// whose callers keep each word alive and in place until the attempt ends;
/// every way an attempt ends ([`TxState::commit`], [`TxState::rollback`],
/// the next begin) empties both sets, so no pointer outlives its attempt.
///
/// The loom models (`tests/loom.rs`) drive the protocol by hand with it;
/// the runtime's [`Tx`](crate::Tx) wraps one per thread.
#[derive(Debug, Default)]
pub struct TxState {
    /// The snapshot (read version), as [`snapshot_bound`] makes it: what
    /// [`current_at`] compares each read's lock word with.
    rv_bound: u64,
    reads: Vec<*const AtomicU64>,
    writes: WriteSet,
    /// The locks taken by the commit in progress.
    locked: Vec<*const AtomicU64>,
    /// This transaction's owner id, 1..=MAX_OWNER.
    owner: u64,
    /// The clock policy of [`TxState::commit`] (the runtime passes its
    /// thread's to [`TxState::commit_checked`]).
    #[cfg(any(loom, test))]
    clock_policy: ClockPolicy,
    /// The version a read-only read found above the clock (0: none), for
    /// [`TxState::settle`] to move the clock up to before the next attempt.
    catch_up: core::cell::Cell<u64>,
    /// A read of this state moved the clock up to a word's version (the
    /// word was written by a `Readers` commit the clock had not caught up
    /// with), since [`TxState::take_caught_up`] last asked.
    caught_up: bool,
    /// Loom fault injection: a `Readers` commit skips validation when the
    /// clock still reads its snapshot, as a `Commits` one may (wrong: see
    /// [`ClockPolicy`]).
    #[cfg(loom)]
    skip_readers_validation: bool,
}

// SAFETY: the only non-`Send` fields are the pointers of the read, write
// and locked sets. They are dereferenced only within the attempt that
// recorded them (the type invariant), whose callers keep each word alive
// and in place until it ends, whichever thread the state is on by then.
// The words are atomics, so loading and storing them from any thread is
// sound.
unsafe impl Send for TxState {}

impl TxState {
    /// A state for owner `owner` (1..=[`MAX_OWNER`](crate::lockword::MAX_OWNER)).
    pub fn new(owner: u64) -> Self {
        debug_assert!((1..=crate::lockword::MAX_OWNER).contains(&owner));
        TxState { owner, ..Default::default() }
    }

    /// This transaction's owner id.
    pub fn owner(&self) -> u64 {
        self.owner
    }

    /// The clock policy of this state's [`TxState::commit`]s (from the next
    /// on).
    #[cfg(any(loom, test))]
    pub fn set_clock_policy(&mut self, policy: ClockPolicy) {
        self.clock_policy = policy;
    }

    /// Whether a read moved the clock up to a word's version since the
    /// last call (what [`ClockPolicy::Auto`] watches); clears it.
    #[inline]
    pub fn take_caught_up(&mut self) -> bool {
        core::mem::take(&mut self.caught_up)
    }

    /// Makes this transaction's [`ClockPolicy::Readers`] commits skip
    /// validation when the clock still reads their snapshot: wrong, for the
    /// loom model that shows the validation is needed.
    #[cfg(loom)]
    pub fn skip_readers_validation(&mut self) {
        self.skip_readers_validation = true;
    }

    /// The current snapshot bound.
    #[inline(always)]
    pub fn rv(&self) -> u64 {
        bound_version(self.rv_bound)
    }

    /// The number of reads recorded (a word read twice counts twice).
    pub fn read_set_len(&self) -> usize {
        self.reads.len()
    }

    /// The number of distinct words written.
    pub fn write_set_len(&self) -> usize {
        self.writes.entries.len()
    }

    /// The locks of the read set, in the order read. Valid to dereference
    /// only while the attempt that read them runs (see the type invariant).
    pub fn read_locks(&self) -> &[*const AtomicU64] {
        &self.reads
    }

    /// Starts an attempt: empty sets, snapshot at the clock's current value
    /// (after [`TxState::settle`]).
    #[cfg(any(loom, test))]
    #[inline]
    pub fn begin(&mut self, e: &Engine) {
        self.settle(e);
        self.begin_at(e.now());
    }

    /// Starts an attempt with snapshot bound `rv` (a clock value the caller loaded).
    #[inline]
    pub fn begin_at(&mut self, rv: u64) {
        self.reads.clear();
        self.writes.clear();
        self.rv_bound = snapshot_bound(rv);
    }

    /// Reads the word `w` transactionally.
    ///
    /// Returns the value the transaction wrote earlier, if any; otherwise a
    /// value consistent with every earlier read (opacity): if the word is
    /// newer than the snapshot, the snapshot is extended when the read set
    /// still validates, and the attempt must abort otherwise.
    ///
    /// # Errors
    ///
    /// The abort reason when the attempt cannot go on; the caller must then
    /// call [`TxState::rollback`].
    ///
    /// # Safety
    ///
    /// The read set keeps `w`'s lock, and validations later in this attempt
    /// load it again, after this borrow of `w` has ended. Until this attempt
    /// ends (its `commit` returns, or [`TxState::rollback`] or the next
    /// begin runs), `w` stays alive (is not dropped or freed) and in place
    /// (is not moved).
    #[inline(always)]
    pub unsafe fn read(&mut self, e: &Engine, w: &VWord) -> Result<u64, AbortReason> {
        if !self.writes.is_empty() {
            if let Some(i) = self.writes.find(w as *const VWord as usize) {
                return Ok(self.writes.entries[i].value);
            }
        }
        let l1 = w.lock.load(Ordering::SeqCst);
        let v = w.value.load(Ordering::Acquire);
        let l2 = w.lock.load(Ordering::Relaxed);
        if l1 == l2 && current_at(l1, self.rv_bound) {
            self.reads.push(&w.lock);
            return Ok(v);
        }
        self.read_slow(e, w)
    }

    /// Reads `w` as TL2's read-only transactions do: checked against the
    /// snapshot (on engine `e`), but recorded nowhere. Nothing is kept, so nothing needs
    /// `w` after this call. Call it only in an attempt that has written
    /// nothing (it does not look in the write set), and commit such an
    /// attempt without validation: every value it read was current at
    /// `rv`.
    ///
    /// # Errors
    ///
    /// [`AbortReason::LockedOnRead`] as [`TxState::read`];
    /// [`AbortReason::ValidateOnRead`] when `w` is newer than the snapshot
    /// (without a read set the snapshot cannot be extended: the attempt
    /// must start again with a new one).
    #[inline(always)]
    pub fn read_unlogged(&self, w: &VWord) -> Result<u64, AbortReason> {
        debug_assert!(self.writes.is_empty(), "an unlogged read in an attempt that wrote");
        let l1 = w.lock.load(Ordering::SeqCst);
        let v = w.value.load(Ordering::Acquire);
        let l2 = w.lock.load(Ordering::Relaxed);
        if l1 == l2 && current_at(l1, self.rv_bound) {
            return Ok(v);
        }
        self.read_unlogged_slow(w)
    }

    #[inline(never)]
    fn read_unlogged_slow(&self, w: &VWord) -> Result<u64, AbortReason> {
        let (v, l) = consistent_load(w)?;
        if version(l) <= self.rv() {
            return Ok(v);
        }
        // The next attempt's snapshot must include this version: the clock
        // may be below it (a `ClockPolicy::Readers` commit wrote the word),
        // and `settle` moves it up before the next attempt begins.
        self.catch_up.set(version(l));
        Err(AbortReason::ValidateOnRead)
    }

    /// Before the next attempt's snapshot is read: moves the clock up to
    /// the version an unlogged read of the attempt before found above its
    /// snapshot, if any (see [`TxState::read_unlogged`]). Without it, a
    /// word a [`ClockPolicy::Readers`] commit wrote above the clock would
    /// restart a read-only transaction for as long as nobody else moved
    /// the clock.
    #[inline]
    pub fn settle(&mut self, e: &Engine) {
        let v = self.catch_up.replace(0);
        if v != 0 && e.catch_up(v) {
            self.caught_up = true;
        }
    }

    #[inline(never)]
    fn read_slow(&mut self, e: &Engine, w: &VWord) -> Result<u64, AbortReason> {
        loop {
            let (v, l1) = consistent_load(w)?;
            if version(l1) > self.rv() {
                // Newer than the snapshot: extend it if everything read so
                // far is still current, then read again. The value loaded
                // above must not be returned: it predates the extension, and
                // a commit between that load and the extension's clock read
                // may have replaced it within the new snapshot. (Under
                // `ClockPolicy::Readers` the clock may still be below the
                // word's version: move it up first, so the extension's
                // clock read covers the word.)
                if e.catch_up(version(l1)) {
                    self.caught_up = true;
                }
                if !self.extend(e) {
                    return Err(AbortReason::ValidateOnRead);
                }
                continue;
            }
            self.reads.push(&w.lock);
            return Ok(v);
        }
    }

    /// Validates the read set and, when it holds, moves the snapshot bound
    /// to the clock's current value (LSA timestamp extension).
    #[cold]
    pub fn extend(&mut self, e: &Engine) -> bool {
        let now = e.now();
        if self.validate() {
            self.rv_bound = snapshot_bound(now);
            true
        } else {
            false
        }
    }

    /// Whether every word read is still at a version within the snapshot
    /// and not locked by another transaction.
    pub fn validate(&self) -> bool {
        self.validate_from(0)
    }

    /// [`TxState::validate`] for the reads from the `from`-th on (the ones
    /// an assisted transaction kept for itself; see the runtime's `assist`).
    pub fn validate_from(&self, from: usize) -> bool {
        let rv = self.rv();
        let me = self.owner;
        self.reads.get(from..).unwrap_or(&[]).iter().all(|&lock| {
            // SAFETY: the type invariant: `lock` was recorded by `read` in
            // the attempt under way (the sets are emptied when it ends), and
            // `read`'s caller keeps the word alive and in place until then.
            let w = unsafe { &*lock }.load(Ordering::SeqCst);
            version(w) <= rv && (!is_locked(w) || owner(w) == me)
        })
    }

    /// Records a write of `value` to `w` in the redo log (read-after-write
    /// returns it; nothing is visible to others before commit).
    ///
    /// # Safety
    ///
    /// [`TxState::commit`] stores `value` through the address recorded here,
    /// after this borrow of `w` has ended. Until this attempt ends (its
    /// `commit` returns, or [`TxState::rollback`] or the next `begin` runs):
    ///
    /// - `w` stays alive (is not dropped or freed), and
    /// - `w` stays at its address (is not moved).
    #[inline(always)]
    pub unsafe fn write(&mut self, w: &VWord, value: u64) {
        self.writes.insert(w, value);
    }

    /// Commits the attempt.
    ///
    /// Read-only: nothing to do, the snapshot is consistent. Otherwise:
    /// lock each written word (bounded spin), advance the clock, validate
    /// the read set unless nobody committed since the snapshot, write back,
    /// release the locks at the new version. On failure every lock taken is
    /// released at its old version and nothing was written. Either way the
    /// attempt has ended: its sets are empty.
    ///
    /// # Errors
    ///
    /// The abort reason; the caller then begins again or gives up.
    #[cfg(any(loom, test))]
    #[inline]
    pub fn commit(&mut self, e: &Engine) -> Result<Committed, AbortReason> {
        self.commit_checked(e, self.clock_policy, |st, _| st.validate(), |_| {})
    }

    /// [`TxState::commit`] with the clock policy, the read-set validation
    /// supplied by the caller, and a hook on each released lock.
    ///
    /// Once the write locks are held and the clock has advanced, and only
    /// when some other transaction may have committed since the snapshot,
    /// `read_set_valid(self, bound)` must say whether no other transaction
    /// wrote a word of the read set with a version in `(version seen,
    /// bound]` (see `Engine::advance` for `bound`). The plain commit passes
    /// [`TxState::validate`]; an assisted one asks its auxiliary thread
    /// first. After a successful write-back, `released` is called with each
    /// lock as it was released (the runtime wakes `retry` waiters with it).
    ///
    /// # Errors
    ///
    /// As [`TxState::commit`].
    #[inline]
    pub fn commit_checked(
        &mut self,
        e: &Engine,
        policy: ClockPolicy,
        read_set_valid: impl FnOnce(&Self, u64) -> bool,
        released: impl FnMut(&AtomicU64),
    ) -> Result<Committed, AbortReason> {
        let r = if self.writes.is_empty() {
            Ok(Committed::ReadOnly)
        } else {
            self.commit_writes(e, policy, read_set_valid, released)
        };
        self.reads.clear();
        self.writes.clear();
        r
    }

    /// Commits an attempt that wrote nothing: every read was checked
    /// against the snapshot when it was made, so the reads are one
    /// consistent state at the snapshot and there is nothing to validate,
    /// lock or store (TL2's read-only commit; [`TxState::commit_checked`]
    /// does the same for an empty write set).
    /// `None`, with nothing changed, if the attempt wrote. The attempt has
    /// ended when it returns `Some`.
    #[inline(always)]
    pub fn commit_if_read_only(&mut self) -> Option<Committed> {
        if !self.writes.is_empty() {
            return None;
        }
        self.reads.clear();
        Some(Committed::ReadOnly)
    }

    // Always inlined into its one caller, `commit_checked` (itself inlined
    // into the runtime's out-of-line `TxCore::commit_writes`): left to
    // LLVM, it stopped being inlined after an unrelated change there, which
    // cost a writing commit 12 instructions (the `commit-update` count).
    #[inline(always)]
    fn commit_writes(
        &mut self,
        e: &Engine,
        policy: ClockPolicy,
        read_set_valid: impl FnOnce(&Self, u64) -> bool,
        mut released: impl FnMut(&AtomicU64),
    ) -> Result<Committed, AbortReason> {
        let me = self.owner;
        let mine = lock_bits(me);
        self.locked.clear();
        for entry in &self.writes.entries {
            // SAFETY: the type invariant: `entry.word` was recorded by
            // `write` in this attempt, whose caller keeps the word alive and
            // in place until the attempt ends; we are inside it.
            let lock = &unsafe { &*entry.word }.lock;
            let mut spins = 0;
            loop {
                let w = lock.load(Ordering::Relaxed);
                if is_locked(w) {
                    if owner(w) == me {
                        break;
                    }
                    spins += 1;
                    if spins > COMMIT_SPIN {
                        self.release_failed();
                        return Err(AbortReason::LockedOnCommit);
                    }
                    spin_loop();
                    continue;
                }
                if lock.compare_exchange_weak(w, w | mine, Ordering::SeqCst, Ordering::Relaxed).is_ok() {
                    self.locked.push(lock);
                    break;
                }
            }
        }
        let (wv, bound) = e.advance(policy);
        #[cfg(loom)]
        let bound = if self.skip_readers_validation && policy == ClockPolicy::Readers { wv - 1 } else { bound };
        if bound != self.rv() && !read_set_valid(self, bound) {
            self.release_failed();
            return Err(AbortReason::ValidateOnCommit);
        }
        for entry in &self.writes.entries {
            // SAFETY: as above.
            unsafe { &*entry.word }.value.store(entry.value, Ordering::Release);
        }
        let release = unlocked(wv);
        for &lock in &self.locked {
            // SAFETY: `lock` belongs to a word of the write set (above).
            let lock = unsafe { &*lock };
            lock.store(release, Ordering::Release);
            released(lock);
        }
        self.locked.clear();
        Ok(Committed::Wrote(wv))
    }

    /// Releases the locks of a failed commit at their old versions.
    #[cold]
    fn release_failed(&mut self) {
        for &lock in &self.locked {
            // SAFETY: `lock` belongs to a word of this attempt's write set,
            // alive until the attempt ends (the type invariant).
            let lock = unsafe { &*lock };
            let w = lock.load(Ordering::Relaxed);
            lock.store(unlocked(version(w)), Ordering::Release);
        }
        self.locked.clear();
    }

    /// Forgets the attempt (no lock is held outside `commit`, so this only
    /// clears the sets).
    #[inline]
    pub fn rollback(&mut self) {
        self.reads.clear();
        self.writes.clear();
    }
}

#[cfg(all(test, not(loom)))]
#[path = "raw_tests.rs"]
mod tests;
