//! A hash map of chained buckets.

use core::fmt;
use core::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use core::marker::PhantomData;

use super::{Link, node};
use crate::error::TxError;
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

struct HNode<K, V> {
    key: K,
    next: Link<HNode<K, V>>,
    value: TVar<V>,
}

/// A hash map: a fixed power-of-two array of buckets, each a transactional
/// chain (TinySTM's intset `hs`). Operations on different buckets touch
/// disjoint words. The bucket count is fixed at construction (no resizing:
/// a resize would conflict with every concurrent operation); choose it near
/// the expected number of entries.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, THashMap};
///
/// let m = THashMap::with_buckets(64);
/// atomically(|tx| m.insert(tx, 7u64, 70u32));
/// assert_eq!(atomically(|tx| m.get(tx, &7)), Some(70));
/// assert_eq!(atomically(|tx| m.remove(tx, &7)), Some(70));
/// assert_eq!(atomically(|tx| m.len(tx)), 0);
/// ```
pub struct THashMap<K, V, S = FxBuildHasher> {
    buckets: Box<[Link<HNode<K, V>>]>,
    hasher: S,
    _owns: PhantomData<HNode<K, V>>,
}

impl<K, V> THashMap<K, V, FxBuildHasher>
where
    K: Hash + Eq + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
{
    /// A map with `n` buckets, rounded up to a power of two (at least 1).
    pub fn with_buckets(n: usize) -> Self {
        Self::with_buckets_and_hasher(n, FxBuildHasher::default())
    }
}

impl<K, V, S> THashMap<K, V, S>
where
    K: Hash + Eq + Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
    S: BuildHasher,
{
    /// A map with `n` buckets (rounded up to a power of two) and `hasher`.
    pub fn with_buckets_and_hasher(n: usize, hasher: S) -> Self {
        let n = n.max(1).next_power_of_two();
        THashMap { buckets: (0..n).map(|_| TVar::new(None)).collect(), hasher, _owns: PhantomData }
    }

    /// The number of buckets.
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    #[inline(always)]
    fn bucket(&self, k: &K) -> &Link<HNode<K, V>> {
        let h = self.hasher.hash_one(k) as usize;
        &self.buckets[h & (self.buckets.len() - 1)]
    }

    /// The link pointing at `k`'s node (or at the end of the chain) and the node.
    #[inline]
    #[allow(clippy::type_complexity)]
    fn seek<'a, X: TxOps<'a> + ?Sized>(
        &'a self,
        tx: &mut X,
        k: &K,
    ) -> Result<(&'a Link<HNode<K, V>>, Option<TPtr<HNode<K, V>>>), TxError> {
        let mut link = self.bucket(k);
        loop {
            match tx.read(link)? {
                None => return Ok((link, None)),
                Some(p) => {
                    // SAFETY: read in the running transaction.
                    let n = unsafe { node(p) };
                    if n.key == *k {
                        return Ok((link, Some(p)));
                    }
                    link = &n.next;
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
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn insert<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X, k: K, v: V) -> Result<Option<V>, TxError> {
        if let (_, Some(p)) = self.seek(tx, &k)? {
            // SAFETY: read in the running transaction.
            let n = unsafe { node(p) };
            let old = tx.read(&n.value)?;
            if old.to_word() != v.to_word() {
                tx.write(&n.value, v)?;
            }
            return Ok(Some(old));
        }
        let b = self.bucket(&k);
        let first = tx.read(b)?;
        let fresh = tx.alloc(HNode { key: k, next: TVar::new(first), value: TVar::new(v) })?;
        tx.write(b, Some(fresh))?;
        Ok(None)
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

    /// The number of entries (walks every bucket: O(buckets + entries)).
    ///
    /// # Errors
    ///
    /// The transaction's signal; propagate it with `?`.
    pub fn len<'t, X: TxOps<'t> + ?Sized>(&'t self, tx: &mut X) -> Result<usize, TxError> {
        let mut n = 0;
        for b in self.buckets.iter() {
            let mut cur = tx.read(b)?;
            while let Some(p) = cur {
                n += 1;
                // SAFETY: read in the running transaction.
                cur = tx.read(unsafe { &node(p).next })?;
            }
        }
        Ok(n)
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
        let mut out = Vec::new();
        for b in self.buckets.iter() {
            let mut cur = tx.read(b)?;
            while let Some(p) = cur {
                // SAFETY: read in the running transaction.
                let n = unsafe { node(p) };
                out.push((n.key, tx.read(&n.value)?));
                cur = tx.read(&n.next)?;
            }
        }
        Ok(out)
    }
}

impl<K, V, S> Drop for THashMap<K, V, S> {
    fn drop(&mut self) {
        for b in self.buckets.iter() {
            let mut cur = b.load_word();
            while let Some(p) = TPtr::<HNode<K, V>>::from_addr(cur as usize) {
                // SAFETY: `&mut self`: no transaction can reach the map; each
                // linked node is owned by it and freed once here.
                let n = unsafe { p.into_box() };
                cur = n.next.load_word();
            }
        }
    }
}

impl<K, V, S> fmt::Debug for THashMap<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("THashMap").field("buckets", &self.buckets.len()).finish_non_exhaustive()
    }
}

mod owned;
pub use owned::{HashIntoIter, HashIterMut};
