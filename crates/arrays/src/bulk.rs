//! Bulk operations with relaxed ordering: `fill`, `init_from`, `copy_from`
//! and `repl_sync`, in parallel on the copy team and the caller, or
//! asynchronously on the team alone with a [`Pending`] handle.
//!
//! The order in which elements are written is unspecified (the paper's
//! relaxed consistency); all of them are written when the call returns or
//! the handle has been waited on.
//!
//! An asynchronous operation takes the array by value and gives it back
//! from [`Pending::wait`], and holds its source (an `Arc<Array<T>>` or an
//! owned slice) until the copy is done, so nothing can read or free memory
//! the team is still writing. **Dropping a `Pending` without waiting blocks
//! until the operation is done, then frees the array and releases the
//! source**: it neither leaks nor frees memory in use. (`mem::forget` on a
//! `Pending` leaks the array and the source, which stay valid for the team.)

use core::fmt;
use core::mem::{MaybeUninit, size_of};
use core::ops::Range;
use std::any::Any;
use std::sync::Arc;

use crate::array::{Array, Element};
use crate::copy_team::{self, CHUNK_BYTES, Chunk, Job, Op};
use crate::error::{Error, Result};

/// Writes the `T` at `value` over `bytes` bytes at `dst`.
///
/// # Safety
///
/// `dst` is aligned for `T` and valid for writes of `bytes` bytes, a
/// multiple of `size_of::<T>()`; `value` points at a `T` (any alignment).
unsafe fn fill_with<T: Copy>(dst: *mut u8, bytes: usize, value: *const MaybeUninit<u8>) {
    // SAFETY: the caller's promises, verbatim.
    unsafe {
        let v = value.cast::<T>().read_unaligned();
        core::slice::from_raw_parts_mut(dst.cast::<T>(), bytes / size_of::<T>()).fill(v);
    }
}

/// The chunks covering copies `copies` of `a`, tagged with the node of
/// each chunk's first page; `src(node)` gives the source copy to read for a
/// destination on `node` (null for operations without a source).
fn chunks<T: Element>(a: &Array<T>, copies: Range<usize>, src: impl Fn(usize) -> *const u8) -> Vec<(usize, Chunk)> {
    let bytes = a.bytes();
    let step = (CHUNK_BYTES / size_of::<T>()).max(1) * size_of::<T>();
    let mut out = Vec::new();
    for r in copies {
        let plan = &a.plans()[r];
        let base = a.copy_ptr(r).cast::<u8>();
        let mut off = 0;
        while off < bytes {
            let len = step.min(bytes - off);
            let node = plan.node_of_page(off / plan.page_size);
            let s = src(node);
            let s = if s.is_null() { s } else { s.wrapping_add(off) };
            out.push((node, Chunk { dst: base.wrapping_add(off), src: s, len }));
            off += len;
        }
    }
    out
}

fn fill_op<T: Element>(value: T) -> Op {
    // The bytes of `value`, padding included, kept as `MaybeUninit` (padding
    // is uninitialised) and only ever read back as a whole `T`.
    let mut bytes: Box<[MaybeUninit<u8>]> = vec![MaybeUninit::uninit(); size_of::<T>()].into_boxed_slice();
    // SAFETY: `bytes` has room for a `T`; an unaligned write is allowed.
    unsafe { bytes.as_mut_ptr().cast::<T>().write_unaligned(value) };
    Op::Fill { value: bytes, fill: fill_with::<T> }
}

fn check_len(operation: &'static str, source_len: usize, array_len: usize) -> Result<()> {
    if source_len == array_len { Ok(()) } else { Err(Error::LengthMismatch { operation, source_len, array_len }) }
}

impl<T: Element> Array<T> {
    /// Sets every element (of every replica) to `value`, in parallel.
    pub fn fill(&mut self, value: T) {
        let tagged = chunks(self, 0..self.copies(), |_| core::ptr::null());
        // SAFETY: the chunks are disjoint ranges of this array's copies,
        // exclusively borrowed until `run_sync` returns; `fill_with::<T>`
        // fits them (element-aligned, whole elements).
        copy_team::run_sync(unsafe { Job::new(fill_op(value), tagged) });
        self.master_ahead = false;
    }

    /// Copies `src` into the array (into every replica), in parallel.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] unless `src.len() == self.len()`.
    pub fn init_from(&mut self, src: &[T]) -> Result<()> {
        check_len("init_from", src.len(), self.len)?;
        let p = src.as_ptr().cast::<u8>();
        let tagged = chunks(self, 0..self.copies(), |_| p);
        // SAFETY: destinations as in `fill`; the source is borrowed
        // shared (so unchanged) until `run_sync` returns, and is a
        // different allocation from the destination.
        copy_team::run_sync(unsafe { Job::new(Op::Copy, tagged) });
        self.master_ahead = false;
        Ok(())
    }

    /// Copies `src` into the array, in parallel. Each destination chunk
    /// reads the source copy nearest to it (a replicated source's replica
    /// on the destination's node).
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] unless the lengths are equal.
    pub fn copy_from(&mut self, src: &Array<T>) -> Result<()> {
        check_len("copy_from", src.len, self.len)?;
        let tagged = chunks(self, 0..self.copies(), |node| source_for(src, node));
        // SAFETY: destinations as in `fill`; `src` is borrowed shared until
        // `run_sync` returns and cannot be `self` (which is borrowed mutably).
        copy_team::run_sync(unsafe { Job::new(Op::Copy, tagged) });
        self.master_ahead = false;
        Ok(())
    }

    /// Propagates the master copy (written through
    /// [`as_mut_slice`](Self::as_mut_slice) or [`parts_mut`](Self::parts_mut))
    /// to every other replica, in parallel: the paper's `shl__repl_sync`.
    /// A no-op unless replicated.
    pub fn repl_sync(&mut self) {
        let master = self.copy_ptr(0).cast::<u8>().cast_const();
        let tagged = chunks(self, 1..self.copies(), |_| master);
        // SAFETY: destinations are replicas 1.., exclusively borrowed; the
        // source is replica 0, a different region, unchanged meanwhile.
        copy_team::run_sync(unsafe { Job::new(Op::Copy, tagged) });
        self.master_ahead = false;
    }

    /// [`fill`](Self::fill) on the copy team, returning at once.
    pub fn fill_async(mut self, value: T) -> Pending<T> {
        let tagged = chunks(&self, 0..self.copies(), |_| core::ptr::null());
        // SAFETY: the array moves into the `Pending`, which gives no access
        // to it before the job is done and outlives the job (its drop waits).
        let job = copy_team::run_async(unsafe { Job::new(fill_op(value), tagged) });
        self.master_ahead = false;
        Pending { job, array: Some(self), _source: None }
    }

    /// [`init_from`](Self::init_from) on the copy team, returning at once;
    /// the handle owns `src` until the copy is done.
    ///
    /// # Errors
    ///
    /// [`Rejected`] (with the array) unless the lengths are equal.
    pub fn init_from_async<S>(mut self, src: S) -> Result<Pending<T>, Rejected<T>>
    where
        S: AsRef<[T]> + Send + 'static,
    {
        let src: Box<S> = Box::new(src);
        let slice = (*src).as_ref();
        if let Err(error) = check_len("init_from", slice.len(), self.len) {
            return Err(Rejected { error, array: Box::new(self) });
        }
        let p = slice.as_ptr().cast::<u8>();
        let tagged = chunks(&self, 0..self.copies(), |_| p);
        // SAFETY: destinations as in `fill_async`; the source lives in the
        // box, which the `Pending` keeps (unmoved on the heap, no one else
        // holding it) until the job is done.
        let job = copy_team::run_async(unsafe { Job::new(Op::Copy, tagged) });
        self.master_ahead = false;
        Ok(Pending { job, array: Some(self), _source: Some(src) })
    }

    /// [`copy_from`](Self::copy_from) on the copy team, returning at once;
    /// the handle holds `src` until the copy is done, so it cannot change
    /// meanwhile (`Arc::get_mut` fails while the handle lives).
    ///
    /// # Errors
    ///
    /// [`Rejected`] (with the array) unless the lengths are equal.
    pub fn copy_from_async(mut self, src: Arc<Array<T>>) -> Result<Pending<T>, Rejected<T>> {
        if let Err(error) = check_len("copy_from", src.len, self.len) {
            return Err(Rejected { error, array: Box::new(self) });
        }
        let tagged = chunks(&self, 0..self.copies(), |node| source_for(&src, node));
        // SAFETY: destinations as in `fill_async`; the source array is kept
        // alive and shared-only by the `Arc` the `Pending` holds.
        let job = copy_team::run_async(unsafe { Job::new(Op::Copy, tagged) });
        self.master_ahead = false;
        Ok(Pending { job, array: Some(self), _source: Some(Box::new(src)) })
    }

    /// [`repl_sync`](Self::repl_sync) on the copy team, returning at once.
    pub fn repl_sync_async(mut self) -> Pending<T> {
        let master = self.copy_ptr(0).cast::<u8>().cast_const();
        let tagged = chunks(&self, 1..self.copies(), |_| master);
        // SAFETY: as in `repl_sync`, with the array owned by the `Pending`.
        let job = copy_team::run_async(unsafe { Job::new(Op::Copy, tagged) });
        self.master_ahead = false;
        Pending { job, array: Some(self), _source: None }
    }
}

/// The copy of `src` to read for a destination on `node`.
fn source_for<T: Element>(src: &Array<T>, node: usize) -> *const u8 {
    src.copy_ptr(src.read_copy(node)).cast::<u8>().cast_const()
}

/// An asynchronous bulk operation in flight, owning its array (and source)
/// until it is done. See the [module docs](self) for what dropping it does.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use skelaff_arrays::Array;
///
/// let src = Arc::new(Array::<u64>::builder(1 << 20).build_from(&vec![7; 1 << 20])?);
/// let dst = Array::<u64>::builder(1 << 20).build()?;
/// let pending = dst.copy_from_async(src.clone())?;
/// // ... other work overlaps the copy ...
/// let dst = pending.wait();
/// assert!(dst.as_slice().iter().all(|&x| x == 7));
/// assert_eq!(Arc::strong_count(&src), 1, "the source is released once done");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a Pending blocks until the operation is done, then frees the array"]
pub struct Pending<T: Element> {
    job: Arc<Job>,
    // Invariant: `Some` until `wait` takes it.
    array: Option<Array<T>>,
    _source: Option<Box<dyn Any + Send>>,
}

impl<T: Element> Pending<T> {
    /// Whether the operation is done (then [`wait`](Self::wait) returns at once).
    pub fn is_done(&self) -> bool {
        self.job.is_done()
    }

    /// Blocks until the operation is done and returns the array, every
    /// element written.
    pub fn wait(mut self) -> Array<T> {
        self.job.wait();
        self.array.take().expect("a Pending holds its array until `wait`")
    }
}

impl<T: Element> Drop for Pending<T> {
    fn drop(&mut self) {
        // The team may still be writing the array and reading the source:
        // they are freed (as fields, after this) only once it is done.
        self.job.wait();
    }
}

impl<T: Element> fmt::Debug for Pending<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending").field("done", &self.is_done()).field("array", &self.array).finish()
    }
}

/// An asynchronous operation refused before it started: why, and the array back.
pub struct Rejected<T: Element> {
    /// Why.
    pub error: Error,
    /// The array, unchanged.
    pub array: Box<Array<T>>,
}

impl<T: Element> fmt::Debug for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected").field("error", &self.error).finish()
    }
}

impl<T: Element> fmt::Display for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl<T: Element> std::error::Error for Rejected<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

#[cfg(test)]
mod tests;
