//! Algorithm 1 of the MASA paper and the row splits built on it: which
//! contiguous chunk of rows (or columns) each thread, node or rank handles.

use core::ops::Range;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The output of Algorithm 1: how many rows (or columns) each thread and
/// each node gets.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Chunks {
    /// `dim_per_thread`: chunk size of thread `i` (0-based here).
    pub per_thread: Vec<usize>,
    /// `dim_per_node`: chunk size of node `j` (the `j`-th node used, 0-based).
    pub per_node: Vec<usize>,
}

/// Algorithm 1 of the paper, exactly: chunk sizes per thread and per node
/// for `dim_total` rows over `nthreads` threads on `mnodes` nodes of
/// `lcores` cores, threads numbered node by node (threads `lcores*j ..
/// lcores*(j+1)` on node `j`).
///
/// Every thread gets `ceil(dim_total / nthreads)` except the last
/// `nthreads * ceil(..) - dim_total`, which get one less; a node's size is
/// the sum over its threads. With fewer threads than `mnodes * lcores`
/// (the paper assumes one per core) the missing threads count as 0.
///
/// # Errors
///
/// [`Error::BadChunking`] when a count is 0 or there are more threads than
/// cores (`nthreads > mnodes * lcores`): a thread without a core has no node.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::masa::algorithm1;
///
/// // 10 rows, 4 threads on 2 nodes of 2 cores: ceil(10/4) = 3, and the last
/// // 4*3 - 10 = 2 threads get one less.
/// let c = algorithm1(10, 4, 2, 2)?;
/// assert_eq!(c.per_thread, [3, 3, 2, 2]);
/// assert_eq!(c.per_node, [6, 4]);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub fn algorithm1(dim_total: usize, nthreads: usize, mnodes: usize, lcores: usize) -> Result<Chunks> {
    if nthreads == 0 {
        return Err(Error::BadChunking { what: "at least one thread", value: 0 });
    }
    if mnodes == 0 {
        return Err(Error::BadChunking { what: "at least one NUMA node", value: 0 });
    }
    if lcores == 0 {
        return Err(Error::BadChunking { what: "at least one core per node", value: 0 });
    }
    if nthreads > mnodes.saturating_mul(lcores) {
        return Err(Error::BadChunking {
            what: "at most one thread per core (nthreads <= mnodes * lcores)",
            value: nthreads,
        });
    }
    let per_thread = per_thread_sizes(dim_total, nthreads);
    let per_node = (0..mnodes)
        .map(|j| (lcores * j..lcores * (j + 1)).map(|i| per_thread.get(i).copied().unwrap_or(0)).sum())
        .collect();
    Ok(Chunks { per_thread, per_node })
}

/// The first half of Algorithm 1: `ceil(dim/n)` for the first
/// `n - offset` threads, one less for the last `offset`.
pub(crate) fn per_thread_sizes(dim_total: usize, nthreads: usize) -> Vec<usize> {
    let per_thread_dim = dim_total.div_ceil(nthreads);
    let virtual_dim = per_thread_dim * nthreads;
    let offset = virtual_dim - dim_total;
    (0..nthreads).map(|i| if i < nthreads - offset { per_thread_dim } else { per_thread_dim - 1 }).collect()
}

/// How to split rows (or columns) among threads (or ranks).
///
/// # Examples
///
/// ```
/// use skelaff_spmv::SplitKind;
///
/// assert_eq!("nnz".parse::<SplitKind>()?, SplitKind::Nnz);
/// assert_eq!(SplitKind::Rows.to_string(), "rows");
/// assert!("cols".parse::<SplitKind>().unwrap_err().to_string().ends_with("expected one of: rows, nnz"));
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SplitKind {
    /// Algorithm 1: (almost) equal numbers of rows per thread.
    #[default]
    Rows,
    /// Balance stored entries plus rows per thread (in the byte model a
    /// row costs what an entry costs), for irregular matrices whose rows
    /// differ in length.
    Nnz,
}

skelaff_numa_alloc::enum_names! {
    SplitKind {
        Rows => "rows",
        Nnz => "nnz",
    }
    parse: Error = unknown_split;
}

fn unknown_split(given: &str) -> Error {
    Error::unknown_name("split", given, SplitKind::VARIANTS)
}

/// Contiguous chunks of `0..dim`, one per thread: thread `t` gets
/// `bounds[t]..bounds[t + 1]`.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::Split;
///
/// // Row pointers of a matrix whose first row holds most entries.
/// let ptr = [0, 90, 92, 94, 96, 98, 100];
/// assert_eq!(Split::equal(6, 2).bounds(), &[0, 3, 6]);
/// // Balancing entries + rows: 106 units, thread 0 takes row 0 (91 units).
/// assert_eq!(Split::nnz(&ptr, 2).bounds(), &[0, 1, 6]);
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Split {
    bounds: Vec<usize>,
}

impl Split {
    /// From explicit bounds.
    ///
    /// # Errors
    ///
    /// [`Error::BadChunking`] unless there are at least two bounds, the
    /// first is 0 and they do not decrease.
    pub fn from_bounds(bounds: Vec<usize>) -> Result<Split> {
        if bounds.len() < 2 || bounds[0] != 0 || bounds.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::BadChunking {
                what: "non-decreasing bounds starting at 0, at least one chunk",
                value: bounds.len(),
            });
        }
        Ok(Split { bounds })
    }

    /// Chunks of the sizes `per_thread`, in order.
    pub fn from_sizes(per_thread: &[usize]) -> Split {
        let mut bounds = Vec::with_capacity(per_thread.len() + 1);
        bounds.push(0);
        let mut acc = 0;
        for &s in per_thread {
            acc += s;
            bounds.push(acc);
        }
        Split { bounds }
    }

    /// Algorithm 1's per-thread sizes for `dim` over `threads` (at least 1).
    pub fn equal(dim: usize, threads: usize) -> Split {
        Split::from_sizes(&per_thread_sizes(dim, threads.max(1)))
    }

    /// Balances `ptr[r] + r` (entries plus rows before row `r`): thread `t`
    /// starts at the first row where that reaches `t / threads` of the total.
    /// `ptr` is a row (or column) pointer array; `threads` at least 1.
    pub fn nnz(ptr: &[u32], threads: usize) -> Split {
        if ptr.is_empty() {
            return Split { bounds: vec![0; threads.max(1) + 1] };
        }
        Split::balanced(ptr.len() - 1, threads, |r| u128::from(ptr[r]) + r as u128)
    }

    /// Thread `t` starts at the first `r` in `0..=dim` where `weight(r)`
    /// (non-decreasing, `weight(0) == 0`) reaches `t / threads` of
    /// `weight(dim)`; the last thread ends at `dim`.
    pub(crate) fn balanced(dim: usize, threads: usize, weight: impl Fn(usize) -> u128) -> Split {
        let threads = threads.max(1) as u128;
        let total = weight(dim);
        let mut bounds: Vec<usize> = (0..threads)
            .map(|t| {
                let target = t * total;
                let (mut lo, mut hi) = (0usize, dim);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if weight(mid) * threads >= target {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                lo
            })
            .collect();
        bounds.push(dim);
        Split { bounds }
    }

    /// The bounds (`threads + 1` of them).
    pub fn bounds(&self) -> &[usize] {
        &self.bounds
    }

    /// Thread `t`'s chunk.
    ///
    /// # Panics
    ///
    /// If `t >= threads()`.
    pub fn range(&self, t: usize) -> Range<usize> {
        self.bounds[t]..self.bounds[t + 1]
    }

    /// Number of chunks.
    pub fn threads(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The dimension split.
    pub fn dim(&self) -> usize {
        self.bounds[self.bounds.len() - 1]
    }

    /// The bounds carried over to an array indexed by `ptr` (e.g. from rows
    /// to the entries of those rows): `ptr[bounds[t]]`.
    ///
    /// # Panics
    ///
    /// If `ptr` is shorter than `dim() + 1`.
    pub fn through(&self, ptr: &[u32]) -> Vec<usize> {
        self.bounds.iter().map(|&b| ptr[b] as usize).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn algorithm1_worked_examples() {
        // Divisible: 12 rows, 4 threads, 2 nodes x 2 cores.
        let c = algorithm1(12, 4, 2, 2).unwrap();
        assert_eq!((c.per_thread.as_slice(), c.per_node.as_slice()), (&[3, 3, 3, 3][..], &[6, 6][..]));
        // Not divisible: 75000 rows over 7 threads on 1 node of 8 cores:
        // ceil = 10715, virtual 75005, offset 5: two threads of 10715, five of 10714.
        let c = algorithm1(75000, 7, 1, 8).unwrap();
        assert_eq!(c.per_thread, [10715, 10715, 10714, 10714, 10714, 10714, 10714]);
        assert_eq!(c.per_node, [75000]);
        // 10 rows, 6 threads, 3 nodes x 2: ceil = 2, virtual 12, offset 2.
        let c = algorithm1(10, 6, 3, 2).unwrap();
        assert_eq!(c.per_thread, [2, 2, 2, 2, 1, 1]);
        assert_eq!(c.per_node, [4, 4, 2]);
        // Fewer rows than threads: 3 rows, 4 threads: ceil 1, offset 1.
        let c = algorithm1(3, 4, 4, 1).unwrap();
        assert_eq!(c.per_thread, [1, 1, 1, 0]);
        assert_eq!(c.per_node, [1, 1, 1, 0]);
        // The paper's machine: 24 threads on 4 nodes of 6 cores, NAS class C.
        let c = algorithm1(150_000, 24, 4, 6).unwrap();
        assert_eq!(c.per_thread, vec![6250; 24]);
        assert_eq!(c.per_node, vec![37_500; 4]);
        // Fewer threads than cores: the missing ones count as 0.
        assert_eq!(algorithm1(9, 3, 2, 2).unwrap().per_node, [6, 3]);
        assert_eq!(algorithm1(0, 2, 1, 2).unwrap().per_thread, [0, 0]);
    }

    #[test]
    fn algorithm1_refuses_nonsense() {
        assert!(matches!(algorithm1(5, 0, 1, 1), Err(Error::BadChunking { .. })));
        assert!(matches!(algorithm1(5, 1, 0, 1), Err(Error::BadChunking { .. })));
        assert!(matches!(algorithm1(5, 1, 1, 0), Err(Error::BadChunking { .. })));
        let e = algorithm1(5, 5, 2, 2).unwrap_err();
        assert!(e.to_string().contains("one thread per core"), "{e}");
    }

    proptest! {
        #[test]
        fn nnz_splits_are_monotone_and_balanced(rows in prop::collection::vec(0u32..50, 0..200), threads in 1usize..9) {
            let mut ptr = vec![0u32];
            for r in &rows { ptr.push(ptr.last().unwrap() + r); }
            let s = Split::nnz(&ptr, threads);
            prop_assert_eq!(s.threads(), threads);
            prop_assert_eq!(s.dim(), rows.len());
            prop_assert!(s.bounds().windows(2).all(|w| w[0] <= w[1]));
            // No chunk exceeds its fair share by more than one row's weight.
            let total = (ptr[rows.len()] as usize + rows.len()) as f64;
            let heaviest = rows.iter().map(|&r| r as usize + 1).max().unwrap_or(0) as f64;
            for t in 0..threads {
                let r = s.range(t);
                let w = (ptr[r.end] - ptr[r.start]) as usize + r.len();
                prop_assert!(w as f64 <= total / threads as f64 + heaviest + 1e-9, "thread {} weight {}", t, w);
            }
        }
    }
}
