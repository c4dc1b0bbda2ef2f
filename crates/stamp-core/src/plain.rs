//! An uninstrumented [`TxOps`]: transactional code run on one thread with
//! plain loads and stores, as STAMP's sequential build runs its
//! applications (the `TM_*` barriers compiled to ordinary memory accesses).
//!
//! An application whose shared state is written against [`TxOps`] (the
//! [`TMap`](skelaff_stm::TMap) tables of vacation, say) can time the very
//! same code without the STM: the difference to a run under
//! [`atomically`](skelaff_stm::atomically) is what the STM's barriers cost,
//! the difference to a sequential version over the standard library's
//! collections is what the transactional data structures cost.

use skelaff_stm::{ErasedBox, Stop, TPtr, TVar, TxError, TxOps, Word};

use std::sync::atomic::Ordering;

/// What [`UninstrumentedTx::retry`](TxOps::retry) stops a transaction with: nothing can
/// wait for another thread's change in a one-thread run.
pub const RETRY_UNSUPPORTED: Stop = Stop::new(1, "retry is not supported in an uninstrumented run");

/// A [`TxOps`] without synchronization or logging: `read` is one load,
/// `write` one store, `alloc` a `Box`; objects freed in a transaction are
/// dropped by [`UninstrumentedTx::end`]. Nothing can be rolled back: a transaction
/// that returns an error keeps the writes it made, and [`TxOps::retry`]
/// stops it with [`RETRY_UNSUPPORTED`]. It never conflicts.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::plain::UninstrumentedTx;
/// use skelaff_stm::{TMap, TxOps};
///
/// let m: TMap<u32, u64> = TMap::new();
/// // SAFETY: `m` is this thread's alone while `tx` lives.
/// let mut tx = unsafe { UninstrumentedTx::new() };
/// m.insert(&mut tx, 3, 30)?;
/// m.insert(&mut tx, 1, 10)?;
/// assert_eq!(m.remove(&mut tx, &3)?, Some(30));
/// tx.end();
/// assert_eq!(m.to_vec(&mut tx)?, vec![(1, 10)]);
/// # Ok::<(), skelaff_stm::TxError>(())
/// ```
pub struct UninstrumentedTx {
    /// Objects freed by the running transaction, dropped when it ends.
    frees: Vec<ErasedBox>,
}

impl std::fmt::Debug for UninstrumentedTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UninstrumentedTx").field("pending_frees", &self.frees.len()).finish()
    }
}

impl UninstrumentedTx {
    /// A handle for running transactional code sequentially.
    ///
    /// # Safety
    ///
    /// While the handle lives, no other thread reads or writes the
    /// transactional variables and objects that code run through it
    /// reaches (its writes bypass the STM's locks and versions, and the
    /// objects it frees are dropped at [`UninstrumentedTx::end`] without waiting for
    /// other threads' transactions).
    pub unsafe fn new() -> Self {
        UninstrumentedTx { frees: Vec::new() }
    }

    /// Ends a transaction: drops the objects it freed.
    pub fn end(&mut self) {
        for f in self.frees.drain(..) {
            // SAFETY: `ErasedBox::destroy`'s list, from `free`'s contract:
            // the object came from a `Box` (via `alloc` or `TPtr::from_box`),
            // the transaction unlinked it, and it is freed once; from `new`'s
            // contract: no other thread can reach it.
            unsafe { f.destroy() };
        }
    }
}

impl Drop for UninstrumentedTx {
    fn drop(&mut self) {
        self.end();
    }
}

// Any `'tcell`: writes store at once, through a borrow that is live.
// SAFETY: the trait's four conditions hold for a transaction that runs
// alone (the sequential versions' only thread, which `UninstrumentedTx`'s
// constructor contract requires): (1) `read` loads the word, whose last
// store was a commit's or this transaction's own write; (2) nothing is
// deallocated before the operation ends (`free` defers to `end`); (3)
// `alloc` boxes the value with `TPtr::from_box`; (4) `free` deallocates at
// the end of the operation, once no transaction can run.
unsafe impl<'tcell> TxOps<'tcell> for UninstrumentedTx {
    #[inline(always)]
    fn read<T: Word>(&mut self, var: &TVar<T>) -> Result<T, TxError> {
        Ok(T::from_word(var.cell().load(Ordering::Relaxed)))
    }

    #[inline(always)]
    fn write<T: Word>(&mut self, var: &'tcell TVar<T>, value: T) -> Result<(), TxError> {
        var.cell().store(value.to_word(), Ordering::Relaxed);
        Ok(())
    }

    #[inline]
    fn alloc<T: Send + Sync + 'static>(&mut self, value: T) -> Result<TPtr<T>, TxError> {
        Ok(TPtr::from_box(Box::new(value)))
    }

    #[inline]
    unsafe fn free<T: Send + Sync + 'static>(&mut self, ptr: TPtr<T>) -> Result<(), TxError> {
        self.frees.push(ErasedBox::new(ptr));
        Ok(())
    }

    fn retry(&mut self) -> TxError {
        TxError::Stop(RETRY_UNSUPPORTED)
    }
}
