//! An ordered map: a skip list (TinySTM's intset `sl`).
//!
//! # Layout
//!
//! A node is allocated with exactly as many forward links as its level:
//! `SNode<K, V, N>` for a node of `N` levels, one type per level, `repr(C)`
//! so that every level shares the prefix `key`, `level`, `value` and has
//! its links at the same offset. A link holds the node's address typed as
//! the zero-link view [`Node`], and code reaches the links through
//! [`forward`], which makes the slice of `level` links from the address.
//! [`TxOps::alloc`] takes only sized objects, so the exact size is reached
//! by naming the type of each level ([`by_level!`]) where a node is made or
//! dropped. A fixed array of 32 links in every node would have needed no
//! layout argument, at 280 bytes a node for `u64` keys and values where
//! half the nodes need one link (32 bytes here); a boxed slice of links
//! would have been a second allocation per insert and a second cache line
//! on every step of a search.
//!
//! # Levels
//!
//! A new node's level is drawn from a thread-local xorshift (seeded once
//! per thread, from a count of the threads that drew before it): level `l` with probability
//! `2^-l`, capped at [`MAX_LEVEL`]. No shared state, so two inserts never
//! conflict over the draw; and no `Hash` bound on the key: a hash of the
//! key would have made the shape reproducible, but needed a bound that
//! [`TList`](crate::TList) and [`TBTreeMap`](crate::TBTreeMap) do not ask
//! for. The tests check results against a model and the invariants with
//! `verify`, whatever the shape. An aborted attempt draws again on its
//! next run, which changes nothing but the shape.
//!
//! # The top level
//!
//! `top` is the highest level any node has had: a search starts there. It
//! is written only when an insert draws a level above it, at most about
//! `log2 n` times over the map's life, and never lowered (a remove would then have
//! to look at the head's links, and every remove of a tall node would write
//! a word every search reads). A map that shrank keeps its top: searches
//! then read a few empty head links. It sits in its own cache line, so
//! writes to the head's links (inserts at the front) do not move the line
//! every search reads it from.

use core::fmt;
use core::marker::PhantomData;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use super::Broken;
use super::Link;
use crate::error::TxError;
use crate::tvar::TVar;
use crate::txops::TxOps;
use crate::word::{TPtr, Word};

/// The most levels a node has. With probability 1/2 per level up, 32
/// levels keep searches logarithmic up to about 2^32 keys.
const MAX_LEVEL: usize = 32;

// `by_level!` lists the levels 1..=31 and takes the last arm for 32.
const _: () = assert!(MAX_LEVEL == 32);

/// A node of `N` levels. `key` and `level` (`== N`) never change once the
/// node is made; the links and the value are transactional.
#[repr(C)]
struct SNode<K, V, const N: usize> {
    key: K,
    level: usize,
    value: TVar<V>,
    next: [Link<Node<K, V>>; N],
}

/// A node of any level, as links point at it: the prefix every `SNode`
/// shares. Never dereferenced as a whole (its size says nothing of the
/// links that follow): only through [`key`], [`level`], [`value`] and
/// [`forward`].
type Node<K, V> = SNode<K, V, 0>;

type P<K, V> = TPtr<Node<K, V>>;

type SLink<K, V> = Link<Node<K, V>>;

/// Runs `$body` with the constant `$n` set to `$level`, one of
/// `1..=MAX_LEVEL`: each level's node is its own type `SNode<K, V, N>`, so
/// the code that makes or drops a node names that type by level.
macro_rules! by_level {
    ($level:expr, $n:ident => $body:expr) => {
        by_level!(@arms $level, $n, $body,
            [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31])
    };
    (@arms $level:expr, $n:ident, $body:expr, [$($l:literal)*]) => {
        match $level {
            $($l => {
                const $n: usize = $l;
                $body
            })*
            // MAX_LEVEL: a node's level is in 1..=MAX_LEVEL (it is the `N`
            // of the type it was made as), so this arm is level 32.
            _ => {
                const $n: usize = MAX_LEVEL;
                $body
            }
        }
    };
}

/// The key of the node behind `p`.
///
/// # Safety
///
/// The node is alive for `'a`: `p` was read from a link (or allocated) by
/// the transaction running now and the reference is not used after it
/// ends, or the caller has exclusive access to the map (see
/// [`TPtr::get`]).
#[inline(always)]
unsafe fn key<'a, K, V>(p: P<K, V>) -> &'a K {
    // SAFETY: the node is alive (the caller's contract) and was made as some
    // `SNode<K, V, N>`, whose `repr(C)` prefix `key` is at the same offset
    // as in `Node`; the reference covers that field only.
    unsafe { &(*p.as_ptr()).key }
}

/// The level (number of links) of the node behind `p`.
///
/// # Safety
///
/// As [`key`].
#[inline(always)]
unsafe fn level<K, V>(p: P<K, V>) -> usize {
    // SAFETY: as in `key`, for the field `level`.
    unsafe { (*p.as_ptr()).level }
}

/// The value of the node behind `p`.
///
/// # Safety
///
/// As [`key`].
#[inline(always)]
unsafe fn value<'a, K, V>(p: P<K, V>) -> &'a TVar<V> {
    // SAFETY: as in `key`, for the field `value`.
    unsafe { &(*p.as_ptr()).value }
}

/// The forward links of the node behind `p`, one per level.
///
/// # Safety
///
/// As [`key`].
#[inline(always)]
unsafe fn forward<'a, K, V>(p: P<K, V>) -> &'a [SLink<K, V>] {
    // SAFETY: the node is alive (the caller's contract) and was made as an
    // `SNode<K, V, N>` with `N == level` (`Sl::alloc_level`). Its `next`
    // array starts at the offset of `Node`'s `next` (`repr(C)`: the fields
    // before it are the same, and an array of links is aligned as a link
    // whatever its length; `alloc_level` asserts it) and holds `level`
    // initialised links, inside the node's allocation. The pointer is made
    // without a reference to the node, so the slice's provenance is the
    // whole allocation's.
    unsafe {
        let base = p.as_ptr();
        core::slice::from_raw_parts(core::ptr::addr_of!((*base).next).cast::<SLink<K, V>>(), (*base).level)
    }
}

std::thread_local! {
    /// This thread's xorshift state for drawing levels; 0 until seeded.
    static LEVEL_RNG: Cell<u64> = const { Cell::new(0) };
}

/// A level for a new node: `l` with probability `2^-l`, at most
/// [`MAX_LEVEL`]. Thread-local (see the module docs).
fn random_level() -> usize {
    LEVEL_RNG
        .try_with(|s| {
            let mut x = s.get();
            if x == 0 {
                // One seed per thread, in the order threads first draw
                // (not from an address: the instruction-count guard needs
                // the same shape whatever the build's memory layout);
                // splitmix64's finalizer spreads it over the word.
                static SEEDS: AtomicU64 = AtomicU64::new(0);
                let mut z = SEEDS.fetch_add(1, Ordering::Relaxed).wrapping_add(0x9e37_79b9_7f4a_7c15);
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                x = (z ^ (z >> 31)) | 1;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.set(x);
            // xorshift64*: the high half of the product is the well-mixed one.
            let bits = (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32;
            (1 + bits.trailing_ones() as usize).min(MAX_LEVEL)
        })
        // Only while the thread's locals are being destroyed: one level is
        // always correct.
        .unwrap_or(1)
}

/// An ordered map kept as a skip list (TinySTM's intset `sl`): a head with
/// a forward link per level, and nodes linked on each of their own levels
/// (level `l` with probability `2^-l`, up to 32), so a search skips along
/// the high levels and reads about two links per level, `O(log n)` in all.
///
/// Against [`TMap`](crate::TMap), the red-black tree, an insert or a remove
/// writes only the links of the new or removed node's levels (two on
/// average) and never rebalances, so two updates conflict only when they
/// touch the same links; against [`TBTreeMap`](crate::TBTreeMap) it copies
/// nothing. A lookup reads more links than the B+tree's one per level.
///
/// Nodes are allocated with exactly their level's number of links. The top
/// level grows as taller nodes arrive and is never lowered; see the module
/// source for the layout and the level drawing.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, TSkipMap};
///
/// let m = TSkipMap::new();
/// atomically(|tx| {
///     for k in [5u32, 1, 9, 3] {
///         m.insert(tx, k, u64::from(k) * 10)?;
///     }
///     m.remove(tx, &5)
/// });
/// assert_eq!(atomically(|tx| m.to_vec(tx)), vec![(1, 10), (3, 30), (9, 90)]);
/// assert_eq!(atomically(|tx| m.get(tx, &3)), Some(30));
/// assert_eq!(atomically(|tx| m.first(tx)), Some((1, 10)));
/// assert_eq!(atomically(|tx| m.verify(tx)), Ok(3));
/// ```
pub struct TSkipMap<K, V> {
    /// The head's forward links, one per level.
    head: [SLink<K, V>; MAX_LEVEL],
    /// The number of levels a search starts from: at least every node's
    /// level, never lowered.
    top: CachePadded<TVar<usize>>,
    _owns: PhantomData<Node<K, V>>,
}

/// One operation's view of the list: the transaction and the map.
struct Sl<'a, 't, X: ?Sized, K, V> {
    tx: &'a mut X,
    map: &'t TSkipMap<K, V>,
}

/// For each level, the link before the first key not less than the one
/// sought.
type Preds<'t, K, V> = [&'t SLink<K, V>; MAX_LEVEL];

/// For each level, the node that link points at.
type Succs<K, V> = [Option<P<K, V>>; MAX_LEVEL];

impl<'a, 't, X, K, V> Sl<'a, 't, X, K, V>
where
    X: TxOps<'t> + ?Sized,
    K: Ord + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    // Every pointer handled by `Sl` was read from a link (or allocated) by
    // the transaction that runs the operation, and `Sl` lives only for that
    // operation: the contract of `key`, `level`, `value` and `forward`.

    #[inline(always)]
    fn key(p: P<K, V>) -> &'t K {
        // SAFETY: see above.
        unsafe { key(p) }
    }

    #[inline(always)]
    fn level(p: P<K, V>) -> usize {
        // SAFETY: see above.
        unsafe { level(p) }
    }

    #[inline(always)]
    fn value(p: P<K, V>) -> &'t TVar<V> {
        // SAFETY: see above.
        unsafe { value(p) }
    }

    #[inline(always)]
    fn forward(p: P<K, V>) -> &'t [SLink<K, V>] {
        // SAFETY: see above.
        unsafe { forward(p) }
    }

    fn top(&mut self) -> Result<usize, TxError> {
        Ok(self.tx.read(&*self.map.top)?.min(MAX_LEVEL))
    }

    /// The node holding `k`. Stops at the first level that reaches it.
    fn find(&mut self, k: &K) -> Result<Option<P<K, V>>, TxError> {
        let top = self.top()?;
        let mut links: &'t [SLink<K, V>] = &self.map.head;
        for l in (0..top).rev() {
            // A node reached through a level-`l` link has more than `l`
            // levels: `links[l]` is in bounds, here and below.
            // `<` and `>` rather than `cmp` (see `TMap`'s `find`).
            while let Some(p) = self.tx.read(&links[l])? {
                let key = Self::key(p);
                if key < k {
                    links = Self::forward(p);
                } else if key > k {
                    break;
                } else {
                    return Ok(Some(p));
                }
            }
        }
        Ok(None)
    }

    /// Fills `preds` and `succs` on every level below the top (the levels
    /// above keep the head's links and `None`, as they start); returns the
    /// top.
    fn seek(&mut self, k: &K, preds: &mut Preds<'t, K, V>, succs: &mut Succs<K, V>) -> Result<usize, TxError> {
        let top = self.top()?;
        let mut links: &'t [SLink<K, V>] = &self.map.head;
        for l in (0..top).rev() {
            loop {
                let next = self.tx.read(&links[l])?;
                match next {
                    Some(p) if Self::key(p) < k => links = Self::forward(p),
                    _ => {
                        preds[l] = &links[l];
                        succs[l] = next;
                        break;
                    }
                }
            }
        }
        Ok(top)
    }

    fn preds(&self) -> (Preds<'t, K, V>, Succs<K, V>) {
        let head: &'t [SLink<K, V>] = &self.map.head;
        (core::array::from_fn(|l| &head[l]), [None; MAX_LEVEL])
    }

    /// A node of `succs.len()` levels (1..=MAX_LEVEL) whose links point at
    /// `succs`.
    fn alloc_node(&mut self, k: K, v: V, succs: &[Option<P<K, V>>]) -> Result<P<K, V>, TxError> {
        by_level!(succs.len(), N => self.alloc_level::<N>(k, v, succs))
    }

    fn alloc_level<const N: usize>(&mut self, k: K, v: V, succs: &[Option<P<K, V>>]) -> Result<P<K, V>, TxError> {
        const {
            assert!(core::mem::offset_of!(SNode<K, V, N>, next) == core::mem::offset_of!(Node<K, V>, next));
        }
        let next = core::array::from_fn(|i| TVar::new(succs[i]));
        let fresh = self.tx.alloc(SNode::<K, V, N> { key: k, level: N, value: TVar::new(v), next })?;
        Ok(fresh.cast())
    }

    /// Frees the node behind `p` when the transaction commits.
    ///
    /// # Safety
    ///
    /// As [`TxOps::free`]: `p` came from `alloc_node` (of this transaction or
    /// of one that committed), this transaction unlinked it from every
    /// level, and it is not freed again.
    unsafe fn free_node(&mut self, p: P<K, V>) -> Result<(), TxError> {
        // SAFETY: the node was allocated as an `SNode<K, V, N>` with `N` its
        // level (`alloc_level`), so `cast` gives back the pointer `alloc`
        // returned; the rest is the caller's contract.
        by_level!(Self::level(p), N => unsafe { self.tx.free(p.cast::<SNode<K, V, N>>()) })
    }

    fn insert(&mut self, k: K, v: V) -> Result<Option<V>, TxError> {
        let (mut preds, mut succs) = self.preds();
        let top = self.seek(&k, &mut preds, &mut succs)?;
        if let Some(p) = succs[0] {
            if *Self::key(p) == k {
                let value = Self::value(p);
                let old = self.tx.read(value)?;
                if old.to_word() != v.to_word() {
                    self.tx.write(value, v)?;
                }
                return Ok(Some(old));
            }
        }
        let level = random_level();
        if level > top {
            // The levels from `top` up are empty: their predecessor is the
            // head and their successor none, as `preds` left them.
            self.tx.write(&*self.map.top, level)?;
        }
        let fresh = self.alloc_node(k, v, &succs[..level])?;
        for &pred in &preds[..level] {
            self.tx.write(pred, Some(fresh))?;
        }
        Ok(None)
    }

    fn remove(&mut self, k: &K) -> Result<Option<V>, TxError> {
        let (mut preds, mut succs) = self.preds();
        self.seek(k, &mut preds, &mut succs)?;
        let Some(p) = succs[0] else { return Ok(None) };
        if Self::key(p) != k {
            return Ok(None);
        }
        let old = self.tx.read(Self::value(p))?;
        // `p` is linked on exactly its own levels, all below the top, and on
        // each of them `preds[l]` is the link just before the first key not
        // less than `k`: the link that points at `p`.
        for (&pred, link) in preds.iter().zip(Self::forward(p)) {
            let after = self.tx.read(link)?;
            self.tx.write(pred, after)?;
        }
        // SAFETY: `p` came from an insert's `alloc_node`; the loop unlinked
        // it from every level it is on, the only links that pointed at it;
        // it is freed once (a second remove of `k` in this transaction no
        // longer finds it).
        unsafe { self.free_node(p)? };
        Ok(Some(old))
    }

    fn first(&mut self) -> Result<Option<(K, V)>, TxError> {
        let Some(p) = self.tx.read(&self.map.head[0])? else { return Ok(None) };
        Ok(Some((*Self::key(p), self.tx.read(Self::value(p))?)))
    }

    /// Calls `f` on every entry in key order (walks level 0).
    fn for_each(&mut self, mut f: impl FnMut(&mut X, K, &'t TVar<V>) -> Result<(), TxError>) -> Result<(), TxError> {
        let mut link = &self.map.head[0];
        while let Some(p) = self.tx.read(link)? {
            f(self.tx, *Self::key(p), Self::value(p))?;
            link = &Self::forward(p)[0];
        }
        Ok(())
    }

    /// See [`TSkipMap::verify`].
    fn check(&mut self) -> Result<Result<usize, Broken>, TxError> {
        let top = self.tx.read(&*self.map.top)?;
        if top > MAX_LEVEL {
            return Ok(Err(Broken::TopTooHigh { top, max: MAX_LEVEL }));
        }
        for l in top..MAX_LEVEL {
            if self.tx.read(&self.map.head[l])?.is_some() {
                return Ok(Err(Broken::AboveTop { level: l, top }));
            }
        }
        // Level 0 holds every node, in strictly ascending key order (which
        // also rules out a cycle), each of 1..=top levels.
        let mut nodes: Vec<P<K, V>> = Vec::new();
        let mut link = &self.map.head[0];
        while let Some(p) = self.tx.read(link)? {
            if nodes.last().is_some_and(|&q| Self::key(q) >= Self::key(p)) {
                return Ok(Err(Broken::LevelOrder { level: 0 }));
            }
            let lv = Self::level(p);
            if lv == 0 || lv > top {
                return Ok(Err(Broken::NodeLevels { levels: lv, top }));
            }
            nodes.push(p);
            link = &Self::forward(p)[0];
        }
        // Level `l` holds exactly the nodes of more than `l` levels, in the
        // order of level 0: so it is sorted, each of its nodes is on level
        // `l - 1`, and each node is on exactly its own levels.
        let index: HashMap<usize, usize> = nodes.iter().enumerate().map(|(i, p)| (p.addr(), i)).collect();
        for l in 1..top {
            let mut link = &self.map.head[l];
            // Where in `nodes` the next node of this level may be.
            let mut from = 0;
            loop {
                let got = self.tx.read(link)?;
                let at = match got {
                    None => nodes.len(),
                    Some(p) => match index.get(&p.addr()) {
                        Some(&i) => i,
                        None => return Ok(Err(Broken::Stray { level: l })),
                    },
                };
                if at < from {
                    return Ok(Err(Broken::LevelOrder { level: l }));
                }
                if let Some(&q) = nodes[from..at].iter().find(|&&q| Self::level(q) > l) {
                    let lv = Self::level(q);
                    return Ok(Err(Broken::Missing { levels: lv, level: l }));
                }
                let Some(p) = got else { break };
                let lv = Self::level(p);
                if lv <= l {
                    return Ok(Err(Broken::Extra { levels: lv, level: l }));
                }
                from = at + 1;
                link = &Self::forward(p)[l];
            }
        }
        Ok(Ok(nodes.len()))
    }
}

impl<K, V> TSkipMap<K, V>
where
    K: Ord + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    /// An empty map.
    pub fn new() -> Self {
        TSkipMap {
            head: core::array::from_fn(|_| TVar::new(None)),
            top: CachePadded::new(TVar::new(0)),
            _owns: PhantomData,
        }
    }

    fn sl<'a, 't, X: TxOps<'t> + ?Sized>(&'t self, tx: &'a mut X) -> Sl<'a, 't, X, K, V> {
        Sl { tx, map: self }
    }

    /// Whether `k` is present.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn contains<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<bool, TxError> {
        Ok(self.sl(tx).find(k)?.is_some())
    }

    /// The value for `k`.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn get<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<Option<V>, TxError> {
        match self.sl(tx).find(k)? {
            Some(p) => Ok(Some(tx.read(Sl::<X, K, V>::value(p))?)),
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
        self.sl(tx).insert(k, v)
    }

    /// Removes `k`; returns its value. The node is unlinked from all its
    /// levels in this transaction and freed once no transaction can still
    /// be reading it.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn remove<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<Option<V>, TxError> {
        self.sl(tx).remove(k)
    }

    /// The smallest key and its value.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn first<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Option<(K, V)>, TxError> {
        self.sl(tx).first()
    }

    /// The number of entries (walks the bottom level).
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn len<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<usize, TxError> {
        let mut n = 0;
        self.sl(tx).for_each(|_, _, _| {
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
        Ok(tx.read(&self.head[0])?.is_none())
    }

    /// The entries in key order.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn to_vec<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Vec<(K, V)>, TxError> {
        let mut out = Vec::new();
        self.sl(tx).for_each(|tx, k, v| {
            out.push((k, tx.read(v)?));
            Ok(())
        })?;
        Ok(out)
    }

    /// Checks the list's invariants (every level in strictly ascending key
    /// order; every node on level `l > 0` also on level `l - 1`; each node
    /// on exactly its own levels; no node and no link above the top level);
    /// returns the number of entries, or what is broken.
    ///
    /// # Errors
    ///
    /// The transaction's signal (outer `Result`); the broken invariant
    /// (inner `Result`).
    pub fn verify<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Result<usize, Broken>, TxError> {
        self.sl(tx).check()
    }
}

impl<K, V> Default for TSkipMap<K, V>
where
    K: Ord + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> Drop for TSkipMap<K, V> {
    fn drop(&mut self) {
        let mut cur = self.head[0].load_word();
        while let Some(p) = P::<K, V>::from_addr(cur as usize) {
            // SAFETY: `&mut self`: no transaction can reach the list; every
            // node is on level 0 and is freed once, here, after its link is
            // read. It was made as an `SNode<K, V, N>` with `N` its level,
            // so `cast` gives back the pointer its `Box` came from.
            unsafe {
                cur = forward(p)[0].load_word();
                by_level!(level(p), N => drop(p.cast::<SNode<K, V, N>>().into_box()));
            }
        }
    }
}

impl<K, V> fmt::Debug for TSkipMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TSkipMap").field("top", &self.top.load()).finish_non_exhaustive()
    }
}

mod owned;
pub use owned::{SkipIntoIter, SkipIterMut};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collections::ordered_tests::{agrees_with_std, stays_whole_under_threads};
    use crate::{atomically, try_atomically};

    #[test]
    fn levels_are_geometric_and_bounded() {
        let mut counts = [0usize; MAX_LEVEL + 1];
        for _ in 0..100_000 {
            counts[random_level()] += 1;
        }
        assert_eq!(counts[0], 0, "a level of 0");
        // Half the draws are level 1, a quarter level 2, ... (loose bounds).
        assert!((45_000..55_000).contains(&counts[1]), "level 1 drawn {} times in 100000", counts[1]);
        assert!((20_000..30_000).contains(&counts[2]), "level 2 drawn {} times in 100000", counts[2]);
        assert!(counts[1..].windows(2).take(6).all(|w| w[0] > w[1]), "levels not decreasing: {counts:?}");
    }

    #[test]
    fn agrees_with_std_under_random_inserts_and_removes() {
        // 3,000 keys hit every case: removal of absent keys, of tall nodes,
        // of the first key.
        let m = TSkipMap::new();
        agrees_with_std(&m);
        // The top level is never lowered: it still shows the tallest node.
        assert!(m.top.load() > 1, "about 1,800 keys and no node above level 1");
        // Emptied, and usable again.
        atomically(|tx| m.insert(tx, 7, 70));
        assert_eq!(atomically(|tx| m.to_vec(tx)), vec![(7, 70)]);
        assert_eq!(atomically(|tx| m.verify(tx)), Ok(1));
    }

    #[test]
    fn concurrent_inserts_and_removes_keep_the_list_whole() {
        stays_whole_under_threads(&TSkipMap::new());
    }

    #[derive(Debug, PartialEq)]
    struct Abort;
    impl From<TxError> for Abort {
        fn from(_: TxError) -> Self {
            Abort
        }
    }

    #[test]
    fn an_aborted_transaction_leaves_no_trace() {
        // Empty, so the top is 0 and the first insert raises it: the aborted
        // write of `top` must go with the rest.
        let m: TSkipMap<u32, u32> = TSkipMap::new();
        let r: Result<(), Abort> = try_atomically(|tx| {
            for k in 0..1000 {
                m.insert(tx, k, k)?;
            }
            assert_eq!(m.remove(tx, &500)?, Some(500));
            assert!(tx.read(&*m.top)? > 0, "no insert raised the top level");
            Err(Abort)
        });
        assert_eq!(r, Err(Abort));
        assert_eq!(m.top.load(), 0);
        assert!(atomically(|tx| m.is_empty(tx)));
        assert_eq!(atomically(|tx| m.verify(tx)), Ok(0));
        // With entries: an aborted replace, remove and insert change nothing.
        atomically(|tx| (1..=3).try_for_each(|k| m.insert(tx, k, k).map(drop)));
        let r: Result<(), Abort> = try_atomically(|tx| {
            m.insert(tx, 2, 20)?;
            m.remove(tx, &3)?;
            m.insert(tx, 4, 4)?;
            Err(Abort)
        });
        assert_eq!(r, Err(Abort));
        assert_eq!(atomically(|tx| m.to_vec(tx)), vec![(1, 1), (2, 2), (3, 3)]);
        assert_eq!(atomically(|tx| m.verify(tx)), Ok(3));
    }

    /// A node of `N` levels made by hand, for lists broken on purpose.
    fn hand_made<const N: usize>(key: u32) -> P<u32, u32> {
        let n = SNode::<u32, u32, N> {
            key,
            level: N,
            value: TVar::new(key),
            next: core::array::from_fn(|_| TVar::new(None)),
        };
        TPtr::from_box(Box::new(n)).cast()
    }

    #[test]
    fn verify_names_what_is_broken() {
        // Lists linked by hand with plain stores (exclusive access). Every
        // node stays linked on level 0, so the map's drop frees it.
        let check = |m: &TSkipMap<u32, u32>| atomically(|tx| m.verify(tx)).map_err(|e| e.to_string());
        let (a, b) = (hand_made::<2>(1), hand_made::<1>(2));

        let m: TSkipMap<u32, u32> = TSkipMap::new();
        m.top.store(2);
        m.head[0].store(Some(a));
        assert_eq!(check(&m), Err("a node with 2 level(s) is missing from level 1".into()));
        m.head[1].store(Some(a));
        // SAFETY: `a` is alive (the map owns it) and nothing else uses it.
        unsafe { forward(a)[0].store(Some(b)) };
        assert_eq!(check(&m), Ok(2));
        // SAFETY: as above.
        unsafe { forward(a)[1].store(Some(b)) };
        assert_eq!(check(&m), Err("a node with 1 level(s) is linked on level 1".into()));
        // SAFETY: as above.
        unsafe { forward(a)[1].store(None) };
        m.top.store(1);
        assert_eq!(check(&m), Err("level 1 holds nodes but lies above the top level 1".into()));
        m.head[1].store(None);
        assert_eq!(check(&m), Err("a node has 2 level(s), outside 1..=1 (the top level)".into()));
        m.head[1].store(Some(a));
        m.top.store(2);
        assert_eq!(check(&m), Ok(2));

        // Out of order on level 0: `c` (key 0) after `a` and `b`.
        let c = hand_made::<1>(0);
        // SAFETY: `b` is alive (the map owns it) and nothing else uses it.
        unsafe { forward(b)[0].store(Some(c)) };
        assert_eq!(check(&m), Err("level 0 is not in strictly ascending key order".into()));
        // SAFETY: as above.
        unsafe { forward(b)[0].store(None) };
        // SAFETY: `c` came from `from_box` as an `SNode<u32, u32, 1>` and is
        // no longer linked.
        drop(unsafe { c.cast::<SNode<u32, u32, 1>>().into_box() });

        // A node on level 1 that level 0 does not hold.
        let d = hand_made::<2>(9);
        m.head[1].store(Some(d));
        assert_eq!(check(&m), Err("level 1 links a node that level 0 does not hold".into()));
        m.head[1].store(Some(a));
        // SAFETY: `d` came from `from_box` as an `SNode<u32, u32, 2>` and is
        // no longer linked.
        drop(unsafe { d.cast::<SNode<u32, u32, 2>>().into_box() });

        // A link above the top level.
        m.head[2].store(Some(a));
        assert_eq!(check(&m), Err("level 2 holds nodes but lies above the top level 2".into()));
        m.head[2].store(None);
        assert_eq!(check(&m), Ok(2));
        assert_eq!(atomically(|tx| m.to_vec(tx)), vec![(1, 1), (2, 2)]);
    }
}

#[cfg(test)]
mod direct {
    //! The skip list through a `TxOps` that is not the STM: plain atomic
    //! loads and stores, frees dropped at the end of each operation. Small
    //! enough for Miri (`cargo +nightly miri test -p skelaff-stm --lib
    //! skiplist::direct`), which the STM's runtime is not: it checks the
    //! node layout's pointer code, the frees and the drop.
    use super::*;
    use crate::ErasedBox;
    use crate::primitive::Ordering;
    use std::collections::BTreeMap;

    #[derive(Default)]
    struct Direct(Vec<ErasedBox>);

    // SAFETY: one thread, no transaction beside it: reads load what the
    // last write stored; frees wait for the end of the operation (`Drop`).
    unsafe impl TxOps<'_> for Direct {
        fn read<T: Word>(&mut self, var: &TVar<T>) -> Result<T, TxError> {
            Ok(T::from_word(var.cell().load(Ordering::Relaxed)))
        }
        fn write<T: Word>(&mut self, var: &TVar<T>, value: T) -> Result<(), TxError> {
            var.cell().store(value.to_word(), Ordering::Relaxed);
            Ok(())
        }
        fn alloc<T: Send + Sync + 'static>(&mut self, value: T) -> Result<TPtr<T>, TxError> {
            Ok(TPtr::from_box(Box::new(value)))
        }
        unsafe fn free<T: Send + Sync + 'static>(&mut self, ptr: TPtr<T>) -> Result<(), TxError> {
            self.0.push(ErasedBox::new(ptr));
            Ok(())
        }
        fn retry(&mut self) -> TxError {
            TxError::Stop(crate::Stop::new(1, "no retry in a direct operation"))
        }
    }

    impl Drop for Direct {
        fn drop(&mut self) {
            for b in self.0.drain(..) {
                // SAFETY: each came from `alloc` and was unlinked and freed
                // once by the operation that just ended; one thread.
                unsafe { b.destroy() };
            }
        }
    }

    /// Runs `f` as one operation.
    fn op<R>(f: impl FnOnce(&mut Direct) -> Result<R, TxError>) -> R {
        match f(&mut Direct::default()) {
            Ok(r) => r,
            Err(e) => panic!("a direct operation failed: {e:?}"),
        }
    }

    #[test]
    fn agrees_with_std_through_plain_loads_and_stores() {
        let m: TSkipMap<u16, u32> = TSkipMap::new();
        let mut model = BTreeMap::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let rounds = if cfg!(miri) { 600 } else { 5000 };
        for round in 0..rounds {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x % 200) as u16;
            match (x >> 32) % 3 {
                0 => assert_eq!(op(|tx| m.insert(tx, k, round)), model.insert(k, round)),
                1 => assert_eq!(op(|tx| m.remove(tx, &k)), model.remove(&k)),
                _ => assert_eq!(op(|tx| m.get(tx, &k)), model.get(&k).copied()),
            }
        }
        assert_eq!(op(|tx| m.verify(tx)), Ok(model.len()));
        assert_eq!(op(|tx| m.to_vec(tx)), model.into_iter().collect::<Vec<_>>());
        // The rest goes with the map's drop.
    }
}
