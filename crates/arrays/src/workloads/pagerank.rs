//! PageRank as Green-Marl generates it (the paper's Listing 1):
//!
//! ```text
//! Foreach (t: G.Nodes) {
//!     Double val = (1 - d) / N + d * Sum(w: t.InNbrs) { w.pg_rank / w.OutDegree() };
//!     diff += | val - t.pg_rank |;
//!     t.pg_rank_nxt = val;
//! }
//! G.pg_rank = G.pg_rank_nxt;
//! ```
//!
//! once over ordinary `Vec`s ([`VecPageRank`]) and once over [`Array`]s
//! with the hints the paper's compiler extracts ([`HINTS`]), both through
//! the same kernel ([`rank_rows`]) and the same static schedule, so that
//! what differs is only where the memory is and how it is reached.

use serde::Serialize;

use crate::array::Array;
use crate::error::Result;
use crate::hints::{AccessHints, AccessPattern, Choice, LargePages};
use crate::partition::{Partition, PartsMut};
use crate::workloads::ArrayReport;
use crate::workloads::graph::Graph;
use crate::workloads::runner::{Runner, run_collect};

/// The damping factor `d`.
pub const DAMPING: f64 = 0.85;

/// The hints of PageRank's arrays, as the paper's Green-Marl compiler
/// extracts them:
///
/// - `G.begin` (`Foreach (t: G.Nodes)` reads `begin[t]` and `begin[t+1]`)
///   and `G.r_node_idx` (`Sum(w: t.InNbrs)` scans each node's in-neighbour
///   range): read-only, read in order, but not by the loop index alone;
/// - `out_degree` (`w.OutDegree()`, `w` any in-neighbour): read-only, random;
/// - `pg_rank` (`w.pg_rank`, and written by the copy `G.pg_rank =
///   G.pg_rank_nxt`): written, random;
/// - `pg_rank_nxt` (`t.pg_rank_nxt = val`): written by the loop's index only.
///
/// Fig. 2 then replicates the graph, distributes `pg_rank` and partitions
/// `pg_rank_nxt`.
pub const HINTS: [(&str, AccessHints); 5] = [
    ("in_begin", AccessHints::new().read_only().pattern(AccessPattern::Sequential)),
    ("in_nbrs", AccessHints::new().read_only().pattern(AccessPattern::Sequential)),
    ("out_degree", AccessHints::new().read_only().pattern(AccessPattern::Random)),
    ("pg_rank", AccessHints::new().pattern(AccessPattern::Random)),
    ("pg_rank_nxt", AccessHints::new().loop_indexed().pattern(AccessPattern::Sequential)),
];

/// One thread's share of an iteration: nodes `rows` (writing `out`, which
/// is `pg_rank_nxt[rows]`); returns the thread's part of `diff`.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn rank_rows(
    rows: core::ops::Range<usize>,
    in_begin: &[u64],
    in_nbrs: &[u32],
    out_degree: &[u32],
    rank: &[f64],
    out: &mut [f64],
    base: f64,
    d: f64,
) -> f64 {
    let mut diff = 0.0;
    for (o, t) in out.iter_mut().zip(rows) {
        let (s, e) = (in_begin[t] as usize, in_begin[t + 1] as usize);
        let mut sum = 0.0;
        for &w in &in_nbrs[s..e] {
            let w = w as usize;
            sum += rank[w] / out_degree[w] as f64;
        }
        let val = base + d * sum;
        diff += (val - rank[t]).abs();
        *o = val;
    }
    diff
}

/// PageRank over ordinary `Vec`s: the graph's own vectors, ranks in
/// `Vec<f64>` written by the main thread, the same schedule.
#[derive(Debug)]
pub struct VecPageRank<'g> {
    graph: &'g Graph,
    rank: Vec<f64>,
    next: Vec<f64>,
    partition: Partition,
}

impl<'g> VecPageRank<'g> {
    /// Ranks start at `1 / N`.
    ///
    /// # Errors
    ///
    /// [`Error::PartitionLength`](crate::Error::PartitionLength) unless the
    /// partition covers the graph's nodes.
    pub fn new(graph: &'g Graph, partition: &Partition) -> Result<Self> {
        check_partition(graph, partition)?;
        let n = graph.nodes();
        Ok(VecPageRank { graph, rank: vec![1.0 / n as f64; n], next: vec![0.0; n], partition: partition.clone() })
    }

    /// One iteration on `runner`'s threads; returns `diff`.
    pub fn step(&mut self, runner: &dyn Runner) -> f64 {
        let g = self.graph;
        let base = (1.0 - DAMPING) / g.nodes() as f64;
        let (rank, p) = (&self.rank, &self.partition);
        let diff = {
            let parts = PartsMut::new(&mut self.next, p).expect("the partition was checked in `new`");
            run_collect(runner, |t| match parts.take(t) {
                Some(out) => {
                    rank_rows(p.thread_range(t), g.in_begin(), g.in_nbrs(), g.out_degree(), rank, out, base, DAMPING)
                }
                None => 0.0,
            })
        };
        let next = &self.next;
        let parts = PartsMut::new(&mut self.rank, p).expect("the partition was checked in `new`");
        runner.run(&|t| {
            if let Some(dst) = parts.take(t) {
                dst.copy_from_slice(&next[p.thread_range(t)]);
            }
        });
        diff.iter().sum()
    }

    /// The current ranks.
    pub fn ranks(&self) -> &[f64] {
        &self.rank
    }
}

/// PageRank over [`Array`]s chosen from [`HINTS`] (or all of one
/// implementation); the rank copy is the arrays' parallel `copy_from`.
#[derive(Debug)]
pub struct ArraysPageRank {
    in_begin: Array<u64>,
    in_nbrs: Array<u32>,
    out_degree: Array<u32>,
    rank: Array<f64>,
    next: Array<f64>,
    partition: Partition,
}

impl ArraysPageRank {
    /// Allocates the arrays (`choice` [`Choice::Auto`]: from [`HINTS`]),
    /// copies the graph in, ranks start at `1 / N`; `partition` is the
    /// loop's schedule.
    ///
    /// # Errors
    ///
    /// As [`ArrayBuilder::build`](crate::ArrayBuilder::build);
    /// [`Error::PartitionLength`](crate::Error::PartitionLength).
    pub fn new(graph: &Graph, partition: &Partition, choice: Choice, large_pages: LargePages) -> Result<Self> {
        check_partition(graph, partition)?;
        let n = graph.nodes();
        let build = |i: usize| super::ArraySpec { hints: HINTS[i].1, choice, large_pages, schedule: partition };
        let in_begin = build(0).builder(n + 1)?.build_from(graph.in_begin())?;
        let mut in_nbrs = build(1).builder(graph.edges().max(1))?.build()?;
        if graph.edges() > 0 {
            in_nbrs.init_from(graph.in_nbrs())?;
        }
        let out_degree = build(2).builder(n)?.build_from(graph.out_degree())?;
        let mut rank = build(3).builder(n)?.build()?;
        rank.fill(1.0 / n as f64);
        let next = build(4).builder(n)?.build()?;
        Ok(ArraysPageRank { in_begin, in_nbrs, out_degree, rank, next, partition: partition.clone() })
    }

    /// One iteration on `runner`'s threads; returns `diff`.
    pub fn step(&mut self, runner: &dyn Runner) -> f64 {
        let base = (1.0 - DAMPING) / self.rank.len() as f64;
        let p = &self.partition;
        let (begin, nbrs, deg, rank) = (&self.in_begin, &self.in_nbrs, &self.out_degree, &self.rank);
        let diff = {
            let parts = self.next.parts_mut(p).expect("the partition was checked in `new`");
            run_collect(runner, |t| match parts.take(t) {
                // Each thread takes its views once: its node's replicas.
                Some(out) => rank_rows(
                    p.thread_range(t),
                    begin.as_slice(),
                    nbrs.as_slice(),
                    deg.as_slice(),
                    rank.as_slice(),
                    out,
                    base,
                    DAMPING,
                ),
                None => 0.0,
            })
        };
        self.rank.copy_from(&self.next).expect("rank and next have the graph's length");
        diff.iter().sum()
    }

    /// The current ranks.
    pub fn ranks(&self) -> &[f64] {
        self.rank.as_slice()
    }

    /// What each array got, and the memory it holds per node.
    pub fn arrays(&self) -> Vec<ArrayReport> {
        vec![
            ArrayReport::of("in_begin", &self.in_begin),
            ArrayReport::of("in_nbrs", &self.in_nbrs),
            ArrayReport::of("out_degree", &self.out_degree),
            ArrayReport::of("pg_rank", &self.rank),
            ArrayReport::of("pg_rank_nxt", &self.next),
        ]
    }
}

fn check_partition(graph: &Graph, partition: &Partition) -> Result<()> {
    if partition.len() != graph.nodes() {
        return Err(crate::Error::PartitionLength { partition_len: partition.len(), array_len: graph.nodes() });
    }
    Ok(())
}

/// How far two rank vectors are apart.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RankAgreement {
    /// The largest absolute difference of one node's rank.
    pub max_abs_diff: f64,
    /// The sum of the first vector's ranks.
    pub sum: f64,
}

impl RankAgreement {
    /// Compares `a` and `b` (of equal length).
    pub fn of(a: &[f64], b: &[f64]) -> RankAgreement {
        let max_abs_diff = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(if a.len() == b.len() { 0.0 } else { f64::INFINITY }, f64::max);
        RankAgreement { max_abs_diff, sum: a.iter().sum() }
    }

    /// Whether they agree to `1e-12` per node (both versions run the same
    /// kernel on the same schedule; only the order of the `diff` sums may
    /// differ, and ranks do not depend on it).
    pub fn agrees(&self) -> bool {
        self.max_abs_diff <= 1e-12
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Implementation;
    use crate::workloads::PinnedThreads;

    #[test]
    fn both_versions_agree_under_every_implementation_and_rank_a_star_right() {
        // A star: nodes 1..n all point at 0, 0 points at 1.
        let n = 50u32;
        let mut edges: Vec<(u32, u32)> = (1..n).map(|i| (i, 0)).collect();
        edges.push((0, 1));
        let g = Graph::from_edges(n as usize, &edges).unwrap();
        let runner = PinnedThreads::new(2).unwrap();
        let p = Partition::new(g.nodes(), &runner.thread_nodes()).unwrap();
        let mut v = VecPageRank::new(&g, &p).unwrap();
        for _ in 0..30 {
            v.step(&runner);
        }
        let r = v.ranks();
        assert!(r[0] > r[1] && r[1] > r[2], "{:?}", &r[..3]);
        for choice in [Choice::Auto, Choice::Single, Choice::Distributed, Choice::Replicated, Choice::Partitioned] {
            let mut a = ArraysPageRank::new(&g, &p, choice, LargePages::Auto).unwrap();
            for _ in 0..30 {
                a.step(&runner);
            }
            let agree = RankAgreement::of(a.ranks(), v.ranks());
            assert!(agree.agrees(), "{choice}: {agree:?}");
            if choice == Choice::Auto {
                let got: Vec<Implementation> = a.arrays().iter().map(|r| r.selection.implementation).collect();
                use Implementation::*;
                assert_eq!(got, [Replicated, Replicated, Replicated, Distributed, Partitioned]);
            }
        }
        assert!(!RankAgreement::of(&[1.0], &[1.5]).agrees());
        assert!(VecPageRank::new(&g, &Partition::new(3, &[0]).unwrap()).is_err());
    }

    #[test]
    fn rmat_pagerank_agrees_and_diff_shrinks() {
        let g = Graph::rmat(12, 8, 7).unwrap();
        let runner = PinnedThreads::new(2).unwrap();
        let p = Partition::new(g.nodes(), &runner.thread_nodes()).unwrap();
        let mut v = VecPageRank::new(&g, &p).unwrap();
        let mut a = ArraysPageRank::new(&g, &p, Choice::Auto, LargePages::Off).unwrap();
        let (mut first, mut last) = (0.0, 0.0);
        for i in 0..10 {
            let dv = v.step(&runner);
            let da = a.step(&runner);
            assert!((dv - da).abs() <= 1e-9 * dv.abs().max(1.0), "iteration {i}: {dv} vs {da}");
            if i == 0 {
                first = dv;
            }
            last = dv;
        }
        assert!(last < first / 4.0, "diff {first} -> {last}");
        assert!(RankAgreement::of(a.ranks(), v.ranks()).agrees());
    }
}
