//! Access to a map the caller owns: no transaction can run on it, so its
//! nodes are walked with plain loads and freed at once.

use core::fmt;
use core::hash::{BuildHasher, Hash};
use core::iter::FusedIterator;
use core::marker::PhantomData;

use super::THashMap;
use super::table::{HNode, Table};
use crate::collections::{Link, LinkMut};
use crate::tvar::TVar;
use crate::word::{TPtr, Word};

impl<K, V, S> THashMap<K, V, S>
where
    K: Hash + Eq + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
    S: BuildHasher,
{
    /// The variable holding `k`'s value, through exclusive access: no
    /// transaction can run on the map while it is borrowed mutably, so this
    /// needs none. One bucket's chain is walked, as [`get`](Self::get) does.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, THashMap};
    ///
    /// let mut m = THashMap::with_buckets(8);
    /// atomically(|tx| m.insert(tx, 1u32, 10u64));
    /// if let Some(v) = m.get_mut(&1) {
    ///     let x = v.get_mut();
    ///     v.set_mut(x + 1);
    /// }
    /// assert_eq!(atomically(|tx| m.get(tx, &1)), Some(11));
    /// assert!(m.get_mut(&2).is_none());
    /// ```
    pub fn get_mut(&mut self, k: &K) -> Option<&mut TVar<V>> {
        let h = self.hasher.hash_one(k);
        let mut cur = TPtr::<HNode<K, V>>::from_addr(self.table_mut().bucket(h).load_word() as usize);
        while let Some(p) = cur {
            // SAFETY: `&mut self` for the returned lifetime: no transaction
            // runs on the map, so every linked node is alive and no other
            // reference to it exists; each node is linked once (a chain), so
            // this is the only `&mut` to it made here, and at most one is
            // returned.
            let node = unsafe { &mut *p.as_ptr() };
            if node.key == *k {
                return Some(&mut node.value);
            }
            cur = node.next.get_mut_raw();
        }
        None
    }

    /// Empties the map and gives its entries back by value, in no
    /// particular order; the bucket array is kept. Entries the iterator
    /// does not reach are freed when it is dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, THashMap};
    ///
    /// let mut m = THashMap::with_buckets(8);
    /// atomically(|tx| { m.insert(tx, 1u32, 'a')?; m.insert(tx, 2, 'b') });
    /// let mut got: Vec<_> = m.drain().collect();
    /// got.sort();
    /// assert_eq!(got, [(1, 'a'), (2, 'b')]);
    /// assert_eq!(atomically(|tx| m.len(tx)), 0);
    /// ```
    pub fn drain(&mut self) -> HashIntoIter<K, V> {
        let t = self.table_mut();
        let empty = (0..t.buckets.len()).map(|_| TVar::new(None)).collect();
        HashIntoIter::new(core::mem::replace(&mut t.buckets, empty))
    }

    /// The longest chain and the number of entries, through exclusive
    /// access: a statistic for tests of growth.
    #[doc(hidden)]
    pub fn chain_stats(&mut self) -> (usize, usize) {
        let (mut longest, mut entries) = (0, 0);
        for b in self.table_mut().buckets.iter_mut() {
            let mut len = 0;
            let mut cur = b.get_mut_raw();
            while let Some(p) = cur {
                len += 1;
                // SAFETY: `&mut self`: no transaction runs on the map, so
                // every linked node is alive; the reference ends here.
                cur = TPtr::from_addr(unsafe { p.get() }.next.load_word() as usize);
            }
            longest = longest.max(len);
            entries += len;
        }
        (longest, entries)
    }
}

impl<K, V, S> THashMap<K, V, S> {
    /// The current table, through exclusive access.
    fn table_mut(&mut self) -> &mut Table<K, V> {
        let p = self.root.word_mut() as usize as *mut Table<K, V>;
        // SAFETY: the root always points at a live table that belongs to
        // the map (see `THashMap::table`); `&mut self` for the returned
        // lifetime: no transaction runs on the map, and no other reference
        // to the table is made while this one lives.
        unsafe { &mut *p }
    }

    /// Every entry, with its value's variable, in no particular order,
    /// through exclusive access (no transaction can run on the map while
    /// it is borrowed mutably, so none is needed: plain loads, no read set,
    /// however many entries). Read a value with [`TVar::get_mut`], change
    /// it with [`TVar::set_mut`].
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, THashMap};
    ///
    /// let mut m = THashMap::with_buckets(8);
    /// atomically(|tx| {
    ///     for k in 0..5u32 {
    ///         m.insert(tx, k, u64::from(k))?;
    ///     }
    ///     Ok(())
    /// });
    /// for (_, v) in m.iter_mut() {
    ///     let x = v.get_mut();
    ///     v.set_mut(x * 2);
    /// }
    /// let mut all: Vec<(u32, u64)> = m.iter_mut().map(|(k, v)| (*k, v.get_mut())).collect();
    /// all.sort();
    /// assert_eq!(all, [(0, 0), (1, 2), (2, 4), (3, 6), (4, 8)]);
    /// ```
    pub fn iter_mut(&mut self) -> HashIterMut<'_, K, V> {
        HashIterMut { buckets: self.table_mut().buckets.iter_mut(), cur: None, _map: PhantomData }
    }
}

impl<K, V: Word, S> IntoIterator for THashMap<K, V, S> {
    type Item = (K, V);
    type IntoIter = HashIntoIter<K, V>;

    /// The entries by value, in no particular order; the map's nodes are
    /// freed as they are passed (the rest when the iterator is dropped).
    fn into_iter(mut self) -> HashIntoIter<K, V> {
        // The map is dropped with no buckets, so it frees nothing: every
        // node now belongs to the iterator.
        HashIntoIter::new(core::mem::take(&mut self.table_mut().buckets))
    }
}

impl<'a, K, V, S> IntoIterator for &'a mut THashMap<K, V, S> {
    type Item = (&'a K, &'a mut TVar<V>);
    type IntoIter = HashIterMut<'a, K, V>;

    fn into_iter(self) -> HashIterMut<'a, K, V> {
        self.iter_mut()
    }
}

/// The entries of a [`THashMap`] borrowed mutably: see [`THashMap::iter_mut`].
pub struct HashIterMut<'a, K, V> {
    buckets: core::slice::IterMut<'a, Link<HNode<K, V>>>,
    cur: Option<TPtr<HNode<K, V>>>,
    _map: PhantomData<&'a mut HNode<K, V>>,
}

impl<'a, K, V> Iterator for HashIterMut<'a, K, V> {
    type Item = (&'a K, &'a mut TVar<V>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(p) = self.cur {
                // SAFETY: the map is borrowed mutably for 'a: no transaction
                // runs on it, every linked node is alive for 'a, and nothing
                // else references it. Each node is linked from exactly one
                // place (its bucket's chain) and the walk moves forward only,
                // so this `&mut` is the only one made to this node for 'a.
                let HNode { key, next, value } = unsafe { &mut *p.as_ptr() };
                self.cur = next.get_mut_raw();
                return Some((key, value));
            }
            self.cur = self.buckets.next()?.get_mut_raw();
        }
    }
}

impl<K, V> FusedIterator for HashIterMut<'_, K, V> {}

/// The entries of a [`THashMap`] by value: see its `IntoIterator` impl and
/// [`THashMap::drain`].
///
/// It owns the nodes it has not passed yet and frees them when dropped.
pub struct HashIntoIter<K, V> {
    buckets: Box<[Link<HNode<K, V>>]>,
    /// The next bucket to take a chain from.
    at: usize,
    /// The rest of the chain taken last; its nodes belong to the iterator.
    cur: Option<TPtr<HNode<K, V>>>,
    _owns: PhantomData<HNode<K, V>>,
}

impl<K, V> HashIntoIter<K, V> {
    fn new(buckets: Box<[Link<HNode<K, V>>]>) -> Self {
        HashIntoIter { buckets, at: 0, cur: None, _owns: PhantomData }
    }
}

impl<K, V: Word> Iterator for HashIntoIter<K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        loop {
            if let Some(p) = self.cur {
                // SAFETY: the iterator owns the chain in `cur` (taken from a
                // bucket of a map nobody else can reach: it was moved or
                // borrowed mutably in, and its buckets were moved out); each
                // node is linked once, and is freed here once, after which
                // `cur` moves past it.
                let node = unsafe { p.into_box() };
                let HNode { key, next, value } = *node;
                self.cur = { next }.get_mut_raw();
                return Some((key, value.into_inner()));
            }
            let b = self.buckets.get_mut(self.at)?;
            self.at += 1;
            self.cur = b.get_mut_raw();
            // The chain now belongs to `cur`: an emptied bucket cannot be
            // taken twice.
            b.set_mut_raw(None);
        }
    }
}

impl<K, V: Word> FusedIterator for HashIntoIter<K, V> {}

impl<K, V> Drop for HashIntoIter<K, V> {
    fn drop(&mut self) {
        let mut cur = self.cur.take();
        let mut at = self.at;
        loop {
            while let Some(p) = cur {
                // SAFETY: as in `next`: owned, linked once, freed once.
                let node = unsafe { p.into_box() };
                cur = { node.next }.get_mut_raw();
            }
            let Some(b) = self.buckets.get_mut(at) else { return };
            at += 1;
            cur = b.get_mut_raw();
        }
    }
}

impl<K, V> fmt::Debug for HashIterMut<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashIterMut").field("buckets_left", &self.buckets.len()).finish_non_exhaustive()
    }
}

impl<K, V> fmt::Debug for HashIntoIter<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashIntoIter").field("buckets_left", &(self.buckets.len() - self.at)).finish_non_exhaustive()
    }
}
