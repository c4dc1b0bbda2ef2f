//! Transactional variables.

use core::fmt;
use core::marker::PhantomData;

use crate::error::TxError;
use crate::primitive::{AtomicU64, Ordering};
use crate::runtime::ENGINE;
use crate::txops::TxOps;
use crate::word::Word;

/// A transactional variable holding one [`Word`].
///
/// It is an `AtomicU64` and nothing else (`repr(transparent)`): every read,
/// transactional or not, is an atomic load, so there are no data races even
/// for transactions that are doomed to abort. Its address is its identity
/// (the STM's lock stripe and a shadow's write-log key): borrowing a `TVar`
/// for a transaction keeps it from moving.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, TVar, TxOps};
///
/// let a = TVar::new(10i64);
/// let b = TVar::new(0i64);
/// atomically(|tx| {
///     let x = tx.read(&a)?;
///     tx.write(&a, x - 3)?;
///     let y = b.read(tx)?;
///     b.write(tx, y + 3)
/// });
/// assert_eq!((a.load(), b.load()), (7, 3));
/// ```
#[repr(transparent)]
pub struct TVar<T> {
    cell: AtomicU64,
    _t: PhantomData<fn() -> T>,
}

impl<T: Word> TVar<T> {
    /// A variable holding `value`.
    #[inline]
    pub fn new(value: T) -> Self {
        TVar { cell: AtomicU64::new(value.to_word()), _t: PhantomData }
    }

    /// Reads the variable in transaction `tx` (same as [`TxOps::read`]).
    ///
    /// # Errors
    ///
    /// The transaction's signal to stop (a conflict); propagate it with `?`.
    #[inline(always)]
    pub fn read<X: TxOps + ?Sized>(&self, tx: &mut X) -> Result<T, TxError> {
        tx.read(self)
    }

    /// Writes the variable in transaction `tx` (same as [`TxOps::write`]).
    ///
    /// # Errors
    ///
    /// The transaction's signal to stop; propagate it with `?`.
    #[inline(always)]
    pub fn write<X: TxOps + ?Sized>(&self, tx: &mut X, value: T) -> Result<(), TxError> {
        tx.write(self, value)
    }

    /// The committed value, by one atomic load, outside any transaction.
    ///
    /// It is the value of some committed transaction (or of a commit being
    /// written back right now), with no consistency across several loads:
    /// use it for set-up, for data only this thread can reach (privatized),
    /// for statistics, and in speculative readers such as a shadow.
    ///
    /// # Examples
    ///
    /// ```
    /// let v = skelaff_stm::TVar::new('x');
    /// assert_eq!(v.load(), 'x');
    /// ```
    #[inline(always)]
    pub fn load(&self) -> T {
        T::from_word(self.cell.load(Ordering::Acquire))
    }

    /// Stores `value` outside any transaction, as a transaction of one write
    /// would: running transactions see it atomically (those that read the
    /// variable before will fail validation).
    ///
    /// # Examples
    ///
    /// ```
    /// let v = skelaff_stm::TVar::new(1u32);
    /// v.store(2);
    /// assert_eq!(v.load(), 2);
    /// ```
    pub fn store(&self, value: T) {
        ENGINE.store_single(&self.cell, value.to_word(), 0);
    }

    /// Consumes the variable and returns its value.
    pub fn into_inner(self) -> T {
        T::from_word(self.cell.into_inner())
    }

    /// The value, through exclusive access (no other thread can see the
    /// variable, so no synchronization is needed).
    pub fn get_mut(&mut self) -> T {
        T::from_word(*self.cell.get_mut())
    }

    /// Sets the value through exclusive access.
    pub fn set_mut(&mut self, value: T) {
        *self.cell.get_mut() = value.to_word();
    }
}

impl<T> TVar<T> {
    /// The variable's address: its identity for lock striping, for the
    /// access sampler, and as the key of a shadow transaction's write log.
    #[inline(always)]
    pub fn addr(&self) -> usize {
        &self.cell as *const AtomicU64 as usize
    }

    /// The committed word, by one atomic load (see [`TVar::load`]).
    #[inline(always)]
    pub fn load_word(&self) -> u64 {
        self.cell.load(Ordering::Acquire)
    }

    /// The underlying atomic word (for code that drives the protocol in
    /// [`raw`](crate::raw) directly).
    #[inline(always)]
    pub fn cell(&self) -> &AtomicU64 {
        &self.cell
    }
}

impl<T: Word + Default> Default for TVar<T> {
    fn default() -> Self {
        TVar::new(T::default())
    }
}

impl<T: Word + fmt::Debug> fmt::Debug for TVar<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TVar").field("addr", &format_args!("{:#x}", self.addr())).field("value", &self.load()).finish()
    }
}
