//! Helper threads under the worklist: results identical with helpers on
//! and off, no deadlock when workers finish or stop while helpers are
//! mid-shadow, placement, and adaptive tuning.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use skelaff_helper_threads::{HelperConfig, HelperThreads, MAX_LIFESPAN, ShadowConfig, Tuning};
use skelaff_numa_alloc::Topology;
use skelaff_stm::{TMap, TVar, TxError, TxOps};
use skelaff_worklist::{
    Builder, Decision, Distribution, Error, HelperSite, Helpers, NoHelper, ProcessCtx, RunReport, Skeleton,
    ThreadMapping, ThreadPlacement, TopologyPlacement, WorkerInfo,
};

use common::{helper, total, within};

const LIMIT: Duration = Duration::from_secs(60);

/// Transfers between a few accounts (so transactions conflict and the
/// helpers restart), a history map (so shadows allocate), and units that
/// spawn units.
struct Bank {
    accounts: Vec<TVar<i64>>,
    history: TMap<u64, i64>,
    depth: u32,
}

impl Skeleton for Bank {
    type Unit = (u32, u64);
    type Shared = ();
    type PerWorker = u64;

    fn init_worker(&self, _: &(), _: &WorkerInfo) -> u64 {
        0
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &(depth, id): &(u32, u64),
        attempts: &mut u64,
        _: &'t (),
        ctx: &mut ProcessCtx<(u32, u64)>,
    ) -> Result<(), TxError> {
        *attempts += 1;
        let n = self.accounts.len() as u64;
        let h = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let (from, to) = ((h % n) as usize, ((h >> 20) % n) as usize);
        let amount = (h >> 40) as i64 % 100;
        let f = tx.read(&self.accounts[from])?;
        tx.write(&self.accounts[from], f - amount)?;
        let t = tx.read(&self.accounts[to])?;
        tx.write(&self.accounts[to], t + amount)?;
        self.history.insert(tx, id, amount)?;
        if depth < self.depth {
            ctx.add_work_unit((depth + 1, id * 2));
            ctx.add_work_unit((depth + 1, id * 2 + 1));
        }
        Ok(())
    }
}

fn bank_run(threads: usize, helpers: Helpers, distribution: Distribution) -> (Vec<i64>, Vec<(u64, i64)>, RunReport) {
    let bank = Bank { accounts: (0..8).map(|_| TVar::new(1000)).collect(), history: TMap::new(), depth: 4 };
    let assist = HelperThreads::default();
    let mut wl = Builder::new().threads(threads).helpers(helpers).distribution(distribution).build(&bank, &()).unwrap();
    wl.add_work_units((1..=40).map(|i| (0, i)));
    let report = wl.run_with(&assist).unwrap();
    let balances = bank.accounts.iter().map(TVar::load).collect();
    let history = skelaff_stm::atomically(|tx| bank.history.to_vec(tx));
    (balances, history, report)
}

#[test]
fn results_are_identical_with_helpers_on_and_off() {
    let (balances, history, report) =
        within(LIMIT, "bank, helpers off", || bank_run(1, Helpers::Off, Distribution::PerNode));
    assert!(report.helpers.per_helper.is_empty());
    assert_eq!(balances.iter().sum::<i64>(), 8000);
    // 40 roots, each a binary tree of depth 4: 40 * 31 units, ids distinct per root.
    assert_eq!(report.units, 40 * 31);
    for threads in [1, 2] {
        for helpers in [Helpers::On, Helpers::Auto] {
            for distribution in [Distribution::PerNode, Distribution::Shared] {
                let (b, h, r) = within(LIMIT, "bank, helpers on", move || bank_run(threads, helpers, distribution));
                assert_eq!(b, balances, "{threads} threads, helpers {helpers}, {distribution}");
                assert_eq!(h, history, "{threads} threads, helpers {helpers}, {distribution}");
                assert_eq!(r.units, 40 * 31);
                if helpers == Helpers::On {
                    assert_eq!(r.helpers.per_helper.len(), threads, "one helper per worker");
                    // Every unit is handed over before it runs, except the
                    // first a worker takes after running dry (at least one
                    // per worker that ran).
                    let handed = total(&r).units_handed;
                    let ran = r.workers.iter().filter(|w| w.units > 0).count() as u64;
                    assert!(handed > 0 && handed <= r.units - ran, "handed {handed} of {} units", r.units);
                }
            }
        }
    }
}

/// A shadow that reads forever (cancelled only by the worker reaching its
/// unit, the end of the run, or its lifespan), or computes without any
/// transactional call for a while.
struct Endless {
    x: TVar<u64>,
    /// Worker panics at this unit.
    panic_at: Option<u64>,
    /// Shadow computes this long without transactional calls.
    compute: Duration,
    entered: AtomicU64,
}

impl Skeleton for Endless {
    type Unit = u64;
    type Shared = TVar<u64>;
    type PerWorker = bool;

    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) -> bool {
        false
    }
    fn init_helper(&self, _: &TVar<u64>, _: &WorkerInfo) -> bool {
        true
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &u: &u64,
        is_helper: &mut bool,
        sum: &'t TVar<u64>,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        if *is_helper {
            self.entered.fetch_add(1, Ordering::Relaxed);
            let t = Instant::now();
            while t.elapsed() < self.compute {
                std::hint::spin_loop();
            }
            loop {
                tx.read(&self.x)?;
            }
        }
        // Let the helper get into its shadows (at most 10 ms per unit).
        let t = Instant::now();
        while self.entered.load(Ordering::Relaxed) * 2 < u && t.elapsed() < Duration::from_millis(10) {
            std::hint::spin_loop();
        }
        if self.panic_at == Some(u) {
            // Let helpers get into their shadows first.
            let t = Instant::now();
            while self.entered.load(Ordering::Relaxed) < 2 && t.elapsed() < Duration::from_secs(2) {
                std::thread::yield_now();
            }
            panic!("worker fails on unit {u} on purpose");
        }
        tx.update(sum, |s| s + u)?;
        Ok(())
    }
}

fn endless_run(threads: usize, panic_at: Option<u64>, compute: Duration) -> (Result<RunReport, Error>, u64) {
    let skel = Endless { x: TVar::new(1), panic_at, compute, entered: AtomicU64::new(0) };
    let cfg = HelperConfig {
        shadow: ShadowConfig { lifespan: MAX_LIFESPAN, ..Default::default() },
        adaptive: None,
        ..Default::default()
    };
    let assist = HelperThreads::new(cfg).unwrap();
    let sum = TVar::new(0);
    let mut wl = Builder::new().threads(threads).helpers(Helpers::On).build(&skel, &sum).unwrap();
    wl.add_work_units(0..200);
    let r = wl.run_with(&assist);
    (r, sum.load())
}

#[test]
fn no_deadlock_when_workers_finish_or_stop_while_helpers_are_mid_shadow() {
    // Every shadow reads forever: only the worker reaching its unit stops it.
    let (r, sum) = within(LIMIT, "endless shadows", || endless_run(1, None, Duration::ZERO));
    let r = r.unwrap();
    assert_eq!(sum, (0..200).sum::<u64>());
    let h = helper(&r, 0);
    assert_eq!(h.ends.completed, 0, "{h:?}");
    assert_eq!(h.ends.lifespan, 0, "{h:?}");
    assert!(h.ends.overtaken > 0, "{h:?}");

    // Another worker panics while helpers are in their shadows: the run
    // stops, every helper is told to finish, and the error comes back.
    for threads in [1, 2] {
        let (r, _) = within(LIMIT, "a worker panics mid-run", move || endless_run(threads, Some(50), Duration::ZERO));
        match r {
            Err(Error::Panicked { message, .. }) => assert!(message.contains("on purpose"), "{message}"),
            other => panic!("expected the worker's panic, got {other:?}"),
        }
    }

    // A shadow busy outside any transactional call cannot be cancelled:
    // the run waits for it, and still ends.
    let t = Instant::now();
    let (r, _) = within(LIMIT, "computing shadows", || endless_run(1, None, Duration::from_millis(5)));
    r.unwrap();
    assert!(t.elapsed() < LIMIT);
}

#[test]
fn placement_auto_and_on() {
    let topo = Topology::get().unwrap();
    let cpus = topo.allowed_cpus().len();
    let bank = Bank { accounts: (0..4).map(|_| TVar::new(0)).collect(), history: TMap::new(), depth: 0 };
    let run = |threads: usize, helpers: Helpers, counters: bool| {
        let mut wl = Builder::new().threads(threads).helpers(helpers).build(&bank, &()).unwrap();
        wl.add_work_units((0..20).map(|i| (0, i)));
        let cfg = HelperConfig { counters, ..HelperConfig::default() };
        wl.run_with(&HelperThreads::new(cfg).unwrap()).unwrap()
    };
    // As many workers as CPUs: no idle CPU, so Auto runs none, On runs one
    // per worker on a CPU another thread uses.
    let r = run(cpus, Helpers::Auto, false);
    assert!(r.helpers.per_helper.is_empty(), "{:?}", r.helpers);
    let none_for = |r: &RunReport, reason| {
        r.decisions.iter().any(|d| d.decision == Decision::NoHelper { helpers: Helpers::Auto, reason })
    };
    assert!(none_for(&r, NoHelper::NoIdleSharedCpu), "{:?}", r.decisions);
    let r = run(cpus, Helpers::On, false);
    assert_eq!(r.helpers.per_helper.len(), cpus);
    if cpus > 1 {
        assert!((0..cpus).all(|i| helper(&r, i).place.site != HelperSite::Dedicated));
        let placed = |d: &Decision| {
            matches!(d, Decision::HelperPlaced { site: HelperSite::SharedCpu | HelperSite::OtherCache, .. })
        };
        assert!(r.decisions.iter().any(|d| placed(&d.decision)), "{:?}", r.decisions);
    }
    // One worker: a dedicated helper if the machine has an idle CPU
    // sharing its cache (as the default placement says).
    let layout = TopologyPlacement::new(ThreadMapping::Scatter).place(topo, 1).unwrap();
    let r = run(1, Helpers::Auto, true);
    match layout.workers[0].helper.filter(|h| h.site == HelperSite::Dedicated) {
        Some(place) => assert_eq!(helper(&r, 0).place, place),
        None => assert!(r.helpers.per_helper.is_empty()),
    }
    // Worker counters are reported when asked for, with the note that says
    // which are missing (and why) exactly when some are.
    assert_eq!(r.helpers.per_worker.len(), 1);
    let c = r.helpers.per_worker[0];
    const NO_HARDWARE: &str = "no hardware cache counters on this machine (perf_event_open: ";
    const NONE_AT_ALL: &str = "no perf counters at all (perf_event_open: ";
    let notes_starting = |prefix: &str| r.helpers.notes.iter().filter(|n| n.starts_with(prefix)).count();
    let (no_hardware, none_at_all) = (notes_starting(NO_HARDWARE), notes_starting(NONE_AT_ALL));
    let notes = &r.helpers.notes;
    if !cfg!(feature = "perf") {
        // Built without perf-event: no counters, and the note says why.
        assert!(c.is_empty(), "{c:?}");
        let not_built = notes.iter().filter(|n| *n == skelaff_helper_threads::counters::NOT_BUILT).count();
        assert_eq!(not_built, 1, "{notes:?}");
    } else if c.llc_read_misses.is_some() {
        assert_eq!(
            (no_hardware, none_at_all),
            (0, 0),
            "hardware counters read, yet a note says they are missing: {notes:?}"
        );
    } else if c.task_clock_ns.is_some() {
        assert_eq!((no_hardware, none_at_all), (1, 0), "software counters only: {c:?}, notes {notes:?}");
    } else {
        assert!(c.is_empty(), "{c:?}");
        assert_eq!((no_hardware, none_at_all), (0, 1), "no counters: {notes:?}");
    }
}

/// Each unit reads a chain of cells; the shadow reads the same chain
/// (`useful`) or a disjoint one.
struct Chains {
    cells: Vec<TVar<u64>>,
    decoy: Vec<TVar<u64>>,
    useful: bool,
    slow: Duration,
    /// Shadows started (the worker waits for them, at most 10 ms a unit,
    /// so that a loaded machine does not starve the helper of samples).
    entered: AtomicU64,
}

impl Skeleton for Chains {
    type Unit = u64;
    type Shared = TVar<u64>;
    type PerWorker = bool;
    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) -> bool {
        false
    }
    fn init_helper(&self, _: &TVar<u64>, _: &WorkerInfo) -> bool {
        true
    }
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &u: &u64,
        is_helper: &mut bool,
        sum: &'t TVar<u64>,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        if *is_helper {
            self.entered.fetch_add(1, Ordering::Relaxed);
        } else {
            let t = Instant::now();
            while self.entered.load(Ordering::Relaxed) * 2 < u && t.elapsed() < Duration::from_millis(10) {
                std::hint::spin_loop();
            }
        }
        let cells = if *is_helper && !self.useful { &self.decoy } else { &self.cells };
        let mut s = 0;
        for i in 0..32 {
            s += tx.read(&cells[((u * 32 + i) as usize * 8) % cells.len()])?;
        }
        if !*is_helper {
            // Slow workers give shadows time to finish.
            let t = Instant::now();
            while t.elapsed() < self.slow {
                std::hint::spin_loop();
            }
            tx.update(sum, |x| x + s)?;
        }
        Ok(())
    }
}

fn chains_run(useful: bool, probe_units: u32) -> RunReport {
    let skel = Chains {
        cells: (0..8192).map(TVar::new).collect(),
        decoy: (0..8192).map(TVar::new).collect(),
        useful,
        slow: Duration::from_micros(100),
        entered: AtomicU64::new(0),
    };
    let tuning = Tuning { sample_every: 1, window: 2, off_units: 16, probe_units, ..Tuning::default() };
    let assist = HelperThreads::new(HelperConfig { adaptive: Some(tuning), ..Default::default() }).unwrap();
    let sum = TVar::new(0);
    let mut wl = Builder::new().threads(1).helpers(Helpers::On).build(&skel, &sum).unwrap();
    wl.add_work_units(0..200);
    let r = wl.run_with(&assist).unwrap();
    let expected: u64 = (0..200u64).map(|u| (0..32).map(|i| ((u * 32 + i) * 8) % 8192).sum::<u64>()).sum();
    assert_eq!(sum.load(), expected);
    r
}

#[test]
fn tuning_measures_coverage_and_switches_a_useless_helper_off() {
    // Coverage alone (no timing probe, which could switch the helper off
    // here: the worker's units are slow for other reasons).
    let good = within(LIMIT, "useful shadows", || chains_run(true, 0));
    let h = helper(&good, 0);
    assert!(h.tuning.unwrap().samples > 10, "{h:?}");
    // Shadows that finish read every line their worker reads.
    assert!(h.tuning.unwrap().coverage_permille() > 500, "{h:?}");
    assert_eq!(h.tuning.unwrap().switched_off, 0, "{h:?}");

    let bad = within(LIMIT, "useless shadows", || chains_run(false, 0));
    let h = helper(&bad, 0);
    assert!(h.tuning.unwrap().samples >= 2, "{h:?}");
    assert_eq!(h.tuning.unwrap().coverage_permille(), 0, "{h:?}");
    assert!(h.tuning.unwrap().switched_off >= 1, "{h:?}");
    assert!(h.units_skipped_off > 0, "{h:?}");

    // With the timing probe: windows of 8 units on and off; every probe
    // ends in a decision, whichever it is.
    let timed = within(LIMIT, "timed shadows", || chains_run(true, 8));
    let h = helper(&timed, 0);
    assert!(h.timing.unwrap().probes >= 2, "{h:?}");
    assert_eq!(h.timing.unwrap().probes, h.timing.unwrap().paid + h.timing.unwrap().switched_off, "{h:?}");
    assert!(h.timing.unwrap().last_on_ns > 0 && h.timing.unwrap().last_off_ns > 0, "{h:?}");
}

/// Units that remove and re-insert keys of a shared tree: workers free
/// nodes while shadows walk the same tree through pointers they read with
/// plain loads (the epoch guard keeps those nodes alive).
struct Churn {
    map: TMap<u64, u64>,
    /// Shadows started (the worker waits for them a little, so that a
    /// loaded machine cannot leave the helper without any).
    entered: AtomicU64,
}

impl Skeleton for Churn {
    type Unit = u64;
    type Shared = ();
    type PerWorker = bool;
    fn init_worker(&self, _: &(), _: &WorkerInfo) -> bool {
        false
    }
    fn init_helper(&self, _: &(), _: &WorkerInfo) -> bool {
        true
    }
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &u: &u64,
        is_helper: &mut bool,
        _: &'t (),
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        if *is_helper {
            self.entered.fetch_add(1, Ordering::Relaxed);
        } else {
            let t = Instant::now();
            while self.entered.load(Ordering::Relaxed) * 4 < u && t.elapsed() < Duration::from_millis(2) {
                std::hint::spin_loop();
            }
        }
        let k = u.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 256;
        let old = self.map.remove(tx, &k)?;
        self.map.insert(tx, k, old.unwrap_or(0) + 1)?;
        Ok(())
    }
}

#[test]
fn shadows_walk_structures_that_workers_free() {
    for threads in [1, 2] {
        let churn = Churn { map: TMap::new(), entered: AtomicU64::new(0) };
        skelaff_stm::atomically(|tx| {
            for k in 0..256 {
                churn.map.insert(tx, k, 0)?;
            }
            Ok(())
        });
        let r = within(LIMIT, "churn", {
            let churn = std::sync::Arc::new(churn);
            let c = churn.clone();
            move || {
                let mut wl = Builder::new().threads(threads).helpers(Helpers::On).build(&*c, &()).unwrap();
                wl.add_work_units(0..3000);
                let fixed = HelperConfig { adaptive: None, ..HelperConfig::default() };
                let r = wl.run_with(&HelperThreads::new(fixed).unwrap()).unwrap();
                let v = skelaff_stm::atomically(|tx| c.map.to_vec(tx));
                (r, v)
            }
        });
        let (report, entries) = r;
        assert_eq!(entries.len(), 256);
        assert_eq!(entries.iter().map(|e| e.1).sum::<u64>(), 3000, "every unit counted once");
        assert!(total(&report).shadows_run > 0);
    }
}

/// Records the CPU mask each helper thread has when the skeleton sets it up.
struct WhereHelpersRun {
    counter: TVar<u64>,
    helper_masks: parking_lot::Mutex<Vec<(usize, Vec<usize>)>>,
}

impl Skeleton for WhereHelpersRun {
    type Unit = u64;
    type Shared = ();
    type PerWorker = ();

    fn init_worker(&self, _: &(), _: &WorkerInfo) {}

    fn init_helper(&self, _: &(), worker: &WorkerInfo) {
        let mask = skelaff_numa_alloc::topology::thread_affinity().map(|m| m.iter().collect()).unwrap_or_default();
        self.helper_masks.lock().push((worker.index, mask));
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        _: &u64,
        _: &mut (),
        _: &'t (),
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        let v = tx.read(&self.counter)?;
        tx.write(&self.counter, v + 1)
    }
}

#[test]
fn a_helper_runs_pinned_to_the_cpu_its_place_names() {
    // Helpers are created after the workers pass the start gate and pin
    // themselves: the report's place must still be where they ran.
    let s = WhereHelpersRun { counter: TVar::new(0), helper_masks: parking_lot::Mutex::new(Vec::new()) };
    let threads = Topology::get().unwrap().allowed_cpus().len().clamp(1, 2);
    let mut wl = Builder::new().threads(threads).helpers(Helpers::On).build(&s, &()).unwrap();
    wl.add_work_units(0..2000);
    let r = wl.run_with(&HelperThreads::new(HelperConfig::default()).unwrap()).unwrap();
    assert_eq!(s.counter.load(), 2000);
    assert_eq!(r.helpers.per_helper.len(), threads, "{:?}", r.decisions);
    let masks = s.helper_masks.lock();
    assert_eq!(masks.len(), threads, "every helper set up once: {masks:?}");
    for (i, h) in r.helpers.per_helper.iter().enumerate() {
        let Some(cpu) = h.place.cpu else { continue };
        let (_, mask) = masks.iter().find(|(w, _)| *w == i).expect("helper of each worker");
        assert_eq!(mask, &vec![cpu], "helper {i} placed on CPU {cpu} ran with mask {mask:?}");
    }
}
