//! Whether a region's pages fit on its nodes: the check before a strict
//! region (bind, cyclic) is mapped, and the prefault that finds a full
//! node as an error rather than as the OOM killer.
//!
//! Under `MPOL_BIND` the kernel never places a page elsewhere: a page
//! fault that finds the bound nodes full (after reclaim) calls the OOM
//! killer, constrained to the policy's nodes, and some process dies,
//! usually the faulting one, with no error it could catch. So a strict
//! region is checked against its nodes' available memory before it is
//! mapped, and a prefault runs under the policy's soft form (preferred
//! over the same nodes) and then applies the policy with a move: a page
//! that went elsewhere is migrated, and a migration that finds the node
//! full fails (`EIO`) instead of killing. See the crate docs' "When a node
//! is full".

use crate::error::{Error, Result};
use crate::node_memory;
use crate::placement::{PageLocation, Placement};
use crate::policy::{Apply, Form, Policy};
use crate::sets::NodeSet;
use crate::sys;
use crate::topology::Topology;

/// What a strict policy asks of some of its nodes: the nodes, the bytes
/// asked of them, the bytes they had available when asked.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Demand {
    nodes: NodeSet,
    requested: u64,
    available: u64,
}

/// The bytes of a `len`-byte range a strict policy puts on its nodes: all
/// of it on the set for bind (the kernel chooses among them), each node's
/// blocks for cyclic; nothing for the other policies, which the kernel
/// lets spill to other nodes.
fn shares(policy: &Policy, len: usize) -> Vec<(NodeSet, u64)> {
    match *policy {
        Policy::Bind(nodes) => vec![(nodes, len as u64)],
        Policy::Cyclic { nodes, block } if block > 0 && !nodes.is_empty() => {
            let n = nodes.len();
            let blocks = len.div_ceil(block);
            nodes
                .iter()
                .enumerate()
                .map(|(i, node)| {
                    let count = blocks.saturating_sub(i).div_ceil(n) as u64;
                    let mut bytes = count * block as u64;
                    // The last block is short when `block` does not divide `len`.
                    if len % block != 0 && (blocks - 1) % n == i {
                        bytes -= (block - len % block) as u64;
                    }
                    (NodeSet::single(node), bytes)
                })
                .filter(|&(_, bytes)| bytes > 0)
                .collect()
        }
        _ => Vec::new(),
    }
}

/// Checks that a strict policy's nodes have the memory for `len` bytes now
/// ([`NodeMemory::available`](crate::node_memory::NodeMemory::available):
/// free plus reclaimable page cache). Returns what was asked and found, for
/// an error after the prefault. A node whose memory cannot be read is not
/// checked (the kernel then answers for itself).
///
/// # Errors
///
/// [`Error::NodeFull`] naming the nodes, the bytes asked and the bytes
/// they had.
pub(crate) fn check_room(policy: &Policy, len: usize) -> Result<Vec<Demand>> {
    let mut demands = Vec::new();
    for (nodes, requested) in shares(policy, len) {
        let Ok(available) = node_memory::available_on(&nodes) else { continue };
        let d = Demand { nodes, requested, available };
        if requested > available {
            return Err(full(policy, d));
        }
        demands.push(d);
    }
    Ok(demands)
}

/// The error for a demand its nodes could not meet.
fn full(policy: &Policy, d: Demand) -> Error {
    Error::NodeFull { policy: policy.name(), nodes: Box::new(d.nodes), requested: d.requested, available: d.available }
}

/// Maps every page of `[ptr, ptr + len)` where `policy` puts it. A strict
/// policy's pages are faulted in under its soft form and then moved where
/// the policy says; for preferred and interleave, the pages the kernel put
/// outside the policy's nodes are counted. Returns that count (0 for the
/// other policies).
///
/// # Errors
///
/// [`Error::NodeFull`] when a strict policy's pages could not all be put on
/// its nodes (`demands`, from [`check_room`], says what was asked and
/// found; the tightest is reported); what `mbind` or `madvise` report.
///
/// # Safety
///
/// `[ptr, ptr + len)` is a fresh anonymous mapping the caller owns, aligned
/// to `page_size`, which divides `len`; nothing else reads or writes it
/// while this runs.
pub(crate) unsafe fn prefault(
    topo: &Topology,
    policy: &Policy,
    ptr: *mut u8,
    len: usize,
    page_size: usize,
    demands: &[Demand],
) -> Result<usize> {
    if policy.is_strict() {
        policy.apply_as(topo, ptr, len, Apply::Fresh, Form::Soft)?;
        // SAFETY: forwarded from the caller.
        unsafe { populate(ptr, len, page_size) }?;
        return match policy.apply(topo, ptr, len, Apply::Migrate) {
            Ok(()) => Ok(0),
            Err(Error::MigrationIncomplete { .. }) => {
                let tightest = demands.iter().min_by_key(|d| d.available.saturating_sub(d.requested));
                let nodes = policy.nodes();
                let d = tightest.copied().unwrap_or(Demand {
                    nodes,
                    requested: len as u64,
                    available: node_memory::available_on(&nodes).unwrap_or(0),
                });
                Err(full(policy, d))
            }
            Err(e) => Err(e),
        };
    }
    policy.apply(topo, ptr, len, Apply::Fresh)?;
    // SAFETY: forwarded from the caller.
    unsafe { populate(ptr, len, page_size) }?;
    if !matches!(policy, Policy::Preferred(_) | Policy::Interleave(_)) {
        return Ok(0);
    }
    match policy.apply_as(topo, ptr, len, Apply::Fresh, Form::Check) {
        Ok(()) => Ok(0),
        Err(Error::Sys(e)) if e.errno() == libc::EIO => {
            let nodes = policy.nodes();
            let placement = Placement::query(ptr, len, page_size)?;
            Ok(placement.pages().iter().filter(|l| matches!(l, PageLocation::Node(n) if !nodes.contains(*n))).count())
        }
        Err(e) => Err(e),
    }
}

/// Maps every page of `[ptr, ptr + len)` now (writing it), where the
/// range's policy puts it.
///
/// # Safety
///
/// As [`prefault`].
unsafe fn populate(ptr: *mut u8, len: usize, page_size: usize) -> Result<()> {
    // SAFETY: the caller's mapping; MADV_POPULATE_WRITE faults pages in
    // without changing their (zero) contents.
    match unsafe { sys::madvise(ptr, len, sys::MADV_POPULATE_WRITE) } {
        Ok(()) => Ok(()),
        Err(e) if e.errno() == libc::EINVAL => {
            // Kernels before 5.14: touch each page. Writing the value a
            // page already holds maps it without changing contents.
            for off in (0..len).step_by(page_size) {
                // SAFETY: `off < len`, inside the caller's mapping, which
                // nothing else accesses meanwhile.
                unsafe {
                    let p = ptr.add(off);
                    p.write_volatile(p.read_volatile());
                }
            }
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> NodeSet {
        s.parse().unwrap()
    }

    #[test]
    fn bind_asks_everything_of_its_set_and_cyclic_each_node_its_blocks() {
        assert_eq!(shares(&Policy::Bind(set("1-2")), 100), [(set("1-2"), 100)]);
        let p = Policy::Cyclic { nodes: set("0,2,5"), block: 4096 };
        // Seven blocks, the last (block 6, node 0's third) 100 bytes short.
        let len = 7 * 4096 - 100;
        assert_eq!(shares(&p, len), [(set("0"), 3 * 4096 - 100), (set("2"), 2 * 4096), (set("5"), 2 * 4096)]);
        assert_eq!(shares(&p, len).iter().map(|s| s.1).sum::<u64>(), len as u64);
        // Fewer blocks than nodes: the last nodes get nothing.
        assert_eq!(shares(&p, 4096), [(set("0"), 4096)]);
        assert!(shares(&Policy::Preferred(1), 100).is_empty());
        assert!(shares(&Policy::Interleave(set("0-1")), 100).is_empty());
    }

    #[test]
    fn a_node_without_the_memory_is_refused_naming_what_it_has() {
        let node = Topology::get().unwrap().allowed_nodes().first().unwrap();
        let total = node_memory::node_memory(node).unwrap().total as usize;
        let p = Policy::Bind(NodeSet::single(node));
        let e = check_room(&p, total + (1 << 30)).unwrap_err();
        let Error::NodeFull { policy: "bind", nodes, requested, available } = &e else { panic!("{e}") };
        assert_eq!((**nodes, *requested), (NodeSet::single(node), (total + (1 << 30)) as u64));
        assert!(*available <= total as u64);
        let text = e.to_string();
        assert!(text.contains(&format!("on NUMA node(s) {node}, which have {available} bytes")), "{text}");
        assert!(text.contains("preferred:NODE"), "{text}");
        let fits = check_room(&p, 4096).unwrap();
        assert_eq!(fits.len(), 1);
        assert!(check_room(&Policy::Preferred(node), usize::MAX / 2).unwrap().is_empty());
    }
}
