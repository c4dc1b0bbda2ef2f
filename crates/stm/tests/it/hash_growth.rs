//! `THashMap` growth: the bucket array doubles as the map fills, chains stay
//! short, and every operation stays transactional across a resize (a
//! transaction that read the old table commits only if its view is
//! consistent with the resize).
#![cfg(not(loom))]

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, Ordering};

use skelaff_stm::{THashMap, TVar, TxOps, atomically};

/// The hash of a `u64` key is the key: tests choose buckets.
#[derive(Clone, Copy, Default)]
struct Identity;

struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = i;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl BuildHasher for Identity {
    type Hasher = IdentityHasher;
    fn build_hasher(&self) -> IdentityHasher {
        IdentityHasher(0)
    }
}

/// splitmix64, for keys and choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[test]
fn many_keys_keep_chains_short_and_readable() {
    // 2^18 keys: fourteen doublings from 16 buckets (2^20 took 6 s of the
    // test command at the test profile's opt-level 1, for no more cases).
    const N: u64 = 1 << 18;
    const BATCH: u64 = 256;
    let mut m = THashMap::<u64, u64>::new();
    assert_eq!(m.buckets(), 16);
    let mut rng = Rng(1);
    let keys: Vec<u64> = (0..N).map(|_| rng.next()).collect();
    for chunk in keys.chunks(BATCH as usize) {
        atomically(|tx| {
            for &k in chunk {
                m.insert(tx, k, k ^ 0xff)?;
            }
            Ok(())
        });
    }
    let buckets = m.buckets();
    assert!(buckets >= (N / 4) as usize, "{buckets} buckets for {N} keys: the map did not grow enough");
    assert!(buckets <= 4 * N as usize, "{buckets} buckets for {N} keys: it grew too much");
    for chunk in keys.chunks(4096) {
        atomically(|tx| {
            for &k in chunk {
                assert_eq!(m.get(tx, &k)?, Some(k ^ 0xff), "key {k}");
            }
            Ok(())
        });
    }
    let (longest, entries) = m.chain_stats();
    assert_eq!(entries, N as usize);
    assert!(longest <= 16, "longest chain {longest} in {buckets} buckets");
}

/// A map with `with_buckets(n)` starts at `n` and grows; a fixed one never
/// does (and is still correct with long chains).
#[test]
fn with_buckets_grows_and_fixed_does_not() {
    let grows = THashMap::<u32, u32>::with_buckets(4);
    let fixed = THashMap::<u32, u32>::with_fixed_buckets(4);
    assert_eq!((grows.buckets(), fixed.buckets()), (4, 4));
    atomically(|tx| {
        for k in 0..1000 {
            grows.insert(tx, k, k)?;
            fixed.insert(tx, k, k)?;
        }
        Ok(())
    });
    assert!(grows.buckets() >= 128, "{}", grows.buckets());
    assert_eq!(fixed.buckets(), 4);
    let mut a = atomically(|tx| grows.to_vec(tx));
    let mut b = atomically(|tx| fixed.to_vec(tx));
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, (0..1000).map(|k| (k, k)).collect::<Vec<_>>());
    assert_eq!(a, b);
}

/// Keys whose hashes collide in every bit: growth cannot split them, and
/// it must not double the table on every insert.
#[test]
fn colliding_keys_do_not_double_the_table_per_insert() {
    struct Zero;
    struct ZeroHasher;
    impl Hasher for ZeroHasher {
        fn write(&mut self, _: &[u8]) {}
        fn finish(&self) -> u64 {
            0
        }
    }
    impl BuildHasher for Zero {
        type Hasher = ZeroHasher;
        fn build_hasher(&self) -> ZeroHasher {
            ZeroHasher
        }
    }
    let mut m = THashMap::<u64, (), Zero>::with_buckets_and_hasher(1, Zero);
    for k in 0..2000u64 {
        atomically(|tx| m.insert(tx, k << 1, ()));
    }
    // One doubling each time the chain's length doubles: about 2000 / 8
    // buckets at most, not 2^2000.
    assert!(m.buckets() <= 1024, "{} buckets for 2000 colliding keys", m.buckets());
    assert_eq!(m.chain_stats(), (2000, 2000));
}

/// Threads insert fresh keys of their own (each key is inserted once, so
/// a lost insert is never repaired by a later one) and remove keys they
/// inserted before, in transactions of one to four operations, while the
/// map grows from 16 buckets; at the end every committed entry is there
/// exactly once, as each thread's model says.
#[test]
fn concurrent_updates_while_growing_keep_every_entry_once() {
    const THREADS: u64 = 4;
    const TXS: u64 = 10_000;
    let m = THashMap::<u64, u64>::new();
    let models: Vec<BTreeMap<u64, u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let m = &m;
                s.spawn(move || {
                    let mut rng = Rng(t + 100);
                    let mut model = BTreeMap::new();
                    let mut fresh = 0u64;
                    for i in 0..TXS {
                        let ops: Vec<(bool, u64)> = (0..1 + rng.next() % 4)
                            .map(|_| {
                                if fresh == 0 || rng.next() % 4 != 0 {
                                    fresh += 1;
                                    (true, fresh * THREADS + t)
                                } else {
                                    (false, (1 + rng.next() % fresh) * THREADS + t)
                                }
                            })
                            .collect();
                        atomically(|tx| {
                            for &(insert, k) in &ops {
                                if insert {
                                    m.insert(tx, k, i)?;
                                } else {
                                    m.remove(tx, &k)?;
                                }
                            }
                            Ok(())
                        });
                        for &(insert, k) in &ops {
                            if insert {
                                model.insert(k, i);
                            } else {
                                model.remove(&k);
                            }
                        }
                    }
                    model
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let model: BTreeMap<u64, u64> = models.into_iter().flatten().collect();
    assert!(m.buckets() >= 1024, "the map did not grow: {} buckets", m.buckets());
    let entries = atomically(|tx| m.to_vec(tx));
    let got: HashMap<u64, u64> = entries.iter().copied().collect();
    assert_eq!(got.len(), entries.len(), "a key is in the map twice");
    let missing = model.keys().filter(|k| !got.contains_key(k)).count();
    let extra = got.keys().filter(|k| !model.contains_key(k)).count();
    assert_eq!((missing, extra), (0, 0), "entries missing from the map, entries it should not have");
    assert_eq!(got, model.into_iter().collect::<HashMap<_, _>>());
    assert_eq!(m.into_iter().count(), entries.len());
}

/// A transaction that inserted into a bucket of the old table, then waits
/// while another doubles the table, must not commit into the table the
/// resize replaced: it is rolled back and inserts into the new one.
#[test]
fn a_writer_that_read_the_old_table_is_rolled_back_by_a_resize() {
    // One bucket, identity hash; 7 even keys in it.
    let m = THashMap::<u64, u64, Identity>::with_buckets_and_hasher(1, Identity);
    atomically(|tx| {
        for k in 0..7 {
            m.insert(tx, 2 * k, 0)?;
        }
        Ok(())
    });
    let attempts = AtomicU32::new(0);
    let (inserted, resized) = (Barrier::new(2), Barrier::new(2));
    std::thread::scope(|s| {
        s.spawn(|| {
            atomically(|tx| {
                let first = attempts.fetch_add(1, Ordering::SeqCst) == 0;
                m.insert(tx, 101, 1)?;
                if first {
                    inserted.wait();
                    resized.wait();
                }
                Ok(())
            });
        });
        inserted.wait();
        // 7 keys, then 8: the insert of 16 walks 8 and doubles the table.
        atomically(|tx| {
            m.insert(tx, 14, 0)?;
            m.insert(tx, 16, 0)
        });
        assert_eq!(m.buckets(), 2);
        resized.wait();
    });
    assert!(attempts.load(Ordering::SeqCst) >= 2, "the writer committed over the resize");
    assert_eq!(atomically(|tx| m.get(tx, &101)), Some(1), "the writer's insert was lost");
    assert_eq!(atomically(|tx| m.len(tx)), 10);
}

/// A transaction whose snapshot predates a resize, and that reaches the
/// new table (by its plain load of the root) after it, must not see the
/// new table next to older values: here a removal that committed between
/// its snapshot and the resize left a bucket of the new table empty.
#[test]
fn a_reader_older_than_a_resize_never_mixes_snapshots() {
    // One bucket, identity hash: key 1 and 7 even keys.
    let m = THashMap::<u64, u64, Identity>::with_buckets_and_hasher(1, Identity);
    let removed = TVar::new(false);
    atomically(|tx| {
        m.insert(tx, 1, 0)?;
        for k in 0..6 {
            m.insert(tx, 2 * k, 0)?;
        }
        Ok(())
    });
    let attempts = AtomicU32::new(0);
    let (started, resized) = (Barrier::new(2), Barrier::new(2));
    let seen = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            atomically(|tx| {
                let was_removed = tx.read(&removed)?;
                if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                    started.wait();
                    resized.wait();
                }
                Ok((was_removed, m.contains(tx, &1)?))
            })
        });
        started.wait();
        // Key 1 goes, with the flag that says so.
        atomically(|tx| {
            tx.write(&removed, true)?;
            m.remove(tx, &1).map(drop)
        });
        // Then 8 keys in the one bucket: the insert of 16 walks 8 and
        // doubles the table; odd bucket 1 of the new table is empty.
        atomically(|tx| {
            m.insert(tx, 12, 0)?;
            m.insert(tx, 14, 0)?;
            m.insert(tx, 16, 0)
        });
        assert_eq!(m.buckets(), 2);
        resized.wait();
        reader.join().unwrap()
    });
    assert_ne!(seen, (false, false), "key 1 absent while the removal that took it is not yet visible");
    assert_eq!(seen, (true, false));
    assert!(attempts.load(Ordering::SeqCst) >= 2);
}

/// Owned access (`get_mut`, `iter_mut`, `drain`, `into_iter`) after the
/// table doubled several times.
#[test]
fn owned_access_after_growth() {
    let mut m = THashMap::<u32, u64>::with_buckets(1);
    atomically(|tx| {
        for k in 0..500 {
            m.insert(tx, k, u64::from(k))?;
        }
        Ok(())
    });
    assert!(m.buckets() >= 32);
    for k in 0..500 {
        let v = m.get_mut(&k).unwrap();
        let x = v.get_mut();
        v.set_mut(x + 1);
    }
    assert!(m.get_mut(&500).is_none());
    for (_, v) in m.iter_mut() {
        let x = v.get_mut();
        v.set_mut(x * 2);
    }
    let mut got: Vec<(u32, u64)> = m.drain().collect();
    got.sort_unstable();
    assert_eq!(got, (0..500).map(|k| (k, 2 * (u64::from(k) + 1))).collect::<Vec<_>>());
    assert_eq!(atomically(|tx| m.len(tx)), 0);
    // Refill the drained map (it keeps its grown array) and consume it.
    atomically(|tx| {
        for k in 0..2000 {
            m.insert(tx, k, 7)?;
        }
        Ok(())
    });
    let mut all: Vec<(u32, u64)> = m.into_iter().collect();
    all.sort_unstable();
    assert_eq!(all, (0..2000).map(|k| (k, 7)).collect::<Vec<_>>());
}

/// A map sized for its entries (`with_buckets(n)`, then `n` keys: a load
/// of 1, where a few chains of 8 appear) never doubles.
#[test]
fn a_map_sized_for_its_entries_does_not_double() {
    const N: usize = 1 << 18;
    let mut m = THashMap::<u64, u64>::with_buckets(N);
    let mut rng = Rng(7);
    let keys: Vec<u64> = (0..N).map(|_| rng.next()).collect();
    for chunk in keys.chunks(1024) {
        atomically(|tx| {
            for &k in chunk {
                m.insert(tx, k, 1)?;
            }
            Ok(())
        });
    }
    let (longest, entries) = m.chain_stats();
    assert_eq!(entries, N);
    assert!(longest >= 8, "no chain of 8 (longest {longest}): the test does not reach the growth bound");
    assert_eq!(m.buckets(), N, "a map sized for its entries doubled");
}
