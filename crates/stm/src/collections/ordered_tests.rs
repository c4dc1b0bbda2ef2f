//! Tests every ordered map with `verify` runs the same way ([`TBTreeMap`],
//! [`TSkipMap`]): each module's tests call them on its own type.

use std::collections::BTreeMap;

use super::{TBTreeMap, TSkipMap};
use crate::collections::Broken;
use crate::{Tx, TxError, atomically};

/// The ordered maps' API on `u64` keys and values.
pub(super) trait OrderedMap: Sync {
    fn insert<'t>(&'t self, tx: &mut Tx<'t>, k: u64, v: u64) -> Result<Option<u64>, TxError>;
    fn remove<'t>(&'t self, tx: &mut Tx<'t>, k: u64) -> Result<Option<u64>, TxError>;
    fn get<'t>(&'t self, tx: &mut Tx<'t>, k: u64) -> Result<Option<u64>, TxError>;
    fn contains<'t>(&'t self, tx: &mut Tx<'t>, k: u64) -> Result<bool, TxError>;
    fn first<'t>(&'t self, tx: &mut Tx<'t>) -> Result<Option<(u64, u64)>, TxError>;
    fn len<'t>(&'t self, tx: &mut Tx<'t>) -> Result<usize, TxError>;
    fn is_empty<'t>(&'t self, tx: &mut Tx<'t>) -> Result<bool, TxError>;
    fn to_vec<'t>(&'t self, tx: &mut Tx<'t>) -> Result<Vec<(u64, u64)>, TxError>;
    fn verify<'t>(&'t self, tx: &mut Tx<'t>) -> Result<Result<usize, Broken>, TxError>;
}

macro_rules! ordered_map {
    ($($t:ident),*) => {$(
        impl OrderedMap for $t<u64, u64> {
            fn insert<'t>(&'t self, tx: &mut Tx<'t>, k: u64, v: u64) -> Result<Option<u64>, TxError> {
                $t::insert(self, tx, k, v)
            }
            fn remove<'t>(&'t self, tx: &mut Tx<'t>, k: u64) -> Result<Option<u64>, TxError> {
                $t::remove(self, tx, &k)
            }
            fn get<'t>(&'t self, tx: &mut Tx<'t>, k: u64) -> Result<Option<u64>, TxError> {
                $t::get(self, tx, &k)
            }
            fn contains<'t>(&'t self, tx: &mut Tx<'t>, k: u64) -> Result<bool, TxError> {
                $t::contains(self, tx, &k)
            }
            fn first<'t>(&'t self, tx: &mut Tx<'t>) -> Result<Option<(u64, u64)>, TxError> {
                $t::first(self, tx)
            }
            fn len<'t>(&'t self, tx: &mut Tx<'t>) -> Result<usize, TxError> {
                $t::len(self, tx)
            }
            fn is_empty<'t>(&'t self, tx: &mut Tx<'t>) -> Result<bool, TxError> {
                $t::is_empty(self, tx)
            }
            fn to_vec<'t>(&'t self, tx: &mut Tx<'t>) -> Result<Vec<(u64, u64)>, TxError> {
                $t::to_vec(self, tx)
            }
            fn verify<'t>(&'t self, tx: &mut Tx<'t>) -> Result<Result<usize, Broken>, TxError> {
                $t::verify(self, tx)
            }
        }
    )*};
}

ordered_map!(TBTreeMap, TSkipMap);

/// 20,000 inserts, replaces, removes and lookups, drawn by a deterministic
/// xorshift over 3,000 keys, against std's `BTreeMap`, with `verify` every
/// 2,000; then every key removed. `m` starts empty and ends empty.
pub(super) fn agrees_with_std(m: &impl OrderedMap) {
    let mut model = BTreeMap::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..20_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = x % 3000;
        let op = (x >> 32) % 10;
        if op < 6 {
            let got = atomically(|tx| m.insert(tx, k, round));
            assert_eq!(got, model.insert(k, round), "insert {k}");
        } else if op < 9 {
            let got = atomically(|tx| m.remove(tx, k));
            assert_eq!(got, model.remove(&k), "remove {k}");
        } else {
            assert_eq!(atomically(|tx| m.get(tx, k)), model.get(&k).copied(), "get {k}");
            assert_eq!(atomically(|tx| m.contains(tx, k)), model.contains_key(&k), "contains {k}");
        }
        if round % 2000 == 0 {
            assert_eq!(atomically(|tx| m.verify(tx)), Ok(model.len()));
        }
    }
    assert_eq!(atomically(|tx| m.verify(tx)), Ok(model.len()));
    assert_eq!(atomically(|tx| m.to_vec(tx)), model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>());
    assert_eq!(atomically(|tx| m.first(tx)), model.iter().next().map(|(k, v)| (*k, *v)));
    // Emptied: every key removed, the walk and `first` see nothing.
    let keys: Vec<u64> = model.keys().copied().collect();
    atomically(|tx| keys.iter().try_for_each(|&k| m.remove(tx, k).map(drop)));
    assert_eq!(atomically(|tx| m.len(tx)), 0);
    assert_eq!(atomically(|tx| m.first(tx)), None);
    assert!(atomically(|tx| m.is_empty(tx)));
    assert_eq!(atomically(|tx| m.verify(tx)), Ok(0));
}

/// Four threads insert interleaved keys (`k % 4` is the thread's) and
/// remove every third again; then `verify` and every key is checked.
pub(super) fn stays_whole_under_threads(m: &impl OrderedMap) {
    std::thread::scope(|s| {
        for t in 0..4u64 {
            s.spawn(move || {
                for i in 0..2000u64 {
                    let k = i * 4 + t;
                    atomically(|tx| m.insert(tx, k, k));
                    if i % 3 == 0 {
                        atomically(|tx| m.remove(tx, k));
                    }
                }
            });
        }
    });
    let expect = (0..4u64).map(|_| (0..2000u64).filter(|i| i % 3 != 0).count()).sum::<usize>();
    assert_eq!(atomically(|tx| m.verify(tx)), Ok(expect));
    for k in 0..8000u64 {
        assert_eq!(atomically(|tx| m.get(tx, k)), ((k / 4) % 3 != 0).then_some(k));
    }
}
