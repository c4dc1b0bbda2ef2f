//! [`Array`]: one type over the four implementations, with element access
//! and the slice views hot loops use.

use core::fmt;
use core::marker::PhantomData;

use skelaff_numa_alloc::{Placement, Zeroable};

use crate::error::{Error, Result};
use crate::hints::Implementation;
use crate::partition::{Partition, PartsMut};
use crate::select::Selection;
use crate::storage::{CopyPlan, MemoryUse, Storage};

/// What an array may hold: plain values valid when all bytes are zero (a
/// fresh mapping is a valid array), that copy bit for bit (replicas and bulk
/// copies duplicate them with `memcpy`) and that threads may share.
///
/// Types with drop glue (`String`, `Vec<T>`, `Box<T>`) are not `Copy` and
/// so are refused at compile time: a replica holding a bitwise copy of a
/// `String` would free its buffer twice.
///
/// ```compile_fail
/// // A `String` has drop glue; copying it bitwise into replicas would be unsound.
/// let _ = skelaff_arrays::Array::<String>::builder(4).build();
/// ```
pub trait Element: Zeroable + Copy + Send + Sync + 'static {}

impl<T: Zeroable + Copy + Send + Sync + 'static> Element for T {}

/// A NUMA array: single-node, distributed, replicated or partitioned,
/// chosen at allocation from access hints (see
/// [`ArrayBuilder`](crate::ArrayBuilder)), with the same interface
/// whichever it is.
///
/// - [`get`](Self::get) / [`set`](Self::set): element access. On a
///   replicated array `get` reads the calling thread's node's replica and
///   `set` writes every replica.
/// - [`as_slice`](Self::as_slice): the elements as `&[T]`, from the copy
///   nearest the calling thread; take it once outside a hot loop and the
///   loop is a plain slice loop.
/// - [`as_mut_slice`](Self::as_mut_slice) and [`parts_mut`](Self::parts_mut):
///   the master copy, mutably (all of it, or one range per thread of a
///   partition). For a replicated array, writes there reach the other
///   replicas at [`repl_sync`](Self::repl_sync); until then every reader
///   reads the master, so reads always see the writes, and are local again
///   once the replicas have them.
/// - Bulk operations (`fill`, `init_from`, `copy_from`, `repl_sync`) run on
///   the copy team and the caller, or asynchronously (the `_async` forms).
///
/// Every page is mapped at allocation on the node the implementation puts
/// it on; no later first touch decides anything.
///
/// # Examples
///
/// ```
/// use skelaff_arrays::{AccessHints, AccessPattern, Array, Implementation};
///
/// let data: Vec<u32> = (0..10_000).collect();
/// // Read-only and small: replicated, one copy per node.
/// let mut a = Array::<u32>::builder(data.len())
///     .hints(AccessHints::new().read_only().pattern(AccessPattern::Sequential))
///     .build()?;
/// a.init_from(&data)?;
/// assert_eq!(a.implementation(), Implementation::Replicated);
/// println!("{}", a.selection()); // which implementation, and why
/// assert_eq!(a.get(1234), Some(1234));
/// let sum: u64 = a.as_slice().iter().map(|&x| x as u64).sum();
/// assert_eq!(sum, 9999 * 10_000 / 2);
/// # Ok::<(), skelaff_arrays::Error>(())
/// ```
pub struct Array<T: Element> {
    // Invariant: every region of `storage` holds `len` initialised `T`s at
    // its start (zero bytes are valid `T`s); replicas are distinct regions.
    pub(crate) storage: Storage,
    pub(crate) len: usize,
    pub(crate) selection: Selection,
    /// The master holds writes (through `as_mut_slice`/`parts_mut`) that
    /// the other replicas have not got yet: reads go to the master.
    pub(crate) master_ahead: bool,
    pub(crate) _elem: PhantomData<T>,
}

impl<T: Element> Array<T> {
    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: arrays have at least one element.
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The implementation the array got.
    pub fn implementation(&self) -> Implementation {
        self.selection.implementation
    }

    /// What was chosen and why (implementation and pages).
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// A partitioned array's partition: the thread ranges to iterate so
    /// that every thread works on its own node's elements.
    pub fn partition(&self) -> Option<&Partition> {
        self.storage.partition.as_ref()
    }

    /// The nodes holding a replica, replica 0 (the master) first; empty
    /// unless replicated.
    pub fn replica_nodes(&self) -> &[usize] {
        &self.storage.replica_nodes
    }

    /// Element `i`, from the copy [`as_slice`](Self::as_slice) reads; `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<T> {
        if i < self.len {
            // SAFETY: `i < len` and the copy holds `len` initialised elements.
            Some(unsafe { *self.read_ptr().add(i) })
        } else {
            None
        }
    }

    /// Sets element `i` (in every replica of a replicated array).
    ///
    /// # Errors
    ///
    /// [`Error::IndexOutOfBounds`] past the end.
    #[inline]
    pub fn set(&mut self, i: usize, value: T) -> Result<()> {
        if i >= self.len {
            return Err(Error::IndexOutOfBounds { index: i, len: self.len });
        }
        for r in 0..self.storage.regions.len() {
            // SAFETY: `i < len`; `&mut self` gives exclusive access.
            unsafe { self.copy_ptr(r).add(i).write(value) };
        }
        Ok(())
    }

    /// The elements, from the copy nearest the calling thread (its own
    /// node's replica, for a replicated array; the master while it holds
    /// writes not yet propagated by [`repl_sync`](Self::repl_sync)).
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the copy holds `len` initialised elements; no `&mut` to
        // them can exist while `&self` is borrowed.
        unsafe { core::slice::from_raw_parts(self.read_ptr(), self.len) }
    }

    /// The master copy, mutably: the only copy unless replicated; for a
    /// replicated array, replica 0, whose changes reach the other replicas
    /// at [`repl_sync`](Self::repl_sync) (until then, reads come from the
    /// master).
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.master_ahead = self.copies() > 1;
        // SAFETY: as in `as_slice`, exclusive through `&mut self`.
        unsafe { core::slice::from_raw_parts_mut(self.copy_ptr(0), self.len) }
    }

    /// The replica on `node`, if the array is replicated and has one there.
    pub fn replica(&self, node: usize) -> Option<&[T]> {
        let r = self.storage.replica_nodes.iter().position(|&n| n == node)?;
        // SAFETY: as in `as_slice`.
        Some(unsafe { core::slice::from_raw_parts(self.copy_ptr(r), self.len) })
    }

    /// The master copy split into one mutable range per thread of
    /// `partition`, for a parallel loop whose threads take their own.
    ///
    /// # Errors
    ///
    /// [`Error::PartitionLength`] if the partition is for another length.
    pub fn parts_mut(&mut self, partition: &Partition) -> Result<PartsMut<'_, T>> {
        PartsMut::new(self.as_mut_slice(), partition)
    }

    /// Where each copy's pages should be (one plan, or one per replica).
    pub fn plans(&self) -> &[CopyPlan] {
        &self.storage.plans
    }

    /// Where each copy's pages are, according to the kernel.
    ///
    /// # Errors
    ///
    /// [`Error::Numa`] if `move_pages` fails.
    pub fn placement(&self) -> Result<Vec<Placement>> {
        self.storage.plans.iter().map(CopyPlan::placement).collect()
    }

    /// The memory the array holds on each node (all copies).
    pub fn memory(&self) -> MemoryUse {
        self.storage.memory()
    }

    /// Bytes of one copy (elements only, without page rounding).
    pub fn bytes(&self) -> usize {
        self.len * core::mem::size_of::<T>()
    }

    #[inline]
    pub(crate) fn read_ptr(&self) -> *const T {
        self.copy_ptr(self.read_copy(crate::home::home_node()))
    }

    /// The copy a reader on `node` reads: its replica, or the master while
    /// the master is ahead (or the array is not replicated).
    #[inline]
    pub(crate) fn read_copy(&self, node: usize) -> usize {
        if self.storage.by_node.is_empty() || self.master_ahead { 0 } else { self.storage.replica_for(node) }
    }

    /// The first element of copy `r`.
    #[inline]
    pub(crate) fn copy_ptr(&self, r: usize) -> *mut T {
        self.storage.regions[r].as_ptr().cast()
    }

    /// Number of copies (1, or the number of replicas).
    pub(crate) fn copies(&self) -> usize {
        self.storage.regions.len()
    }
}

impl<T: Element> fmt::Debug for Array<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Array")
            .field("len", &self.len)
            .field("implementation", &self.selection.implementation)
            .field("pages", &self.selection.pages)
            .field("storage", &self.storage)
            .finish()
    }
}
