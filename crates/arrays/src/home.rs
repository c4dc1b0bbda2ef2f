//! The calling thread's home node, kept in a thread-local so that a
//! replicated array finds the calling thread's replica without a system
//! call per access.
//!
//! The node is set when a thread pins itself through [`pin_to_cpu`] or
//! [`pin_to_node`] of this module, or else worked out the first time the
//! thread asks ([`home_node`]): from its CPU mask when every CPU of the mask
//! is on one node (a pinned thread, whoever pinned it), otherwise from the
//! CPU it runs on at that moment. A thread that changes its CPU mask by
//! other means after it first asked calls [`refresh_home_node`].

use core::cell::Cell;

use skelaff_numa_alloc::{NodeSet, Topology, pin, topology};

use crate::error::Result;

/// No node known yet.
const UNSET: usize = usize::MAX;

thread_local! {
    static HOME: Cell<usize> = const { Cell::new(UNSET) };
}

/// The calling thread's home node (kernel numbering).
///
/// Cheap after the first call (a thread-local read). The first call reads
/// the thread's CPU mask; if the topology or the mask cannot be read it
/// falls back to the CPU the thread runs on, then to the first allowed node.
///
/// # Examples
///
/// ```
/// use skelaff_arrays::home;
///
/// let node = home::home_node();
/// assert!(skelaff_numa_alloc::Topology::get()?.allowed_nodes().contains(node));
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
#[inline]
pub fn home_node() -> usize {
    let n = HOME.with(Cell::get);
    if n != UNSET { n } else { refresh_home_node() }
}

/// Works the home node out again (after the thread's CPU mask changed by
/// means other than this module's pinning functions) and returns it.
#[cold]
pub fn refresh_home_node() -> usize {
    let node = discover().unwrap_or(0);
    HOME.with(|h| h.set(node));
    node
}

fn discover() -> Option<usize> {
    let topo = Topology::get().ok()?;
    if let Ok(mask) = topology::thread_affinity() {
        let nodes: NodeSet = mask.iter().filter_map(|cpu| topo.pu(cpu).and_then(|p| p.node)).collect();
        if nodes.len() == 1 {
            return nodes.first();
        }
    }
    pin::current_node().ok().or_else(|| topo.allowed_nodes().first())
}

/// Pins the calling thread to `cpu` and records that CPU's node as its home.
///
/// # Errors
///
/// As [`skelaff_numa_alloc::pin::pin_to_cpu`] (a CPU this process may not use).
pub fn pin_to_cpu(cpu: usize) -> Result<()> {
    pin::pin_to_cpu(cpu)?;
    let node = Topology::get()?.pu(cpu).and_then(|p| p.node);
    match node {
        Some(n) => HOME.with(|h| h.set(n)),
        None => {
            refresh_home_node();
        }
    }
    Ok(())
}

/// Pins the calling thread to the CPUs of `node` and records `node` as its home.
///
/// # Errors
///
/// As [`skelaff_numa_alloc::pin::pin_to_node`]: a node that does not exist,
/// or one without CPUs.
pub fn pin_to_node(node: usize) -> Result<()> {
    pin::pin_to_node(node)?;
    HOME.with(|h| h.set(node));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_sets_the_home_node_and_refresh_finds_it_again() {
        let topo = Topology::get().unwrap();
        let cpu = topo.allowed_cpus().first().unwrap();
        let want = topo.pu(cpu).and_then(|p| p.node).unwrap();
        std::thread::spawn(move || {
            pin_to_cpu(cpu).unwrap();
            assert_eq!(home_node(), want);
            HOME.with(|h| h.set(UNSET));
            assert_eq!(home_node(), want, "a pinned thread's mask names one node");
            pin_to_node(want).unwrap();
            assert_eq!(refresh_home_node(), want);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn bad_pins_are_errors() {
        assert!(pin_to_node(skelaff_numa_alloc::MAX_NODES + 1).is_err());
        assert!(pin_to_cpu(1 << 20).is_err());
    }
}
