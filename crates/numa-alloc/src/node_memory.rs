//! How much memory each NUMA node has free right now, as the kernel reports
//! it in sysfs (`/sys/devices/system/node/nodeN/meminfo`), and which nodes
//! this process may allocate on right now (its cpuset's `mems_allowed`).
//!
//! [`Topology`](crate::Topology) holds each node's total memory as read once
//! at start-up; this module answers the question that changes from moment to
//! moment: would an allocation of so many bytes fit on that node now? The
//! answer is an estimate, as the kernel's own `MemAvailable` is: free pages
//! plus the page cache and slab the kernel can drop without writing anything.

use crate::error::{Error, Result, SysError};
use crate::sets::{MAX_NODES, NodeSet};
use crate::sys;

/// One node's memory, in bytes, at the moment it was read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NodeMemory {
    /// The node (kernel numbering).
    pub node: usize,
    /// All memory of the node (`MemTotal`).
    pub total: u64,
    /// Pages no one uses (`MemFree`).
    pub free: u64,
    /// Clean page cache and slab the kernel reclaims first (`Inactive(file)`
    /// plus `SReclaimable`): usable without swapping anything out.
    pub reclaimable: u64,
}

impl NodeMemory {
    /// What an allocation may take on this node without pushing anything
    /// out to swap: free plus easily reclaimable memory.
    pub fn available(&self) -> u64 {
        self.free.saturating_add(self.reclaimable)
    }
}

/// Reads `node`'s memory from sysfs. On a kernel without NUMA support
/// (no `/sys/devices/system/node`), node 0 is read from `/proc/meminfo`.
///
/// # Errors
///
/// [`Error::NodeMemoryUnreadable`] or [`Error::NodeMemoryFormat`], naming
/// the file, when it cannot be read or lacks the `MemTotal`/`MemFree`
/// lines (for instance a node that does not exist).
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{node_memory, Topology};
///
/// let node = Topology::get()?.allowed_nodes().first().unwrap();
/// let m = node_memory::node_memory(node)?;
/// assert!(m.free <= m.total && m.available() >= m.free);
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub fn node_memory(node: usize) -> Result<NodeMemory> {
    let path = format!("/sys/devices/system/node/node{node}/meminfo");
    // What reading `path` failed with, as the errno it set.
    let unreadable = |path: String, e: std::io::Error| Error::NodeMemoryUnreadable {
        node,
        path,
        source: SysError::new("read", e.raw_os_error().unwrap_or(libc::EIO)),
    };
    let (path, text) = match std::fs::read_to_string(&path) {
        Ok(t) => (path, t),
        Err(_) if node == 0 && !std::path::Path::new("/sys/devices/system/node").exists() => {
            let p = "/proc/meminfo".to_owned();
            let t = std::fs::read_to_string(&p).map_err(|e| unreadable(p.clone(), e))?;
            (p, t)
        }
        Err(e) => return Err(unreadable(path, e)),
    };
    parse_meminfo(node, &text).ok_or(Error::NodeMemoryFormat { node, path })
}

/// The memory `node` has available now ([`NodeMemory::available`]),
/// read without allocating (the global allocator asks it before binding a
/// chunk); `None` if the node's `meminfo` cannot be read or parsed.
pub(crate) fn available_now(node: usize) -> Option<u64> {
    const PREFIX: &[u8] = b"/sys/devices/system/node/node";
    const SUFFIX: &[u8] = b"/meminfo\0";
    let mut path = [0u8; PREFIX.len() + 20 + SUFFIX.len()];
    let mut len = PREFIX.len();
    path[..len].copy_from_slice(PREFIX);
    let mut digits = [0u8; 20];
    let mut d = digits.len();
    let mut n = node;
    loop {
        d -= 1;
        digits[d] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    path[len..len + digits.len() - d].copy_from_slice(&digits[d..]);
    len += digits.len() - d;
    path[len..len + SUFFIX.len()].copy_from_slice(SUFFIX);
    let path = core::ffi::CStr::from_bytes_until_nul(&path).ok()?;
    // A node's meminfo is about 1.2 KiB; MemTotal, MemFree, Inactive(file)
    // and SReclaimable are in its first 2 KiB.
    let mut buf = [0u8; 4096];
    let n = sys::read_file(path, &mut buf).ok()?;
    let text = core::str::from_utf8(&buf[..n]).ok()?;
    parse_meminfo(node, text).map(|m| m.available())
}

/// The memory the nodes of `nodes` have available together, read now.
///
/// # Errors
///
/// As [`node_memory`], for the first node that cannot be read.
pub fn available_on(nodes: &NodeSet) -> Result<u64> {
    nodes.iter().try_fold(0u64, |sum, n| Ok(sum.saturating_add(node_memory(n)?.available())))
}

/// The nodes this process may allocate on now: its cpuset's
/// `mems_allowed`, asked of the kernel (`get_mempolicy` with
/// `MPOL_F_MEMS_ALLOWED`, one system call). Unlike
/// [`Topology::allowed_nodes`](crate::Topology::allowed_nodes), read once
/// at start-up, this follows a move of the process to another cgroup or a
/// change of its cpuset's `cpuset.mems`.
///
/// # Errors
///
/// [`Error::Sys`] if the kernel refuses the call (`ENOSYS` on a kernel
/// without NUMA support).
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{node_memory, Topology};
///
/// let now = node_memory::mems_allowed_now()?;
/// assert!(Topology::get()?.allowed_nodes().is_subset(&now));
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub fn mems_allowed_now() -> Result<NodeSet> {
    let mut words = [0u64; MAX_NODES / 64];
    sys::mems_allowed(&mut words)?;
    Ok(NodeSet::from_words(&words))
}

/// Checks that every node of `nodes` is in this process's `mems_allowed`
/// now ([`mems_allowed_now`]). A kernel that cannot say lets the check pass
/// (the `mbind` that follows then answers for itself).
///
/// # Errors
///
/// [`Error::NodeNotAllowed`] naming the first node that is not allowed and
/// the nodes that are.
pub(crate) fn check_allowed_now(nodes: &NodeSet) -> Result<()> {
    // No node to check (first touch, the default policy): no system call
    // (a worker pool's threads set it after every run).
    if nodes.is_empty() {
        return Ok(());
    }
    let Ok(allowed) = mems_allowed_now() else { return Ok(()) };
    match nodes.iter().find(|&n| !allowed.contains(n)) {
        Some(node) => Err(Error::NodeNotAllowed { node, allowed: Box::new(allowed) }),
        None => Ok(()),
    }
}

/// Parses meminfo text: lines `Node 0 MemFree:  123 kB` (sysfs) or
/// `MemFree:  123 kB` (procfs).
pub(crate) fn parse_meminfo(node: usize, text: &str) -> Option<NodeMemory> {
    let field = |name: &str| -> Option<u64> {
        text.lines().find_map(|line| {
            let rest = line.split_once(name).map(|(before, after)| (before.trim(), after))?;
            // `before` is empty (procfs) or `Node N` (sysfs); reject e.g.
            // `Active(file)` matching `(file)`.
            if !(rest.0.is_empty() || rest.0.starts_with("Node ")) {
                return None;
            }
            let mut words = rest.1.split_whitespace();
            let n: u64 = words.next()?.parse().ok()?;
            Some(if words.next() == Some("kB") { n.saturating_mul(1024) } else { n })
        })
    };
    Some(NodeMemory {
        node,
        total: field("MemTotal:")?,
        free: field("MemFree:")?,
        reclaimable: field("Inactive(file):").unwrap_or(0).saturating_add(field("SReclaimable:").unwrap_or(0)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_and_procfs_forms() {
        let sysfs = "Node 1 MemTotal:  1000 kB\nNode 1 MemFree:   200 kB\nNode 1 Active(file): 5 kB\n\
                     Node 1 Inactive(file): 300 kB\nNode 1 SReclaimable: 10 kB\n";
        let m = parse_meminfo(1, sysfs).unwrap();
        assert_eq!((m.total, m.free, m.reclaimable), (1000 << 10, 200 << 10, 310 << 10));
        assert_eq!(m.available(), 510 << 10);
        let procfs = "MemTotal: 64 kB\nMemFree: 32 kB\nInactive(file): 8 kB\n";
        assert_eq!(parse_meminfo(0, procfs).unwrap().available(), 40 << 10);
        assert!(parse_meminfo(0, "garbage").is_none());
    }

    #[test]
    fn the_allocators_read_agrees_with_the_public_one() {
        let node = crate::Topology::get().unwrap().allowed_nodes().first().unwrap();
        let a = available_now(node).unwrap();
        let m = node_memory(node).unwrap();
        // Both are readings of a moving figure: within 64 MiB of each other.
        assert!(a.abs_diff(m.available()) < 64 << 20, "{a} vs {m:?}");
        assert!(a <= m.total);
        assert_eq!(available_now(crate::MAX_NODES + 7), None);
        assert_eq!(available_on(&NodeSet::new()).unwrap(), 0);
    }

    #[test]
    fn mems_allowed_now_names_the_node_outside_it() {
        let allowed = mems_allowed_now().unwrap();
        assert!(check_allowed_now(&allowed).is_ok());
        let outside = (0..MAX_NODES).find(|&n| !allowed.contains(n)).unwrap();
        let e = check_allowed_now(&NodeSet::single(outside)).unwrap_err();
        assert_eq!(e, Error::NodeNotAllowed { node: outside, allowed: Box::new(allowed) });
        let text = e.to_string();
        assert!(
            text.contains(&format!("node {outside} is not allowed")) && text.contains(&allowed.to_string()),
            "{text}"
        );
    }

    #[test]
    fn this_machine_reports_its_nodes_and_refuses_others() {
        let topo = crate::Topology::get().unwrap();
        for node in topo.allowed_nodes().iter() {
            let m = node_memory(node).unwrap();
            assert!(m.total > 0 && m.free <= m.total, "{m:?}");
        }
        let e = node_memory(crate::MAX_NODES + 7).unwrap_err().to_string();
        assert!(e.contains("node") && e.contains("meminfo"), "{e}");
    }
}
