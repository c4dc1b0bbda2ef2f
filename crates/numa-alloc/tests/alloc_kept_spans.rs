//! A thread's own frees into spans it has allocated from: while it keeps
//! them (up to four exhausted spans per size class) the frees stay with the
//! thread, without the arena; a kept span whose blocks are all free goes
//! back at once; older spans are handed back and their blocks return
//! through the arena. `NumaAlloc` is called directly and only by this test,
//! so its statistics are this test's alone.

use std::alloc::{GlobalAlloc, Layout};

use skelaff_numa_alloc::alloc::{self, NumaAlloc};

const A: NumaAlloc = NumaAlloc::new();

/// 48-byte blocks: a span of one 64 KiB unit holds 1365 of them.
const PER_SPAN: usize = (64 << 10) / 48;

fn layout() -> Layout {
    Layout::from_size_align(48, 8).unwrap()
}

/// Allocates `n` blocks, tags them, frees them in a scrambled order
/// (checking the tags), and returns the block addresses.
fn churn(n: usize) -> Vec<usize> {
    // SAFETY: a valid layout; every block is written within its 48 bytes and
    // freed once with the same layout.
    unsafe {
        let blocks: Vec<*mut u8> = (0..n).map(|_| A.alloc(layout())).collect();
        assert!(blocks.iter().all(|p| !p.is_null()));
        for (i, &p) in blocks.iter().enumerate() {
            p.cast::<u64>().write(i as u64);
        }
        let mut order: Vec<usize> = (0..n).collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        for i in order {
            assert_eq!(blocks[i].cast::<u64>().read(), i as u64, "block {i} kept its contents");
            A.dealloc(blocks[i], layout());
        }
        blocks.into_iter().map(|p| p as usize).collect()
    }
}

#[test]
fn own_frees_stay_with_the_thread_while_it_keeps_the_spans() {
    std::thread::spawn(|| {
        // Four spans' worth: one current and three kept, none handed back.
        let before = alloc::stats();
        let mut first = churn(4 * PER_SPAN - 100);
        first.sort_unstable();
        let s = alloc::stats();
        assert_eq!(s.deferred_frees, before.deferred_frees, "no free went through the arena: {s:?}");
        assert_eq!(s.remote_frees, before.remote_frees, "{s:?}");
        // Kept spans whose blocks all came back were handed back at once:
        // only the current span's blocks are still out (in the thread's list).
        assert!(s.small_blocks_out() <= PER_SPAN, "{} blocks out: {:?}", s.small_blocks_out(), s.arenas);
        let mapped = s.chunks_mapped;
        // The same churn again reuses the memory.
        let again = churn(4 * PER_SPAN - 100);
        assert_eq!(alloc::stats().chunks_mapped, mapped, "no new chunk for the same work");
        let reused = again.iter().filter(|a| first.binary_search(a).is_ok()).count();
        assert!(reused > again.len() / 2, "{reused} of {} blocks reused", again.len());

        // Ten spans' worth: the oldest exhausted spans are handed back (at
        // most four kept), and frees into them go through the arena.
        let before = alloc::stats();
        churn(10 * PER_SPAN);
        let s = alloc::stats();
        assert!(s.deferred_frees > before.deferred_frees, "{s:?}");
        alloc::flush_thread_cache();
        assert_eq!(alloc::stats().small_blocks_out(), 0);
    })
    .join()
    .unwrap();
    let s = alloc::stats();
    assert_eq!(s.small_blocks_out(), 0, "{:?}", s.arenas);
    assert!(s.arenas.iter().all(|a| a.chunks == a.empty_chunks), "{:?}", s.arenas);
}
