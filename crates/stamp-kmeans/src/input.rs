//! kmeans' generated input: points around random centers, in the shape of
//! STAMP's `random-n<points>-d<dims>-c<centers>.txt` files (their files
//! themselves are read by `file`).

use skelaff_stamp_core::app::AppError;

/// The most points accepted.
pub const MAX_POINTS: usize = 1 << 26;
/// The most features per point accepted.
pub const MAX_DIMS: usize = 4096;

/// Spread of the points around their center: the standard deviation, per
/// feature, of the Gaussian noise. STAMP's files (made by its
/// `generate.py`) show a spread of this order around centers drawn
/// uniformly from the unit cube.
pub const SPREAD: f64 = 0.00025;

/// The shape of an input, parsed from a STAMP file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Number of points (`n`).
    pub points: usize,
    /// Features per point (`d`).
    pub dims: usize,
    /// Number of true centers the points are drawn around (`c`).
    pub centers: usize,
}

impl Shape {
    /// Parses `random-n<points>-d<dims>-c<centers>`, with or without a
    /// `.txt` ending or a leading directory (`inputs/random-n2048-d16-c16.txt`).
    ///
    /// # Errors
    ///
    /// [`AppError::Invalid`] naming the accepted form, or for a size of 0
    /// or above the limits.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_kmeans::Shape;
    ///
    /// let s = Shape::parse("inputs/random-n65536-d32-c16.txt")?;
    /// assert_eq!((s.points, s.dims, s.centers), (65536, 32, 16));
    /// assert!(Shape::parse("color100").is_err());
    /// # Ok::<(), skelaff_stamp_core::AppError>(())
    /// ```
    pub fn parse(name: &str) -> Result<Shape, AppError> {
        let bad = || {
            AppError::Invalid(format!(
                "`{name}`: expected `random-n<points>-d<dims>-c<centers>` (e.g. random-n2048-d16-c16), with \
                 1 <= points <= {MAX_POINTS}, 1 <= dims <= {MAX_DIMS}, 1 <= centers <= points"
            ))
        };
        let base = name.rsplit('/').next().unwrap_or(name);
        let base = base.strip_suffix(".txt").unwrap_or(base);
        let rest = base.strip_prefix("random-n").ok_or_else(bad)?;
        let (n, rest) = rest.split_once("-d").ok_or_else(bad)?;
        let (d, c) = rest.split_once("-c").ok_or_else(bad)?;
        let num = |s: &str| s.parse::<usize>().map_err(|_| bad());
        let shape = Shape { points: num(n)?, dims: num(d)?, centers: num(c)? };
        if !(1..=MAX_POINTS).contains(&shape.points)
            || !(1..=MAX_DIMS).contains(&shape.dims)
            || !(1..=shape.points).contains(&shape.centers)
        {
            return Err(bad());
        }
        Ok(shape)
    }
}

/// Points, row by row (`points × dims` features).
#[derive(Debug, Clone, PartialEq)]
pub struct Points {
    /// The features, point after point.
    pub features: Vec<f32>,
    /// Features per point.
    pub dims: usize,
}

impl Points {
    /// The number of points.
    pub fn len(&self) -> usize {
        self.features.len() / self.dims.max(1)
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.features.is_empty()
    }

    /// Point `i`'s features.
    #[inline]
    pub fn point(&self, i: usize) -> &[f32] {
        &self.features[i * self.dims..(i + 1) * self.dims]
    }

    /// Generates `shape.points` points, each around one of `shape.centers`
    /// centers drawn uniformly from the unit cube (the center of each point
    /// drawn uniformly too), with Gaussian noise of deviation [`SPREAD`].
    /// The same seed gives the same points.
    pub fn generate(shape: Shape, seed: u64) -> Points {
        let mut rng = fastrand::Rng::with_seed(seed ^ 0x6B6D_6561_6E73);
        let centers: Vec<f64> = (0..shape.centers * shape.dims).map(|_| rng.f64()).collect();
        let mut features = Vec::with_capacity(shape.points * shape.dims);
        for _ in 0..shape.points {
            let c = rng.usize(0..shape.centers);
            for j in 0..shape.dims {
                features.push((centers[c * shape.dims + j] + SPREAD * gaussian(&mut rng)) as f32);
            }
        }
        Points { features, dims: shape.dims }
    }

    /// Normalises every feature to mean 0 and standard deviation 1 over the
    /// points (STAMP's `zscoreTransform`, on by default; a constant feature
    /// is left centred at 0).
    pub fn zscore(&mut self) {
        let n = self.len();
        if n == 0 {
            return;
        }
        for j in 0..self.dims {
            let col = || (0..n).map(|i| f64::from(self.features[i * self.dims + j]));
            let mean = col().sum::<f64>() / n as f64;
            let var = col().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
            let sd = if var > 0.0 { var.sqrt() } else { 1.0 };
            for i in 0..n {
                let x = &mut self.features[i * self.dims + j];
                *x = ((f64::from(*x) - mean) / sd) as f32;
            }
        }
    }
}

/// A standard normal deviate (Box–Muller).
fn gaussian(rng: &mut fastrand::Rng) -> f64 {
    let u = 1.0 - rng.f64(); // (0, 1]
    let v = rng.f64();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_sit_near_their_centers() {
        let p = Points::generate(Shape { points: 500, dims: 4, centers: 3 }, 1);
        assert_eq!(p.len(), 500);
        assert!(p.features.iter().all(|x| (-0.01..1.01).contains(x)));
        // With 3 centers, every point is within a few spreads of one of a
        // few distinct positions: the first feature takes few distinct values.
        let mut firsts: Vec<f32> = (0..500).map(|i| p.point(i)[0]).collect();
        firsts.sort_by(f32::total_cmp);
        let groups = firsts.windows(2).filter(|w| w[1] - w[0] > 0.01).count() + 1;
        assert!(groups <= 3, "{groups} groups");
    }

    #[test]
    fn zscore_centres_and_scales() {
        let mut p = Points::generate(Shape { points: 1000, dims: 3, centers: 5 }, 2);
        p.zscore();
        for j in 0..3 {
            let mean: f64 = (0..1000).map(|i| f64::from(p.point(i)[j])).sum::<f64>() / 1000.0;
            let var: f64 = (0..1000).map(|i| (f64::from(p.point(i)[j]) - mean).powi(2)).sum::<f64>() / 1000.0;
            assert!(mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4, "{mean} {var}");
        }
    }
}
