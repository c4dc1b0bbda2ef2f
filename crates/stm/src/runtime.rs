//! The thread-local runtime: one transaction descriptor per thread, the
//! global engine, the thread registry, `atomically`, epoch-based
//! reclamation on the STM clock, `retry` wake-ups, statistics and the
//! access sampler.

use core::cell::{Cell, UnsafeCell};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};
use std::collections::VecDeque;
use std::sync::OnceLock;
use std::time::Duration;

use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};

use crate::config::{Config, ContentionManager};
use crate::error::{AbortReason, SamplerError, TxError};
use crate::lockword::{MAX_OWNER, is_locked, version};
use crate::raw::{Committed, Engine, TxState};
use crate::sampler::{AccessKind, Sampler, Samples};
use crate::stats::{AtomicStats, Stats};
use crate::tvar::TVar;
use crate::txops::TxOps;
use crate::word::{TPtr, Word};

/// log2 of the number of versioned locks (TinySTM's default, 2^20).
pub const LOCK_TABLE_BITS: u32 = 20;
/// The number of versioned locks in the global table.
pub const LOCK_TABLE_SIZE: usize = 1 << LOCK_TABLE_BITS;
/// The most threads that can hold a transaction descriptor at once (the
/// lock word's owner field is 10 bits).
pub const MAX_THREADS: usize = MAX_OWNER as usize;

/// The engine every transaction of the process runs on: 8 MiB of locks in
/// `.bss`, paged in when the first transaction registers its thread (see
/// `prefault_lock_table`).
pub(crate) static ENGINE: Engine<LOCK_TABLE_SIZE> = Engine::new();

/// A slot's start value when no transaction (or pin) is running there.
const INACTIVE: u64 = u64::MAX;

/// The shared half of a thread's registration.
#[derive(Debug, Default)]
struct Slot {
    /// The snapshot the running transaction attempt started from, or INACTIVE.
    tx_start: AtomicU64,
    /// The clock when the outermost epoch pin was taken, or INACTIVE.
    pin_start: AtomicU64,
    stats: AtomicStats,
}

#[derive(Debug)]
struct Registry {
    slots: Box<[CachePadded<Slot>]>,
    /// Slots `0..hwm` have ever been handed out.
    hwm: AtomicUsize,
    free: Mutex<Vec<usize>>,
    /// Statistics of threads that have exited.
    retired_stats: Mutex<Stats>,
    /// Garbage left behind by threads that exited before it could be reclaimed.
    orphans: Mutex<Vec<Retired>>,
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
fn prefault_lock_table() {
    const PAGE_WORDS: usize = 4096 / core::mem::size_of::<AtomicU64>();
    for i in (0..LOCK_TABLE_SIZE).step_by(PAGE_WORDS) {
        let lock = ENGINE.lock(i);
        let w = lock.load(Ordering::Relaxed);
        // A compare-exchange of a word with itself changes nothing, and
        // fails harmlessly if a transaction changed the word meanwhile;
        // either way the processor writes the line, so the page is
        // faulted in writable. (An idempotent `fetch_add(0)` may compile
        // to a plain load.)
        let _ = lock.compare_exchange(w, w, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Prepares the STM for its first transaction: pages in the lock table
/// (a few milliseconds, once per process; see the crate's README). Every
/// transaction does this itself if needed; call it ahead, as STAMP's
/// `TM_STARTUP`, to keep that one-time cost out of a timed region. Later
/// calls return at once.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, startup, TVar, TxOps};
///
/// startup(); // before the clock starts
/// let v = TVar::new(1u64);
/// assert_eq!(atomically(|tx| tx.update(&v, |x| x + 1)), 2);
/// ```
pub fn startup() {
    let _ = registry();
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        prefault_lock_table();
        Registry {
            slots: (0..MAX_THREADS)
                .map(|_| {
                    CachePadded::new(Slot {
                        tx_start: AtomicU64::new(INACTIVE),
                        pin_start: AtomicU64::new(INACTIVE),
                        stats: AtomicStats::default(),
                    })
                })
                .collect(),
            hwm: AtomicUsize::new(0),
            free: Mutex::new(Vec::new()),
            retired_stats: Mutex::new(Stats::default()),
            orphans: Mutex::new(Vec::new()),
        }
    })
}

impl Registry {
    fn register(&'static self) -> usize {
        if let Some(i) = self.free.lock().pop() {
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

    fn unregister(&self, i: usize) {
        let slot = &self.slots[i];
        slot.tx_start.store(INACTIVE, Ordering::Release);
        slot.pin_start.store(INACTIVE, Ordering::Release);
        self.retired_stats.lock().merge(&slot.stats.snapshot());
        slot.stats.reset();
        self.free.lock().push(i);
    }

    /// The oldest start of any running transaction or pin (INACTIVE if none).
    /// The caller has issued a SeqCst fence after retiring its garbage.
    fn min_active(&self) -> u64 {
        let n = self.hwm.load(Ordering::Acquire).min(MAX_THREADS);
        self.slots[..n]
            .iter()
            .map(|s| s.tx_start.load(Ordering::Relaxed).min(s.pin_start.load(Ordering::Relaxed)))
            .min()
            .unwrap_or(INACTIVE)
    }
}

/// A type-erased owned heap object.
#[derive(Debug)]
struct Owned {
    ptr: *mut (),
    drop: unsafe fn(*mut ()),
}

/// Drops the `Box<T>` behind `p`.
///
/// # Safety
///
/// `p` came from `TPtr<T>::as_ptr` of a pointer made from a `Box<T>`, and
/// nothing else will use or free it.
unsafe fn drop_box<T>(p: *mut ()) {
    // SAFETY: the caller guarantees `p` is an unaliased `Box<T>` pointer.
    drop(unsafe { Box::from_raw(p.cast::<T>()) });
}

impl Owned {
    fn new<T: Send + Sync + 'static>(p: TPtr<T>) -> Self {
        Owned { ptr: p.as_ptr().cast(), drop: drop_box::<T> }
    }

    /// # Safety
    ///
    /// The object is unreachable by every thread and dropped only here.
    unsafe fn destroy(self) {
        // SAFETY: `drop` was built for this pointer's type in `Owned::new`;
        // the caller guarantees exclusive ownership.
        unsafe { (self.drop)(self.ptr) }
    }
}

/// An object freed by a committed transaction, waiting for every
/// transaction that might still reach it to end.
#[derive(Debug)]
struct Retired {
    obj: Owned,
    /// The clock after the freeing commit's write-back: transactions that
    /// started later cannot reach the object.
    at: u64,
}

// SAFETY: the objects were allocated with `T: Send + Sync` (see
// `Owned::new`), so dropping them on another thread is sound; the pointer is
// owned by this record alone.
unsafe impl Send for Retired {}

/// Wake-ups for transactions waiting in `retry`. Committers look at
/// `waiters` (one relaxed load) and notify only when someone waits; a
/// missed notification costs a waiter at most `RETRY_POLL`.
struct Wake {
    waiters: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

static WAKE: Wake = Wake { waiters: AtomicUsize::new(0), lock: Mutex::new(()), cv: Condvar::new() };
const RETRY_POLL: Duration = Duration::from_millis(1);

/// Under suicide, every this many consecutive aborts of one transaction
/// yield the CPU once.
const SUICIDE_YIELD_EVERY: u32 = 8;

/// Garbage count that triggers a reclamation pass.
const COLLECT_MIN: usize = 64;

/// The transaction descriptor of a thread, handed to the closure of
/// [`atomically`] as `&mut Tx`. Use it through [`TxOps`].
#[derive(Debug)]
pub struct Tx {
    st: TxState,
    slot: &'static Slot,
    /// The first signal raised in this attempt; the attempt cannot commit
    /// while one is pending.
    pending: Option<TxError>,
    allocs: Vec<Owned>,
    frees: Vec<Owned>,
    garbage: VecDeque<Retired>,
    next_collect: usize,
    rng: u64,
    sampler: Sampler,
    retry_locks: Vec<u32>,
}

impl Tx {
    fn new(slot_no: usize) -> Tx {
        Tx {
            st: TxState::new(slot_no as u64 + 1),
            slot: &registry().slots[slot_no],
            pending: None,
            allocs: Vec::new(),
            frees: Vec::new(),
            garbage: VecDeque::new(),
            next_collect: COLLECT_MIN,
            rng: 0x9E37_79B9_7F4A_7C15 ^ ((slot_no as u64 + 1) << 32),
            sampler: Sampler::default(),
            retry_locks: Vec::new(),
        }
    }

    /// The snapshot bound of the running attempt (a clock value).
    pub fn snapshot(&self) -> u64 {
        self.st.rv()
    }

    /// Reads recorded so far in this attempt.
    pub fn read_set_len(&self) -> usize {
        self.st.read_set_len()
    }

    /// Distinct words written so far in this attempt.
    pub fn write_set_len(&self) -> usize {
        self.st.write_set_len()
    }

    #[inline(always)]
    fn signal(&mut self, e: TxError) -> TxError {
        if self.pending.is_none() {
            self.pending = Some(e);
        }
        e
    }

    /// First attempt: publish the start in the slot, then make sure every
    /// reclaimer that misses it runs after our reads can see only live data.
    #[inline]
    fn begin_first(&mut self) {
        let s = ENGINE.now();
        self.slot.tx_start.store(s, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        self.st.begin_at(s);
    }

    /// A later attempt: the slot already protects an older start, so moving
    /// it forward needs no fence.
    #[inline]
    fn begin_again(&mut self) {
        let s = ENGINE.now();
        self.slot.tx_start.store(s, Ordering::Release);
        self.st.begin_at(s);
    }

    /// Rolls the attempt back: nothing was published, objects it allocated
    /// are dropped, its frees are forgotten.
    #[cold]
    fn rollback(&mut self, reason: AbortReason) {
        self.st.rollback();
        self.pending = None;
        self.slot.stats.abort(reason);
        self.frees.clear();
        for o in self.allocs.drain(..) {
            // SAFETY: objects allocated by an attempt that did not commit
            // were never published (writes are buffered until commit).
            unsafe { o.destroy() };
        }
    }

    #[cold]
    fn conflict(&mut self, reason: AbortReason, cfg: &Config, attempt: &mut u32) {
        self.rollback(reason);
        *attempt = attempt.saturating_add(1);
        match cfg.contention {
            ContentionManager::Suicide => {
                // Restart at once; but a run of aborts usually means the
                // thread we conflict with is descheduled (more runnable
                // threads than cores), and only yielding lets it finish.
                if *attempt % SUICIDE_YIELD_EVERY == 0 {
                    std::thread::yield_now();
                }
            }
            ContentionManager::Backoff { min_spins, max_spins } => {
                let window = (u64::from(min_spins.max(1)) << (*attempt).min(24)).min(u64::from(max_spins.max(1)));
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                for _ in 0..self.rng % window {
                    core::hint::spin_loop();
                }
                if *attempt > 16 {
                    std::thread::yield_now();
                }
            }
        }
        self.begin_again();
    }

    /// `retry`: remember what was read, roll back, wait until one of those
    /// stripes moves past the snapshot (or a poll interval passes), run again.
    #[cold]
    fn wait_for_change(&mut self) {
        let rv = self.st.rv();
        self.retry_locks.clear();
        self.retry_locks.extend_from_slice(self.st.read_locks());
        self.retry_locks.sort_unstable();
        self.retry_locks.dedup();
        self.rollback(AbortReason::Retry);
        self.slot.tx_start.store(INACTIVE, Ordering::Release);
        let changed = |locks: &[u32]| {
            locks.iter().any(|&i| {
                let w = ENGINE.lock(i as usize).load(Ordering::Acquire);
                is_locked(w) || version(w) > rv
            })
        };
        WAKE.waiters.fetch_add(1, Ordering::SeqCst);
        let mut polls = 0u32;
        while !changed(&self.retry_locks) {
            let mut g = WAKE.lock.lock();
            if changed(&self.retry_locks) {
                break;
            }
            WAKE.cv.wait_for(&mut g, RETRY_POLL);
            polls += 1;
            if self.retry_locks.is_empty() && polls > 0 {
                // Nothing read can change: run again after one poll.
                break;
            }
        }
        WAKE.waiters.fetch_sub(1, Ordering::SeqCst);
        self.begin_first();
    }

    #[inline]
    fn committed(&mut self, c: Committed) {
        let reads = self.st.read_set_len();
        let writes = self.st.write_set_len();
        self.slot.stats.commit(c == Committed::ReadOnly, reads, writes);
        self.allocs.clear();
        if let Committed::Wrote(_) = c {
            if WAKE.waiters.load(Ordering::Relaxed) != 0 {
                let _g = WAKE.lock.lock();
                WAKE.cv.notify_all();
            }
        }
        if !self.frees.is_empty() {
            self.retire_frees();
        }
        self.st.rollback();
    }

    #[cold]
    fn retire_frees(&mut self) {
        let at = ENGINE.now();
        for obj in self.frees.drain(..) {
            self.garbage.push_back(Retired { obj, at });
        }
    }

    /// Ends the transaction: the slot no longer protects anything, and
    /// garbage is reclaimed when enough has piled up.
    #[inline]
    fn finish(&mut self) {
        self.slot.tx_start.store(INACTIVE, Ordering::Release);
        if self.garbage.len() >= self.next_collect {
            self.collect();
        }
    }

    /// Drops every retired object that no running transaction can reach.
    #[cold]
    fn collect(&mut self) {
        fence(Ordering::SeqCst);
        let reg = registry();
        let min = reg.min_active();
        let mut ready = Vec::new();
        while self.garbage.front().is_some_and(|r| r.at < min) {
            ready.extend(self.garbage.pop_front());
        }
        if let Some(mut orphans) = reg.orphans.try_lock() {
            let mut i = 0;
            while i < orphans.len() {
                if orphans[i].at < min {
                    ready.push(orphans.swap_remove(i));
                } else {
                    i += 1;
                }
            }
        }
        self.next_collect = (self.garbage.len() * 2).max(COLLECT_MIN);
        for r in ready {
            // SAFETY: the object was unlinked by a committed transaction and
            // retired at clock `at` after its write-back; every transaction
            // or pin running now started after `at` (min_active > at, read
            // after a SeqCst fence that follows the retirement), so none of
            // them can reach it, and later ones cannot either.
            unsafe { r.obj.destroy() };
        }
    }

    /// Runs `f` as a transaction until it commits or returns a user error.
    fn run<R, E, F>(&mut self, cfg: &Config, f: &mut F) -> Result<R, E>
    where
        F: FnMut(&mut Tx) -> Result<R, E>,
    {
        self.begin_first();
        let g = AttemptGuard { tx: self };
        let mut attempt = 0u32;
        loop {
            let res = f(g.tx);
            let tx = &mut *g.tx;
            if let Some(sig) = tx.pending.take() {
                match sig {
                    TxError::Conflict(reason) => tx.conflict(reason, cfg, &mut attempt),
                    TxError::Retry => tx.wait_for_change(),
                    TxError::Stop(reason) => {
                        panic!(
                            "skelaff-stm: TxError::Stop({reason}) is a shadow transaction's signal; a real transaction cannot stop"
                        )
                    }
                }
                continue;
            }
            match res {
                Ok(r) => match tx.st.commit(&ENGINE) {
                    Ok(c) => {
                        tx.committed(c);
                        let tx = g.disarm();
                        tx.finish();
                        return Ok(r);
                    }
                    Err(reason) => tx.conflict(reason, cfg, &mut attempt),
                },
                Err(e) => {
                    tx.rollback(AbortReason::Explicit);
                    let tx = g.disarm();
                    tx.finish();
                    return Err(e);
                }
            }
        }
    }

    #[cold]
    fn sample(&mut self, addr: usize, kind: AccessKind) {
        self.sampler.record(addr, kind);
    }
}

/// Rolls the attempt back if the closure unwinds.
struct AttemptGuard<'a> {
    tx: &'a mut Tx,
}

impl<'a> AttemptGuard<'a> {
    fn disarm(self) -> &'a mut Tx {
        let me = core::mem::ManuallyDrop::new(self);
        // SAFETY: `me` is never dropped, so moving the reference out leaves
        // no second user of it.
        unsafe { core::ptr::read(&me.tx) }
    }
}

impl Drop for AttemptGuard<'_> {
    fn drop(&mut self) {
        // Only reached by unwinding out of the closure (or of a drop it
        // caused): no lock is held outside `commit`, so rolling back is all.
        self.tx.rollback(AbortReason::Panic);
        self.tx.finish();
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        if !self.garbage.is_empty() {
            registry().orphans.lock().extend(self.garbage.drain(..));
        }
    }
}

impl TxOps for Tx {
    #[inline(always)]
    fn read<T: Word>(&mut self, var: &TVar<T>) -> Result<T, TxError> {
        if self.sampler.enabled {
            self.sample(var.addr(), AccessKind::Read);
        }
        match self.st.read(&ENGINE, var.cell()) {
            Ok(w) => Ok(T::from_word(w)),
            Err(reason) => Err(self.signal(TxError::Conflict(reason))),
        }
    }

    #[inline(always)]
    fn write<T: Word>(&mut self, var: &TVar<T>, value: T) -> Result<(), TxError> {
        if self.sampler.enabled {
            self.sample(var.addr(), AccessKind::Write);
        }
        self.st.write(&ENGINE, var.cell(), value.to_word());
        Ok(())
    }

    #[inline]
    fn alloc<T: Send + Sync + 'static>(&mut self, value: T) -> Result<TPtr<T>, TxError> {
        let p = TPtr::from_box(Box::new(value));
        self.allocs.push(Owned::new(p));
        Ok(p)
    }

    #[inline]
    unsafe fn free<T: Send + Sync + 'static>(&mut self, ptr: TPtr<T>) -> Result<(), TxError> {
        self.frees.push(Owned::new(ptr));
        Ok(())
    }

    fn retry(&mut self) -> TxError {
        self.signal(TxError::Retry)
    }
}

/// The per-thread state behind `atomically`.
struct Local {
    /// A transaction (or a sampler call) is using `tx`.
    busy: Cell<bool>,
    /// Outstanding epoch pins.
    pins: Cell<u32>,
    /// This thread's registry slot number, once registered.
    slot: Cell<Option<usize>>,
    tx: UnsafeCell<Option<Tx>>,
}

impl Local {
    /// This thread's slot number, registering the thread on first use.
    fn slot_no(&self) -> usize {
        match self.slot.get() {
            Some(i) => i,
            None => {
                let i = registry().register();
                self.slot.set(Some(i));
                i
            }
        }
    }

    /// This thread's registry slot.
    fn slot(&self) -> &'static Slot {
        &registry().slots[self.slot_no()]
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        // The descriptor first (its garbage goes to the orphans), then the slot.
        drop(self.tx.get_mut().take());
        if let Some(i) = self.slot.get() {
            registry().unregister(i);
        }
    }
}

thread_local! {
    static LOCAL: Local = const {
        Local { busy: Cell::new(false), pins: Cell::new(0), slot: Cell::new(None), tx: UnsafeCell::new(None) }
    };
}

/// Clears `busy` when the transaction ends, also by unwinding.
struct BusyReset<'a>(&'a Cell<bool>);

impl Drop for BusyReset<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

#[cold]
#[inline(never)]
fn nested() -> ! {
    panic!(
        "skelaff-stm: atomically called inside a transaction; transactions do not nest: \
         pass the `tx` handle to the inner code instead (flat composition through TxOps)"
    )
}

/// Runs `f` with exclusive access to this thread's descriptor.
#[inline(always)]
fn with_tx<R>(f: impl FnOnce(&mut Tx) -> R) -> R {
    LOCAL.with(|l| {
        if l.busy.replace(true) {
            nested();
        }
        let _reset = BusyReset(&l.busy);
        // SAFETY: `busy` was false and is true until `_reset` drops, so no
        // other reference to `tx` exists on this thread (and `Local` is
        // thread-local, so none on any other thread).
        let cell = unsafe { &mut *l.tx.get() };
        let tx = match cell {
            Some(tx) => tx,
            None => cell.insert(Tx::new(l.slot_no())),
        };
        f(tx)
    })
}

/// Runs `f` as a transaction with the default [`Config`] and returns its value.
///
/// `f` may run several times (after conflicts); only the run that commits
/// has effects. Inside, use the [`TxOps`] methods on `tx` and propagate
/// their errors with `?`. Returning `Err(tx.retry())` waits until something
/// the transaction read changes and runs it again.
///
/// # Panics
///
/// - If `f` panics: the attempt is rolled back (no lock held, no write
///   visible, its allocations dropped) and the panic propagates.
/// - If called inside another transaction on the same thread (transactions
///   do not nest; pass `tx` down instead).
/// - If `f` returns [`TxError::Stop`] (a shadow's signal).
/// - If more than [`MAX_THREADS`] threads use transactions at once.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, TVar, TxOps};
///
/// let counter = TVar::new(0u64);
/// std::thread::scope(|s| {
///     for _ in 0..2 {
///         s.spawn(|| {
///             for _ in 0..1000 {
///                 atomically(|tx| tx.update(&counter, |c| c + 1));
///             }
///         });
///     }
/// });
/// assert_eq!(counter.load(), 2000);
/// ```
#[inline]
pub fn atomically<R, F>(f: F) -> R
where
    F: FnMut(&mut Tx) -> Result<R, TxError>,
{
    atomically_with(&Config::DEFAULT, f)
}

/// [`atomically`] with an explicit configuration (contention manager).
///
/// A `TxError` that `f` returns without the transaction having raised it
/// (one made by hand) is treated as what it says: a conflict runs `f`
/// again, a retry yields and runs it again.
///
/// # Panics
///
/// As [`atomically`].
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically_with, Config, ContentionManager, TVar, TxOps};
///
/// let cfg = Config::new().contention(ContentionManager::BACKOFF);
/// let v = TVar::new(1i32);
/// assert_eq!(atomically_with(&cfg, |tx| tx.update(&v, |x| -x)), -1);
/// ```
#[inline]
pub fn atomically_with<R, F>(cfg: &Config, mut f: F) -> R
where
    F: FnMut(&mut Tx) -> Result<R, TxError>,
{
    loop {
        match try_atomically_with(cfg, &mut f) {
            Ok(r) => return r,
            Err(TxError::Stop(reason)) => {
                panic!("skelaff-stm: TxError::Stop({reason}) returned from a real transaction")
            }
            Err(TxError::Retry) => std::thread::yield_now(),
            Err(_) => {}
        }
    }
}

/// Runs `f` as a transaction that may end with a user error.
///
/// When `f` returns `Err(e)` and the error is not a signal the transaction
/// raised (conflict, retry), the attempt is rolled back — nothing it wrote
/// becomes visible — and `Err(e)` is returned. Make your error type
/// `From<TxError>` so `?` works on the [`TxOps`] methods.
///
/// # Errors
///
/// The user error `f` returned.
///
/// # Panics
///
/// As [`atomically`].
///
/// # Examples
///
/// ```
/// use skelaff_stm::{try_atomically, TVar, TxError, TxOps};
///
/// #[derive(Debug, PartialEq)]
/// enum BankError { Insufficient, Tx(TxError) }
/// impl From<TxError> for BankError {
///     fn from(e: TxError) -> Self { BankError::Tx(e) }
/// }
///
/// let acct = TVar::new(10u64);
/// let r = try_atomically(|tx| {
///     tx.write(&acct, 0)?;              // rolled back below
///     if tx.read(&acct)? < 50 {
///         return Err(BankError::Insufficient);
///     }
///     Ok(())
/// });
/// assert_eq!(r, Err(BankError::Insufficient));
/// assert_eq!(acct.load(), 10);
/// ```
#[inline]
pub fn try_atomically<R, E, F>(f: F) -> Result<R, E>
where
    F: FnMut(&mut Tx) -> Result<R, E>,
{
    try_atomically_with(&Config::DEFAULT, f)
}

/// [`try_atomically`] with an explicit configuration.
///
/// # Errors
///
/// The user error `f` returned.
///
/// # Panics
///
/// As [`atomically`].
#[inline]
pub fn try_atomically_with<R, E, F>(cfg: &Config, mut f: F) -> Result<R, E>
where
    F: FnMut(&mut Tx) -> Result<R, E>,
{
    with_tx(|tx| tx.run(cfg, &mut f))
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
    (0..LOCK_TABLE_SIZE).filter(|&i| is_locked(ENGINE.lock(i).load(Ordering::Relaxed))).count()
}

/// The address of the versioned lock that covers `var` in the global lock
/// table: every transactional read of `var` loads that word too.
///
/// For speculative readers that want the STM's metadata in cache along
/// with the data (a helper thread's shadow prefetches it). It is an
/// address to prefetch, not a way into the protocol: nothing here gives
/// access to the lock.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{lock_addr, TVar};
///
/// let (a, b) = (TVar::new(1u64), TVar::new(2u64));
/// assert_ne!(lock_addr(&a), 0);
/// // Lock words are 8 bytes apart; a variable's stripe is fixed.
/// assert_eq!(lock_addr(&a) % 8, 0);
/// assert_eq!(lock_addr(&b), lock_addr(&b));
/// ```
#[inline(always)]
pub fn lock_addr<T>(var: &TVar<T>) -> usize {
    ENGINE.lock_for(var.addr()).1 as *const _ as usize
}

/// The global clock: the number of write commits (and non-transactional
/// stores) so far.
pub fn clock() -> u64 {
    ENGINE.now()
}

/// Whether the calling thread is inside a transaction.
pub fn in_transaction() -> bool {
    LOCAL.with(|l| l.busy.get())
}

/// An epoch pin: while it lives, no object that this thread could reach
/// when it was taken is reclaimed, even if a transaction frees it.
///
/// For readers outside transactions that follow [`TPtr`]s with plain loads
/// (a speculative shadow). Not `Send`: it protects its own thread.
#[derive(Debug)]
pub struct Pin {
    _not_send: core::marker::PhantomData<*const ()>,
}

/// Takes an epoch pin for the calling thread (pins nest).
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, pin, TPtr, TVar, TxOps};
///
/// let head: TVar<Option<TPtr<u64>>> = TVar::new(None);
/// atomically(|tx| { let p = tx.alloc(7u64)?; tx.write(&head, Some(p)) });
/// let guard = pin();
/// if let Some(p) = head.load() {
///     // SAFETY: `p` was read after the pin was taken, and the reference
///     // does not outlive the pin.
///     assert_eq!(unsafe { *p.get() }, 7);
/// }
/// drop(guard);
/// # let p = head.load().unwrap();
/// # // SAFETY: the object was never freed and nobody else uses it.
/// # drop(unsafe { p.into_box() });
/// ```
pub fn pin() -> Pin {
    LOCAL.with(|l| {
        let n = l.pins.get();
        if n == 0 {
            l.slot().pin_start.store(ENGINE.now(), Ordering::Relaxed);
            fence(Ordering::SeqCst);
        }
        l.pins.set(n + 1);
    });
    Pin { _not_send: core::marker::PhantomData }
}

impl Drop for Pin {
    fn drop(&mut self) {
        LOCAL.with(|l| {
            let n = l.pins.get() - 1;
            l.pins.set(n);
            if n == 0 {
                l.slot().pin_start.store(INACTIVE, Ordering::Release);
            }
        });
    }
}

impl Stats {
    /// The calling thread's counters.
    pub fn thread() -> Stats {
        LOCAL.with(|l| l.slot().stats.snapshot())
    }

    /// The calling thread's counters, and resets them to zero.
    pub fn take_thread() -> Stats {
        LOCAL.with(|l| {
            let s = l.slot();
            let snap = s.stats.snapshot();
            s.stats.reset();
            snap
        })
    }

    /// The sum over every thread of the process, running or exited (counters
    /// that threads reset with [`Stats::take_thread`] are not included).
    pub fn global() -> Stats {
        let reg = registry();
        let mut sum = reg.retired_stats.lock().clone();
        let n = reg.hwm.load(Ordering::Acquire).min(MAX_THREADS);
        for s in &reg.slots[..n] {
            sum.merge(&s.stats.snapshot());
        }
        sum
    }
}

fn sampler_call<R>(f: impl FnOnce(&mut Sampler) -> R) -> Result<R, SamplerError> {
    LOCAL.with(|l| {
        if l.busy.get() {
            return Err(SamplerError::InTransaction);
        }
        Ok(with_tx(|tx| f(&mut tx.sampler)))
    })
}

/// Starts sampling this thread's transactional accesses: every `period`-th
/// access is recorded, up to `capacity` records.
///
/// # Errors
///
/// [`SamplerError::Zero`] for a zero period or capacity;
/// [`SamplerError::InTransaction`] inside a transaction.
pub fn sampler_enable(period: u32, capacity: usize) -> Result<(), SamplerError> {
    if period == 0 {
        return Err(SamplerError::Zero { what: "period" });
    }
    if capacity == 0 {
        return Err(SamplerError::Zero { what: "capacity" });
    }
    sampler_call(|s| s.configure(period, capacity))
}

/// Stops sampling on this thread (records already taken stay until [`sampler_take`]).
///
/// # Errors
///
/// [`SamplerError::InTransaction`] inside a transaction.
pub fn sampler_disable() -> Result<(), SamplerError> {
    sampler_call(Sampler::disable)
}

/// Takes this thread's records and counters.
///
/// # Errors
///
/// [`SamplerError::InTransaction`] inside a transaction.
pub fn sampler_take() -> Result<Samples, SamplerError> {
    sampler_call(Sampler::take)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_objects_are_reclaimed_after_commit_only() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicUsize;
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
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
        for _ in 0..(2 * COLLECT_MIN) {
            atomically(|tx| {
                let p = tx.alloc(0u64)?;
                // SAFETY: never published, freed once.
                unsafe { tx.free(p) }
            });
        }
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }
}
