//! An ordered map: a red-black tree with parent links.

use core::fmt;
use core::marker::PhantomData;

use super::Broken;
use super::{Link, node};
use crate::error::TxError;
use crate::tvar::TVar;
use crate::txops::TxOps;
use crate::word::{TPtr, Word};

struct RNode<K, V> {
    key: K,
    left: Link<RNode<K, V>>,
    right: Link<RNode<K, V>>,
    parent: Link<RNode<K, V>>,
    red: TVar<bool>,
    value: TVar<V>,
}

type P<K, V> = TPtr<RNode<K, V>>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Left,
    Right,
}

impl Dir {
    fn opp(self) -> Dir {
        match self {
            Dir::Left => Dir::Right,
            Dir::Right => Dir::Left,
        }
    }
}

/// An ordered map kept as a red-black tree with parent links, in the shape
/// of STAMP's `rbtree` (itself after Java's `TreeMap`), with one change:
/// deleting a node with two children relinks its successor into its place
/// instead of copying the successor's key, so keys never change and a
/// search reads one link per level.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, TMap};
///
/// let m = TMap::new();
/// atomically(|tx| {
///     for k in [5i64, 1, 9, 3] {
///         m.insert(tx, k, k as u32 * 10)?;
///     }
///     m.remove(tx, &5)
/// });
/// assert_eq!(atomically(|tx| m.to_vec(tx)), vec![(1, 10), (3, 30), (9, 90)]);
/// assert_eq!(atomically(|tx| m.get(tx, &3)), Some(30));
/// ```
pub struct TMap<K, V> {
    root: Link<RNode<K, V>>,
    _owns: PhantomData<RNode<K, V>>,
}

/// One operation's view of the tree: the transaction and the root link.
struct Rb<'a, 't, X: ?Sized, K, V> {
    tx: &'a mut X,
    root: &'t Link<RNode<K, V>>,
}

impl<'a, 't, X, K, V> Rb<'a, 't, X, K, V>
where
    X: TxOps<'t> + ?Sized,
    K: Ord + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    #[inline(always)]
    fn n(p: P<K, V>) -> &'t RNode<K, V> {
        // SAFETY: every pointer handled by `Rb` was read from a link (or
        // allocated) by the transaction that runs the operation, and `Rb`
        // lives only for that operation.
        unsafe { node(p) }
    }

    #[inline(always)]
    fn link(p: P<K, V>, d: Dir) -> &'t Link<RNode<K, V>> {
        let n = Self::n(p);
        match d {
            Dir::Left => &n.left,
            Dir::Right => &n.right,
        }
    }

    fn root(&mut self) -> Result<Option<P<K, V>>, TxError> {
        self.tx.read(self.root)
    }

    fn child(&mut self, p: Option<P<K, V>>, d: Dir) -> Result<Option<P<K, V>>, TxError> {
        match p {
            Some(p) => self.tx.read(Self::link(p, d)),
            None => Ok(None),
        }
    }

    fn parent(&mut self, p: Option<P<K, V>>) -> Result<Option<P<K, V>>, TxError> {
        match p {
            Some(p) => self.tx.read(&Self::n(p).parent),
            None => Ok(None),
        }
    }

    fn is_red(&mut self, p: Option<P<K, V>>) -> Result<bool, TxError> {
        match p {
            Some(p) => self.tx.read(&Self::n(p).red),
            None => Ok(false),
        }
    }

    fn set_red(&mut self, p: Option<P<K, V>>, red: bool) -> Result<(), TxError> {
        match p {
            Some(p) => self.tx.write(&Self::n(p).red, red),
            None => Ok(()),
        }
    }

    fn set_child(&mut self, p: P<K, V>, d: Dir, c: Option<P<K, V>>) -> Result<(), TxError> {
        self.tx.write(Self::link(p, d), c)
    }

    fn set_parent(&mut self, p: Option<P<K, V>>, par: Option<P<K, V>>) -> Result<(), TxError> {
        match p {
            Some(p) => self.tx.write(&Self::n(p).parent, par),
            None => Ok(()),
        }
    }

    /// Makes the link that points at `old` (its parent's child link, or the
    /// root) point at `new`.
    fn replace_in_parent(&mut self, pp: Option<P<K, V>>, old: P<K, V>, new: Option<P<K, V>>) -> Result<(), TxError> {
        match pp {
            None => self.tx.write(self.root, new),
            Some(g) => {
                let d = if self.child(Some(g), Dir::Left)? == Some(old) { Dir::Left } else { Dir::Right };
                self.set_child(g, d, new)
            }
        }
    }

    /// Rotates `p` down in direction `d` (Left: its right child rises).
    fn rotate(&mut self, p: Option<P<K, V>>, d: Dir) -> Result<(), TxError> {
        let Some(p) = p else { return Ok(()) };
        let Some(r) = self.child(Some(p), d.opp())? else { return Ok(()) };
        let inner = self.child(Some(r), d)?;
        self.set_child(p, d.opp(), inner)?;
        self.set_parent(inner, Some(p))?;
        let pp = self.parent(Some(p))?;
        self.set_parent(Some(r), pp)?;
        self.replace_in_parent(pp, p, Some(r))?;
        self.set_child(r, d, Some(p))?;
        self.set_parent(Some(p), Some(r))
    }

    /// The node of `k`, if any. One transactional read a level, at one
    /// call site, the child chosen with `<` and `>` (for the integer keys
    /// of most maps one compare and two branches, where `cmp` makes an
    /// `Ordering` and branches on it: 6 instructions a level fewer, and
    /// one inlined read instead of two; see the instruction-count guard).
    fn find(&mut self, k: &K) -> Result<Option<P<K, V>>, TxError> {
        let mut t = self.root()?;
        while let Some(p) = t {
            let n = Self::n(p);
            let link = if *k < n.key {
                &n.left
            } else if *k > n.key {
                &n.right
            } else {
                return Ok(Some(p));
            };
            t = self.tx.read(link)?;
        }
        Ok(None)
    }

    fn insert(&mut self, k: K, v: V) -> Result<Option<V>, TxError> {
        let Some(mut t) = self.root()? else {
            let fresh = self.tx.alloc(RNode::new(k, v, None, false))?;
            self.tx.write(self.root, Some(fresh))?;
            return Ok(None);
        };
        let d = loop {
            let n = Self::n(t);
            // `<` and `>` rather than `cmp`, as in `find`.
            let d = if k < n.key {
                Dir::Left
            } else if k > n.key {
                Dir::Right
            } else {
                let old = self.tx.read(&n.value)?;
                if old.to_word() != v.to_word() {
                    self.tx.write(&n.value, v)?;
                }
                return Ok(Some(old));
            };
            match self.tx.read(Self::link(t, d))? {
                Some(c) => t = c,
                None => break d,
            }
        };
        let fresh = self.tx.alloc(RNode::new(k, v, Some(t), true))?;
        self.set_child(t, d, Some(fresh))?;
        self.fix_after_insertion(Some(fresh))?;
        Ok(None)
    }

    fn fix_after_insertion(&mut self, mut x: Option<P<K, V>>) -> Result<(), TxError> {
        loop {
            if x.is_none() || x == self.root()? {
                break;
            }
            let px = self.parent(x)?;
            if !self.is_red(px)? {
                break;
            }
            let gx = self.parent(px)?;
            let d = if px == self.child(gx, Dir::Left)? { Dir::Left } else { Dir::Right };
            let y = self.child(gx, d.opp())?;
            if self.is_red(y)? {
                self.set_red(px, false)?;
                self.set_red(y, false)?;
                self.set_red(gx, true)?;
                x = gx;
            } else {
                if x == self.child(px, d.opp())? {
                    x = px;
                    self.rotate(x, d)?;
                }
                let px = self.parent(x)?;
                let gx = self.parent(px)?;
                self.set_red(px, false)?;
                self.set_red(gx, true)?;
                self.rotate(gx, d.opp())?;
            }
        }
        let r = self.root()?;
        if self.is_red(r)? {
            self.set_red(r, false)?;
        }
        Ok(())
    }

    /// Exchanges `p` (which has two children) with its in-order successor
    /// `s`, links and colours, so that `p` ends up where `s` was (with no
    /// left child) and `s` where `p` was. Keys stay with their nodes.
    fn swap_with_successor(&mut self, p: P<K, V>) -> Result<(), TxError> {
        let pl = self.child(Some(p), Dir::Left)?;
        let pr = self.child(Some(p), Dir::Right)?;
        let Some(mut s) = pr else { return Ok(()) };
        while let Some(l) = self.child(Some(s), Dir::Left)? {
            s = l;
        }
        let pp = self.parent(Some(p))?;
        let pc = self.is_red(Some(p))?;
        let sp = self.parent(Some(s))?;
        let sr = self.child(Some(s), Dir::Right)?;
        let sc = self.is_red(Some(s))?;

        self.replace_in_parent(pp, p, Some(s))?;
        self.set_parent(Some(s), pp)?;
        self.set_child(s, Dir::Left, pl)?;
        self.set_parent(pl, Some(s))?;
        if Some(s) == pr {
            self.set_child(s, Dir::Right, Some(p))?;
            self.set_parent(Some(p), Some(s))?;
        } else {
            self.set_child(s, Dir::Right, pr)?;
            self.set_parent(pr, Some(s))?;
            if let Some(sp) = sp {
                self.set_child(sp, Dir::Left, Some(p))?;
            }
            self.set_parent(Some(p), sp)?;
        }
        self.set_child(p, Dir::Left, None)?;
        self.set_child(p, Dir::Right, sr)?;
        self.set_parent(sr, Some(p))?;
        if pc != sc {
            self.set_red(Some(s), pc)?;
            self.set_red(Some(p), sc)?;
        }
        Ok(())
    }

    fn remove(&mut self, k: &K) -> Result<Option<V>, TxError> {
        let Some(p) = self.find(k)? else { return Ok(None) };
        let v = self.tx.read(&Self::n(p).value)?;
        if self.child(Some(p), Dir::Left)?.is_some() && self.child(Some(p), Dir::Right)?.is_some() {
            self.swap_with_successor(p)?;
        }
        let l = self.child(Some(p), Dir::Left)?;
        let repl = match l {
            Some(_) => l,
            None => self.child(Some(p), Dir::Right)?,
        };
        let black = !self.is_red(Some(p))?;
        if repl.is_some() {
            let pp = self.parent(Some(p))?;
            self.set_parent(repl, pp)?;
            self.replace_in_parent(pp, p, repl)?;
            if black {
                self.fix_after_deletion(repl)?;
            }
        } else if self.parent(Some(p))?.is_none() {
            self.tx.write(self.root, None)?;
        } else {
            if black {
                self.fix_after_deletion(Some(p))?;
            }
            if let Some(pp) = self.parent(Some(p))? {
                if self.child(Some(pp), Dir::Left)? == Some(p) {
                    self.set_child(pp, Dir::Left, None)?;
                } else if self.child(Some(pp), Dir::Right)? == Some(p) {
                    self.set_child(pp, Dir::Right, None)?;
                }
            }
        }
        // SAFETY: `p` was allocated by an insert, is now unlinked from its
        // parent (or the root) and no node points at it as parent (its
        // children were moved to `repl`'s new parent); freed once.
        unsafe { self.tx.free(p)? };
        Ok(Some(v))
    }

    fn fix_after_deletion(&mut self, mut x: Option<P<K, V>>) -> Result<(), TxError> {
        while x != self.root()? && !self.is_red(x)? {
            let px = self.parent(x)?;
            let d = if x == self.child(px, Dir::Left)? { Dir::Left } else { Dir::Right };
            let mut sib = self.child(px, d.opp())?;
            if self.is_red(sib)? {
                self.set_red(sib, false)?;
                self.set_red(px, true)?;
                self.rotate(px, d)?;
                let px = self.parent(x)?;
                sib = self.child(px, d.opp())?;
            }
            let sd = self.child(sib, d)?;
            let so = self.child(sib, d.opp())?;
            if !self.is_red(sd)? && !self.is_red(so)? {
                self.set_red(sib, true)?;
                x = self.parent(x)?;
            } else {
                if !self.is_red(so)? {
                    self.set_red(sd, false)?;
                    self.set_red(sib, true)?;
                    self.rotate(sib, d.opp())?;
                    let px = self.parent(x)?;
                    sib = self.child(px, d.opp())?;
                }
                let px = self.parent(x)?;
                let pred = self.is_red(px)?;
                self.set_red(sib, pred)?;
                self.set_red(px, false)?;
                let so = self.child(sib, d.opp())?;
                self.set_red(so, false)?;
                self.rotate(px, d)?;
                x = self.root()?;
            }
        }
        if self.is_red(x)? {
            self.set_red(x, false)?;
        }
        Ok(())
    }

    /// In-order walk.
    fn for_each(&mut self, mut f: impl FnMut(&mut X, P<K, V>) -> Result<(), TxError>) -> Result<(), TxError> {
        let mut stack = Vec::new();
        let mut cur = self.root()?;
        loop {
            while let Some(p) = cur {
                stack.push(p);
                cur = self.child(Some(p), Dir::Left)?;
            }
            let Some(p) = stack.pop() else { return Ok(()) };
            f(self.tx, p)?;
            cur = self.child(Some(p), Dir::Right)?;
        }
    }

    /// Checks the red-black and search-tree invariants and the parent
    /// links; returns the black height.
    fn check(&mut self, p: Option<P<K, V>>, lo: Option<K>, hi: Option<K>) -> Result<Result<usize, Broken>, TxError> {
        let Some(p) = p else { return Ok(Ok(1)) };
        let k = Self::n(p).key;
        if lo.is_some_and(|lo| k <= lo) || hi.is_some_and(|hi| k >= hi) {
            return Ok(Err(Broken::KeysOutOfOrder));
        }
        let red = self.is_red(Some(p))?;
        let mut heights = [0; 2];
        for (i, d) in [Dir::Left, Dir::Right].into_iter().enumerate() {
            let c = self.child(Some(p), d)?;
            if c.is_some() && self.parent(c)? != Some(p) {
                return Ok(Err(Broken::ParentLink));
            }
            if red && self.is_red(c)? {
                return Ok(Err(Broken::RedRed));
            }
            let (clo, chi) = if d == Dir::Left { (lo, Some(k)) } else { (Some(k), hi) };
            match self.check(c, clo, chi)? {
                Ok(h) => heights[i] = h,
                Err(e) => return Ok(Err(e)),
            }
        }
        if heights[0] != heights[1] {
            return Ok(Err(Broken::BlackHeights));
        }
        Ok(Ok(heights[0] + usize::from(!red)))
    }
}

impl<K, V> RNode<K, V>
where
    K: Send + Sync + 'static,
    V: Word + Send + Sync,
{
    fn new(key: K, value: V, parent: Option<TPtr<RNode<K, V>>>, red: bool) -> Self {
        RNode {
            key,
            left: TVar::new(None),
            right: TVar::new(None),
            parent: TVar::new(parent),
            red: TVar::new(red),
            value: TVar::new(value),
        }
    }
}

impl<K, V> TMap<K, V>
where
    K: Ord + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    /// An empty map.
    pub fn new() -> Self {
        TMap { root: TVar::new(None), _owns: PhantomData }
    }

    fn rb<'a, 't, X: TxOps<'t> + ?Sized>(&'t self, tx: &'a mut X) -> Rb<'a, 't, X, K, V> {
        Rb { tx, root: &self.root }
    }

    /// Whether `k` is present.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn contains<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<bool, TxError> {
        Ok(self.rb(tx).find(k)?.is_some())
    }

    /// The value for `k`.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn get<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<Option<V>, TxError> {
        match self.rb(tx).find(k)? {
            Some(p) => Ok(Some(tx.read(&Rb::<X, K, V>::n(p).value)?)),
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
        self.rb(tx).insert(k, v)
    }

    /// Removes `k`; returns its value.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn remove<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<Option<V>, TxError> {
        self.rb(tx).remove(k)
    }

    /// The smallest key and its value.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn first<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Option<(K, V)>, TxError> {
        let mut rb = self.rb(tx);
        let mut t = rb.root()?;
        let mut last = None;
        while let Some(p) = t {
            last = Some(p);
            t = rb.child(Some(p), Dir::Left)?;
        }
        match last {
            Some(p) => {
                let n = Rb::<X, K, V>::n(p);
                Ok(Some((n.key, tx.read(&n.value)?)))
            }
            None => Ok(None),
        }
    }

    /// The number of entries (walks the tree).
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn len<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<usize, TxError> {
        let mut n = 0;
        self.rb(tx).for_each(|_, _| {
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
        Ok(tx.read(&self.root)?.is_none())
    }

    /// The entries in key order.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn to_vec<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Vec<(K, V)>, TxError> {
        let mut out = Vec::new();
        self.rb(tx).for_each(|tx, p| {
            let n = Rb::<X, K, V>::n(p);
            out.push((n.key, tx.read(&n.value)?));
            Ok(())
        })?;
        Ok(out)
    }

    /// Checks the tree's invariants (search order, parent links, no red node
    /// with a red child, equal black heights, black root); returns the
    /// number of entries, or what is broken.
    ///
    /// # Errors
    ///
    /// The transaction's signal (outer `Result`); the broken invariant
    /// (inner `Result`).
    pub fn verify<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Result<usize, Broken>, TxError> {
        let mut rb = self.rb(tx);
        let r = rb.root()?;
        if rb.is_red(r)? {
            return Ok(Err(Broken::RedRoot));
        }
        if r.is_some() && rb.parent(r)?.is_some() {
            return Ok(Err(Broken::RootParent));
        }
        if let Err(e) = rb.check(r, None, None)? {
            return Ok(Err(e));
        }
        Ok(Ok(self.len(tx)?))
    }
}

impl<K, V> Default for TMap<K, V>
where
    K: Ord + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> Drop for TMap<K, V> {
    fn drop(&mut self) {
        let mut stack: Vec<usize> = vec![self.root.load_word() as usize];
        while let Some(a) = stack.pop() {
            if let Some(p) = TPtr::<RNode<K, V>>::from_addr(a) {
                // SAFETY: `&mut self`: no transaction can reach the tree; each
                // linked node is reached once (a tree) and freed here.
                let n = unsafe { p.into_box() };
                stack.push(n.left.load_word() as usize);
                stack.push(n.right.load_word() as usize);
            }
        }
    }
}

impl<K, V> fmt::Debug for TMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TMap").finish_non_exhaustive()
    }
}

mod owned;
pub use owned::{MapIntoIter, MapIterMut};
