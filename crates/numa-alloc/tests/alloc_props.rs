//! Property tests of `NumaAlloc` against a model: random sequences of
//! alloc, alloc_zeroed, realloc and free of mixed sizes (every path: size
//! classes, chunk units, own mappings) and alignments (1 B to 128 KiB).
//! Checks: no two live blocks overlap, every block is aligned, zeroed blocks
//! are zero, realloc keeps the contents, and nothing is lost (each block's
//! bytes are intact when it is freed). The allocator is called directly;
//! this binary's global allocator is the system's.

use std::alloc::{GlobalAlloc, Layout};
use std::collections::BTreeMap;

use proptest::prelude::*;
use skelaff_numa_alloc::alloc::NumaAlloc;

const A: NumaAlloc = NumaAlloc::new();

#[derive(Debug, Clone)]
enum Op {
    Alloc { size: usize, align_log: u32, zeroed: bool },
    Realloc { which: usize, size: usize },
    Free { which: usize },
}

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        60 => 1usize..=512,
        20 => 513usize..=40_000,
        12 => 40_001usize..=600_000,
        3 => 600_001usize..=3_000_000,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (size(), prop_oneof![6 => 0u32..=4, 3 => 5u32..=12, 1 => 13u32..=17], any::<bool>())
            .prop_map(|(size, align_log, zeroed)| Op::Alloc { size, align_log, zeroed }),
        2 => (any::<usize>(), size()).prop_map(|(which, size)| Op::Realloc { which, size }),
        3 => any::<usize>().prop_map(|which| Op::Free { which }),
    ]
}

struct Live {
    ptr: *mut u8,
    layout: Layout,
    seed: u8,
}

fn fill(p: *mut u8, len: usize, seed: u8) {
    // Write the pattern on every 61st byte and at both ends: cheap, and a
    // block that overlaps or loses data still shows it.
    for i in (0..len).step_by(61).chain([len - 1]) {
        // SAFETY: `i < len` and the block holds `len` bytes.
        unsafe { *p.add(i) = seed.wrapping_add(i as u8) };
    }
}

fn check(p: *mut u8, len: usize, seed: u8) -> Result<(), TestCaseError> {
    for i in (0..len).step_by(61).chain([len - 1]) {
        // SAFETY: as in `fill`.
        let got = unsafe { *p.add(i) };
        prop_assert_eq!(got, seed.wrapping_add(i as u8), "byte {} of a {}-byte block", i, len);
    }
    Ok(())
}

/// Checks the pattern a `fill(.., old_len, ..)` wrote, below `kept` only.
fn check_prefix(p: *mut u8, kept: usize, old_len: usize, seed: u8) -> Result<(), TestCaseError> {
    for i in (0..old_len).step_by(61).chain([old_len - 1]).filter(|&i| i < kept) {
        // SAFETY: `i < kept`, and the block holds at least `kept` bytes.
        let got = unsafe { *p.add(i) };
        prop_assert_eq!(got, seed.wrapping_add(i as u8), "byte {} kept by realloc from {} bytes", i, old_len);
    }
    Ok(())
}

fn no_overlap(ranges: &BTreeMap<usize, usize>, start: usize, len: usize) -> Result<(), TestCaseError> {
    let end = start + len;
    if let Some((&s, &e)) = ranges.range(..end).next_back() {
        prop_assert!(e <= start || s >= end, "block {start:#x}+{len} overlaps {s:#x}..{e:#x}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_sequences_keep_blocks_apart_aligned_and_intact(ops in proptest::collection::vec(op(), 1..300)) {
        let mut live: Vec<Live> = Vec::new();
        let mut ranges: BTreeMap<usize, usize> = BTreeMap::new();
        let mut seed = 0u8;
        for op in ops {
            match op {
                Op::Alloc { size, align_log, zeroed } => {
                    let layout = Layout::from_size_align(size, 1 << align_log).unwrap();
                    // SAFETY: a valid non-zero layout.
                    let p = unsafe { if zeroed { A.alloc_zeroed(layout) } else { A.alloc(layout) } };
                    prop_assert!(!p.is_null());
                    prop_assert_eq!(p as usize % layout.align(), 0);
                    if zeroed {
                        // SAFETY: the block holds `size` bytes.
                        let s = unsafe { std::slice::from_raw_parts(p, size) };
                        prop_assert!(s.iter().all(|&b| b == 0), "alloc_zeroed gave non-zero bytes");
                    }
                    no_overlap(&ranges, p as usize, size)?;
                    ranges.insert(p as usize, p as usize + size);
                    seed = seed.wrapping_add(1);
                    fill(p, size, seed);
                    live.push(Live { ptr: p, layout, seed });
                }
                Op::Realloc { which, size } if !live.is_empty() => {
                    let i = which % live.len();
                    let b = &mut live[i];
                    check(b.ptr, b.layout.size(), b.seed)?;
                    ranges.remove(&(b.ptr as usize));
                    // SAFETY: a live block with its layout; size is non-zero.
                    let q = unsafe { A.realloc(b.ptr, b.layout, size) };
                    prop_assert!(!q.is_null());
                    prop_assert_eq!(q as usize % b.layout.align(), 0);
                    let kept = b.layout.size().min(size);
                    check_prefix(q, kept, b.layout.size(), b.seed)?;
                    no_overlap(&ranges, q as usize, size)?;
                    ranges.insert(q as usize, q as usize + size);
                    b.ptr = q;
                    b.layout = Layout::from_size_align(size, b.layout.align()).unwrap();
                    fill(q, size, b.seed);
                }
                Op::Free { which } if !live.is_empty() => {
                    let b = live.swap_remove(which % live.len());
                    check(b.ptr, b.layout.size(), b.seed)?;
                    ranges.remove(&(b.ptr as usize));
                    // SAFETY: a live block with its layout.
                    unsafe { A.dealloc(b.ptr, b.layout) };
                }
                _ => {}
            }
        }
        for b in live {
            check(b.ptr, b.layout.size(), b.seed)?;
            // SAFETY: a live block with its layout.
            unsafe { A.dealloc(b.ptr, b.layout) };
        }
    }
}
