//! Which page policy a worker has, and how it takes effect.
//!
//! When [`NumaAlloc`] is the global allocator, the policy becomes the
//! worker thread's allocator policy: every block the worker allocates
//! afterwards comes from chunks bound (`mbind`) as the policy says, and stays
//! there. Otherwise the policy is set as the thread's kernel memory policy
//! (`set_mempolicy`): pages the thread faults in follow it whichever
//! allocator handed out the memory, but memory the allocator already had
//! keeps its place, and pages carry no policy of their own afterwards (the
//! kernel may merge and move them). The kernel has no cyclic mode; there a
//! cyclic policy is approximated by the kernel's interleave over the same
//! nodes.

use skelaff_numa_alloc::alloc::{self, NumaAlloc};
use skelaff_numa_alloc::{Error, NodeSet, Policy, Topology, pin};

use crate::config::PagePolicy;
use crate::skeleton::WorkerInfo;

/// The policy a worker starts with.
pub(crate) fn initial_policy(policy: PagePolicy, info: &WorkerInfo, nodes: NodeSet, page_size: usize) -> Policy {
    match policy {
        PagePolicy::FirstTouch => Policy::FirstTouch,
        PagePolicy::Auto | PagePolicy::Cyclic => Policy::Cyclic { nodes, block: page_size },
        PagePolicy::Interleave => Policy::Interleave(nodes),
        PagePolicy::Bind => Policy::Bind(NodeSet::try_single(bind_node(info)).unwrap_or_default()),
    }
}

/// The node a worker binds its allocations to: its CPU's, else the one it runs on now.
pub(crate) fn bind_node(info: &WorkerInfo) -> usize {
    info.node.or_else(|| pin::current_node().ok()).unwrap_or(0)
}

/// Makes `policy` the calling worker thread's page policy.
pub(crate) fn set_worker_policy(policy: Policy) -> Result<(), Error> {
    alloc::set_thread_policy(policy)?;
    if NumaAlloc::is_global() {
        return Ok(());
    }
    let topo = Topology::get()?;
    let kernel = match policy {
        Policy::Cyclic { nodes, .. } => Policy::Interleave(nodes),
        p => p,
    };
    kernel.set_for_thread(topo)
}

/// Whether `NumaAlloc` is the process's global allocator.
pub(crate) fn numa_alloc_is_global() -> bool {
    NumaAlloc::is_global()
}

/// Clears the calling worker thread's policy after a run of `policy`, so
/// that nothing the thread allocates between runs (or in the next run,
/// before it sets its own) follows this run's policy: the allocator's
/// thread policy is dropped, and the kernel's (set only when `NumaAlloc`
/// is not the global allocator) goes back to the default. An error there
/// is ignored: the next run sets its own policy first thing anyway.
pub(crate) fn reset_worker_policy(policy: PagePolicy) {
    alloc::clear_thread_policy();
    if NumaAlloc::is_global() || policy == PagePolicy::FirstTouch {
        // A first-touch run (that never switches) left the kernel default.
        return;
    }
    if let Ok(topo) = Topology::get() {
        let _ = Policy::FirstTouch.set_for_thread(topo);
    }
}
