//! kmeans' self-check: each center is the mean of its points, and a
//! parallel clustering equals the sequential one.

use super::Clustering;
use super::input::Points;

/// Whether two centers agree within the self-check's tolerance (see the
/// [module docs](super)).
pub fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 4.0 * f32::EPSILON * a.abs().max(b.abs()) + 1e-9
}

/// What kmeans' self-check found wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BadClustering {
    /// The result does not have one membership per point and `clusters ×
    /// dims` center values.
    #[error(
        "the result has {memberships} memberships for {points} points and {centers} center values for \
         {clusters} clusters of {dims} features"
    )]
    Shape {
        /// Points clustered.
        points: usize,
        /// Memberships in the result.
        memberships: usize,
        /// Clusters in the result.
        clusters: usize,
        /// Features per point.
        dims: usize,
        /// Center values in the result.
        centers: usize,
    },
    /// A point in a cluster that does not exist.
    #[error("point {point} is in cluster {cluster}, outside 0..{clusters}")]
    MembershipOutOfRange {
        /// The point.
        point: usize,
        /// Its cluster.
        cluster: u32,
        /// The number of clusters.
        clusters: usize,
    },
    /// A center that is not the mean of its points.
    #[error("center {center} feature {feature} is {value} but its {members} points' mean is {mean}")]
    NotTheMean {
        /// The cluster.
        center: usize,
        /// The feature.
        feature: usize,
        /// The center's value.
        value: f32,
        /// Points in the cluster.
        members: u64,
        /// Their mean (computed in `f64`).
        mean: f32,
    },
    /// Another number of iterations per k than the sequential run.
    #[error("iterations {found:?}, sequentially {sequential:?}")]
    Iterations {
        /// This run's, per k.
        found: Vec<u32>,
        /// The sequential run's.
        sequential: Vec<u32>,
    },
    /// Another number of clusters (or center values) than sequentially.
    #[error("{clusters} clusters ({centers} center values), sequentially {sequential_clusters} ({sequential_centers})")]
    Clusters {
        /// This run's clusters.
        clusters: usize,
        /// This run's center values.
        centers: usize,
        /// The sequential run's clusters.
        sequential_clusters: usize,
        /// The sequential run's center values.
        sequential_centers: usize,
    },
    /// Points in another cluster than sequentially.
    #[error("{points} points in another cluster than sequentially (first: point {first})")]
    Memberships {
        /// How many (over the points both runs have).
        points: usize,
        /// The first such point (or the first one only one run has).
        first: usize,
    },
    /// A center value beyond the tolerance of the sequential one.
    #[error("center value {index} is {found}, sequentially {sequential}: beyond the tolerance")]
    CenterDiffers {
        /// Its index in `centers`.
        index: usize,
        /// This run's.
        found: f32,
        /// The sequential run's.
        sequential: f32,
    },
}

impl Clustering {
    /// Checks that every center with members is the mean of its members
    /// (recomputed in `f64`), within [`close`].
    ///
    /// # Errors
    ///
    /// The first center that is not ([`BadClustering::NotTheMean`]), a
    /// membership out of range, or a result of the wrong shape.
    pub fn check_means(&self, points: &Points) -> Result<(), BadClustering> {
        let (k, d) = (self.clusters, points.dims);
        let mut sums = vec![0.0f64; k * d];
        let mut counts = vec![0u64; k];
        if self.membership.len() != points.len() || self.centers.len() != k * d {
            return Err(BadClustering::Shape {
                points: points.len(),
                memberships: self.membership.len(),
                clusters: k,
                dims: d,
                centers: self.centers.len(),
            });
        }
        for (i, &m) in self.membership.iter().enumerate() {
            let c = m as usize;
            if c >= k {
                return Err(BadClustering::MembershipOutOfRange { point: i, cluster: m, clusters: k });
            }
            counts[c] += 1;
            for (s, &x) in sums[c * d..(c + 1) * d].iter_mut().zip(points.point(i)) {
                *s += f64::from(x);
            }
        }
        for c in (0..k).filter(|&c| counts[c] > 0) {
            for j in 0..d {
                let mean = (sums[c * d + j] / counts[c] as f64) as f32;
                let value = self.centers[c * d + j];
                if !close(mean, value) {
                    return Err(BadClustering::NotTheMean { center: c, feature: j, value, members: counts[c], mean });
                }
            }
        }
        Ok(())
    }

    /// Compares with a reference clustering (the sequential one): the same
    /// iterations and memberships, centers within [`close`].
    ///
    /// # Errors
    ///
    /// The first difference.
    pub fn compare(&self, reference: &Clustering) -> Result<(), BadClustering> {
        if self.iterations != reference.iterations {
            return Err(BadClustering::Iterations {
                found: self.iterations.clone(),
                sequential: reference.iterations.clone(),
            });
        }
        if self.clusters != reference.clusters || self.centers.len() != reference.centers.len() {
            return Err(BadClustering::Clusters {
                clusters: self.clusters,
                centers: self.centers.len(),
                sequential_clusters: reference.clusters,
                sequential_centers: reference.centers.len(),
            });
        }
        if let Some(first) = (0..self.membership.len().max(reference.membership.len()))
            .find(|&i| self.membership.get(i) != reference.membership.get(i))
        {
            let points = self.membership.iter().zip(&reference.membership).filter(|(a, b)| a != b).count();
            return Err(BadClustering::Memberships { points, first });
        }
        if let Some((index, (&found, &sequential))) =
            self.centers.iter().zip(&reference.centers).enumerate().find(|(_, (a, b))| !close(**a, **b))
        {
            return Err(BadClustering::CenterDiffers { index, found, sequential });
        }
        Ok(())
    }
}
