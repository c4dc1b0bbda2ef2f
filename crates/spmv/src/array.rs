//! The storage behind matrices and vectors: a heap vector, or a page-aligned
//! NUMA array whose pages MASA can bind chunk by chunk.

use core::fmt;
use core::ops::{Deref, DerefMut};

use skelaff_numa_alloc::{NumaBox, NumaRegion, Placement, Policy, RegionOptions, Zeroable};

use crate::error::Result;

/// A shared array of a sparse computation (the paper's "shared array"):
/// either an ordinary heap vector or a [`NumaBox`] whose pages follow
/// per-chunk policies.
///
/// Empty arrays are always on the heap: they have no pages to place.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{Policy, RegionOptions};
/// use skelaff_spmv::SharedArray;
///
/// let heap = SharedArray::from(vec![1.0, 2.0]);
/// assert!(heap.region().is_none());
/// let numa = SharedArray::numa_from_slice(&[1.0, 2.0], RegionOptions::new(Policy::FirstTouch))?;
/// assert_eq!(&numa[..], &heap[..]);
/// assert_eq!(numa.region().unwrap().as_ptr() as usize % 4096, 0);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub enum SharedArray<T> {
    /// Ordinary heap memory.
    Heap(Vec<T>),
    /// A page-aligned NUMA allocation.
    Numa(NumaBox<[T]>),
}

impl<T> SharedArray<T> {
    /// `len` zeroed elements in a page-aligned NUMA allocation (heap when
    /// `len` is 0). Pages are placed when first touched unless `options`
    /// prefault them.
    ///
    /// # Errors
    ///
    /// Whatever the NUMA allocation reports (a policy naming a node that
    /// does not exist, `mmap` failing).
    pub fn numa_zeroed(len: usize, options: RegionOptions) -> Result<Self>
    where
        T: Zeroable,
    {
        if len == 0 {
            return Ok(SharedArray::Heap(Vec::new()));
        }
        Ok(SharedArray::Numa(NumaBox::zeroed(len, options)?))
    }

    /// A page-aligned NUMA copy of `src`, written by the calling thread.
    ///
    /// # Errors
    ///
    /// As [`SharedArray::numa_zeroed`].
    pub fn numa_from_slice(src: &[T], options: RegionOptions) -> Result<Self>
    where
        T: Clone,
    {
        if src.is_empty() {
            return Ok(SharedArray::Heap(Vec::new()));
        }
        Ok(SharedArray::Numa(NumaBox::from_slice(src, options)?))
    }

    /// The NUMA region behind the array, if it has one.
    pub fn region(&self) -> Option<&NumaRegion> {
        match self {
            SharedArray::Heap(_) => None,
            SharedArray::Numa(b) => Some(b.region()),
        }
    }

    /// The NUMA region behind the array, mutably (to apply range policies).
    pub fn region_mut(&mut self) -> Option<&mut NumaRegion> {
        match self {
            SharedArray::Heap(_) => None,
            SharedArray::Numa(b) => Some(b.region_mut()),
        }
    }

    /// Where the kernel put each page (`None` for heap arrays).
    ///
    /// # Errors
    ///
    /// When `move_pages` fails.
    pub fn placement(&self) -> Result<Option<Placement>> {
        Ok(match self.region() {
            Some(r) => Some(r.placement()?),
            None => None,
        })
    }

    /// The policy of the whole allocation (`None` for heap arrays).
    pub fn policy(&self) -> Option<Policy> {
        self.region().map(NumaRegion::policy)
    }
}

impl<T> From<Vec<T>> for SharedArray<T> {
    fn from(v: Vec<T>) -> Self {
        SharedArray::Heap(v)
    }
}

impl<T> Deref for SharedArray<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            SharedArray::Heap(v) => v,
            SharedArray::Numa(b) => b,
        }
    }
}

impl<T> DerefMut for SharedArray<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            SharedArray::Heap(v) => v,
            SharedArray::Numa(b) => b,
        }
    }
}

impl<T: Clone> Clone for SharedArray<T> {
    /// Clones onto the heap (a NUMA array's placement is not copied).
    fn clone(&self) -> Self {
        SharedArray::Heap(self.to_vec())
    }
}

impl<T: fmt::Debug> fmt::Debug for SharedArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SharedArray::Heap(v) => f.debug_struct("SharedArray::Heap").field("len", &v.len()).finish(),
            SharedArray::Numa(b) => {
                f.debug_struct("SharedArray::Numa").field("len", &b.len()).field("policy", &b.policy()).finish()
            }
        }
    }
}

impl<T: PartialEq> PartialEq for SharedArray<T> {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}
