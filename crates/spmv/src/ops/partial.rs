//! The lock-free CSC scatter's partial sums: each thread adds its columns
//! into a private buffer that covers only the window of rows those columns
//! touch, and after a barrier each thread sums every buffer over its own
//! slice of `y`, in thread order (deterministic for a thread count).

use core::cell::UnsafeCell;
use core::fmt;
use core::ops::Range;

use crate::array::SharedArray;
use crate::error::Result;
use crate::masa::{ArrayPlacement, Masa, TeamAccess};
use crate::scalar::Scalar;

/// One thread's buffer of partial sums over the window of rows its
/// columns touch.
struct Partial<T> {
    window: Range<usize>,
    buf: UnsafeCell<SharedArray<T>>,
}

/// Every thread's partial-sum buffer, each bound to its thread's node.
///
/// Protocol (what makes the `Sync` below sound): in a job, thread `t`
/// first writes only buffer `t` ([`Partials::mine`]), then every thread
/// passes a barrier, then every thread reads every buffer
/// ([`Partials::add_into`]), then every thread passes a barrier before the
/// next job's writes.
pub(super) struct Partials<T> {
    parts: Vec<Partial<T>>,
}

// SAFETY: the buffers behind `UnsafeCell` are written only through the
// unsafe `mine`, whose contract (one writer per buffer, a barrier between
// the write and read phases) rules out data races; `T: Send + Sync`
// (`Scalar`), so the reads from other threads are sound.
unsafe impl<T: Scalar> Sync for Partials<T> {}

impl<T: Scalar> Partials<T> {
    /// Nothing (for operators that need no partial sums).
    pub(super) fn none() -> Partials<T> {
        Partials { parts: Vec::new() }
    }

    /// One zeroed buffer per window, bound (under MASA) to its thread's node.
    pub(super) fn new(masa: &Masa, placement: ArrayPlacement, windows: Vec<Range<usize>>) -> Result<Partials<T>> {
        let threads = windows.len();
        let parts = windows
            .into_iter()
            .enumerate()
            .map(|(t, w)| {
                // Bounds that give every element to thread t.
                let bounds: Vec<usize> = (0..=threads).map(|i| if i <= t { 0 } else { w.len() }).collect();
                let buf = masa.place_zeroed::<T>(w.len(), TeamAccess::Deterministic(&bounds), placement)?;
                Ok(Partial { window: w, buf: UnsafeCell::new(buf) })
            })
            .collect::<Result<_>>()?;
        Ok(Partials { parts })
    }

    /// The rows each buffer covers.
    pub(super) fn windows(&self) -> Vec<Range<usize>> {
        self.parts.iter().map(|p| p.window.clone()).collect()
    }

    /// Thread `t`'s buffer, zeroed, and the first row it covers.
    ///
    /// # Safety
    ///
    /// Only thread `t` calls it, in the write phase (see the type's
    /// protocol), and drops the slice before the barrier that ends it.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn mine(&self, t: usize) -> (&mut [T], usize) {
        let p = &self.parts[t];
        // SAFETY: thread t is the only one touching buffer t in this phase
        // (contract); the previous job's reads ended at a barrier.
        let buf: &mut [T] = unsafe { &mut *p.buf.get() };
        buf.fill(T::ZERO);
        (buf, p.window.start)
    }

    /// The read phase: `yt[rows] += Σ_s partial_s` over each buffer's
    /// window, in thread order; `yt` holds rows `rows`.
    ///
    /// # Safety
    ///
    /// No thread writes any buffer during the call (see the type's protocol).
    pub(super) unsafe fn add_into(&self, rows: Range<usize>, yt: &mut [T]) {
        for p in &self.parts {
            let (lo, hi) = (rows.start.max(p.window.start), rows.end.min(p.window.end));
            if lo >= hi {
                continue;
            }
            // SAFETY: no writer (contract), so a shared view is sound.
            let buf = unsafe { &*p.buf.get() };
            let src = &buf[lo - p.window.start..hi - p.window.start];
            for (d, &s) in yt[lo - rows.start..hi - rows.start].iter_mut().zip(src) {
                *d += s;
            }
        }
    }
}

impl<T> fmt::Debug for Partials<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.parts.iter().map(|p| &p.window)).finish()
    }
}

/// The rows touched by the entries of lines `lines` of a compressed matrix,
/// skipping entries for which `skip(line, index)` holds.
pub(super) fn window(ptr: &[u32], idx: &[u32], lines: Range<usize>, skip: impl Fn(usize, u32) -> bool) -> Range<usize> {
    let (mut lo, mut hi) = (usize::MAX, 0usize);
    for j in lines {
        for &i in &idx[ptr[j] as usize..ptr[j + 1] as usize] {
            if !skip(j, i) {
                lo = lo.min(i as usize);
                hi = hi.max(i as usize + 1);
            }
        }
    }
    if lo >= hi { 0..0 } else { lo..hi }
}
