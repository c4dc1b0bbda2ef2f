//! Transactional variables: the word a transaction reads and writes, and
//! what may be done with it outside a transaction.
//!
//! Below the runtime and [`TxOps`](crate::TxOps): a `TVar` knows nothing
//! of transactions; its `read`/`write` shorthands live with `TxOps`, and
//! its non-transactional [`store`](TVar::store) (a one-word commit, which
//! waits for the solo gate as a transaction does) with the runtime's entry
//! points.

use core::fmt;
use core::marker::PhantomData;

use crate::lockword::is_locked;
use crate::primitive::{AtomicU64, Ordering};
use crate::raw::VWord;
use crate::word::Word;

/// A transactional variable holding one [`Word`].
///
/// 16 bytes, aligned to 16: the value (an `AtomicU64`) and the versioned
/// lock that guards it, side by side in one cache line, so a transactional
/// read touches one line. Every read, transactional or not, is an atomic
/// load, so there are no data races even for transactions that are doomed
/// to abort. Its address is its identity (a shadow's write-log key, the
/// access sampler's address): borrowing a `TVar` for a transaction keeps it
/// from moving.
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
    word: VWord,
    _t: PhantomData<fn() -> T>,
}

impl<T: Word> TVar<T> {
    /// A variable holding `value`.
    #[inline]
    pub fn new(value: T) -> Self {
        TVar { word: VWord::new(value.to_word()), _t: PhantomData }
    }

    /// The committed value, by one atomic load, outside any transaction.
    ///
    /// It is the value of some committed transaction (or of a commit being
    /// written back right now, or one a [solo](crate::solo) transaction has
    /// written in place and may still undo), with no consistency across
    /// several loads:
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
        T::from_word(self.word.value().load(Ordering::Acquire))
    }

    /// Consumes the variable and returns its value.
    ///
    /// Owning the variable means no transaction can be using it (a
    /// transaction borrows every variable it touches until it ends), so
    /// this needs no synchronization; the same holds for
    /// [`get_mut`](TVar::get_mut) and [`set_mut`](TVar::set_mut), and for the
    /// collections' `iter_mut`, `drain` and `into_iter`.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, TVar, TxOps};
    ///
    /// let mut v = TVar::new(1u64);
    /// atomically(|tx| tx.update(&v, |x| x + 1));
    /// let x = v.get_mut();
    /// v.set_mut(x * 10);
    /// assert_eq!(v.into_inner(), 20);
    /// ```
    pub fn into_inner(mut self) -> T {
        T::from_word(self.word.get_mut())
    }

    /// The value, through exclusive access (no other thread can see the
    /// variable, so no synchronization is needed).
    pub fn get_mut(&mut self) -> T {
        T::from_word(self.word.get_mut())
    }

    /// Sets the value through exclusive access.
    pub fn set_mut(&mut self, value: T) {
        self.word.set_mut(value.to_word());
    }
}

impl<T> TVar<T> {
    /// The variable's address: its identity for the access sampler and as
    /// the key of a shadow transaction's write log.
    #[inline(always)]
    pub fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// The committed word, by one atomic load (see [`TVar::load`]).
    #[inline(always)]
    pub fn load_word(&self) -> u64 {
        self.word.value().load(Ordering::Acquire)
    }

    /// The underlying atomic word: for `TxOps` implementations that read or
    /// write the variable without the STM (an uninstrumented sequential run
    /// that has the data to itself).
    #[inline(always)]
    pub fn cell(&self) -> &AtomicU64 {
        self.word.value()
    }

    /// Whether a commit holds the variable's lock right now (it does only
    /// while writing the variable back). A diagnostic: after a transaction
    /// panicked or aborted, no variable it wrote may stay locked.
    ///
    /// # Examples
    ///
    /// ```
    /// let v = skelaff_stm::TVar::new(1u8);
    /// assert!(!v.is_locked());
    /// ```
    pub fn is_locked(&self) -> bool {
        is_locked(self.word.lock().load(Ordering::Acquire))
    }

    /// The word, through exclusive access (no bound on `T`: for code that
    /// owns a collection and decodes links itself).
    #[inline]
    pub(crate) fn word_mut(&mut self) -> u64 {
        self.word.get_mut()
    }

    /// Sets the word through exclusive access (see [`TVar::word_mut`]).
    #[inline]
    pub(crate) fn set_word_mut(&mut self, w: u64) {
        self.word.set_mut(w);
    }

    /// The word and its lock, for the runtime.
    #[inline(always)]
    pub(crate) fn vword(&self) -> &VWord {
        &self.word
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

/// The address of the versioned lock of `var`: every transactional read of
/// `var` loads that word too. It lies in the same cache line as the value.
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
/// let a = TVar::new(1u64);
/// assert_eq!(lock_addr(&a) % 8, 0);
/// // The lock is in the value's cache line.
/// assert_eq!(lock_addr(&a) / 64, a.addr() / 64);
/// ```
#[inline(always)]
pub fn lock_addr<T>(var: &TVar<T>) -> usize {
    var.word.lock() as *const AtomicU64 as usize
}
