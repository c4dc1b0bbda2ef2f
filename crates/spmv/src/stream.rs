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

/// The three triad arrays, placed by their threads, ready for passes.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{Team, stream::TriadArrays};
///
/// let team = Team::with_threads(1)?;
/// let mut t = TriadArrays::new(&team, 1 << 16, false)?;
/// assert!(t.pass(&team) > 0.0);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Debug)]
pub struct TriadArrays {
    a: SharedArray<f64>,
    b: SharedArray<f64>,
    c: SharedArray<f64>,
    split: Split,
}

impl TriadArrays {
    /// Allocates three arrays of `len` doubles (with or without transparent
    /// huge pages), each thread of `team` writing its own third first.
    ///
    /// # Errors
    ///
    /// Allocation errors.
    pub fn new(team: &Team, len: usize, huge_pages: bool) -> Result<TriadArrays> {
        let huge = if huge_pages { HugePages::Transparent } else { HugePages::Off };
        let opts = RegionOptions::new(Policy::FirstTouch).huge_pages(huge);
        let mut t = TriadArrays {
            a: SharedArray::numa_zeroed(len, opts)?,
            b: SharedArray::numa_zeroed(len, opts)?,
            c: SharedArray::numa_zeroed(len, opts)?,
            split: Split::equal(len, team.threads()),
        };
        let split = &t.split;
        let (sa, sb, sc) = (SharedMut::new(&mut t.a), SharedMut::new(&mut t.b), SharedMut::new(&mut t.c));
        team.run(|member| {
            let r = split.range(member.index());
            // SAFETY: each thread writes only its own range of each array.
            unsafe {
                sa.range_mut(r.clone()).fill(0.0);
                sb.range_mut(r.clone()).fill(1.0);
                sc.range_mut(r).fill(2.0);
            }
        });
        Ok(t)
    }

    /// Elements per array.
    pub fn len(&self) -> usize {
        self.a.len()
    }

    /// Whether the arrays are empty.
    pub fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    /// One pass of `a = b + 3 c` on `team` (the team the arrays were made
    /// for); returns its seconds.
    ///
    /// # Panics
    ///
    /// If `team` has more threads than the arrays were split for.
    pub fn pass(&mut self, team: &Team) -> f64 {
        let split = &self.split;
        let (sa, sb, sc) = (SharedMut::new(&mut self.a), SharedMut::new(&mut self.b), SharedMut::new(&mut self.c));
        let t = Instant::now();
        team.run(|member| {
            let r = split.range(member.index());
            // SAFETY: each thread touches only its own range of each array.
            let (a, b, c) = unsafe { (sa.range_mut(r.clone()), sb.range(r.clone()), sc.range(r)) };
            for ((ai, &bi), &ci) in a.iter_mut().zip(b).zip(c) {
                *ai = bi + 3.0 * ci;
            }
        });
        let s = t.elapsed().as_secs_f64();
        std::hint::black_box(&self.a[..]);
        s
    }

    /// Bytes one pass moves by STREAM's count (24 per element).
    pub fn bytes(&self) -> f64 {
        24.0 * self.len() as f64
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
    let mut arrays = TriadArrays::new(team, len, huge_pages)?;
    arrays.pass(team);
    let best = (0..passes.max(1)).map(|_| arrays.pass(team)).fold(f64::INFINITY, f64::min);
    Ok(Triad { len, passes, best_seconds: best, bytes_per_second: arrays.bytes() / best })
}
