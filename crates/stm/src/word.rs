//! Values that fit in one transactional word, and pointers to transactional
//! objects.

use core::fmt;
use core::marker::PhantomData;
use core::num::{
    NonZeroI8, NonZeroI16, NonZeroI32, NonZeroI64, NonZeroIsize, NonZeroU8, NonZeroU16, NonZeroU32, NonZeroU64,
    NonZeroUsize,
};
use core::ptr::NonNull;

/// A value that round-trips through a `u64`: what a [`TVar`](crate::TVar) holds.
///
/// `from_word(to_word(x)) == x` for every `x`. `from_word` is total: given a
/// word no `to_word` produced it returns some value rather than panicking
/// (that never happens through a `TVar`, which only holds words of its own
/// type, but a speculative reader may call it on anything).
///
/// Implemented for the integers, `f32`/`f64` (by bits), `bool`, `char`,
/// `()`, the `NonZero` integers and `Option` of them, [`TPtr`] and
/// `Option<TPtr>`. Derive it for your own field-less enums and newtypes
/// (below), or implement it by hand for anything else that fits in 64 bits
/// (a packed pair of `u32`). A value larger than a word lives in a heap
/// object reached through a `TVar<Option<TPtr<T>>>` (see [`TPtr`]).
///
/// # Deriving
///
/// `#[derive(Word)]` (the feature `derive`, on by default) takes
///
/// - an enum whose variants have no fields, with implicit or explicit
///   discriminants and any `repr` but `u128`/`i128`: the word is the
///   discriminant. `from_word` of a word that is no variant's discriminant
///   (a `TVar` never holds one, but a speculative reader may decode
///   anything) gives the first variant, so decoding is total and can never
///   make an invalid value;
/// - a struct with exactly one field (`struct Id(u32)`, `struct Id { raw:
///   u32 }`, `#[repr(transparent)]` or not) whose type is `Word`: the word is
///   the field's.
///
/// `Word` needs `Copy`: derive `Clone` and `Copy` beside it.
///
/// ```
/// use skelaff_stm::{atomically, TVar, TxOps, Word};
///
/// #[derive(Clone, Copy, Debug, PartialEq, Word)]
/// enum State { Idle, Busy, Done = 10 }
///
/// #[derive(Clone, Copy, Debug, PartialEq, Word)]
/// #[repr(transparent)]
/// struct AccountId(u32);
///
/// let s = TVar::new(State::Idle);
/// let owner = TVar::new(AccountId(7));
/// atomically(|tx| {
///     if tx.read(&s)? == State::Idle {
///         tx.write(&s, State::Busy)?;
///         tx.write(&owner, AccountId(8))?;
///     }
///     Ok(())
/// });
/// assert_eq!((s.load(), owner.load()), (State::Busy, AccountId(8)));
/// assert_eq!(State::Done.to_word(), 10);
/// assert_eq!(State::from_word(3), State::Idle); // no variant 3: the first
/// ```
///
/// Anything that is not one word is refused at compile time, with a message
/// that points at [`TPtr`]:
///
/// ```compile_fail
/// #[derive(Clone, Copy, skelaff_stm::Word)]
/// struct Transfer { from: u32, to: u32, amount: u64 } // three fields: not one word
/// ```
///
/// ```compile_fail
/// #[derive(Clone, Copy, skelaff_stm::Word)]
/// enum Event { Deposit(u64), Close } // a variant with fields
/// ```
///
/// A newtype's field must itself be `Word`:
///
/// ```compile_fail,E0277
/// #[derive(Clone, Copy, skelaff_stm::Word)]
/// struct Name(&'static str);
/// ```
///
/// # Examples
///
/// By hand:
///
/// ```
/// use skelaff_stm::Word;
///
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Pair(u32, u32);
///
/// impl Word for Pair {
///     fn to_word(self) -> u64 {
///         (u64::from(self.0) << 32) | u64::from(self.1)
///     }
///     fn from_word(w: u64) -> Self {
///         Pair((w >> 32) as u32, w as u32)
///     }
/// }
///
/// assert_eq!(Pair::from_word(Pair(7, 9).to_word()), Pair(7, 9));
/// assert_eq!(f64::from_word((-1.5f64).to_word()), -1.5);
/// ```
///
/// A small struct with named fields as a [`THashMap`](crate::THashMap)
/// value: pack the fields into one word by hand (`#[derive(Word)]` takes
/// one field only). Here 16 bits of seats and 32 of price; `from_word`
/// takes each field's bits back, so it is total (any word decodes to some
/// value). The map stores the word in the entry's `TVar`, so reading or
/// replacing a value is one transactional word, and two orders for
/// different events never conflict.
///
/// ```
/// use skelaff_stm::{atomically, THashMap, Word};
///
/// #[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// struct Offer {
///     seats: u16,
///     price_cents: u32,
/// }
///
/// impl Word for Offer {
///     fn to_word(self) -> u64 {
///         // Bits 0-15: seats; bits 16-47: price.
///         u64::from(self.seats) | (u64::from(self.price_cents) << 16)
///     }
///     fn from_word(w: u64) -> Self {
///         Offer { seats: w as u16, price_cents: (w >> 16) as u32 }
///     }
/// }
///
/// let offers: THashMap<u32, Offer> = THashMap::new();
/// atomically(|tx| offers.insert(tx, 17, Offer { seats: 120, price_cents: 4_950 }));
///
/// // Sell 4 seats of event 17, if it has them: read, change, write back.
/// let sold = atomically(|tx| {
///     let Some(mut o) = offers.get(tx, &17)? else { return Ok(false) };
///     if o.seats < 4 {
///         return Ok(false);
///     }
///     o.seats -= 4;
///     offers.insert(tx, 17, o)?;
///     Ok(true)
/// });
/// assert!(sold);
/// assert_eq!(atomically(|tx| offers.get(tx, &17)), Some(Offer { seats: 116, price_cents: 4_950 }));
/// // Every field survives the round trip, at its extremes too.
/// let max = Offer { seats: u16::MAX, price_cents: u32::MAX };
/// assert_eq!(Offer::from_word(max.to_word()), max);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `Word`: a `TVar` holds only values that fit in one 64-bit word",
    label = "not one transactional word",
    note = "for a field-less enum or a newtype over a `Word`, add `#[derive(Clone, Copy, Word)]`; \
            for a small value that packs into 64 bits, implement `Word` by hand; \
            for anything larger, store a pointer to a heap object: `TVar<Option<TPtr<T>>>` (see `TPtr`)"
)]
pub trait Word: Copy + 'static {
    /// The word for `self`.
    fn to_word(self) -> u64;
    /// The value for a word made by [`Word::to_word`].
    fn from_word(w: u64) -> Self;
}

macro_rules! word_unsigned {
    ($($t:ty),*) => {$(
        impl Word for $t {
            #[inline(always)]
            fn to_word(self) -> u64 { self as u64 }
            #[inline(always)]
            fn from_word(w: u64) -> Self { w as $t }
        }
    )*};
}
word_unsigned!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl Word for bool {
    #[inline(always)]
    fn to_word(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_word(w: u64) -> Self {
        w != 0
    }
}

impl Word for char {
    #[inline(always)]
    fn to_word(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_word(w: u64) -> Self {
        char::from_u32(w as u32).unwrap_or(char::REPLACEMENT_CHARACTER)
    }
}

impl Word for f64 {
    #[inline(always)]
    fn to_word(self) -> u64 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_word(w: u64) -> Self {
        f64::from_bits(w)
    }
}

impl Word for f32 {
    #[inline(always)]
    fn to_word(self) -> u64 {
        u64::from(self.to_bits())
    }
    #[inline(always)]
    fn from_word(w: u64) -> Self {
        f32::from_bits(w as u32)
    }
}

impl Word for () {
    #[inline(always)]
    fn to_word(self) -> u64 {
        0
    }
    #[inline(always)]
    fn from_word(_: u64) -> Self {}
}

macro_rules! word_nonzero {
    ($($nz:ty => $t:ty),*) => {$(
        impl Word for Option<$nz> {
            #[inline(always)]
            fn to_word(self) -> u64 { self.map_or(0, |x| x.get() as u64) }
            #[inline(always)]
            fn from_word(w: u64) -> Self { <$nz>::new(w as $t) }
        }
        impl Word for $nz {
            #[inline(always)]
            fn to_word(self) -> u64 { self.get() as u64 }
            #[inline(always)]
            fn from_word(w: u64) -> Self { <$nz>::new(w as $t).unwrap_or(<$nz>::MAX) }
        }
    )*};
}
word_nonzero!(
    NonZeroU8 => u8, NonZeroU16 => u16, NonZeroU32 => u32, NonZeroU64 => u64, NonZeroUsize => usize,
    NonZeroI8 => i8, NonZeroI16 => i16, NonZeroI32 => i32, NonZeroI64 => i64, NonZeroIsize => isize
);

/// A pointer to a heap object shared through transactional variables: the
/// link type of transactional data structures (store `Option<TPtr<Node>>`
/// in a `TVar`).
///
/// Made by [`TxOps::alloc`](crate::TxOps::alloc) (inside a transaction: freed
/// again if the transaction aborts) or [`TPtr::from_box`] (outside), and
/// given back with [`TxOps::free`](crate::TxOps::free), which reclaims the
/// object only after the freeing transaction commits and no running
/// transaction can still reach it.
///
/// It is `Copy` and compares by address. Dereferencing is `unsafe`
/// ([`TPtr::get`]): the pointer itself says nothing about whether the
/// object is still alive.
///
/// A `TPtr<T>` is a [`Word`] (it can sit in a `TVar`, which every thread
/// may read) only when `T: Send + Sync`: every thread that reads the
/// variable reaches the object by shared reference, and the thread that
/// frees it (reclamation runs on any thread) drops it. So a pointer to a
/// `Cell` cannot be shared through a `TVar`:
///
/// ```compile_fail,E0277
/// use std::cell::Cell;
/// use skelaff_stm::{TPtr, TVar};
///
/// let v: TVar<Option<TPtr<Cell<u8>>>> = TVar::new(None);
/// ```
pub struct TPtr<T> {
    ptr: NonNull<T>,
    _owns: PhantomData<T>,
}

// SAFETY: a `TPtr` is an address; sending it lets another thread reach a `T`
// by shared reference only (through `get`), which is sound when `T: Sync`,
// and drop it (through `into_box`/reclamation) on another thread, which is
// sound when `T: Send`.
unsafe impl<T: Send + Sync> Send for TPtr<T> {}
// SAFETY: as for `Send`: sharing a `TPtr` only shares the address.
unsafe impl<T: Send + Sync> Sync for TPtr<T> {}

impl<T> Clone for TPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for TPtr<T> {}
impl<T> PartialEq for TPtr<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr == other.ptr
    }
}
impl<T> Eq for TPtr<T> {}
impl<T> fmt::Debug for TPtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TPtr({:p})", self.ptr)
    }
}

impl<T> TPtr<T> {
    /// Moves `b` to a `TPtr` (the object lives until [`TPtr::into_box`] or a
    /// transactional free).
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::TPtr;
    ///
    /// let p = TPtr::from_box(Box::new(5u32));
    /// // SAFETY: `p` is alive and not shared.
    /// assert_eq!(unsafe { *p.get() }, 5);
    /// // SAFETY: `p` came from `from_box` and is not used again.
    /// drop(unsafe { p.into_box() });
    /// ```
    #[inline]
    pub fn from_box(b: Box<T>) -> Self {
        TPtr { ptr: NonNull::from(Box::leak(b)), _owns: PhantomData }
    }

    /// The pointer with address `addr`, `None` for 0 (the inverse of
    /// [`TPtr::addr`]; no check that an object lives there).
    #[inline(always)]
    pub fn from_addr(addr: usize) -> Option<Self> {
        NonNull::new(addr as *mut T).map(|ptr| TPtr { ptr, _owns: PhantomData })
    }

    /// The object's address.
    #[inline(always)]
    pub fn addr(self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// The raw pointer.
    #[inline(always)]
    pub fn as_ptr(self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// The same address as a pointer to a `U` (no check that a `U` lives
    /// there: dereferencing it is as unsafe as ever). For objects viewed
    /// through a common prefix, as the skip list's nodes of every level are.
    #[inline(always)]
    pub(crate) fn cast<U>(self) -> TPtr<U> {
        TPtr { ptr: self.ptr.cast(), _owns: PhantomData }
    }

    /// A shared reference to the object.
    ///
    /// # Safety
    ///
    /// The object must be alive for `'a`, and the reference must be used only
    /// where `&T` may be: on the thread that owns the object, or on any
    /// thread when `T: Sync` (a `TPtr` read from a `TVar` always is one:
    /// only `T: Send + Sync` pointers are [`Word`]s). Aliveness holds when:
    ///
    /// - the pointer was read from a `TVar` (or allocated) by the transaction
    ///   that is running now, and the reference is not used after that
    ///   transaction's closure returns (objects freed by other transactions
    ///   are reclaimed only once no transaction that could have reached them
    ///   is running), or
    /// - the caller owns the object (made it with [`TPtr::from_box`] and
    ///   has not freed it), or
    /// - the caller holds an [epoch guard](crate::epoch_guard) taken before the
    ///   pointer was read.
    #[inline(always)]
    pub unsafe fn get<'a>(self) -> &'a T {
        // SAFETY: the caller guarantees the object is alive for 'a; TPtr
        // only ever points at objects made from a Box, so it is aligned and
        // initialised.
        unsafe { &*self.ptr.as_ptr() }
    }

    /// Takes the object back.
    ///
    /// # Safety
    ///
    /// The pointer came from [`TPtr::from_box`] or an allocation that
    /// committed, it is not freed in any other way, and no thread can reach
    /// the object any more.
    #[inline]
    pub unsafe fn into_box(self) -> Box<T> {
        // SAFETY: the caller guarantees exclusive ownership of a pointer that
        // came from `Box::leak`.
        unsafe { Box::from_raw(self.ptr.as_ptr()) }
    }
}

impl<T: Send + Sync + 'static> Word for TPtr<T> {
    #[inline(always)]
    fn to_word(self) -> u64 {
        self.addr() as u64
    }
    #[inline(always)]
    fn from_word(w: u64) -> Self {
        TPtr { ptr: NonNull::new(w as usize as *mut T).unwrap_or(NonNull::dangling()), _owns: PhantomData }
    }
}

impl<T: Send + Sync + 'static> Word for Option<TPtr<T>> {
    #[inline(always)]
    fn to_word(self) -> u64 {
        self.map_or(0, |p| p.addr() as u64)
    }
    #[inline(always)]
    fn from_word(w: u64) -> Self {
        NonNull::new(w as usize as *mut T).map(|ptr| TPtr { ptr, _owns: PhantomData })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round<T: Word + PartialEq + fmt::Debug>(x: T) {
        assert_eq!(T::from_word(x.to_word()), x);
    }

    #[test]
    fn round_trips() {
        round(u8::MAX);
        round(-5i8);
        round(i64::MIN);
        round(usize::MAX);
        round(-0.25f32);
        round(f64::INFINITY);
        round(true);
        round('é');
        round(());
        round(NonZeroU32::new(9));
        round(None::<NonZeroU64>);
        round(NonZeroI16::new(-3).unwrap());
        let b = TPtr::from_box(Box::new(1u8));
        round(b);
        round(Some(b));
        round(None::<TPtr<u8>>);
        // SAFETY: `b` came from from_box and is not used after.
        drop(unsafe { b.into_box() });
    }

    #[test]
    fn from_word_is_total() {
        assert_eq!(char::from_word(0xD800), char::REPLACEMENT_CHARACTER);
        assert_eq!(NonZeroU8::from_word(0), NonZeroU8::MAX);
    }
}
