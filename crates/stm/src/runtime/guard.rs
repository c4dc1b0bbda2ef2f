//! Epoch guards: protection from reclamation for readers outside
//! transactions that follow [`TPtr`](crate::TPtr)s with plain loads.

use crate::engine::engine;

use super::thread::with_thread;

/// An epoch guard: while it lives, no object that this thread could reach
/// when it was taken is reclaimed, even if a transaction frees it.
///
/// For readers outside transactions that follow [`TPtr`](crate::TPtr)s
/// with plain loads (a speculative shadow). Not `Send`: it protects its
/// own thread. Take one with [`epoch_guard`].
#[derive(Debug)]
#[must_use = "the guard protects only while it lives"]
pub struct EpochGuard {
    _not_send: core::marker::PhantomData<*const ()>,
}

/// Takes an epoch guard for the calling thread (guards nest; the outermost
/// one announces the thread to reclamation).
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, epoch_guard, TPtr, TVar, TxOps};
///
/// let head: TVar<Option<TPtr<u64>>> = TVar::new(None);
/// atomically(|tx| { let p = tx.alloc(7u64)?; tx.write(&head, Some(p)) });
/// let guard = epoch_guard();
/// if let Some(p) = head.load() {
///     // SAFETY: `p` was read after the guard was taken, and the reference
///     // does not outlive the guard.
///     assert_eq!(unsafe { *p.get() }, 7);
/// }
/// drop(guard);
/// # let p = head.load().unwrap();
/// # // SAFETY: the object was never freed and nobody else uses it.
/// # drop(unsafe { p.into_box() });
/// ```
pub fn epoch_guard() -> EpochGuard {
    with_thread(|t| {
        let n = t.guards.get();
        if n == 0 {
            t.record().announce_guard(engine().now());
        }
        t.guards.set(n + 1);
    });
    EpochGuard { _not_send: core::marker::PhantomData }
}

impl Drop for EpochGuard {
    fn drop(&mut self) {
        with_thread(|t| {
            let n = t.guards.get() - 1;
            t.guards.set(n);
            if n == 0 {
                t.record().end_guard();
            }
        });
    }
}
