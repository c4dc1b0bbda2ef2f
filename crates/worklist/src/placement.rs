//! Where workers and their helpers run: the one owner of that decision.
//!
//! A [`ThreadPlacement`] is a strategy the caller passes to the builder (as
//! rayon's `ThreadPoolBuilder::spawn_handler` takes the caller's way of
//! starting threads): given the machine and the number of workers, it
//! returns each worker's CPU and the CPU its helper thread would use, with
//! how good that CPU is for a helper ([`HelperSite`]). The skeleton then
//! pins the threads there, and keeps or drops each helper as the
//! [`Helpers`](crate::Helpers) setting asks: `auto` keeps only helpers on a
//! [`HelperSite::Dedicated`] CPU (the paper's rule: an idle CPU sharing the
//! worker's last-level cache), `on` keeps every one, `off` none.
//!
//! The default, [`TopologyPlacement`], lays workers out in the topology's
//! scatter or compact order and pairs each with a helper CPU: an unused
//! CPU of the worker's last-level cache (another core first, then a sibling
//! hardware thread), else the least used other CPU of that cache, else the
//! least used CPU elsewhere, else the worker's own.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use skelaff_numa_alloc::{Mapping, Topology};

use crate::error::Error;

/// How worker threads are placed on CPUs by the default
/// [`TopologyPlacement`].
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThreadMapping {
    /// Spread over nodes, then caches, then cores; pinned (the default).
    #[default]
    Scatter,
    /// Packed onto as few cores/caches/nodes as possible; pinned.
    Compact,
    /// Not pinned: the OS scheduler decides and may migrate threads.
    None,
}

skelaff_numa_alloc::enum_names! {
    ThreadMapping {
        Scatter => "scatter",
        Compact => "compact",
        None => "none",
    }
    parse: Error = unknown_mapping;
}

fn unknown_mapping(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "thread mapping",
        given: given.to_owned(),
        allowed: ThreadMapping::VARIANTS,
    })
}

/// How good a helper's CPU is for prefetching into its worker's cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HelperSite {
    /// A CPU no other thread uses that shares the worker's last-level
    /// cache: the placement the paper asks for.
    Dedicated,
    /// A CPU of the worker's last-level cache that another worker or
    /// helper uses too.
    SharedCpu,
    /// A CPU that does not share the worker's last-level cache (the
    /// helper's loads cannot land in the worker's cache).
    OtherCache,
    /// The worker's own CPU (the only one there is).
    WorkerCpu,
    /// Not pinned: the OS places it.
    Unpinned,
}

skelaff_numa_alloc::enum_names! {
    HelperSite {
        Dedicated => "dedicated",
        SharedCpu => "shared-cpu",
        OtherCache => "other-cache",
        WorkerCpu => "worker-cpu",
        Unpinned => "unpinned",
    }
}

/// Where the skeleton placed a worker's helper thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelperPlace {
    /// The CPU the helper is pinned to (`None`: not pinned).
    pub cpu: Option<usize>,
    /// How good that CPU is for a helper.
    pub site: HelperSite,
}

/// Where one worker runs, and where its helper would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadPlace {
    /// The worker's CPU (`None`: not pinned).
    pub cpu: Option<usize>,
    /// The NUMA node of that CPU.
    pub node: Option<usize>,
    /// Where its helper would run (`None`: nowhere).
    pub helper: Option<HelperPlace>,
}

/// A placement's answer: one [`ThreadPlace`] per worker, worker 0 first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ThreadLayout {
    /// The workers' places.
    pub workers: Vec<ThreadPlace>,
    /// More workers than CPUs: some share a CPU.
    pub oversubscribed: bool,
}

/// A strategy that decides where workers and their helpers run.
///
/// # Examples
///
/// Every worker and its helper on CPUs the caller chose (here: unpinned
/// workers, no helpers), beside the default:
///
/// ```
/// use skelaff_numa_alloc::Topology;
/// use skelaff_worklist::{Builder, ThreadLayout, ThreadPlacement, ThreadPlace};
///
/// #[derive(Debug)]
/// struct Anywhere;
/// impl ThreadPlacement for Anywhere {
///     fn name(&self) -> String { "anywhere".into() }
///     fn place(&self, _: &Topology, workers: usize) -> Result<ThreadLayout, skelaff_numa_alloc::Error> {
///         let free = ThreadPlace { cpu: None, node: None, helper: None };
///         Ok(ThreadLayout { workers: vec![free; workers], oversubscribed: false })
///     }
/// }
/// let b = Builder::new().threads(3).placement(Anywhere);
/// # let _ = b;
/// ```
pub trait ThreadPlacement: fmt::Debug + Send + Sync {
    /// A short name for reports (`scatter`, `compact`, `none` for the default).
    fn name(&self) -> String;

    /// Where `workers` workers run (exactly `workers` places) and their helpers would.
    ///
    /// # Errors
    ///
    /// What the topology or the strategy cannot do (no usable CPU, say).
    fn place(&self, topo: &Topology, workers: usize) -> Result<ThreadLayout, skelaff_numa_alloc::Error>;
}

/// The default placement: the topology's scatter or compact order for the
/// workers, and a helper CPU sharing each worker's last-level cache (see
/// the module docs).
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{SyntheticSpec, Topology};
/// use skelaff_worklist::{HelperSite, ThreadPlacement, ThreadMapping, TopologyPlacement};
///
/// // Two nodes, each one cache of two cores.
/// let t = Topology::synthetic(SyntheticSpec {
///     nodes: 2, caches_per_node: 1, cores_per_cache: 2, pus_per_core: 1, memory_only_nodes: 0,
/// })?;
/// let layout = TopologyPlacement::new(ThreadMapping::Scatter).place(&t, 2)?;
/// let cpus: Vec<_> = layout.workers.iter().map(|w| (w.cpu, w.helper.map(|h| (h.cpu, h.site)))).collect();
/// assert_eq!(cpus, [
///     (Some(0), Some((Some(1), HelperSite::Dedicated))),
///     (Some(2), Some((Some(3), HelperSite::Dedicated))),
/// ]);
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopologyPlacement {
    mapping: ThreadMapping,
}

impl TopologyPlacement {
    /// The default placement with this mapping.
    pub fn new(mapping: ThreadMapping) -> Self {
        TopologyPlacement { mapping }
    }

    /// Its mapping.
    pub fn mapping(&self) -> ThreadMapping {
        self.mapping
    }
}

impl ThreadPlacement for TopologyPlacement {
    fn name(&self) -> String {
        self.mapping.to_string()
    }

    fn place(&self, topo: &Topology, workers: usize) -> Result<ThreadLayout, skelaff_numa_alloc::Error> {
        let mapping = match self.mapping {
            ThreadMapping::Scatter => Mapping::Scatter,
            ThreadMapping::Compact => Mapping::Compact,
            ThreadMapping::None => {
                let free = ThreadPlace {
                    cpu: None,
                    node: None,
                    helper: Some(HelperPlace { cpu: None, site: HelperSite::Unpinned }),
                };
                return Ok(ThreadLayout { workers: vec![free; workers], oversubscribed: false });
            }
        };
        let plan = mapping.plan(topo, workers)?;
        let order = mapping.cpu_order(topo);
        let cpus: Vec<usize> = plan.slots.iter().map(|s| s.cpu).collect();
        let helpers = pair_helpers(topo, &order, &cpus);
        let workers = plan
            .slots
            .iter()
            .zip(helpers)
            .map(|(s, helper)| ThreadPlace { cpu: Some(s.cpu), node: s.node, helper: Some(helper) })
            .collect();
        Ok(ThreadLayout { workers, oversubscribed: plan.oversubscribed })
    }
}

/// A helper CPU for each worker CPU (`order`: the usable CPUs in the
/// mapping's order, which helpers are taken in too).
fn pair_helpers(topo: &Topology, order: &[usize], workers: &[usize]) -> Vec<HelperPlace> {
    let group = |c: usize| topo.pu(c).map(|p| p.cache_group);
    // A level-0 "cache group" is a CPU without a real shared cache: nobody
    // can prefetch into it.
    let real_cache = |c: usize| topo.pu(c).is_some_and(|p| topo.cache_groups()[p.cache_group].level > 0);
    let core = |c: usize| topo.pu(c).map(|p| p.core);
    let mut load: HashMap<usize, usize> = HashMap::new();
    for &w in workers {
        *load.entry(w).or_default() += 1;
    }
    // First pass: dedicated CPUs (unused, same cache; another core first).
    let mut dedicated: Vec<Option<usize>> = Vec::with_capacity(workers.len());
    for &w in workers {
        let free = |c: usize| !load.contains_key(&c) && group(c) == group(w) && real_cache(w);
        let pick = order
            .iter()
            .copied()
            .find(|&c| free(c) && core(c) != core(w))
            .or_else(|| order.iter().copied().find(|&c| free(c)));
        if let Some(c) = pick {
            load.insert(c, 1);
        }
        dedicated.push(pick);
    }
    // Second pass, for the others: the least used CPU, same cache first.
    workers
        .iter()
        .zip(dedicated)
        .map(|(&w, d)| {
            if let Some(c) = d {
                return HelperPlace { cpu: Some(c), site: HelperSite::Dedicated };
            }
            let shares = |c: usize| real_cache(w) && group(c) == group(w);
            let best = order
                .iter()
                .copied()
                .filter(|&c| c != w)
                .min_by_key(|&c| (!shares(c), load.get(&c).copied().unwrap_or(0), c));
            match best {
                Some(c) => {
                    *load.entry(c).or_default() += 1;
                    let site = if shares(c) { HelperSite::SharedCpu } else { HelperSite::OtherCache };
                    HelperPlace { cpu: Some(c), site }
                }
                None => HelperPlace { cpu: Some(w), site: HelperSite::WorkerCpu },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use skelaff_numa_alloc::{CpuSet, SyntheticSpec};

    fn topo(nodes: usize, caches: usize, cores: usize, pus: usize) -> Topology {
        Topology::synthetic(SyntheticSpec {
            nodes,
            caches_per_node: caches,
            cores_per_cache: cores,
            pus_per_core: pus,
            memory_only_nodes: 1,
        })
        .unwrap()
    }

    fn helpers(l: &ThreadLayout) -> Vec<(Option<usize>, HelperSite)> {
        l.workers.iter().map(|w| w.helper.map(|h| (h.cpu, h.site)).unwrap()).collect()
    }

    #[test]
    fn helpers_share_the_workers_cache_then_settle_for_less() {
        use HelperSite::*;
        let t = topo(2, 1, 4, 1);
        let p = TopologyPlacement::new(ThreadMapping::Scatter);
        let l = p.place(&t, 4).unwrap();
        assert_eq!(l.workers.iter().map(|w| w.cpu.unwrap()).collect::<Vec<_>>(), [0, 4, 1, 5]);
        assert_eq!(
            helpers(&l),
            [(Some(2), Dedicated), (Some(6), Dedicated), (Some(3), Dedicated), (Some(7), Dedicated)]
        );
        // Every CPU a worker: helpers share CPUs of their cache.
        let full = p.place(&t, 8).unwrap();
        assert!(helpers(&full).iter().all(|&(_, s)| s == SharedCpu), "{full:?}");
        // Without shared caches no helper is dedicated.
        let private = topo(2, 0, 4, 1);
        assert!(helpers(&p.place(&private, 2).unwrap()).iter().all(|&(_, s)| s == OtherCache));
        // With SMT, a sibling thread serves when no other core is free.
        let smt = topo(1, 1, 1, 2);
        assert_eq!(helpers(&p.place(&smt, 1).unwrap()), [(Some(1), Dedicated)]);
        // One CPU: the worker's own.
        let one = topo(1, 1, 1, 1);
        assert_eq!(helpers(&p.place(&one, 1).unwrap()), [(Some(0), WorkerCpu)]);
        // Not pinned.
        let none = TopologyPlacement::new(ThreadMapping::None).place(&t, 2).unwrap();
        assert_eq!(helpers(&none), [(None, Unpinned), (None, Unpinned)]);
        assert!(none.workers.iter().all(|w| w.cpu.is_none()));
    }

    proptest! {
        #[test]
        fn dedicated_helpers_are_distinct_unused_and_share_the_cache(
            nodes in prop::sample::select(vec![1usize, 2, 4]),
            caches in 0usize..3,
            cores in 1usize..4,
            pus in 1usize..3,
            threads in 1usize..40,
            compact in any::<bool>(),
        ) {
            let t = topo(nodes, caches, cores, pus);
            let m = if compact { ThreadMapping::Compact } else { ThreadMapping::Scatter };
            let l = TopologyPlacement::new(m).place(&t, threads).unwrap();
            prop_assert_eq!(l.workers.len(), threads);
            let workers: CpuSet = l.workers.iter().map(|w| w.cpu.unwrap()).collect();
            let mut dedicated = CpuSet::new();
            for w in &l.workers {
                let h = w.helper.unwrap();
                let hc = h.cpu.unwrap();
                let wc = w.cpu.unwrap();
                let same = t.pu(hc).unwrap().cache_group == t.pu(wc).unwrap().cache_group;
                match h.site {
                    HelperSite::Dedicated => {
                        prop_assert!(!workers.contains(hc));
                        prop_assert!(dedicated.insert(hc));
                        prop_assert!(same);
                    }
                    HelperSite::SharedCpu => prop_assert!(same && hc != wc),
                    HelperSite::OtherCache => prop_assert!(hc != wc),
                    HelperSite::WorkerCpu => prop_assert_eq!(hc, wc),
                    HelperSite::Unpinned => prop_assert!(false, "pinned mapping"),
                }
            }
        }
    }
}
