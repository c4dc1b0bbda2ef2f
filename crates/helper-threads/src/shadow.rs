//! `ShadowTx`: user code run speculatively, publishing nothing.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use skelaff_stm::{EpochGuard, ErasedBox, TPtr, TVar, TxError, TxOps, Word};

use crate::error::ConfigError;
use crate::log::{MAX_LOG_CAPACITY, WriteLog};
use crate::stop::StopReason;

/// The largest lifespan accepted (2^40 words read).
pub const MAX_LIFESPAN: u64 = 1 << 40;

/// Calls accepted after a shadow stopped before it panics (user code that
/// ignores the stop and keeps calling would otherwise never end; the panic
/// unwinds to the helper, which catches it).
const CALLS_AFTER_STOP: u32 = 64;

/// How a shadow touches the words it reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Prefetch {
    /// Reads are plain atomic loads (they bring the line in); written words
    /// are not touched.
    #[default]
    Load,
    /// Also an explicit prefetch instruction (x86-64 `prefetcht0`; nothing
    /// on other targets) for every word read, before its load, and for
    /// every word written (whose line the load-only shadow never touches).
    Hint,
    /// As `Hint`, and also a prefetch of the STM lock word of every word
    /// read or written: the worker's transactional read loads that word
    /// too, and the load-only shadow never touches it.
    HintLocks,
}

skelaff_numa_alloc::enum_names! {
    Prefetch {
        Load => "load",
        Hint => "hint",
        HintLocks => "hint-locks",
    }
    parse: ConfigError = unknown_prefetch;
}

fn unknown_prefetch(given: &str) -> ConfigError {
    ConfigError::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "prefetch mode",
        given: given.to_owned(),
        allowed: Prefetch::VARIANTS,
    })
}

#[inline(always)]
fn prefetch_line(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: `prefetcht0` needs SSE, which every x86-64 CPU has; it is a
        // hint that never faults, whatever the address.
        #[allow(unused_unsafe)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(addr as *const i8)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// Why a shadow ended, with its figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShadowEnd {
    /// `None`: the user code returned by itself (finished the unit, or
    /// returned an error of its own).
    pub stop: Option<StopReason>,
    /// Words loaded from shared memory (the prefetches).
    pub loads: u64,
    /// Reads answered by the write log.
    pub log_hits: u64,
    /// Distinct words in the write log at the end.
    pub logged: usize,
    /// Objects allocated privately.
    pub allocs: usize,
}

/// A speculative transaction that publishes nothing: the helper thread's
/// way of running a worker's `process` ahead of it (paper §4.2).
///
/// - `read` looks in a private bounded write log (open addressing, see
///   [`WriteLog`]) and otherwise loads the shared word (one atomic load;
///   nothing locked, nothing validated, so values may come from different
///   commits);
/// - `write` goes only into the log; a full log stops the shadow
///   ([`StopReason::WriteLogFull`]);
/// - `alloc` makes a private object, freed when the shadow ends; `free`
///   does nothing; `retry` stops the shadow ([`StopReason::Unsupported`]);
/// - every operation is charged to the *lifespan*, the number of words the
///   shadow may read (writes and allocations count too, so no loop of
///   transactional calls escapes it): past it the shadow stops
///   ([`StopReason::LifespanExhausted`]);
/// - with a cancel word ([`ShadowTx::begin`]), every operation checks it
///   and stops the shadow ([`StopReason::Cancelled`]) once it moves.
///
/// Between [`begin`](ShadowTx::begin) and [`end`](ShadowTx::end) the
/// thread holds an epoch guard of the STM, so every object the shadow reaches
/// through pointers read from shared memory stays alive even if a
/// transaction frees it meanwhile: the same guarantee a real transaction
/// gives its reads, which is what `unsafe { ptr.get() }` in user code
/// relies on. Nothing the shadow does is visible to any other thread.
///
/// After a stop, every further operation returns the same error; user code
/// that ignores it and keeps calling gets a panic after 64 more calls (the
/// helper catches it).
///
/// # Examples
///
/// ```
/// use skelaff_helper_threads::{ShadowConfig, ShadowTx, StopReason};
/// use skelaff_stm::{TVar, TxError, TxOps};
///
/// let (a, b) = (TVar::new(1u64), TVar::new(2u64));
/// let mut sh = ShadowTx::new(&ShadowConfig { lifespan: 3, log_capacity: 4, ..Default::default() })?;
/// sh.begin(None);
/// sh.write(&a, 10).unwrap();
/// assert_eq!(sh.read(&a), Ok(10)); // its own write
/// assert_eq!(sh.read(&b), Ok(2)); // shared memory
/// assert_eq!(sh.read(&b), Err(StopReason::LifespanExhausted.into()));
/// assert_eq!(sh.stop_reason(), Some(StopReason::LifespanExhausted));
/// let end = sh.end();
/// assert_eq!((end.stop, end.loads, end.log_hits), (Some(StopReason::LifespanExhausted), 1, 1));
/// assert_eq!(a.load(), 1); // nothing was published
/// # Ok::<(), skelaff_helper_threads::ConfigError>(())
/// ```
pub struct ShadowTx<'c> {
    log: WriteLog,
    /// Objects the shadow allocated: never published, freed when it ends.
    objects: Vec<ErasedBox>,
    lifespan: u64,
    budget: u64,
    cancel: Option<(&'c AtomicU64, u64)>,
    stop: Option<StopReason>,
    after_stop: u32,
    loads: u64,
    log_hits: u64,
    prefetch: Prefetch,
    trace: Vec<usize>,
    trace_cap: usize,
    guard: Option<EpochGuard>,
}

impl fmt::Debug for ShadowTx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShadowTx")
            .field("lifespan", &self.lifespan)
            .field("budget", &self.budget)
            .field("log", &self.log)
            .field("stop", &self.stop)
            .finish()
    }
}

/// The sizes of a [`ShadowTx`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShadowConfig {
    /// Words a shadow may read before it stops (writes and allocations
    /// count as well).
    pub lifespan: u64,
    /// Distinct words the write log holds; also the most private objects
    /// a shadow may allocate.
    pub log_capacity: usize,
    /// Load only, or also an explicit prefetch instruction.
    pub prefetch: Prefetch,
}

impl ShadowConfig {
    /// The default lifespan: 4096 words read. Measured over the STAMP
    /// applications and the pointer-chase benchmark (see the crate README).
    pub const DEFAULT_LIFESPAN: u64 = 4096;
    /// The default write-log capacity: 1024 distinct words.
    pub const DEFAULT_LOG_CAPACITY: usize = 1024;
}

impl Default for ShadowConfig {
    fn default() -> Self {
        ShadowConfig {
            lifespan: Self::DEFAULT_LIFESPAN,
            log_capacity: Self::DEFAULT_LOG_CAPACITY,
            prefetch: Prefetch::Load,
        }
    }
}

impl<'c> ShadowTx<'c> {
    /// A shadow with these sizes (the log is allocated here, once).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] for a lifespan or log capacity out of range.
    pub fn new(cfg: &ShadowConfig) -> Result<Self, ConfigError> {
        if cfg.lifespan == 0 || cfg.lifespan > MAX_LIFESPAN {
            return Err(ConfigError::Lifespan { got: cfg.lifespan, max: MAX_LIFESPAN });
        }
        Ok(ShadowTx {
            log: WriteLog::with_capacity(cfg.log_capacity)?,
            objects: Vec::with_capacity(cfg.log_capacity),
            lifespan: cfg.lifespan,
            budget: 0,
            cancel: None,
            stop: Some(StopReason::Cancelled),
            after_stop: 0,
            loads: 0,
            log_hits: 0,
            prefetch: cfg.prefetch,
            trace: Vec::new(),
            trace_cap: 0,
            guard: None,
        })
    }

    /// The lifespan.
    pub fn lifespan(&self) -> u64 {
        self.lifespan
    }

    /// Sets the lifespan for the next shadows.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Lifespan`] unless `1 <= lifespan <= MAX_LIFESPAN`.
    pub fn set_lifespan(&mut self, lifespan: u64) -> Result<(), ConfigError> {
        if lifespan == 0 || lifespan > MAX_LIFESPAN {
            return Err(ConfigError::Lifespan { got: lifespan, max: MAX_LIFESPAN });
        }
        self.lifespan = lifespan;
        Ok(())
    }

    /// The write-log capacity.
    pub fn log_capacity(&self) -> usize {
        self.log.capacity()
    }

    /// Replaces the write log with one of `capacity` entries (allocates;
    /// call it between shadows, not in one).
    ///
    /// # Errors
    ///
    /// [`ConfigError::LogCapacity`] out of `1..=MAX_LOG_CAPACITY`.
    pub fn set_log_capacity(&mut self, capacity: usize) -> Result<(), ConfigError> {
        if capacity != self.log.capacity() {
            self.log = WriteLog::with_capacity(capacity.min(MAX_LOG_CAPACITY + 1))?;
            self.objects = Vec::with_capacity(capacity);
        }
        Ok(())
    }

    /// Records the address of every word loaded from shared memory (up to
    /// `cap` per shadow) for the next shadows; 0 stops recording. Allocates
    /// here, not while recording.
    pub fn record_loads(&mut self, cap: usize) {
        self.trace_cap = cap;
        self.trace.clear();
        self.trace.reserve(cap);
    }

    /// The addresses loaded by the last shadow, in order (see [`record_loads`](Self::record_loads)).
    pub fn loaded(&self) -> &[usize] {
        &self.trace
    }

    /// Starts a shadow: takes an epoch guard, fills the budget, and, with
    /// `cancel = Some((word, seen))`, stops at the first operation that
    /// finds `word` different from `seen`.
    pub fn begin(&mut self, cancel: Option<(&'c AtomicU64, u64)>) {
        self.end_inner();
        self.guard = Some(skelaff_stm::epoch_guard());
        self.budget = self.lifespan;
        self.cancel = cancel;
        self.stop = None;
        self.after_stop = 0;
        self.loads = 0;
        self.log_hits = 0;
        self.trace.clear();
    }

    /// Ends the shadow: frees its private objects, forgets its writes,
    /// drops the guard, and says how it went. A shadow that ran to its end
    /// by itself has `stop: None`.
    pub fn end(&mut self) -> ShadowEnd {
        let end = ShadowEnd {
            stop: self.stop,
            loads: self.loads,
            log_hits: self.log_hits,
            logged: self.log.len(),
            allocs: self.objects.len(),
        };
        self.end_inner();
        self.stop = Some(StopReason::Cancelled);
        end
    }

    fn end_inner(&mut self) {
        for o in self.objects.drain(..) {
            // SAFETY: `ErasedBox::destroy`'s list: `alloc` made the object
            // with `TPtr::from_box` and recorded it here only, so it is
            // dropped once, here; it was never published (writes stay in
            // this shadow's log, which no other thread reads), and the
            // shadow's user code has returned (end and begin take `&mut self`).
            unsafe { o.destroy() };
        }
        self.log.clear();
        self.guard = None;
    }

    /// Why the running shadow stopped, if it did (user code that wants to
    /// know, in a shadow, whether to go on; `None` while it runs, and
    /// `Some(Cancelled)` between shadows).
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.stop
    }

    #[cold]
    #[inline(never)]
    fn stopped(&mut self, reason: StopReason) -> TxError {
        match self.stop {
            Some(first) => {
                self.after_stop += 1;
                if self.after_stop > CALLS_AFTER_STOP {
                    panic!(
                        "shadow transaction: user code called {CALLS_AFTER_STOP} more operations after the shadow stopped ({first})"
                    );
                }
                first.into()
            }
            None => {
                self.stop = Some(reason);
                reason.into()
            }
        }
    }

    /// The explicit prefetches of `Prefetch::Hint` and `HintLocks`.
    #[inline(always)]
    fn hint<T>(&self, var: &TVar<T>) {
        match self.prefetch {
            Prefetch::Load => {}
            Prefetch::Hint => prefetch_line(var.addr()),
            Prefetch::HintLocks => {
                prefetch_line(skelaff_stm::lock_addr(var));
                prefetch_line(var.addr());
            }
        }
    }

    /// Charges one operation: stopped, budget, cancel word.
    #[inline(always)]
    fn charge(&mut self) -> Result<(), TxError> {
        if self.stop.is_some() {
            return Err(self.stopped(StopReason::Cancelled));
        }
        if self.budget == 0 {
            return Err(self.stopped(StopReason::LifespanExhausted));
        }
        self.budget -= 1;
        if let Some((word, seen)) = self.cancel {
            if word.load(Ordering::Relaxed) != seen {
                return Err(self.stopped(StopReason::Cancelled));
            }
        }
        Ok(())
    }
}

impl Drop for ShadowTx<'_> {
    fn drop(&mut self) {
        self.end_inner();
    }
}

// Any `'tcell`: a shadow's writes go to its log and are never stored
// through the variable's address, so a variable that dies early costs at
// most a stale log entry (a wrong value in a speculative run, which is
// allowed), never a store to freed memory.
// SAFETY: the trait's four conditions: (1) `read` returns the shadow's own
// log entry for the word (what it wrote) or one atomic load of the word;
// (2) the shadow takes an epoch guard in `begin` and drops it only in
// `end_inner`, after its last operation, so no object reachable since the
// shadow began is deallocated meanwhile, and its private objects are freed
// only when it ends; (3) `alloc` boxes the value with `TPtr::from_box`;
// (4) `free` deallocates nothing.
unsafe impl<'tcell> TxOps<'tcell> for ShadowTx<'_> {
    #[inline]
    fn read<T: Word>(&mut self, var: &TVar<T>) -> Result<T, TxError> {
        self.charge()?;
        let addr = var.addr();
        if !self.log.is_empty() {
            if let Some(w) = self.log.get(addr) {
                self.log_hits += 1;
                return Ok(T::from_word(w));
            }
        }
        self.hint(var);
        let w = var.load_word();
        self.loads += 1;
        if self.trace.len() < self.trace_cap {
            self.trace.push(addr);
        }
        Ok(T::from_word(w))
    }

    #[inline]
    fn write<T: Word>(&mut self, var: &'tcell TVar<T>, value: T) -> Result<(), TxError> {
        self.charge()?;
        self.hint(var);
        match self.log.insert(var.addr(), value.to_word()) {
            Ok(()) => Ok(()),
            Err(_) => Err(self.stopped(StopReason::WriteLogFull)),
        }
    }

    fn alloc<T: Send + Sync + 'static>(&mut self, value: T) -> Result<TPtr<T>, TxError> {
        self.charge()?;
        if self.objects.len() == self.objects.capacity() {
            return Err(self.stopped(StopReason::WriteLogFull));
        }
        let p = TPtr::from_box(Box::new(value));
        self.objects.push(ErasedBox::new(p));
        Ok(p)
    }

    unsafe fn free<T: Send + Sync + 'static>(&mut self, _: TPtr<T>) -> Result<(), TxError> {
        // Nothing is freed by a shadow: shared objects belong to the real
        // transactions, private ones are freed when the shadow ends.
        self.charge()
    }

    fn retry(&mut self) -> TxError {
        self.stopped(StopReason::Unsupported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skelaff_stm::{TMap, atomically};

    fn cfg(lifespan: u64, log_capacity: usize) -> ShadowConfig {
        ShadowConfig { lifespan, log_capacity, prefetch: Prefetch::Load }
    }

    #[test]
    fn writes_stay_private_and_the_log_bound_stops_it() {
        let vars: Vec<TVar<u64>> = (0..10).map(TVar::new).collect();
        for prefetch in [Prefetch::Load, Prefetch::Hint, Prefetch::HintLocks] {
            let mut sh = ShadowTx::new(&ShadowConfig { prefetch, ..cfg(100, 4) }).unwrap();
            sh.begin(None);
            for v in &vars[..4] {
                sh.update(v, |x| x + 100).unwrap();
            }
            assert_eq!(sh.write(&vars[4], 1), Err(TxError::from(StopReason::WriteLogFull)));
            // Everything after a stop returns the stop.
            assert_eq!(sh.read(&vars[0]), Err(TxError::from(StopReason::WriteLogFull)));
            let end = sh.end();
            assert_eq!(end.stop, Some(StopReason::WriteLogFull));
            assert_eq!((end.logged, end.loads), (4, 4));
            assert!(vars.iter().enumerate().all(|(i, v)| v.load() == i as u64));
            // The next shadow starts clean.
            sh.begin(None);
            assert_eq!(sh.read(&vars[0]), Ok(0));
            assert_eq!(sh.end().stop, None);
        }
    }

    #[test]
    fn cancel_word_stops_it() {
        let word = AtomicU64::new(5);
        let v = TVar::new(1u8);
        let mut sh = ShadowTx::new(&cfg(100, 4)).unwrap();
        sh.begin(Some((&word, 5)));
        assert_eq!(sh.read(&v), Ok(1));
        word.store(6, Ordering::Relaxed);
        assert_eq!(sh.read(&v), Err(TxError::from(StopReason::Cancelled)));
        assert_eq!(sh.end().stop, Some(StopReason::Cancelled));
    }

    #[test]
    fn ignoring_the_stop_ends_in_a_panic() {
        let v = TVar::new(0u32);
        let mut sh = ShadowTx::new(&cfg(1, 4)).unwrap();
        sh.begin(None);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // Swallows every error: without the panic this never ends.
            loop {
                std::hint::black_box(sh.read(&v).unwrap_or(1));
            }
        }));
        assert!(r.is_err());
        assert_eq!(sh.end().stop, Some(StopReason::LifespanExhausted));
    }

    #[test]
    fn collections_run_in_a_shadow_and_private_objects_are_freed() {
        let m: TMap<u64, u64> = TMap::new();
        atomically(|tx| {
            for k in 0..50 {
                m.insert(tx, k, k)?;
            }
            Ok(())
        });
        let marker = std::sync::Arc::new(());
        let mut sh = ShadowTx::new(&cfg(10_000, 256)).unwrap();
        sh.begin(None);
        for k in 100..120 {
            m.insert(&mut sh, k, k * 2).unwrap();
        }
        assert_eq!(m.get(&mut sh, &110), Ok(Some(220)));
        assert_eq!(m.get(&mut sh, &7), Ok(Some(7)));
        let held = sh.alloc(marker.clone()).unwrap();
        let _ = held;
        assert_eq!(std::sync::Arc::strong_count(&marker), 2);
        let end = sh.end();
        assert!(end.allocs >= 21, "{end:?}");
        assert_eq!(std::sync::Arc::strong_count(&marker), 1, "private objects are dropped at the end");
        assert_eq!(atomically(|tx| m.get(tx, &110)), None);
        assert_eq!(atomically(|tx| m.len(tx)), 50);
    }

    #[test]
    fn retry_is_unsupported_and_config_is_checked() {
        let mut sh = ShadowTx::new(&cfg(10, 2)).unwrap();
        sh.begin(None);
        assert_eq!(sh.retry(), TxError::from(StopReason::Unsupported));
        assert!(ShadowTx::new(&cfg(0, 2)).is_err());
        assert!(ShadowTx::new(&cfg(1, 0)).is_err());
        assert!(sh.set_lifespan(0).is_err());
        assert!(sh.set_log_capacity(0).is_err());
        sh.set_log_capacity(8).unwrap();
        assert_eq!(sh.log_capacity(), 8);
        assert!("sideways".parse::<Prefetch>().is_err());
    }

    #[test]
    fn records_loads_up_to_its_cap() {
        let vars: Vec<TVar<u64>> = (0..6).map(TVar::new).collect();
        let mut sh = ShadowTx::new(&cfg(100, 4)).unwrap();
        sh.record_loads(3);
        sh.begin(None);
        sh.write(&vars[0], 9).unwrap();
        for v in &vars {
            sh.read(v).unwrap();
        }
        let _ = sh.end();
        assert_eq!(sh.loaded(), [vars[1].addr(), vars[2].addr(), vars[3].addr()]);
    }
}
