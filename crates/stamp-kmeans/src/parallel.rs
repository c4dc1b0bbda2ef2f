//! The parallel phase of one k-means iteration on the skeleton: STAMP's
//! `work()`.

use std::sync::atomic::{AtomicU32, Ordering};

use skelaff_stm::{TPtr, TVar, TxError, TxOps};
use skelaff_worklist::{Affinity, ProcessCtx, Skeleton, WorkerInfo};

use super::input::Points;
use super::{Assign, Nearest};
use skelaff_stamp_core::app::{AppError, CommonArgs};
use skelaff_stamp_core::phases::Runs;

/// One cluster's accumulated points: how many, and the sum of their
/// features. Immutable once published: a transaction that adds to it
/// publishes a new one (and frees the old one when it commits).
#[derive(Debug, Clone)]
struct Sum {
    count: u64,
    features: Vec<f64>,
}

/// The new centers' sums, shared by every worker (STAMP's `new_centers`
/// and `new_centers_len`), and the number of points that changed cluster
/// (`global_delta`).
///
/// Each cluster's sums sit behind one transactional pointer rather than in
/// `d + 1` transactional words: a unit adds to up to k clusters at once,
/// and committing k pointers holds k stripe locks for a moment, where
/// `k * (d + 1)` words (1 320 for 40 clusters of 32 features) held their
/// locks long enough for the other worker's reads of them to give up and
/// abort, again and again: with words, `-m40 -n40 -t0.00001 -i
/// random-n65536-d32-c16 -p2` had 13 343 aborts (17 804 of them reads
/// that met a lock) for its 4 864 units; with pointers, 40 to 90.
#[derive(Debug)]
pub(crate) struct Accumulators {
    sums: Vec<TVar<TPtr<Sum>>>,
    changed: TVar<u64>,
}

impl Accumulators {
    fn new(k: usize, d: usize) -> Self {
        let zero = || TVar::new(TPtr::from_box(Box::new(Sum { count: 0, features: vec![0.0; d] })));
        Accumulators { sums: (0..k).map(|_| zero()).collect(), changed: TVar::new(0) }
    }

    /// Copies the sums out and starts again from zero (exclusive access:
    /// no run is going on).
    fn take(&mut self, sums: &mut [f64], counts: &mut [u64]) -> u64 {
        let d = if counts.is_empty() { 0 } else { sums.len() / counts.len() };
        for (c, var) in self.sums.iter_mut().enumerate() {
            // SAFETY: `&mut self`: no transaction can reach the pointer;
            // it came from `from_box` or a committed `alloc`, is replaced
            // right below and so is reclaimed exactly once.
            let mut sum = unsafe { var.get_mut().into_box() };
            counts[c] = sum.count;
            sums[c * d..(c + 1) * d].copy_from_slice(&sum.features);
            sum.count = 0;
            sum.features.fill(0.0);
            var.set_mut(TPtr::from_box(sum));
        }
        let changed = self.changed.get_mut();
        self.changed.set_mut(0);
        changed
    }
}

impl Drop for Accumulators {
    fn drop(&mut self) {
        for var in &mut self.sums {
            // SAFETY: `&mut self`: no transaction can reach the pointer,
            // which came from `from_box` or a committed `alloc`; dropped once.
            drop(unsafe { var.get_mut().into_box() });
        }
    }
}

/// One iteration's assignment step. A unit is the first point of a chunk
/// of `chunk` points.
struct Step<'a> {
    points: &'a Points,
    centers: &'a Nearest,
    k: usize,
    chunk: usize,
    /// Memberships before this iteration (read only during the run).
    old: &'a [u32],
    /// Memberships found in this iteration. Point `i` is written only by
    /// the unit that holds it, always with the same value (its nearest
    /// center, a function of the point and of `centers`, which do not
    /// change during the run), so a unit that runs again after an abort,
    /// or a speculative run of it, writes nothing different.
    next: &'a [AtomicU32],
}

/// A worker's scratch: the contribution of the unit it last computed.
/// Recomputing it after an abort would give the same values (it depends
/// only on the points and on the run's fixed centers), so an attempt that
/// follows an abort of the same unit reuses it and only redoes the
/// transactional additions.
struct Scratch {
    unit: Option<u32>,
    sums: Vec<f64>,
    counts: Vec<u64>,
    changed: u64,
}

impl Step<'_> {
    fn compute(&self, start: u32, s: &mut Scratch) {
        let d = self.points.dims;
        s.sums.fill(0.0);
        s.counts.fill(0);
        s.changed = 0;
        let start = start as usize;
        for i in start..(start + self.chunk).min(self.points.len()) {
            let p = self.points.point(i);
            let c = self.centers.of(p);
            if self.old[i] != c {
                s.changed += 1;
            }
            self.next[i].store(c, Ordering::Relaxed);
            let c = c as usize;
            s.counts[c] += 1;
            for (acc, &x) in s.sums[c * d..(c + 1) * d].iter_mut().zip(p) {
                *acc += f64::from(x);
            }
        }
        s.unit = Some(start as u32);
    }
}

impl Skeleton for Step<'_> {
    type Unit = u32;
    type Shared = Accumulators;
    type PerWorker = Scratch;

    fn init_worker(&self, _: &Accumulators, _: &WorkerInfo) -> Scratch {
        Scratch { unit: None, sums: vec![0.0; self.k * self.points.dims], counts: vec![0; self.k], changed: 0 }
    }

    /// The chunk's points: where most of a unit's reads go (outside the
    /// transaction).
    fn affinity(&self, &start: &u32, _: &Accumulators) -> Affinity {
        if (start as usize) < self.points.len() {
            Affinity::of(self.points.point(start as usize))
        } else {
            Affinity::Anywhere
        }
    }

    /// Finds the nearest center of each point of the chunk and adds the
    /// chunk's points into the shared sums. STAMP runs one transaction per
    /// point (`d + 1` shared words each); here the chunk's contribution is
    /// summed privately first and then added in one transaction, so a unit
    /// touches each cluster's `d + 1` words once, at its very end.
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &start: &u32,
        s: &mut Scratch,
        acc: &'t Accumulators,
        _: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        if s.unit != Some(start) {
            self.compute(start, s);
        }
        let d = self.points.dims;
        for (c, &n) in s.counts.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let var = &acc.sums[c];
            let p = tx.read(var)?;
            // SAFETY: `p` was read in this transaction; a sum is freed only
            // after the transaction that replaced it commits and every
            // transaction that could have read it has ended.
            let old = unsafe { p.get() };
            let features = old.features.iter().zip(&s.sums[c * d..(c + 1) * d]).map(|(a, b)| a + b).collect();
            let fresh = tx.alloc(Sum { count: old.count + n, features })?;
            tx.write(var, fresh)?;
            // SAFETY: `p` came from `from_box` or a committed `alloc`, this
            // transaction unlinks it (the only pointer to it is replaced),
            // and a committed replacement is freed once.
            unsafe { tx.free(p)? };
        }
        let changed = s.changed;
        tx.update(&acc.changed, |x| x + changed)?;
        Ok(())
    }
}

/// The assignment step run on the skeleton, one run per iteration (the
/// paper's port: the worklist is refilled by one thread between the
/// parallel phases).
pub(crate) struct Parallel<'a> {
    points: &'a Points,
    common: &'a CommonArgs,
    threads: usize,
    chunk: usize,
    old: Vec<u32>,
    next: Vec<AtomicU32>,
    acc: Option<(usize, Accumulators)>,
    pub(crate) runs: Runs,
}

impl<'a> Parallel<'a> {
    pub(crate) fn new(points: &'a Points, common: &'a CommonArgs, threads: usize, chunk: usize) -> Self {
        let n = points.len();
        Parallel {
            points,
            common,
            threads,
            chunk,
            old: vec![u32::MAX; n],
            next: (0..n).map(|_| AtomicU32::new(u32::MAX)).collect(),
            acc: None,
            runs: Runs::default(),
        }
    }
}

impl Assign for Parallel<'_> {
    fn reset(&mut self) {
        self.old.fill(u32::MAX);
    }

    fn assign(&mut self, centers: &[f32], k: usize, sums: &mut [f64], counts: &mut [u64]) -> Result<u64, AppError> {
        let d = self.points.dims;
        if self.acc.as_ref().is_some_and(|(kk, _)| *kk != k) {
            self.acc = None;
        }
        let (_, acc) = self.acc.get_or_insert_with(|| (k, Accumulators::new(k, d)));
        let nearest = Nearest::new(centers, k);
        let step =
            Step { points: self.points, centers: &nearest, k, chunk: self.chunk, old: &self.old, next: &self.next };
        let mut wl = self.runs.builder(self.common, self.threads).build(&step, acc)?;
        wl.add_work_units((0..self.points.len()).step_by(self.chunk).map(|i| i as u32));
        self.runs.run(self.common, &mut wl)?;
        drop(wl);
        let changed = acc.take(sums, counts);
        for (o, n) in self.old.iter_mut().zip(&self.next) {
            *o = n.load(Ordering::Relaxed);
        }
        Ok(changed)
    }

    fn membership(&self) -> Vec<u32> {
        self.old.clone()
    }
}
