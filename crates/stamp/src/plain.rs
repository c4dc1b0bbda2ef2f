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

use skelaff_stm::{ErasedBox, StopReason, TPtr, TVar, TxError, TxOps, Word};

use std::sync::atomic::Ordering;

/// A [`TxOps`] without synchronization or logging: `read` is one load,
/// `write` one store, `alloc` a `Box`; objects freed in a transaction are
/// dropped by [`Plain::end`]. Nothing can be rolled back: a transaction
/// that returns an error keeps the writes it made, and [`TxOps::retry`]
/// stops it with [`StopReason::Unsupported`]. It never conflicts.
///
/// # Examples
///
/// ```
/// use skelaff_stamp::plain::Plain;
/// use skelaff_stm::{TMap, TxOps};
///
/// let m: TMap<u32, u64> = TMap::new();
/// // SAFETY: `m` is this thread's alone while `tx` lives.
/// let mut tx = unsafe { Plain::new() };
/// m.insert(&mut tx, 3, 30)?;
/// m.insert(&mut tx, 1, 10)?;
/// assert_eq!(m.remove(&mut tx, &3)?, Some(30));
/// tx.end();
/// assert_eq!(m.to_vec(&mut tx)?, vec![(1, 10)]);
/// # Ok::<(), skelaff_stm::TxError>(())
/// ```
pub struct Plain {
    /// Objects freed by the running transaction, dropped when it ends.
    frees: Vec<ErasedBox>,
}

impl std::fmt::Debug for Plain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plain").field("pending_frees", &self.frees.len()).finish()
    }
}

impl Plain {
    /// A handle for running transactional code sequentially.
    ///
    /// # Safety
    ///
    /// While the handle lives, no other thread reads or writes the
    /// transactional variables and objects that code run through it
    /// reaches (its writes bypass the STM's locks and versions, and the
    /// objects it frees are dropped at [`Plain::end`] without waiting for
    /// other threads' transactions).
    pub unsafe fn new() -> Self {
        Plain { frees: Vec::new() }
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

impl Drop for Plain {
    fn drop(&mut self) {
        self.end();
    }
}

impl TxOps for Plain {
    #[inline(always)]
    fn read<T: Word>(&mut self, var: &TVar<T>) -> Result<T, TxError> {
        Ok(T::from_word(var.cell().load(Ordering::Relaxed)))
    }

    #[inline(always)]
    fn write<T: Word>(&mut self, var: &TVar<T>, value: T) -> Result<(), TxError> {
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
        TxError::Stop(StopReason::Unsupported)
    }
}
