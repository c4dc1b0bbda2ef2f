//! [`SharedMut`]: a mutable slice that the threads of one team job write
//! in disjoint parts, in phases separated by barriers.

use core::fmt;
use core::marker::PhantomData;
use core::ops::Range;

/// A slice that the threads of a team write in disjoint parts, in phases
/// separated by barriers.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{SharedMut, Team};
///
/// let team = Team::with_threads(2)?;
/// let mut v = vec![0usize; 10];
/// let shared = SharedMut::new(&mut v);
/// team.run(|ctx| {
///     let r = if ctx.index() == 0 { 0..5 } else { 5..10 };
///     // SAFETY: the two threads write disjoint halves; nobody reads.
///     let part = unsafe { shared.range_mut(r.clone()) };
///     part.iter_mut().zip(r).for_each(|(x, i)| *x = i * i);
/// });
/// assert_eq!(v[9], 81);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct SharedMut<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a `SharedMut` is a `&mut [T]` whose users promise (through the
// unsafe methods) not to create overlapping references; sending or sharing
// it is then like sending parts of the slice, which needs `T: Send`.
unsafe impl<T: Send> Send for SharedMut<'_, T> {}
// SAFETY: as above; shared views require `T: Sync` as well.
unsafe impl<T: Send + Sync> Sync for SharedMut<'_, T> {}

impl<'a, T> SharedMut<'a, T> {
    /// Wraps `s` for the duration of the borrow.
    pub fn new(s: &'a mut [T]) -> Self {
        SharedMut { ptr: s.as_mut_ptr(), len: s.len(), _borrow: PhantomData }
    }

    /// Length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements in `r`, mutably.
    ///
    /// # Safety
    ///
    /// While the returned slice lives, no other reference (shared or
    /// mutable, from any thread) to an element of `r` may exist.
    ///
    /// # Panics
    ///
    /// If `r` is not inside the slice.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn range_mut(&self, r: Range<usize>) -> &mut [T] {
        assert!(r.start <= r.end && r.end <= self.len, "range {r:?} outside a slice of {}", self.len);
        // SAFETY: in bounds (checked); exclusivity is the caller's promise.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.add(r.start), r.end - r.start) }
    }

    /// The elements in `r`, shared.
    ///
    /// # Safety
    ///
    /// While the returned slice lives, no thread may hold a mutable
    /// reference to an element of `r`.
    ///
    /// # Panics
    ///
    /// If `r` is not inside the slice.
    pub unsafe fn range(&self, r: Range<usize>) -> &[T] {
        assert!(r.start <= r.end && r.end <= self.len, "range {r:?} outside a slice of {}", self.len);
        // SAFETY: in bounds (checked); absence of writers is the caller's promise.
        unsafe { core::slice::from_raw_parts(self.ptr.add(r.start), r.end - r.start) }
    }

    /// The whole slice, shared.
    ///
    /// # Safety
    ///
    /// While the returned slice lives, no thread may hold a mutable
    /// reference to any element (no `range_mut` result may be alive).
    pub unsafe fn as_slice(&self) -> &[T] {
        // SAFETY: the pointer and length come from a live `&mut [T]`;
        // absence of writers is the caller's promise.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> fmt::Debug for SharedMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedMut").field("len", &self.len).finish()
    }
}
