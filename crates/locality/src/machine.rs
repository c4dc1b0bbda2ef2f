//! The machine a profile was recorded on: its nodes, the CPUs on each, and
//! the node distance matrix that turns remote accesses into cost.
//!
//! Distances follow the ACPI SLIT convention the kernel and hwloc use: 10 is
//! a local access, 15 costs one and a half times as much. The two machines
//! of the SkelAff paper (Góes et al., Table 1) are built in, with distance
//! matrices chosen so that their NUMA factors span the paper's intervals:
//!
//! - **NUMA16**: eight dual-core Opteron 875 sockets, two CPUs per node. The
//!   sockets are modelled as a 2 x 4 ladder of HyperTransport links (node `n`
//!   sits in column `n / 2`, row `n % 2`; the hop count between two nodes is
//!   their Manhattan distance on the ladder, 1 to 4). A node `h` hops away
//!   is at distance `round(10 * (1.1 + 0.4 * (h - 1) / 3))`: 11, 12, 14, 15,
//!   so the nearest remote node costs 1.1 and the farthest 1.5 — the paper's
//!   NUMA factor interval [1.1; 1.5].
//! - **NUMA32**: four eight-core Xeon X7560 sockets, eight CPUs per node. The
//!   paper gives only the interval [1.36; 3.6]. The sockets are modelled as a
//!   ring: neighbours (0-1, 1-2, 2-3, 3-0) are at distance 14 (SLIT distances
//!   are integers, so 1.36 becomes 1.4) and the two diagonals (0-2, 1-3) at
//!   36, so both ends of the interval occur.
//!
//! Any other shape `NODESxCPUS` gets qemu's and the kernel's default
//! distances: 10 local, 20 remote.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The distance of a local access (ACPI SLIT).
pub const LOCAL_DISTANCE: u32 = 10;

/// The largest distance a SLIT entry may hold.
pub const MAX_DISTANCE: u32 = 254;

/// The most nodes a machine may have (node numbers are stored in 16 bits,
/// and qemu and the kernel allow no more than 64 here).
pub const MAX_NODES: usize = 64;

/// The distance between two remote nodes when nothing says otherwise
/// (qemu without `-numa dist`, and the kernel without a SLIT).
pub const DEFAULT_REMOTE_DISTANCE: u32 = 20;

/// The SkelAff paper's machines, by the names users type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaperMachine {
    /// Eight nodes of two CPUs, NUMA factor 1.1-1.5.
    Numa16,
    /// Four nodes of eight CPUs, NUMA factor 1.36-3.6.
    Numa32,
}

skelaff_numa_alloc::enum_names! {
    PaperMachine {
        Numa16 => "numa16",
        Numa32 => "numa32",
    }
    parse: Error = unknown_paper_machine;
}

fn unknown_paper_machine(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "machine",
        given: given.to_owned(),
        allowed: MACHINE_NAMES,
    })
}

/// What [`Machine::from_str`] accepts.
const MACHINE_NAMES: &[&str] =
    &["numa16", "numa32", "numa32/4xCPUS (fewer CPUs per node)", "NODESxCPUS (e.g. 2x2, 4x1)"];

/// A machine's NUMA shape: nodes, CPUs per node and node distances.
///
/// Invariant (checked by [`Machine::new`] and on deserialisation): at least
/// one and at most [`MAX_NODES`] nodes; `distances` is `nodes x nodes`,
/// row-major, with [`LOCAL_DISTANCE`] on the diagonal and remote entries in
/// `LOCAL_DISTANCE + 1 ..= MAX_DISTANCE`.
///
/// # Examples
///
/// ```
/// use skelaff_locality::Machine;
///
/// let m: Machine = "numa16".parse()?;
/// assert_eq!((m.nodes(), m.total_cpus()), (8, 16));
/// assert_eq!(m.distance(0, 1), Some(11)); // one hop across the ladder
/// assert_eq!(m.distance(0, 7), Some(15)); // four hops: the far corner
/// assert_eq!(m.numa_factors(), (1.1, 1.5));
/// # Ok::<(), skelaff_locality::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "MachineFields", into = "MachineFields")]
pub struct Machine {
    name: String,
    cpus: Vec<u32>,
    distances: Vec<u32>,
}

/// The serialised form of a [`Machine`], validated on the way in.
#[derive(Serialize, Deserialize)]
struct MachineFields {
    name: String,
    cpus_per_node: Vec<u32>,
    distances: Vec<Vec<u32>>,
}

impl TryFrom<MachineFields> for Machine {
    type Error = Error;
    fn try_from(f: MachineFields) -> Result<Machine> {
        let n = f.distances.len();
        if let Some(row) = f.distances.iter().position(|r| r.len() != n) {
            return Err(Error::InvalidMachine {
                machine: f.name,
                reason: format!(
                    "distance row {row} has {} entries; a {n}-node matrix needs {n}",
                    f.distances[row].len()
                ),
            });
        }
        Machine::new(f.name, f.cpus_per_node, f.distances.concat())
    }
}

impl From<Machine> for MachineFields {
    fn from(m: Machine) -> MachineFields {
        let n = m.nodes();
        MachineFields {
            distances: m.distances.chunks(n).map(<[u32]>::to_vec).collect(),
            name: m.name,
            cpus_per_node: m.cpus,
        }
    }
}

impl Machine {
    /// A machine named `name` with `cpus_per_node[i]` CPUs on node `i` (0
    /// for a node with memory only) and the row-major `distances` matrix.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidMachine`] when there are no nodes or more than
    /// [`MAX_NODES`], the matrix is not `nodes x nodes`, a diagonal entry is
    /// not [`LOCAL_DISTANCE`], or a remote entry is not in
    /// `11 ..= MAX_DISTANCE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_locality::Machine;
    ///
    /// let m = Machine::new("pair", vec![1, 1], vec![10, 17, 17, 10])?;
    /// assert_eq!(m.factor(0, 1), Some(1.7));
    /// assert!(Machine::new("bad", vec![1, 1], vec![10, 17, 17]).is_err());
    /// # Ok::<(), skelaff_locality::Error>(())
    /// ```
    pub fn new(name: impl Into<String>, cpus_per_node: Vec<u32>, distances: Vec<u32>) -> Result<Machine> {
        let name = name.into();
        let n = cpus_per_node.len();
        let bad = |reason: String| Error::InvalidMachine { machine: name.clone(), reason };
        if n == 0 || n > MAX_NODES {
            return Err(bad(format!("it has {n} nodes; a machine has 1 to {MAX_NODES}")));
        }
        if distances.len() != n * n {
            return Err(bad(format!("{} distances for {n} nodes; expected {n} x {n} = {}", distances.len(), n * n)));
        }
        for i in 0..n {
            for j in 0..n {
                let d = distances[i * n + j];
                if i == j && d != LOCAL_DISTANCE {
                    return Err(bad(format!(
                        "distance {i}->{i} is {d}; a node's distance to itself is {LOCAL_DISTANCE}"
                    )));
                }
                if i != j && !(LOCAL_DISTANCE + 1..=MAX_DISTANCE).contains(&d) {
                    return Err(bad(format!(
                        "distance {i}->{j} is {d}; remote distances are {} to {MAX_DISTANCE}",
                        LOCAL_DISTANCE + 1
                    )));
                }
            }
        }
        Ok(Machine { name, cpus: cpus_per_node, distances })
    }

    /// `nodes` nodes of `cpus_per_node` CPUs with the default distances (10
    /// local, 20 remote), named `NODESxCPUS` — what qemu emulates without
    /// `-numa dist`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidMachine`] for zero nodes or more than [`MAX_NODES`].
    pub fn uniform(nodes: usize, cpus_per_node: u32) -> Result<Machine> {
        let distances =
            (0..nodes * nodes).map(|i| if i / nodes == i % nodes { LOCAL_DISTANCE } else { DEFAULT_REMOTE_DISTANCE });
        Machine::new(format!("{nodes}x{cpus_per_node}"), vec![cpus_per_node; nodes], distances.collect())
    }

    /// One of the SkelAff paper's machines (see the module docs for the
    /// distances).
    pub fn paper(which: PaperMachine) -> Machine {
        let (cpus, distances): (Vec<u32>, Vec<u32>) = match which {
            PaperMachine::Numa16 => {
                let hops = |a: usize, b: usize| (a / 2).abs_diff(b / 2) + (a % 2).abs_diff(b % 2);
                let dist = |h: usize| {
                    if h == 0 { LOCAL_DISTANCE } else { (10.0 * (1.1 + 0.4 * (h as f64 - 1.0) / 3.0)).round() as u32 }
                };
                (vec![2; 8], (0..64).map(|i| dist(hops(i / 8, i % 8))).collect())
            }
            PaperMachine::Numa32 => {
                let dist = |a: usize, b: usize| match a.abs_diff(b) {
                    0 => LOCAL_DISTANCE,
                    2 => 36,
                    _ => 14,
                };
                (vec![8; 4], (0..16).map(|i| dist(i / 4, i % 4)).collect())
            }
        };
        Machine { name: which.to_string(), cpus, distances }
    }

    /// The same distances with `cpus` CPUs on every node that has CPUs, named
    /// `NAME/NODESxCPUS` (a paper machine shrunk to what an emulator runs).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidMachine`] when `cpus` is zero.
    pub fn with_cpus_per_node(&self, cpus: u32) -> Result<Machine> {
        if cpus == 0 {
            return Err(Error::InvalidMachine {
                machine: self.name.clone(),
                reason: "0 CPUs per node; a shrunk machine keeps at least one".to_owned(),
            });
        }
        let base = self.name.split('/').next().unwrap_or(&self.name);
        Ok(Machine {
            name: format!("{base}/{}x{cpus}", self.nodes()),
            cpus: self.cpus.iter().map(|&c| if c == 0 { 0 } else { cpus }).collect(),
            distances: self.distances.clone(),
        })
    }

    /// The machine a [`Topology`](skelaff_numa_alloc::Topology) describes
    /// (from sysfs or hwloc): nodes `0..n` (they must be numbered
    /// contiguously), their CPUs and distances; without distances (one node,
    /// or none reported), the defaults (10/20).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidMachine`] when the node numbers have gaps or the
    /// reported distances break the SLIT rules.
    pub fn from_topology(name: impl Into<String>, topo: &skelaff_numa_alloc::Topology) -> Result<Machine> {
        let name = name.into();
        let nodes = topo.nodes();
        if let Some((i, n)) = nodes.iter().enumerate().find(|(i, n)| n.os_index != *i) {
            return Err(Error::InvalidMachine {
                machine: name,
                reason: format!("node {} is the {i}th node; locality figures need nodes numbered 0..n", n.os_index),
            });
        }
        let k = nodes.len();
        let cpus = nodes.iter().map(|n| n.cpus.len() as u32).collect();
        let distances = (0..k * k)
            .map(|i| {
                topo.distance(i / k, i % k).map(|d| d as u32).unwrap_or(if i / k == i % k {
                    LOCAL_DISTANCE
                } else {
                    DEFAULT_REMOTE_DISTANCE
                })
            })
            .collect();
        Machine::new(name, cpus, distances)
    }

    /// The machine's name (`numa16`, `4x1`, ...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The number of nodes.
    pub fn nodes(&self) -> usize {
        self.cpus.len()
    }

    /// CPUs on each node.
    pub fn cpus_per_node(&self) -> &[u32] {
        &self.cpus
    }

    /// All CPUs.
    pub fn total_cpus(&self) -> u32 {
        self.cpus.iter().sum()
    }

    /// The distance from a CPU on node `from` to memory on node `to`.
    pub fn distance(&self, from: usize, to: usize) -> Option<u32> {
        let n = self.nodes();
        (from < n && to < n).then(|| self.distances[from * n + to])
    }

    /// The distance as a cost factor (`distance / 10`: 1.0 is local).
    pub fn factor(&self, from: usize, to: usize) -> Option<f64> {
        self.distance(from, to).map(|d| f64::from(d) / f64::from(LOCAL_DISTANCE))
    }

    /// The smallest and largest remote factor (`(1.0, 1.0)` on one node).
    pub fn numa_factors(&self) -> (f64, f64) {
        let n = self.nodes();
        let remote = (0..n * n).filter(|i| i / n != i % n).map(|i| f64::from(self.distances[i]) / 10.0);
        remote
            .fold(None, |acc: Option<(f64, f64)>, f| Some(acc.map_or((f, f), |(lo, hi)| (lo.min(f), hi.max(f)))))
            .unwrap_or((1.0, 1.0))
    }

    /// Whether any remote distance differs from the default 20 (then qemu
    /// needs `-numa dist` to show it).
    pub fn has_custom_distances(&self) -> bool {
        let n = self.nodes();
        (0..n * n).any(|i| i / n != i % n && self.distances[i] != DEFAULT_REMOTE_DISTANCE)
    }

    /// Every pair `(from, to, distance)` with `from < to`: the `-numa
    /// dist,src=,dst=,val=` arguments of qemu for a symmetric matrix.
    pub fn remote_pairs(&self) -> impl Iterator<Item = (usize, usize, u32)> + '_ {
        let n = self.nodes();
        (0..n).flat_map(move |i| (i + 1..n).map(move |j| (i, j, self.distances[i * n + j])))
    }

    /// Whether the matrix is symmetric.
    pub fn is_symmetric(&self) -> bool {
        let n = self.nodes();
        (0..n).all(|i| (0..n).all(|j| self.distances[i * n + j] == self.distances[j * n + i]))
    }

    /// The row-major distance matrix.
    pub(crate) fn matrix(&self) -> &[u32] {
        &self.distances
    }
}

impl fmt::Display for Machine {
    /// The name, nodes x CPUs, and the factor range.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (lo, hi) = self.numa_factors();
        write!(f, "{} ({} nodes, {} CPUs, NUMA factor {lo:.2}-{hi:.2})", self.name, self.nodes(), self.total_cpus())
    }
}

/// `NODESxCPUS` as numbers, both at least 1.
fn parse_shape(s: &str) -> Option<(usize, u32)> {
    let (n, c) = s.split_once('x')?;
    let (n, c) = (n.parse::<usize>().ok()?, c.parse::<u32>().ok()?);
    (n > 0 && c > 0).then_some((n, c))
}

/// Parses `numa16`, `numa32`, a paper machine shrunk to fewer CPUs per node
/// (`numa32/4x2`: the same nodes and distances) or `NODESxCPUS` (uniform
/// 10/20 distances).
impl FromStr for Machine {
    type Err = Error;
    fn from_str(s: &str) -> Result<Machine> {
        let s = s.trim();
        if let Some((base, shape)) = s.split_once('/') {
            let m = Machine::paper(base.parse::<PaperMachine>()?);
            return match parse_shape(shape) {
                Some((n, c)) if n == m.nodes() => m.with_cpus_per_node(c),
                _ => Err(Error::InvalidMachine {
                    machine: s.to_owned(),
                    reason: format!("{base} shrunk keeps its {} nodes: write {base}/{}xCPUS", m.nodes(), m.nodes()),
                }),
            };
        }
        if let Ok(p) = s.parse::<PaperMachine>() {
            return Ok(Machine::paper(p));
        }
        match parse_shape(s) {
            Some((n, c)) => Machine::uniform(n, c),
            None => Err(unknown_paper_machine(s)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numa16_is_a_ladder_with_the_papers_factors() {
        let m = Machine::paper(PaperMachine::Numa16);
        assert!(m.is_symmetric());
        // Node 0 (column 0, row 0): 1 = across (1 hop), 2 = next column (1),
        // 3 = next column across (2), 4 (2), 5 (3), 6 (3), 7 (4).
        let row: Vec<u32> = (0..8).map(|j| m.distance(0, j).unwrap()).collect();
        assert_eq!(row, [10, 11, 11, 12, 12, 14, 14, 15]);
        assert_eq!(m.numa_factors(), (1.1, 1.5));
        assert_eq!(m.to_string(), "numa16 (8 nodes, 16 CPUs, NUMA factor 1.10-1.50)");
    }

    #[test]
    fn numa32_is_a_ring_with_long_diagonals() {
        let m: Machine = "numa32".parse().unwrap();
        let rows: Vec<Vec<u32>> = (0..4).map(|i| (0..4).map(|j| m.distance(i, j).unwrap()).collect()).collect();
        assert_eq!(rows, [[10, 14, 36, 14], [14, 10, 14, 36], [36, 14, 10, 14], [14, 36, 14, 10]]);
        assert_eq!(m.numa_factors(), (1.4, 3.6));
        assert_eq!(m.remote_pairs().count(), 6);
        let small = m.with_cpus_per_node(2).unwrap();
        assert_eq!((small.name(), small.total_cpus(), small.distance(0, 2)), ("numa32/4x2", 8, Some(36)));
        assert_eq!("numa32/4x2".parse::<Machine>().unwrap(), small);
        let e = "numa32/8x2".parse::<Machine>().unwrap_err().to_string();
        assert!(e.contains("numa32 shrunk keeps its 4 nodes: write numa32/4xCPUS"), "{e}");
        assert!("numa99/4x2".parse::<Machine>().is_err());
    }

    #[test]
    fn shapes_and_names_parse() {
        let m: Machine = "4x1".parse().unwrap();
        assert_eq!((m.name(), m.nodes(), m.distance(1, 3), m.has_custom_distances()), ("4x1", 4, Some(20), false));
        assert!(Machine::paper(PaperMachine::Numa16).has_custom_distances());
        let e = "numa64".parse::<Machine>().unwrap_err().to_string();
        assert!(e.starts_with("unknown machine `numa64`; expected one of: numa16, numa32, numa32/4xCPUS"), "{e}");
        for bad in ["0x2", "2x0", "x", "", "65x1"] {
            assert!(bad.parse::<Machine>().is_err(), "{bad}");
        }
        assert_eq!(m.distance(4, 0), None);
    }

    #[test]
    fn invalid_matrices_are_refused_with_reasons() {
        let e = Machine::new("m", vec![1, 1], vec![10, 9, 20, 10]).unwrap_err().to_string();
        assert!(e.contains("distance 0->1 is 9; remote distances are 11 to 254"), "{e}");
        let e = Machine::new("m", vec![1, 1], vec![12, 20, 20, 10]).unwrap_err().to_string();
        assert!(e.contains("distance 0->0 is 12"), "{e}");
        assert!(Machine::new("m", vec![], vec![]).unwrap_err().to_string().contains("0 nodes"));
    }

    #[test]
    fn serde_round_trip_validates() {
        let m = Machine::paper(PaperMachine::Numa32);
        let json = serde_json::to_string(&m).unwrap();
        assert!(json.contains("\"distances\":[[10,14,36,14]"), "{json}");
        assert_eq!(serde_json::from_str::<Machine>(&json).unwrap(), m);
        let bad = json.replace("[10,14,36,14]", "[10,14,36]");
        let e = serde_json::from_str::<Machine>(&bad).unwrap_err().to_string();
        assert!(e.contains("distance row 0 has 3 entries"), "{e}");
    }
}
