//! What code inside a transaction may do: the [`TxOps`] trait, and the
//! `TVar::read`/`TVar::write` shorthands over it.

use crate::error::TxError;
use crate::tvar::TVar;
use crate::word::{TPtr, Word};

/// The operations available inside a transaction: read and write
/// transactional words, allocate and free transactional objects, wait for a
/// change.
///
/// The real transaction ([`Tx`](crate::Tx)) implements it, and so can a
/// speculative *shadow* in another crate: its `read` looks in a private log
/// keyed by [`TVar::addr`] and falls back to [`TVar::load_word`], its
/// `write` goes to the log, its `alloc` makes a private object
/// ([`TPtr::from_box`]), its `free` does nothing, and it stops with
/// [`TxError::Stop`]. Code written against `TxOps` (the collections in
/// [`collections`](crate::collections), a worklist's `process`) runs both ways.
///
/// Every fallible method returns [`TxError`]; propagate it with `?` and
/// return it from the transaction's closure.
///
/// # The lifetime `'tcell`
///
/// The real STM stores a transaction's writes at commit, through the
/// addresses the writes recorded, and validates its reads by loading again
/// the versioned lock that lives beside each variable read. So every
/// variable a transaction reads or writes must outlive the transaction,
/// and the types say so: an implementation of `TxOps<'tcell>` reads and
/// writes only `&'tcell TVar`s, and the transaction
/// [`atomically`](crate::atomically) hands its closure is a
/// [`Tx<'tcell>`](crate::Tx) whose `'tcell` outlives the whole call. A
/// variable borrowed from outside the closure qualifies, and so does one
/// inside a transactional object (alive while any transaction that reached
/// it runs); a `TVar` the closure makes itself does not, and writing it
/// does not compile:
///
/// ```compile_fail,E0597
/// use skelaff_stm::{atomically, TVar, TxOps};
///
/// atomically(|tx| {
///     let v = TVar::new(0u64); // dropped when the closure returns, before commit
///     tx.write(&v, 1)
/// });
/// ```
///
/// Reading such a variable does not compile either (its lock would be
/// loaded again after it is gone):
///
/// ```compile_fail,E0597
/// use skelaff_stm::{atomically, TVar, TxOps};
///
/// atomically(|tx| {
///     let v = TVar::new(0u64);
///     tx.read(&v)
/// });
/// ```
///
/// # Examples
///
/// A function that works in any transaction:
///
/// ```
/// use skelaff_stm::{atomically, TVar, TxError, TxOps};
///
/// fn transfer<'t, X: TxOps<'t>>(tx: &mut X, from: &'t TVar<u64>, to: &'t TVar<u64>, n: u64) -> Result<bool, TxError> {
///     let f = tx.read(from)?;
///     if f < n {
///         return Ok(false);
///     }
///     tx.write(from, f - n)?;
///     let t = tx.read(to)?;
///     tx.write(to, t + n)?;
///     Ok(true)
/// }
///
/// let (a, b) = (TVar::new(5), TVar::new(0));
/// assert!(atomically(|tx| transfer(tx, &a, &b, 3)));
/// assert!(!atomically(|tx| transfer(tx, &a, &b, 3)));
/// assert_eq!((a.load(), b.load()), (2, 3));
/// ```
///
/// # Safety
///
/// Implementing the trait is `unsafe` because the code written against it
/// trusts it with memory: the collections (and any skeleton's `process`)
/// dereference the [`TPtr`]s that `read` returns from their links, and
/// hand objects to `alloc` and `free`, with no check of their own. Safe
/// code could otherwise implement `read` to return any word and make a
/// collection follow a dangling or made-up pointer. An implementation
/// promises, for each transaction it runs (from its first operation until
/// it ends: commits, aborts, or is dropped):
///
/// 1. `read(var)` returns a word that `var` held at some moment since the
///    transaction began, or the last word this transaction passed to
///    `write(var, _)`;
/// 2. no object that was reachable from shared memory at some moment since
///    the transaction began, nor any object its `alloc` returned, is
///    deallocated before the transaction ends (the STM's own [`Tx`](crate::Tx)
///    announces itself to the epoch reclamation; a speculative reader holds
///    an [`EpochGuard`](crate::EpochGuard) for its whole run; a runner that
///    is the only thread frees nothing before the operation ends);
/// 3. `alloc(value)` returns a pointer to `value` in an allocation made as
///    [`TPtr::from_box`] makes one;
/// 4. `free(ptr)` deallocates `ptr` only as its own contract allows, and
///    never while condition 2 protects it for any transaction.
///
/// An implementation that does not say `unsafe impl` does not compile:
///
/// ```compile_fail,E0200
/// use skelaff_stm::{TPtr, TVar, TxError, TxOps, Word};
///
/// struct Liar;
/// impl<'t> TxOps<'t> for Liar {
///     fn read<T: Word>(&mut self, _: &'t TVar<T>) -> Result<T, TxError> {
///         Ok(T::from_word(0x1000)) // a made-up pointer for a collection to follow
///     }
///     fn write<T: Word>(&mut self, _: &'t TVar<T>, _: T) -> Result<(), TxError> {
///         Ok(())
///     }
///     fn alloc<T: Send + Sync + 'static>(&mut self, v: T) -> Result<TPtr<T>, TxError> {
///         Ok(TPtr::from_box(Box::new(v)))
///     }
///     unsafe fn free<T: Send + Sync + 'static>(&mut self, _: TPtr<T>) -> Result<(), TxError> {
///         Ok(())
///     }
///     fn retry(&mut self) -> TxError {
///         TxError::Retry
///     }
/// }
/// ```
pub unsafe trait TxOps<'tcell> {
    /// Reads `var` as of the transaction's snapshot (or the value it wrote).
    ///
    /// `var` is borrowed for `'tcell`, which outlives the transaction: the
    /// real STM loads `var`'s lock again when it validates the read.
    ///
    /// # Errors
    ///
    /// A conflict (the real STM) or a stop (a shadow).
    fn read<T: Word>(&mut self, var: &'tcell TVar<T>) -> Result<T, TxError>;

    /// Writes `value` to `var`, visible to others when the transaction commits.
    ///
    /// `var` is borrowed for `'tcell`, which outlives the transaction: the
    /// real STM stores the value at commit through `var`'s address (see
    /// ["The lifetime `'tcell`"](TxOps#the-lifetime-tcell)).
    ///
    /// # Errors
    ///
    /// A stop (a shadow whose log is full); the real STM never fails here.
    fn write<T: Word>(&mut self, var: &'tcell TVar<T>, value: T) -> Result<(), TxError>;

    /// Moves `value` to the heap as a transactional object. If the
    /// transaction aborts, the object is dropped again.
    ///
    /// # Errors
    ///
    /// A stop (a shadow); the real STM never fails here.
    fn alloc<T: Send + Sync + 'static>(&mut self, value: T) -> Result<TPtr<T>, TxError>;

    /// Frees an object when (and only if) the transaction commits, once no
    /// running transaction can still reach it.
    ///
    /// # Errors
    ///
    /// A stop (a shadow); the real STM never fails here.
    ///
    /// # Safety
    ///
    /// - `ptr` came from [`TxOps::alloc`] (of this transaction or of one
    ///   that committed) or from [`TPtr::from_box`];
    /// - when this transaction commits, the object is unreachable from
    ///   shared memory (this transaction unlinked it), and
    /// - it is not freed again.
    unsafe fn free<T: Send + Sync + 'static>(&mut self, ptr: TPtr<T>) -> Result<(), TxError>;

    /// Asks to wait until something the transaction read changes, then run
    /// it again; return the signal from the closure: `return Err(tx.retry())`.
    fn retry(&mut self) -> TxError;

    /// Reads `var`, applies `f`, writes the result and returns it.
    ///
    /// # Errors
    ///
    /// As [`TxOps::read`] and [`TxOps::write`].
    #[inline]
    fn update<T: Word>(&mut self, var: &'tcell TVar<T>, f: impl FnOnce(T) -> T) -> Result<T, TxError> {
        let v = f(self.read(var)?);
        self.write(var, v)?;
        Ok(v)
    }
}

impl<T: Word> TVar<T> {
    /// Reads the variable in transaction `tx` (same as [`TxOps::read`]).
    ///
    /// # Errors
    ///
    /// The transaction's signal to stop (a conflict); propagate it with `?`.
    #[inline(always)]
    pub fn read<'tcell, X: TxOps<'tcell> + ?Sized>(&'tcell self, tx: &mut X) -> Result<T, TxError> {
        tx.read(self)
    }

    /// Writes the variable in transaction `tx` (same as [`TxOps::write`]).
    ///
    /// # Errors
    ///
    /// The transaction's signal to stop; propagate it with `?`.
    #[inline(always)]
    pub fn write<'tcell, X: TxOps<'tcell> + ?Sized>(&'tcell self, tx: &mut X, value: T) -> Result<(), TxError> {
        tx.write(self, value)
    }
}
