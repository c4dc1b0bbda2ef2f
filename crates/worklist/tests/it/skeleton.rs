//! Behaviour of the skeleton: termination, publication on commit, panics,
//! the SkelAff decisions, and the report.

use std::sync::atomic::{AtomicU64, Ordering};

use skelaff_stm::{AbortReason, TVar, TxError, TxOps};
use skelaff_worklist::{
    Builder, Decision, Distribution, Error, PagePolicy, ProcessCtx, Skeleton, ThreadMapping, WorkerInfo,
};

/// A unit `(depth, id)` spawns `fanout` children until `depth` reaches `max`.
struct Tree {
    fanout: u64,
    max: u32,
}

struct TreeShared {
    processed: TVar<u64>,
    leaves: TVar<u64>,
    updates: TVar<u64>,
    destroyed: AtomicU64,
}

impl Skeleton for Tree {
    type Unit = (u32, u64);
    type Shared = TreeShared;
    type PerWorker = u64;

    fn init_worker(&self, _: &TreeShared, _: &WorkerInfo) -> u64 {
        0
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &(depth, id): &(u32, u64),
        local: &mut u64,
        s: &'t TreeShared,
        ctx: &mut ProcessCtx<(u32, u64)>,
    ) -> Result<(), TxError> {
        tx.update(&s.processed, |p| p + 1)?;
        if depth < self.max {
            for c in 0..self.fanout {
                ctx.add_work_unit((depth + 1, id * self.fanout + c));
            }
        } else {
            tx.update(&s.leaves, |l| l + 1)?;
        }
        *local += 1;
        Ok(())
    }

    fn update<'t, X: TxOps<'t>>(&'t self, tx: &mut X, local: &mut u64, s: &'t TreeShared) -> Result<(), TxError> {
        // `local` counts attempts (it is not rolled back on abort), so it is
        // at least the number of units this worker committed.
        let _ = local;
        tx.update(&s.updates, |u| u + 1)?;
        Ok(())
    }

    fn destroy_worker(&self, _: u64, s: &TreeShared) {
        s.destroyed.fetch_add(1, Ordering::SeqCst);
    }
}

fn tree_shared() -> TreeShared {
    TreeShared { processed: TVar::new(0), leaves: TVar::new(0), updates: TVar::new(0), destroyed: AtomicU64::new(0) }
}

#[test]
fn units_spawning_units_several_levels_deep_all_run_once() {
    let skel = Tree { fanout: 3, max: 6 };
    // 3 roots; each a full ternary tree of depth 6: 3 * (3^7 - 1) / 2 units.
    let expected: u64 = 3 * (3u64.pow(7) - 1) / 2;
    for distribution in [Distribution::Shared, Distribution::PerNode] {
        for threads in [1, 2, 4] {
            for mapping in [ThreadMapping::Scatter, ThreadMapping::None] {
                let shared = tree_shared();
                let mut wl = Builder::new()
                    .threads(threads)
                    .distribution(distribution)
                    .mapping(mapping)
                    .shuffle(Some(7))
                    .build(&skel, &shared)
                    .unwrap();
                wl.add_work_units((0..3).map(|i| (0, i)));
                let report = wl.run().unwrap();
                let ctx = format!("{distribution} x{threads} {mapping}");
                assert_eq!(shared.processed.load(), expected, "{ctx}");
                assert_eq!(report.units, expected, "{ctx}");
                assert_eq!(shared.leaves.load(), 3 * 3u64.pow(6), "{ctx}");
                assert_eq!(shared.updates.load(), threads as u64, "every worker's update ran once: {ctx}");
                assert_eq!(shared.destroyed.load(Ordering::SeqCst), threads as u64, "{ctx}");
                assert_eq!(report.workers.len(), threads);
                // Units plus one update per worker committed.
                assert_eq!(report.commits(), expected + threads as u64, "{ctx}");
                assert_eq!(wl.seeds(), 0);
            }
        }
    }
}

#[test]
fn an_empty_pool_ends_at_once() {
    let skel = Tree { fanout: 2, max: 1 };
    let shared = tree_shared();
    let report = Builder::new().threads(2).build(&skel, &shared).unwrap().run().unwrap();
    assert_eq!(report.units, 0);
    assert_eq!(shared.destroyed.load(Ordering::SeqCst), 2);
}

/// Adds a unit and then conflicts on its first attempt: only the committed
/// attempt's unit may be published.
struct AbortOnce;

impl Skeleton for AbortOnce {
    type Unit = u32;
    type Shared = TVar<u64>;
    type PerWorker = u32;

    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) -> u32 {
        0
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &unit: &u32,
        attempts: &mut u32,
        count: &'t TVar<u64>,
        ctx: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        tx.update(count, |c| c + 1)?;
        if unit == 0 {
            ctx.add_work_unit(1);
            *attempts += 1;
            if *attempts == 1 {
                return Err(TxError::Conflict(AbortReason::ValidateOnCommit));
            }
        }
        Ok(())
    }
}

#[test]
fn units_of_an_aborted_attempt_are_dropped() {
    let count = TVar::new(0);
    let mut wl = Builder::new().threads(1).build(&AbortOnce, &count).unwrap();
    wl.add_work_unit(0);
    let report = wl.run().unwrap();
    assert_eq!(report.units, 2, "unit 0 and exactly one child");
    assert_eq!(count.load(), 2, "the aborted attempt's write is gone");
    assert_eq!(report.stats().total_aborts(), 1);
}

/// Marks its unit's slot in a transaction, aborting the first attempt of
/// every seventh unit; `committed` checks that it follows each commit.
struct MarkThenHint;

struct Marks {
    slots: Vec<TVar<u64>>,
    /// Per unit, how often `committed` ran for it.
    hinted: Vec<AtomicU64>,
    /// `committed` calls that saw the unit's slot unmarked or a stale `local`.
    early: AtomicU64,
}

impl Skeleton for MarkThenHint {
    type Unit = u32;
    type Shared = Marks;
    /// The unit the last attempt processed, and whether it already aborted once.
    type PerWorker = (u32, bool);

    fn init_worker(&self, _: &Marks, _: &WorkerInfo) -> (u32, bool) {
        (u32::MAX, false)
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &u: &u32,
        local: &mut (u32, bool),
        m: &'t Marks,
        _: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        let retried = local.0 == u && local.1;
        *local = (u, true);
        tx.write(&m.slots[u as usize], 1)?;
        if u % 7 == 0 && !retried {
            return Err(TxError::Conflict(AbortReason::ValidateOnCommit));
        }
        Ok(())
    }

    fn committed(&self, &u: &u32, local: &mut (u32, bool), m: &Marks) {
        if m.slots[u as usize].load() != 1 || local.0 != u {
            m.early.fetch_add(1, Ordering::SeqCst);
        }
        m.hinted[u as usize].fetch_add(1, Ordering::SeqCst);
        local.1 = false;
    }
}

#[test]
fn committed_runs_once_per_unit_after_its_commit() {
    const N: usize = 2_000;
    for threads in [1, 2, 4] {
        let m = Marks {
            slots: (0..N).map(|_| TVar::new(0)).collect(),
            hinted: (0..N).map(|_| AtomicU64::new(0)).collect(),
            early: AtomicU64::new(0),
        };
        let mut wl = Builder::new().threads(threads).build(&MarkThenHint, &m).unwrap();
        wl.add_work_units(0..N as u32);
        let report = wl.run().unwrap();
        assert_eq!(report.units, N as u64, "x{threads}");
        assert!(report.stats().total_aborts() >= (N as u64).div_ceil(7), "every seventh unit aborted once: x{threads}");
        assert_eq!(m.early.load(Ordering::SeqCst), 0, "committed ran before its commit: x{threads}");
        let wrong: Vec<usize> = (0..N).filter(|&u| m.hinted[u].load(Ordering::SeqCst) != 1).collect();
        assert!(wrong.is_empty(), "units whose committed did not run exactly once: {wrong:?} (x{threads})");
    }
}

/// Panics in `process` at one unit, or in `init_worker` / `update` when asked.
struct Panicky {
    at: Option<u64>,
    in_init: bool,
    in_update: bool,
}

impl Skeleton for Panicky {
    type Unit = u64;
    type Shared = TVar<u64>;
    type PerWorker = ();

    fn init_worker(&self, _: &TVar<u64>, w: &WorkerInfo) {
        assert!(!(self.in_init && w.index == 1), "init of worker 1 fails");
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &u: &u64,
        _: &mut (),
        s: &'t TVar<u64>,
        ctx: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        tx.update(s, |c| c + 1)?;
        if Some(u) == self.at {
            panic!("unit {u} is poisoned");
        }
        if u < 50_000 {
            ctx.add_work_unit(u + 1000);
        }
        Ok(())
    }

    fn update<'t, X: TxOps<'t>>(&'t self, _: &mut X, _: &mut (), _: &'t TVar<u64>) -> Result<(), TxError> {
        assert!(!self.in_update, "update fails");
        Ok(())
    }
}

#[test]
fn a_panic_stops_every_worker_and_is_returned() {
    for threads in [1, 2, 4] {
        let s = TVar::new(0);
        let skel = Panicky { at: Some(7_007), in_init: false, in_update: false };
        let mut wl = Builder::new().threads(threads).build(&skel, &s).unwrap();
        wl.add_work_units(0..1000);
        match wl.run() {
            Err(Error::Panicked { worker: Some(_), message }) => assert_eq!(message, "unit 7007 is poisoned"),
            other => panic!("expected a panic error, got {other:?}"),
        }
        // Nothing of the panicking attempt was committed, and the run stopped early.
        assert!(s.load() < 51_000);
    }
    let s = TVar::new(0);
    let skel = Panicky { at: None, in_init: true, in_update: false };
    let mut wl = Builder::new().threads(2).build(&skel, &s).unwrap();
    wl.add_work_units(0..10);
    let e = wl.run().unwrap_err();
    assert!(e.to_string().contains("worker 1 panicked: init of worker 1 fails"), "{e}");
    let skel = Panicky { at: None, in_init: false, in_update: true };
    let mut wl = Builder::new().threads(2).build(&skel, &s).unwrap();
    wl.add_work_units(0..10);
    assert!(matches!(wl.run(), Err(Error::Panicked { .. })));
}

#[test]
fn skelaff_switches_to_bind_only_when_units_are_generated() {
    let skel = Tree { fanout: 2, max: 3 };
    let shared = tree_shared();
    let mut wl = Builder::new().threads(2).policy(PagePolicy::Auto).build(&skel, &shared).unwrap();
    wl.add_work_units((0..4).map(|i| (0, i)));
    let report = wl.run().unwrap();
    let decided = |d: &Decision| report.decisions.iter().any(|x| &x.decision == d);
    let nodes = skelaff_numa_alloc::Topology::get().unwrap().allowed_nodes().iter().collect();
    assert!(decided(&Decision::CyclicUntilGenerating { nodes }), "{:?}", report.decisions);
    assert!(decided(&Decision::WorkersGenerate), "{:?}", report.decisions);
    // Every worker that processed a unit after the switch bound itself to its node.
    assert!(report.decisions.iter().any(|d| matches!(d.decision, Decision::BoundToNode { .. })));
    // Decisions are in time order.
    assert!(report.decisions.windows(2).all(|w| w[0].at <= w[1].at));

    // Seeds that generate nothing: cyclic all along.
    let shared = tree_shared();
    let flat = Tree { fanout: 2, max: 0 };
    let mut wl = Builder::new().threads(2).build(&flat, &shared).unwrap();
    wl.add_work_units((0..100).map(|i| (0, i)));
    let report = wl.run().unwrap();
    assert_eq!(report.units, 100);
    assert!(
        !report
            .decisions
            .iter()
            .any(|d| matches!(d.decision, Decision::WorkersGenerate | Decision::BoundToNode { .. })),
        "{:?}",
        report.decisions
    );
}

#[test]
fn every_policy_and_mapping_gives_the_same_result() {
    for policy in
        [PagePolicy::Auto, PagePolicy::FirstTouch, PagePolicy::Bind, PagePolicy::Cyclic, PagePolicy::Interleave]
    {
        for mapping in [ThreadMapping::Scatter, ThreadMapping::Compact, ThreadMapping::None] {
            let skel = Tree { fanout: 2, max: 5 };
            let shared = tree_shared();
            let mut wl = Builder::new().threads(2).policy(policy).mapping(mapping).build(&skel, &shared).unwrap();
            wl.add_work_unit((0, 0));
            let report = wl.run().unwrap();
            assert_eq!(report.units, 63, "{policy} {mapping}");
            assert_eq!(report.policy, policy);
            assert_eq!(report.mapping, mapping.to_string());
        }
    }
}

#[test]
fn configuration_errors_and_text_forms() {
    let skel = Tree { fanout: 1, max: 0 };
    let shared = tree_shared();
    assert!(matches!(Builder::new().threads(0).build(&skel, &shared), Err(Error::ZeroThreads)));
    assert_eq!("first-touch".parse::<PagePolicy>().unwrap(), PagePolicy::FirstTouch);
    let e = "sideways".parse::<PagePolicy>().unwrap_err();
    assert!(
        matches!(&e, Error::UnknownName(skelaff_numa_alloc::UnknownName { what: "page policy", given, .. }) if given == "sideways"),
        "{e}"
    );
    assert!(e.to_string().contains("auto, first-touch, bind, cyclic, interleave"), "{e}");
    assert!(matches!(
        "x".parse::<ThreadMapping>(),
        Err(Error::UnknownName(skelaff_numa_alloc::UnknownName { what: "thread mapping", .. }))
    ));
    assert_eq!("shared".parse::<Distribution>().unwrap(), Distribution::Shared);
    assert_eq!("pernode".parse::<Distribution>().unwrap(), Distribution::PerNode);
    assert_eq!(Distribution::PerNode.to_string(), "per-node");
    let e = "spread".parse::<Distribution>().unwrap_err();
    assert_eq!(e.to_string(), "unknown distribution `spread`; expected one of: shared, per-node");
}

#[test]
fn the_report_prints_and_serialises() {
    let skel = Tree { fanout: 2, max: 4 };
    let shared = tree_shared();
    let mut wl = Builder::new().threads(2).build(&skel, &shared).unwrap();
    wl.add_work_unit((0, 0));
    let report = wl.run().unwrap();
    let table = report.to_string();
    assert!(table.contains("31 units"), "{table}");
    assert!(table.contains("worker"), "{table}");
    let j = report.to_json();
    assert_eq!(j["units"], 31);
    assert_eq!(j["workers"].as_array().unwrap().len(), 2);
    assert_eq!(j["commits"], 33);
    assert!(j["aborts_by_reason"]["validate_commit"].is_u64());
    let decisions = j["decisions"].as_array().unwrap();
    assert!(decisions.len() >= 2);
    // Decisions serialise as tagged values and read back.
    let first: Decision = serde_json::from_value(decisions[0]["decision"].clone()).unwrap();
    assert_eq!(first, report.decisions[0].decision);
    assert_eq!(decisions[0]["decision"]["kind"], "pinned");
}

/// Records, from inside each worker, its thread's name and CPU mask.
struct WhereAmI;

type Seen = parking_lot::Mutex<Vec<(usize, Option<usize>, Option<String>, skelaff_numa_alloc::CpuSet)>>;

impl Skeleton for WhereAmI {
    type Unit = u32;
    type Shared = Seen;
    type PerWorker = ();

    fn init_worker(&self, seen: &Seen, info: &WorkerInfo) {
        let me = std::thread::current();
        let mask = skelaff_numa_alloc::topology::thread_affinity().unwrap();
        seen.lock().push((info.index, info.cpu, me.name().map(str::to_owned), mask));
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        _: &mut X,
        _: &u32,
        _: &mut (),
        _: &'t Seen,
        _: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        Ok(())
    }
}

#[test]
fn workers_are_named_born_pinned_and_the_caller_keeps_its_mask() {
    let before = skelaff_numa_alloc::topology::thread_affinity().unwrap();
    for mapping in [ThreadMapping::Scatter, ThreadMapping::None] {
        let seen = Seen::default();
        let mut wl = Builder::new().threads(2).mapping(mapping).build(&WhereAmI, &seen).unwrap();
        wl.add_work_units(0..16);
        wl.run().unwrap();
        let mut seen = seen.into_inner();
        seen.sort_by_key(|s| s.0);
        assert_eq!(seen.len(), 2);
        for (index, cpu, name, mask) in seen {
            assert_eq!(name.as_deref(), Some(format!("skelaff-worker-{index}").as_str()));
            match cpu {
                Some(c) => assert_eq!(mask, skelaff_numa_alloc::CpuSet::single(c), "worker {index} under {mapping}"),
                None => assert_eq!(mask, before, "an unpinned worker keeps the process's mask"),
            }
        }
        assert_eq!(skelaff_numa_alloc::topology::thread_affinity().unwrap(), before, "after {mapping}");
    }
}

/// Units that name their data's place three ways (by node, by a resident
/// address, by an address no mapping holds), and generate one child each.
struct Hinted {
    data: Vec<u64>,
    node: usize,
}

impl Skeleton for Hinted {
    type Unit = u64;
    type Shared = TVar<u64>;
    type PerWorker = ();

    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}

    fn affinity(&self, &u: &u64, _: &TVar<u64>) -> skelaff_worklist::Affinity {
        use skelaff_worklist::Affinity;
        match u % 3 {
            0 => Affinity::Node(self.node),
            1 => Affinity::of(&self.data[(u as usize * 8) % self.data.len()]),
            // Page 1 of the address space: never mapped.
            _ => Affinity::Address(4096),
        }
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &u: &u64,
        _: &mut (),
        t: &'t TVar<u64>,
        ctx: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        if u < 300 {
            ctx.add_work_unit(u + 300);
        }
        tx.update(t, |v| v + 1).map(|_| ())
    }
}

#[test]
fn affinity_scheduling_counts_where_hinted_units_ran() {
    let node = skelaff_numa_alloc::Topology::get().unwrap().nodes_with_cpus().first().unwrap();
    let skel = Hinted { data: vec![1; 1 << 12], node };
    for on in [false, true] {
        let total = TVar::new(0);
        let mut wl = Builder::new().threads(2).affinity_scheduling(on).build(&skel, &total).unwrap();
        wl.add_work_units(0..300);
        let report = wl.run().unwrap();
        assert_eq!((report.units, total.load()), (600, 600), "every unit ran once, hinted or not");
        let a = report.affinity();
        if !on {
            assert_eq!(a, skelaff_worklist::AffinityFigures::default(), "nothing is counted when off");
            continue;
        }
        // Two thirds name a node (directly, or through a resident page);
        // one third an address the kernel cannot place.
        assert_eq!((a.hinted, a.unresolved), (400, 200), "{a}");
        // On a machine whose workers all run on `node` (one node, as the
        // build machines), every hinted unit ran at home.
        if report.workers.iter().all(|w| w.node == Some(node)) {
            assert_eq!(a.on_home, 400, "{a}");
        }
        assert!(report.to_string().contains("hinted units ran at home"), "{report}");
        assert_eq!(report.to_json()["affinity"]["hinted"], 400);
    }
}

/// Units that each belong to a worker (`u` to worker `u`, modulo the
/// workers), recording which worker ran them; the first half make a child
/// for the next worker.
struct Owned {
    ran_by: Vec<TVar<u64>>,
}

impl Skeleton for Owned {
    type Unit = u64;
    type Shared = ();
    type PerWorker = u64;

    fn init_worker(&self, _: &(), info: &WorkerInfo) -> u64 {
        info.index as u64
    }

    fn affinity(&self, &u: &u64, _: &()) -> skelaff_worklist::Affinity {
        skelaff_worklist::Affinity::Worker(u as usize)
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &u: &u64,
        me: &mut u64,
        _: &'t (),
        ctx: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        let half = self.ran_by.len() as u64 / 2;
        if u < half {
            ctx.add_work_unit(u + half);
        }
        let slot = &self.ran_by[u as usize];
        let before = tx.read(slot)?;
        tx.write(slot, before * 1000 + *me + 1)
    }
}

#[test]
fn units_that_name_a_worker_are_counted_at_home_when_that_worker_ran_them() {
    for threads in [1, 2, 3] {
        let skel = Owned { ran_by: (0..600).map(|_| TVar::new(0)).collect() };
        let mut wl = Builder::new().threads(threads).affinity_scheduling(true).build(&skel, &()).unwrap();
        wl.add_work_units(0..300);
        let report = wl.run().unwrap();
        assert_eq!(report.units, 600);
        let ran_by: Vec<u64> = skel.ran_by.iter().map(TVar::load).collect();
        // Every unit ran exactly once (a second run would have made the
        // slot 1000 times larger).
        assert!(ran_by.iter().all(|&w| (1..=threads as u64).contains(&w)), "{threads} workers: {ran_by:?}");
        let at_home = ran_by.iter().enumerate().filter(|&(u, &w)| (u % threads) as u64 + 1 == w).count();
        let a = report.affinity();
        assert_eq!((a.hinted, a.on_home, a.unresolved), (600, at_home as u64, 0), "{threads} workers: {a}");
        if threads == 1 {
            assert_eq!(a.on_home, 600, "one worker owns everything");
        }
    }
}

/// Unit 0 waits until the other worker has had time to fall asleep, then
/// makes units 1 and 2; unit 1 waits until unit 2 has started, which only
/// the other worker can do (unit 1's worker is busy in it). So the run ends
/// in time only if making units 1 and 2 woke the sleeper.
struct WakesTheSleeper {
    started_2: std::sync::atomic::AtomicBool,
    gave_up: std::sync::atomic::AtomicBool,
}

impl Skeleton for WakesTheSleeper {
    type Unit = u32;
    type Shared = ();
    type PerWorker = ();

    fn init_worker(&self, _: &(), _: &WorkerInfo) {}

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        _: &mut X,
        &u: &u32,
        _: &mut (),
        _: &'t (),
        ctx: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        match u {
            0 => {
                std::thread::sleep(std::time::Duration::from_millis(50));
                ctx.add_work_unit(1);
                ctx.add_work_unit(2);
            }
            1 => {
                let began = std::time::Instant::now();
                while !self.started_2.load(Ordering::SeqCst) {
                    if began.elapsed() > std::time::Duration::from_secs(5) {
                        self.gave_up.store(true, Ordering::SeqCst);
                        break;
                    }
                    std::hint::spin_loop();
                }
            }
            _ => self.started_2.store(true, Ordering::SeqCst),
        }
        Ok(())
    }
}

#[test]
fn new_units_wake_a_sleeping_worker() {
    for distribution in [Distribution::PerNode, Distribution::Shared] {
        let skel = WakesTheSleeper { started_2: false.into(), gave_up: false.into() };
        let mut wl = Builder::new().threads(2).distribution(distribution).build(&skel, &()).unwrap();
        wl.add_work_units([0]);
        let report = wl.run().unwrap();
        assert_eq!(report.units, 3);
        assert!(!skel.gave_up.load(Ordering::SeqCst), "{distribution:?}: the idle worker slept through units 1 and 2");
    }
}

#[test]
fn migration_needs_a_profile_and_reports_its_log() {
    use skelaff_locality::{Epoch, MigrationRule, Sampling};
    let total = TVar::new(0);
    let skel = Hinted { data: vec![1; 1 << 12], node: 0 };
    let e = Builder::new().migration(Some(MigrationRule::default())).build(&skel, &total).unwrap_err();
    assert!(e.to_string().contains("access_profile"), "{e}");
    let counted = MigrationRule { pages_per_epoch: 10, epoch: Epoch::Samples { count: 100 } };
    let e = Builder::new()
        .access_profile(Some(Sampling::new(1, 1 << 12).unwrap()))
        .migration(Some(counted))
        .build(&skel, &total)
        .unwrap_err();
    assert!(e.to_string().contains("time epoch"), "{e}");
    let mut wl = Builder::new()
        .threads(2)
        .access_profile(Some(Sampling::new(1, 1 << 12).unwrap()))
        .migration(Some(MigrationRule::default()))
        .build(&skel, &total)
        .unwrap();
    wl.add_work_units(0..300);
    let report = wl.run().unwrap();
    assert_eq!(report.units, 600);
    let ap = report.access_profile.expect("asked for");
    let log = ap.migration.expect("the run migrated as it went");
    // One node here: no page is ever misplaced, so nothing moves.
    if skelaff_numa_alloc::Topology::get().unwrap().nodes_with_cpus().len() == 1 {
        assert!(log.moves.is_empty(), "{log:?}");
    }
    assert_eq!(ap.attribution_error, None);

    // The applied oracle: a profile, a stretch, and no rule beside it.
    let after = Some(std::time::Duration::from_millis(1));
    let e = Builder::new().oracle_after(after).build(&skel, &total).unwrap_err();
    assert!(e.to_string().contains("access profile"), "{e}");
    let e = Builder::new()
        .access_profile(Some(Sampling::new(1, 1 << 12).unwrap()))
        .migration(Some(MigrationRule::default()))
        .oracle_after(after)
        .build(&skel, &total)
        .unwrap_err();
    assert!(e.to_string().contains("no migration rule"), "{e}");
    let mut wl = Builder::new()
        .threads(2)
        .access_profile(Some(Sampling::new(1, 1 << 12).unwrap()))
        .oracle_after(after)
        .build(&skel, &total)
        .unwrap();
    wl.add_work_units(0..300);
    let log = wl.run().unwrap().access_profile.expect("asked for").migration.expect("the oracle's log");
    // Epochs before the first samples arrive count too; it acts at the first
    // with samples (locality's own test checks it acts only once).
    assert_eq!(log.failed, 0, "{log:?}");
    if skelaff_numa_alloc::Topology::get().unwrap().nodes_with_cpus().len() == 1 {
        assert!(log.moves.is_empty(), "{log:?}");
    }
}

/// Each unit adds to a counter and takes about a millisecond.
struct SlowAdd;

impl Skeleton for SlowAdd {
    type Unit = u64;
    type Shared = TVar<u64>;
    type PerWorker = ();
    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        u: &u64,
        _: &mut (),
        t: &'t TVar<u64>,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        let v = tx.read(t)?;
        std::thread::sleep(std::time::Duration::from_millis(1));
        tx.write(t, v + u)
    }
}

/// One run of ten `SlowAdd` units on two workers, sampling every access,
/// with the applied oracle's `stretch`; the oracle's log.
fn slow_run_with(
    stretch: &skelaff_worklist::OracleStretch,
    total: &TVar<u64>,
) -> Option<skelaff_locality::MigrationLog> {
    let mut wl = Builder::new()
        .threads(2)
        .access_profile(Some(skelaff_locality::Sampling::new(1, 1 << 12).unwrap()))
        .oracle(Some(stretch.clone()))
        .build(&SlowAdd, total)
        .unwrap();
    wl.add_work_units(0..10);
    wl.run().unwrap().access_profile.expect("asked for").migration
}

#[test]
fn an_oracle_stretch_spans_runs_and_acts_once() {
    use skelaff_worklist::OracleStretch;
    use std::time::Duration;
    let total = TVar::new(0);
    let stretch = OracleStretch::new(Duration::from_millis(20));
    // Twelve runs of about 5 ms each (ten 1 ms units on two workers).
    let mut acted_in = Vec::new();
    let mut logs = Vec::new();
    for run in 0..12 {
        let log = slow_run_with(&stretch, &total);
        if let Some(l) = &log {
            if l.held_workers.is_some() {
                acted_in.push(run);
                // It acted when its stretch of summed run time was over.
                let len = match stretch.stretch() {
                    skelaff_locality::Stretch::Time(t) => t,
                    other => panic!("a stretch of time became {other:?}"),
                };
                assert!(stretch.used() >= len, "{:?} after {run} runs", stretch.used());
            }
        }
        logs.push(log);
    }
    assert_eq!(total.load(), 12 * 45);
    // Once, in whichever run the summed time reached the stretch.
    assert_eq!(acted_in.len(), 1, "{logs:?}");
    assert!(stretch.acted());
    let k = acted_in[0];
    // Every run up to it had the oracle's thread, waiting; none after.
    assert!(logs[..k].iter().all(|l| l.as_ref().is_some_and(|l| l.held_workers.is_none() && l.moves.is_empty())));
    assert!(logs[k + 1..].iter().all(Option::is_none), "{logs:?}");
}

#[test]
fn an_oracle_stretch_of_units_acts_at_the_unit_that_ends_it() {
    use skelaff_locality::Sampling;
    use skelaff_worklist::OracleStretch;
    let total = TVar::new(0);
    let stretch = OracleStretch::units(25);
    // Runs of ten units: the 25th commits in the third run, whatever the
    // runs' times.
    let mut logs = Vec::new();
    for _ in 0..5 {
        logs.push(slow_run_with(&stretch, &total));
    }
    assert_eq!(total.load(), 5 * 45);
    let acted: Vec<usize> = logs
        .iter()
        .enumerate()
        .filter(|(_, l)| l.as_ref().is_some_and(|l| l.held_workers.is_some()))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(acted, [2], "{logs:?}");
    let log = logs[2].as_ref().unwrap();
    // A worker acted (a stretch of units has no thread), after posting.
    assert!(log.by_worker, "{log:?}");
    assert!(logs[..2].iter().all(|l| l.as_ref().is_some_and(|l| l.held_workers.is_none())));
    assert!(logs[3..].iter().all(Option::is_none), "{logs:?}");
    assert!(stretch.acted());
    // Zero units is refused like zero time.
    let e = Builder::new()
        .access_profile(Some(Sampling::new(1, 1 << 12).unwrap()))
        .oracle(Some(OracleStretch::units(0)))
        .build(&SlowAdd, &total)
        .unwrap_err();
    assert!(e.to_string().contains("longer than zero"), "{e}");
}
