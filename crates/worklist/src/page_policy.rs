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

use std::cell::Cell;

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

/// Has the calling worker, in a run under `policy` (its initial policy in
/// force), take the allocator chunks such runs allocate from: one block
/// under the initial policy and, for [`PagePolicy::Auto`] (which SkelAff
/// switches to bind once the workers generate units), one under the bind
/// policy it switches to. An arena maps and faults in a whole 2 MiB chunk
/// on its first block (about a millisecond), and keeps it for every later
/// run's blocks. For [`Builder::warm_up`](crate::Builder::warm_up). A
/// policy that cannot be set is left to the run, which reports it.
pub(crate) fn take_first_chunks(policy: PagePolicy, info: &WorkerInfo) {
    fn one_block() {
        drop(std::hint::black_box(Box::new([0u8; 64])));
    }
    one_block();
    if policy == PagePolicy::Auto {
        let bind = Policy::Bind(NodeSet::try_single(bind_node(info)).unwrap_or_default());
        if set_worker_policy(bind).is_ok() {
            one_block();
        }
    }
}

thread_local! {
    /// The policy the last [`set_worker_policy`] on this thread put in
    /// force, kept between the runs a pool's thread serves (nothing else
    /// runs on it); `None` after a failed one.
    static IN_FORCE: Cell<Option<Policy>> = const { Cell::new(None) };
}

/// Makes `policy` the calling worker thread's page policy.
///
/// A pool's thread keeps the policy of its last run, so a run with the
/// same policy finds it in force: then only the kernel's copy is read back
/// (one `get_mempolicy`, none when `NumaAlloc` is the global allocator,
/// whose thread policy is this process's own), in place of two checks of
/// `mems_allowed` and two `set_mempolicy` a run. The read-back catches a
/// policy that code in the last run's units set on this thread, or that
/// the kernel rebound after a change of the cpuset's nodes: then the
/// policy is set again, with its checks.
pub(crate) fn set_worker_policy(policy: Policy) -> Result<(), Error> {
    if IN_FORCE.get() == Some(policy) && still_in_force(policy) {
        return Ok(());
    }
    IN_FORCE.set(None);
    if let Err(e) = set_now(policy) {
        // Nothing half set stays behind for the thread's next run.
        clear_worker_policy();
        return Err(e);
    }
    IN_FORCE.set(Some(policy));
    Ok(())
}

/// Sets `policy` as the allocator's thread policy and, unless `NumaAlloc`
/// is the global allocator, as the kernel's.
fn set_now(policy: Policy) -> Result<(), Error> {
    alloc::set_thread_policy(policy)?;
    if NumaAlloc::is_global() {
        return Ok(());
    }
    let topo = Topology::get()?;
    kernel_form(policy).set_for_thread(topo)
}

/// The kernel's form of a worker policy: it has no cyclic mode, so a
/// cyclic policy is its interleave over the same nodes.
fn kernel_form(policy: Policy) -> Policy {
    match policy {
        Policy::Cyclic { nodes, .. } => Policy::Interleave(nodes),
        p => p,
    }
}

/// Whether `policy`, set by this thread's last [`set_worker_policy`], is
/// still the allocator's thread policy and (unless `NumaAlloc` is global)
/// the kernel's. A kernel that cannot say counts as changed.
fn still_in_force(policy: Policy) -> bool {
    alloc::thread_policy() == Some(policy)
        && (NumaAlloc::is_global() || kernel_form(policy).is_thread_policy().unwrap_or(false))
}

/// Whether `NumaAlloc` is the process's global allocator.
pub(crate) fn numa_alloc_is_global() -> bool {
    NumaAlloc::is_global()
}

/// Clears the calling worker thread's policy: the allocator's thread
/// policy is dropped, and the kernel's (set only when `NumaAlloc` is not
/// the global allocator) goes back to the default. An error there is
/// ignored: the next run sets its own policy first thing anyway.
fn clear_worker_policy() {
    IN_FORCE.set(None);
    alloc::clear_thread_policy();
    if NumaAlloc::is_global() {
        return;
    }
    if let Ok(topo) = Topology::get() {
        let _ = Policy::FirstTouch.set_for_thread(topo);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SkelAff's runs switch to bind: warming one up leaves the worker's
    /// thread with the bind policy its runs switch to (its arena's first
    /// chunk taken); other policies keep the one the run set.
    #[test]
    fn warming_an_auto_run_takes_the_bind_policy_it_switches_to() {
        std::thread::spawn(|| {
            let topo = Topology::get().unwrap();
            let info = WorkerInfo { index: 0, cpu: None, node: topo.nodes_with_cpus().first(), threads: 1 };
            let node = bind_node(&info);
            let cyclic = initial_policy(PagePolicy::Auto, &info, topo.allowed_nodes(), 4096);
            set_worker_policy(cyclic).unwrap();
            take_first_chunks(PagePolicy::Auto, &info);
            assert_eq!(alloc::thread_policy(), Some(Policy::Bind(NodeSet::single(node))));
            let interleave = initial_policy(PagePolicy::Interleave, &info, topo.allowed_nodes(), 4096);
            set_worker_policy(interleave).unwrap();
            take_first_chunks(PagePolicy::Interleave, &info);
            assert_eq!(alloc::thread_policy(), Some(interleave));
            clear_worker_policy();
        })
        .join()
        .unwrap();
    }
}
