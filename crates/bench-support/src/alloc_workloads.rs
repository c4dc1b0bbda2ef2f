//! Allocation workloads shared by `benches/alloc.rs` (criterion) and
//! `examples/alloc_bench.rs` (one pass, ratios). Every workload is generic
//! over the allocator and calls it directly, so all allocators run in the
//! same process and the same run; the global allocator (the system's) only
//! serves the harness.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use skelaff_numa_alloc::alloc::NumaAlloc;

/// The allocators compared, by name: jemalloc only with the `jemalloc`
/// feature (its build script compiles jemalloc's C sources, about three
/// minutes of a two-core machine, so the default build leaves it out).
#[cfg(feature = "jemalloc")]
pub const NAMES: &[&str] = &["numa", "system", "mimalloc", "jemalloc"];
/// The allocators compared, by name: jemalloc only with the `jemalloc`
/// feature (its build script compiles jemalloc's C sources, about three
/// minutes of a two-core machine, so the default build leaves it out).
#[cfg(not(feature = "jemalloc"))]
pub const NAMES: &[&str] = &["numa", "system", "mimalloc"];

/// The allocator under test.
pub static NUMA: NumaAlloc = NumaAlloc::new();
/// Peer: mimalloc.
pub static MIMALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
/// Peer: jemalloc (feature `jemalloc`).
#[cfg(feature = "jemalloc")]
pub static JEMALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The allocator called `name` (one of [`NAMES`]).
pub fn by_name(name: &str) -> Option<&'static dyn DynAlloc> {
    Some(match name {
        "numa" => &NUMA,
        "system" => &System,
        "mimalloc" => &MIMALLOC,
        #[cfg(feature = "jemalloc")]
        "jemalloc" => &JEMALLOC,
        _ => return None,
    })
}

/// `GlobalAlloc` behind a vtable, for choosing the allocator at run time.
/// Every workload takes the allocator generically and is instantiated for
/// each concrete type below; the `dyn` is only for dispatching the whole run.
pub trait DynAlloc {
    /// [`same_thread`] on `threads` threads; wall time.
    fn same_thread(&'static self, threads: usize, ops: usize) -> Duration;
    /// [`producer_consumer`]; wall time.
    fn producer_consumer(&'static self, ops: usize) -> Duration;
    /// [`mixed`] on `threads` threads; wall time.
    fn mixed(&'static self, threads: usize, ops: usize) -> Duration;
    /// [`large_prefault`]; wall time.
    fn large_prefault(&'static self, bytes: usize, reps: usize) -> Duration;
}

impl<A: GlobalAlloc + Sync + 'static> DynAlloc for A {
    fn same_thread(&'static self, threads: usize, ops: usize) -> Duration {
        on_threads(threads, |_| same_thread(self, ops))
    }
    fn producer_consumer(&'static self, ops: usize) -> Duration {
        producer_consumer(self, ops)
    }
    fn mixed(&'static self, threads: usize, ops: usize) -> Duration {
        on_threads(threads, |t| mixed(self, ops, t as u64 + 1))
    }
    fn large_prefault(&'static self, bytes: usize, reps: usize) -> Duration {
        large_prefault(self, bytes, reps)
    }
}

/// A small xorshift generator: the same sequence for every allocator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// A number below `n`.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Runs `work` on `threads` threads started together; returns the wall
/// time from the first thread's start to the last thread's finish.
///
/// The workers read the clock themselves: with as many workers as cores,
/// the spawning thread may not run again until a worker finishes, so a
/// clock it started after the barrier would miss part of the work.
pub fn on_threads(threads: usize, work: impl Fn(usize) + Sync) -> Duration {
    let barrier = Barrier::new(threads);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, work) = (&barrier, &work);
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    work(t);
                    (start, Instant::now())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a benchmark thread panicked")).collect()
    });
    let first = spans.iter().map(|s| s.0).min().expect("at least one thread");
    let last = spans.iter().map(|s| s.1).max().expect("at least one thread");
    last - first
}

fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, 8).expect("benchmark layouts are valid")
}

/// Small blocks (16–512 B) allocated and freed by one thread: a working set
/// of 256 slots, each op frees a random slot's block and allocates a new one.
/// `ops` alloc/free pairs per thread.
pub fn same_thread<A: GlobalAlloc>(a: &A, ops: usize) {
    const SLOTS: usize = 256;
    let mut rng = Rng::new(7);
    let mut slots: [(*mut u8, usize); SLOTS] = [(std::ptr::null_mut(), 0); SLOTS];
    for _ in 0..ops {
        let i = rng.below(SLOTS as u64) as usize;
        let (p, n) = slots[i];
        if !p.is_null() {
            // SAFETY: allocated below with this layout.
            unsafe { a.dealloc(p, layout(n)) };
        }
        let n = 16 + rng.below(497) as usize;
        // SAFETY: a valid non-zero layout.
        let p = unsafe { a.alloc(layout(n)) };
        assert!(!p.is_null());
        // SAFETY: the block holds `n` bytes.
        unsafe { p.write(n as u8) };
        slots[i] = (black_box(p), n);
    }
    for (p, n) in slots {
        if !p.is_null() {
            // SAFETY: live blocks with their layouts.
            unsafe { a.dealloc(p, layout(n)) };
        }
    }
}

/// One producer allocates small blocks (16–512 B) and hands them through a
/// bounded lock-free ring to one consumer, which frees them: every free is
/// a cross-thread free. `ops` blocks.
pub fn producer_consumer<A: GlobalAlloc + Sync>(a: &A, ops: usize) -> Duration {
    const CAP: usize = 1024;
    let ring: Vec<AtomicUsize> = (0..CAP).map(|_| AtomicUsize::new(0)).collect();
    let ring = &ring;
    on_threads(2, |t| {
        let mut rng = Rng::new(11);
        if t == 0 {
            for i in 0..ops {
                let n = 16 + rng.below(497) as usize;
                // SAFETY: a valid non-zero layout.
                let p = unsafe { a.alloc(layout(n)) };
                assert!(!p.is_null());
                // SAFETY: the block holds `n` bytes; the size travels with it.
                unsafe { p.write(n as u8) };
                let packed = (p as usize) << 16 | n;
                let slot = &ring[i % CAP];
                while slot.load(Ordering::Acquire) != 0 {
                    std::hint::spin_loop();
                }
                slot.store(packed, Ordering::Release);
            }
        } else {
            for i in 0..ops {
                let slot = &ring[i % CAP];
                let packed = loop {
                    let v = slot.load(Ordering::Acquire);
                    if v != 0 {
                        break v;
                    }
                    std::hint::spin_loop();
                };
                slot.store(0, Ordering::Release);
                let (p, n) = ((packed >> 16) as *mut u8, packed & 0xffff);
                // SAFETY: a live block the producer allocated with this layout.
                unsafe { a.dealloc(p, layout(n)) };
            }
        }
    })
}

/// A mixed workload per thread: a working set of 1024 objects; each op
/// replaces one. Sizes: 55% 16–256 B, 25% 256 B–4 KiB, 8% 4–64 KiB,
/// 2% 64 KiB–1 MiB; 10% of ops grow an object instead (`realloc` to twice
/// its size, at most 256 KiB, as a `Vec` grows). Each new object gets its
/// first and last byte written. `ops` ops per thread.
pub fn mixed<A: GlobalAlloc>(a: &A, ops: usize, seed: u64) {
    const SLOTS: usize = 1024;
    let mut rng = Rng::new(seed);
    let mut slots = vec![(std::ptr::null_mut::<u8>(), 0usize); SLOTS];
    for _ in 0..ops {
        let i = rng.below(SLOTS as u64) as usize;
        let (p, n) = slots[i];
        let r = rng.below(100);
        if r < 10 && !p.is_null() && n < 128 << 10 {
            // SAFETY: a live block with its layout; the new size is non-zero.
            let q = unsafe { a.realloc(p, layout(n), 2 * n) };
            assert!(!q.is_null());
            // SAFETY: the block now holds 2n bytes.
            unsafe { q.add(2 * n - 1).write(1) };
            slots[i] = (q, 2 * n);
            continue;
        }
        if !p.is_null() {
            // SAFETY: a live block with its layout.
            unsafe { a.dealloc(p, layout(n)) };
        }
        let n = match r {
            0..=64 => 16 + rng.below(241),
            65..=89 => 256 + rng.below(3841),
            90..=97 => 4096 + rng.below(61_441),
            _ => 65_536 + rng.below(983_041),
        } as usize;
        // SAFETY: a valid non-zero layout.
        let p = unsafe { a.alloc(layout(n)) };
        assert!(!p.is_null());
        // SAFETY: the block holds `n` bytes.
        unsafe {
            p.write(1);
            p.add(n - 1).write(2);
        }
        slots[i] = (black_box(p), n);
    }
    for (p, n) in slots {
        if !p.is_null() {
            // SAFETY: live blocks with their layouts.
            unsafe { a.dealloc(p, layout(n)) };
        }
    }
}

/// Allocates a large region, writes one byte per page (each page faults in
/// where the allocator's policy puts it), frees it; `reps` times.
pub fn large_prefault<A: GlobalAlloc>(a: &A, bytes: usize, reps: usize) -> Duration {
    let start = Instant::now();
    let l = Layout::from_size_align(bytes, 64).expect("a valid layout");
    for _ in 0..reps {
        // SAFETY: a valid non-zero layout; freed below with it.
        unsafe {
            let p = a.alloc(l);
            assert!(!p.is_null());
            touch_pages(p, bytes);
            a.dealloc(black_box(p), l);
        }
    }
    start.elapsed()
}

/// The peer of [`large_prefault`]: a `Vec` (the global allocator) touched
/// the same way.
pub fn vec_prefault(bytes: usize, reps: usize) -> Duration {
    let start = Instant::now();
    for _ in 0..reps {
        let mut v: Vec<u8> = Vec::with_capacity(bytes);
        // SAFETY: within the capacity; `u8` has no invalid values.
        unsafe { touch_pages(v.as_mut_ptr(), bytes) };
        black_box(&v);
    }
    start.elapsed()
}

/// # Safety
///
/// `p` points to `bytes` writable bytes.
unsafe fn touch_pages(p: *mut u8, bytes: usize) {
    let mut off = 0;
    while off < bytes {
        // SAFETY: `off < bytes`.
        unsafe { p.add(off).write_volatile(1) };
        off += 4096;
    }
}
