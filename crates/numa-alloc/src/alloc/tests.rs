//! Unit tests: `NumaAlloc` called directly (the test binary's global
//! allocator is the system's). Tests run in parallel threads, so they only
//! assert on what their own thread allocated.

use super::*;
use crate::error::Error;
use crate::sets::NodeSet;

const A: NumaAlloc = NumaAlloc::new();

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).unwrap()
}

/// Allocates, checks alignment, fills, checks, frees.
fn round_trip(size: usize, align: usize) -> usize {
    let l = layout(size, align);
    // SAFETY: a valid non-zero layout; the block is written within its size
    // and freed with the same layout.
    unsafe {
        let p = A.alloc(l);
        assert!(!p.is_null(), "size {size} align {align}");
        assert_eq!(p as usize % align, 0, "size {size} align {align}");
        ptr::write_bytes(p, 0xa5, size);
        assert!(std::slice::from_raw_parts(p, size).iter().all(|&b| b == 0xa5));
        A.dealloc(p, l);
        p as usize
    }
}

#[test]
fn every_path_and_alignment_round_trips() {
    for (size, align) in [
        (1, 1),
        (8, 8),
        (24, 8),
        (100, 64),
        (129, 128),
        (4000, 4096),
        (5000, 16),
        (40_000, 16),
        (70_000, 65536),
        (100, 8192),
        (600_000, 8),
        (3 << 20, 8),
        (100, 1 << 17),
        (5 << 20, 1 << 21),
    ] {
        round_trip(size, align);
    }
}

#[test]
fn freed_small_blocks_are_reused_by_the_same_thread() {
    std::thread::spawn(|| {
        let a = round_trip(48, 8);
        let b = round_trip(48, 8);
        assert_eq!(a, b, "a freed block is the next one handed out");
    })
    .join()
    .unwrap();
}

#[test]
fn zeroed_blocks_are_zero_even_when_memory_is_reused() {
    std::thread::spawn(|| {
        for (size, align) in [(40, 8), (3000, 64), (100_000, 16), (300_000, 4096), (2 << 20, 8)] {
            let l = layout(size, align);
            for _ in 0..4 {
                // SAFETY: valid layouts; blocks used within their size.
                unsafe {
                    let p = A.alloc_zeroed(l);
                    assert!(!p.is_null());
                    assert!(std::slice::from_raw_parts(p, size).iter().all(|&b| b == 0), "size {size}");
                    ptr::write_bytes(p, 0xff, size);
                    A.dealloc(p, l);
                }
            }
        }
    })
    .join()
    .unwrap();
}

#[test]
fn realloc_keeps_contents_across_every_path() {
    let sizes = [10, 100, 5000, 33_000, 50_000, 700_000, 3 << 20, 6 << 20, 200_000, 40_000, 200, 10];
    for align in [8, 64, 4096] {
        let mut l = layout(sizes[0], align);
        // SAFETY: valid layouts; each realloc passes the block's current layout.
        unsafe {
            let mut p = A.alloc(l);
            for i in 0..l.size() {
                *p.add(i) = (i % 251) as u8;
            }
            for &n in &sizes[1..] {
                let q = A.realloc(p, l, n);
                assert!(!q.is_null());
                assert_eq!(q as usize % align, 0);
                let kept = l.size().min(n);
                for i in 0..kept {
                    assert_eq!(*q.add(i), (i % 251) as u8, "byte {i} after realloc {} -> {n}", l.size());
                }
                for i in kept..n {
                    *q.add(i) = (i % 251) as u8;
                }
                p = q;
                l = layout(n, align);
            }
            A.dealloc(p, l);
        }
    }
}

#[test]
fn realloc_within_a_class_keeps_the_block() {
    let l = layout(100, 8);
    // SAFETY: valid layouts.
    unsafe {
        let p = A.alloc(l);
        let q = A.realloc(p, l, 110);
        assert_eq!(p, q, "100 and 110 bytes share the 112-byte class");
        A.dealloc(q, layout(110, 8));
    }
}

fn node0() -> usize {
    Topology::get().unwrap().nodes_with_cpus().first().unwrap()
}

#[test]
fn blocks_follow_the_policy_in_force_when_they_were_allocated() {
    std::thread::spawn(|| {
        let node = node0();
        let small = layout(64, 8);
        let medium = layout(100_000, 8);
        // SAFETY: valid layouts, freed with the same.
        unsafe {
            let before = A.alloc(small);
            let info = chunk_info(before).expect("small blocks live in chunks");
            assert_eq!(info.policy, Policy::FirstTouch);
            assert_eq!(info.home, Some(pin::current_node_or_zero()));

            set_thread_policy(Policy::Bind(NodeSet::single(node))).unwrap();
            let after = A.alloc(small);
            let m = A.alloc(medium);
            assert_eq!(chunk_info(after).unwrap().policy, Policy::Bind(NodeSet::single(node)));
            assert_eq!(chunk_info(m).unwrap().policy, Policy::Bind(NodeSet::single(node)));
            assert_eq!(chunk_info(before).unwrap().policy, Policy::FirstTouch, "old blocks stay");

            set_thread_policy(Policy::Preferred(node)).unwrap();
            let pref = A.alloc(small);
            assert_eq!(chunk_info(pref).unwrap().policy, Policy::Preferred(node));
            // Single-node spreads are binds.
            set_thread_policy(Policy::Cyclic { nodes: NodeSet::single(node), block: 4096 }).unwrap();
            assert_eq!(effective_policy().0, Policy::Bind(NodeSet::single(node)));
            clear_thread_policy();
            assert_eq!(effective_policy().0, Policy::FirstTouch);

            for p in [before, after, pref] {
                A.dealloc(p, small);
            }
            A.dealloc(m, medium);
        }
    })
    .join()
    .unwrap();
}

/// `pin::current_node`, or 0 when `getcpu` fails.
mod pin {
    pub(super) fn current_node_or_zero() -> usize {
        crate::pin::current_node().unwrap_or(0)
    }
}

#[test]
fn bad_policies_are_refused_with_what_is_allowed() {
    let e = set_thread_policy(Policy::Bind(NodeSet::single(999))).unwrap_err();
    assert!(matches!(e, Error::NoSuchNode { node: 999, .. }), "{e}");
    let e = set_thread_policy(Policy::Interleave(NodeSet::new())).unwrap_err();
    assert!(matches!(e, Error::EmptyNodeSet { .. }), "{e}");
    let e = set_thread_policy(Policy::Cyclic { nodes: NodeSet::single(node0()), block: 1000 }).unwrap_err();
    assert!(matches!(e, Error::BadBlockSize { block: 1000, .. }), "{e}");
    let e = set_default_policy(Policy::Preferred(4000)).unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
    assert_eq!(thread_policy(), None, "a refused policy changes nothing");
}

#[test]
fn with_policy_restores_the_previous_policy_even_on_panic() {
    std::thread::spawn(|| {
        let bind = Policy::Bind(NodeSet::single(node0()));
        set_thread_policy(Policy::Local).unwrap();
        let inner = with_policy(bind, thread_policy).unwrap();
        assert_eq!(inner, Some(bind));
        assert_eq!(thread_policy(), Some(Policy::Local));
        let r = std::panic::catch_unwind(|| with_policy(bind, || panic!("inside")));
        assert!(r.is_err());
        assert_eq!(thread_policy(), Some(Policy::Local));
        assert!(with_policy(Policy::Bind(NodeSet::single(999)), || ()).is_err());
    })
    .join()
    .unwrap();
}

#[test]
fn large_blocks_are_counted_on_their_node() {
    std::thread::spawn(|| {
        let node = node0();
        set_thread_policy(Policy::Bind(NodeSet::single(node))).unwrap();
        let l = layout(8 << 20, 8);
        // SAFETY: valid layout, freed with the same.
        unsafe {
            let p = A.alloc(l);
            assert!(!p.is_null());
            let s = stats();
            assert!(s.large_blocks >= 1);
            assert!(s.node(node).unwrap().large_bytes >= 8 << 20, "{s:?}");
            assert!(!owns(p), "large blocks are not in chunks");
            A.dealloc(p, l);
        }
    })
    .join()
    .unwrap();
}

#[test]
fn the_system_allocator_is_global_here() {
    assert!(!NumaAlloc::is_global());
    assert!(!owns(&0u8 as *const u8));
}

#[test]
fn empty_chunks_are_kept_within_bounds_and_the_rest_go_back_to_the_os() {
    std::thread::spawn(|| {
        // A placement of its own, so other tests' blocks do not keep chunks alive.
        set_thread_policy(Policy::Local).unwrap();
        let home = effective_policy().1;
        let l = layout(400_000, 8); // medium: 7 units, 4 per chunk at most
        let n = 4 * (arena::KEEP_EMPTY + arena::RETAIN_MAX + 10);
        let before = stats();
        let arena_of = |s: &AllocStats| -> ArenaStats {
            *s.arenas.iter().find(|a| a.policy == Policy::Local && a.home == home).expect("this test's arena")
        };
        // SAFETY: valid layout; every block freed with it.
        unsafe {
            let blocks: Vec<*mut u8> = (0..n).map(|_| A.alloc(l)).collect();
            assert!(blocks.iter().all(|p| !p.is_null()));
            let mid = stats();
            assert!(mid.chunks_mapped >= before.chunks_mapped + (n / 4) as u64, "{mid:?}");
            for p in blocks {
                A.dealloc(p, l);
            }
        }
        // The thread keeps a few freed medium blocks for reuse, no more.
        let cached = arena_of(&stats()).medium_units;
        assert!(cached > 0 && cached <= heap::MEDIUM_CACHE_UNITS as usize, "{cached} units kept");
        flush_thread_cache();
        let after = stats();
        let a = arena_of(&after);
        assert_eq!(a.medium_units, 0);
        assert_eq!(a.chunks, a.empty_chunks, "{a:?}");
        assert!(a.empty_chunks - a.retained_chunks <= HOT_EMPTY_CHUNKS, "{a:?}");
        assert!(after.retained_chunks() <= RETAINED_CHUNKS_MAX, "{after:?}");
        // Whatever the other tests retain, at least n/4 - hot - budget chunks went back.
        let gone = after.chunks_unmapped - before.chunks_unmapped;
        assert!(gone >= (n / 4 - HOT_EMPTY_CHUNKS - RETAINED_CHUNKS_MAX) as u64, "{gone} unmapped: {after:?}");

        // Retained chunks still empty after the delay get their pages advised
        // at a later use of the arena's lock.
        let key = key::Key::new(&Policy::Local, home.unwrap_or(0));
        let arena = arena::arena_for(&key, &STATS);
        let (retained, _) = arena::retained_and_advised(arena);
        std::thread::sleep(std::time::Duration::from_millis(arena::ADVISE_DELAY_MS + 50));
        for _ in 0..1000 {
            // SAFETY: valid layout; freed with it. The flush sends the block
            // back through the arena lock.
            unsafe { A.dealloc(A.alloc(l), l) };
            flush_thread_cache();
        }
        let (still, advised) = arena::retained_and_advised(arena);
        assert!(retained > 0, "this test retained chunks");
        assert_eq!(advised, still, "every retained chunk is advised after the delay");
    })
    .join()
    .unwrap();
}
