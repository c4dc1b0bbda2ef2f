//! How a worker's page policy takes effect.
//!
//! The policy is set as the worker thread's kernel memory policy
//! (`set_mempolicy`), so pages the thread faults in follow it whichever
//! allocator handed out the memory. The kernel has no cyclic mode: a cyclic
//! policy is approximated by the kernel's interleave over the same nodes.

use skelaff_numa_alloc::{Error, Policy, Topology};

/// Makes `policy` the calling worker thread's page policy.
pub(crate) fn set_worker_policy(policy: Policy) -> Result<(), Error> {
    let topo = Topology::get()?;
    let kernel = match policy {
        Policy::Cyclic { nodes, .. } => Policy::Interleave(nodes),
        p => p,
    };
    kernel.set_for_thread(topo)
}

/// Whether `NumaAlloc` is the process's global allocator.
pub(crate) fn numa_alloc_is_global() -> bool {
    false
}
