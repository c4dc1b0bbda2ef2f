//! Typed NUMA arrays over [`NumaRegion`]: a fixed-size box and a growable vector.

use core::fmt;
use core::marker::PhantomData;
use core::mem::{self, MaybeUninit};
use core::ops::{Deref, DerefMut};
use core::ptr::{self, NonNull};

use crate::error::{Error, Result};
use crate::policy::Policy;
use crate::region::{NumaRegion, Placement, RegionOptions};

/// Types for which all-zero bytes are a valid value, so a fresh (zeroed)
/// mapping can be used as an array of them without writing it.
///
/// # Safety
///
/// An implementor must be valid when every byte of it is zero.
pub unsafe trait Zeroable: Sized {}

macro_rules! zeroable {
    ($($t:ty),*) => { $(
        // SAFETY: zero is a valid value of every primitive integer and float.
        unsafe impl Zeroable for $t {}
    )* };
}
zeroable!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64, bool);
zeroable!(
    core::sync::atomic::AtomicU8,
    core::sync::atomic::AtomicU16,
    core::sync::atomic::AtomicU32,
    core::sync::atomic::AtomicU64,
    core::sync::atomic::AtomicUsize,
    core::sync::atomic::AtomicI32,
    core::sync::atomic::AtomicI64,
    core::sync::atomic::AtomicBool
);
// SAFETY: an array of zero-valid elements is zero-valid.
unsafe impl<T: Zeroable, const N: usize> Zeroable for [T; N] {}
// SAFETY: MaybeUninit accepts any bytes.
unsafe impl<T> Zeroable for MaybeUninit<T> {}

/// A fixed-length slice in a [`NumaRegion`]: `NumaBox<[T]>`.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{NumaBox, Policy, RegionOptions};
///
/// let opts = RegionOptions::new(Policy::FirstTouch);
/// let mut v = NumaBox::<[f64]>::zeroed(1000, opts)?;
/// v[10] = 2.5;
/// assert_eq!(v.iter().sum::<f64>(), 2.5);
/// let squares = NumaBox::<[u64]>::from_fn(5, opts, |i| (i * i) as u64)?;
/// assert_eq!(&squares[..], &[0, 1, 4, 9, 16]);
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub struct NumaBox<T: ?Sized> {
    // Invariant: the region holds `len` initialised elements of the slice
    // type at its start; `ptr` points at that slice.
    region: NumaRegion,
    ptr: NonNull<T>,
}

// SAFETY: owns its elements like Box<[T]>.
unsafe impl<T: ?Sized + Send> Send for NumaBox<T> {}
// SAFETY: shared access only hands out &T.
unsafe impl<T: ?Sized + Sync> Sync for NumaBox<T> {}

fn bytes_for<T>(len: usize) -> Result<usize> {
    let bytes = len
        .checked_mul(mem::size_of::<T>())
        .ok_or(Error::SizeOverflow { count: len, elem_size: mem::size_of::<T>() })?;
    let page_size = crate::sys::page_size();
    if mem::align_of::<T>() > page_size {
        return Err(Error::UnsupportedAlignment { align: mem::align_of::<T>(), page_size });
    }
    if bytes == 0 {
        return Err(Error::ZeroLength);
    }
    Ok(bytes)
}

impl<T> NumaBox<[T]> {
    /// `len` zeroed elements. No page is written, so each is placed when
    /// first touched, by the policy (or the toucher, for first-touch), unless
    /// `options` asks for prefault.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroLength`] for zero bytes, [`Error::SizeOverflow`], and
    /// whatever [`NumaRegion::new`] reports.
    pub fn zeroed(len: usize, options: RegionOptions) -> Result<Self>
    where
        T: Zeroable,
    {
        let region = NumaRegion::new(bytes_for::<T>(len)?, options)?;
        let ptr = slice_ptr(&region, len);
        Ok(Self { region, ptr })
    }

    /// `len` uninitialised (in fact zeroed) elements, to fill and then
    /// [`assume_init`](NumaBox::assume_init).
    ///
    /// # Errors
    ///
    /// As [`NumaBox::zeroed`].
    pub fn new_uninit(len: usize, options: RegionOptions) -> Result<NumaBox<[MaybeUninit<T>]>> {
        NumaBox::<[MaybeUninit<T>]>::zeroed(len, options)
    }

    /// `len` elements, element `i` being `f(i)`, written by the calling thread.
    ///
    /// # Errors
    ///
    /// As [`NumaBox::zeroed`].
    pub fn from_fn(len: usize, options: RegionOptions, mut f: impl FnMut(usize) -> T) -> Result<Self> {
        let mut b = Self::new_uninit(len, options)?;
        // If `f` panics, the written prefix leaks (never dropped twice).
        for (i, slot) in b.iter_mut().enumerate() {
            slot.write(f(i));
        }
        // SAFETY: every element was written above.
        Ok(unsafe { b.assume_init() })
    }

    /// A copy of `src`.
    ///
    /// # Errors
    ///
    /// As [`NumaBox::zeroed`].
    pub fn from_slice(src: &[T], options: RegionOptions) -> Result<Self>
    where
        T: Clone,
    {
        Self::from_fn(src.len(), options, |i| src[i].clone())
    }

    /// Where each page is, according to the kernel.
    ///
    /// # Errors
    ///
    /// [`Error::Sys`] if `move_pages` fails.
    pub fn placement(&self) -> Result<Placement> {
        self.region.placement()
    }

    /// The policy of the whole allocation.
    pub fn policy(&self) -> Policy {
        self.region.policy()
    }

    /// Pages a prefault put outside the policy's nodes because those were
    /// full ([`NumaRegion::spilled_pages`]).
    pub fn spilled_pages(&self) -> usize {
        self.region.spilled_pages()
    }

    /// Gives the allocation a new policy and migrates its pages.
    ///
    /// # Errors
    ///
    /// As [`NumaRegion::rebind`].
    pub fn rebind(&mut self, policy: Policy) -> Result<()> {
        self.region.rebind(policy)
    }

    /// The underlying region (for range policies, as MASA uses).
    pub fn region(&self) -> &NumaRegion {
        &self.region
    }

    /// The underlying region, mutably. Its bytes are the elements.
    pub fn region_mut(&mut self) -> &mut NumaRegion {
        &mut self.region
    }
}

impl<T> NumaBox<[MaybeUninit<T>]> {
    /// Asserts that every element is initialised.
    ///
    /// # Safety
    ///
    /// Every element must have been written.
    pub unsafe fn assume_init(self) -> NumaBox<[T]> {
        let len = self.len();
        let me = mem::ManuallyDrop::new(self);
        // SAFETY: moving the region out of a ManuallyDrop that is never used again.
        let region = unsafe { ptr::read(&me.region) };
        let ptr = slice_ptr(&region, len);
        NumaBox { region, ptr }
    }
}

fn slice_ptr<T>(region: &NumaRegion, len: usize) -> NonNull<[T]> {
    // The region's start is page-aligned, hence aligned for T (checked in bytes_for).
    NonNull::slice_from_raw_parts(NonNull::new(region.as_ptr().cast::<T>()).unwrap_or(NonNull::dangling()), len)
}

impl<T: ?Sized> Deref for NumaBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: type invariant: ptr is an initialised value we own.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: ?Sized> DerefMut for NumaBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in deref, with exclusive access.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T: ?Sized> Drop for NumaBox<T> {
    fn drop(&mut self) {
        // SAFETY: the elements are initialised and owned; the region is
        // unmapped afterwards by its own Drop.
        unsafe { ptr::drop_in_place(self.ptr.as_ptr()) };
    }
}

impl<T: fmt::Debug> fmt::Debug for NumaBox<[T]> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NumaBox").field("len", &self.len()).field("policy", &self.policy()).finish()
    }
}

/// A growable vector whose buffer is a [`NumaRegion`].
///
/// Growing maps a larger region under the same options and moves the
/// elements (so they land where the policy says); capacity grows by doubling.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{NumaVec, Policy, RegionOptions};
///
/// let mut v = NumaVec::new(RegionOptions::new(Policy::FirstTouch));
/// for i in 0..10_000u32 {
///     v.push(i)?;
/// }
/// assert_eq!(v.len(), 10_000);
/// assert_eq!(v[9_999], 9_999);
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub struct NumaVec<T> {
    // Invariant: `len <= cap`; the first `len` slots of `region` are
    // initialised; `region` is None iff `cap == 0`.
    region: Option<NumaRegion>,
    len: usize,
    cap: usize,
    options: RegionOptions,
    _marker: PhantomData<T>,
}

// SAFETY: owns its elements like Vec<T>.
unsafe impl<T: Send> Send for NumaVec<T> {}
// SAFETY: shared access only hands out &T.
unsafe impl<T: Sync> Sync for NumaVec<T> {}

impl<T> NumaVec<T> {
    /// An empty vector; nothing is mapped until the first push.
    pub const fn new(options: RegionOptions) -> Self {
        Self { region: None, len: 0, cap: 0, options, _marker: PhantomData }
    }

    /// An empty vector with room for `cap` elements.
    ///
    /// # Errors
    ///
    /// As [`NumaRegion::new`] (a zero capacity maps nothing and succeeds).
    pub fn with_capacity(cap: usize, options: RegionOptions) -> Result<Self> {
        let mut v = Self::new(options);
        v.reserve(cap)?;
        Ok(v)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Elements that fit without growing.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The policy new buffers are mapped under.
    pub fn policy(&self) -> Policy {
        self.options.policy()
    }

    /// Makes room for `additional` more elements.
    ///
    /// # Errors
    ///
    /// [`Error::SizeOverflow`] and whatever [`NumaRegion::new`] reports; the
    /// vector is unchanged on error.
    pub fn reserve(&mut self, additional: usize) -> Result<()> {
        let need = self
            .len
            .checked_add(additional)
            .ok_or(Error::SizeOverflow { count: usize::MAX, elem_size: mem::size_of::<T>() })?;
        if need <= self.cap {
            return Ok(());
        }
        if mem::size_of::<T>() == 0 {
            self.cap = usize::MAX;
            return Ok(());
        }
        let new_cap = need.max(self.cap.saturating_mul(2)).max(4096 / mem::size_of::<T>().max(1));
        let bytes = bytes_for::<T>(new_cap)?;
        let region = NumaRegion::new(bytes, self.options)?;
        let new_cap = region.mapped_len() / mem::size_of::<T>();
        if let Some(old) = &self.region {
            // SAFETY: both regions are distinct live mappings; the first `len`
            // elements of the old one are initialised and are moved bitwise.
            unsafe { ptr::copy_nonoverlapping(old.as_ptr().cast::<T>(), region.as_ptr().cast::<T>(), self.len) };
        }
        // The old region is unmapped without dropping its (moved) elements.
        self.region = Some(region);
        self.cap = new_cap;
        Ok(())
    }

    /// Appends `value`.
    ///
    /// # Errors
    ///
    /// As [`NumaVec::reserve`]; `value` is dropped on error.
    pub fn push(&mut self, value: T) -> Result<()> {
        if self.len == self.cap {
            self.reserve(1)?;
        }
        // SAFETY: `len < cap`, so the slot is inside the region and uninitialised.
        unsafe { self.base().add(self.len).write(value) };
        self.len += 1;
        Ok(())
    }

    /// Removes and returns the last element.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: slot `len` was initialised and is now outside the live prefix.
        Some(unsafe { self.base().add(self.len).read() })
    }

    /// Appends every element of `iter`.
    ///
    /// # Errors
    ///
    /// As [`NumaVec::push`]; elements appended before the error stay.
    pub fn extend_from_iter(&mut self, iter: impl IntoIterator<Item = T>) -> Result<()> {
        let iter = iter.into_iter();
        self.reserve(iter.size_hint().0)?;
        for v in iter {
            self.push(v)?;
        }
        Ok(())
    }

    /// Drops every element; the buffer stays.
    pub fn clear(&mut self) {
        let len = self.len;
        self.len = 0;
        // SAFETY: the first `len` elements were initialised and are now unreachable.
        unsafe { ptr::drop_in_place(ptr::slice_from_raw_parts_mut(self.base(), len)) };
    }

    /// Where each page of the buffer is (an empty placement when nothing is mapped).
    ///
    /// # Errors
    ///
    /// [`Error::Sys`] if `move_pages` fails.
    pub fn placement(&self) -> Result<Placement> {
        match &self.region {
            Some(r) => r.placement(),
            None => Placement::query(NonNull::<u8>::dangling().as_ptr(), 0, crate::sys::page_size()),
        }
    }

    /// Gives the buffer (and later buffers) a new policy, migrating pages.
    ///
    /// # Errors
    ///
    /// As [`NumaRegion::rebind`].
    pub fn rebind(&mut self, policy: Policy) -> Result<()> {
        if let Some(r) = &mut self.region {
            r.rebind(policy)?;
        }
        self.options = RegionOptions::new(policy).prefault(self.options.prefaults());
        Ok(())
    }

    fn base(&self) -> *mut T {
        match &self.region {
            Some(r) => r.as_ptr().cast(),
            None => NonNull::dangling().as_ptr(),
        }
    }
}

impl<T> Deref for NumaVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: type invariant: `len` initialised elements at `base`
        // (dangling and len 0 when nothing is mapped).
        unsafe { core::slice::from_raw_parts(self.base(), self.len) }
    }
}

impl<T> DerefMut for NumaVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in deref, with exclusive access.
        unsafe { core::slice::from_raw_parts_mut(self.base(), self.len) }
    }
}

impl<T> Drop for NumaVec<T> {
    fn drop(&mut self) {
        self.clear();
    }
}

impl<T: fmt::Debug> fmt::Debug for NumaVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NumaVec")
            .field("len", &self.len)
            .field("capacity", &self.cap)
            .field("policy", &self.policy())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn boxes_drop_their_elements() {
        let counter = Rc::new(());
        {
            let b = NumaBox::<[Rc<()>]>::from_fn(100, RegionOptions::default(), |_| counter.clone()).unwrap();
            assert_eq!(Rc::strong_count(&counter), 101);
            assert_eq!(b.len(), 100);
        }
        assert_eq!(Rc::strong_count(&counter), 1);
    }

    #[test]
    fn vec_grows_and_keeps_contents() {
        let counter = Rc::new(());
        let mut v = NumaVec::new(RegionOptions::default());
        for _ in 0..5000 {
            v.push(counter.clone()).unwrap();
        }
        assert!(v.capacity() >= 5000);
        assert_eq!(Rc::strong_count(&counter), 5001);
        drop(v.pop());
        assert_eq!(Rc::strong_count(&counter), 5000);
        drop(v);
        assert_eq!(Rc::strong_count(&counter), 1);

        let mut w = NumaVec::with_capacity(3, RegionOptions::default()).unwrap();
        w.extend_from_iter(0..100_000u64).unwrap();
        assert!(w.iter().copied().eq(0..100_000u64));
        assert_eq!(w.placement().unwrap().not_resident(), 0);
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert_eq!(NumaBox::<[u64]>::zeroed(0, RegionOptions::default()).unwrap_err(), Error::ZeroLength);
        assert!(matches!(
            NumaBox::<[u64]>::zeroed(usize::MAX / 4, RegionOptions::default()),
            Err(Error::SizeOverflow { .. })
        ));
        let mut v = NumaVec::<u64>::new(RegionOptions::default());
        assert!(matches!(v.reserve(usize::MAX / 2), Err(Error::SizeOverflow { .. })));
        assert!(v.is_empty());
        assert_eq!(v.placement().unwrap().pages().len(), 0);
    }

    #[test]
    fn zeroed_box_is_lazily_placed() {
        let b = NumaBox::<[u64]>::zeroed(4096, RegionOptions::default()).unwrap();
        assert_eq!(b.placement().unwrap().not_resident(), 8);
        assert!(b.iter().all(|&x| x == 0));
    }
}
