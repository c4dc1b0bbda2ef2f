//! The calling thread's half of the runtime: its [`ThreadState`] (a
//! thread-local), registered in the registry on first use and given back
//! when the thread exits, and exclusive access to its transaction
//! descriptor.

use core::cell::Cell;

use crate::primitive::UnsafeCell;

use super::registry::{ThreadRecord, registry};
use super::tx::TxCore;

/// The per-thread state behind `atomically` and the epoch guards.
pub(crate) struct ThreadState {
    /// A transaction (or a sampler call) is using `tx`.
    busy: Cell<bool>,
    /// Epoch guards this thread holds.
    pub(crate) guards: Cell<u32>,
    /// This thread's record number, once registered.
    record_no: Cell<Option<usize>>,
    /// The descriptor, made on the first transaction.
    tx: UnsafeCell<Option<TxCore>>,
}

impl ThreadState {
    /// This thread's record number, registering the thread on first use.
    fn record_no(&self) -> usize {
        match self.record_no.get() {
            Some(i) => i,
            None => {
                let i = registry().register();
                self.record_no.set(Some(i));
                i
            }
        }
    }

    /// This thread's registry record.
    pub(crate) fn record(&self) -> &'static ThreadRecord {
        registry().record(self.record_no())
    }
}

impl ThreadState {
    /// The thread is done with the STM: its descriptor goes (handing its
    /// garbage over to the orphans), then its record.
    ///
    /// # Panics
    ///
    /// If a transaction or sampler call is using the descriptor.
    pub(crate) fn leave(&self) {
        assert!(!self.busy.get(), "skelaff-stm: a thread cannot leave the STM inside a transaction");
        // SAFETY: `busy` is false, so no reference to the descriptor exists
        // (only `with_tx` makes one, while `busy` is true), and the state
        // is thread-local.
        drop(self.tx.with_mut(|tx| unsafe { (*tx).take() }));
        if let Some(i) = self.record_no.take() {
            registry().unregister(i);
        }
    }
}

impl Drop for ThreadState {
    fn drop(&mut self) {
        self.leave();
    }
}

#[cfg(not(loom))]
std::thread_local! {
    static THREAD: ThreadState = const {
        ThreadState { busy: Cell::new(false), guards: Cell::new(0), record_no: Cell::new(None), tx: UnsafeCell::new(None) }
    };
}

// Loom runs thread-local destructors when a model thread ends, but after the
// thread's `join` has returned (and the main thread's after the model's
// statics, the registry among them, are gone): model threads call
// `loom_hooks::exit_thread` last, which runs this state's destructor code.
#[cfg(loom)]
loom::thread_local! {
    static THREAD: ThreadState =
        ThreadState { busy: Cell::new(false), guards: Cell::new(0), record_no: Cell::new(None), tx: UnsafeCell::new(None) };
}

/// Runs `f` on the calling thread's state.
#[inline(always)]
pub(crate) fn with_thread<R>(f: impl FnOnce(&ThreadState) -> R) -> R {
    THREAD.with(f)
}

/// The calling thread's registry record (registering it on first use).
pub(crate) fn this_record() -> &'static ThreadRecord {
    with_thread(ThreadState::record)
}

/// The calling thread's owner id: its record number + 1 (registering it
/// on first use).
pub(crate) fn this_owner() -> u64 {
    with_thread(|t| t.record_no() as u64 + 1)
}

/// Whether the calling thread is inside a transaction.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, in_transaction};
///
/// assert!(!in_transaction());
/// assert!(atomically(|_| Ok(in_transaction())));
/// ```
pub fn in_transaction() -> bool {
    with_thread(|t| t.busy.get())
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
///
/// # Panics
///
/// If the descriptor is in use (a transaction calling `atomically`).
#[inline(always)]
pub(crate) fn with_tx<R>(f: impl FnOnce(&mut TxCore) -> R) -> R {
    with_thread(|t| {
        if t.busy.replace(true) {
            nested();
        }
        let _reset = BusyReset(&t.busy);
        t.tx.with_mut(|cell| {
            // SAFETY: `busy` was false and is true until `_reset` drops, so
            // no other reference to the descriptor exists on this thread
            // (and the state is thread-local, so none on any other thread).
            let cell = unsafe { &mut *cell };
            let tx = match cell {
                Some(tx) => tx,
                None => cell.insert(TxCore::new(t.record_no())),
            };
            f(tx)
        })
    })
}
