//! A global allocator for tests of readers: the system allocator, recording
//! per thread the largest single request, so that a test can check that a
//! reader given a short file does not reserve what its header promises.
//!
//! ```
//! use skelaff_testkit::peak;
//!
//! #[global_allocator]
//! static PEAK: peak::Peak = peak::Peak;
//!
//! fn main() {
//!     let (v, bytes) = peak::largest(|| Vec::<u64>::with_capacity(1000));
//!     assert!(v.capacity() >= 1000 && bytes >= 8000, "{bytes}");
//! }
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The allocator (install it with `#[global_allocator]`).
#[derive(Debug)]
pub struct Peak;

thread_local! {
    // Const-initialised and without a destructor: using it allocates nothing.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are the caller's; `note` neither
// allocates nor panics.
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` and returns its value and the largest single allocation it
/// made on this thread.
pub fn largest<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    let v = f();
    (v, LARGEST.with(Cell::get))
}
