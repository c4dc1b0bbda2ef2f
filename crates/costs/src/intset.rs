//! TinySTM's intset workload on skelaff's collections: the sets, the
//! generator and the operation mix that `examples/intset` runs on threads
//! for a duration and the guard counts for a fixed number of operations.
//!
//! Each operation is one transaction: with probability `update` percent an
//! update, otherwise a lookup of a random value in `1..=range`. Updates
//! alternate (unless `alternate` is off): add a random value, and when that
//! add succeeded, the next update removes that same value.
//!
//! # Examples
//!
//! ```
//! use skelaff_costs::intset::{Counts, IntSet, Mix, Rng, StmSet, fill};
//!
//! let set = StmSet::rb();
//! let mut rng = Rng::new(1);
//! fill(&set, 100, 200, &mut rng);
//! let mut mix = Mix::new(rng.below(u64::MAX), 200, 20, true);
//! let mut c = Counts::default();
//! for _ in 0..1000 {
//!     mix.step(&set, &mut c);
//! }
//! assert_eq!(set.size() as i64, 100 + c.diff);
//! ```

use std::hash::BuildHasherDefault;

use skelaff_stm::{self as stm, Config, TBTreeMap, THashMap, TList, TMap, TSkipMap};

/// The buckets of the hash set (TinySTM's intset-hs: 2^17).
pub const HASH_BUCKETS: usize = 1 << 17;

/// A set of `u64`s that the driver runs: one operation, one transaction.
pub trait IntSet: Sync {
    /// Adds `v`; true if it was absent.
    fn add(&self, v: u64) -> bool;
    /// Removes `v`; true if it was present.
    fn remove(&self, v: u64) -> bool;
    /// Whether `v` is present.
    fn contains(&self, v: u64) -> bool;
    /// The size, once no operation runs.
    fn size(&self) -> usize;
    /// A structural check, once no operation runs.
    ///
    /// # Errors
    ///
    /// What is wrong with the structure.
    fn verify(&self) -> Result<(), BrokenSet> {
        Ok(())
    }
}

/// A set whose structural check failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the set's structure is broken")]
pub struct BrokenSet {
    /// The broken invariant, as the collection's own check names it.
    #[source]
    pub invariant: stm::collections::Broken,
}

/// The driver's generator: xorshift64 (TinySTM's intset uses its own
/// generator; this one is the same for every backend of the example).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A value in `0..n` (`n > 0`).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) % n
    }
}

/// Adds random values of `1..=range` until `set` holds `initial` of them
/// (`initial <= range`).
pub fn fill(set: &(impl IntSet + ?Sized), initial: u64, range: u64, rng: &mut Rng) {
    let mut size = 0u64;
    while size < initial {
        if set.add(rng.below(range) + 1) {
            size += 1;
        }
    }
}

/// What one thread's operations did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Add operations.
    pub adds: u64,
    /// Remove operations.
    pub removes: u64,
    /// Lookups.
    pub contains: u64,
    /// Lookups that found their value.
    pub found: u64,
    /// Successful adds minus successful removes: the change of the size.
    pub diff: i64,
}

/// The operation mix of one thread.
#[derive(Debug, Clone)]
pub struct Mix {
    rng: Rng,
    range: u64,
    update: u32,
    alternate: bool,
    last: Option<u64>,
}

impl Mix {
    /// Values in `1..=range`, `update` percent updates, alternating adds and
    /// removes of the same value when `alternate`.
    pub fn new(seed: u64, range: u64, update: u32, alternate: bool) -> Self {
        Mix { rng: Rng::new(seed), range, update, alternate, last: None }
    }

    /// Runs the next operation on `set` and counts it in `c`.
    #[inline]
    pub fn step(&mut self, set: &(impl IntSet + ?Sized), c: &mut Counts) {
        let op = self.rng.below(100) as u32;
        if op < self.update {
            if self.alternate {
                match self.last.take() {
                    None => {
                        let v = self.rng.below(self.range) + 1;
                        if set.add(v) {
                            c.diff += 1;
                            self.last = Some(v);
                        }
                        c.adds += 1;
                    }
                    Some(v) => {
                        if set.remove(v) {
                            c.diff -= 1;
                        }
                        c.removes += 1;
                    }
                }
            } else {
                let v = self.rng.below(self.range) + 1;
                if op & 1 == 0 {
                    if set.add(v) {
                        c.diff += 1;
                    }
                    c.adds += 1;
                } else {
                    if set.remove(v) {
                        c.diff -= 1;
                    }
                    c.removes += 1;
                }
            }
        } else {
            let v = self.rng.below(self.range) + 1;
            if set.contains(v) {
                c.found += 1;
            }
            c.contains += 1;
        }
    }
}

/// TinySTM's hash: Knuth's multiplicative hash of the low 32 bits.
#[derive(Debug, Default, Clone, Copy)]
pub struct KnuthHasher(u64);

impl std::hash::Hasher for KnuthHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here; any other input folds its bytes
        // in the same way, so the hasher stays total.
        for &b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(b));
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = u64::from((k as u32).wrapping_mul(2_654_435_761));
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// [`KnuthHasher`] as a `BuildHasher`.
pub type KnuthBuild = BuildHasherDefault<KnuthHasher>;

/// A skelaff collection run as an intset, each operation one transaction
/// with `cfg`.
#[derive(Debug)]
pub struct StmSet<C> {
    /// The collection.
    pub set: C,
    /// The transactions' configuration (contention manager).
    pub cfg: Config,
}

impl StmSet<TList<u64, ()>> {
    /// The sorted linked list (intset `ll`).
    pub fn ll() -> Self {
        StmSet { set: TList::new(), cfg: Config::new() }
    }
}

impl StmSet<TMap<u64, ()>> {
    /// The red-black tree (intset `rb`).
    pub fn rb() -> Self {
        StmSet { set: TMap::new(), cfg: Config::new() }
    }
}

impl StmSet<TBTreeMap<u64, ()>> {
    /// The B+tree (intset `bt`, skelaff's own).
    pub fn bt() -> Self {
        StmSet { set: TBTreeMap::new(), cfg: Config::new() }
    }
}

impl StmSet<THashMap<u64, (), KnuthBuild>> {
    /// The hash set of [`HASH_BUCKETS`] chains with TinySTM's hash (intset `hs`).
    pub fn hs() -> Self {
        StmSet { set: THashMap::with_buckets_and_hasher(HASH_BUCKETS, KnuthBuild::default()), cfg: Config::new() }
    }
}

impl StmSet<TSkipMap<u64, ()>> {
    /// The skip list (intset `sl`).
    pub fn sl() -> Self {
        StmSet { set: TSkipMap::new(), cfg: Config::new() }
    }
}

impl<C> StmSet<C> {
    /// The same set with the transactions run with `cfg`.
    pub fn with_config(self, cfg: Config) -> Self {
        StmSet { cfg, ..self }
    }
}

macro_rules! stm_set {
    ($t:ty, $verify:expr) => {
        impl IntSet for StmSet<$t> {
            #[inline]
            fn add(&self, v: u64) -> bool {
                stm::atomically_with(&self.cfg, |tx| Ok(self.set.insert(tx, v, ())?.is_none()))
            }
            #[inline]
            fn remove(&self, v: u64) -> bool {
                stm::atomically_with(&self.cfg, |tx| Ok(self.set.remove(tx, &v)?.is_some()))
            }
            /// A lookup is a read-only transaction (as TinySTM's intset
            /// starts it with `read_only = 1`): no read set.
            #[inline]
            fn contains(&self, v: u64) -> bool {
                stm::atomically_with(&self.cfg.read_only(), |tx| self.set.contains(tx, &v))
            }
            fn size(&self) -> usize {
                stm::atomically(|tx| self.set.len(tx))
            }
            fn verify(&self) -> Result<(), BrokenSet> {
                #[allow(clippy::redundant_closure_call)]
                ($verify)(&self.set)
            }
        }
    };
}

stm_set!(TList<u64, ()>, |_: &TList<u64, ()>| Ok(()));
stm_set!(THashMap<u64, (), KnuthBuild>, |_: &THashMap<u64, (), KnuthBuild>| Ok(()));
stm_set!(TMap<u64, ()>, |m: &TMap<u64, ()>| broken(stm::atomically(|tx| m.verify(tx))));
stm_set!(TBTreeMap<u64, ()>, |m: &TBTreeMap<u64, ()>| broken(stm::atomically(|tx| m.verify(tx))));
stm_set!(TSkipMap<u64, ()>, |m: &TSkipMap<u64, ()>| broken(stm::atomically(|tx| m.verify(tx))));

/// A collection's structural check (its size, or the broken invariant it
/// describes) as [`IntSet::verify`]'s result.
fn broken(check: Result<usize, stm::collections::Broken>) -> Result<(), BrokenSet> {
    check.map(drop).map_err(|invariant| BrokenSet { invariant })
}
