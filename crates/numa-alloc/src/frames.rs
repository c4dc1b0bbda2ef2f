//! Where a present page is, from its physical frame: the frame number from
//! `/proc/self/pagemap` and the node whose memory holds it from
//! `/proc/zoneinfo`. For pages that `move_pages` reports as absent although
//! they are mapped and present: with automatic NUMA balancing on, the
//! guests' kernel (Debian's 6.1) answered "not present" (`-ENOENT`) for
//! most of a run's pages, those whose entries the balancing scanner had
//! made inaccessible to catch the next access (a NUMA hinting fault).
//!
//! Frame numbers are readable only with `CAP_SYS_ADMIN`; without it the
//! kernel shows them as zero, and nothing is found here.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;

/// Bit 63 of a pagemap entry: the page is present in memory.
const PRESENT: u64 = 1 << 63;
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

/// For each address, the node holding its page if the page is present and
/// its frame number readable; `None` otherwise (and for every address if
/// `/proc/self/pagemap` cannot be opened).
pub(crate) fn nodes_of_present_pages(addrs: &[*const u8], page_size: usize) -> Vec<Option<usize>> {
    let zones = zones();
    let Ok(pagemap) = File::open("/proc/self/pagemap") else { return vec![None; addrs.len()] };
    addrs
        .iter()
        .map(|&a| {
            let offset = (a as usize / page_size.max(1)) as u64 * 8;
            let mut entry = [0u8; 8];
            pagemap.read_exact_at(&mut entry, offset).ok()?;
            let entry = u64::from_le_bytes(entry);
            let pfn = entry & PFN_MASK;
            (entry & PRESENT != 0 && pfn != 0).then(|| node_of_frame(zones, pfn)).flatten()
        })
        .collect()
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
        let v = vec![1u8; 1 << 16];
        let found = nodes_of_present_pages(&[v.as_ptr(), std::ptr::null()], crate::sys::page_size());
        // Address 0 is never mapped.
        assert_eq!(found[1], None);
        // Root sees frame numbers (others see zero and get nothing), and
        // the node holding the frame is one of the machine's.
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let n = found[0].expect("root reads frame numbers, and a zone holds the frame");
            assert!(zones().iter().any(|z| z.node == n));
        }
    }
}
