//! Thread pinning, and the thread-to-CPU mappings the skeleton uses.

use crate::error::{Error, Result, UnknownName};
use crate::sets::CpuSet;
use crate::sys;
use crate::topology::Topology;

/// Pins the calling thread to one CPU.
///
/// The topology is read first (with the feature `hwloc`, hwloc's discovery
/// may rebind the thread).
///
/// # Errors
///
/// [`Error::CpuNotAllowed`] naming the CPUs this process may use;
/// [`Error::Sys`] if the kernel refuses.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{pin, Topology};
///
/// let cpu = Topology::get()?.allowed_cpus().first().unwrap();
/// std::thread::spawn(move || {
///     pin::pin_to_cpu(cpu)?;
///     assert_eq!(pin::current_cpu()?, cpu);
///     Ok::<(), skelaff_numa_alloc::Error>(())
/// }).join().unwrap()?;
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub fn pin_to_cpu(cpu: usize) -> Result<()> {
    let topo = Topology::get()?;
    topo.check_cpu(cpu)?;
    sys::sched_setaffinity(CpuSet::single(cpu).as_words())?;
    Ok(())
}

/// Pins the calling thread to a set of CPUs (it may run on any of them).
///
/// # Errors
///
/// [`Error::NoUsableCpu`] if none of `cpus` is allowed; [`Error::Sys`].
pub fn pin_to_cpus(cpus: &CpuSet) -> Result<()> {
    let topo = Topology::get()?;
    let usable = cpus.intersection(topo.allowed_cpus());
    if usable.is_empty() {
        return Err(Error::NoUsableCpu { requested: cpus.clone(), allowed: topo.allowed_cpus().clone() });
    }
    sys::sched_setaffinity(usable.as_words())?;
    Ok(())
}

/// Pins the calling thread to the CPUs of a NUMA node.
///
/// # Errors
///
/// Node validation errors; [`Error::NoUsableCpu`] for a node without
/// usable CPUs (a memory-only node); [`Error::Sys`].
pub fn pin_to_node(node: usize) -> Result<()> {
    let topo = Topology::get()?;
    topo.check_node(node)?;
    let cpus = topo.node(node).map(|n| n.cpus.clone()).unwrap_or_default();
    pin_to_cpus(&cpus)
}

/// Pins the calling thread to `cpu` until the returned guard drops, which
/// puts back the CPU mask the thread had before.
///
/// Threads inherit their creator's CPU mask, so a thread spawned while the
/// guard lives is born on `cpu`. A thread that pins itself only once it runs
/// may first be queued behind a busy thread on another CPU and wait there a
/// whole time slice (milliseconds) before it can move: spawning under this
/// guard is how the worklist starts its pinned workers and helpers.
///
/// # Errors
///
/// As [`pin_to_cpu`], or [`Error::Sys`] if the current mask cannot be read.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{pin, Topology};
///
/// let cpu = Topology::get()?.allowed_cpus().first().unwrap();
/// let before = skelaff_numa_alloc::topology::thread_affinity()?;
/// let child = {
///     let _on = pin::pinned_while(cpu)?;
///     std::thread::spawn(skelaff_numa_alloc::topology::thread_affinity)
/// };
/// // The child was born with the mask {cpu}; this thread has its own back.
/// assert_eq!(child.join().unwrap()?.iter().collect::<Vec<_>>(), vec![cpu]);
/// assert_eq!(skelaff_numa_alloc::topology::thread_affinity()?, before);
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub fn pinned_while(cpu: usize) -> Result<AffinityGuard> {
    let before = crate::topology::thread_affinity()?;
    pin_to_cpu(cpu)?;
    Ok(AffinityGuard { before })
}

/// Where a thread made by [`spawn_pinned`] runs, from its first instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Birthplace {
    /// Wherever its creator may run (the creator's CPU mask, inherited).
    Inherited,
    /// One CPU.
    Cpu(usize),
    /// Any CPU of one NUMA node.
    Node(usize),
}

/// Starts a named thread that is born where `place` says: the creating
/// thread takes that CPU mask for the moment of the spawn (see
/// [`pinned_while`]), so the new thread inherits it and never runs a
/// single instruction elsewhere, and a CPU or node it may not use is an
/// error here, on the creator's side, rather than in a thread that has
/// to report back. The one way every crate of the workspace starts its
/// long-lived pinned threads (worker pools, helpers, the SpMV team, the
/// arrays' copy team, the STM's auxiliary threads, the migrator).
///
/// # Errors
///
/// As [`pin_to_cpu`] and [`pin_to_node`] for the place (before anything is
/// spawned), or [`Error::Spawn`] if the operating system refuses a thread.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::pin::{self, Birthplace};
/// use skelaff_numa_alloc::{Error, Topology};
///
/// let topo = Topology::get()?;
/// let cpu = topo.allowed_cpus().first().unwrap();
/// let t = pin::spawn_pinned("on-one-cpu", Birthplace::Cpu(cpu), skelaff_numa_alloc::topology::thread_affinity)?;
/// assert_eq!(t.join().unwrap()?.iter().collect::<Vec<_>>(), vec![cpu]);
///
/// // A CPU the process may not use: an error, and no thread.
/// let err = pin::spawn_pinned("nowhere", Birthplace::Cpu(100_000), || ()).unwrap_err();
/// assert!(matches!(err, Error::CpuNotAllowed { cpu: 100_000, .. }), "{err}");
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub fn spawn_pinned<F, T>(name: impl Into<String>, place: Birthplace, f: F) -> Result<std::thread::JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let name = name.into();
    let _born_on = birth_mask(place)?;
    std::thread::Builder::new().name(name.clone()).spawn(f).map_err(|e| spawn_error(name, &e))
}

/// [`spawn_pinned`] for a thread of a [`std::thread::scope`], which may
/// borrow from the scope's caller.
///
/// # Errors
///
/// As [`spawn_pinned`].
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::pin::{self, Birthplace};
///
/// let words = vec![1u64, 2, 3];
/// let sum = std::thread::scope(|s| {
///     let t = pin::spawn_scoped_pinned(s, "summer", Birthplace::Inherited, || words.iter().sum::<u64>())?;
///     Ok::<u64, skelaff_numa_alloc::Error>(t.join().unwrap())
/// })?;
/// assert_eq!(sum, 6);
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub fn spawn_scoped_pinned<'scope, 'env, F, T>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    name: impl Into<String>,
    place: Birthplace,
    f: F,
) -> Result<std::thread::ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    let name = name.into();
    let _born_on = birth_mask(place)?;
    std::thread::Builder::new().name(name.clone()).spawn_scoped(scope, f).map_err(|e| spawn_error(name, &e))
}

/// Takes `place`'s CPU mask until the guard drops (none to take for
/// [`Birthplace::Inherited`]).
fn birth_mask(place: Birthplace) -> Result<Option<AffinityGuard>> {
    let cpus = match place {
        Birthplace::Inherited => return Ok(None),
        Birthplace::Cpu(cpu) => return pinned_while(cpu).map(Some),
        Birthplace::Node(node) => {
            let topo = Topology::get()?;
            topo.check_node(node)?;
            topo.node(node).map(|n| n.cpus.clone()).unwrap_or_default()
        }
    };
    let before = crate::topology::thread_affinity()?;
    pin_to_cpus(&cpus)?;
    Ok(Some(AffinityGuard { before }))
}

/// [`Error::Spawn`] for a refused thread. The standard library reports a
/// refused `pthread_create` with its error number; another error (none is
/// known) is reported as `EAGAIN`, the number for "no resources for
/// another thread".
#[cold]
fn spawn_error(name: String, e: &std::io::Error) -> Error {
    Error::Spawn { name, source: sys::SysError::new("pthread_create", e.raw_os_error().unwrap_or(libc::EAGAIN)) }
}

/// Puts back the calling thread's previous CPU mask when dropped (see
/// [`pinned_while`]). Drop it on the thread that created it.
#[derive(Debug)]
#[must_use = "the previous CPU mask comes back when the guard drops"]
pub struct AffinityGuard {
    before: CpuSet,
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        // The mask was the thread's own a moment ago, so the kernel accepts
        // it unless CPUs went offline meanwhile; the thread then keeps the
        // single CPU, which is still a valid place to run.
        let _ = sys::sched_setaffinity(self.before.as_words());
    }
}

/// The CPU the calling thread is running on now.
///
/// # Errors
///
/// [`Error::Sys`] if `getcpu` fails.
pub fn current_cpu() -> Result<usize> {
    // Without a system call where glibc can (a pool's caller asks before
    // every run); the system call where it cannot.
    match sys::sched_getcpu() {
        Some(cpu) => Ok(cpu),
        None => Ok(sys::getcpu()?.0),
    }
}

/// The NUMA node of the CPU the calling thread is running on now.
///
/// # Errors
///
/// [`Error::Sys`] if `getcpu` fails.
pub fn current_node() -> Result<usize> {
    Ok(sys::getcpu()?.1)
}

/// How worker threads are laid out on CPUs. Its text form is its name in
/// lower case (`scatter`, `compact`); an unknown name is
/// [`Error::UnknownName`].
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{Error, Mapping};
///
/// assert_eq!("compact".parse::<Mapping>()?, Mapping::Compact);
/// assert_eq!(Mapping::Scatter.to_string(), "scatter");
/// let e = "sideways".parse::<Mapping>().unwrap_err();
/// assert!(matches!(e, Error::UnknownName(skelaff_numa_alloc::UnknownName { .. })));
/// assert_eq!(e.to_string(), "unknown thread mapping `sideways`; expected one of: scatter, compact");
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Mapping {
    /// Spread threads out: over nodes first, then over last-level-cache
    /// groups within a node, then over cores, and only then onto the second
    /// hardware thread of a core. Gives each thread the most memory
    /// bandwidth and cache; the paper's default.
    #[default]
    Scatter,
    /// Pack threads together: fill a core's hardware threads, then a cache
    /// group, then a node, before moving on. Minimises communication cost.
    Compact,
}

crate::enum_names! {
    Mapping {
        Scatter => "scatter",
        Compact => "compact",
    }
    parse: Error = unknown_mapping;
}

/// The error of a name that is no [`Mapping`].
fn unknown_mapping(given: &str) -> Error {
    Error::UnknownName(UnknownName { what: "thread mapping", given: given.to_owned(), allowed: Mapping::VARIANTS })
}

/// Where one worker runs. (Where its helper thread runs is the
/// worklist's placement strategy's decision, not this layout's.)
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct WorkerPlace {
    /// The worker's CPU.
    pub cpu: usize,
    /// The worker CPU's home node (if it has one).
    pub node: Option<usize>,
}

/// A thread layout: one [`WorkerPlace`] per worker.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Plan {
    /// The slots, worker 0 first.
    pub slots: Vec<WorkerPlace>,
    /// More workers than usable CPUs: CPUs are reused round-robin.
    pub oversubscribed: bool,
}

impl Mapping {
    /// The order in which this mapping hands out the usable CPUs.
    pub fn cpu_order(&self, topo: &Topology) -> Vec<usize> {
        // The usable CPUs as a tree: node -> cache group -> core -> CPU.
        let mut tree: Vec<(Option<usize>, Vec<CacheBranch>)> = Vec::new();
        for pu in topo.pus() {
            if !topo.allowed_cpus().contains(pu.cpu) {
                continue;
            }
            let node = match tree.iter().position(|n| n.0 == pu.node) {
                Some(i) => i,
                None => {
                    tree.push((pu.node, Vec::new()));
                    tree.len() - 1
                }
            };
            let groups = &mut tree[node].1;
            let group = match groups.iter().position(|g| g.0 == pu.cache_group) {
                Some(i) => i,
                None => {
                    groups.push((pu.cache_group, Vec::new()));
                    groups.len() - 1
                }
            };
            let cores = &mut groups[group].1;
            match cores.iter_mut().find(|c| c.0 == pu.core) {
                Some(c) => c.1.push(pu.cpu),
                None => cores.push((pu.core, vec![pu.cpu])),
            }
        }
        match self {
            Mapping::Compact => tree
                .into_iter()
                .flat_map(|(_, groups)| groups.into_iter().flat_map(|(_, cores)| cores.into_iter().flat_map(|c| c.1)))
                .collect(),
            Mapping::Scatter => round_robin(
                tree.into_iter()
                    .map(|(_, groups)| {
                        round_robin(
                            groups
                                .into_iter()
                                .map(|(_, cores)| round_robin(cores.into_iter().map(|c| c.1).collect()))
                                .collect(),
                        )
                    })
                    .collect(),
            ),
        }
    }

    /// Lays out `threads` workers in this mapping's CPU order (round-robin
    /// over the usable CPUs when there are more workers than CPUs).
    ///
    /// # Errors
    ///
    /// [`Error::ZeroThreads`]; [`Error::NoUsableCpu`] when the process may
    /// use no CPU at all.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_numa_alloc::{pin::Mapping, SyntheticSpec, Topology};
    ///
    /// let t = Topology::synthetic(SyntheticSpec {
    ///     nodes: 2, caches_per_node: 1, cores_per_cache: 2, pus_per_core: 1, memory_only_nodes: 0,
    /// })?;
    /// let plan = Mapping::Scatter.plan(&t, 2)?;
    /// let nodes: Vec<_> = plan.slots.iter().map(|s| s.node).collect();
    /// assert_eq!(nodes, [Some(0), Some(1)]);
    /// # Ok::<(), skelaff_numa_alloc::Error>(())
    /// ```
    pub fn plan(&self, topo: &Topology, threads: usize) -> Result<Plan> {
        if threads == 0 {
            return Err(Error::ZeroThreads);
        }
        let order = self.cpu_order(topo);
        if order.is_empty() {
            return Err(Error::NoUsableCpu { requested: CpuSet::new(), allowed: topo.allowed_cpus().clone() });
        }
        let oversubscribed = threads > order.len();
        let slots = (0..threads)
            .map(|i| {
                let cpu = order[i % order.len()];
                WorkerPlace { cpu, node: topo.pu(cpu).and_then(|p| p.node) }
            })
            .collect();
        Ok(Plan { slots, oversubscribed })
    }
}

/// A cache group's cores, each with its CPUs: `(group, [(core, [cpu])])`.
type CacheBranch = (usize, Vec<(usize, Vec<usize>)>);

/// Interleaves lists: first elements of each, then second elements, ...
fn round_robin(lists: Vec<Vec<usize>>) -> Vec<usize> {
    let total = lists.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    let mut i = 0;
    while out.len() < total {
        for l in &lists {
            if let Some(&x) = l.get(i) {
                out.push(x);
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::SyntheticSpec;
    use proptest::prelude::*;

    #[test]
    fn pinned_while_refuses_a_missing_cpu_and_keeps_the_mask() {
        let before = crate::topology::thread_affinity().unwrap();
        let err = pinned_while(100_000).unwrap_err();
        assert!(matches!(err, Error::CpuNotAllowed { .. }), "{err}");
        assert_eq!(crate::topology::thread_affinity().unwrap(), before);
    }

    #[test]
    fn spawned_threads_are_born_on_their_place_and_the_creator_keeps_its_mask() {
        let before = crate::topology::thread_affinity().unwrap();
        let topo = Topology::get().unwrap();
        let cpu = before.iter().last().unwrap();
        // The first thing the thread does is read its mask: it was born with it.
        let t = spawn_pinned("born-on-cpu", Birthplace::Cpu(cpu), crate::topology::thread_affinity).unwrap();
        assert_eq!(t.join().unwrap().unwrap(), CpuSet::single(cpu));
        let node = topo.nodes_with_cpus().first().unwrap();
        let node_cpus = topo.node(node).unwrap().cpus.intersection(topo.allowed_cpus());
        let t = spawn_pinned("born-on-node", Birthplace::Node(node), crate::topology::thread_affinity).unwrap();
        assert_eq!(t.join().unwrap().unwrap(), node_cpus);
        let t = std::thread::scope(|s| {
            spawn_scoped_pinned(s, "scoped", Birthplace::Cpu(cpu), || {
                (std::thread::current().name().map(str::to_owned), crate::topology::thread_affinity().unwrap())
            })
            .unwrap()
            .join()
            .unwrap()
        });
        assert_eq!(t, (Some("scoped".to_owned()), CpuSet::single(cpu)));
        let t = spawn_pinned("inherits", Birthplace::Inherited, crate::topology::thread_affinity).unwrap();
        assert_eq!(t.join().unwrap().unwrap(), before);
        assert_eq!(crate::topology::thread_affinity().unwrap(), before);
    }

    #[test]
    fn a_place_the_process_may_not_use_is_an_error_before_any_thread() {
        let before = crate::topology::thread_affinity().unwrap();
        let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let r = ran.clone();
        let err = spawn_pinned("nowhere", Birthplace::Cpu(100_000), move || {
            r.store(true, std::sync::atomic::Ordering::SeqCst)
        })
        .unwrap_err();
        assert!(matches!(err, Error::CpuNotAllowed { cpu: 100_000, .. }), "{err}");
        let err = spawn_pinned("no-node", Birthplace::Node(4000), || ()).unwrap_err();
        assert!(matches!(err, Error::NoSuchNode { node: 4000, .. }), "{err}");
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(crate::topology::thread_affinity().unwrap(), before);
    }

    #[test]
    fn pinned_while_pins_then_restores() {
        let before = crate::topology::thread_affinity().unwrap();
        let cpu = before.iter().last().unwrap();
        {
            let _g = pinned_while(cpu).unwrap();
            assert_eq!(crate::topology::thread_affinity().unwrap(), CpuSet::single(cpu));
            assert_eq!(current_cpu().unwrap(), cpu);
        }
        assert_eq!(crate::topology::thread_affinity().unwrap(), before);
    }

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

    #[test]
    fn scatter_spreads_nodes_then_caches_then_cores_then_threads() {
        // 2 nodes x 2 caches x 2 cores x 2 PUs: CPU = node*8 + cache*4 + core*2 + pu.
        let t = topo(2, 2, 2, 2);
        let order = Mapping::Scatter.cpu_order(&t);
        assert_eq!(&order[..8], &[0, 8, 4, 12, 2, 10, 6, 14]);
        assert_eq!(&order[8..], &[1, 9, 5, 13, 3, 11, 7, 15]);
        assert_eq!(Mapping::Compact.cpu_order(&t), (0..16).collect::<Vec<_>>());
    }

    #[test]
    fn oversubscription_and_zero() {
        let t = topo(1, 1, 2, 1);
        let plan = Mapping::Compact.plan(&t, 5).unwrap();
        assert!(plan.oversubscribed);
        assert_eq!(plan.slots.iter().map(|s| s.cpu).collect::<Vec<_>>(), [0, 1, 0, 1, 0]);
        assert_eq!(Mapping::Scatter.plan(&t, 0).unwrap_err(), Error::ZeroThreads);
        assert_eq!(
            "sideways".parse::<Mapping>().unwrap_err(),
            Error::UnknownName(UnknownName {
                what: "thread mapping",
                given: "sideways".into(),
                allowed: &["scatter", "compact"]
            })
        );
        for m in [Mapping::Scatter, Mapping::Compact] {
            assert_eq!(m.to_string().parse::<Mapping>().unwrap(), m);
        }
    }

    #[test]
    fn pinning_this_thread() {
        let topo = Topology::get().unwrap();
        let cpu = topo.allowed_cpus().iter().last().unwrap();
        std::thread::spawn(move || {
            pin_to_cpu(cpu).unwrap();
            assert_eq!(current_cpu().unwrap(), cpu);
            assert_eq!(Some(current_node().unwrap()), topo.pu(cpu).unwrap().node);
            let e = pin_to_cpu(100_000).unwrap_err();
            assert!(matches!(e, Error::CpuNotAllowed { cpu: 100_000, .. }));
            assert!(e.to_string().contains("may run on CPUs"), "{e}");
            assert!(matches!(pin_to_cpus(&CpuSet::single(99_999)), Err(Error::NoUsableCpu { .. })));
            assert!(matches!(pin_to_node(999), Err(Error::NoSuchNode { .. })));
            pin_to_node(topo.nodes_with_cpus().first().unwrap()).unwrap();
        })
        .join()
        .unwrap();
    }

    proptest! {
        #[test]
        fn every_mapping_is_a_permutation_and_scatter_balances_nodes(
            nodes in prop::sample::select(vec![1usize, 2, 4, 8]),
            caches in 0usize..3,
            cores in 1usize..4,
            pus in 1usize..3,
            threads in 1usize..80,
        ) {
            let t = topo(nodes, caches, cores, pus);
            let total = t.pus().len();
            for m in [Mapping::Scatter, Mapping::Compact] {
                let mut order = m.cpu_order(&t);
                order.sort_unstable();
                prop_assert_eq!(order, (0..total).collect::<Vec<_>>());
            }
            let plan = Mapping::Scatter.plan(&t, threads).unwrap();
            prop_assert_eq!(plan.slots.len(), threads);
            prop_assert_eq!(plan.oversubscribed, threads > total);
            // Scatter: per-node worker counts differ by at most one.
            let mut per_node = vec![0usize; nodes];
            for s in &plan.slots { per_node[s.node.unwrap()] += 1; }
            let (lo, hi) = (per_node.iter().min().unwrap(), per_node.iter().max().unwrap());
            prop_assert!(hi - lo <= 1, "{:?}", per_node);
        }
    }
}
