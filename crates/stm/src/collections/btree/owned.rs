//! Access to a tree the caller owns: no transaction can run on it, so its
//! nodes are walked with plain loads and freed at once.

use core::fmt;
use core::iter::FusedIterator;
use core::marker::PhantomData;

use super::{BNode, CAP, TBTreeMap};
use crate::collections::{Link, LinkMut};
use crate::tvar::TVar;
use crate::word::{TPtr, Word};

type P<K, V> = TPtr<BNode<K, V>>;

impl<K, V> TBTreeMap<K, V> {
    /// Every entry in key order, with its value's variable, through
    /// exclusive access (no transaction can run on the tree while it is
    /// borrowed mutably, so none is needed).
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, TBTreeMap};
    ///
    /// let mut m = TBTreeMap::new();
    /// atomically(|tx| {
    ///     for k in (0..100u32).rev() {
    ///         m.insert(tx, k, u64::from(k))?;
    ///     }
    ///     Ok(())
    /// });
    /// let keys: Vec<u32> = m.iter_mut().map(|(k, _)| *k).collect();
    /// assert_eq!(keys, (0..100).collect::<Vec<_>>());
    /// assert_eq!(m.drain().map(|(_, v)| v).sum::<u64>(), 4950);
    /// ```
    pub fn iter_mut(&mut self) -> BTreeIterMut<'_, K, V> {
        let leaf = <&[K]>::default().iter().zip(<&mut [TVar<V>]>::default().iter_mut());
        BTreeIterMut { kids: vec![core::slice::from_mut(&mut self.root).iter_mut()], leaf }
    }

    /// Empties the map and gives its entries back by value, in key order;
    /// entries the iterator does not reach are freed when it is dropped.
    pub fn drain(&mut self) -> BTreeIntoIter<K, V> {
        let root = self.root.get_mut_raw();
        self.root.set_mut_raw(None);
        BTreeIntoIter { kids: vec![vec![root].into_iter()], leaf: Vec::new().into_iter(), _owns: PhantomData }
    }
}

impl<K, V: Word> IntoIterator for TBTreeMap<K, V> {
    type Item = (K, V);
    type IntoIter = BTreeIntoIter<K, V>;

    /// The entries by value, in key order; nodes are freed as they are
    /// reached (the rest when the iterator is dropped).
    fn into_iter(mut self) -> BTreeIntoIter<K, V> {
        // The map is dropped empty: every node now belongs to the iterator.
        self.drain()
    }
}

impl<'a, K, V> IntoIterator for &'a mut TBTreeMap<K, V> {
    type Item = (&'a K, &'a mut TVar<V>);
    type IntoIter = BTreeIterMut<'a, K, V>;

    fn into_iter(self) -> BTreeIterMut<'a, K, V> {
        self.iter_mut()
    }
}

/// The entries of a [`TBTreeMap`] borrowed mutably: see
/// [`TBTreeMap::iter_mut`].
pub struct BTreeIterMut<'a, K, V> {
    /// For each inner node on the path to the current leaf (the root link
    /// first), the links of the children not entered yet.
    kids: Vec<core::slice::IterMut<'a, Link<BNode<K, V>>>>,
    /// The current leaf's entries not passed yet.
    leaf: core::iter::Zip<core::slice::Iter<'a, K>, core::slice::IterMut<'a, TVar<V>>>,
}

impl<'a, K, V> Iterator for BTreeIterMut<'a, K, V> {
    type Item = (&'a K, &'a mut TVar<V>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.leaf.next() {
                return Some(e);
            }
            let top = self.kids.last_mut()?;
            let Some(link) = top.next() else {
                self.kids.pop();
                continue;
            };
            let Some(p) = link.get_mut_raw() else { continue };
            // SAFETY: the map is borrowed mutably for 'a: no transaction
            // runs on it and every linked node is alive for 'a. A tree links
            // each node once, and each link is taken from its parent's
            // iterator once, so this is the only reference made to the node
            // for 'a; its parts are lent out disjointly below.
            match unsafe { &mut *p.as_ptr() } {
                BNode::Leaf { len, keys, vals } => {
                    let n = (*len).min(CAP);
                    let keys: &'a [K; CAP] = keys;
                    self.leaf = keys[..n].iter().zip(vals[..n].iter_mut());
                }
                BNode::Inner { len, kids, .. } => {
                    let n = (*len).min(CAP);
                    self.kids.push(kids[..=n].iter_mut());
                }
            }
        }
    }
}

impl<K, V> FusedIterator for BTreeIterMut<'_, K, V> {}

/// The entries of a [`TBTreeMap`] by value: see its `IntoIterator` impl and
/// [`TBTreeMap::drain`]. It owns the nodes it has not reached yet and frees
/// them when dropped.
pub struct BTreeIntoIter<K, V> {
    /// For each inner node on the path to the current leaf (freed already),
    /// the children not entered yet; they belong to the iterator.
    kids: Vec<std::vec::IntoIter<Option<P<K, V>>>>,
    /// The current leaf's entries not passed yet (the leaf is freed).
    leaf: std::vec::IntoIter<(K, TVar<V>)>,
    _owns: PhantomData<BNode<K, V>>,
}

impl<K, V> BTreeIntoIter<K, V> {
    /// Frees the nodes down to the next leaf with entries; false when none
    /// is left.
    fn refill(&mut self) -> bool {
        loop {
            let Some(top) = self.kids.last_mut() else { return false };
            let Some(next) = top.next() else {
                self.kids.pop();
                continue;
            };
            let Some(p) = next else { continue };
            // SAFETY: the iterator owns the detached tree: a tree links each
            // node once, each child pointer is taken out of its parent's
            // list once, and the node is freed once, here; its children are
            // moved into the iterator before it goes.
            match *unsafe { p.into_box() } {
                BNode::Leaf { len, keys, vals } => {
                    let n = len.min(CAP);
                    self.leaf = keys.into_iter().zip(vals).take(n).collect::<Vec<_>>().into_iter();
                    if n > 0 {
                        return true;
                    }
                }
                BNode::Inner { len, kids, .. } => {
                    let n = len.min(CAP);
                    let kids: Vec<_> = kids.into_iter().take(n + 1).map(|mut k| k.get_mut_raw()).collect();
                    self.kids.push(kids.into_iter());
                }
            }
        }
    }
}

impl<K, V: Word> Iterator for BTreeIntoIter<K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        loop {
            if let Some((k, v)) = self.leaf.next() {
                return Some((k, v.into_inner()));
            }
            if !self.refill() {
                return None;
            }
        }
    }
}

impl<K, V: Word> FusedIterator for BTreeIntoIter<K, V> {}

impl<K, V> Drop for BTreeIntoIter<K, V> {
    fn drop(&mut self) {
        while self.refill() {}
    }
}

impl<K, V> fmt::Debug for BTreeIterMut<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BTreeIterMut").field("depth", &self.kids.len()).finish_non_exhaustive()
    }
}

impl<K, V> fmt::Debug for BTreeIntoIter<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BTreeIntoIter").field("depth", &self.kids.len()).finish_non_exhaustive()
    }
}
