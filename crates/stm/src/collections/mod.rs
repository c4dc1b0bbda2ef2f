//! Transactional collections, generic over [`TxOps`](crate::TxOps): the
//! same code runs in a real transaction and in a speculative shadow.
//!
//! | type | structure | like |
//! |---|---|---|
//! | [`TMap`] | ordered map, red-black tree with parent links | STAMP's `rbtree` |
//! | [`TBTreeMap`] | ordered map, copy-on-write B+tree (16 keys a node) | read-mostly maps |
//! | [`THashMap`] | hash map, power-of-two bucket array of chains, doubled as it fills | TinySTM intset `hs` |
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
//! # Owned access
//!
//! A collection borrowed mutably or owned cannot be reached by any
//! transaction (a transaction borrows what it touches until it ends), so
//! reading it back after a run needs no transaction: every collection has
//! `iter_mut(&mut self)` (each key with its value's `&mut TVar`, to read
//! with [`TVar::get_mut`] or change with [`TVar::set_mut`]; `TQueue` gives
//! `&mut V`), `drain(&mut self)` (the entries by value, leaving it empty),
//! and `into_iter(self)` (the same, consuming it); [`THashMap::get_mut`]
//! looks one key up. These walk the structure with plain loads and free each
//! node as `drain`/`into_iter` pass it (nodes removed by transactions went to
//! the epoch reclaimer when they were unlinked and are not reachable from the
//! collection, so nothing is freed twice); an iterator dropped early frees
//! the nodes it did not reach.
//!
//! ```
//! use skelaff_stm::{atomically, THashMap};
//!
//! let mut results = THashMap::with_buckets(1 << 10);
//! std::thread::scope(|s| {
//!     for t in 0..2u64 {
//!         let results = &results;
//!         s.spawn(move || {
//!             for i in 0..500 {
//!                 atomically(|tx| results.insert(tx, t * 1000 + i, i * i));
//!             }
//!         });
//!     }
//! });
//! // The threads are joined: the map is ours again, no transaction needed.
//! let mut sum = 0;
//! for (_, v) in results.iter_mut() {
//!     sum += v.get_mut();
//! }
//! assert_eq!(sum, 2 * (0..500u64).map(|i| i * i).sum::<u64>());
//! assert_eq!(results.into_iter().count(), 1000);
//! ```
//!
//! None of them keeps a size counter: it would make every pair of updates
//! conflict. `len` walks the structure.

mod broken;
mod btree;
mod hash;
mod list;
mod map;
#[cfg(test)]
mod ordered_tests;
mod queue;
mod skiplist;

pub use broken::Broken;
pub use btree::{BTreeIntoIter, BTreeIterMut, TBTreeMap};
pub use hash::{FxBuildHasher, FxHasher, HashIntoIter, HashIterMut, THashMap};
pub use list::{ListIntoIter, ListIterMut, TList};
pub use map::{MapIntoIter, MapIterMut, TMap};
pub use queue::{QueueIntoIter, QueueIterMut, TQueue};
pub use skiplist::{SkipIntoIter, SkipIterMut, TSkipMap};

#[cfg(doc)]
use crate::THashMap as _;
use crate::tvar::TVar;
use crate::word::TPtr;

/// A transactional link to a node.
type Link<N> = TVar<Option<TPtr<N>>>;

/// A link read and set through exclusive access, for code that owns the
/// collection (`Drop`, `iter_mut`, `drain`, `into_iter`): no bounds on the
/// node type, unlike `TVar::get_mut`, which needs a [`Word`](crate::Word).
trait LinkMut<N> {
    /// The node the link points at.
    fn get_mut_raw(&mut self) -> Option<TPtr<N>>;
    /// Points the link at `p`.
    fn set_mut_raw(&mut self, p: Option<TPtr<N>>);
}

impl<N> LinkMut<N> for Link<N> {
    #[inline]
    fn get_mut_raw(&mut self) -> Option<TPtr<N>> {
        TPtr::from_addr(self.word_mut() as usize)
    }
    #[inline]
    fn set_mut_raw(&mut self, p: Option<TPtr<N>>) {
        self.set_word_mut(p.map_or(0, |p| p.addr() as u64));
    }
}

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
