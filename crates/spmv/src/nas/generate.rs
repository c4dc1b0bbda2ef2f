//! NPB's CG matrix generator, exactly: `randlc`, `sprnvc`, `vecset` and
//! `makea`, with the outer vectors drawn once and their outer products
//! summed for all rows or for one block of rows (what one MPI rank holds;
//! the rows come out the same whatever the block).

use core::ops::Range;

use super::{Class, MULTIPLIER, RCOND, SEED};
use crate::error::Result;
use crate::matrix::{Csr, Triplets};

/// NPB's `randlc`: `x <- 5^13 x mod 2^46`, returning `x / 2^46`.
///
/// NPB computes this in double precision by splitting into 23-bit halves;
/// every intermediate is an exact integer below 2^53, so 64-bit integer
/// arithmetic gives the same values.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::nas::Randlc;
///
/// let mut r = Randlc::new(314_159_265);
/// let u = r.next_f64();
/// assert!(u > 0.0 && u < 1.0);
/// assert_eq!(r.state(), (314_159_265u64 * 1_220_703_125) % (1 << 46));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Randlc {
    x: u64,
}

impl Randlc {
    const MASK: u64 = (1 << 46) - 1;

    /// A generator at state `seed` (taken mod 2^46).
    pub fn new(seed: u64) -> Randlc {
        Randlc { x: seed & Self::MASK }
    }

    /// The current state.
    pub fn state(&self) -> u64 {
        self.x
    }

    /// The next value, uniform in (0, 1).
    #[allow(clippy::should_implement_trait)]
    pub fn next_f64(&mut self) -> f64 {
        // 2^46 divides 2^64, so the product mod 2^64, masked, is the product mod 2^46.
        self.x = self.x.wrapping_mul(MULTIPLIER) & Self::MASK;
        self.x as f64 * (1.0 / (1u64 << 46) as f64)
    }
}

/// `sprnvc`: `nz` distinct positions in `1..=n` with random values, drawing
/// a value and then a position (`int(nn1 * u) + 1`, rejected if above `n`
/// or already drawn) from `rng`.
fn sprnvc(rng: &mut Randlc, n: usize, nz: usize, nn1: usize, v: &mut Vec<f64>, iv: &mut Vec<usize>) {
    v.clear();
    iv.clear();
    while v.len() < nz {
        let vecelt = rng.next_f64();
        let vecloc = rng.next_f64();
        let i = (nn1 as f64 * vecloc) as usize + 1;
        if i > n || iv.contains(&i) {
            continue;
        }
        v.push(vecelt);
        iv.push(i);
    }
}

/// `vecset`: sets position `i` of the sparse vector to `val`, appending it
/// if absent.
fn vecset(v: &mut Vec<f64>, iv: &mut Vec<usize>, i: usize, val: f64) {
    let mut set = false;
    for (vk, &ik) in v.iter_mut().zip(iv.iter()) {
        if ik == i {
            *vk = val;
            set = true;
        }
    }
    if !set {
        v.push(val);
        iv.push(i);
    }
}

/// The outer vectors of NPB's `makea` (one sparse vector per outer row,
/// drawn from the random stream in order), from which any block of rows of
/// the matrix can be summed.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::nas::{Class, Generator};
///
/// let g = Generator::for_class(Class::S);
/// let all = g.matrix()?;
/// let block = g.rows(700..1400)?;
/// assert_eq!((block.nrows(), block.ncols()), (700, 1400));
/// assert_eq!(block.row(5), all.row(705));
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Generator {
    na: usize,
    shift: f64,
    /// The 1-based positions of outer vector `i` are `acol[arow[i]..arow[i + 1]]`.
    acol: Vec<usize>,
    aelt: Vec<f64>,
    arow: Vec<usize>,
}

impl Generator {
    /// The outer vectors of `class`, drawn as NPB does from the start of the
    /// random stream (the benchmark draws once before `makea`).
    pub fn for_class(class: Class) -> Generator {
        let p = class.params();
        let mut rng = Randlc::new(SEED);
        rng.next_f64();
        Generator::draw(&mut rng, p.na, p.nonzer, p.shift)
    }

    /// The `na` outer vectors of `nonzer` random entries (plus the diagonal
    /// entry 0.5) drawn from `rng`.
    pub fn draw(rng: &mut Randlc, na: usize, nonzer: usize, shift: f64) -> Generator {
        let mut nn1 = 1usize;
        loop {
            nn1 *= 2;
            if nn1 >= na {
                break;
            }
        }
        let mut acol: Vec<usize> = Vec::with_capacity(na * (nonzer + 1));
        let mut aelt: Vec<f64> = Vec::with_capacity(na * (nonzer + 1));
        let mut arow: Vec<usize> = Vec::with_capacity(na + 1);
        arow.push(0);
        let (mut v, mut iv) = (Vec::with_capacity(nonzer + 1), Vec::with_capacity(nonzer + 1));
        for iouter in 1..=na {
            sprnvc(rng, na, nonzer, nn1, &mut v, &mut iv);
            vecset(&mut v, &mut iv, iouter, 0.5);
            acol.extend_from_slice(&iv);
            aelt.extend_from_slice(&v);
            arow.push(acol.len());
        }
        Generator { na, shift, acol, aelt, arow }
    }

    /// The matrix order.
    pub fn na(&self) -> usize {
        self.na
    }

    /// The whole `na x na` matrix, in CSR with 0-based, ascending column indices.
    ///
    /// # Errors
    ///
    /// [`crate::Error::TooLarge`] if the matrix does not fit 32-bit indices.
    pub fn matrix(&self) -> Result<Csr<f64>> {
        self.rows(0..self.na)
    }

    /// How many products `makea` adds into each row (duplicates counted
    /// before they are summed): a row's weight for balancing rows by entries.
    pub fn row_weights(&self) -> Vec<u64> {
        let mut w = vec![0u64; self.na];
        for i in 0..self.na {
            let cols = &self.acol[self.arow[i]..self.arow[i + 1]];
            for &j in cols {
                w[j - 1] += cols.len() as u64;
            }
        }
        w
    }

    /// Rows `rows` of the matrix (row `rows.start` becomes row 0), every
    /// column kept: `makea`'s sum of scaled outer products restricted to
    /// those rows. Duplicates are summed in generation order, so each row is
    /// the same as in [`Generator::matrix`].
    ///
    /// # Errors
    ///
    /// As [`Generator::matrix`].
    ///
    /// # Panics
    ///
    /// If `rows` is not inside `0..na`.
    pub fn rows(&self, rows: Range<usize>) -> Result<Csr<f64>> {
        assert!(rows.start <= rows.end && rows.end <= self.na, "rows {rows:?} outside 0..{}", self.na);
        let (lo, hi) = (rows.start + 1, rows.end + 1);
        let outer = |i: usize| (&self.acol[self.arow[i - 1]..self.arow[i]], &self.aelt[self.arow[i - 1]..self.arow[i]]);
        let entries: usize = (1..=self.na)
            .map(|i| {
                let cols = outer(i).0;
                cols.iter().filter(|&&j| (lo..hi).contains(&j)).count() * cols.len()
            })
            .sum();
        let mut t = Triplets::with_capacity(rows.len(), self.na, entries)?;
        let ratio = RCOND.powf(1.0 / self.na as f64);
        let mut size = 1.0f64;
        for i in 1..=self.na {
            let (cols, vals) = outer(i);
            for (&j, &ej) in cols.iter().zip(vals) {
                if !(lo..hi).contains(&j) {
                    continue;
                }
                let scale = size * ej;
                for (&jcol, &ejcol) in cols.iter().zip(vals) {
                    let mut va = ejcol * scale;
                    if jcol == j && j == i {
                        va = va + RCOND - self.shift;
                    }
                    t.push(j - lo, jcol - 1, va)?;
                }
            }
            size *= ratio;
        }
        Ok(t.to_csr())
    }
}

/// NPB's `makea`: the `na x na` CG matrix for `nonzer` and `shift`, in CSR
/// with 0-based, ascending column indices. `rng` must be the benchmark's
/// generator after its first draw (see [`class_matrix`]).
///
/// # Errors
///
/// [`crate::Error::TooLarge`] if the matrix does not fit 32-bit indices.
pub fn makea(rng: &mut Randlc, na: usize, nonzer: usize, shift: f64) -> Result<Csr<f64>> {
    Generator::draw(rng, na, nonzer, shift).matrix()
}

/// The matrix of `class`, generated as NPB does from the start of the
/// random stream (the benchmark draws once before `makea`).
///
/// # Errors
///
/// As [`makea`].
///
/// # Examples
///
/// ```
/// use skelaff_spmv::nas::{Class, class_matrix};
///
/// let a = class_matrix(Class::S)?;
/// assert_eq!((a.nrows(), a.ncols()), (1400, 1400));
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub fn class_matrix(class: Class) -> Result<Csr<f64>> {
    Generator::for_class(class).matrix()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn randlc_matches_npb_double_precision_arithmetic() {
        // NPB's randlc in doubles, transcribed, against the integer form.
        fn randlc_f64(x: &mut f64, a: f64) -> f64 {
            let (r23, t23) = (0.5f64.powi(23), 2.0f64.powi(23));
            let (r46, t46) = (r23 * r23, t23 * t23);
            let a1 = (r23 * a).trunc();
            let a2 = a - t23 * a1;
            let x1 = (r23 * *x).trunc();
            let x2 = *x - t23 * x1;
            let t1 = a1 * x2 + a2 * x1;
            let t2 = (r23 * t1).trunc();
            let z = t1 - t23 * t2;
            let t3 = t23 * z + a2 * x2;
            let t4 = (r46 * t3).trunc();
            *x = t3 - t46 * t4;
            r46 * *x
        }
        let mut x = SEED as f64;
        let mut r = Randlc::new(SEED);
        for _ in 0..10_000 {
            assert_eq!(r.next_f64(), randlc_f64(&mut x, MULTIPLIER as f64));
            assert_eq!(r.state() as f64, x);
        }
    }

    #[test]
    fn class_s_matrix_shape() {
        let a = class_matrix(Class::S).unwrap();
        assert_eq!(a.nrows(), 1400);
        // Every row has its diagonal, columns ascend, and the structure is symmetric.
        let t = a.transpose();
        assert_eq!(t.row_ptr(), a.row_ptr());
        assert_eq!(t.col_idx(), a.col_idx());
        for i in 0..a.nrows() {
            let (cols, _) = a.row(i);
            assert!(cols.windows(2).all(|w| w[0] < w[1]));
            assert!(cols.contains(&(i as u32)));
        }
        // Values are symmetric up to rounding of the product order.
        for (x, y) in a.values().iter().zip(t.values()) {
            assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0));
        }
    }

    #[test]
    fn blocks_of_rows_are_the_rows_of_the_whole() {
        let g = Generator::for_class(Class::S);
        let all = g.matrix().unwrap();
        let weights = g.row_weights();
        let mut at = 0;
        for end in [0, 1, 333, 334, 1000, 1400] {
            let block = g.rows(at..end).unwrap();
            for r in 0..block.nrows() {
                assert_eq!(block.row(r), all.row(at + r), "row {}", at + r);
                assert!(weights[at + r] >= block.row(r).0.len() as u64);
            }
            at = end;
        }
    }
}
