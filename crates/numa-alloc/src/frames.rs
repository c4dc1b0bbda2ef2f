//! Where a present page is, from its physical frame: the frame number from
//! `/proc/self/pagemap` and the node whose memory holds it from
//! `/proc/zoneinfo`. [`Placement::locate_pages`](crate::Placement::locate_pages)
//! asks here first, for two reasons:
//!
//! - it is cheaper: one read covers a run of nearby pages, where
//!   `move_pages` costs about half a microsecond per page (a profile's
//!   thousand sampled pages took 0.4-0.6 ms at the end of every run);
//! - `move_pages` calls absent pages that are present: with automatic NUMA
//!   balancing on, the guests' kernel (Debian's 6.1) did so for every page
//!   whose entry the balancing scanner had made inaccessible to catch the
//!   next access (a NUMA hinting fault).
//!
//! Only pages mapped by this process alone are answered here (pagemap's
//! "exclusively mapped" bit): the shared zero page that backs untouched
//! memory, and pages shared with a forked child, are left to `move_pages`,
//! which calls the first absent. Frame numbers are readable only with
//! `CAP_SYS_ADMIN`; without it the kernel shows them as zero, nothing is
//! found here, and after the first such answer nothing is asked.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bit 63 of a pagemap entry: the page is present in memory.
const PRESENT: u64 = 1 << 63;
/// Bit 56 of a pagemap entry: the page is mapped by this process alone.
const EXCLUSIVE: u64 = 1 << 56;
/// Sorted pages at most this far apart are read in one run (the entries
/// between cost 8 bytes each).
const GAP: u64 = 64;
/// The most pagemap entries one read covers.
const MAX_RUN: u64 = 4096;

/// Set once the kernel showed a present page's frame number as zero:
/// frame numbers are not readable by this process.
static UNREADABLE: AtomicBool = AtomicBool::new(false);
/// Bits 0-54 of a pagemap entry: the frame number, when present.
const PFN_MASK: u64 = (1 << 55) - 1;

/// One zone: frames `[start, start + spanned)` of `node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Zone {
    node: usize,
    start: u64,
    spanned: u64,
}

/// The zones of `/proc/zoneinfo` with frames, read once.
fn zones() -> &'static [Zone] {
    static ZONES: OnceLock<Vec<Zone>> = OnceLock::new();
    ZONES.get_or_init(|| std::fs::read_to_string("/proc/zoneinfo").map(|t| parse_zoneinfo(&t)).unwrap_or_default())
}

/// The zones of a `/proc/zoneinfo` text: each `Node N, zone NAME` block
/// with a `spanned` and a `start_pfn` line; empty zones left out.
fn parse_zoneinfo(text: &str) -> Vec<Zone> {
    let mut zones = Vec::new();
    let mut current: Option<(usize, Option<u64>, Option<u64>)> = None;
    let mut flush = |c: Option<(usize, Option<u64>, Option<u64>)>| {
        if let Some((node, Some(start), Some(spanned))) = c {
            if spanned > 0 {
                zones.push(Zone { node, start, spanned });
            }
        }
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Node ") {
            flush(current.take());
            current = rest.split(',').next().and_then(|n| n.trim().parse().ok()).map(|n| (n, None, None));
            continue;
        }
        let Some((_, start, spanned)) = current.as_mut() else { continue };
        let mut words = line.split_whitespace();
        match (words.next(), words.next().and_then(|w| w.parse::<u64>().ok())) {
            (Some("start_pfn:"), Some(v)) => *start = Some(v),
            (Some("spanned"), Some(v)) => *spanned = Some(v),
            _ => {}
        }
    }
    flush(current);
    zones
}

/// The node whose zone holds frame `pfn`.
fn node_of_frame(zones: &[Zone], pfn: u64) -> Option<usize> {
    zones.iter().find(|z| pfn >= z.start && pfn - z.start < z.spanned).map(|z| z.node)
}

/// For each address, the node holding its page if the page is present,
/// mapped by this process alone and its frame number readable; `None`
/// otherwise (and for every address if `/proc/self/pagemap` cannot be read
/// or shows no frame numbers).
pub(crate) fn nodes_of_present_pages(addrs: &[*const u8], page_size: usize) -> Vec<Option<usize>> {
    let mut out = vec![None; addrs.len()];
    if UNREADABLE.load(Ordering::Relaxed) || addrs.is_empty() {
        return out;
    }
    let zones = zones();
    let Ok(pagemap) = File::open("/proc/self/pagemap") else { return out };
    let pages: Vec<u64> = addrs.iter().map(|&a| (a as usize / page_size.max(1)) as u64).collect();
    let mut order: Vec<usize> = (0..pages.len()).collect();
    order.sort_unstable_by_key(|&i| pages[i]);
    let mut buf = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let first = pages[order[i]];
        let mut j = i + 1;
        while j < order.len() && pages[order[j]] - pages[order[j - 1]] <= GAP && pages[order[j]] - first < MAX_RUN {
            j += 1;
        }
        let run = &order[i..j];
        i = j;
        let last = pages[run[run.len() - 1]];
        buf.resize(((last - first + 1) * 8) as usize, 0);
        // A run past the address space cannot be read: its pages stay unknown.
        let Some(offset) = first.checked_mul(8) else { continue };
        if pagemap.read_exact_at(&mut buf, offset).is_err() {
            continue;
        }
        for &k in run {
            let at = ((pages[k] - first) * 8) as usize;
            let mut entry = [0u8; 8];
            entry.copy_from_slice(&buf[at..at + 8]);
            let entry = u64::from_le_bytes(entry);
            if entry & (PRESENT | EXCLUSIVE) != PRESENT | EXCLUSIVE {
                continue;
            }
            let pfn = entry & PFN_MASK;
            if pfn == 0 {
                UNREADABLE.store(true, Ordering::Relaxed);
                return vec![None; addrs.len()];
            }
            out[k] = node_of_frame(zones, pfn);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZONEINFO: &str = "Node 0, zone      DMA\n  per-node stats\n        spanned  4095\n  start_pfn:           1\n\
        Node 0, zone   Normal\n        spanned  1000\n  start_pfn:           4096\n\
        Node 0, zone  Movable\n        spanned  0\n\
        Node 1, zone   Normal\n        spanned  2000\n        present  2000\n  start_pfn:           5096\n";

    #[test]
    fn zoneinfo_gives_each_nodes_frames() {
        let z = parse_zoneinfo(ZONEINFO);
        assert_eq!(
            z,
            [
                Zone { node: 0, start: 1, spanned: 4095 },
                Zone { node: 0, start: 4096, spanned: 1000 },
                Zone { node: 1, start: 5096, spanned: 2000 }
            ]
        );
        assert_eq!(node_of_frame(&z, 1), Some(0));
        assert_eq!(node_of_frame(&z, 5095), Some(0));
        assert_eq!(node_of_frame(&z, 5096), Some(1));
        assert_eq!(node_of_frame(&z, 7095), Some(1));
        assert_eq!(node_of_frame(&z, 7096), None);
        assert_eq!(node_of_frame(&z, 0), None);
        // Garbage is no zone, not a panic.
        assert!(parse_zoneinfo("Node x, zone\nspanned y\n").is_empty());
    }

    #[test]
    fn a_resident_page_is_found_when_frames_are_readable() {
        let ps = crate::sys::page_size();
        let v = vec![1u8; 1 << 16];
        // Never written: backed by the shared zero page, left to move_pages.
        let untouched = crate::sys::mmap_anonymous(4 * ps, 0).unwrap();
        // SAFETY: a readable mapping of ours.
        let zero = unsafe { std::ptr::read_volatile(untouched.as_ptr()) };
        assert_eq!(zero, 0);
        let far = usize::MAX as *const u8;
        let found = nodes_of_present_pages(&[v.as_ptr(), std::ptr::null(), untouched.as_ptr(), far], ps);
        // SAFETY: mapped above, nothing points into it.
        unsafe { crate::sys::munmap(untouched, 4 * ps).unwrap() };
        // Address 0 is never mapped; the zero page is not this process's
        // alone; past the address space nothing is read.
        assert_eq!(found[1..], [None, None, None]);
        // Root sees frame numbers (others see zero and get nothing), and
        // the node holding the frame is one of the machine's. The effective
        // user is the second field of `Uid:` in /proc/self/status (read
        // here rather than asked of libc, which only `sys` calls).
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let root = status.lines().find_map(|l| l.strip_prefix("Uid:")?.split_whitespace().nth(1).map(|u| u == "0"));
        if root == Some(true) && !UNREADABLE.load(Ordering::Relaxed) {
            let n = found[0].expect("root reads frame numbers, and a zone holds the frame");
            assert!(zones().iter().any(|z| z.node == n));
        }
    }
}
