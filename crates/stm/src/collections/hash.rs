//! A hash map of chained buckets that doubles as it fills.

use core::fmt;
use core::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use core::marker::PhantomData;

use self::table::{CHAIN_BOUND, FIXED, HNode, Table, grow, is_moved, overfull};
use super::{Link, node};
use crate::error::TxError;
use crate::runtime::guard::epoch_guard;
use crate::tvar::TVar;
use crate::txops::TxOps;
use crate::word::{TPtr, Word};

/// A fast non-cryptographic hasher (the multiply-rotate "Fx" hash of rustc):
/// a few cycles per word, fine for integer keys, not resistant to
/// adversarial keys.
#[derive(Debug, Clone, Copy, Default)]
pub struct FxHasher {
    h: u64,
}

const FX_K: u64 = 0xf135_7aea_2e62_a9c5;

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.h = (self.h.rotate_left(26) ^ i).wrapping_mul(FX_K);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Fold the well-mixed high bits down: buckets use the low bits.
        self.h ^ (self.h >> 29)
    }
}

/// Builds [`FxHasher`]s.
pub type FxBuildHasher = BuildHasherDefault<FxHasher>;

/// A hash map of transactional chains that doubles its bucket array as it
/// fills (TinySTM's intset `hs`, grown as a serious hash map grows).
/// Operations on different buckets touch disjoint words, and no counter
/// is written by every insert (it would make every two inserts conflict).
///
/// # Growth and its cost
///
/// An insert that walks a chain of 8 entries or more, in a table that
/// holds 2 entries a bucket or more (counted over 64 buckets from its
/// own), doubles the bucket array in its own transaction (so a map that
/// grows runs at 1 to 2 entries a bucket, and one sized for its entries
/// with [`with_buckets`](THashMap::with_buckets) never doubles): it reads every entry, relinks each chain into its two
/// halves, marks every old bucket as moved and publishes the new array
/// (see the `table` module's docs for the protocol). That one transaction
/// reads and writes O(buckets + entries) words and conflicts with every
/// concurrent update of the map, so it costs about what as many inserts
/// cost, once per doubling: amortised over the entries that filled the
/// table, a constant per insert. A lookup on a map that is not growing
/// costs what it cost before growth existed, plus one plain load of the
/// root pointer and one comparison.
///
/// - [`THashMap::new`] starts with 16 buckets;
///   [`with_buckets(n)`](THashMap::with_buckets) with `n` rounded up to a
///   power of two: give the expected number of entries to skip the
///   doublings.
/// - [`with_fixed_buckets(n)`](THashMap::with_fixed_buckets) never grows:
///   for a bounded key set sized up front, where no insert may ever turn
///   into a resize (a worst-case latency bound).
/// - The array never shrinks; removals leave it as it is.
/// - Keys whose hashes collide in every bit cannot be split: after a
///   doubling that leaves a chain as long as before, the bound doubles, so
///   such keys cost one doubling each time their number doubles, not one
///   per insert. Use a better hasher
///   ([`with_buckets_and_hasher`](THashMap::with_buckets_and_hasher)) if
///   keys may be adversarial.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, THashMap};
///
/// let m = THashMap::new();
/// atomically(|tx| m.insert(tx, 7u64, 70u32));
/// assert_eq!(atomically(|tx| m.get(tx, &7)), Some(70));
/// assert_eq!(atomically(|tx| m.remove(tx, &7)), Some(70));
/// assert_eq!(atomically(|tx| m.len(tx)), 0);
///
/// // It grows as it fills: lookups stay short chains.
/// atomically(|tx| {
///     for k in 0..10_000u64 {
///         m.insert(tx, k, 1)?;
///     }
///     Ok(())
/// });
/// assert!(m.buckets() >= 1024);
/// assert_eq!(atomically(|tx| m.get(tx, &9_999)), Some(1));
/// ```
pub struct THashMap<K, V, S = FxBuildHasher> {
    /// The current table: loaded plainly on every operation, read
    /// transactionally after a moved bucket head, written by a resize.
    root: TVar<TPtr<Table<K, V>>>,
    hasher: S,
    _owns: PhantomData<Table<K, V>>,
}

/// The number of buckets of [`THashMap::new`].
const INITIAL_BUCKETS: usize = 16;

impl<K, V> THashMap<K, V, FxBuildHasher>
where
    K: Hash + Eq + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    /// An empty map of 16 buckets that doubles as it fills.
    pub fn new() -> Self {
        Self::with_buckets(INITIAL_BUCKETS)
    }

    /// A map with `n` buckets, rounded up to a power of two (at least 1),
    /// that doubles as it fills.
    pub fn with_buckets(n: usize) -> Self {
        Self::with_buckets_and_hasher(n, FxBuildHasher::default())
    }

    /// A map with `n` buckets, rounded up to a power of two (at least 1),
    /// that never grows: chains lengthen as it fills beyond about `n`
    /// entries, and no insert ever turns into a resize.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, THashMap};
    ///
    /// let m = THashMap::with_fixed_buckets(4);
    /// atomically(|tx| {
    ///     for k in 0..100u32 {
    ///         m.insert(tx, k, k)?;
    ///     }
    ///     Ok(())
    /// });
    /// assert_eq!(m.buckets(), 4);
    /// ```
    pub fn with_fixed_buckets(n: usize) -> Self {
        Self::with_fixed_buckets_and_hasher(n, FxBuildHasher::default())
    }
}

impl<K, V> Default for THashMap<K, V, FxBuildHasher>
where
    K: Hash + Eq + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    fn default() -> Self {
        Self::new()
    }
}

/// What an operation found at its key's bucket: the table, the bucket and
/// the head of its chain.
type Found<'t, K, V> = (TPtr<Table<K, V>>, &'t Link<HNode<K, V>>, Option<TPtr<HNode<K, V>>>);

impl<K, V, S> THashMap<K, V, S>
where
    K: Hash + Eq + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
    S: BuildHasher,
{
    /// A map with `n` buckets (rounded up to a power of two) and `hasher`,
    /// that doubles as it fills.
    pub fn with_buckets_and_hasher(n: usize, hasher: S) -> Self {
        Self::with_table(n, hasher, CHAIN_BOUND)
    }

    /// A map with `n` buckets (rounded up to a power of two) and `hasher`,
    /// that never grows (see [`with_fixed_buckets`](THashMap::with_fixed_buckets)).
    pub fn with_fixed_buckets_and_hasher(n: usize, hasher: S) -> Self {
        Self::with_table(n, hasher, FIXED)
    }

    fn with_table(n: usize, hasher: S, bound: usize) -> Self {
        let n = n.max(1).next_power_of_two();
        let table = TPtr::from_box(Box::new(Table::new(n, bound)));
        THashMap { root: TVar::new(table), hasher, _owns: PhantomData }
    }

    /// The number of buckets now (it doubles as the map fills).
    pub fn buckets(&self) -> usize {
        let _guard = epoch_guard();
        // SAFETY: the root points at a live table; one that a resize
        // replaces after this load is freed only once this thread's epoch
        // guard, taken before the load, is gone.
        unsafe { self.table() }.buckets.len()
    }

    /// The current table, by a plain load of the root.
    ///
    /// # Safety
    ///
    /// The caller runs a transaction (or holds an epoch guard, or has the
    /// map to itself) and drops the reference before it ends: a resize may
    /// retire the table meanwhile, and the reclaimer waits only for
    /// transactions and guards that could have loaded it.
    #[inline(always)]
    unsafe fn table(&self) -> &Table<K, V> {
        // SAFETY: the root always points at a table (set at construction,
        // moved only by a committed resize to the new one); alive by the
        // caller's contract.
        unsafe { &*(self.root.load_word() as usize as *const Table<K, V>) }
    }

    /// The bucket of hash `h` and the head of its chain, as of the
    /// transaction's snapshot.
    #[inline(always)]
    fn head<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, h: u64) -> Result<Found<'t, K, V>, TxError> {
        let p = self.root.load_word();
        // SAFETY: in the running transaction (see `table`).
        let b = unsafe { &*(p as usize as *const Table<K, V>) }.bucket(h);
        let head = tx.read(b)?;
        if is_moved(head) {
            return self.head_moved(tx, h);
        }
        // `p` is a table's address (see `table`), never 0.
        let t = TPtr::from_addr(p as usize).unwrap_or_else(|| unreachable!());
        Ok((t, b, head))
    }

    /// [`head`](Self::head) after a moved bucket: the table is found from
    /// the root read transactionally.
    #[cold]
    #[inline(never)]
    fn head_moved<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, h: u64) -> Result<Found<'t, K, V>, TxError> {
        loop {
            let t = tx.read(&self.root)?;
            // SAFETY: read in the running transaction.
            let b = unsafe { t.get() }.bucket(h);
            let head = tx.read(b)?;
            if !is_moved(head) {
                return Ok((t, b, head));
            }
            // A snapshot never shows a moved head in the table the root
            // points at (the resize that writes the marker moves the root
            // too); a speculative reader's plain loads may, while a resize is
            // written back: load again.
            crate::primitive::spin_loop();
        }
    }

    /// The link pointing at `k`'s node (or at the end of the chain) and the node.
    #[inline]
    #[allow(clippy::type_complexity)]
    fn seek<'a, X: TxOps<'a> + ?Sized>(
        &'a self,
        tx: &mut X,
        k: &K,
    ) -> Result<(&'a Link<HNode<K, V>>, Option<TPtr<HNode<K, V>>>), TxError> {
        let (_, mut link, mut cur) = self.head(tx, self.hasher.hash_one(k))?;
        loop {
            match cur {
                None => return Ok((link, None)),
                Some(p) => {
                    // SAFETY: read in the running transaction.
                    let n = unsafe { node(p) };
                    if n.key == *k {
                        return Ok((link, Some(p)));
                    }
                    link = &n.next;
                    cur = tx.read(link)?;
                }
            }
        }
    }

    /// Whether `k` is present.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn contains<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<bool, TxError> {
        Ok(self.seek(tx, k)?.1.is_some())
    }

    /// The value for `k`.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn get<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<Option<V>, TxError> {
        match self.seek(tx, k)?.1 {
            // SAFETY: read in the running transaction.
            Some(p) => Ok(Some(tx.read(unsafe { &node(p).value })?)),
            None => Ok(None),
        }
    }

    /// Inserts or replaces; returns the previous value. Replacing a value by
    /// an equal one writes nothing; a new key goes to the front of its chain.
    /// An insert that walked a long chain first doubles the bucket array
    /// (see ["Growth and its cost"](THashMap#growth-and-its-cost)).
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn insert<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: K, v: V) -> Result<Option<V>, TxError> {
        let h = self.hasher.hash_one(k);
        let (t, mut b, mut first) = self.head(tx, h)?;
        let mut cur = first;
        let mut walked = 0usize;
        while let Some(p) = cur {
            // SAFETY: read in the running transaction.
            let n = unsafe { node(p) };
            if n.key == k {
                let old = tx.read(&n.value)?;
                if old.to_word() != v.to_word() {
                    tx.write(&n.value, v)?;
                }
                return Ok(Some(old));
            }
            walked += 1;
            cur = tx.read(&n.next)?;
        }
        // SAFETY: `t` was loaded in the running transaction.
        if walked >= unsafe { t.get() }.bound {
            // SAFETY: as above.
            if unsafe { overfull(tx, t, h)? } {
                (_, b, first) = self.grow_then_head(tx, t, h)?;
            }
        }
        let fresh = tx.alloc(HNode { key: k, next: TVar::new(first), value: TVar::new(v) })?;
        tx.write(b, Some(fresh))?;
        Ok(None)
    }

    /// Doubles table `t` (unless this transaction's snapshot already
    /// replaced it), then finds hash `h`'s bucket again.
    #[cold]
    #[inline(never)]
    fn grow_then_head<'t, X: TxOps<'t> + ?Sized>(
        &'t self,
        tx: &mut X,
        t: TPtr<Table<K, V>>,
        h: u64,
    ) -> Result<Found<'t, K, V>, TxError> {
        // SAFETY: `t` was loaded from the root in the running transaction,
        // and the closure is the map's hash.
        unsafe { grow(tx, &self.root, t, |k| self.hasher.hash_one(k))? };
        self.head(tx, h)
    }

    /// Removes `k`; returns its value.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn remove<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: &K) -> Result<Option<V>, TxError> {
        let (link, Some(p)) = self.seek(tx, k)? else { return Ok(None) };
        // SAFETY: read in the running transaction.
        let n = unsafe { node(p) };
        let v = tx.read(&n.value)?;
        let next = tx.read(&n.next)?;
        tx.write(link, next)?;
        // SAFETY: allocated by `insert`, unlinked from its only link above,
        // freed once.
        unsafe { tx.free(p)? };
        Ok(Some(v))
    }

    /// Folds `f` over every entry of the current table, starting again
    /// from `init` on the new table if the snapshot shows the one loaded
    /// replaced.
    fn fold<'t, X: TxOps<'t> + ?Sized, A: Clone>(
        &'t self,
        tx: &mut X,
        init: A,
        mut f: impl FnMut(&mut X, &mut A, &'t HNode<K, V>) -> Result<(), TxError>,
    ) -> Result<A, TxError> {
        // SAFETY: in the running transaction.
        let mut t: &'t Table<K, V> = unsafe { self.table() };
        let mut acc = init.clone();
        'tables: loop {
            for b in t.buckets.iter() {
                let mut cur = tx.read(b)?;
                if is_moved(cur) {
                    acc = init.clone();
                    // SAFETY: read in the running transaction.
                    t = unsafe { tx.read(&self.root)?.get() };
                    continue 'tables;
                }
                while let Some(p) = cur {
                    // SAFETY: read in the running transaction.
                    let n = unsafe { node(p) };
                    f(tx, &mut acc, n)?;
                    cur = tx.read(&n.next)?;
                }
            }
            return Ok(acc);
        }
    }

    /// The number of entries (walks every bucket: O(buckets + entries)).
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn len<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<usize, TxError> {
        self.fold(tx, 0, |_, n, _| {
            *n += 1;
            Ok(())
        })
    }

    /// Whether the map is empty.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn is_empty<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<bool, TxError> {
        Ok(self.len(tx)? == 0)
    }

    /// The entries, in no particular order.
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn to_vec<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<Vec<(K, V)>, TxError> {
        self.fold(tx, Vec::new(), |tx, out, n| {
            out.push((n.key, tx.read(&n.value)?));
            Ok(())
        })
    }
}

impl<K, V, S> Drop for THashMap<K, V, S> {
    fn drop(&mut self) {
        let Some(t) = TPtr::<Table<K, V>>::from_addr(self.root.word_mut() as usize) else { return };
        // SAFETY: `&mut self`: no transaction can reach the map; the root's
        // table belongs to it (tables it replaced went to the reclaimer) and
        // is freed once, here.
        let table = unsafe { t.into_box() };
        for b in table.buckets.iter() {
            let mut cur = b.load_word();
            while let Some(p) = TPtr::<HNode<K, V>>::from_addr(cur as usize) {
                // SAFETY: as above: each linked node is owned by the map's
                // table and freed once here.
                let n = unsafe { p.into_box() };
                cur = n.next.load_word();
            }
        }
    }
}

impl<K, V, S> fmt::Debug for THashMap<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let _guard = epoch_guard();
        // SAFETY: as in `buckets`.
        let t = unsafe { &*(self.root.load_word() as usize as *const Table<K, V>) };
        f.debug_struct("THashMap").field("buckets", &t.buckets.len()).finish_non_exhaustive()
    }
}

mod owned;
mod table;

pub use owned::{HashIntoIter, HashIterMut};
