//! Cross-thread frees: one thread allocates, others free, in rounds; then
//! every block must be back in its span (nothing lost, nothing counted
//! twice) and the chunks must be reusable or gone. `NumaAlloc` is called
//! directly and only by this test, so its statistics are this test's alone.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::mpsc;

use skelaff_numa_alloc::alloc::{self, NumaAlloc};

const A: NumaAlloc = NumaAlloc::new();
const CONSUMERS: usize = 3;
const ROUNDS: usize = 4;
const PER_ROUND: usize = 60_000;

/// A block and its layout, sent between threads.
struct Block(*mut u8, Layout);
// SAFETY: the block is a plain allocation handed from one thread to another.
unsafe impl Send for Block {}

fn size_of(i: usize) -> usize {
    // Mostly 16-512 bytes, some up to 8 KiB, a few medium blocks.
    match i % 97 {
        0 => 70_000,
        1..=9 => 600 + (i * 37) % 7600,
        _ => 16 + (i * 131) % 497,
    }
}

fn produce(round: usize, senders: &[mpsc::Sender<Vec<Block>>]) {
    let mut batch = Vec::with_capacity(256);
    for i in 0..PER_ROUND {
        let layout = Layout::from_size_align(size_of(i), if i % 5 == 0 { 64 } else { 8 }).unwrap();
        // SAFETY: a valid non-zero layout.
        let p = unsafe { A.alloc(layout) };
        assert!(!p.is_null());
        // Tag the first and last byte with the round and index.
        // SAFETY: the block holds `layout.size()` bytes.
        unsafe {
            *p = (i ^ round) as u8;
            *p.add(layout.size() - 1) = (i ^ round ^ 0x5a) as u8;
        }
        batch.push((i, Block(p, layout)));
        if batch.len() == 256 {
            let to = &senders[(i / 256) % senders.len()];
            to.send(batch.drain(..).map(|(_, b)| b).collect()).unwrap();
        }
    }
    if !batch.is_empty() {
        senders[0].send(batch.drain(..).map(|(_, b)| b).collect()).unwrap();
    }
}

fn consume(rx: mpsc::Receiver<Vec<Block>>) -> usize {
    let mut freed = 0;
    for batch in rx {
        for Block(p, layout) in batch {
            // SAFETY: a live block with its layout, handed to us.
            unsafe { A.dealloc(p, layout) };
            freed += 1;
        }
    }
    // Rust TLS is gone by the time the exit hook runs; flushing here too
    // exercises the explicit path.
    alloc::flush_thread_cache();
    freed
}

#[test]
fn blocks_freed_by_other_threads_all_come_back() {
    let mut chunks_after_round = Vec::new();
    for round in 0..ROUNDS {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..CONSUMERS).map(|_| mpsc::channel::<Vec<Block>>()).unzip();
        let consumers: Vec<_> = rxs.into_iter().map(|rx| std::thread::spawn(move || consume(rx))).collect();
        // Even rounds: the producer outlives the frees; odd rounds: it exits
        // first, so its spans are handed back while blocks are still out.
        let producer = std::thread::spawn(move || {
            produce(round, &txs);
            if round % 2 == 0 {
                drop(txs);
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        producer.join().unwrap();
        let freed: usize = consumers.into_iter().map(|c| c.join().unwrap()).sum();
        assert_eq!(freed, PER_ROUND);
        let s = alloc::stats();
        assert_eq!(s.small_blocks_out(), 0, "round {round}: blocks still counted out: {:?}", s.arenas);
        assert!(s.arenas.iter().all(|a| a.medium_units == 0), "{:?}", s.arenas);
        chunks_after_round.push(s.chunks());
    }
    let s = alloc::stats();
    assert!(s.remote_frees > 0, "consumers freed onto the producer's spans: {s:?}");
    assert!(s.deferred_frees > 0, "and onto spans no thread owned: {s:?}");
    // Everything is free: each arena keeps at most its hot empty chunks as
    // they are, and all arenas together at most the retention budget more.
    for a in &s.arenas {
        assert!(a.chunks == a.empty_chunks && a.empty_chunks - a.retained_chunks <= alloc::HOT_EMPTY_CHUNKS, "{a:?}");
    }
    assert!(s.retained_chunks() <= alloc::RETAINED_CHUNKS_MAX, "{s:?}");
    // Churn does not grow memory: later rounds hold no more than the first
    // round's chunks, or than the bound on empty chunks kept.
    let bound = chunks_after_round[0].max(alloc::HOT_EMPTY_CHUNKS * s.arenas.len() + alloc::RETAINED_CHUNKS_MAX);
    assert!(chunks_after_round.iter().all(|&c| c <= bound), "chunks after each round: {chunks_after_round:?}");
    assert_eq!(s.fallbacks, 0);
}
