//! A heap object of any type, held by its address and the function that
//! drops it: how the STM and the other `TxOps` implementations keep lists of
//! objects to drop later (aborted allocations, retired frees, a shadow's
//! private objects).

use crate::word::TPtr;

/// A type-erased `Box`: the address of an object made from a `Box<T>` and
/// the function that drops it as a `Box<T>`.
///
/// Unlike a `Box`, it does not drop the object when it is itself dropped:
/// whoever holds it decides when the object may go (after a commit, once no
/// reader can reach it, ...) and then calls [`ErasedBox::destroy`].
/// Dropping an `ErasedBox` without destroying it forgets the object (it
/// leaks; that is what an aborted `free` wants).
///
/// # Examples
///
/// ```
/// use skelaff_stm::{ErasedBox, TPtr};
///
/// let p = TPtr::from_box(Box::new(String::from("freed later")));
/// let owned = ErasedBox::new(p);
/// assert_eq!(owned.addr(), p.addr());
/// // SAFETY: `p` came from `TPtr::from_box`, nothing else frees it, and no
/// // reference to the string is used after this.
/// unsafe { owned.destroy() };
/// ```
#[derive(Debug)]
pub struct ErasedBox {
    ptr: *mut (),
    drop: unsafe fn(*mut ()),
}

// SAFETY: `ErasedBox::new` takes only `T: Send` objects, so dropping one on
// another thread (the only thing `destroy` does with the pointer) is sound.
unsafe impl Send for ErasedBox {}

/// Drops the `Box<T>` behind `p`.
///
/// # Safety
///
/// `p` is the address of a live object made from a `Box<T>`, and nothing
/// uses or frees it afterwards.
unsafe fn drop_box<T>(p: *mut ()) {
    // SAFETY: forwarded to the caller: an unaliased `Box<T>` pointer.
    drop(unsafe { Box::from_raw(p.cast::<T>()) });
}

impl ErasedBox {
    /// Holds the object behind `p`, to be dropped as a `Box<T>` by
    /// [`ErasedBox::destroy`] (which states what that needs).
    #[inline]
    pub fn new<T: Send + 'static>(p: TPtr<T>) -> Self {
        ErasedBox { ptr: p.as_ptr().cast(), drop: drop_box::<T> }
    }

    /// The object's address.
    #[inline]
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// Drops the object.
    ///
    /// # Safety
    ///
    /// - The pointer given to [`ErasedBox::new`] came from
    ///   [`TPtr::from_box`] (or a `TxOps::alloc` that made it so) and the
    ///   object has not been dropped or freed since;
    /// - nothing else will drop or free it (this is the one owner), and
    /// - no thread will use a reference to it any more.
    #[inline]
    pub unsafe fn destroy(self) {
        // SAFETY: `drop` was made for this pointer's type in `new`; the
        // caller guarantees a live, unaliased `Box` that is freed once.
        unsafe { (self.drop)(self.ptr) }
    }
}
