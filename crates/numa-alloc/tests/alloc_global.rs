//! `NumaAlloc` as this binary's global allocator, under a real workload on
//! several threads: building and dropping large `BTreeMap`s, `Vec`s and
//! `String`s, switching thread policies between rounds. Checks the results
//! of the work, that the allocator is in effect, and that memory does not
//! grow from round to round: the chunks in use stay level, and the empty
//! chunks kept for reuse stay within the allocator's documented limits.

use std::collections::BTreeMap;

use skelaff_numa_alloc::alloc::{self, AllocStats, HOT_EMPTY_CHUNKS, NumaAlloc, RETAINED_CHUNKS_MAX};
use skelaff_numa_alloc::{NodeSet, Policy, Topology};

#[global_allocator]
static GLOBAL: NumaAlloc = NumaAlloc::new();

const THREADS: usize = 4;
const ROUNDS: usize = 4;

/// One round of work on one thread; returns a checksum computed two ways.
fn work(seed: u64) -> (u64, u64) {
    let mut map: BTreeMap<u64, String> = BTreeMap::new();
    let mut x = seed | 1;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        map.insert(x % 1_000_000, format!("value-{}", x % 977));
    }
    let mut vecs: Vec<Vec<u32>> = (0..500).map(|i| (0..(i % 300) as u32).collect()).collect();
    vecs.retain(|v| v.len() % 3 != 0);
    let big: Vec<u64> = (0..200_000u64).collect();
    let mut text = String::new();
    for (k, v) in map.iter().take(5_000) {
        text.push_str(v);
        text.push_str(&k.to_string());
    }
    let expected: u64 = map.keys().sum::<u64>()
        + vecs.iter().map(|v| v.iter().map(|&e| e as u64).sum::<u64>()).sum::<u64>()
        + big.iter().sum::<u64>()
        + text.len() as u64;
    // Recompute from a clone (more allocation) and compare.
    let copy = map.clone();
    let again: u64 = copy.keys().sum::<u64>()
        + vecs.clone().into_iter().map(|v| v.into_iter().map(u64::from).sum::<u64>()).sum::<u64>()
        + big.to_vec().iter().sum::<u64>()
        + text.clone().len() as u64;
    (expected, again)
}

#[test]
fn a_multithreaded_workload_runs_on_numa_alloc_and_memory_stays_bounded() {
    assert!(NumaAlloc::is_global(), "this binary installs NumaAlloc");
    let topo = Topology::get().unwrap();
    let all = topo.allowed_nodes();
    let first = all.first().unwrap();
    let policies = [
        None,
        Some(Policy::Bind(NodeSet::single(first))),
        Some(Policy::Interleave(all)),
        Some(Policy::Cyclic { nodes: all, block: 2 * topo.page_size() }),
        Some(Policy::Local),
    ];
    let mut chunks = Vec::new();
    for round in 0..ROUNDS {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let policy = policies[(round + t) % policies.len()];
                std::thread::spawn(move || {
                    if let Some(p) = policy {
                        alloc::set_thread_policy(p).unwrap();
                    }
                    let (a, b) = work((round * THREADS + t) as u64 + 1);
                    // Switch in the middle of the thread's life too.
                    alloc::set_thread_policy(Policy::Bind(NodeSet::single(first))).unwrap();
                    let (c, d) = work((round * THREADS + t) as u64 + 1000);
                    (a == b && c == d, alloc::thread_policy())
                })
            })
            .collect();
        for h in handles {
            let (ok, policy) = h.join().unwrap();
            assert!(ok, "checksums differ: some allocation lost or corrupted data");
            assert_eq!(policy, Some(Policy::Bind(NodeSet::single(first))));
        }
        chunks.push(alloc::stats());
    }
    let s = alloc::stats();
    assert_eq!(s.fallbacks, 0, "{s:?}");
    assert!(s.arenas.len() >= 2, "several policies, several arenas: {:?}", s.arenas);
    // Rounds do the same work, so the chunks holding live blocks stay level:
    // after the first round, at most one more per arena (a round's blocks
    // can fall across one chunk boundary more than the first's did).
    let in_use = |s: &AllocStats| s.arenas.iter().map(|a| a.chunks - a.empty_chunks).sum::<usize>();
    let first = in_use(&chunks[0]);
    let per_round: Vec<usize> = chunks.iter().map(in_use).collect();
    assert!(per_round.iter().all(|&c| c <= first + s.arenas.len()), "chunks in use after each round: {per_round:?}");
    // Empty chunks are kept for reuse, by the allocator's rule: at most
    // HOT_EMPTY_CHUNKS per arena with their pages, and RETAINED_CHUNKS_MAX
    // more over all arenas with their pages advised away. An arena first
    // used in a later round (here the `Local` one) starts its own hot set,
    // so the total may step up then; beyond these limits it must not.
    for (round, r) in chunks.iter().enumerate() {
        for a in &r.arenas {
            assert!(a.empty_chunks <= a.chunks, "round {round}: {a:?}");
            assert!(
                a.empty_chunks - a.retained_chunks <= HOT_EMPTY_CHUNKS,
                "round {round}: an arena keeps more hot empty chunks than {HOT_EMPTY_CHUNKS}: {a:?}"
            );
        }
        assert!(
            r.retained_chunks() <= RETAINED_CHUNKS_MAX,
            "round {round}: {} retained chunks, more than {RETAINED_CHUNKS_MAX}",
            r.retained_chunks()
        );
    }
}
