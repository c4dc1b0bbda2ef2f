//! Locality figures of a placement and the cost model over the distances.
//!
//! For a set of sampled accesses whose page homes are known (measured by the
//! kernel, or given by a scheme), the figures are:
//!
//! - the **local fraction**: accesses whose page is on the accessing
//!   thread's node, over all attributed accesses;
//! - the **per-node load**: accesses served by each node's memory
//!   controller, and its **imbalance**, the largest load over the mean load
//!   of all the machine's nodes (1.0 is perfectly even; `n` on `n` nodes is
//!   everything on one node);
//! - the **modelled cost**, in units of one local access:
//!
//!   ```text
//!   cost = sum over accesses of distance(thread's node, page's node) / 10
//!        + penalty * sum over nodes of max(0, load(node) - mean load)
//!   ```
//!
//!   The first term is the NUMA latency of each access (the distance matrix
//!   is the latency ratio, as the papers' NUMA factors are). The second
//!   models a congested controller: an access beyond its controller's fair
//!   share waits, on average, `penalty` local-access times more (default
//!   [`CostModel::DEFAULT_IMBALANCE_PENALTY`] = 1.0: it queues behind one
//!   other). With everything on one of `n` nodes the penalty adds
//!   `(1 - 1/n)` per access; with perfectly even loads it adds nothing.
//!
//! Counts are of sampled accesses; each stands for the profile's sampling
//! period of real ones, so costs compare between rows of one profile (or of
//! profiles sampled alike), which is how the report uses them.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::machine::Machine;
use crate::profile::Profile;

/// The cost model's one parameter.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Extra cost, in local-access units, of each access beyond its memory
    /// controller's fair share (the machine's mean load).
    pub imbalance_penalty: f64,
}

impl CostModel {
    /// One local-access time per excess access.
    pub const DEFAULT_IMBALANCE_PENALTY: f64 = 1.0;
}

impl Default for CostModel {
    fn default() -> CostModel {
        CostModel { imbalance_penalty: CostModel::DEFAULT_IMBALANCE_PENALTY }
    }
}

/// Where a placement's sampled accesses landed, and what that costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalityFigures {
    /// Accesses counted (attributed to a page node).
    pub accesses: u64,
    /// Accesses left out because their page's node was unknown.
    pub unattributed: u64,
    /// Accesses whose page was on the accessing thread's node.
    pub local: u64,
    /// `local / accesses`.
    pub local_fraction: f64,
    /// Accesses served by each node's memory.
    pub node_load: Vec<u64>,
    /// Largest node load over the mean of all nodes.
    pub imbalance: f64,
    /// The distance term of the cost.
    pub distance_cost: f64,
    /// The imbalance term of the cost.
    pub imbalance_cost: f64,
    /// `distance_cost + imbalance_cost`, in local-access units.
    pub cost: f64,
    /// Pages moved during the run (migration), 0 for static placements.
    pub pages_moved: u64,
}

impl LocalityFigures {
    /// The cost per counted access (1.0: all local and perfectly even).
    pub fn cost_per_access(&self) -> f64 {
        self.cost / self.accesses as f64
    }

    /// This cost over `base`'s, both per counted access.
    pub fn relative_cost(&self, base: &LocalityFigures) -> f64 {
        self.cost_per_access() / base.cost_per_access()
    }
}

impl fmt::Display for LocalityFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "local {:.3}, imbalance {:.2}, cost {:.3}/access ({} accesses",
            self.local_fraction,
            self.imbalance,
            self.cost_per_access(),
            self.accesses
        )?;
        if self.unattributed > 0 {
            write!(f, ", {} unattributed", self.unattributed)?;
        }
        if self.pages_moved > 0 {
            write!(f, ", {} pages moved", self.pages_moved)?;
        }
        write!(f, ")")
    }
}

/// Counts accesses into local/remote, per-node load and distance cost.
#[derive(Debug)]
pub(crate) struct Tally<'m> {
    machine: &'m Machine,
    local: u64,
    unattributed: u64,
    load: Vec<u64>,
    distance: u64,
    pub(crate) pages_moved: u64,
}

impl<'m> Tally<'m> {
    pub(crate) fn new(machine: &'m Machine) -> Tally<'m> {
        Tally { machine, local: 0, unattributed: 0, load: vec![0; machine.nodes()], distance: 0, pages_moved: 0 }
    }

    /// One access by a thread on `node` to a page on `home` (both valid nodes).
    #[inline]
    pub(crate) fn add(&mut self, node: u16, home: u16) {
        let (node, home) = (usize::from(node), usize::from(home));
        self.local += u64::from(node == home);
        self.load[home] += 1;
        self.distance += u64::from(self.machine.matrix()[node * self.machine.nodes() + home]);
    }

    pub(crate) fn skip(&mut self) {
        self.unattributed += 1;
    }

    pub(crate) fn finish(self, model: &CostModel, app: &str) -> Result<LocalityFigures> {
        let accesses: u64 = self.load.iter().sum();
        if accesses == 0 {
            return Err(Error::EmptyProfile { app: app.to_owned() });
        }
        let mean = accesses as f64 / self.load.len() as f64;
        let max = self.load.iter().copied().max().unwrap_or(0) as f64;
        let excess: f64 = self.load.iter().map(|&l| (l as f64 - mean).max(0.0)).sum();
        let distance_cost = self.distance as f64 / f64::from(crate::machine::LOCAL_DISTANCE);
        let imbalance_cost = model.imbalance_penalty * excess;
        Ok(LocalityFigures {
            accesses,
            unattributed: self.unattributed,
            local: self.local,
            local_fraction: self.local as f64 / accesses as f64,
            node_load: self.load,
            imbalance: max / mean,
            distance_cost,
            imbalance_cost,
            cost: distance_cost + imbalance_cost,
            pages_moved: self.pages_moved,
        })
    }
}

impl Profile {
    /// The measured figures: each access counted at the node the kernel said
    /// held its page (accesses without one are counted as unattributed).
    ///
    /// # Errors
    ///
    /// [`Error::EmptyProfile`] when no access is attributed.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_locality::{PageAccess, CostModel, Profile, ProfileHeader};
    ///
    /// let h = ProfileHeader::new("2x1".parse()?, "demo", "interleave", 2);
    /// let p = Profile::new(h, vec![
    ///     PageAccess::read(1, 0, 0, 0).at_home(0),  // local
    ///     PageAccess::read(2, 0, 0, 1).at_home(1),  // remote: distance 20
    ///     PageAccess::read(2, 1, 1, 2).at_home(1),  // local
    ///     PageAccess::read(3, 1, 1, 3),             // never attributed
    /// ])?;
    /// let f = p.measured(&CostModel::default())?;
    /// assert_eq!((f.accesses, f.local, f.unattributed), (3, 2, 1));
    /// assert_eq!(f.node_load, [1, 2]);
    /// assert_eq!(f.imbalance, 2.0 / 1.5);
    /// // 1 + 2 + 1 for the distances, 0.5 for node 1's excess over the mean.
    /// assert_eq!(f.cost, 4.5);
    /// # Ok::<(), skelaff_locality::Error>(())
    /// ```
    pub fn measured(&self, model: &CostModel) -> Result<LocalityFigures> {
        let mut t = Tally::new(self.machine());
        for a in self.accesses() {
            match a.home {
                Some(h) => t.add(a.node, h),
                None => t.skip(),
            }
        }
        t.finish(model, &self.header().app)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_on_one_node_of_four() {
        let m: Machine = "4x1".parse().unwrap();
        let mut t = Tally::new(&m);
        for node in 0..4u16 {
            for _ in 0..10 {
                t.add(node, 0);
            }
        }
        let f = t.finish(&CostModel::default(), "x").unwrap();
        assert_eq!((f.local, f.accesses, f.local_fraction), (10, 40, 0.25));
        assert_eq!(f.node_load, [40, 0, 0, 0]);
        assert_eq!(f.imbalance, 4.0);
        // 10 local (1.0) + 30 remote (2.0); node 0 is 30 over the mean of 10.
        assert_eq!((f.distance_cost, f.imbalance_cost, f.cost), (70.0, 30.0, 100.0));
        assert_eq!(f.cost_per_access(), 2.5);
        let none = CostModel { imbalance_penalty: 0.0 };
        let mut t = Tally::new(&m);
        t.add(1, 1);
        assert_eq!(t.finish(&none, "x").unwrap().cost, 1.0);
    }

    #[test]
    fn distances_weigh_remote_accesses() {
        let m: Machine = "numa32".parse().unwrap();
        let mut t = Tally::new(&m);
        t.add(0, 2); // diagonal: 3.6
        t.add(1, 2); // neighbour: 1.4
        t.add(2, 1); // neighbour: 1.4
        t.add(3, 3); // local
        let f = t.finish(&CostModel::default(), "x").unwrap();
        assert!((f.distance_cost - 7.4).abs() < 1e-12, "{}", f.distance_cost);
        // Loads [0, 1, 2, 1], mean 1: node 2 is one over.
        assert_eq!((f.imbalance, f.imbalance_cost), (2.0, 1.0));
    }

    #[test]
    fn no_attributed_access_is_an_error() {
        let m: Machine = "2x1".parse().unwrap();
        let mut t = Tally::new(&m);
        t.skip();
        let e = t.finish(&CostModel::default(), "vacation").unwrap_err().to_string();
        assert!(e.starts_with("the profile of vacation has no sampled accesses"), "{e}");
    }
}
