//! Streamcluster's hot loop (PARSEC's `pgain`): for a candidate facility
//! `x`, every point computes its weighted distance to `x`; points closer to
//! `x` than to their median would switch, the others add what closing their
//! median would cost; if opening `x` (and closing the medians that are no
//! longer worth it) saves cost, the points move.
//!
//! The points arrive in chunks (a stream): each chunk is written into the
//! coordinate array's master copy and propagated with `repl_sync`, as the
//! paper's modified Streamcluster does. Coordinates are read-only during
//! `pgain` and read both by the loop's index and at the candidate (so
//! replicated); weights, costs, assignments and switch flags are per point
//! and touched only by the loop's index (so partitioned).

use serde::Serialize;

use crate::array::Array;
use crate::error::{Error, Result};
use crate::hints::{AccessHints, AccessPattern, Choice, LargePages};
use crate::partition::{Partition, PartsMut};
use crate::workloads::runner::{Runner, run_collect};
use crate::workloads::{ArrayReport, ArraySpec};

/// The hints of the streamcluster arrays (the paper annotated them by hand).
pub const HINTS: [(&str, AccessHints); 5] = [
    ("coords", AccessHints::new().read_only().pattern(AccessPattern::Random)),
    ("weight", AccessHints::new().read_only().loop_indexed().pattern(AccessPattern::Sequential)),
    ("cost", AccessHints::new().loop_indexed().pattern(AccessPattern::Sequential)),
    ("assign", AccessHints::new().loop_indexed().pattern(AccessPattern::Sequential)),
    ("switch_membership", AccessHints::new().loop_indexed().pattern(AccessPattern::Sequential)),
];

/// Not a center (in the point-to-center index).
const NO_CENTER: u32 = u32::MAX;

/// The size of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Params {
    /// Points per chunk.
    pub points: usize,
    /// Coordinates per point.
    pub dim: usize,
    /// Seed of the points and candidates.
    pub seed: u64,
}

impl Params {
    /// Checks the sizes.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] unless `points` is 1 to 2^32 - 2 and `dim` at
    /// least 1, with the coordinates fitting the address space.
    pub fn check(&self) -> Result<()> {
        let ok = (1..u32::MAX as usize).contains(&self.points)
            && self.dim >= 1
            && self.points.checked_mul(self.dim).is_some_and(|c| c <= (isize::MAX as usize) / 8);
        if ok {
            Ok(())
        } else {
            Err(Error::BadInput {
                source_name: "--points/--dim".into(),
                line: None,
                reason: format!(
                    "{} points of {} coordinates: points must be 1 to 2^32 - 2, the dimension at least 1",
                    self.points, self.dim
                ),
            })
        }
    }
}

/// The squared distance of two points.
#[inline]
fn dist(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Phase 1 for points `rows` (`cost`, `assign`, `switch` are those rows):
/// returns the change in cost from switching, and adds into `lower` (one
/// slot per center) what keeping each center saves.
#[allow(clippy::too_many_arguments)]
#[inline]
fn gain_rows(
    rows: core::ops::Range<usize>,
    coords: &[f32],
    dim: usize,
    x: usize,
    weight: &[f32],
    cost: &[f32],
    assign: &[u32],
    switch: &mut [u8],
    center_index: &[u32],
    lower: &mut [f64],
) -> f64 {
    let px = &coords[x * dim..(x + 1) * dim];
    let mut delta = 0.0f64;
    for (k, i) in rows.enumerate() {
        let x_cost = dist(&coords[i * dim..(i + 1) * dim], px) * weight[i];
        let current = cost[k];
        if x_cost < current {
            switch[k] = 1;
            delta += (x_cost - current) as f64;
        } else {
            switch[k] = 0;
            let c = center_index[assign[k] as usize] as usize;
            lower[c] += (current - x_cost) as f64;
        }
    }
    delta
}

/// Phase 2 for points `rows`: moves to `x` every point that switches or
/// whose center closes.
#[allow(clippy::too_many_arguments)]
#[inline]
fn move_rows(
    rows: core::ops::Range<usize>,
    coords: &[f32],
    dim: usize,
    x: usize,
    weight: &[f32],
    cost: &mut [f32],
    assign: &mut [u32],
    switch: &[u8],
    center_index: &[u32],
    closing: &[bool],
) {
    let px = &coords[x * dim..(x + 1) * dim];
    for (k, i) in rows.enumerate() {
        let close = closing[center_index[assign[k] as usize] as usize];
        if switch[k] != 0 || close {
            cost[k] = dist(&coords[i * dim..(i + 1) * dim], px) * weight[i];
            assign[k] = x as u32;
        }
    }
}

/// Where the points live: ordinary vectors or arrays. The streamcluster
/// driver is written once over this.
pub trait PointStore {
    /// The coordinates (`points * dim`), as the calling thread should read
    /// them. Called on each worker thread.
    fn coords(&self) -> &[f32];
    /// The weights.
    fn weight(&self) -> &[f32];
    /// The coordinates' master copy, to write a new chunk into.
    fn coords_mut(&mut self) -> &mut [f32];
    /// Makes a new chunk visible to every reader (`repl_sync`).
    fn publish(&mut self);
    /// The read-only arrays, and each thread's range of the written ones.
    fn split(&mut self, p: &Partition) -> Split<'_>;
    /// All costs.
    fn cost(&self) -> &[f32];
    /// All assignments.
    fn assign(&self) -> &[u32];
}

/// A store split for one parallel phase.
#[allow(missing_debug_implementations)]
pub struct Split<'a> {
    /// The read-only part.
    pub read: &'a (dyn ReadPoints + 'a),
    /// Per-thread costs.
    pub cost: PartsMut<'a, f32>,
    /// Per-thread assignments.
    pub assign: PartsMut<'a, u32>,
    /// Per-thread switch flags.
    pub switch: PartsMut<'a, u8>,
}

/// The read-only part of a store, shared by the threads of a phase.
pub trait ReadPoints: Sync {
    /// As [`PointStore::coords`].
    fn coords(&self) -> &[f32];
    /// As [`PointStore::weight`].
    fn weight(&self) -> &[f32];
}

/// Points in ordinary `Vec`s.
#[derive(Debug)]
pub struct VecPoints {
    read: VecRead,
    cost: Vec<f32>,
    assign: Vec<u32>,
    switch: Vec<u8>,
}

#[derive(Debug)]
struct VecRead {
    coords: Vec<f32>,
    weight: Vec<f32>,
}

impl ReadPoints for VecRead {
    fn coords(&self) -> &[f32] {
        &self.coords
    }
    fn weight(&self) -> &[f32] {
        &self.weight
    }
}

impl VecPoints {
    /// Zeroed vectors for `params` (weights 1).
    pub fn new(params: &Params) -> Result<VecPoints> {
        params.check()?;
        let n = params.points;
        Ok(VecPoints {
            read: VecRead { coords: vec![0.0; n * params.dim], weight: vec![1.0; n] },
            cost: vec![0.0; n],
            assign: vec![0; n],
            switch: vec![0; n],
        })
    }
}

impl PointStore for VecPoints {
    fn coords(&self) -> &[f32] {
        &self.read.coords
    }
    fn weight(&self) -> &[f32] {
        &self.read.weight
    }
    fn coords_mut(&mut self) -> &mut [f32] {
        &mut self.read.coords
    }
    fn publish(&mut self) {}
    fn split(&mut self, p: &Partition) -> Split<'_> {
        Split {
            read: &self.read,
            cost: PartsMut::new(&mut self.cost, p).expect("cost has one slot per point"),
            assign: PartsMut::new(&mut self.assign, p).expect("assign has one slot per point"),
            switch: PartsMut::new(&mut self.switch, p).expect("switch has one slot per point"),
        }
    }
    fn cost(&self) -> &[f32] {
        &self.cost
    }
    fn assign(&self) -> &[u32] {
        &self.assign
    }
}

/// Points in [`Array`]s chosen from [`HINTS`] (or all of one implementation).
#[derive(Debug)]
pub struct ArrayPoints {
    read: ArrayRead,
    cost: Array<f32>,
    assign: Array<u32>,
    switch: Array<u8>,
}

#[derive(Debug)]
struct ArrayRead {
    coords: Array<f32>,
    weight: Array<f32>,
}

impl ReadPoints for ArrayRead {
    fn coords(&self) -> &[f32] {
        self.coords.as_slice()
    }
    fn weight(&self) -> &[f32] {
        self.weight.as_slice()
    }
}

impl ArrayPoints {
    /// Allocates the arrays for `params` (weights 1); `partition` is the
    /// loop's schedule over the points.
    ///
    /// # Errors
    ///
    /// As [`ArrayBuilder::build`](crate::ArrayBuilder::build).
    pub fn new(params: &Params, partition: &Partition, choice: Choice, large_pages: LargePages) -> Result<ArrayPoints> {
        params.check()?;
        let n = params.points;
        if partition.len() != n {
            return Err(Error::PartitionLength { partition_len: partition.len(), array_len: n });
        }
        let spec = |i: usize| ArraySpec { hints: HINTS[i].1, choice, large_pages, schedule: partition };
        let coords = spec(0).builder(n * params.dim)?.build()?;
        let mut weight = spec(1).builder(n)?.build()?;
        weight.fill(1.0);
        Ok(ArrayPoints {
            read: ArrayRead { coords, weight },
            cost: spec(2).builder(n)?.build()?,
            assign: spec(3).builder(n)?.build()?,
            switch: spec(4).builder(n)?.build()?,
        })
    }

    /// What each array got.
    pub fn arrays(&self) -> Vec<ArrayReport> {
        vec![
            ArrayReport::of("coords", &self.read.coords),
            ArrayReport::of("weight", &self.read.weight),
            ArrayReport::of("cost", &self.cost),
            ArrayReport::of("assign", &self.assign),
            ArrayReport::of("switch_membership", &self.switch),
        ]
    }
}

impl PointStore for ArrayPoints {
    fn coords(&self) -> &[f32] {
        self.read.coords.as_slice()
    }
    fn weight(&self) -> &[f32] {
        self.read.weight.as_slice()
    }
    fn coords_mut(&mut self) -> &mut [f32] {
        self.read.coords.as_mut_slice()
    }
    fn publish(&mut self) {
        self.read.coords.repl_sync();
    }
    fn split(&mut self, p: &Partition) -> Split<'_> {
        Split {
            read: &self.read,
            cost: self.cost.parts_mut(p).expect("cost has one slot per point"),
            assign: self.assign.parts_mut(p).expect("assign has one slot per point"),
            switch: self.switch.parts_mut(p).expect("switch has one slot per point"),
        }
    }
    fn cost(&self) -> &[f32] {
        self.cost.as_slice()
    }
    fn assign(&self) -> &[u32] {
        self.assign.as_slice()
    }
}

/// The clustering state over a [`PointStore`].
#[derive(Debug)]
pub struct Streamcluster<S> {
    store: S,
    params: Params,
    partition: Partition,
    /// The centers (point numbers).
    centers: Vec<u32>,
    /// Point number -> index in `centers`, or `NO_CENTER`.
    center_index: Vec<u32>,
    /// The cost of opening a facility.
    z: f64,
}

impl<S: PointStore> Streamcluster<S> {
    /// The driver over `store`, with `partition` (over the points) as the
    /// loops' schedule.
    ///
    /// # Errors
    ///
    /// [`Error::PartitionLength`] unless the partition covers the points.
    pub fn new(store: S, params: Params, partition: &Partition) -> Result<Self> {
        params.check()?;
        if partition.len() != params.points {
            return Err(Error::PartitionLength { partition_len: partition.len(), array_len: params.points });
        }
        Ok(Streamcluster {
            store,
            params,
            partition: partition.clone(),
            centers: Vec::new(),
            center_index: vec![NO_CENTER; params.points],
            z: 0.0,
        })
    }

    /// Writes chunk `k` of the stream into the coordinates' master copy and
    /// publishes it (clustered points: 16 blobs in the unit cube, seeded by
    /// `seed` and `k`).
    pub fn load_chunk(&mut self, k: u64) {
        let dim = self.params.dim;
        let mut rng = fastrand::Rng::with_seed(self.params.seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let blobs: Vec<f32> = (0..16 * dim).map(|_| rng.f32()).collect();
        for p in self.store.coords_mut().chunks_exact_mut(dim) {
            let b = rng.usize(0..16);
            for (d, c) in p.iter_mut().enumerate() {
                *c = blobs[b * dim + d] + (rng.f32() - 0.5) * 0.1;
            }
        }
        self.store.publish();
    }

    /// Opens point 0 as the only center, assigns every point to it, and
    /// sets the facility cost to a sixteenth of the total cost then.
    pub fn start_chunk(&mut self, runner: &dyn Runner) {
        self.center_index.iter_mut().for_each(|c| *c = NO_CENTER);
        self.centers = vec![0];
        self.center_index[0] = 0;
        let dim = self.params.dim;
        let p = &self.partition;
        let split = self.store.split(p);
        let totals = run_collect(runner, |t| {
            let (Some(cost), Some(assign)) = (split.cost.take(t), split.assign.take(t)) else { return 0.0 };
            let (coords, weight) = (split.read.coords(), split.read.weight());
            let p0 = &coords[..dim];
            let mut total = 0.0f64;
            for (k, i) in p.thread_range(t).enumerate() {
                cost[k] = dist(&coords[i * dim..(i + 1) * dim], p0) * weight[i];
                assign[k] = 0;
                total += cost[k] as f64;
            }
            total
        });
        self.z = totals.iter().sum::<f64>() / 16.0;
    }

    /// One `pgain` for candidate `x`: returns the cost saved (0 when `x`
    /// is not opened).
    pub fn pgain(&mut self, runner: &dyn Runner, x: usize) -> f64 {
        let x = x % self.params.points;
        let (dim, k) = (self.params.dim, self.centers.len());
        let p = &self.partition;
        let center_index = &self.center_index;
        let split = self.store.split(p);
        // Phase 1: each thread's change and its per-center savings.
        let partial = run_collect(runner, |t| {
            let mut lower = vec![0.0f64; k];
            let (Some(cost), Some(assign), Some(switch)) =
                (split.cost.take(t), split.assign.take(t), split.switch.take(t))
            else {
                return (0.0, lower);
            };
            let read = split.read;
            let d = gain_rows(
                p.thread_range(t),
                read.coords(),
                dim,
                x,
                read.weight(),
                cost,
                assign,
                switch,
                center_index,
                &mut lower,
            );
            (d, lower)
        });
        drop(split);
        // Serial: which centers close, and whether opening x pays.
        let mut gl_lower = vec![self.z; k];
        let mut open_cost = self.z;
        for (d, lower) in &partial {
            open_cost += d;
            gl_lower.iter_mut().zip(lower).for_each(|(g, l)| *g += l);
        }
        let closing: Vec<bool> = gl_lower.iter().map(|&l| l > 0.0).collect();
        open_cost -= gl_lower.iter().filter(|&&l| l > 0.0).sum::<f64>();
        if open_cost >= 0.0 {
            return 0.0;
        }
        // Phase 2: move the points.
        let split = self.store.split(p);
        runner.run(&|t| {
            let (Some(cost), Some(assign), Some(switch)) =
                (split.cost.take(t), split.assign.take(t), split.switch.take(t))
            else {
                return;
            };
            let read = split.read;
            move_rows(
                p.thread_range(t),
                read.coords(),
                dim,
                x,
                read.weight(),
                cost,
                assign,
                switch,
                center_index,
                &closing,
            );
        });
        drop(split);
        let mut kept: Vec<u32> =
            self.centers.iter().zip(&closing).filter(|(_, close)| !**close).map(|(c, _)| *c).collect();
        if !kept.contains(&(x as u32)) {
            kept.push(x as u32);
        }
        for &c in &self.centers {
            self.center_index[c as usize] = NO_CENTER;
        }
        for (i, &c) in kept.iter().enumerate() {
            self.center_index[c as usize] = i as u32;
        }
        self.centers = kept;
        -open_cost
    }

    /// The candidates of chunk `k`: `count` seeded point numbers.
    pub fn candidates(&self, k: u64, count: usize) -> Vec<usize> {
        let mut rng = fastrand::Rng::with_seed(self.params.seed.rotate_left(17) ^ k);
        (0..count).map(|_| rng.usize(0..self.params.points)).collect()
    }

    /// The open centers.
    pub fn centers(&self) -> &[u32] {
        &self.centers
    }

    /// The store (for its costs and assignments).
    pub fn store(&self) -> &S {
        &self.store
    }
}

/// Whether two runs reached the same clustering.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ClusterAgreement {
    /// Points assigned to different centers.
    pub assign_differences: usize,
    /// The largest relative difference of a point's cost.
    pub max_cost_rel_diff: f64,
    /// Whether the center lists are equal.
    pub same_centers: bool,
}

impl ClusterAgreement {
    /// Compares two drivers' state.
    pub fn of<A: PointStore, B: PointStore>(a: &Streamcluster<A>, b: &Streamcluster<B>) -> ClusterAgreement {
        let (ca, cb) = (a.store.cost(), b.store.cost());
        let assign_differences = a.store.assign().iter().zip(b.store.assign()).filter(|(x, y)| x != y).count()
            + a.store.assign().len().abs_diff(b.store.assign().len());
        let max_cost_rel_diff = ca
            .iter()
            .zip(cb)
            .map(|(&x, &y)| ((x - y).abs() / x.abs().max(y.abs()).max(1e-30)) as f64)
            .fold(0.0, f64::max);
        ClusterAgreement { assign_differences, max_cost_rel_diff, same_centers: a.centers == b.centers }
    }

    /// Whether they agree: same centers, same assignments, costs within
    /// 1e-6 (both run the same kernels in the same order per point).
    pub fn agrees(&self) -> bool {
        self.same_centers && self.assign_differences == 0 && self.max_cost_rel_diff <= 1e-6
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::PinnedThreads;

    #[test]
    fn arrays_and_vecs_cluster_alike_under_every_implementation() {
        let params = Params { points: 6000, dim: 8, seed: 3 };
        let runner = PinnedThreads::new(2).unwrap();
        let p = Partition::new(params.points, &runner.thread_nodes()).unwrap();
        let mut v = Streamcluster::new(VecPoints::new(&params).unwrap(), params, &p).unwrap();
        let run = |s: &mut dyn FnMut(u64)| {
            for k in 0..2 {
                s(k);
            }
        };
        let mut saved = 0.0;
        run(&mut |k| {
            v.load_chunk(k);
            v.start_chunk(&runner);
            for x in v.candidates(k, 40) {
                saved += v.pgain(&runner, x);
            }
        });
        assert!(saved > 0.0 && v.centers().len() > 1, "pgain opened centers: {:?}", v.centers());
        for choice in [Choice::Auto, Choice::Single, Choice::Distributed, Choice::Replicated, Choice::Partitioned] {
            let store = ArrayPoints::new(&params, &p, choice, LargePages::Auto).unwrap();
            if choice == Choice::Auto {
                let got: Vec<_> = store.arrays().iter().map(|r| r.selection.implementation).collect();
                use crate::Implementation::*;
                assert_eq!(got, [Replicated, Partitioned, Partitioned, Partitioned, Partitioned]);
            }
            let mut a = Streamcluster::new(store, params, &p).unwrap();
            run(&mut |k| {
                a.load_chunk(k);
                a.start_chunk(&runner);
                for x in a.candidates(k, 40) {
                    a.pgain(&runner, x);
                }
            });
            let agree = ClusterAgreement::of(&a, &v);
            assert!(agree.agrees(), "{choice}: {agree:?}");
        }
    }

    #[test]
    fn bad_sizes_are_refused() {
        for (points, dim) in [(0, 4), (10, 0), (usize::MAX, 4)] {
            let e = VecPoints::new(&Params { points, dim, seed: 0 }).unwrap_err().to_string();
            assert!(e.contains("points must be"), "{e}");
        }
        let params = Params { points: 10, dim: 2, seed: 0 };
        let p = Partition::new(9, &[0]).unwrap();
        assert!(Streamcluster::new(VecPoints::new(&params).unwrap(), params, &p).is_err());
    }
}
