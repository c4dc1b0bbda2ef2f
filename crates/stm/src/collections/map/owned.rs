//! Access to a tree the caller owns: no transaction can run on it, so its
//! nodes are walked with plain loads and freed at once.

use core::fmt;
use core::iter::FusedIterator;
use core::marker::PhantomData;

use super::{RNode, TMap};
use crate::collections::LinkMut;
use crate::tvar::TVar;
use crate::word::{TPtr, Word};

type P<K, V> = TPtr<RNode<K, V>>;

/// Pushes `p` and its chain of left children on `stack`: the in-order walk's
/// next nodes, the smallest on top.
///
/// # Safety
///
/// The caller owns the tree under `p` (no transaction can reach it, every
/// node in it is alive) and holds no reference into those nodes' `left`
/// links.
unsafe fn push_left<K, V>(stack: &mut Vec<P<K, V>>, mut p: Option<P<K, V>>) {
    while let Some(n) = p {
        stack.push(n);
        // SAFETY: the caller's contract: alive, owned, and this place (the
        // `left` link) is not referenced elsewhere; the raw place avoids a
        // reference to the whole node, whose value an `IterMut` may have lent.
        p = unsafe { (*n.as_ptr()).left.get_mut_raw() };
    }
}

impl<K, V> TMap<K, V> {
    /// Every entry in key order, with its value's variable, through
    /// exclusive access (no transaction can run on the tree while it is
    /// borrowed mutably, so none is needed).
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, TMap};
    ///
    /// let mut m = TMap::new();
    /// atomically(|tx| { m.insert(tx, 2i32, 20u64)?; m.insert(tx, 1, 10) });
    /// let all: Vec<(i32, u64)> = m.iter_mut().map(|(k, v)| (*k, v.get_mut())).collect();
    /// assert_eq!(all, [(1, 10), (2, 20)]);
    /// assert_eq!(m.into_iter().collect::<Vec<_>>(), [(1, 10), (2, 20)]);
    /// ```
    pub fn iter_mut(&mut self) -> MapIterMut<'_, K, V> {
        let mut stack = Vec::new();
        // SAFETY: `&mut self`: the tree is ours and nothing references it.
        unsafe { push_left(&mut stack, self.root.get_mut_raw()) };
        MapIterMut { stack, _map: PhantomData }
    }

    /// Empties the map and gives its entries back by value, in key order;
    /// entries the iterator does not reach are freed when it is dropped.
    pub fn drain(&mut self) -> MapIntoIter<K, V> {
        let root = self.root.get_mut_raw();
        self.root.set_mut_raw(None);
        let mut stack = Vec::new();
        // SAFETY: the tree was detached from a map borrowed mutably: ours.
        unsafe { push_left(&mut stack, root) };
        MapIntoIter { stack, _owns: PhantomData }
    }
}

impl<K, V: Word> IntoIterator for TMap<K, V> {
    type Item = (K, V);
    type IntoIter = MapIntoIter<K, V>;

    /// The entries by value, in key order; nodes are freed as they are
    /// passed (the rest when the iterator is dropped).
    fn into_iter(mut self) -> MapIntoIter<K, V> {
        // The map is dropped empty: every node now belongs to the iterator.
        self.drain()
    }
}

impl<'a, K, V> IntoIterator for &'a mut TMap<K, V> {
    type Item = (&'a K, &'a mut TVar<V>);
    type IntoIter = MapIterMut<'a, K, V>;

    fn into_iter(self) -> MapIterMut<'a, K, V> {
        self.iter_mut()
    }
}

/// The entries of a [`TMap`] borrowed mutably: see [`TMap::iter_mut`].
pub struct MapIterMut<'a, K, V> {
    /// Nodes not passed yet whose left subtrees have been: the next on top.
    stack: Vec<P<K, V>>,
    _map: PhantomData<&'a mut RNode<K, V>>,
}

impl<'a, K, V> Iterator for MapIterMut<'a, K, V> {
    type Item = (&'a K, &'a mut TVar<V>);

    fn next(&mut self) -> Option<Self::Item> {
        let p = self.stack.pop()?;
        // SAFETY: the map is borrowed mutably for 'a: no transaction runs on
        // it and every linked node is alive for 'a. A tree reaches each node
        // once (parent links are never followed), and a node is popped once
        // and never visited again, so this `&mut` is the only one made to
        // it for 'a; `push_left` touches only other nodes' `left` links.
        let RNode { key, right, value, .. } = unsafe { &mut *p.as_ptr() };
        // SAFETY: the right subtree is part of the same borrowed tree, none
        // of it passed yet.
        unsafe { push_left(&mut self.stack, right.get_mut_raw()) };
        Some((key, value))
    }
}

impl<K, V> FusedIterator for MapIterMut<'_, K, V> {}

/// The entries of a [`TMap`] by value: see its `IntoIterator` impl and
/// [`TMap::drain`]. It owns the nodes it has not passed yet (those on its
/// stack and their right subtrees) and frees them when dropped.
pub struct MapIntoIter<K, V> {
    /// Nodes not passed yet whose left subtrees have been (and are freed).
    stack: Vec<P<K, V>>,
    _owns: PhantomData<RNode<K, V>>,
}

impl<K, V> MapIntoIter<K, V> {
    /// Frees the next node in key order; its key and value.
    fn take_next(&mut self) -> Option<(K, TVar<V>)> {
        let p = self.stack.pop()?;
        // SAFETY: the iterator owns the detached tree; `p`'s left subtree
        // was freed before it (in-order), nothing else links to it but its
        // parent (passed already, or on the stack below and never followed
        // to its left again) and its children's parent links (never
        // followed), so it is freed once, here.
        let RNode { key, right, value, .. } = *unsafe { p.into_box() };
        // SAFETY: the right subtree is owned and untouched.
        unsafe { push_left(&mut self.stack, { right }.get_mut_raw()) };
        Some((key, value))
    }
}

impl<K, V: Word> Iterator for MapIntoIter<K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        self.take_next().map(|(k, v)| (k, v.into_inner()))
    }
}

impl<K, V: Word> FusedIterator for MapIntoIter<K, V> {}

impl<K, V> Drop for MapIntoIter<K, V> {
    fn drop(&mut self) {
        while self.take_next().is_some() {}
    }
}

impl<K, V> fmt::Debug for MapIterMut<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapIterMut").finish_non_exhaustive()
    }
}

impl<K, V> fmt::Debug for MapIntoIter<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapIntoIter").finish_non_exhaustive()
    }
}
