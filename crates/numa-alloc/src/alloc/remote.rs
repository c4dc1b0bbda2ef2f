//! Remote frees: blocks a thread frees into spans it does not own travel
//! back in batches, keyed by span. A full batch (or one evicted by another
//! span) travels in one step: a single compare-and-swap onto the owning
//! thread's `thread_free` chain, or, for a span no thread owns, a splice
//! under its arena's lock.

use core::ptr;
use core::sync::atomic::Ordering;

use super::arena;
use super::chunk::{Block, OWNED, Span};
use super::stats::Counters;

/// Batch slots per thread.
const SLOTS: usize = 16;
/// A batch travels when it holds this many blocks.
const BATCH_MAX: u32 = 64;

/// Blocks of one span waiting to travel back: `head..=tail`, `count` of them.
#[derive(Clone, Copy)]
struct Batch {
    span: *mut Span,
    head: *mut Block,
    tail: *mut Block,
    count: u32,
}

const NO_BATCH: Batch = Batch { span: ptr::null_mut(), head: ptr::null_mut(), tail: ptr::null_mut(), count: 0 };

/// A thread's batches, one slot per hash of the span.
///
/// Invariant: a batch holds blocks that are out of its span (counted in its
/// `used`), which keeps the span live; only the thread that owns the
/// batches touches them.
pub(crate) struct RemoteFrees {
    batch: [Batch; SLOTS],
}

impl RemoteFrees {
    pub(crate) const NEW: RemoteFrees = RemoteFrees { batch: [NO_BATCH; SLOTS] };

    /// Adds block `b` of `span` to its batch; a batch that fills, or that
    /// held another span's blocks in the same slot, travels.
    ///
    /// # Safety
    ///
    /// `b` is a live block of `span` that the caller gives up.
    pub(crate) unsafe fn push(&mut self, span: *mut Span, b: *mut Block, stats: &Counters) {
        let slot = ((span as usize >> 6) ^ (span as usize >> 21)) % SLOTS;
        let bt = &mut self.batch[slot];
        // SAFETY: batches hold blocks of their span, which stays live while
        // they are out; the block is ours to link.
        unsafe {
            if bt.span == span {
                (*b).next = bt.head;
                bt.head = b;
                bt.count += 1;
                if bt.count >= BATCH_MAX {
                    let full = core::mem::replace(bt, NO_BATCH);
                    hand_back(full.span, full.head, full.tail, full.count, stats);
                }
                return;
            }
            let old = core::mem::replace(bt, Batch { span, head: b, tail: b, count: 1 });
            (*b).next = ptr::null_mut();
            if !old.span.is_null() {
                hand_back(old.span, old.head, old.tail, old.count, stats);
            }
        }
    }

    /// Sends every pending batch back.
    pub(crate) fn flush(&mut self, stats: &Counters) {
        for i in 0..SLOTS {
            let b = core::mem::replace(&mut self.batch[i], NO_BATCH);
            if !b.span.is_null() {
                // SAFETY: a pending batch of its span's blocks (invariant).
                unsafe { hand_back(b.span, b.head, b.tail, b.count, stats) };
            }
        }
    }
}

/// Hands a chain of `count` blocks of `span` back: onto the owner's
/// `thread_free` if some thread owns the span, else to its arena.
///
/// # Safety
///
/// The blocks belong to `span` and are out; the caller gives them up.
pub(crate) unsafe fn hand_back(span: *mut Span, head: *mut Block, tail: *mut Block, count: u32, stats: &Counters) {
    loop {
        // SAFETY: the span is live while these blocks are out.
        let cur = unsafe { (*span).thread_free.load(Ordering::Relaxed) };
        if cur & OWNED != 0 {
            // SAFETY: the chain is ours until the CAS publishes it.
            unsafe { (*tail).next = (cur & !OWNED) as *mut Block };
            let new = head as usize | OWNED;
            // SAFETY: as above.
            let swapped = unsafe {
                (*span).thread_free.compare_exchange_weak(cur, new, Ordering::Release, Ordering::Relaxed).is_ok()
            };
            if swapped {
                stats.remote_frees.fetch_add(count as u64, Ordering::Relaxed);
                stats.remote_flushes.fetch_add(1, Ordering::Relaxed);
                return;
            }
        } else {
            // SAFETY: per the contract.
            if unsafe { arena::return_blocks(span, head, tail, count, stats) } {
                stats.deferred_frees.fetch_add(count as u64, Ordering::Relaxed);
                return;
            }
        }
    }
}
