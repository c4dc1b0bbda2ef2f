//! Affinity scheduling (the NUCA study's fourth recommendation; Shoal's
//! partitioning): the program says where a unit's data lives
//! ([`Skeleton::affinity`](crate::Skeleton::affinity)), and with
//! [`Builder::affinity_scheduling`](crate::Builder::affinity_scheduling)
//! the per-node pool queues the unit on that node, so a worker of that node
//! runs it unless the others would otherwise idle (stealing still balances
//! the load). A program that partitions its data among the workers can name
//! the worker instead ([`Affinity::Worker`]): the unit waits in that
//! worker's inbox, so the partition's data stays in one core's cache (the
//! owner-computes rule of Galois's partitioned worklists).
//!
//! This module holds the hint, its resolution to a node or a worker (an
//! address is asked of the kernel, once per page, and cached for the run),
//! and the figures a run reports: how many units named a node or a worker
//! and how many of them ran there.

use std::collections::HashMap;
use std::fmt;

use skelaff_numa_alloc::{PageLocation, Placement};

/// Where a unit's data lives, as the program knows it.
///
/// # Examples
///
/// ```
/// use skelaff_worklist::Affinity;
///
/// let chunk = vec![0u64; 512];
/// // The node that holds the chunk's first page, asked of the kernel.
/// let hint = Affinity::of(&chunk[0]);
/// assert_eq!(hint, Affinity::Address(chunk.as_ptr() as usize));
/// assert_eq!(Affinity::default(), Affinity::Anywhere);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Affinity {
    /// No preference: the pool's usual distribution.
    #[default]
    Anywhere,
    /// The data is on this NUMA node (the kernel's number).
    Node(usize),
    /// The data is at this address: the unit goes to the node the kernel
    /// has its page on (not resident, or a node with no worker: no
    /// preference).
    Address(usize),
    /// The unit belongs to this worker (its index in the run, taken modulo
    /// the run's workers): units that touch the same data name the same
    /// worker, so the data stays in that worker's cache instead of moving
    /// between cores at every unit (intruder's flows, a partitioned
    /// graph). The worker takes its units in batches; another worker takes
    /// them one at a time, and only when it has nothing else, so the load
    /// still balances.
    ///
    /// # Examples
    ///
    /// Per-key counters, each key's units run by the worker that owns a
    /// contiguous range of keys:
    ///
    /// ```
    /// use skelaff_stm::{TVar, TxError, TxOps};
    /// use skelaff_worklist::{Affinity, Builder, ProcessCtx, Skeleton, WorkerInfo};
    ///
    /// struct Count {
    ///     keys: usize,
    ///     workers: usize,
    /// }
    ///
    /// impl Skeleton for Count {
    ///     type Unit = usize; // a key
    ///     type Shared = Vec<TVar<u64>>;
    ///     type PerWorker = ();
    ///
    ///     fn init_worker(&self, _: &Self::Shared, _: &WorkerInfo) {}
    ///
    ///     fn affinity(&self, &key: &usize, _: &Self::Shared) -> Affinity {
    ///         Affinity::Worker(key * self.workers / self.keys)
    ///     }
    ///
    ///     fn process<'t, X: TxOps<'t>>(
    ///         &'t self,
    ///         tx: &mut X,
    ///         &key: &usize,
    ///         _: &mut (),
    ///         counts: &'t Self::Shared,
    ///         _: &mut ProcessCtx<usize>,
    ///     ) -> Result<(), TxError> {
    ///         tx.update(&counts[key], |c| c + 1).map(|_| ())
    ///     }
    /// }
    ///
    /// let skel = Count { keys: 64, workers: 2 };
    /// let counts: Vec<TVar<u64>> = (0..64).map(|_| TVar::new(0)).collect();
    /// let mut wl = Builder::new().threads(2).affinity_scheduling(true).build(&skel, &counts)?;
    /// wl.add_work_units((0..1000).map(|i| i % 64));
    /// let report = wl.run()?;
    /// assert_eq!(counts.iter().map(TVar::load).sum::<u64>(), 1000);
    /// // Every unit named a worker; most ran there (a worker with nothing
    /// // of its own left takes the other's, one at a time).
    /// assert_eq!(report.affinity().hinted, 1000);
    /// # Ok::<(), skelaff_worklist::Error>(())
    /// ```
    Worker(usize),
}

impl Affinity {
    /// The hint for data at `r`'s address.
    pub fn of<T: ?Sized>(r: &T) -> Affinity {
        Affinity::Address((r as *const T).cast::<u8>() as usize)
    }
}

/// What affinity scheduling did in a run (zero when it was off).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AffinityFigures {
    /// Units started whose hint named a node (directly, or by an address
    /// whose page the kernel placed) or a worker.
    pub hinted: u64,
    /// Of those, units run where the hint named: by a worker on that node,
    /// or by that worker.
    pub on_home: u64,
    /// Units whose hint was an address the kernel could not place (not
    /// resident yet, or not mapped).
    pub unresolved: u64,
}

impl AffinityFigures {
    /// Adds another worker's or run's figures.
    pub fn merge(&mut self, other: &AffinityFigures) {
        self.hinted += other.hinted;
        self.on_home += other.on_home;
        self.unresolved += other.unresolved;
    }

    /// The share of hinted units that ran where their hint named (`None`
    /// when no unit named a node or a worker).
    pub fn home_share(&self) -> Option<f64> {
        (self.hinted > 0).then(|| self.on_home as f64 / self.hinted as f64)
    }
}

impl fmt::Display for AffinityFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.home_share() {
            Some(s) => write!(
                f,
                "{} of {} hinted units ran at home, on the node or worker their hint named ({:.1}%)",
                self.on_home,
                self.hinted,
                100.0 * s
            )?,
            None => f.write_str("no unit named a node or a worker")?,
        }
        if self.unresolved > 0 {
            write!(f, "; {} hints named a page the kernel could not place", self.unresolved)?;
        }
        Ok(())
    }
}

/// A hint resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Home {
    /// No preference.
    Anywhere,
    /// This node.
    Node(usize),
    /// This worker (any number: the pool takes it modulo the workers).
    Worker(usize),
    /// An address the kernel could not place.
    Unresolved,
}

/// Distinct pages remembered before the cache starts over (bounds its memory).
const CACHE_PAGES: usize = 1 << 16;

/// Resolves hints to nodes for one thread, caching the kernel's answer per
/// page (the page policies never move a placed page during a run).
#[derive(Debug)]
pub(crate) struct Resolver {
    page_size: usize,
    pages: HashMap<usize, Option<usize>>,
}

impl Resolver {
    pub(crate) fn new(page_size: usize) -> Self {
        Resolver { page_size: page_size.max(1), pages: HashMap::new() }
    }

    /// The node `hint` names.
    pub(crate) fn home(&mut self, hint: Affinity) -> Home {
        match hint {
            Affinity::Anywhere => Home::Anywhere,
            Affinity::Node(n) => Home::Node(n),
            Affinity::Worker(w) => Home::Worker(w),
            Affinity::Address(a) => {
                let page = a / self.page_size;
                let node = match self.pages.get(&page) {
                    Some(n) => *n,
                    None => {
                        let n = ask_kernel(page * self.page_size, self.page_size);
                        if self.pages.len() >= CACHE_PAGES {
                            self.pages.clear();
                        }
                        self.pages.insert(page, n);
                        n
                    }
                };
                node.map_or(Home::Unresolved, Home::Node)
            }
        }
    }
}

/// The node holding the page at `addr` (`None`: not resident, not mapped,
/// or the kernel would not say).
fn ask_kernel(addr: usize, page_size: usize) -> Option<usize> {
    let placement = Placement::query(addr as *const u8, 1, page_size).ok()?;
    match placement.pages().first()? {
        PageLocation::Node(n) => Some(*n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_and_anywhere_resolve_without_the_kernel() {
        let mut r = Resolver::new(4096);
        assert_eq!(r.home(Affinity::Anywhere), Home::Anywhere);
        assert_eq!(r.home(Affinity::Node(3)), Home::Node(3));
        assert!(r.pages.is_empty());
    }

    #[test]
    fn an_address_is_asked_once_per_page() {
        let page = 4096;
        let data = vec![1u8; 4 * page];
        let mut r = Resolver::new(page);
        // Touched, so resident: on this machine's node 0 (or whichever one
        // the test runs on); either way, the same answer from the cache.
        let first = r.home(Affinity::of(&data[0]));
        assert!(matches!(first, Home::Node(_)), "{first:?}");
        let pages_before = r.pages.len();
        assert_eq!(r.home(Affinity::of(&data[1])), first, "same page, same answer");
        assert_eq!(r.pages.len(), pages_before, "the second query came from the cache");
        // An address no mapping holds: unresolved, not an error.
        assert_eq!(r.home(Affinity::Address(page)), Home::Unresolved);
    }

    #[test]
    fn figures_merge_and_say_their_share() {
        let mut f = AffinityFigures { hinted: 4, on_home: 3, unresolved: 0 };
        f.merge(&AffinityFigures { hinted: 4, on_home: 1, unresolved: 2 });
        assert_eq!(f, AffinityFigures { hinted: 8, on_home: 4, unresolved: 2 });
        assert_eq!(f.home_share(), Some(0.5));
        assert_eq!(
            f.to_string(),
            "4 of 8 hinted units ran at home, on the node or worker their hint named (50.0%); 2 hints named a page the kernel could not place"
        );
        assert_eq!(AffinityFigures::default().home_share(), None);
    }
}
