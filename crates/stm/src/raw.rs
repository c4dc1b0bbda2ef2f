//! The TL2/LSA protocol itself, without the thread-local runtime: a clock
//! and a striped lock table ([`Engine`]), and one transaction's read set,
//! redo write set and snapshot bounds ([`TxState`]).
//!
//! [`atomically`](crate::atomically) drives one global engine; the loom
//! models (`tests/loom.rs`) build small engines of their own and run this
//! same code under the model checker. The crate README describes the
//! protocol step by step.
//!
//! The module is public only in loom builds (for those models): a
//! [`TxState`] records the addresses it will write at commit, so recording
//! a write is `unsafe` ([`TxState::write`]), and outside the crate only the
//! runtime's safe API is offered.

use crossbeam_utils::CachePadded;

use crate::error::AbortReason;
use crate::lockword::{is_locked, lock_bits, owner, unlocked, version};
use crate::primitive::{AtomicU64, Backoff, Ordering, spin_loop};

/// How many times a read re-checks a stripe locked by a committer before
/// giving up. Locks are held only for the short commit write-back, so a
/// short wait is usually cheaper than an abort.
pub const READ_SPIN: u32 = 64;
/// How many times commit re-checks a stripe held by another committer
/// before aborting (bounded, so two committers cannot deadlock).
pub const COMMIT_SPIN: u32 = 128;

/// Address bits below the stripe: 2^5 = 32-byte stripes (4 words), as
/// TinySTM's default.
pub const STRIPE_SHIFT: u32 = 5;

/// The index of the lock covering the word at `addr` in a table of `n`
/// (a power of two) locks.
#[inline(always)]
pub const fn lock_index(addr: usize, n: usize) -> usize {
    (addr >> STRIPE_SHIFT) & (n - 1)
}

/// A global version clock and a table of `N` versioned write-locks
/// (`N` a power of two).
///
/// Invariant: every transaction that touches a given set of words uses the
/// same engine.
#[derive(Debug)]
pub struct Engine<const N: usize> {
    clock: CachePadded<AtomicU64>,
    locks: [AtomicU64; N],
}

impl<const N: usize> Engine<N> {
    const CHECK: () = assert!(N.is_power_of_two(), "the lock table size must be a power of two");

    /// A fresh engine: clock 0, every lock unlocked at version 0.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CHECK;
        Engine { clock: CachePadded::new(AtomicU64::new(0)), locks: [const { AtomicU64::new(0) }; N] }
    }

    /// A fresh engine: clock 0, every lock unlocked at version 0.
    #[cfg(loom)]
    pub fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CHECK;
        Engine { clock: CachePadded::new(AtomicU64::new(0)), locks: core::array::from_fn(|_| AtomicU64::new(0)) }
    }

    /// The clock's current value.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        self.clock.load(Ordering::Acquire)
    }

    /// The lock covering the word at `addr`, and its index.
    #[inline(always)]
    pub fn lock_for(&self, addr: usize) -> (usize, &AtomicU64) {
        let i = lock_index(addr, N);
        (i, &self.locks[i])
    }

    /// The lock at index `i` (from [`Engine::lock_for`]).
    #[inline(always)]
    pub fn lock(&self, i: usize) -> &AtomicU64 {
        &self.locks[i & (N - 1)]
    }

    /// Advances the clock GV4-style; call only while holding the write locks.
    /// Returns the write version `wv` and the *validation bound*: the clock
    /// value up to which other commits may have written a stripe this
    /// transaction read. When this call's CAS moved the clock from `c` to
    /// `c + 1` the bound is `c` (no other commit has a version in
    /// `(c, wv)`); when another committer moved it first and `wv` is shared,
    /// the bound is `wv` itself. A bound equal to the snapshot `rv` means
    /// nobody committed since the snapshot.
    #[inline]
    fn advance(&self) -> (u64, u64) {
        let c = self.clock.load(Ordering::Acquire);
        match self.clock.compare_exchange(c, c + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => (c + 1, c),
            Err(actual) => (actual, actual),
        }
    }

    /// Writes `value` to `cell` outside any transaction, as a transaction of
    /// one write would: lock the stripe, store, advance the clock, release
    /// with the new version, locking as owner `owner_id` (0: none).
    /// Concurrent transactions see it atomically.
    ///
    /// The stripe may be held by a committer (for a short write-back) or by
    /// another non-transactional store: the wait spins, then yields
    /// (crossbeam's `Backoff`), as it waits for a release, not for a turn.
    pub fn store_single(&self, cell: &AtomicU64, value: u64, owner_id: u64) {
        let (_, lock) = self.lock_for(cell as *const AtomicU64 as usize);
        let backoff = Backoff::new();
        loop {
            let w = lock.load(Ordering::Relaxed);
            if !is_locked(w)
                && lock.compare_exchange_weak(w, w | lock_bits(owner_id), Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                break;
            }
            backoff.snooze();
        }
        cell.store(value, Ordering::Release);
        let wv = self.clock.fetch_add(1, Ordering::AcqRel) + 1;
        lock.store(unlocked(wv), Ordering::Release);
    }
}

#[cfg(not(loom))]
impl<const N: usize> Default for Engine<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// One entry of the redo log.
#[derive(Debug, Clone, Copy)]
struct WEntry {
    cell: *const AtomicU64,
    value: u64,
    lock: u32,
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
    1u64 << (((addr >> 3) ^ (addr >> 9)) & 63)
}

#[inline(always)]
fn hash_addr(addr: usize) -> usize {
    ((addr as u64 >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize
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
            return self.entries.iter().rposition(|e| e.cell as usize == addr);
        }
        let mask = self.index.len() - 1;
        let mut i = hash_addr(addr) & mask;
        loop {
            let slot = self.index[i];
            if slot == 0 {
                return None;
            }
            let e = (slot - 1) as usize;
            if self.entries[e].cell as usize == addr {
                return Some(e);
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    fn insert(&mut self, cell: &AtomicU64, lock: usize, value: u64) {
        let addr = cell as *const AtomicU64 as usize;
        if let Some(e) = self.find(addr) {
            self.entries[e].value = value;
            return;
        }
        self.bloom |= bloom_bit(addr);
        self.entries.push(WEntry { cell, value, lock: lock as u32 });
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
        let mut i = hash_addr(self.entries[e].cell as usize) & mask;
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

/// One transaction's bookkeeping: the snapshot bound `rv`, the read set (lock
/// indices) and the redo write set. Reused across attempts and transactions,
/// so steady-state transactions allocate nothing.
///
/// The loom models (`tests/loom.rs`) drive the protocol by hand with it;
/// the runtime's [`Tx`](crate::Tx) wraps one per thread.
#[derive(Debug, Default)]
pub struct TxState {
    rv: u64,
    reads: Vec<u32>,
    writes: WriteSet,
    /// Indices of the locks taken by the commit in progress.
    locked: Vec<u32>,
    /// This transaction's owner id, 1..=MAX_OWNER.
    owner: u64,
}

// SAFETY: the only non-`Send` fields are the cell pointers of the write set.
// They are dereferenced only by `commit`, within the attempt that recorded
// them, and `TxState::write`'s contract (answered by each caller) keeps each
// cell alive at its address until that attempt ends, whichever thread the
// state is on by then. The cells are `AtomicU64`s, so storing to them from
// any thread is sound.
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

    /// The current snapshot bound.
    pub fn rv(&self) -> u64 {
        self.rv
    }

    /// The number of reads recorded (consecutive reads of one stripe count once).
    pub fn read_set_len(&self) -> usize {
        self.reads.len()
    }

    /// The number of distinct words written.
    pub fn write_set_len(&self) -> usize {
        self.writes.entries.len()
    }

    /// The lock indices of the read set.
    pub fn read_locks(&self) -> &[u32] {
        &self.reads
    }

    /// Starts an attempt: empty sets, snapshot at the clock's current value.
    #[cfg(any(loom, test))]
    #[inline]
    pub fn begin<const N: usize>(&mut self, e: &Engine<N>) {
        self.begin_at(e.now());
    }

    /// Starts an attempt with snapshot bound `rv` (a clock value the caller loaded).
    #[inline]
    pub fn begin_at(&mut self, rv: u64) {
        self.reads.clear();
        self.writes.clear();
        self.rv = rv;
    }

    /// Reads the word in `cell` transactionally.
    ///
    /// Returns the value the transaction wrote earlier, if any; otherwise a
    /// value consistent with every earlier read (opacity): if the stripe is
    /// newer than the snapshot, the snapshot is extended when the read set
    /// still validates, and the attempt must abort otherwise.
    ///
    /// # Errors
    ///
    /// The abort reason when the attempt cannot go on; the caller must then
    /// call [`TxState::rollback`].
    #[inline(always)]
    pub fn read<const N: usize>(&mut self, e: &Engine<N>, cell: &AtomicU64) -> Result<u64, AbortReason> {
        let addr = cell as *const AtomicU64 as usize;
        if !self.writes.is_empty() {
            if let Some(i) = self.writes.find(addr) {
                return Ok(self.writes.entries[i].value);
            }
        }
        let (idx, lock) = e.lock_for(addr);
        let l1 = lock.load(Ordering::Acquire);
        let v = cell.load(Ordering::Acquire);
        let l2 = lock.load(Ordering::Relaxed);
        if l1 == l2 && !is_locked(l1) && version(l1) <= self.rv {
            if self.reads.last() != Some(&(idx as u32)) {
                self.reads.push(idx as u32);
            }
            return Ok(v);
        }
        self.read_slow(e, cell, idx)
    }

    #[inline(never)]
    fn read_slow<const N: usize>(&mut self, e: &Engine<N>, cell: &AtomicU64, idx: usize) -> Result<u64, AbortReason> {
        let lock = e.lock(idx);
        let mut spins = 0;
        loop {
            let l1 = lock.load(Ordering::Acquire);
            if is_locked(l1) {
                spins += 1;
                if spins > READ_SPIN {
                    return Err(AbortReason::LockedOnRead);
                }
                spin_loop();
                continue;
            }
            let v = cell.load(Ordering::Acquire);
            let l2 = lock.load(Ordering::Relaxed);
            if l1 != l2 {
                continue;
            }
            if version(l1) > self.rv {
                // Newer than the snapshot: extend it if everything read so
                // far is still current, then read again. The value loaded
                // above must not be returned: it predates the extension, and
                // a commit between that load and the extension's clock read
                // may have replaced it within the new snapshot.
                if !self.extend(e) {
                    return Err(AbortReason::ValidateOnRead);
                }
                continue;
            }
            self.reads.push(idx as u32);
            return Ok(v);
        }
    }

    /// Validates the read set and, when it holds, moves the snapshot bound
    /// to the clock's current value (LSA timestamp extension).
    #[cold]
    pub fn extend<const N: usize>(&mut self, e: &Engine<N>) -> bool {
        let now = e.now();
        if self.validate(e) {
            self.rv = now;
            true
        } else {
            false
        }
    }

    /// Whether every stripe read is still at a version within the snapshot
    /// and not locked by another transaction.
    pub fn validate<const N: usize>(&self, e: &Engine<N>) -> bool {
        self.validate_from(e, 0)
    }

    /// [`TxState::validate`] for the reads from the `from`-th on (the ones
    /// an assisted transaction kept for itself; see the runtime's `assist`).
    pub fn validate_from<const N: usize>(&self, e: &Engine<N>, from: usize) -> bool {
        let rv = self.rv;
        let me = self.owner;
        self.reads.get(from..).unwrap_or(&[]).iter().all(|&i| {
            let w = e.lock(i as usize).load(Ordering::Acquire);
            version(w) <= rv && (!is_locked(w) || owner(w) == me)
        })
    }

    /// Records a write of `value` to `cell` in the redo log (read-after-write
    /// returns it; nothing is visible to others before commit).
    ///
    /// # Safety
    ///
    /// [`TxState::commit`] stores `value` through the address recorded here,
    /// after this borrow of `cell` has ended. Until this attempt ends (its
    /// `commit` returns, or [`TxState::rollback`] or the next `begin` runs):
    ///
    /// - `cell` stays alive (is not dropped or freed), and
    /// - `cell` stays at its address (is not moved).
    #[inline(always)]
    pub unsafe fn write<const N: usize>(&mut self, _e: &Engine<N>, cell: &AtomicU64, value: u64) {
        let idx = lock_index(cell as *const AtomicU64 as usize, N);
        self.writes.insert(cell, idx, value);
    }

    /// Commits the attempt.
    ///
    /// Read-only: nothing to do, the snapshot is consistent. Otherwise:
    /// lock each written stripe (bounded spin), advance the clock, validate
    /// the read set unless nobody committed since the snapshot, write back,
    /// release the locks at the new version. On failure every lock taken is
    /// released at its old version and nothing was written.
    ///
    /// # Errors
    ///
    /// The abort reason; the caller must then call [`TxState::rollback`].
    #[inline]
    pub fn commit<const N: usize>(&mut self, e: &Engine<N>) -> Result<Committed, AbortReason> {
        self.commit_checked(e, |st, _| st.validate(e))
    }

    /// [`TxState::commit`] with the read-set validation supplied by the
    /// caller: once the write locks are held and the clock has advanced,
    /// and only when some other transaction may have committed since the
    /// snapshot, `read_set_valid(self, bound)` must say whether no other
    /// transaction wrote a stripe of the read set with a version in
    /// `(version seen, bound]` (see `Engine::advance` for `bound`). The
    /// plain commit passes [`TxState::validate`]; an assisted one asks its
    /// auxiliary thread first.
    ///
    /// # Errors
    ///
    /// As [`TxState::commit`].
    #[inline]
    pub fn commit_checked<const N: usize>(
        &mut self,
        e: &Engine<N>,
        read_set_valid: impl FnOnce(&Self, u64) -> bool,
    ) -> Result<Committed, AbortReason> {
        if self.writes.is_empty() {
            return Ok(Committed::ReadOnly);
        }
        self.commit_writes(e, read_set_valid)
    }

    fn commit_writes<const N: usize>(
        &mut self,
        e: &Engine<N>,
        read_set_valid: impl FnOnce(&Self, u64) -> bool,
    ) -> Result<Committed, AbortReason> {
        let me = self.owner;
        let mine = lock_bits(me);
        self.locked.clear();
        for entry in &self.writes.entries {
            let lock = e.lock(entry.lock as usize);
            let mut spins = 0;
            loop {
                let w = lock.load(Ordering::Relaxed);
                if is_locked(w) {
                    if owner(w) == me {
                        break;
                    }
                    spins += 1;
                    if spins > COMMIT_SPIN {
                        self.release_failed(e);
                        return Err(AbortReason::LockedOnCommit);
                    }
                    spin_loop();
                    continue;
                }
                if lock.compare_exchange_weak(w, w | mine, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                    self.locked.push(entry.lock);
                    break;
                }
            }
        }
        let (wv, bound) = e.advance();
        if bound != self.rv && !read_set_valid(self, bound) {
            self.release_failed(e);
            return Err(AbortReason::ValidateOnCommit);
        }
        for entry in &self.writes.entries {
            // SAFETY: `entry.cell` was recorded by `write` in this attempt,
            // whose caller guaranteed the cell stays alive and in place until
            // the attempt ends; we are inside it.
            unsafe { &*entry.cell }.store(entry.value, Ordering::Release);
        }
        let release = unlocked(wv);
        for &i in &self.locked {
            e.lock(i as usize).store(release, Ordering::Release);
        }
        self.locked.clear();
        Ok(Committed::Wrote(wv))
    }

    /// Releases the locks of a failed commit at their old versions.
    #[cold]
    fn release_failed<const N: usize>(&mut self, e: &Engine<N>) {
        for &i in &self.locked {
            let lock = e.lock(i as usize);
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
mod tests {
    use super::*;

    #[test]
    fn read_your_writes_and_commit() {
        let e: Engine<64> = Engine::new();
        let cells: Vec<AtomicU64> = (0..40).map(AtomicU64::new).collect();
        let mut t = TxState::new(1);
        t.begin(&e);
        for (i, c) in cells.iter().enumerate() {
            assert_eq!(t.read(&e, c).unwrap(), i as u64);
            // SAFETY: `cells` outlives the attempt and does not move.
            unsafe { t.write(&e, c, 100 + i as u64) };
        }
        for (i, c) in cells.iter().enumerate() {
            assert_eq!(t.read(&e, c).unwrap(), 100 + i as u64, "read-after-write through the index");
        }
        assert_eq!(t.commit(&e).unwrap(), Committed::Wrote(1));
        for (i, c) in cells.iter().enumerate() {
            assert_eq!(c.load(Ordering::Relaxed), 100 + i as u64);
        }
        for i in 0..64 {
            assert!(!is_locked(e.lock(i).load(Ordering::Relaxed)));
        }
    }

    #[test]
    fn stale_read_set_fails_commit_and_releases_locks() {
        let e: Engine<64> = Engine::new();
        let a = AtomicU64::new(1);
        let b = AtomicU64::new(2);
        let mut t1 = TxState::new(1);
        let mut t2 = TxState::new(2);
        t1.begin(&e);
        assert_eq!(t1.read(&e, &a).unwrap(), 1);
        t2.begin(&e);
        // SAFETY: `a` and `b` outlive both attempts and do not move.
        unsafe { t2.write(&e, &a, 10) };
        t2.commit(&e).unwrap();
        // SAFETY: as above.
        unsafe { t1.write(&e, &b, 20) };
        assert_eq!(t1.commit(&e), Err(AbortReason::ValidateOnCommit));
        t1.rollback();
        assert_eq!(b.load(Ordering::Relaxed), 2);
        for i in 0..64 {
            assert!(!is_locked(e.lock(i).load(Ordering::Relaxed)));
        }
    }

    #[test]
    fn snapshot_extends_when_unrelated_stripes_change() {
        let e: Engine<1024> = Engine::new();
        let cells: Vec<AtomicU64> = (0..64).map(|_| AtomicU64::new(0)).collect();
        let (a, b) = (&cells[0], &cells[32]);
        assert_ne!(lock_index(a as *const _ as usize, 1024), lock_index(b as *const _ as usize, 1024));
        let mut t1 = TxState::new(1);
        let mut t2 = TxState::new(2);
        t1.begin(&e);
        t1.read(&e, a).unwrap();
        t2.begin(&e);
        // SAFETY: `cells` outlives the attempt and does not move.
        unsafe { t2.write(&e, b, 5) };
        t2.commit(&e).unwrap();
        // b is newer than t1's snapshot, but a did not change: extend.
        assert_eq!(t1.read(&e, b).unwrap(), 5);
        assert_eq!(t1.rv(), 1);
    }
}
