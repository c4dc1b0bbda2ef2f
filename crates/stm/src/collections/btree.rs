//! An ordered map: a copy-on-write B+tree whose nodes never change.

use core::fmt;
use core::marker::PhantomData;

use super::Broken;
use super::{Link, node};
use crate::error::TxError;
use crate::tvar::TVar;
use crate::txops::TxOps;
use crate::word::{TPtr, Word};

/// Keys per node. 16 keys of 8 bytes are two cache lines: a search touches
/// about two lines per level, and a million keys make four levels.
const CAP: usize = 16;

/// A node. Its keys (and an inner node's number of children) never change
/// once it is linked: an update builds a new node and relinks it, so a
/// search compares keys with plain loads and reads only one link per level
/// through the STM. Values change in place, in their [`TVar`]s.
enum BNode<K, V> {
    Leaf {
        len: usize,
        keys: [K; CAP],
        vals: [TVar<V>; CAP],
    },
    /// `len` separators and `len + 1` children: child `i` holds the keys
    /// `k` with `keys[i - 1] <= k < keys[i]`.
    Inner {
        len: usize,
        keys: [K; CAP],
        kids: [Link<BNode<K, V>>; CAP + 1],
    },
}

type P<K, V> = TPtr<BNode<K, V>>;

/// A leaf and a slot in it.
type Slot<K, V> = (P<K, V>, usize);

/// What [`Bt::for_each`] calls on each entry.
type Visit<'f, 't, X, K, V> = dyn FnMut(&mut X, K, &'t TVar<V>) -> Result<(), TxError> + 'f;

/// What an insert below a link asks of the node above.
enum Ins<K, V> {
    /// Nothing: the link was updated in place (or nothing changed); the
    /// previous value, if the key was there.
    Done(Option<V>),
    /// The node split: the link now points at the left half; insert this
    /// separator and right half after it.
    Split(K, P<K, V>),
}

/// An ordered map kept as a B+tree of immutable nodes (values excepted).
///
/// Against [`TMap`](crate::TMap), the red-black tree, a lookup reads one
/// transactional link per level of a tree about four times shallower, and
/// its key comparisons are plain loads within two cache lines per node.
/// An insert or a remove copies the leaf it changes (and, on a split, the
/// nodes above it), so updates cost more and two updates of the same leaf
/// conflict; a value replaced under an existing key is written in place.
/// Use it for maps that are read far more than they are reshaped (STAMP
/// vacation's tables).
///
/// Nodes are not merged when keys are removed: a map that shrinks keeps
/// its inner nodes (and possibly empty leaves) until it is dropped.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, TBTreeMap};
///
/// let m = TBTreeMap::new();
/// atomically(|tx| {
///     for k in 0..100u32 {
///         m.insert(tx, k, u64::from(k) * 10)?;
///     }
///     m.remove(tx, &50)
/// });
/// assert_eq!(atomically(|tx| m.get(tx, &7)), Some(70));
/// assert_eq!(atomically(|tx| m.get(tx, &50)), None);
/// assert_eq!(atomically(|tx| m.len(tx)), 99);
/// assert_eq!(atomically(|tx| m.first(tx)), Some((0, 0)));
/// ```
pub struct TBTreeMap<K, V> {
    root: Link<BNode<K, V>>,
    _owns: PhantomData<BNode<K, V>>,
}

/// One operation's view of the tree.
struct Bt<'a, 't, X: ?Sized, K, V> {
    tx: &'a mut X,
    _tcell: PhantomData<&'t ()>,
    _kv: PhantomData<fn() -> (K, V)>,
}

/// Where `k` would go among `keys`: `Ok(i)` if `keys[i] == k`, else
/// `Err(i)` with `keys[..i] < k < keys[i..]`.
#[inline]
fn search<K: Ord>(keys: &[K], k: &K) -> Result<usize, usize> {
    keys.binary_search(k)
}

/// The child of an inner node with separators `keys` that holds `k`.
#[inline]
fn child_index<K: Ord>(keys: &[K], k: &K) -> usize {
    keys.partition_point(|s| s <= k)
}

fn keys_from<K: Copy + Default>(src: &[K]) -> [K; CAP] {
    let mut keys = [K::default(); CAP];
    keys[..src.len()].copy_from_slice(src);
    keys
}

impl<'a, 't, X, K, V> Bt<'a, 't, X, K, V>
where
    X: TxOps<'t> + ?Sized,
    K: Ord + Copy + Default + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    #[inline(always)]
    fn n(p: P<K, V>) -> &'t BNode<K, V> {
        // SAFETY: every pointer handled by `Bt` was read from a link (or
        // allocated) by the transaction that runs the operation, and `Bt`
        // lives only for that operation.
        unsafe { node(p) }
    }

    /// The leaf holding `k` and its slot.
    fn find(&mut self, root: &'t Link<BNode<K, V>>, k: &K) -> Result<Option<Slot<K, V>>, TxError> {
        let mut p = self.tx.read(root)?;
        while let Some(q) = p {
            match Self::n(q) {
                BNode::Inner { len, keys, kids } => p = self.tx.read(&kids[child_index(&keys[..*len], k)])?,
                BNode::Leaf { len, keys, .. } => return Ok(search(&keys[..*len], k).ok().map(|i| (q, i))),
            }
        }
        Ok(None)
    }

    /// The value in slot `i` of leaf `p` (`None` for anything else, which
    /// `find` never returns).
    fn value(&mut self, p: P<K, V>, i: usize) -> Result<Option<V>, TxError> {
        match Self::n(p) {
            BNode::Leaf { len, vals, .. } if i < *len => Ok(Some(self.tx.read(&vals[i])?)),
            _ => Ok(None),
        }
    }

    fn leaf(&mut self, keys: &[K], vals: &[V]) -> Result<P<K, V>, TxError> {
        let fill = vals[0];
        let vals = core::array::from_fn(|i| TVar::new(vals.get(i).copied().unwrap_or(fill)));
        self.tx.alloc(BNode::Leaf { len: keys.len(), keys: keys_from(keys), vals })
    }

    fn inner(&mut self, keys: &[K], kids: &[Option<P<K, V>>]) -> Result<P<K, V>, TxError> {
        let kids = core::array::from_fn(|i| TVar::new(kids.get(i).copied().flatten()));
        self.tx.alloc(BNode::Inner { len: keys.len(), keys: keys_from(keys), kids })
    }

    /// Replaces the node `old`, reached through `link`, by `new`.
    fn relink(&mut self, link: &'t Link<BNode<K, V>>, old: P<K, V>, new: Option<P<K, V>>) -> Result<(), TxError> {
        self.tx.write(link, new)?;
        // SAFETY: `old` came from an insert's `alloc`; the write above was
        // its only link (a tree), so it is unreachable once this commits,
        // and it is freed once, here, as it is unlinked.
        unsafe { self.tx.free(old) }
    }

    fn insert_below(&mut self, link: &'t Link<BNode<K, V>>, k: K, v: V) -> Result<Ins<K, V>, TxError> {
        let Some(p) = self.tx.read(link)? else {
            // Only the root link is ever empty.
            let fresh = self.leaf(&[k], &[v])?;
            self.tx.write(link, Some(fresh))?;
            return Ok(Ins::Done(None));
        };
        match Self::n(p) {
            BNode::Leaf { len, keys, vals } => {
                let at = match search(&keys[..*len], &k) {
                    Ok(i) => {
                        let old = self.tx.read(&vals[i])?;
                        if old.to_word() != v.to_word() {
                            self.tx.write(&vals[i], v)?;
                        }
                        return Ok(Ins::Done(Some(old)));
                    }
                    Err(i) => i,
                };
                let mut ks = [K::default(); CAP + 1];
                let mut vs = [v; CAP + 1];
                for i in 0..*len {
                    let j = i + usize::from(i >= at);
                    ks[j] = keys[i];
                    vs[j] = self.tx.read(&vals[i])?;
                }
                ks[at] = k;
                let n = *len + 1;
                if n <= CAP {
                    let fresh = self.leaf(&ks[..n], &vs[..n])?;
                    self.relink(link, p, Some(fresh))?;
                    return Ok(Ins::Done(None));
                }
                let half = n / 2;
                let left = self.leaf(&ks[..half], &vs[..half])?;
                let right = self.leaf(&ks[half..n], &vs[half..n])?;
                self.relink(link, p, Some(left))?;
                Ok(Ins::Split(ks[half], right))
            }
            BNode::Inner { len, keys, kids } => {
                let i = child_index(&keys[..*len], &k);
                let (sep, right) = match self.insert_below(&kids[i], k, v)? {
                    Ins::Done(old) => return Ok(Ins::Done(old)),
                    Ins::Split(sep, right) => (sep, right),
                };
                let mut ks = [K::default(); CAP + 1];
                let mut cs = [None; CAP + 2];
                ks[..i].copy_from_slice(&keys[..i]);
                ks[i] = sep;
                ks[i + 1..=*len].copy_from_slice(&keys[i..*len]);
                for j in 0..=*len {
                    // The child the split relinked is read back from this
                    // transaction's own write.
                    cs[j + usize::from(j > i)] = self.tx.read(&kids[j])?;
                }
                cs[i + 1] = Some(right);
                let n = *len + 1;
                if n <= CAP {
                    let fresh = self.inner(&ks[..n], &cs[..=n])?;
                    self.relink(link, p, Some(fresh))?;
                    return Ok(Ins::Done(None));
                }
                // Split the n = CAP + 1 separators around the middle one,
                // which moves up.
                let half = n / 2;
                let left = self.inner(&ks[..half], &cs[..=half])?;
                let right = self.inner(&ks[half + 1..n], &cs[half + 1..=n])?;
                self.relink(link, p, Some(left))?;
                Ok(Ins::Split(ks[half], right))
            }
        }
    }

    fn insert(&mut self, root: &'t Link<BNode<K, V>>, k: K, v: V) -> Result<Option<V>, TxError> {
        match self.insert_below(root, k, v)? {
            Ins::Done(old) => Ok(old),
            Ins::Split(sep, right) => {
                let left = self.tx.read(root)?;
                let top = self.inner(&[sep], &[left, Some(right)])?;
                self.tx.write(root, Some(top))?;
                Ok(None)
            }
        }
    }

    fn remove(&mut self, link: &'t Link<BNode<K, V>>, k: &K, is_root: bool) -> Result<Option<V>, TxError> {
        let Some(p) = self.tx.read(link)? else { return Ok(None) };
        match Self::n(p) {
            BNode::Inner { len, keys, kids } => self.remove(&kids[child_index(&keys[..*len], k)], k, false),
            BNode::Leaf { len, keys, vals } => {
                let Ok(at) = search(&keys[..*len], k) else { return Ok(None) };
                let old = self.tx.read(&vals[at])?;
                let n = *len - 1;
                if n == 0 {
                    // An empty leaf stays (its parent's separators still
                    // bound its range); an empty root leaf goes.
                    let fresh = if is_root { None } else { Some(self.tx.alloc(BNode::empty_leaf(old))?) };
                    self.relink(link, p, fresh)?;
                    return Ok(Some(old));
                }
                let mut ks = [K::default(); CAP];
                let mut vs = [old; CAP];
                for i in (0..*len).filter(|&i| i != at) {
                    let j = i - usize::from(i > at);
                    ks[j] = keys[i];
                    vs[j] = self.tx.read(&vals[i])?;
                }
                let fresh = self.leaf(&ks[..n], &vs[..n])?;
                self.relink(link, p, Some(fresh))?;
                Ok(Some(old))
            }
        }
    }

    /// The smallest entry under `p`. Leaves may be empty after removals,
    /// so this is the first entry of the first non-empty leaf in order.
    fn first(&mut self, p: Option<P<K, V>>) -> Result<Option<(K, V)>, TxError> {
        let Some(p) = p else { return Ok(None) };
        match Self::n(p) {
            BNode::Leaf { len: 0, .. } => Ok(None),
            BNode::Leaf { keys, vals, .. } => Ok(Some((keys[0], self.tx.read(&vals[0])?))),
            BNode::Inner { len, kids, .. } => {
                for kid in &kids[..=*len] {
                    let c = self.tx.read(kid)?;
                    if let Some(e) = self.first(c)? {
                        return Ok(Some(e));
                    }
                }
                Ok(None)
            }
        }
    }

    /// Calls `f` on every entry in key order.
    fn for_each(&mut self, p: Option<P<K, V>>, f: &mut Visit<'_, 't, X, K, V>) -> Result<(), TxError> {
        let Some(p) = p else { return Ok(()) };
        match Self::n(p) {
            BNode::Leaf { len, keys, vals } => {
                for i in 0..*len {
                    f(self.tx, keys[i], &vals[i])?;
                }
            }
            BNode::Inner { len, kids, .. } => {
                for kid in &kids[..=*len] {
                    let c = self.tx.read(kid)?;
                    self.for_each(c, f)?;
                }
            }
        }
        Ok(())
    }

    /// Checks the subtree at `p` (depth `depth`) holds sorted keys within
    /// `[lo, hi)`; returns its leaves' depth.
    fn check(
        &mut self,
        p: P<K, V>,
        lo: Option<K>,
        hi: Option<K>,
        depth: usize,
    ) -> Result<Result<usize, Broken>, TxError> {
        let (len, keys) = match Self::n(p) {
            BNode::Leaf { len, keys, .. } | BNode::Inner { len, keys, .. } => (*len, &keys[..*len]),
        };
        if len > CAP {
            return Ok(Err(Broken::Overfull { len, cap: CAP }));
        }
        if keys.windows(2).any(|w| w[0] >= w[1]) {
            return Ok(Err(Broken::NodeOrder));
        }
        if keys.iter().any(|k| lo.is_some_and(|l| *k < l) || hi.is_some_and(|h| *k >= h)) {
            return Ok(Err(Broken::OutsideSeparators));
        }
        let BNode::Inner { kids, .. } = Self::n(p) else { return Ok(Ok(depth)) };
        if len == 0 {
            return Ok(Err(Broken::NoSeparators));
        }
        let mut leaves = None;
        for i in 0..=len {
            let Some(c) = self.tx.read(&kids[i])? else {
                return Ok(Err(Broken::MissingChild));
            };
            let (l, h) = (if i == 0 { lo } else { Some(keys[i - 1]) }, if i == len { hi } else { Some(keys[i]) });
            match self.check(c, l, h, depth + 1)? {
                Err(e) => return Ok(Err(e)),
                Ok(d) if leaves.is_some_and(|x| x != d) => return Ok(Err(Broken::UnevenLeaves)),
                Ok(d) => leaves = Some(d),
            }
        }
        Ok(Ok(leaves.unwrap_or(depth)))
    }
}

impl<K: Copy + Default, V: Word> BNode<K, V> {
    fn empty_leaf(fill: V) -> Self {
        BNode::Leaf { len: 0, keys: [K::default(); CAP], vals: core::array::from_fn(|_| TVar::new(fill)) }
    }
}

impl<K, V> TBTreeMap<K, V>
where
    K: Ord + Copy + Default + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    /// An empty map.
    pub fn new() -> Self {
        TBTreeMap { root: TVar::new(None), _owns: PhantomData }
    }

    fn bt<'a, 't, X: TxOps<'t> + ?Sized>(&'t self, tx: &'a mut X) -> Bt<'a, 't, X, K, V> {
        Bt { tx, _tcell: PhantomData, _kv: PhantomData }
    }

    /// Whether `k` is present.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn contains<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<bool, TxError> {
        Ok(self.bt(tx).find(&self.root, k)?.is_some())
    }

    /// The value for `k`.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn get<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<Option<V>, TxError> {
        let mut bt = self.bt(tx);
        match bt.find(&self.root, k)? {
            Some((p, i)) => bt.value(p, i),
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
        self.bt(tx).insert(&self.root, k, v)
    }

    /// Removes `k`; returns its value.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn remove<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<Option<V>, TxError> {
        self.bt(tx).remove(&self.root, k, true)
    }

    /// The smallest key and its value.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn first<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Option<(K, V)>, TxError> {
        let root = tx.read(&self.root)?;
        self.bt(tx).first(root)
    }

    /// The number of entries (walks the tree).
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn len<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<usize, TxError> {
        let mut n = 0;
        let root = tx.read(&self.root)?;
        self.bt(tx).for_each(root, &mut |_, _, _| {
            n += 1;
            Ok(())
        })?;
        Ok(n)
    }

    /// Whether the map is empty.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn is_empty<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<bool, TxError> {
        Ok(self.first(tx)?.is_none())
    }

    /// The entries in key order.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn to_vec<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Vec<(K, V)>, TxError> {
        let mut out = Vec::new();
        let root = tx.read(&self.root)?;
        self.bt(tx).for_each(root, &mut |tx, k, v| {
            out.push((k, tx.read(v)?));
            Ok(())
        })?;
        Ok(out)
    }

    /// Checks the tree's invariants (at most 16 keys a node, keys sorted and
    /// within their parent's separators, every inner node with a separator
    /// and all its children, leaves at one depth); returns the number of
    /// entries, or what is broken.
    ///
    /// # Errors
    ///
    /// The transaction's signal (outer `Result`); the broken invariant
    /// (inner `Result`).
    pub fn verify<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Result<usize, Broken>, TxError> {
        if let Some(r) = tx.read(&self.root)? {
            if let Err(e) = self.bt(tx).check(r, None, None, 0)? {
                return Ok(Err(e));
            }
        }
        Ok(Ok(self.len(tx)?))
    }
}

impl<K, V> Default for TBTreeMap<K, V>
where
    K: Ord + Copy + Default + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> Drop for TBTreeMap<K, V> {
    fn drop(&mut self) {
        let mut stack: Vec<usize> = vec![self.root.load_word() as usize];
        while let Some(a) = stack.pop() {
            if let Some(p) = TPtr::<BNode<K, V>>::from_addr(a) {
                // SAFETY: `&mut self`: no transaction can reach the tree; each
                // linked node is reached once (a tree) and freed here.
                let n = unsafe { p.into_box() };
                if let BNode::Inner { len, kids, .. } = &*n {
                    stack.extend(kids[..=*len].iter().map(|k| k.load_word() as usize));
                }
            }
        }
    }
}

impl<K, V> fmt::Debug for TBTreeMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TBTreeMap").finish_non_exhaustive()
    }
}

mod owned;
pub use owned::{BTreeIntoIter, BTreeIterMut};

#[cfg(test)]
mod tests {
    use super::TBTreeMap;
    use crate::collections::ordered_tests::{agrees_with_std, stays_whole_under_threads};

    #[test]
    fn agrees_with_std_under_random_inserts_and_removes() {
        // 3,000 keys hit every case: splits at every level, empty leaves,
        // removal of absent keys.
        agrees_with_std(&TBTreeMap::new());
    }

    #[test]
    fn concurrent_inserts_and_removes_keep_the_tree_whole() {
        stays_whole_under_threads(&TBTreeMap::new());
    }
}
