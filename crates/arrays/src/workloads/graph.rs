//! Directed graphs for PageRank, in the layout Green-Marl generates: node
//! offsets into an in-neighbour array (CSR of the reversed graph), plus
//! each node's out-degree. From a generated R-MAT (Kronecker) graph, an
//! edge list, or a Matrix Market file.

use std::io::BufRead;
use std::path::Path;

use crate::error::{Error, Result};

/// A directed graph with in-neighbour lists.
///
/// # Examples
///
/// ```
/// use skelaff_arrays::workloads::Graph;
///
/// let g = Graph::from_edges(3, &[(0, 1), (0, 2), (1, 2)])?;
/// assert_eq!(g.in_neighbours(2), &[0, 1]);
/// assert_eq!(g.out_degree(), &[2, 1, 0]);
/// let text = "% a comment\n0 1\n0 2\n1 2\n";
/// assert_eq!(Graph::parse_edge_list(text.as_bytes(), "inline")?, g);
/// # Ok::<(), skelaff_arrays::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Graph {
    // Invariant: `in_begin.len() == nodes + 1`, non-decreasing, ends at
    // `in_nbrs.len()`; every neighbour `< nodes`; `out_degree.len() == nodes`.
    in_begin: Vec<u64>,
    in_nbrs: Vec<u32>,
    out_degree: Vec<u32>,
}

impl Graph {
    /// The graph on `nodes` nodes with edges `(from, to)`.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for no nodes, more than `u32::MAX` nodes, or an
    /// edge naming a node `>= nodes`.
    pub fn from_edges(nodes: usize, edges: &[(u32, u32)]) -> Result<Graph> {
        let bad = |reason: String| Error::BadInput { source_name: "graph".into(), line: None, reason };
        if nodes == 0 || nodes > u32::MAX as usize {
            return Err(bad(format!("a graph needs 1 to {} nodes (got {nodes})", u32::MAX)));
        }
        if let Some(&(f, t)) = edges.iter().find(|&&(f, t)| f as usize >= nodes || t as usize >= nodes) {
            return Err(bad(format!("edge {f} -> {t} names a node outside 0..{nodes}")));
        }
        let mut in_count = vec![0u64; nodes + 1];
        let mut out_degree = vec![0u32; nodes];
        for &(f, t) in edges {
            in_count[t as usize + 1] += 1;
            out_degree[f as usize] = out_degree[f as usize].saturating_add(1);
        }
        for i in 0..nodes {
            in_count[i + 1] += in_count[i];
        }
        let in_begin = in_count;
        let mut fill: Vec<u64> = in_begin[..nodes].to_vec();
        let mut in_nbrs = vec![0u32; edges.len()];
        for &(f, t) in edges {
            let slot = &mut fill[t as usize];
            in_nbrs[*slot as usize] = f;
            *slot += 1;
        }
        for t in 0..nodes {
            in_nbrs[in_begin[t] as usize..in_begin[t + 1] as usize].sort_unstable();
        }
        Ok(Graph { in_begin, in_nbrs, out_degree })
    }

    /// An R-MAT graph (the Graph500 generator's Kronecker parameters a =
    /// 0.57, b = c = 0.19) with `2^scale` nodes and `edge_factor * 2^scale`
    /// edges, node numbers shuffled so that the power-law hubs are spread
    /// over the node range; deterministic in `seed`.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] unless `1 <= scale <= 31` and
    /// `1 <= edge_factor`, with at most 2^34 edges.
    pub fn rmat(scale: u32, edge_factor: u32, seed: u64) -> Result<Graph> {
        if !(1..=31).contains(&scale) || edge_factor == 0 || (edge_factor as u64) << scale > 1 << 34 {
            return Err(Error::BadInput {
                source_name: "--scale/--edge-factor".into(),
                line: None,
                reason: format!(
                    "scale {scale} and edge factor {edge_factor}: the scale must be 1 to 31, the edge factor at least 1, and edges (edge factor x 2^scale) at most 2^34"
                ),
            });
        }
        let n = 1usize << scale;
        let m = (edge_factor as usize) << scale;
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut perm: Vec<u32> = (0..n as u32).collect();
        rng.shuffle(&mut perm);
        let (a, b, c) = (0.57, 0.19, 0.19);
        let edges: Vec<(u32, u32)> = (0..m)
            .map(|_| {
                let (mut f, mut t) = (0usize, 0usize);
                for bit in (0..scale).rev() {
                    let r = rng.f64();
                    let (down, right) = if r < a {
                        (0, 0)
                    } else if r < a + b {
                        (0, 1)
                    } else if r < a + b + c {
                        (1, 0)
                    } else {
                        (1, 1)
                    };
                    f |= down << bit;
                    t |= right << bit;
                }
                (perm[f], perm[t])
            })
            .collect();
        Graph::from_edges(n, &edges)
    }

    /// Reads a graph file: Matrix Market (`.mtx`, entry `i j` is an edge
    /// i -> j, numbered from 1; symmetric files give both directions), or
    /// otherwise an edge list (`from to` per line, numbered from 0; lines
    /// starting with `#` or `%` are comments).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the file cannot be read; [`Error::BadInput`]
    /// naming the file and line of a malformed entry.
    pub fn read(path: &Path) -> Result<Graph> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| Error::Io { path: name.clone(), source })?;
        let reader = std::io::BufReader::new(file);
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mtx")) {
            Self::parse_matrix_market(reader, &name)
        } else {
            Self::parse_edge_list(reader, &name)
        }
    }

    /// Parses an edge list (see [`Graph::read`]); `name` names the source in errors.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] with the line of the first malformed entry.
    pub fn parse_edge_list(reader: impl BufRead, name: &str) -> Result<Graph> {
        let mut edges = Vec::new();
        let mut max = 0u64;
        for (i, line) in reader.lines().enumerate() {
            let line = line.map_err(|source| Error::Io { path: name.to_owned(), source })?;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('%') {
                continue;
            }
            let bad = |reason: &str| Error::BadInput {
                source_name: name.to_owned(),
                line: Some(i + 1),
                reason: reason.to_owned(),
            };
            let mut words = line.split_whitespace();
            let mut id = || -> Result<u32> {
                let w = words.next().ok_or_else(|| bad("expected two node numbers `FROM TO`"))?;
                w.parse::<u32>().map_err(|_| bad(&format!("`{w}` is not a node number (0 to {})", u32::MAX - 1)))
            };
            let (f, t) = (id()?, id()?);
            if f == u32::MAX || t == u32::MAX {
                return Err(bad(&format!("node numbers go up to {}", u32::MAX - 1)));
            }
            max = max.max(f as u64).max(t as u64);
            edges.push((f, t));
        }
        if edges.is_empty() {
            return Err(Error::BadInput { source_name: name.to_owned(), line: None, reason: "no edges".into() });
        }
        Graph::from_edges(max as usize + 1, &edges)
    }

    /// Parses a Matrix Market coordinate file (see [`Graph::read`]).
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for a missing or unsupported header, a bad size
    /// line, an entry outside the matrix, or fewer entries than announced.
    pub fn parse_matrix_market(reader: impl BufRead, name: &str) -> Result<Graph> {
        let bad =
            |line: usize, reason: String| Error::BadInput { source_name: name.to_owned(), line: Some(line), reason };
        let mut lines = reader.lines().enumerate();
        let (_, header) = lines.next().ok_or_else(|| bad(1, "empty file; expected a %%MatrixMarket header".into()))?;
        let header = header.map_err(|source| Error::Io { path: name.to_owned(), source })?.to_ascii_lowercase();
        let words: Vec<&str> = header.split_whitespace().collect();
        if words.len() < 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" || words[2] != "coordinate" {
            return Err(bad(1, "expected `%%MatrixMarket matrix coordinate FIELD SYMMETRY`".into()));
        }
        let values = match words[3] {
            "pattern" => 0,
            "real" | "integer" | "double" => 1,
            "complex" => 2,
            other => return Err(bad(1, format!("field `{other}`; expected pattern, real, integer or complex"))),
        };
        let symmetric = match words[4] {
            "general" => false,
            "symmetric" | "skew-symmetric" | "hermitian" => true,
            other => {
                return Err(bad(
                    1,
                    format!("symmetry `{other}`; expected general, symmetric, skew-symmetric or hermitian"),
                ));
            }
        };
        let mut size: Option<(usize, usize, usize)> = None;
        let mut edges = Vec::new();
        let mut entries = 0usize;
        for (i, line) in lines {
            let line = line.map_err(|source| Error::Io { path: name.to_owned(), source })?;
            let line = line.trim();
            if line.is_empty() || line.starts_with('%') {
                continue;
            }
            let nums: Vec<&str> = line.split_whitespace().collect();
            let Some((rows, cols, nnz)) = size else {
                let parse = |w: Option<&&str>| w.and_then(|w| w.parse::<usize>().ok());
                match (parse(nums.first()), parse(nums.get(1)), parse(nums.get(2))) {
                    (Some(r), Some(c), Some(z)) if r.max(c) >= 1 && r.max(c) < u32::MAX as usize => {
                        size = Some((r, c, z));
                        edges.reserve(z.min(1 << 28) * if symmetric { 2 } else { 1 });
                    }
                    _ => return Err(bad(i + 1, "expected the size line `ROWS COLS ENTRIES`, below 2^32 nodes".into())),
                }
                continue;
            };
            if nums.len() != 2 + values {
                return Err(bad(i + 1, format!("expected {} numbers per entry, got {}", 2 + values, nums.len())));
            }
            let (r, c) = match (nums[0].parse::<usize>(), nums[1].parse::<usize>()) {
                (Ok(r), Ok(c)) if (1..=rows).contains(&r) && (1..=cols).contains(&c) => (r - 1, c - 1),
                _ => return Err(bad(i + 1, format!("entry `{line}` is not inside the {rows} x {cols} matrix"))),
            };
            entries += 1;
            if entries > nnz {
                return Err(bad(i + 1, format!("more entries than the {nnz} the size line announced")));
            }
            edges.push((r as u32, c as u32));
            if symmetric && r != c {
                edges.push((c as u32, r as u32));
            }
        }
        let (rows, cols, nnz) = size.ok_or_else(|| bad(1, "no size line".into()))?;
        if entries < nnz {
            return Err(Error::BadInput {
                source_name: name.to_owned(),
                line: None,
                reason: format!("the size line announced {nnz} entries but the file has fewer"),
            });
        }
        Graph::from_edges(rows.max(cols), &edges)
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.out_degree.len()
    }

    /// Number of edges.
    pub fn edges(&self) -> usize {
        self.in_nbrs.len()
    }

    /// Offsets: node `t`'s in-neighbours are `in_nbrs[in_begin[t]..in_begin[t + 1]]`.
    pub fn in_begin(&self) -> &[u64] {
        &self.in_begin
    }

    /// All in-neighbour lists, node 0's first.
    pub fn in_nbrs(&self) -> &[u32] {
        &self.in_nbrs
    }

    /// The in-neighbours of `t`.
    ///
    /// # Panics
    ///
    /// If `t >= nodes()`.
    pub fn in_neighbours(&self, t: usize) -> &[u32] {
        &self.in_nbrs[self.in_begin[t] as usize..self.in_begin[t + 1] as usize]
    }

    /// Each node's out-degree.
    pub fn out_degree(&self) -> &[u32] {
        &self.out_degree
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmat_graphs_have_the_asked_size_and_are_deterministic() {
        let g = Graph::rmat(10, 8, 1).unwrap();
        assert_eq!((g.nodes(), g.edges()), (1024, 8192));
        assert_eq!(g, Graph::rmat(10, 8, 1).unwrap());
        assert_ne!(g, Graph::rmat(10, 8, 2).unwrap());
        let out: u64 = g.out_degree().iter().map(|&d| d as u64).sum();
        assert_eq!(out, 8192);
        // Power law: the busiest node has far more than the average in-degree.
        let most = (0..g.nodes()).map(|t| g.in_neighbours(t).len()).max().unwrap();
        assert!(most > 8 * 8, "max in-degree {most}");
        for bad in [(0, 8), (32, 8), (10, 0), (31, 16)] {
            assert!(Graph::rmat(bad.0, bad.1, 0).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn matrix_market_files_are_edges_and_bad_ones_name_the_line() {
        let mm = "%%MatrixMarket matrix coordinate pattern symmetric\n% c\n3 3 2\n2 1\n3 3\n";
        let g = Graph::parse_matrix_market(mm.as_bytes(), "m.mtx").unwrap();
        assert_eq!(g, Graph::from_edges(3, &[(1, 0), (0, 1), (2, 2)]).unwrap());
        let general = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 0.5\n";
        assert_eq!(Graph::parse_matrix_market(general.as_bytes(), "g").unwrap().in_neighbours(1), &[0]);
        for (text, needle) in [
            ("", "empty file"),
            ("%%MatrixMarket matrix array real general\n", "coordinate"),
            ("%%MatrixMarket matrix coordinate real general\nx y z\n", "line 2"),
            ("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n", "not inside the 2 x 2"),
            ("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1\n", "expected 3 numbers"),
            ("%%MatrixMarket matrix coordinate pattern general\n2 2 3\n1 1\n", "announced 3 entries"),
            ("%%MatrixMarket matrix coordinate pattern funny\n", "symmetry `funny`"),
        ] {
            let e = Graph::parse_matrix_market(text.as_bytes(), "f.mtx").unwrap_err().to_string();
            assert!(e.contains(needle) && e.starts_with("f.mtx"), "{e}");
        }
    }

    #[test]
    fn edge_lists_reject_garbage_with_the_line_number() {
        for (text, needle) in [
            ("0 1\n1 x\n", "line 2: `x` is not a node number"),
            ("0\n", "line 1: expected two node numbers"),
            ("# only comments\n", "no edges"),
            ("0 -3\n", "`-3` is not a node number"),
        ] {
            let e = Graph::parse_edge_list(text.as_bytes(), "e.txt").unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
        assert!(Graph::from_edges(2, &[(0, 2)]).unwrap_err().to_string().contains("outside 0..2"));
        assert!(Graph::from_edges(0, &[]).is_err());
        let e = Graph::read(Path::new("/nonexistent/graph.txt")).unwrap_err().to_string();
        assert!(e.starts_with("cannot read /nonexistent/graph.txt"), "{e}");
    }
}
