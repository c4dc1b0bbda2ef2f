//! How much memory each NUMA node has free right now, as the kernel reports
//! it in sysfs (`/sys/devices/system/node/nodeN/meminfo`).
//!
//! [`Topology`](crate::Topology) holds each node's total memory as read once
//! at start-up; this module answers the question that changes from moment to
//! moment: would an allocation of so many bytes fit on that node now? The
//! answer is an estimate, as the kernel's own `MemAvailable` is: free pages
//! plus the page cache and slab the kernel can drop without writing anything.

use crate::error::{Error, Result, SysError};

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

/// Parses meminfo text: lines `Node 0 MemFree:  123 kB` (sysfs) or
/// `MemFree:  123 kB` (procfs).
fn parse_meminfo(node: usize, text: &str) -> Option<NodeMemory> {
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
