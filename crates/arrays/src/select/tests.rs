//! The selection rules against the paper's Fig. 2, on synthetic machines.

use super::*;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn node(node: usize, has_cpus: bool, available: u64) -> NodeView {
    NodeView { node, has_cpus, available, huge_free: Vec::new() }
}

/// Two nodes with CPUs (8 GiB and 2 GiB available) and a memory-only node.
fn machine() -> MachineMemory {
    MachineMemory {
        nodes: vec![node(0, true, 8 * GIB), node(1, true, 2 * GIB), node(2, false, 16 * GIB)],
        page_size: 4096,
        thp_size: Some(2 << 20),
    }
}

fn req(hints: AccessHints, bytes: u64) -> Request {
    Request {
        hints,
        choice: Choice::Auto,
        large_pages: LargePages::Auto,
        bytes,
        limits: Limits::default(),
        largest_partition: None,
        single_node: None,
    }
}

#[test]
fn the_papers_table() {
    use AccessPattern::{Random, Sequential};
    let ro = AccessHints::new().read_only();
    // (hints, bytes, expected implementation, expected rule)
    let table: Vec<(AccessHints, u64, Implementation, &str)> = vec![
        // Rule 1 first, whatever else holds.
        (AccessHints::new().loop_indexed(), 64 * MIB, Implementation::Partitioned, "loop"),
        (ro.loop_indexed(), 64 * MIB, Implementation::Partitioned, "loop"),
        (ro.loop_indexed().pattern(Sequential), 100 * GIB, Implementation::Partitioned, "loop"),
        // Rule 2: read-only and fits on both CPU nodes (node 1 is the tightest).
        (ro, 64 * MIB, Implementation::Replicated, "fits"),
        (ro.pattern(Sequential), 2 * GIB, Implementation::Replicated, "fits"),
        // Rule 3: too large for node 1; written; written and random.
        (ro.pattern(Random), 2 * GIB + 1, Implementation::Distributed, "too large"),
        (AccessHints::new(), 64 * MIB, Implementation::Distributed, "written"),
        (AccessHints::new().pattern(Sequential), 4096, Implementation::Distributed, "written"),
    ];
    for (hints, bytes, want, rule) in table {
        let s = select(&req(hints, bytes), &machine()).unwrap();
        assert_eq!(s.implementation, want, "{hints} {bytes}: {s}");
        let matched = match (&s.reason, rule) {
            (Reason::LoopIndexed, "loop") | (Reason::Written, "written") => true,
            (Reason::ReadOnlyFits { tightest_node: 1, tightest_available, .. }, "fits") => {
                *tightest_available == 2 * GIB
            }
            (Reason::ReplicaTooLarge { node: 1, copy_bytes, available }, "too large") => {
                *copy_bytes == bytes && *available == 2 * GIB
            }
            _ => false,
        };
        assert!(matched, "{hints} {bytes}: reason {:?}, expected {rule}", s.reason);
        assert_eq!(s.hints, hints);
    }
}

#[test]
fn the_memory_only_node_gets_no_replica_but_is_spread_over() {
    let m = machine();
    assert_eq!(m.replica_nodes().iter().collect::<Vec<_>>(), [0, 1]);
    assert_eq!(m.all_nodes().iter().collect::<Vec<_>>(), [0, 1, 2]);
    // Node 2 is small here, but holds no replica: still replicated.
    let mut m2 = m.clone();
    m2.nodes[2].available = 0;
    assert_eq!(
        select(&req(AccessHints::new().read_only(), MIB), &m2).unwrap().implementation,
        Implementation::Replicated
    );
}

#[test]
fn a_flag_or_a_budget_forbids_replication() {
    let mut r = req(AccessHints::new().read_only(), 64 * MIB);
    r.limits.forbid_replication = true;
    let s = select(&r, &machine()).unwrap();
    assert_eq!((s.implementation, s.reason.clone()), (Implementation::Distributed, Reason::ReplicationForbidden));
    let mut r = req(AccessHints::new().read_only(), 64 * MIB);
    r.limits.memory_budget = Some(100 * MIB);
    let s = select(&r, &machine()).unwrap();
    assert_eq!(s.reason, Reason::OverBudget { total: 128 * MIB, budget: 100 * MIB });
    assert!(s.to_string().contains("exceed the memory budget"), "{s}");
    r.limits.memory_budget = Some(128 * MIB);
    assert_eq!(select(&r, &machine()).unwrap().implementation, Implementation::Replicated);
}

#[test]
fn requested_implementations_win_but_an_impossible_replica_is_an_error() {
    for (choice, want) in [
        (Choice::Single, Implementation::Single),
        (Choice::Distributed, Implementation::Distributed),
        (Choice::Partitioned, Implementation::Partitioned),
        (Choice::Replicated, Implementation::Replicated),
    ] {
        let mut r = req(AccessHints::new(), MIB);
        r.choice = choice;
        let s = select(&r, &machine()).unwrap();
        assert_eq!((s.implementation, s.reason), (want, Reason::Requested));
    }
    let mut r = req(AccessHints::new(), 3 * GIB);
    r.choice = Choice::Replicated;
    let e = select(&r, &machine()).unwrap_err();
    assert!(matches!(e, Error::ReplicaDoesNotFit { node: 1, copy_bytes, .. } if copy_bytes == 3 * GIB), "{e}");
    assert!(e.to_string().contains("does not fit on node 1"), "{e}");
    r.bytes = MIB;
    r.limits.memory_budget = Some(MIB);
    assert!(matches!(select(&r, &machine()), Err(Error::OverBudget { replicas: 2, .. })));
}

#[test]
fn large_pages_follow_the_piece_size_the_pattern_and_the_pools() {
    let sel = |hints: AccessHints, bytes: u64, lp: LargePages, m: &MachineMemory| {
        let mut r = req(hints, bytes);
        r.large_pages = lp;
        select(&r, m).unwrap()
    };
    let m = machine();
    // Distributed over 3 nodes: 3 MiB gives 1 MiB per node, below 2 MiB.
    let s = sel(AccessHints::new(), 3 * MIB, LargePages::Auto, &m);
    assert_eq!(s.pages, PageChoice::Base { size: 4096 });
    assert_eq!(s.page_reason, PageReason::TooSmall { piece: MIB, large: 2 << 20 });
    let s = sel(AccessHints::new(), 60 * MIB, LargePages::Auto, &m);
    assert_eq!((s.pages, s.page_reason), (PageChoice::Transparent { size: 2 << 20 }, PageReason::Spans { pages: 10 }));
    assert_eq!(sel(AccessHints::new(), 60 * MIB, LargePages::Off, &m).pages, PageChoice::Base { size: 4096 });
    // No THP, no pools.
    let mut bare = m.clone();
    bare.thp_size = None;
    let s = sel(AccessHints::new(), GIB, LargePages::Auto, &bare);
    assert_eq!((s.pages, s.page_reason), (PageChoice::Base { size: 4096 }, PageReason::Unavailable));
    // Pools with room on every node: random arrays get explicit pages,
    // sequential ones transparent pages.
    let mut pools = m.clone();
    for n in &mut pools.nodes {
        n.huge_free = vec![(2 << 20, 100)];
    }
    let ro = AccessHints::new().read_only();
    let s = sel(ro, 64 * MIB, LargePages::Auto, &pools);
    assert_eq!((s.implementation, s.pages), (Implementation::Replicated, PageChoice::Explicit { size: 2 << 20 }));
    let s = sel(ro.pattern(AccessPattern::Sequential), 64 * MIB, LargePages::Auto, &pools);
    assert_eq!(s.pages, PageChoice::Transparent { size: 2 << 20 });
    // A replica needs 201 pages > 100 free: transparent, and explicit falls back.
    let s = sel(ro, 402 * MIB, LargePages::Auto, &pools);
    assert_eq!(s.pages, PageChoice::Transparent { size: 2 << 20 });
    let s = sel(ro, 402 * MIB, LargePages::Explicit, &pools);
    assert_eq!((s.pages, s.page_reason), (PageChoice::Transparent { size: 2 << 20 }, PageReason::ExplicitFellBack));
    // Partitioned arrays never get explicit pages.
    let s = sel(AccessHints::new().loop_indexed(), 64 * MIB, LargePages::Explicit, &pools);
    assert_eq!(s.page_reason, PageReason::ExplicitFellBack);
}

#[test]
fn selections_display_and_serialize_their_reasons() {
    let s = select(&req(AccessHints::new().read_only(), 64 * MIB), &machine()).unwrap();
    let text = s.to_string();
    assert!(text.starts_with("replicated: read-only, and a copy (64 MiB) fits on every node"), "{text}");
    assert!(text.contains("transparent huge pages (2 MiB)"), "{text}");
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["implementation"], "replicated");
    assert_eq!(json["reason"]["rule"], "read_only_fits");
    assert_eq!(json["pages"]["kind"], "transparent");
    let back: Selection = serde_json::from_value(json).unwrap();
    assert_eq!(back, s);
}

#[test]
fn this_machine_reads_its_nodes() {
    let topo = Topology::get().unwrap();
    let m = MachineMemory::read(topo).unwrap();
    assert_eq!(m.all_nodes(), topo.allowed_nodes());
    assert!(m.nodes.iter().all(|n| n.available > 0));
    assert!(!m.replica_nodes().is_empty());
}
