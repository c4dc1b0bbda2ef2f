//! Transactional collections, generic over [`TxOps`](crate::TxOps): the
//! same code runs in a real transaction and in a speculative shadow.
//!
//! | type | structure | like |
//! |---|---|---|
//! | [`TMap`] | ordered map, red-black tree with parent links | STAMP's `rbtree` |
//! | [`TBTreeMap`] | ordered map, copy-on-write B+tree (16 keys a node) | read-mostly maps |
//! | [`THashMap`] | hash map, fixed power-of-two bucket array of chains | TinySTM intset `hs` |
//! | [`TList`] | ordered map, sorted singly linked list | TinySTM intset `ll` |
//! | [`TSkipMap`] | ordered map, skip list (up to 32 levels, probability 1/2) | TinySTM intset `sl` |
//! | [`TQueue`] | FIFO queue, linked, head and tail | STAMP's `queue` |
//!
//! Keys are immutable in every node (keys are stored plainly and nodes are
//! relinked, never rekeyed; the B+tree copies a node it changes), so a
//! search reads only the links transactionally; values that can change
//! live in a [`TVar`].
//! Nodes are allocated with [`TxOps::alloc`](crate::TxOps::alloc) and freed
//! with [`TxOps::free`](crate::TxOps::free), so an aborted insert leaves no
//! garbage and a removed node is reclaimed only when no transaction can
//! still be reading it. Dropping a collection (exclusive access) frees its
//! nodes at once.
//!
//! None of them keeps a size counter: it would make every pair of updates
//! conflict. `len` walks the structure.

mod btree;
mod hash;
mod list;
mod map;
#[cfg(test)]
mod ordered_tests;
mod queue;
mod skiplist;

pub use btree::TBTreeMap;
pub use hash::{FxBuildHasher, FxHasher, THashMap};
pub use list::TList;
pub use map::TMap;
pub use queue::TQueue;
pub use skiplist::TSkipMap;

use crate::tvar::TVar;
use crate::word::TPtr;

/// A transactional link to a node.
type Link<N> = TVar<Option<TPtr<N>>>;

/// The node behind `p`.
///
/// # Safety
///
/// `p` was read from a link (or allocated) by the transaction running now
/// and the reference is not used after it ends, or the caller has exclusive
/// access to the collection (see [`TPtr::get`]).
#[inline(always)]
unsafe fn node<'a, N>(p: TPtr<N>) -> &'a N {
    // SAFETY: forwarded to the caller.
    unsafe { p.get() }
}
