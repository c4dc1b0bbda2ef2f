//! A sorted singly linked list.

use core::fmt;
use core::marker::PhantomData;

use super::{Link, node};
use crate::error::TxError;
use crate::tvar::TVar;
use crate::txops::TxOps;
use crate::word::{TPtr, Word};

struct LNode<K, V> {
    key: K,
    next: Link<LNode<K, V>>,
    value: TVar<V>,
}

/// An ordered map kept as a sorted singly linked list (TinySTM's intset
/// `ll`): O(n) operations, the longest read sets; the classic STM stress
/// structure.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, TList};
///
/// let list = TList::new();
/// atomically(|tx| {
///     list.insert(tx, 3u32, 30u64)?;
///     list.insert(tx, 1, 10)?;
///     list.remove(tx, &3)
/// });
/// assert_eq!(atomically(|tx| list.to_vec(tx)), vec![(1, 10)]);
/// ```
pub struct TList<K, V> {
    head: Link<LNode<K, V>>,
    _owns: PhantomData<LNode<K, V>>,
}

impl<K, V> TList<K, V>
where
    K: Ord + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    /// An empty list.
    pub fn new() -> Self {
        TList { head: TVar::new(None), _owns: PhantomData }
    }

    /// The link that points at the first node with key >= `k`, and that node.
    #[inline]
    #[allow(clippy::type_complexity)]
    fn seek<'a, X: TxOps<'a> + ?Sized>(
        &'a self,
        tx: &mut X,
        k: &K,
    ) -> Result<(&'a Link<LNode<K, V>>, Option<TPtr<LNode<K, V>>>), TxError> {
        let mut link = &self.head;
        loop {
            match tx.read(link)? {
                None => return Ok((link, None)),
                Some(p) => {
                    // SAFETY: `p` was just read in the running transaction.
                    let n = unsafe { node(p) };
                    if n.key >= *k {
                        return Ok((link, Some(p)));
                    }
                    link = &n.next;
                }
            }
        }
    }

    #[inline]
    fn find<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<Option<&'t LNode<K, V>>, TxError> {
        let (_, at) = self.seek(tx, k)?;
        // SAFETY: read in the running transaction; the reference does not
        // leave the caller's transaction.
        Ok(at.map(|p| unsafe { node(p) }).filter(|n| n.key == *k))
    }

    /// Whether `k` is present.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn contains<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<bool, TxError> {
        Ok(self.find(tx, k)?.is_some())
    }

    /// The value for `k`.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn get<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<Option<V>, TxError> {
        match self.find(tx, k)? {
            Some(n) => Ok(Some(tx.read(&n.value)?)),
            None => Ok(None),
        }
    }

    /// Inserts or replaces; returns the previous value. Replacing a value by
    /// an equal one writes nothing.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn insert<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: K, v: V) -> Result<Option<V>, TxError> {
        let (link, at) = self.seek(tx, &k)?;
        if let Some(p) = at {
            // SAFETY: read in the running transaction.
            let n = unsafe { node(p) };
            if n.key == k {
                let old = tx.read(&n.value)?;
                if old.to_word() != v.to_word() {
                    tx.write(&n.value, v)?;
                }
                return Ok(Some(old));
            }
        }
        let fresh = tx.alloc(LNode { key: k, next: TVar::new(at), value: TVar::new(v) })?;
        tx.write(link, Some(fresh))?;
        Ok(None)
    }

    /// Removes `k`; returns its value.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn remove<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<Option<V>, TxError> {
        let (link, at) = self.seek(tx, k)?;
        let Some(p) = at else { return Ok(None) };
        // SAFETY: read in the running transaction.
        let n = unsafe { node(p) };
        if n.key != *k {
            return Ok(None);
        }
        let v = tx.read(&n.value)?;
        let next = tx.read(&n.next)?;
        tx.write(link, next)?;
        // SAFETY: `p` came from `alloc`, this transaction unlinked it from
        // the only link that pointed at it, and it is freed once (a second
        // remove of the same key in this transaction no longer finds it).
        unsafe { tx.free(p)? };
        Ok(Some(v))
    }

    /// The number of entries (walks the list).
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn len<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<usize, TxError> {
        let mut n = 0;
        let mut link = &self.head;
        while let Some(p) = tx.read(link)? {
            n += 1;
            // SAFETY: read in the running transaction.
            link = unsafe { &node(p).next };
        }
        Ok(n)
    }

    /// Whether the list is empty.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn is_empty<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<bool, TxError> {
        Ok(tx.read(&self.head)?.is_none())
    }

    /// The entries in key order.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn to_vec<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Vec<(K, V)>, TxError> {
        let mut out = Vec::new();
        let mut link = &self.head;
        while let Some(p) = tx.read(link)? {
            // SAFETY: read in the running transaction.
            let n = unsafe { node(p) };
            out.push((n.key, tx.read(&n.value)?));
            link = &n.next;
        }
        Ok(out)
    }
}

impl<K, V> Default for TList<K, V>
where
    K: Ord + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> Drop for TList<K, V> {
    fn drop(&mut self) {
        let mut cur = self.head.load_word();
        while let Some(p) = TPtr::<LNode<K, V>>::from_addr(cur as usize) {
            // SAFETY: `&mut self`: no transaction can reach the list; every
            // node still linked is owned by it and freed once here.
            let b = unsafe { p.into_box() };
            cur = b.next.load_word();
        }
    }
}

impl<K, V> fmt::Debug for TList<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TList").field("head", &format_args!("{:#x}", self.head.load_word())).finish_non_exhaustive()
    }
}

mod owned;
pub use owned::{ListIntoIter, ListIterMut};
