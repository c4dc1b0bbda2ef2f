//! The STREAM triad, `a[i] = b[i] + q c[i]`, on a [`Team`]: the memory
//! bandwidth an SpMV is measured against.
//!
//! Each thread initialises and then updates its own contiguous third of
//! each array (so first touch puts it on the thread's node, as STREAM's
//! parallel initialisation does). Bandwidth counts 3 × 8 bytes per element
//! per pass, STREAM's convention (the write-allocate read of `a` is not
//! counted). The best of the timed passes is reported, as STREAM does.

use std::time::Instant;

use skelaff_numa_alloc::{HugePages, Policy, RegionOptions};

use crate::array::SharedArray;
use crate::error::Result;
use crate::masa::Split;
use crate::team::{SharedMut, Team};

/// A triad measurement.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Triad {
    /// Elements per array.
    pub len: usize,
    /// Timed passes.
    pub passes: usize,
    /// Best pass, in seconds.
    pub best_seconds: f64,
    /// Bytes per second of the best pass (3 × 8 × len / best).
    pub bytes_per_second: f64,
}

impl Triad {
    /// GB/s (10^9 bytes per second).
    pub fn gbs(&self) -> f64 {
        self.bytes_per_second / 1e9
    }
}

/// Runs the triad on `team` with arrays of `len` doubles, `passes` timed
/// passes after one untimed, with or without transparent huge pages.
///
/// # Errors
///
/// Allocation errors.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{Team, stream};
///
/// let team = Team::with_threads(1)?;
/// let t = stream::triad(&team, 1 << 16, 2, false)?;
/// assert!(t.gbs() > 0.0);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub fn triad(team: &Team, len: usize, passes: usize, huge_pages: bool) -> Result<Triad> {
    let huge = if huge_pages { HugePages::Transparent } else { HugePages::Off };
    let opts = RegionOptions::new(Policy::FirstTouch).huge_pages(huge);
    let mut a: SharedArray<f64> = SharedArray::numa_zeroed(len, opts)?;
    let mut b: SharedArray<f64> = SharedArray::numa_zeroed(len, opts)?;
    let mut c: SharedArray<f64> = SharedArray::numa_zeroed(len, opts)?;
    let split = Split::equal(len, team.threads());
    let (sa, sb, sc) = (SharedMut::new(&mut a), SharedMut::new(&mut b), SharedMut::new(&mut c));
    let q = 3.0;
    team.run(|ctx| {
        let r = split.range(ctx.index());
        // SAFETY: each thread writes only its own range of each array.
        unsafe {
            sa.range_mut(r.clone()).fill(0.0);
            sb.range_mut(r.clone()).fill(1.0);
            sc.range_mut(r).fill(2.0);
        }
    });
    let mut best = f64::INFINITY;
    for pass in 0..=passes {
        let t = Instant::now();
        team.run(|ctx| {
            let r = split.range(ctx.index());
            // SAFETY: each thread touches only its own range of each array.
            let (a, b, c) = unsafe { (sa.range_mut(r.clone()), sb.range(r.clone()), sc.range(r)) };
            for ((ai, &bi), &ci) in a.iter_mut().zip(b).zip(c) {
                *ai = bi + q * ci;
            }
        });
        let s = t.elapsed().as_secs_f64();
        if pass > 0 {
            best = best.min(s);
        }
    }
    // Keep the stores observable.
    std::hint::black_box(&a[len / 2..]);
    Ok(Triad { len, passes, best_seconds: best, bytes_per_second: 24.0 * len as f64 / best })
}
