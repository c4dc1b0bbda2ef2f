//! The NUCA study's placement schemes (Sachdev et al.), computed from a
//! profile for any machine.
//!
//! - **first touch**: a page lives on the node of the first sampled access
//!   to it. (The profile sees sampled transactional accesses only; the
//!   kernel's real first touch is often an initialisation by the main
//!   thread, which the measured first-touch row shows.)
//! - **migration**: first touch, then at the end of every epoch the
//!   [`MigrationRule::pages_per_epoch`] hottest misplaced pages move to
//!   their dominant accessor's node. The rule, precisely: within an epoch,
//!   count each page's sampled accesses per node; a page is *misplaced* when
//!   its home's count is below the largest count; the misplaced pages are
//!   ranked by their accesses in the epoch (ties: lower page number first),
//!   and the first `pages_per_epoch` move to the node with the largest count
//!   (ties: lowest node number). Accesses are charged to the home the page
//!   had when they happened. The study moves ten pages every 10 million
//!   cycles; the default here is ten pages every 10 ms of the profile's
//!   clock ([`Epoch::Time`]) — 10 million cycles at the study's 1 GHz
//!   order of clock, and the clock a background migration thread uses.
//!   [`Epoch::Samples`] cuts epochs by sampled accesses instead, which does
//!   not depend on how fast the (emulated) machine ran.
//! - **Oracle_High**: from the whole profile (the study's first pass), each
//!   page on the node that accesses it most (ties: lowest node number).
//! - **Oracle_COG**: each page at the centre of gravity of its accessors:
//!   the node `h` that minimises `sum over nodes m of count(m) * distance(m,
//!   h)` (ties: lowest node number). On uniform distances it is
//!   Oracle_High; on NUMA16's ladder and NUMA32's ring it can pick a node in
//!   the middle of the sharers.
//! - **Ideal**: every access local; the bound, not a placement.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::cost::{CostModel, LocalityFigures, Tally};
use crate::error::{Error, Result};
use crate::machine::Machine;
use crate::profile::Profile;

/// The NUCA study's schemes, by the names users type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    /// Each page on the node of its first sampled access.
    FirstTouch,
    /// First touch, plus the hottest misplaced pages moved every epoch.
    Migration,
    /// Each page on its dominant accessor's node.
    OracleHigh,
    /// Each page at the centre of gravity of its accessors.
    OracleCog,
    /// Every access local.
    Ideal,
}

skelaff_numa_alloc::enum_names! {
    Scheme {
        FirstTouch => "first-touch",
        Migration => "migration",
        OracleHigh => "oracle-high",
        OracleCog => "oracle-cog",
        Ideal => "ideal",
    }
    parse: Error = unknown_scheme;
}

fn unknown_scheme(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "scheme",
        given: given.to_owned(),
        allowed: Scheme::VARIANTS,
    })
}

impl Scheme {
    /// Every scheme, in the study's order.
    pub fn all() -> impl Iterator<Item = Scheme> {
        [Scheme::FirstTouch, Scheme::Migration, Scheme::OracleHigh, Scheme::OracleCog, Scheme::Ideal].into_iter()
    }
}

/// How migration epochs are cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Epoch {
    /// Every `ns` nanoseconds of the profile's clock, from its first access.
    Time {
        /// The epoch's length.
        ns: u64,
    },
    /// Every `count` sampled accesses.
    Samples {
        /// Sampled accesses per epoch.
        count: u64,
    },
}

/// The migration scheme's rule (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrationRule {
    /// Pages moved at the end of each epoch, at most.
    pub pages_per_epoch: usize,
    /// How epochs are cut.
    pub epoch: Epoch,
}

impl Default for MigrationRule {
    /// Ten pages every 10 ms.
    fn default() -> MigrationRule {
        MigrationRule { pages_per_epoch: 10, epoch: Epoch::Time { ns: 10_000_000 } }
    }
}

/// Sampled accesses per node of each page.
pub(crate) fn page_counts(profile: &Profile) -> HashMap<u64, Vec<u64>> {
    let n = profile.machine().nodes();
    let mut counts: HashMap<u64, Vec<u64>> = HashMap::new();
    for a in profile.accesses() {
        counts.entry(a.page).or_insert_with(|| vec![0; n])[usize::from(a.node)] += 1;
    }
    counts
}

/// The node with the most accesses (ties: lowest number).
pub(crate) fn dominant(counts: &[u64]) -> u16 {
    let mut best = 0;
    for (i, &c) in counts.iter().enumerate() {
        if c > counts[best] {
            best = i;
        }
    }
    best as u16
}

/// The node minimising the distance-weighted accesses (ties: lowest number).
pub(crate) fn centre_of_gravity(machine: &Machine, counts: &[u64]) -> u16 {
    let n = machine.nodes();
    let d = machine.matrix();
    let cost = |h: usize| counts.iter().enumerate().map(|(m, &c)| c * u64::from(d[m * n + h])).sum::<u64>();
    let mut best = (0, cost(0));
    for h in 1..n {
        let c = cost(h);
        if c < best.1 {
            best = (h, c);
        }
    }
    best.0 as u16
}

/// Every sampled page's home under a static scheme.
pub(crate) fn static_homes(profile: &Profile, scheme: Scheme) -> Result<HashMap<u64, u16>> {
    match scheme {
        Scheme::FirstTouch => {
            let mut homes = HashMap::new();
            for a in profile.accesses() {
                homes.entry(a.page).or_insert(a.node);
            }
            Ok(homes)
        }
        Scheme::OracleHigh => Ok(page_counts(profile).into_iter().map(|(p, c)| (p, dominant(&c))).collect()),
        Scheme::OracleCog => {
            let m = profile.machine();
            Ok(page_counts(profile).into_iter().map(|(p, c)| (p, centre_of_gravity(m, &c))).collect())
        }
        Scheme::Migration => Err(Error::NoPlan {
            scheme: scheme.into(),
            reason: "its pages move during the run; first-touch, oracle-high and oracle-cog have one",
        }),
        Scheme::Ideal => Err(Error::NoPlan {
            scheme: scheme.into(),
            reason: "it is the bound where every access is local; first-touch, oracle-high and oracle-cog have one",
        }),
    }
}

/// Runs the migration rule over the profile, counting into `tally`.
fn migrate(profile: &Profile, rule: &MigrationRule, tally: &mut Tally<'_>) {
    let n = profile.machine().nodes();
    let accesses = profile.accesses();
    let Some(t0) = accesses.first().map(|a| a.time_ns) else { return };
    let epoch_of = |i: usize, t: u64| match rule.epoch {
        Epoch::Time { ns } => (t - t0) / ns.max(1),
        Epoch::Samples { count } => i as u64 / count.max(1),
    };
    let mut homes: HashMap<u64, u16> = HashMap::new();
    let mut counts: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut epoch = 0;
    for (i, a) in accesses.iter().enumerate() {
        let e = epoch_of(i, a.time_ns);
        if e != epoch {
            tally.pages_moved += end_epoch(&mut homes, &mut counts, rule.pages_per_epoch);
            epoch = e;
        }
        let home = *homes.entry(a.page).or_insert(a.node);
        tally.add(a.node, home);
        counts.entry(a.page).or_insert_with(|| vec![0; n])[usize::from(a.node)] += 1;
    }
}

/// The migration rule's choice at the end of an epoch: from each page's
/// per-node counts in the epoch and its current home, the up to `pages`
/// hottest misplaced pages and the node each moves to (see the module docs).
/// Pages whose home is unknown (`None`) are not moved.
pub(crate) fn choose_moves(
    counts: &HashMap<u64, Vec<u64>>,
    mut home: impl FnMut(u64) -> Option<u16>,
    pages: usize,
) -> Vec<(u64, u16)> {
    let mut misplaced: Vec<(u64, u64, u16)> = counts
        .iter()
        .filter_map(|(&page, c)| {
            let home = usize::from(home(page)?);
            let best = dominant(c);
            (c.get(home).copied().unwrap_or(0) < c[usize::from(best)]).then(|| (c.iter().sum::<u64>(), page, best))
        })
        .collect();
    misplaced.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    misplaced.truncate(pages);
    misplaced.into_iter().map(|(_, page, node)| (page, node)).collect()
}

/// Moves the hottest misplaced pages of the epoch; returns how many moved.
fn end_epoch(homes: &mut HashMap<u64, u16>, counts: &mut HashMap<u64, Vec<u64>>, pages: usize) -> u64 {
    let moves = choose_moves(counts, |p| homes.get(&p).copied(), pages);
    for &(page, node) in &moves {
        homes.insert(page, node);
    }
    counts.clear();
    moves.len() as u64
}

impl Profile {
    /// The figures `scheme` would give this profile's accesses.
    ///
    /// # Errors
    ///
    /// [`Error::EmptyProfile`] when the profile has no access.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_locality::{PageAccess, CostModel, MigrationRule, Profile, ProfileHeader, Scheme};
    ///
    /// // Thread 0 (node 0) touches page 1 first; thread 1 (node 1) then reads it three times.
    /// let h = ProfileHeader::new("2x1".parse()?, "demo", "first-touch", 2);
    /// let p = Profile::new(h, vec![
    ///     PageAccess::write(1, 0, 0, 0),
    ///     PageAccess::read(1, 1, 1, 1),
    ///     PageAccess::read(1, 1, 1, 2),
    ///     PageAccess::read(1, 1, 1, 3),
    /// ])?;
    /// let (rule, model) = (MigrationRule::default(), CostModel::default());
    /// assert_eq!(p.scheme(Scheme::FirstTouch, &rule, &model)?.local_fraction, 0.25);
    /// assert_eq!(p.scheme(Scheme::OracleHigh, &rule, &model)?.local_fraction, 0.75);
    /// assert_eq!(p.scheme(Scheme::Ideal, &rule, &model)?.local_fraction, 1.0);
    /// # Ok::<(), skelaff_locality::Error>(())
    /// ```
    pub fn scheme(&self, scheme: Scheme, rule: &MigrationRule, model: &CostModel) -> Result<LocalityFigures> {
        let mut t = Tally::new(self.machine());
        match scheme {
            Scheme::Ideal => self.accesses().iter().for_each(|a| t.add(a.node, a.node)),
            Scheme::Migration => migrate(self, rule, &mut t),
            _ => {
                let homes = static_homes(self, scheme)?;
                self.accesses().iter().for_each(|a| t.add(a.node, homes[&a.page]));
            }
        }
        t.finish(model, &self.header().app)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{PageAccess, ProfileHeader};

    fn profile(machine: &str, threads: u16, accesses: Vec<PageAccess>) -> Profile {
        Profile::new(ProfileHeader::new(machine.parse().unwrap(), "t", "x", threads), accesses).unwrap()
    }

    fn figures(p: &Profile, s: Scheme) -> LocalityFigures {
        p.scheme(s, &MigrationRule::default(), &CostModel::default()).unwrap()
    }

    #[test]
    fn names_round_trip_and_unknown_ones_list_the_allowed() {
        for s in Scheme::all() {
            assert_eq!(s.to_string().parse::<Scheme>().unwrap(), s);
        }
        assert_eq!(Scheme::OracleCog.to_string(), "oracle-cog");
        let e = "oracle".parse::<Scheme>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown scheme `oracle`; expected one of: first-touch, migration, oracle-high, oracle-cog, ideal"
        );
    }

    #[test]
    fn dominant_and_centre_of_gravity_by_hand() {
        assert_eq!(dominant(&[3, 5, 5, 1]), 1); // tie between 1 and 2: the lower
        assert_eq!(dominant(&[0, 0]), 0);
        let ring: Machine = "numa32".parse().unwrap();
        // Accesses from nodes 1 and 3 (opposite corners, 36 apart), 4 each:
        // homes 1 or 3 cost 4*10 + 4*36 = 184; homes 0 or 2 cost 8*14 = 112.
        assert_eq!(centre_of_gravity(&ring, &[0, 4, 0, 4]), 0);
        // Dominance says node 1 (5 > 4) but the COG still prefers a neighbour of both:
        // home 1: 50 + 144 = 194, home 0: 70 + 56 = 126.
        assert_eq!(dominant(&[0, 5, 0, 4]), 1);
        assert_eq!(centre_of_gravity(&ring, &[0, 5, 0, 4]), 0);
        // On uniform distances the COG is the dominant node.
        let flat: Machine = "4x1".parse().unwrap();
        assert_eq!(centre_of_gravity(&flat, &[0, 5, 0, 4]), 1);
        // NUMA16's ladder: accessors at nodes 0 and 7 (the far corners, 15 apart).
        let ladder: Machine = "numa16".parse().unwrap();
        // Home 0: 10a + 15b; a = 3, b = 2 -> 60; home 7: 45 + 20 = 65; home 3 (2 hops from
        // both): 12*5 = 60; home 1: 11*3 + 14*2 = 61; home 2: 33 + 28 = 61. Tie 0 and 3: 0.
        assert_eq!(centre_of_gravity(&ladder, &[3, 0, 0, 0, 0, 0, 0, 2]), 0);
        // a = b = 1: ends cost 25, middles 0->3 24 (12 + 12), 1 -> 11 + 14 = 25: node 3 wins.
        assert_eq!(centre_of_gravity(&ladder, &[1, 0, 0, 0, 0, 0, 0, 1]), 3);
    }

    #[test]
    fn schemes_on_a_hand_computed_trace() {
        // 2 nodes (10/20). Page 1: first touched by node 0, then read 3x by node 1.
        // Page 2: touched by node 1 only (2x). Page 3: node 0 once, node 1 once.
        let p = profile(
            "2x1",
            2,
            vec![
                PageAccess::write(1, 0, 0, 0),
                PageAccess::read(1, 1, 1, 1),
                PageAccess::read(2, 1, 1, 2),
                PageAccess::read(1, 1, 1, 3),
                PageAccess::write(3, 0, 0, 4),
                PageAccess::read(1, 1, 1, 5),
                PageAccess::read(3, 1, 1, 6),
                PageAccess::read(2, 1, 1, 7),
            ],
        );
        // First touch: homes 1->0, 2->1, 3->0. Local: a0, a2, a4, a7 = 4 of 8.
        let ft = figures(&p, Scheme::FirstTouch);
        assert_eq!((ft.local, ft.node_load.clone()), (4, vec![6, 2]));
        // Distance: 4 local (4.0) + 4 remote (8.0); excess: node 0 is 2 over the mean 4.
        assert_eq!((ft.distance_cost, ft.imbalance_cost), (12.0, 2.0));
        // Oracle_High: 1->1 (3 vs 1), 2->1, 3->0 (tie 1:1 -> lowest). Local: 3+2+1 = 6.
        let oh = figures(&p, Scheme::OracleHigh);
        assert_eq!((oh.local, oh.node_load.clone()), (6, vec![2, 6]));
        assert_eq!(oh.cost, 6.0 + 4.0 + 2.0);
        // COG on uniform distances = Oracle_High.
        assert_eq!(figures(&p, Scheme::OracleCog), oh);
        let ideal = figures(&p, Scheme::Ideal);
        assert_eq!((ideal.local_fraction, ideal.node_load.clone(), ideal.distance_cost), (1.0, vec![2, 6], 8.0));
        assert!(ideal.cost < oh.cost && oh.cost < ft.cost);
    }

    #[test]
    fn migration_moves_the_hottest_misplaced_pages_each_epoch() {
        // Epochs of 10 ns; one page moved per epoch.
        let rule = MigrationRule { pages_per_epoch: 1, epoch: Epoch::Time { ns: 10 } };
        let model = CostModel::default();
        let p = profile(
            "2x1",
            2,
            vec![
                // Epoch 0: pages 1 and 2 first-touched on node 0, then read by node 1
                // (page 1 three times, page 2 twice): both misplaced, page 1 hotter.
                PageAccess::write(1, 0, 0, 0),
                PageAccess::write(2, 0, 0, 1),
                PageAccess::read(1, 1, 1, 2),
                PageAccess::read(1, 1, 1, 3),
                PageAccess::read(1, 1, 1, 4),
                PageAccess::read(2, 1, 1, 5),
                PageAccess::read(2, 1, 1, 6),
                // Epoch 1: page 1 now local to node 1; page 2 still remote, moves at the end.
                PageAccess::read(1, 1, 1, 10),
                PageAccess::read(2, 1, 1, 11),
                // Epoch 3 (epoch 2 empty): both local.
                PageAccess::read(1, 1, 1, 30),
                PageAccess::read(2, 1, 1, 31),
            ],
        );
        let m = p.scheme(Scheme::Migration, &rule, &model).unwrap();
        // Local: a0, a1 (first touch), a7 (page 1 moved), a9, a10 = 5 of 11.
        assert_eq!((m.local, m.accesses, m.pages_moved), (5, 11, 2));
        // With two pages per epoch, both move after epoch 0: a7, a8 local too.
        let rule2 = MigrationRule { pages_per_epoch: 2, ..rule };
        let m2 = p.scheme(Scheme::Migration, &rule2, &model).unwrap();
        assert_eq!((m2.local, m2.pages_moved), (6, 2));
        // A page whose home ties for the most accesses stays: one write on node 0,
        // one read on node 1, in one epoch.
        let q = profile(
            "2x1",
            2,
            vec![PageAccess::write(5, 0, 0, 0), PageAccess::read(5, 1, 1, 1), PageAccess::read(5, 1, 1, 20)],
        );
        assert_eq!(q.scheme(Scheme::Migration, &rule, &model).unwrap().pages_moved, 0);
        // Sample-count epochs: 2 accesses each; page 5 misplaced in epoch 1 (two reads by node 1).
        let by_count = MigrationRule { pages_per_epoch: 1, epoch: Epoch::Samples { count: 2 } };
        let r = profile(
            "2x1",
            2,
            vec![
                PageAccess::write(5, 0, 0, 0),
                PageAccess::read(5, 0, 0, 1),
                PageAccess::read(5, 1, 1, 2),
                PageAccess::read(5, 1, 1, 3),
                PageAccess::read(5, 1, 1, 4),
            ],
        );
        let f = r.scheme(Scheme::Migration, &by_count, &model).unwrap();
        assert_eq!((f.pages_moved, f.local), (1, 3));
    }

    #[test]
    fn plans_exist_only_for_static_schemes() {
        let p = profile("2x1", 1, vec![PageAccess::read(1, 0, 0, 0)]);
        assert!(static_homes(&p, Scheme::OracleCog).is_ok());
        let e = static_homes(&p, Scheme::Ideal).unwrap_err().to_string();
        assert!(e.starts_with("the ideal scheme has no placement plan: it is the bound"), "{e}");
        assert!(static_homes(&p, Scheme::Migration).is_err());
    }
}
