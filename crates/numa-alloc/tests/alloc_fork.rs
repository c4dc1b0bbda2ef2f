//! `NumaAlloc` is fork-safe: with it as the global allocator, threads
//! allocate and free in a loop (taking the arena locks, the large-block
//! cache's lock and the default policy's lock all the time) while the main
//! thread forks over and over; every child must allocate and free blocks of
//! every path and exit 0 within a bound. A lock copied into a child held by
//! a thread that does not exist there would make the child spin forever:
//! the bound turns that into a failure instead of a hang.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use skelaff_numa_alloc::Policy;
use skelaff_numa_alloc::alloc::{self, NumaAlloc};
use skelaff_testkit::{ChildExit, run_in_child};

#[global_allocator]
static GLOBAL: NumaAlloc = NumaAlloc::new();

/// Forks per test run.
const FORKS: usize = 150;
/// How long a child may take (it needs milliseconds; the bound is generous
/// for a loaded machine).
const BOUND: Duration = Duration::from_secs(20);

/// One round of a background thread: blocks of every path, some freed by
/// another thread, the thread cache flushed (every span back to its arena
/// under its lock), the default policy read and set (its lock).
fn churn(round: u64, to_other: &mpsc::Sender<Vec<u8>>) {
    let sizes = [24usize, 100, 700, 3000, 20_000, 70_000, 300_000, 1 << 20, 3 << 20];
    let mut keep = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        // Untouched but for one byte: the time goes to the allocator.
        let mut v = Vec::with_capacity(n);
        v.push((round as u8).wrapping_add(i as u8));
        if i % 2 == 0 {
            // Freed by the other thread: a remote free.
            let _ = to_other.send(v);
        } else {
            keep.push(v);
        }
    }
    let small: Vec<Box<[u8; 48]>> = (0..200).map(|i| Box::new([i as u8; 48])).collect();
    drop(small);
    drop(keep);
    alloc::flush_thread_cache();
    // Walks every chunk of every arena under its lock, and reads the large
    // cache under its lock: the longest critical sections there are.
    let stats = alloc::stats();
    assert!(stats.chunks_mapped > 0);
    if round % 8 == 0 {
        let _ = alloc::set_default_policy(alloc::default_policy());
    }
}

/// What each child does: allocate, write and check, and free blocks of
/// every path (small classes, medium units, large mappings), after handing
/// its cache back so that it needs the arena locks. Returns the exit code.
fn child_work() -> i32 {
    alloc::flush_thread_cache();
    let mut blocks: [(*mut u8, usize); 12] = [(std::ptr::null_mut(), 0); 12];
    let sizes = [16usize, 200, 1500, 9000, 30_000, 64 << 10, 200 << 10, 512 << 10, 600 << 10, 2 << 20, 5 << 20, 40];
    for (slot, &n) in blocks.iter_mut().zip(&sizes) {
        let layout = Layout::from_size_align(n, 16).expect("valid layout");
        // SAFETY: a valid non-zero layout.
        let p = unsafe { GLOBAL.alloc(layout) };
        if p.is_null() {
            return 1;
        }
        // SAFETY: the block holds `n` bytes.
        unsafe {
            p.write(0xa5);
            p.add(n - 1).write(0x5a);
        }
        *slot = (p, n);
    }
    for &(p, n) in &blocks {
        // SAFETY: live blocks of `n` bytes allocated above with this layout.
        unsafe {
            if p.read() != 0xa5 || p.add(n - 1).read() != 0x5a {
                return 2;
            }
            GLOBAL.dealloc(p, Layout::from_size_align(n, 16).expect("valid layout"));
        }
    }
    alloc::flush_thread_cache();
    0
}

#[test]
fn children_forked_while_threads_allocate_can_allocate_and_exit() {
    assert!(NumaAlloc::is_global());
    // Resolve the topology before forking (the child must not read it: not
    // sysfs, nor hwloc with the feature `hwloc`).
    alloc::set_default_policy(Policy::FirstTouch).unwrap();
    let stop = AtomicBool::new(false);
    let rounds = AtomicU64::new(0);
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let rx = std::sync::Mutex::new(rx);
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (tx, rx, stop, rounds) = (tx.clone(), &rx, &stop, &rounds);
            s.spawn(move || {
                let mut round = t;
                while !stop.load(Ordering::Relaxed) {
                    churn(round, &tx);
                    // Free what another thread sent (if any is waiting).
                    if let Ok(rx) = rx.try_lock() {
                        while let Ok(v) = rx.try_recv() {
                            drop(v);
                        }
                    }
                    round += 3;
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        drop(tx);
        let mut failures = Vec::new();
        for i in 0..FORKS {
            // SAFETY: the child runs only `child_work`, which allocates and
            // frees through NumaAlloc (whose fork safety is under test),
            // and prints nothing.
            match unsafe { run_in_child(BOUND, child_work) } {
                Ok(ChildExit::Exited(0)) => {}
                Ok(other) => failures.push(format!("fork {i}: the child {other}")),
                Err(e) => failures.push(format!("fork {i}: {e}")),
            }
            if !failures.is_empty() {
                // One hang is the finding; more would only cost time.
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        assert!(failures.is_empty(), "{} forks failed: {}", failures.len(), failures.join("; "));
    });
    assert!(rounds.load(Ordering::Relaxed) > 0, "the background threads never ran");
}
