//! Access to a skip list the caller owns: no transaction can run on it, so
//! its nodes are walked along level 0 with plain loads and freed at once.

use core::fmt;
use core::iter::FusedIterator;
use core::marker::PhantomData;

use super::{MAX_LEVEL, Node, P, SNode, TSkipMap, forward, level};
use crate::collections::LinkMut;
use crate::tvar::TVar;
use crate::word::{TPtr, Word};

impl<K, V> TSkipMap<K, V> {
    /// Every entry in key order, with its value's variable, through
    /// exclusive access (no transaction can run on the list while it is
    /// borrowed mutably, so none is needed).
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, TSkipMap};
    ///
    /// let mut m = TSkipMap::new();
    /// atomically(|tx| { m.insert(tx, 2u32, 20u64)?; m.insert(tx, 1, 10) });
    /// let all: Vec<(u32, u64)> = m.iter_mut().map(|(k, v)| (*k, v.get_mut())).collect();
    /// assert_eq!(all, [(1, 10), (2, 20)]);
    /// assert_eq!(m.into_iter().collect::<Vec<_>>(), [(1, 10), (2, 20)]);
    /// ```
    pub fn iter_mut(&mut self) -> SkipIterMut<'_, K, V> {
        SkipIterMut { cur: self.head[0].get_mut_raw(), _map: PhantomData }
    }

    /// Empties the map and gives its entries back by value, in key order;
    /// entries the iterator does not reach are freed when it is dropped.
    /// The top level stays (it is never lowered; see the module docs).
    pub fn drain(&mut self) -> SkipIntoIter<K, V> {
        let first = self.head[0].get_mut_raw();
        for l in self.head.iter_mut() {
            l.set_mut_raw(None);
        }
        SkipIntoIter { cur: first, _owns: PhantomData }
    }
}

impl<K, V: Word> IntoIterator for TSkipMap<K, V> {
    type Item = (K, V);
    type IntoIter = SkipIntoIter<K, V>;

    /// The entries by value, in key order; nodes are freed as they are
    /// passed (the rest when the iterator is dropped).
    fn into_iter(mut self) -> SkipIntoIter<K, V> {
        // The map is dropped empty: every node now belongs to the iterator.
        self.drain()
    }
}

impl<'a, K, V> IntoIterator for &'a mut TSkipMap<K, V> {
    type Item = (&'a K, &'a mut TVar<V>);
    type IntoIter = SkipIterMut<'a, K, V>;

    fn into_iter(self) -> SkipIterMut<'a, K, V> {
        self.iter_mut()
    }
}

/// The entries of a [`TSkipMap`] borrowed mutably: see [`TSkipMap::iter_mut`].
pub struct SkipIterMut<'a, K, V> {
    cur: Option<P<K, V>>,
    _map: PhantomData<&'a mut Node<K, V>>,
}

impl<'a, K, V> Iterator for SkipIterMut<'a, K, V> {
    type Item = (&'a K, &'a mut TVar<V>);

    fn next(&mut self) -> Option<Self::Item> {
        let p = self.cur?;
        // SAFETY: the map is borrowed mutably for 'a: no transaction runs on
        // it and every linked node is alive for 'a. Every node is on level 0
        // once and the walk only moves forward along it, so each node's
        // `key` and `value` are lent once. The node was made as some
        // `SNode<K, V, N>` whose `repr(C)` prefix matches `Node`, so the
        // fields are where `Node` says; the references cover those fields
        // only, and the link is read through `forward` (the `next` array,
        // disjoint from them) before they are made.
        unsafe {
            self.cur = TPtr::from_addr(forward(p)[0].load_word() as usize);
            let base = p.as_ptr();
            Some((&(*base).key, &mut (*base).value))
        }
    }
}

impl<K, V> FusedIterator for SkipIterMut<'_, K, V> {}

/// The entries of a [`TSkipMap`] by value: see its `IntoIterator` impl and
/// [`TSkipMap::drain`]. It owns the nodes it has not passed yet and frees
/// them when dropped.
pub struct SkipIntoIter<K, V> {
    cur: Option<P<K, V>>,
    _owns: PhantomData<Node<K, V>>,
}

impl<K, V> SkipIntoIter<K, V> {
    /// Frees the next node; its key and value word.
    fn take_next(&mut self) -> Option<(K, u64)> {
        let p = self.cur?;
        // SAFETY: the iterator owns the level-0 chain from `cur` (detached
        // from a map nobody else can reach: every node is on level 0, and
        // the head's links were all cleared); the node is alive. It was made
        // as an `SNode<K, V, N>` with `N` its level, so `cast` gives back
        // the pointer its `Box` came from, and it is freed once, here, after
        // its level-0 link is read; `cur` then moves past it.
        unsafe {
            self.cur = TPtr::from_addr(forward(p)[0].load_word() as usize);
            let n = level(p);
            debug_assert!((1..=MAX_LEVEL).contains(&n));
            Some(by_level!(n, N => {
                let node: SNode<K, V, N> = *p.cast::<SNode<K, V, N>>().into_box();
                (node.key, node.value.load_word())
            }))
        }
    }
}

impl<K, V: Word> Iterator for SkipIntoIter<K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        self.take_next().map(|(k, w)| (k, V::from_word(w)))
    }
}

impl<K, V: Word> FusedIterator for SkipIntoIter<K, V> {}

impl<K, V> Drop for SkipIntoIter<K, V> {
    fn drop(&mut self) {
        while self.take_next().is_some() {}
    }
}

impl<K, V> fmt::Debug for SkipIterMut<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipIterMut").finish_non_exhaustive()
    }
}

impl<K, V> fmt::Debug for SkipIntoIter<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipIntoIter").finish_non_exhaustive()
    }
}
