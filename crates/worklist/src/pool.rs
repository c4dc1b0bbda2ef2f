//! The pool of work-units, and how idle workers wait and learn that the run
//! is over.
//!
//! Taking a unit never goes through the STM. Termination: `pending` counts
//! units that were added and not yet finished (queued or being processed).
//! A worker publishes the units a committed transaction added *before* it
//! marks its own unit finished, so `pending` reaches zero only when the pool
//! is empty and no running unit can add more.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};

/// How units are distributed among workers.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// One queue behind one lock, as OpenSkel's baseline: every worker takes
    /// from and adds to the same FIFO.
    Shared,
    /// A queue per NUMA node and a deque per worker: a worker takes from its
    /// own deque, then its node's queue, then steals from workers of its
    /// node, then from other nodes one unit at a time (the rest stays for
    /// that node's workers). Units a worker adds stay on its deque.
    #[default]
    PerNode,
}

skelaff_numa_alloc::enum_names! {
    Distribution {
        Shared => "shared",
        PerNode => "per-node" | "pernode",
    }
    parse: crate::error::Error = unknown_distribution;
}

/// The order in which a worker runs the units in its own deque (the
/// per-node distribution; the shared queue is always first in, first out).
///
/// # Examples
///
/// ```
/// use skelaff_worklist::{Builder, LocalOrder};
///
/// // Galois's order for mesh refinement: newest first.
/// let builder = Builder::new().local_order(LocalOrder::Lifo);
/// assert_eq!("lifo".parse::<LocalOrder>().unwrap(), LocalOrder::Lifo);
/// assert!("newest".parse::<LocalOrder>().is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalOrder {
    /// Oldest first: the units a worker made wait behind those it took
    /// before them.
    #[default]
    Fifo,
    /// Newest first, as Galois's per-thread chunked LIFO worklist: a unit a
    /// transaction just made runs next, while what that transaction
    /// touched is still in the cache (yada's new bad triangles lie in the
    /// cavity just retriangulated). Thieves still take the oldest.
    Lifo,
}

skelaff_numa_alloc::enum_names! {
    LocalOrder {
        Fifo => "fifo",
        Lifo => "lifo",
    }
    parse: crate::error::Error = unknown_local_order;
}

fn unknown_local_order(given: &str) -> crate::error::Error {
    crate::error::Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "local order",
        given: given.to_owned(),
        allowed: &["fifo", "lifo"],
    })
}

fn unknown_distribution(given: &str) -> crate::error::Error {
    crate::error::Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "distribution",
        given: given.to_owned(),
        allowed: &["shared", "per-node"],
    })
}

/// A worker's end of the pool.
pub(crate) enum WorkerQueue<U> {
    Shared,
    PerNode {
        deque: Worker<U>,
        /// Its node's entry in the pool's list.
        node: usize,
        /// Its own index among the run's workers (its inbox).
        index: usize,
    },
}

/// Where a routed unit goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// The queue of this entry of the pool's node list ([`Pool::queue_of`]).
    Node(usize),
    /// The inbox of this worker (any number; taken modulo the workers).
    Worker(usize),
}

/// One node's part of the per-node pool.
pub(crate) struct NodeQueues<U> {
    /// Units for any worker of the node.
    queue: Injector<U>,
    /// Its workers' deques, to steal from.
    stealers: Vec<Stealer<U>>,
    /// Its workers' indices (their inboxes).
    workers: Vec<usize>,
}

pub(crate) enum Pool<U> {
    Shared(Mutex<VecDeque<U>>),
    PerNode {
        /// Per node (index into this list, not the kernel number).
        nodes: Vec<NodeQueues<U>>,
        /// The label (kernel node) of each entry of `nodes`, sorted.
        labels: Vec<Option<usize>>,
        /// Per worker, the units routed to it by name
        /// ([`Route::Worker`]): only it takes them in batches; others
        /// take one at a time, and only when they have nothing else.
        inboxes: Vec<CachePadded<Injector<U>>>,
    },
}

impl<U: Send> Pool<U> {
    /// Builds the pool and each worker's end. `worker_nodes[w]` groups
    /// workers by node (any labels; equal labels share a queue).
    pub(crate) fn new(
        distribution: Distribution,
        order: LocalOrder,
        worker_nodes: &[Option<usize>],
    ) -> (Pool<U>, Vec<WorkerQueue<U>>) {
        match distribution {
            Distribution::Shared => {
                (Pool::Shared(Mutex::new(VecDeque::new())), worker_nodes.iter().map(|_| WorkerQueue::Shared).collect())
            }
            Distribution::PerNode => {
                let mut labels: Vec<Option<usize>> = worker_nodes.to_vec();
                labels.sort_unstable();
                labels.dedup();
                let mut nodes: Vec<NodeQueues<U>> = labels
                    .iter()
                    .map(|_| NodeQueues { queue: Injector::new(), stealers: Vec::new(), workers: Vec::new() })
                    .collect();
                let locals = worker_nodes
                    .iter()
                    .enumerate()
                    .map(|(index, label)| {
                        let node = labels.binary_search(label).unwrap_or(0);
                        let deque = match order {
                            LocalOrder::Fifo => Worker::new_fifo(),
                            LocalOrder::Lifo => Worker::new_lifo(),
                        };
                        nodes[node].stealers.push(deque.stealer());
                        nodes[node].workers.push(index);
                        WorkerQueue::PerNode { deque, node, index }
                    })
                    .collect();
                let inboxes = worker_nodes.iter().map(|_| CachePadded::new(Injector::new())).collect();
                (Pool::PerNode { nodes, labels, inboxes }, locals)
            }
        }
    }

    /// The queue of kernel node `node`, if some worker runs there (only the
    /// per-node distribution has queues per node).
    pub(crate) fn queue_of(&self, node: usize) -> Option<usize> {
        match self {
            Pool::Shared(_) => None,
            Pool::PerNode { labels, .. } => labels.binary_search(&Some(node)).ok(),
        }
    }

    /// The injector `route` names, if this pool has it (the shared pool
    /// has none; a worker number is taken modulo the workers).
    fn injector(&self, route: Route) -> Option<&Injector<U>> {
        match (self, route) {
            (Pool::Shared(_), _) => None,
            (Pool::PerNode { nodes, .. }, Route::Node(q)) => nodes.get(q).map(|n| &n.queue),
            (Pool::PerNode { inboxes, .. }, Route::Worker(w)) => {
                inboxes.get(w.checked_rem(inboxes.len())?).map(|i| &**i)
            }
        }
    }

    /// Adds seed units: each unit `home` gives a route for goes there (see
    /// [`Route`]); the rest are dealt as [`seed`](Self::seed) deals.
    pub(crate) fn seed_routed(&self, units: Vec<U>, mut home: impl FnMut(&U) -> Option<Route>) {
        if let Pool::Shared(_) = self {
            return self.seed(units);
        }
        let mut rest = Vec::new();
        for u in units {
            match home(&u).and_then(|r| self.injector(r)) {
                Some(inj) => inj.push(u),
                None => rest.push(u),
            }
        }
        self.seed(rest);
    }

    /// Adds units a worker's transaction produced: a unit `home` routes to
    /// another node's queue or another worker's inbox goes there, the rest
    /// as [`push`](Self::push) adds them.
    pub(crate) fn push_routed(
        &self,
        local: &WorkerQueue<U>,
        units: impl Iterator<Item = U>,
        mut home: impl FnMut(&U) -> Option<Route>,
    ) {
        match (self, local) {
            (Pool::PerNode { inboxes, .. }, WorkerQueue::PerNode { deque, node, index }) => {
                for u in units {
                    let away = match home(&u) {
                        Some(Route::Node(q)) if q == *node => None,
                        Some(Route::Worker(w)) if w.checked_rem(inboxes.len()) == Some(*index) => None,
                        other => other.and_then(|r| self.injector(r)),
                    };
                    match away {
                        Some(inj) => inj.push(u),
                        None => deque.push(u),
                    }
                }
            }
            _ => units.for_each(|u| self.push_one(local, u)),
        }
    }

    fn push_one(&self, local: &WorkerQueue<U>, u: U) {
        self.push(local, std::iter::once(u));
    }

    /// Adds seed units, dealt to the node queues in contiguous blocks in
    /// proportion to their workers.
    pub(crate) fn seed(&self, units: Vec<U>) {
        match self {
            Pool::Shared(q) => q.lock().extend(units),
            Pool::PerNode { nodes, .. } => {
                let workers: usize = nodes.iter().map(|n| n.stealers.len()).sum::<usize>().max(1);
                let total = units.len();
                let mut it = units.into_iter();
                let mut given = 0;
                let mut seen_workers = 0;
                for n in nodes {
                    seen_workers += n.stealers.len();
                    let upto = total * seen_workers / workers;
                    for u in it.by_ref().take(upto - given) {
                        n.queue.push(u);
                    }
                    given = upto;
                }
                if let Some(n) = nodes.last() {
                    it.for_each(|u| n.queue.push(u));
                }
            }
        }
    }

    /// Adds units a worker's transaction produced.
    pub(crate) fn push(&self, local: &WorkerQueue<U>, units: impl ExactSizeIterator<Item = U>) {
        match (self, local) {
            (Pool::Shared(q), _) => q.lock().extend(units),
            (Pool::PerNode { .. }, WorkerQueue::PerNode { deque, .. }) => units.for_each(|u| deque.push(u)),
            (Pool::PerNode { nodes, .. }, WorkerQueue::Shared) => units.for_each(|u| nodes[0].queue.push(u)),
        }
    }

    /// Whether any queue, deque or inbox holds a unit (a worker's last look
    /// before it sleeps; its own deque is empty then, and only it pushes
    /// there).
    pub(crate) fn has_work(&self) -> bool {
        match self {
            Pool::Shared(q) => !q.lock().is_empty(),
            Pool::PerNode { nodes, inboxes, .. } => {
                nodes.iter().any(|n| !n.queue.is_empty() || n.stealers.iter().any(|s| !s.is_empty()))
                    || inboxes.iter().any(|i| !i.is_empty())
            }
        }
    }

    /// Takes a unit for a worker: own deque, own inbox, own node, same-node
    /// workers, then other nodes.
    pub(crate) fn take(&self, local: &WorkerQueue<U>) -> Option<U> {
        match (self, local) {
            (Pool::Shared(q), _) => q.lock().pop_front(),
            (Pool::PerNode { nodes, inboxes, .. }, WorkerQueue::PerNode { deque, node, index }) => {
                deque.pop().or_else(|| {
                    let order = (0..nodes.len()).map(|i| (node + i) % nodes.len());
                    for n in order {
                        let here = &nodes[n];
                        loop {
                            // From its own inbox and its own node a worker
                            // takes a batch; from another worker's inbox or
                            // another node only the unit it runs now, so
                            // the rest stays where it was routed (a thief
                            // that took half a remote queue ran it all away
                            // from its data, and routed units lost their
                            // home).
                            let found = if n == *node {
                                let others = || here.workers.iter().filter(|&&w| w != *index);
                                inboxes[*index]
                                    .steal_batch_and_pop(deque)
                                    .or_else(|| here.queue.steal_batch_and_pop(deque))
                                    .or_else(|| here.stealers.iter().map(|s| s.steal_batch_and_pop(deque)).collect())
                                    .or_else(|| others().map(|&w| inboxes[w].steal()).collect())
                            } else {
                                here.queue
                                    .steal()
                                    .or_else(|| here.stealers.iter().map(Stealer::steal).collect())
                                    .or_else(|| here.workers.iter().map(|&w| inboxes[w].steal()).collect())
                            };
                            match found {
                                Steal::Success(u) => return Some(u),
                                Steal::Empty => break,
                                Steal::Retry => continue,
                            }
                        }
                    }
                    None
                })
            }
            (Pool::PerNode { nodes, .. }, WorkerQueue::Shared) => loop {
                match nodes[0].queue.steal() {
                    Steal::Success(u) => return Some(u),
                    Steal::Empty => return None,
                    Steal::Retry => continue,
                }
            },
        }
    }
}

/// Counts unfinished units and parks idle workers (an event count: a waiter
/// notes the epoch, re-checks for work, and sleeps only if the epoch has not
/// moved since, so no wake-up is lost).
pub(crate) struct Signal {
    pending: CachePadded<AtomicUsize>,
    epoch: CachePadded<AtomicU64>,
    sleepers: AtomicUsize,
    stop: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Signal {
    pub(crate) fn new(pending: usize) -> Self {
        Signal {
            pending: CachePadded::new(AtomicUsize::new(pending)),
            epoch: CachePadded::new(AtomicU64::new(0)),
            sleepers: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// `n` units are about to be published.
    #[inline]
    pub(crate) fn add(&self, n: usize) {
        self.pending.fetch_add(n, Ordering::SeqCst);
    }

    /// `n` units are finished (their children already published). Returns
    /// whether they were the last ones.
    #[inline]
    pub(crate) fn finish_many(&self, n: usize) -> bool {
        let last = self.pending.fetch_sub(n, Ordering::SeqCst) == n;
        if last {
            self.wake();
        }
        last
    }

    /// Whether every unit is finished.
    #[inline]
    pub(crate) fn done(&self) -> bool {
        self.pending.load(Ordering::SeqCst) == 0
    }

    /// Tells every worker to stop (after a panic).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake();
    }

    #[inline]
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The current epoch, to pass to [`Signal::wait`].
    #[inline]
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Something changed (new units, or the end): moves the epoch and wakes
    /// sleepers, if any.
    #[inline]
    pub(crate) fn wake(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = self.lock.lock();
            self.cv.notify_all();
        }
    }

    /// A worker pushed units: wakes sleepers if one has announced itself.
    /// The fence orders the push before the read of `sleepers`, as
    /// [`announce`](Self::announce) orders the announcement before the
    /// sleeper's last look: either this sees the sleeper (and moves the
    /// epoch it waits on), or the sleeper's look sees the units.
    #[inline]
    pub(crate) fn published(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            self.wake();
        }
    }

    /// A worker is about to sleep: counts it as a sleeper. It then notes
    /// the [`epoch`](Self::epoch), looks for work once more, and either
    /// [`withdraw`](Self::withdraw)s or [`sleep`](Self::sleep)s.
    pub(crate) fn announce(&self) {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// An announced worker found work (or the end): no longer a sleeper.
    pub(crate) fn withdraw(&self) {
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// An announced worker sleeps until the epoch moves past `seen` (or
    /// the run stops), then withdraws.
    pub(crate) fn sleep(&self, seen: u64) {
        let mut g = self.lock.lock();
        while self.epoch.load(Ordering::SeqCst) == seen && !self.stop.load(Ordering::SeqCst) {
            self.cv.wait(&mut g);
        }
        drop(g);
        self.withdraw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn shared_pool_is_fifo() {
        let (pool, locals) = Pool::new(Distribution::Shared, LocalOrder::Fifo, &[None, None]);
        pool.seed(vec![1, 2, 3]);
        pool.push(&locals[1], [4].into_iter());
        let got: Vec<i32> = std::iter::from_fn(|| pool.take(&locals[0])).collect();
        assert_eq!(got, [1, 2, 3, 4]);
    }

    #[test]
    fn a_worker_runs_its_own_units_in_its_local_order_and_thieves_take_the_oldest() {
        for (order, want) in [(LocalOrder::Fifo, [1, 2, 3, 4]), (LocalOrder::Lifo, [4, 3, 2, 1])] {
            let (pool, locals) = Pool::new(Distribution::PerNode, order, &[Some(0), Some(0)]);
            pool.push(&locals[0], [1, 2, 3, 4].into_iter());
            let got: Vec<i32> = std::iter::from_fn(|| pool.take(&locals[0])).collect();
            assert_eq!(got, want, "{order}");
            // Another worker of the node steals a batch from the old end
            // (the older half) and runs one of it.
            pool.push(&locals[0], [1, 2, 3, 4].into_iter());
            let stolen = pool.take(&locals[1]).unwrap();
            assert!(stolen <= 2, "{order}: the thief ran {stolen}");
        }
    }

    #[test]
    fn per_node_takes_local_then_same_node_then_remote() {
        // Workers 0 and 1 on node A, worker 2 on node B.
        let (pool, locals) = Pool::new(Distribution::PerNode, LocalOrder::Fifo, &[Some(0), Some(0), Some(1)]);
        pool.seed((0..30).collect());
        // Node A's queue got the first 20 units (2 of 3 workers), node B the rest.
        assert_eq!(pool.take(&locals[2]), Some(20));
        pool.push(&locals[0], [100, 101].into_iter());
        assert_eq!(pool.take(&locals[0]), Some(100), "own deque first");
        // Worker 1 has nothing local: it takes from its node's queue.
        assert_eq!(pool.take(&locals[1]), Some(0));
        // Drain everything from worker 2: all 32 units come out exactly once.
        let mut all: Vec<i32> = vec![20, 100, 0];
        while let Some(u) = pool.take(&locals[2]) {
            all.push(u);
        }
        all.sort_unstable();
        let mut want: Vec<i32> = (0..30).chain([100, 101]).collect();
        want.sort_unstable();
        assert_eq!(all, want);
    }

    #[test]
    fn routed_units_go_to_their_nodes_queue() {
        // Worker 0 on node 4, worker 1 on node 7; node 9 has no worker.
        let (pool, locals) = Pool::new(Distribution::PerNode, LocalOrder::Fifo, &[Some(4), Some(7)]);
        assert_eq!((pool.queue_of(4), pool.queue_of(7), pool.queue_of(9)), (Some(0), Some(1), None));
        // Even units live on node 7, odd ones on no node with a worker.
        let home = |u: &i32| if u % 2 == 0 { pool.queue_of(7) } else { pool.queue_of(9) }.map(Route::Node);
        pool.seed_routed((0..8).collect(), home);
        // Worker 1 (node 7) finds exactly the even units in its node's queue.
        let mut mine = Vec::new();
        while let Some(u) = pool.take(&locals[1]) {
            if u % 2 == 1 {
                // The unrouted half was dealt in blocks; once node 7's queue
                // is empty the worker steals them: stop there.
                mine.push(u);
                break;
            }
            mine.push(u);
        }
        assert_eq!(&mine[..4], [0, 2, 4, 6], "node 7's queue first, in order");
        // A unit worker 0 generates for node 7 goes to node 7's queue; one
        // for its own node stays on its deque.
        let (pool, locals) = Pool::new(Distribution::PerNode, LocalOrder::Fifo, &[Some(4), Some(7)]);
        pool.push_routed(&locals[0], [100, 101].into_iter(), |u| Some(Route::Node(if *u == 100 { 1 } else { 0 })));
        assert_eq!(pool.take(&locals[1]), Some(100));
        assert_eq!(pool.take(&locals[0]), Some(101));
        assert_eq!(pool.take(&locals[1]), None, "101 was never in node 7's queue");
        // The shared pool has no node queues: routing changes nothing.
        let (shared, sl) = Pool::new(Distribution::Shared, LocalOrder::Fifo, &[Some(4)]);
        assert_eq!(shared.queue_of(4), None);
        shared.seed_routed(vec![1, 2], |_| Some(Route::Node(0)));
        shared.push_routed(&sl[0], [3].into_iter(), |_| Some(Route::Worker(0)));
        let got: Vec<i32> = std::iter::from_fn(|| shared.take(&sl[0])).collect();
        assert_eq!(got, [1, 2, 3]);
    }

    #[test]
    fn a_worker_takes_one_unit_at_a_time_from_another_node() {
        // Worker 0 on node 0, worker 1 on node 1; every unit lives on node 0.
        let (pool, locals) = Pool::new(Distribution::PerNode, LocalOrder::Fifo, &[Some(0), Some(1)]);
        pool.seed_routed((0..40).collect(), |_| pool.queue_of(0).map(Route::Node));
        // Worker 1's own node has nothing: it takes one remote unit, not a batch.
        assert_eq!(pool.take(&locals[1]), Some(0));
        assert!(matches!(&locals[1], WorkerQueue::PerNode { deque, .. } if deque.is_empty()));
        // Worker 0 takes a batch from its own node's queue into its deque.
        assert_eq!(pool.take(&locals[0]), Some(1));
        assert!(matches!(&locals[0], WorkerQueue::PerNode { deque, .. } if !deque.is_empty()));
        // The rest of node 0's queue, then worker 0's deque (stealing from
        // a remote worker is one unit too): the 38 units left, each once,
        // and never more than one on worker 1's deque.
        let mut remote = Vec::new();
        while let Some(u) = pool.take(&locals[1]) {
            remote.push(u);
            assert!(matches!(&locals[1], WorkerQueue::PerNode { deque, .. } if deque.is_empty()), "after unit {u}");
        }
        remote.sort_unstable();
        assert_eq!(remote, (2..40).collect::<Vec<i32>>());
    }

    #[test]
    fn units_routed_to_a_worker_wait_in_its_inbox_and_others_take_them_one_at_a_time() {
        // Two workers of one node, one of another.
        let (pool, locals) = Pool::new(Distribution::PerNode, LocalOrder::Fifo, &[Some(0), Some(0), Some(1)]);
        // Units 0..60 belong to worker 1, 100..110 to worker 5 = worker 2
        // (modulo the workers); 200.. go anywhere.
        let home = |u: &i32| match *u {
            0..60 => Some(Route::Worker(1)),
            100..110 => Some(Route::Worker(5)),
            _ => None,
        };
        pool.seed_routed((0..60).chain(100..110).chain(200..204).collect(), home);
        // Worker 1 takes its own first, in order, in a batch.
        assert_eq!(pool.take(&locals[1]), Some(0));
        assert!(matches!(&locals[1], WorkerQueue::PerNode { deque, .. } if !deque.is_empty()));
        // Worker 2 (the other node) finds its inbox's units before anything else.
        assert_eq!(pool.take(&locals[2]), Some(100));
        // Worker 0 has no inbox units: its node's queue first (the unrouted
        // ones were dealt two to node 0, one to node 1).
        let mine: Vec<i32> = (0..2).filter_map(|_| pool.take(&locals[0])).collect();
        assert_eq!(mine, [200, 201]);
        // Then it steals from worker 1, whose deque and inbox hold the rest
        // of 0..60.
        let stolen = pool.take(&locals[0]).unwrap();
        assert!((1..60).contains(&stolen), "took {stolen}");
        // Everything comes out exactly once.
        let mut all = vec![0, 100, 200, 201, stolen];
        for w in [1, 2, 0] {
            while let Some(u) = pool.take(&locals[w]) {
                all.push(u);
            }
        }
        all.sort_unstable();
        let want: Vec<i32> = (0..60).chain(100..110).chain(200..204).collect();
        assert_eq!(all, want);
        // A unit worker 0 makes for worker 1 goes to worker 1's inbox; one
        // for itself (by number, modulo the workers) stays on its deque.
        let (pool, locals) = Pool::new(Distribution::PerNode, LocalOrder::Fifo, &[Some(0), Some(0), Some(1)]);
        pool.push_routed(&locals[0], [300, 301].into_iter(), |u| Some(Route::Worker(if *u == 300 { 1 } else { 3 })));
        assert!(matches!(&locals[0], WorkerQueue::PerNode { deque, .. } if deque.len() == 1));
        assert_eq!(pool.take(&locals[1]), Some(300));
        assert_eq!(pool.take(&locals[0]), Some(301));
        // The shared pool has no inboxes: a worker route changes nothing.
        let (shared, sl) = Pool::new(Distribution::Shared, LocalOrder::Fifo, &[None, None]);
        shared.seed_routed(vec![1, 2], |_| Some(Route::Worker(1)));
        assert_eq!(shared.take(&sl[0]), Some(1));
    }

    #[test]
    fn a_thief_takes_one_unit_from_another_workers_inbox() {
        let (pool, locals) = Pool::new(Distribution::PerNode, LocalOrder::Fifo, &[Some(0), Some(0)]);
        pool.seed_routed((0..40).collect(), |_| Some(Route::Worker(0)));
        let mut taken = Vec::new();
        while let Some(u) = pool.take(&locals[1]) {
            assert!(
                matches!(&locals[1], WorkerQueue::PerNode { deque, .. } if deque.is_empty()),
                "worker 1 batched worker 0's units (after unit {u})"
            );
            taken.push(u);
        }
        assert_eq!(taken, (0..40).collect::<Vec<i32>>());
    }

    #[test]
    fn waiters_wake_on_work_and_on_the_end() {
        let s = Arc::new(Signal::new(1));
        s.announce();
        let seen = s.epoch();
        let t = {
            let s = s.clone();
            std::thread::spawn(move || {
                s.sleep(seen);
                s.done()
            })
        };
        // A sleep that starts after the epoch moved returns at once.
        assert!(s.finish_many(1));
        assert!(t.join().unwrap());
        s.announce();
        s.sleep(seen);
        let s2 = Signal::new(3);
        s2.stop();
        s2.announce();
        s2.sleep(s2.epoch());
        assert!(s2.stopped());
        assert_eq!(s.sleepers.load(Ordering::SeqCst) + s2.sleepers.load(Ordering::SeqCst), 0, "all withdrew");
    }

    #[test]
    fn a_publish_moves_the_epoch_only_for_an_announced_sleeper() {
        let s = Signal::new(0);
        let e = s.epoch();
        s.published();
        assert_eq!(s.epoch(), e, "nobody sleeps: nothing to write");
        s.announce();
        s.published();
        assert_eq!(s.epoch(), e + 1, "a sleeper: the epoch it waits on moves");
        s.withdraw();
    }

    #[test]
    fn has_work_sees_every_queue() {
        let (pool, locals) = Pool::new(Distribution::PerNode, LocalOrder::Fifo, &[Some(0), Some(1)]);
        assert!(!pool.has_work());
        pool.push(&locals[0], [1].into_iter());
        assert!(pool.has_work(), "a worker's deque");
        assert_eq!(pool.take(&locals[1]), Some(1));
        pool.seed_routed(vec![2], |_| Some(Route::Worker(1)));
        assert!(pool.has_work(), "an inbox");
        assert_eq!(pool.take(&locals[0]), Some(2));
        pool.seed(vec![3]);
        assert!(pool.has_work(), "a node's queue");
        assert_eq!(pool.take(&locals[1]), Some(3));
        assert!(!pool.has_work());
        let (shared, sl) = Pool::new(Distribution::Shared, LocalOrder::Fifo, &[None]);
        shared.seed(vec![4]);
        assert!(shared.has_work());
        assert_eq!(shared.take(&sl[0]), Some(4));
        assert!(!shared.has_work());
    }
}
