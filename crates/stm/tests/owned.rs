//! Owned access to the collections (`iter_mut`, `drain`, `into_iter`,
//! `THashMap::get_mut`): against a `BTreeMap` model after concurrent
//! transactions, and, with a counting allocator, that every node is freed
//! once whether or not an iterator runs to its end.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;

use skelaff_stm::{TBTreeMap, THashMap, TList, TMap, TQueue, TSkipMap, atomically};

/// The system allocator, counting this thread's allocations minus its
/// deallocations (each test runs on its own thread).
struct Counting;

thread_local! {
    static NET: Cell<isize> = const { Cell::new(0) };
}

fn count(d: isize) {
    // During the thread's teardown the counter is gone: not counted.
    let _ = NET.try_with(|n| n.set(n.get() + d));
}

// SAFETY: every method forwards to `System` with the caller's arguments,
// so `System`'s contract is the caller's; the counter only adds a
// thread-local `Cell` update, which does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(1);
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-1);
        // SAFETY: forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn net() -> isize {
    NET.with(Cell::get)
}

/// Keys each of two threads inserts (disjoint), and which of them it
/// removes again (so removed nodes go through the epoch reclaimer).
fn model(n: u32) -> BTreeMap<u32, u64> {
    (0..2 * n).filter(|k| k % 5 != 0).map(|k| (k, u64::from(k) * 3)).collect()
}

macro_rules! owned_map_tests {
    ($modname:ident, $ty:ty, $make:expr, $ordered:expr, $counted:expr) => {
        mod $modname {
            use super::*;

            /// Two threads insert, then remove every fifth key, each in
            /// its own transactions.
            fn filled(n: u32) -> $ty {
                let m: $ty = $make;
                std::thread::scope(|s| {
                    for t in 0..2u32 {
                        let m = &m;
                        s.spawn(move || {
                            for k in (t..2 * n).step_by(2) {
                                atomically(|tx| m.insert(tx, k, u64::from(k) * 3));
                            }
                            for k in (t..2 * n).step_by(2).filter(|k| k % 5 == 0) {
                                atomically(|tx| m.remove(tx, &k));
                            }
                        });
                    }
                });
                m
            }

            fn sorted(mut v: Vec<(u32, u64)>) -> Vec<(u32, u64)> {
                if !$ordered {
                    v.sort_unstable();
                }
                v
            }

            #[test]
            fn iter_mut_sees_what_transactions_left_and_writes_through() {
                let mut m = filled(400);
                let want: Vec<_> = model(400).into_iter().collect();
                let got = sorted(m.iter_mut().map(|(k, v)| (*k, v.get_mut())).collect());
                assert_eq!(got, want);
                for (_, v) in &mut m {
                    let x = v.get_mut();
                    v.set_mut(x + 1);
                }
                for &(k, v) in &want {
                    assert_eq!(atomically(|tx| m.get(tx, &k)), Some(v + 1), "key {k}");
                }
                assert_eq!(atomically(|tx| m.len(tx)), want.len());
            }

            #[test]
            fn drain_empties_and_the_map_stays_usable() {
                let mut m = filled(300);
                let want: Vec<_> = model(300).into_iter().collect();
                assert_eq!(sorted(m.drain().collect()), want);
                assert_eq!(atomically(|tx| m.len(tx)), 0);
                assert_eq!(m.iter_mut().count(), 0);
                atomically(|tx| m.insert(tx, 7, 70));
                assert_eq!(atomically(|tx| m.get(tx, &7)), Some(70));
                assert_eq!(m.into_iter().collect::<Vec<_>>(), [(7, 70)]);
            }

            #[test]
            fn into_iter_gives_every_entry() {
                let m = filled(300);
                let want: Vec<_> = model(300).into_iter().collect();
                assert_eq!(sorted(m.into_iter().collect()), want);
            }

            /// Exact counts need inserts that free nothing: the B+tree's
            /// copy-on-write inserts retire old leaves to the epoch
            /// reclaimer, which frees them when it next collects.
            #[test]
            fn every_node_is_freed_once_however_far_an_iterator_runs() {
                if !$counted {
                    return;
                }
                // Warm up this thread's transaction buffers (read and write
                // sets, the write set's index) past anything one insert
                // needs, so that what they keep is not counted below.
                let w: $ty = $make;
                atomically(|tx| {
                    for k in 0..2000 {
                        w.insert(tx, k, 0)?;
                    }
                    Ok(())
                });
                drop(w);
                for stop in [0, 1, 50, 299, 300, 1000] {
                    let before = net();
                    let mut m: $ty = $make;
                    for k in 0..300u32 {
                        atomically(|tx| m.insert(tx, k, u64::from(k)));
                    }
                    // Some through each way in, the rest left to the drops.
                    let mut taken = m.iter_mut().take(stop).count();
                    taken += m.drain().take(stop).count();
                    assert_eq!(taken, 2 * stop.min(300));
                    for k in 0..300u32 {
                        atomically(|tx| m.insert(tx, k, u64::from(k)));
                    }
                    assert_eq!(m.into_iter().take(stop).count(), stop.min(300));
                    assert_eq!(net(), before, "allocations left after stopping at {stop}");
                }
            }
        }
    };
}

// Fixed buckets: a map that grows retires its old bucket arrays to the
// epoch reclaimer, which frees them later, so the exact allocation counts
// of `every_node_is_freed_once_however_far_an_iterator_runs` would not
// hold. Owned access after growth: tests/it/hash_growth.rs.
owned_map_tests!(hash, THashMap<u32, u64>, THashMap::with_fixed_buckets(64), false, true);
owned_map_tests!(list, TList<u32, u64>, TList::new(), true, true);
owned_map_tests!(rbtree, TMap<u32, u64>, TMap::new(), true, true);
owned_map_tests!(btree, TBTreeMap<u32, u64>, TBTreeMap::new(), true, false);
owned_map_tests!(skiplist, TSkipMap<u32, u64>, TSkipMap::new(), true, true);

#[test]
fn hash_get_mut_finds_each_key() {
    let mut m = THashMap::with_buckets(16);
    for k in 0..100u32 {
        atomically(|tx| m.insert(tx, k, u64::from(k)));
    }
    for k in 0..100u32 {
        let v = m.get_mut(&k).expect("present");
        assert_eq!(v.get_mut(), u64::from(k));
        v.set_mut(0);
    }
    assert!(m.get_mut(&100).is_none());
    assert_eq!(m.into_iter().map(|(_, v)| v).sum::<u64>(), 0);
}

#[test]
fn queue_owned_access_keeps_fifo_order_and_frees_every_node() {
    let mut q = TQueue::new();
    for i in 0..10 {
        atomically(|tx| q.push_back(tx, i));
    }
    drop(q.drain());
    // Pushes only: a pop frees its node through the epoch reclaimer,
    // which would blur the count.
    let before = net();
    let mut q = TQueue::new();
    for i in 0..100u64 {
        atomically(|tx| q.push_back(tx, i));
    }
    for v in &mut q {
        *v *= 2;
    }
    assert_eq!(q.iter_mut().map(|v| *v).collect::<Vec<_>>(), (0..100).map(|i| i * 2).collect::<Vec<_>>());
    assert_eq!(q.drain().take(5).collect::<Vec<_>>(), [0, 2, 4, 6, 8]);
    assert_eq!(atomically(|tx| q.pop_front(tx)), None);
    atomically(|tx| q.push_back(tx, 1));
    atomically(|tx| q.push_back(tx, 2));
    assert_eq!(q.into_iter().collect::<Vec<_>>(), [1, 2]);
    assert_eq!(net(), before);
    let q = TQueue::new();
    for i in 0..10u64 {
        atomically(|tx| q.push_back(tx, i));
    }
    atomically(|tx| q.pop_front(tx));
    assert_eq!(q.into_iter().collect::<Vec<_>>(), (1..10).collect::<Vec<_>>());
}
