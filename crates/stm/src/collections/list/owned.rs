//! Access to a list the caller owns: no transaction can run on it, so its
//! nodes are walked with plain loads and freed at once.

use core::fmt;
use core::iter::FusedIterator;
use core::marker::PhantomData;

use super::{LNode, TList};
use crate::collections::LinkMut;
use crate::tvar::TVar;
use crate::word::{TPtr, Word};

impl<K, V> TList<K, V> {
    /// Every entry in key order, with its value's variable, through
    /// exclusive access (no transaction can run on the list while it is
    /// borrowed mutably, so none is needed).
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, TList};
    ///
    /// let mut l = TList::new();
    /// atomically(|tx| { l.insert(tx, 2u32, 20u64)?; l.insert(tx, 1, 10) });
    /// let all: Vec<(u32, u64)> = l.iter_mut().map(|(k, v)| (*k, v.get_mut())).collect();
    /// assert_eq!(all, [(1, 10), (2, 20)]);
    /// ```
    pub fn iter_mut(&mut self) -> ListIterMut<'_, K, V> {
        ListIterMut { cur: self.head.get_mut_raw(), _list: PhantomData }
    }

    /// Empties the list and gives its entries back by value, in key order;
    /// entries the iterator does not reach are freed when it is dropped.
    pub fn drain(&mut self) -> ListIntoIter<K, V> {
        let head = self.head.get_mut_raw();
        self.head.set_mut_raw(None);
        ListIntoIter { cur: head, _owns: PhantomData }
    }
}

impl<K, V: Word> IntoIterator for TList<K, V> {
    type Item = (K, V);
    type IntoIter = ListIntoIter<K, V>;

    /// The entries by value, in key order; nodes are freed as they are
    /// passed (the rest when the iterator is dropped).
    fn into_iter(mut self) -> ListIntoIter<K, V> {
        // The list is dropped empty: every node now belongs to the iterator.
        self.drain()
    }
}

impl<'a, K, V> IntoIterator for &'a mut TList<K, V> {
    type Item = (&'a K, &'a mut TVar<V>);
    type IntoIter = ListIterMut<'a, K, V>;

    fn into_iter(self) -> ListIterMut<'a, K, V> {
        self.iter_mut()
    }
}

/// The entries of a [`TList`] borrowed mutably: see [`TList::iter_mut`].
pub struct ListIterMut<'a, K, V> {
    cur: Option<TPtr<LNode<K, V>>>,
    _list: PhantomData<&'a mut LNode<K, V>>,
}

impl<'a, K, V> Iterator for ListIterMut<'a, K, V> {
    type Item = (&'a K, &'a mut TVar<V>);

    fn next(&mut self) -> Option<Self::Item> {
        let p = self.cur?;
        // SAFETY: the list is borrowed mutably for 'a: no transaction runs
        // on it, every linked node is alive for 'a and nothing else
        // references it; each node is linked once and the walk only moves
        // forward, so this is the only `&mut` made to it for 'a.
        let LNode { key, next, value } = unsafe { &mut *p.as_ptr() };
        self.cur = next.get_mut_raw();
        Some((key, value))
    }
}

impl<K, V> FusedIterator for ListIterMut<'_, K, V> {}

/// The entries of a [`TList`] by value: see its `IntoIterator` impl and
/// [`TList::drain`]. It owns the nodes it has not passed yet and frees
/// them when dropped.
pub struct ListIntoIter<K, V> {
    cur: Option<TPtr<LNode<K, V>>>,
    _owns: PhantomData<LNode<K, V>>,
}

impl<K, V: Word> Iterator for ListIntoIter<K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        let p = self.cur?;
        // SAFETY: the iterator owns the chain from `cur` (detached from a
        // list nobody else can reach); each node is linked once and freed
        // here once, after which `cur` moves past it.
        let LNode { key, next, value } = *unsafe { p.into_box() };
        self.cur = { next }.get_mut_raw();
        Some((key, value.into_inner()))
    }
}

impl<K, V: Word> FusedIterator for ListIntoIter<K, V> {}

impl<K, V> Drop for ListIntoIter<K, V> {
    fn drop(&mut self) {
        while let Some(p) = self.cur {
            // SAFETY: as in `next`.
            let mut node = unsafe { p.into_box() };
            self.cur = node.next.get_mut_raw();
        }
    }
}

impl<K, V> fmt::Debug for ListIterMut<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListIterMut").finish_non_exhaustive()
    }
}

impl<K, V> fmt::Debug for ListIntoIter<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListIntoIter").finish_non_exhaustive()
    }
}
