//! The calling thread's home node, kept in a thread-local so that a
//! replicated array finds the calling thread's replica without a system
//! call per access.
//!
//! The node is worked out the first time the thread asks ([`home_node`]):
//! from its CPU mask when every CPU of the mask is on one node (a pinned
//! thread, whoever pinned it), otherwise from the CPU it runs on at that
//! moment. Threads pin themselves through numa-alloc's
//! [`pin`] module; one that changes its CPU mask after it
//! first asked calls [`refresh_home_node`].

use core::cell::Cell;

use skelaff_numa_alloc::{NodeSet, Topology, pin, topology};

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

/// Works the home node out again (after the thread's CPU mask changed, e.g.
/// through [`pin::pin_to_node`]) and returns it.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_finds_its_home_node_and_refresh_finds_it_again() {
        let topo = Topology::get().unwrap();
        let cpu = topo.allowed_cpus().first().unwrap();
        let want = topo.pu(cpu).and_then(|p| p.node).unwrap();
        std::thread::spawn(move || {
            pin::pin_to_cpu(cpu).unwrap();
            assert_eq!(home_node(), want, "a pinned thread's mask names one node");
            HOME.with(|h| h.set(UNSET));
            assert_eq!(home_node(), want, "found again from the mask");
            pin::pin_to_node(want).unwrap();
            assert_eq!(refresh_home_node(), want);
        })
        .join()
        .unwrap();
    }
}
