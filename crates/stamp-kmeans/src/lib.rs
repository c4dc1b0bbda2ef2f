//! STAMP's **kmeans**: partition points into k clusters (from NU-MineBench).
//!
//! For every k from `-n` (min clusters) to `-m` (max clusters): pick k
//! points as the first centers (STAMP's Mersenne Twister seeded with 7,
//! drawn as STAMP draws them), then
//! iterate: assign every point to its nearest center (squared Euclidean
//! distance), make every center the mean of its points, until the share of
//! points that changed cluster is at most `-t` (or 500 iterations more
//! have run). The result is the clustering of the last k. The features
//! are z-score normalised first unless `-z` is given.
//!
//! The input is STAMP's: `-i path/random-n65536-d32-c16.txt` reads its
//! text format (`-b`: its binary format), plain or gzip-compressed
//! ([`Points::read_text`], [`Points::read_binary`]; `-i NAME` also finds
//! `NAME.gz`). When no such file exists, a name of the shape
//! `random-n65536-d32-c16` generates 65 536 points of 32 features around 16
//! random centers in-process (see [`Points::generate`]: not STAMP's
//! generator, whose points are spread differently). STAMP's low-contention runs
//! use many clusters (`-m40 -n40`), its high-contention runs few (`-m15
//! -n15`): fewer clusters, more transactions on each cluster's sums.
//!
//! # On the skeleton
//!
//! As in the paper's port, each iteration's assignment step is one run of
//! the worklist, refilled by one thread between runs; the work-unit is a
//! chunk of `--chunk` points (STAMP's `CHUNK` of its task queue). A unit
//! finds each point's nearest center outside any shared state, then adds
//! its points' features into the shared sums and counts in its
//! transaction (STAMP's `work()` does the same additions, one transaction
//! per point). The centers are recomputed by one thread after the run.
//!
//! # Self-check
//!
//! The run is repeated by the sequential version (not timed), and the two
//! must agree: the same memberships, the same number of iterations for
//! every k, and centers equal within a tolerance. The tolerance is there
//! because the shared sums are added in another order (per chunk, in
//! commit order) than the sequential ones (point by point): the sums are
//! kept in `f64`, whose rounding differs by some 1e-16 relative between
//! orders, and the centers are then rounded to `f32` as STAMP keeps them,
//! so the two centers are equal or a few `f32` units in the last place
//! apart: the check allows 4 ulps (`4 * f32::EPSILON` relative) plus 1e-9
//! absolute. Memberships must match exactly (a point would have to lie
//! within that rounding of the border between two clusters to differ).
//! Besides, in either mode, every final center with members must be the
//! mean of its members, recomputed.

mod check;
mod file;
mod input;
mod parallel;

use std::time::{Duration, Instant};

pub use check::{BadClustering, close};
pub use file::shipped_input;
pub use input::{MAX_DIMS, MAX_POINTS, Points, SPREAD, Shape};

use parallel::Parallel;
use skelaff_stamp_core::app::{App, AppError, CommonArgs, Outcome};
use skelaff_stamp_core::check::CheckFailed;
use skelaff_stamp_core::figures::KmeansFigures;

/// The kmeans application (see the [module docs](self)).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::{App, CommonArgs};
/// use skelaff_stamp_kmeans::{Kmeans, KmeansArgs};
///
/// let args = KmeansArgs { input: "random-n512-d8-c4".into(), max_clusters: 6, min_clusters: 5, threads: 2, ..KmeansArgs::default() };
/// let outcome = Kmeans::run(&args, &CommonArgs::default())?;
/// assert!(outcome.passed(), "{:?}", outcome.check);
/// # Ok::<(), skelaff_stamp_core::AppError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Kmeans;

/// kmeans' STAMP flags.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct KmeansArgs {
    /// Maximum number of clusters.
    #[arg(short = 'm', long = "max-clusters", default_value_t = 40)]
    pub max_clusters: usize,
    /// Minimum number of clusters.
    #[arg(short = 'n', long = "min-clusters", default_value_t = 40)]
    pub min_clusters: usize,
    /// Convergence threshold: stop when at most this share of the points changed cluster.
    #[arg(short = 't', long = "threshold", default_value_t = 0.05)]
    pub threshold: f64,
    /// The input: a STAMP points file (text; binary with -b; gzip or not), or, when no such
    /// file exists, a shape to generate: `random-n<points>-d<dims>-c<centers>`.
    #[arg(short = 'i', long = "input", default_value = "random-n2048-d16-c16")]
    pub input: String,
    /// The input file is in STAMP's binary format.
    #[arg(short = 'b', long = "binary")]
    pub binary: bool,
    /// Do not z-score transform the features.
    #[arg(short = 'z', long = "no-zscore")]
    pub no_zscore: bool,
    /// Number of threads.
    #[arg(short = 'p', long = "threads", default_value_t = 1)]
    pub threads: usize,
    /// Points per work-unit (0: the number of points / 16, within 16..=1024).
    #[arg(long, default_value_t = 0)]
    pub chunk: usize,
    /// Seed of the generated input.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl Default for KmeansArgs {
    fn default() -> Self {
        KmeansArgs {
            max_clusters: 40,
            min_clusters: 40,
            threshold: 0.05,
            input: "random-n2048-d16-c16".into(),
            binary: false,
            no_zscore: false,
            threads: 1,
            chunk: 0,
            seed: 0,
        }
    }
}

/// The most clusters accepted.
pub const MAX_CLUSTERS: usize = 1 << 16;
/// STAMP's cap on the iterations after the first, per k.
pub const MAX_LOOPS: u32 = 500;

impl KmeansArgs {
    /// Checks the flags that do not depend on the input.
    fn validate(&self) -> Result<(), AppError> {
        let bad = |m: String| Err(AppError::Invalid(m));
        if self.threads == 0 {
            return bad("-p (threads) must be at least 1".into());
        }
        if self.min_clusters == 0 || self.min_clusters > self.max_clusters {
            return bad(format!(
                "need 1 <= -n (min clusters) <= -m (max clusters) (got -n{} -m{})",
                self.min_clusters, self.max_clusters
            ));
        }
        if !self.threshold.is_finite() || self.threshold < 0.0 {
            return bad(format!("-t (threshold) must be a number >= 0 (got {})", self.threshold));
        }
        if self.chunk > u32::MAX as usize {
            return bad(format!("--chunk must be at most {} (got {})", u32::MAX, self.chunk));
        }
        Ok(())
    }

    /// The raw points: read from the file `-i` (or `-i` with `.gz`
    /// appended) in STAMP's text format, or its binary one with `-b`;
    /// when no such file exists, generated in the shape the name gives.
    fn load(&self) -> Result<Points, AppError> {
        let path = std::path::Path::new(&self.input);
        match file::locate(path) {
            Some(found) if self.binary => Points::read_binary(&found),
            Some(found) => Points::read_text(&found),
            None => match Shape::parse(&self.input) {
                Ok(shape) => Ok(Points::generate(shape, self.seed)),
                Err(e) => Err(AppError::Invalid(format!(
                    "-i `{}`: no such file (nor with .gz appended); as a shape to generate: {e}",
                    self.input
                ))),
            },
        }
    }
    fn chunk(&self, points: usize) -> usize {
        if self.chunk > 0 { self.chunk } else { (points / 16).clamp(16, 1024) }
    }

    /// The input, read or generated (see `-i`), and normalised unless `-z`.
    ///
    /// # Errors
    ///
    /// [`AppError::Invalid`] for flags out of range (`-m` above the number
    /// of points, say), a malformed or unreadable file, or a name that is
    /// neither a file nor a shape to generate.
    pub fn points(&self) -> Result<Points, AppError> {
        self.validate()?;
        let mut p = self.load()?;
        if self.max_clusters > p.len().min(MAX_CLUSTERS) {
            return Err(AppError::Invalid(format!(
                "-m{} clusters: at most the number of points ({}) and {MAX_CLUSTERS}",
                self.max_clusters,
                p.len()
            )));
        }
        if !self.no_zscore {
            p.zscore();
        }
        Ok(p)
    }
}

/// The result: the clustering of the last k, and the iterations each k took.
#[derive(Debug, Clone, PartialEq)]
pub struct Clustering {
    /// The number of clusters of the result (`-m`).
    pub clusters: usize,
    /// Its centers, `clusters × dims`.
    pub centers: Vec<f32>,
    /// Each point's cluster.
    pub membership: Vec<u32>,
    /// Iterations run for each k from `-n` to `-m`.
    pub iterations: Vec<u32>,
}

/// Centers compared at once by [`Nearest`].
const LANES: usize = 8;

/// One iteration's centers, laid out to find a point's nearest center
/// [`LANES`] centers at a time: group `g`, row `j` holds feature `j` of
/// centers `g * LANES ..`, so that each lane sums its own center's squared
/// differences in feature order, exactly as one center at a time would
/// (the same additions in the same order, no fused multiply-add), while
/// the lanes' chains of additions overlap. STAMP sums one center at a
/// time, a chain of dependent additions that bounds its speed; the
/// results here are the same bit for bit.
#[derive(Debug, Clone)]
pub(crate) struct Nearest {
    k: usize,
    d: usize,
    groups: Vec<[f32; LANES]>,
}

impl Nearest {
    /// The `k` centers of `centers` (row-major, `k × d`). Lanes past `k`
    /// hold zeros and are never chosen.
    pub(crate) fn new(centers: &[f32], k: usize) -> Self {
        let d = centers.len().checked_div(k).unwrap_or(0);
        let mut groups = vec![[0.0f32; LANES]; k.div_ceil(LANES) * d];
        for c in 0..k {
            for j in 0..d {
                groups[(c / LANES) * d + j][c % LANES] = centers[c * d + j];
            }
        }
        Nearest { k, d, groups }
    }

    /// The nearest center to point `p` (`d` features; the first one on a
    /// tie; center 0 when no distance is below `f32::MAX`).
    #[inline]
    pub(crate) fn of(&self, p: &[f32]) -> u32 {
        let mut best = 0;
        let mut best_dist = f32::MAX;
        if self.d == 0 {
            return best;
        }
        for (g, rows) in self.groups.chunks_exact(self.d).enumerate() {
            let mut acc = [0.0f32; LANES];
            for (row, &x) in rows.iter().zip(p) {
                for (a, &c) in acc.iter_mut().zip(row) {
                    let t = x - c;
                    *a += t * t;
                }
            }
            let first = g * LANES;
            for (l, &dist) in acc.iter().enumerate().take(self.k - first) {
                if dist < best_dist {
                    best_dist = dist;
                    best = (first + l) as u32;
                }
            }
        }
        best
    }
}

/// The nearest of the `k` centers to point `p` (the first one on a tie),
/// one center at a time, as STAMP computes it: the reference [`Nearest`]
/// is tested against.
#[cfg(test)]
pub(crate) fn nearest(p: &[f32], centers: &[f32], k: usize) -> u32 {
    let d = p.len();
    let mut best = 0;
    let mut best_dist = f32::MAX;
    for c in 0..k {
        let dist: f32 = p.iter().zip(&centers[c * d..(c + 1) * d]).map(|(a, b)| (a - b) * (a - b)).sum();
        if dist < best_dist {
            best_dist = dist;
            best = c as u32;
        }
    }
    best
}

/// One way to run the assignment step.
pub(crate) trait Assign {
    /// Forgets the memberships (every point in no cluster).
    fn reset(&mut self);
    /// Assigns every point to its nearest of the `k` centers; returns the
    /// sum of the features of each cluster's points (`sums`, `k × d`),
    /// their number (`counts`), and how many points changed cluster.
    fn assign(&mut self, centers: &[f32], k: usize, sums: &mut [f64], counts: &mut [u64]) -> Result<u64, AppError>;
    /// The memberships after the last step.
    fn membership(&self) -> Vec<u32>;
}

/// The sequential assignment step.
struct Sequential<'a> {
    points: &'a Points,
    membership: Vec<u32>,
}

impl Assign for Sequential<'_> {
    fn reset(&mut self) {
        self.membership.fill(u32::MAX);
    }

    fn assign(&mut self, centers: &[f32], k: usize, sums: &mut [f64], counts: &mut [u64]) -> Result<u64, AppError> {
        let d = self.points.dims;
        let nearest = Nearest::new(centers, k);
        let mut changed = 0;
        for (i, m) in self.membership.iter_mut().enumerate() {
            let p = self.points.point(i);
            let c = nearest.of(p);
            if *m != c {
                changed += 1;
                *m = c;
            }
            let c = c as usize;
            counts[c] += 1;
            for (acc, &x) in sums[c * d..(c + 1) * d].iter_mut().zip(p) {
                *acc += f64::from(x);
            }
        }
        Ok(changed)
    }

    fn membership(&self) -> Vec<u32> {
        self.membership.clone()
    }
}

/// Clusters `points` for every k in `min..=max` (STAMP's `cluster_exec`
/// and `normal_exec`).
fn cluster(
    points: &Points,
    min: usize,
    max: usize,
    threshold: f64,
    a: &mut impl Assign,
) -> Result<Clustering, AppError> {
    let (n, d) = (points.len(), points.dims);
    let mut out = Clustering { clusters: 0, centers: Vec::new(), membership: Vec::new(), iterations: Vec::new() };
    for k in min..=max {
        // STAMP's first centers: its Mersenne Twister seeded with 7 for
        // every k, one draw per center.
        let mut rng = rand_mt::Mt::new(7);
        let mut centers: Vec<f32> = Vec::with_capacity(k * d);
        for _ in 0..k {
            centers.extend_from_slice(points.point(rng.next_u32() as usize % n));
        }
        a.reset();
        let mut sums = vec![0.0f64; k * d];
        let mut counts = vec![0u64; k];
        let mut loops = 0;
        let mut iterations = 0;
        loop {
            sums.fill(0.0);
            counts.fill(0);
            let changed = a.assign(&centers, k, &mut sums, &mut counts)?;
            iterations += 1;
            for c in 0..k {
                if counts[c] > 0 {
                    for j in 0..d {
                        centers[c * d + j] = (sums[c * d + j] / counts[c] as f64) as f32;
                    }
                }
            }
            let delta = changed as f64 / n as f64;
            if !(delta > threshold && loops < MAX_LOOPS) {
                break;
            }
            loops += 1;
        }
        out.iterations.push(iterations);
        out.clusters = k;
        out.centers = centers;
    }
    out.membership = a.membership();
    Ok(out)
}

/// Clusters sequentially (the speed baseline and the reference of the
/// self-check), returning the result and the time of the clustering.
///
/// # Errors
///
/// [`AppError::Invalid`] for flags out of range.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_kmeans::{sequential, KmeansArgs};
///
/// let args = KmeansArgs { input: "random-n256-d4-c3".into(), max_clusters: 3, min_clusters: 2, ..KmeansArgs::default() };
/// let (c, _) = sequential(&args)?;
/// assert_eq!((c.clusters, c.iterations.len(), c.membership.len()), (3, 2, 256));
/// # Ok::<(), skelaff_stamp_core::AppError>(())
/// ```
pub fn sequential(args: &KmeansArgs) -> Result<(Clustering, Duration), AppError> {
    let points = args.points()?;
    run_sequential(args, &points)
}

fn run_sequential(args: &KmeansArgs, points: &Points) -> Result<(Clustering, Duration), AppError> {
    let mut a = Sequential { points, membership: vec![u32::MAX; points.len()] };
    let start = Instant::now();
    let c = cluster(points, args.min_clusters, args.max_clusters, args.threshold, &mut a)?;
    Ok((c, start.elapsed()))
}

impl App for Kmeans {
    const NAME: &'static str = "kmeans";
    type Args = KmeansArgs;

    /// The low-contention clusters (`-m40 -n40 -t0.05`) on STAMP's
    /// middle-sized input shape, `random-n16384-d24-c16`: some 30 ms of
    /// clustering, enough to split over two threads.
    fn small() -> KmeansArgs {
        KmeansArgs { input: "random-n16384-d24-c16".into(), ..KmeansArgs::default() }
    }

    fn threads(args: &KmeansArgs) -> usize {
        args.threads
    }

    fn set_threads(args: &mut KmeansArgs, threads: usize) {
        args.threads = threads;
    }

    fn run(args: &KmeansArgs, common: &CommonArgs) -> Result<Outcome, AppError> {
        let points = args.points()?;
        let chunk = args.chunk(points.len());
        let mut parallel = None;
        let mut prepared = None;
        let (result, time, report, reference) = if common.sequential {
            let (c, t) = run_sequential(args, &points)?;
            (c, t, None, None)
        } else {
            prepared = Some(skelaff_stamp_core::phases::prepare_before_timing(common, args.threads)?);
            let mut a = Parallel::new(&points, common, args.threads, chunk);
            let start = Instant::now();
            let c = cluster(&points, args.min_clusters, args.max_clusters, args.threshold, &mut a)?;
            let time = start.elapsed();
            let (reference, seq_time) = run_sequential(args, &points)?;
            parallel = Some((a.runs.len(), seq_time.as_secs_f64()));
            (c, time, a.runs.merged(), Some(reference))
        };
        let figures = KmeansFigures {
            input: args.input.clone(),
            points: points.len(),
            dims: points.dims,
            min_clusters: args.min_clusters,
            max_clusters: args.max_clusters,
            threads: args.threads,
            chunk: parallel.map(|_| chunk),
            runs: parallel.map(|(runs, _)| runs),
            sequential_check_seconds: parallel.map(|(_, seconds)| seconds),
            iterations: result.iterations.clone(),
            membership_digest: format!("{:016x}", skelaff_stamp_core::phases::digest(&result.membership)),
        };
        let check = result.check_means(&points).and_then(|()| match &reference {
            Some(r) => result.compare(r).map(|()| {
                format!(
                    "{} clusters: memberships and iterations {:?} equal to the sequential run's, centers within \
                     4 f32 ulps, each center the mean of its points",
                    result.clusters, result.iterations
                )
            }),
            None => Ok(format!(
                "{} clusters after iterations {:?}: each center the mean of its points",
                result.clusters, result.iterations
            )),
        });
        let check = check.map_err(|e| CheckFailed::new(Kmeans::NAME, e));
        Ok(Outcome { app: Kmeans::NAME, report, time, prepared, check, figures: figures.into() })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Nearest, nearest};

    /// Features drawn from a few values, so that ties between centers and
    /// equal distances are common; and from a wide range, so that rounding
    /// differs from one summation order to another.
    fn features(n: usize) -> impl Strategy<Value = Vec<f32>> {
        prop::collection::vec(
            prop_oneof![
                (-3i8..=3).prop_map(f32::from),
                -1.0e6f32..1.0e6,
                any::<f32>().prop_filter("finite", |x| x.is_finite())
            ],
            n,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The lanes choose the center the one-at-a-time sums choose, on
        /// ties and overflows too (the same additions in the same order).
        #[test]
        fn lanes_choose_what_one_center_at_a_time_chooses(
            (k, _d, centers, points) in (1usize..=45, 1usize..=40).prop_flat_map(|(k, d)| {
                (Just(k), Just(d), features(k * d), prop::collection::vec(features(d), 1..8))
            })
        ) {
            let lanes = Nearest::new(&centers, k);
            for p in &points {
                prop_assert_eq!(lanes.of(p), nearest(p, &centers, k));
            }
        }
    }

    #[test]
    fn a_point_equal_to_a_center_is_its_own_and_ties_go_to_the_first() {
        let d = 3;
        let centers: Vec<f32> = (0..20).flat_map(|c| [c as f32 % 10.0, 1.0, 2.0]).collect();
        let lanes = Nearest::new(&centers, 20);
        // Centers c and c + 10 are equal: the first of them wins.
        for c in 0..10 {
            assert_eq!(lanes.of(&centers[c * d..(c + 1) * d]), c as u32);
        }
        assert_eq!(Nearest::new(&[], 0).of(&[]), 0);
    }
}
