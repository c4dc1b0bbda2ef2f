//! Page sizes and huge-page pools, from sysfs (`/sys/kernel/mm` and each
//! node's `hugepages` directory) under a root: the same for every source of
//! the topology.

use std::path::Path;

use super::HugePagePool;
use crate::sets::NodeSet;

/// A number alone in a file; `None` when the file is missing or holds
/// something else (these facts are optional: no huge pages, no THP).
fn read_number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// `hugepages-2048kB` -> 2 MiB.
pub(super) fn parse_hugepage_dir(name: &str) -> Option<usize> {
    let kb: usize = name.strip_prefix("hugepages-")?.strip_suffix("kB")?.parse().ok()?;
    kb.checked_mul(1024)
}

/// The explicit huge page sizes the kernel under `root` offers, ascending.
pub(super) fn huge_page_sizes(root: &Path) -> Vec<usize> {
    let mut sizes: Vec<usize> = std::fs::read_dir(root.join("sys/kernel/mm/hugepages"))
        .map(|d| d.filter_map(|e| parse_hugepage_dir(e.ok()?.file_name().to_str()?)).collect())
        .unwrap_or_default();
    sizes.sort_unstable();
    sizes
}

/// The transparent huge page size, when THP is available.
pub(super) fn thp_size(root: &Path) -> Option<usize> {
    read_number(&root.join("sys/kernel/mm/transparent_hugepage/hpage_pmd_size")).and_then(|n| usize::try_from(n).ok())
}

/// The huge-page pools of `node`, by ascending page size.
pub(super) fn huge_page_pools(root: &Path, node: usize) -> Vec<HugePagePool> {
    let dir = root.join(format!("sys/devices/system/node/node{node}/hugepages"));
    let mut pools: Vec<HugePagePool> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| {
                let e = e.ok()?;
                let size = parse_hugepage_dir(e.file_name().to_str()?)?;
                let p = e.path();
                Some(HugePagePool {
                    size,
                    total: read_number(&p.join("nr_hugepages"))?,
                    free: read_number(&p.join("free_hugepages"))?,
                })
            })
            .collect()
        })
        .unwrap_or_default();
    pools.sort_by_key(|p| p.size);
    pools
}

/// Free huge pages of `size` bytes across `nodes`, from sysfs right now.
pub(crate) fn free_huge_pages(size: usize, nodes: Option<&NodeSet>) -> usize {
    let root = Path::new("/");
    match nodes {
        Some(ns) => {
            ns.iter().flat_map(|n| huge_page_pools(root, n)).filter(|p| p.size == size).map(|p| p.free as usize).sum()
        }
        None => read_number(&root.join(format!("sys/kernel/mm/hugepages/hugepages-{}kB/free_hugepages", size / 1024)))
            .unwrap_or(0) as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugepage_dir_names() {
        assert_eq!(parse_hugepage_dir("hugepages-2048kB"), Some(2 << 20));
        assert_eq!(parse_hugepage_dir("hugepages-1048576kB"), Some(1 << 30));
        assert_eq!(parse_hugepage_dir("junk"), None);
        assert_eq!(parse_hugepage_dir("hugepages-99999999999999999999kB"), None);
    }
}
