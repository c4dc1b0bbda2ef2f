//! How the workloads run their parallel loops: a [`Runner`] calls a job on
//! each of its threads, thread `t` always on the same node, so a
//! [`Partition`](crate::Partition) built from
//! [`Runner::thread_nodes`] is the loop's static schedule. The spmv `Team`
//! fits behind it (see `examples/shoal_pagerank.rs`); [`PinnedThreads`] is
//! the crate's own, which starts its threads for each job.

use parking_lot::Mutex;
use skelaff_numa_alloc::{Mapping, Topology, pin};

use crate::error::{Error, Result};
use crate::home;

/// Threads with fixed nodes that run a job on all of them at once.
pub trait Runner: Sync {
    /// The node of each thread, thread 0 first.
    fn thread_nodes(&self) -> Vec<usize>;

    /// Calls `job(t)` on thread `t` for every thread; returns when all are done.
    fn run(&self, job: &(dyn Fn(usize) + Sync));
}

/// Runs `f` on every thread of `runner` and returns the results, thread 0 first.
pub fn run_collect<R: Send>(runner: &dyn Runner, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let threads = runner.thread_nodes().len();
    let out: Vec<Mutex<Option<R>>> = (0..threads).map(|_| Mutex::new(None)).collect();
    runner.run(&|t| {
        let r = f(t);
        if let Some(slot) = out.get(t) {
            *slot.lock() = Some(r);
        }
    });
    out.into_iter().filter_map(Mutex::into_inner).collect()
}

/// `threads` threads on CPUs laid out by the scatter mapping and grouped by
/// node (the spmv `Team`'s layout), started and pinned for each job.
///
/// # Examples
///
/// ```
/// use skelaff_arrays::workloads::{PinnedThreads, Runner, run_collect};
///
/// let threads = PinnedThreads::new(2)?;
/// let squares = run_collect(&threads, |t| t * t);
/// assert_eq!(squares, vec![0, 1]);
/// assert_eq!(threads.thread_nodes().len(), 2);
/// # Ok::<(), skelaff_arrays::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct PinnedThreads {
    cpus: Vec<usize>,
    nodes: Vec<usize>,
}

impl PinnedThreads {
    /// `threads` threads over this machine's CPUs (reused round-robin when
    /// there are more threads than CPUs).
    ///
    /// # Errors
    ///
    /// [`Error::ZeroThreads`]; [`Error::Numa`] when no CPU is usable.
    pub fn new(threads: usize) -> Result<PinnedThreads> {
        if threads == 0 {
            return Err(Error::ZeroThreads);
        }
        let topo = Topology::get()?;
        let plan = Mapping::Scatter.plan(topo, threads)?;
        let fallback = topo.allowed_nodes().first().unwrap_or(0);
        let mut slots: Vec<(usize, usize)> = plan.slots.iter().map(|s| (s.node.unwrap_or(fallback), s.cpu)).collect();
        slots.sort_by_key(|&(node, _)| node);
        Ok(PinnedThreads { cpus: slots.iter().map(|s| s.1).collect(), nodes: slots.iter().map(|s| s.0).collect() })
    }

    /// The CPU of each thread.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }
}

impl Runner for PinnedThreads {
    fn thread_nodes(&self) -> Vec<usize> {
        self.nodes.clone()
    }

    fn run(&self, job: &(dyn Fn(usize) + Sync)) {
        std::thread::scope(|s| {
            for (t, &cpu) in self.cpus.iter().enumerate() {
                s.spawn(move || {
                    // A CPU this process may use (the plan drew it from the
                    // allowed set); if the kernel refuses, the job still runs,
                    // unpinned, and reads the replica of wherever it is.
                    if pin::pin_to_cpu(cpu).is_ok() {
                        home::refresh_home_node();
                    }
                    job(t);
                });
            }
        });
    }
}
