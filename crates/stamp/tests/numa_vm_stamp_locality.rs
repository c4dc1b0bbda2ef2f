//! The STAMP applications' locality, measured in the emulated NUMA machine
//! (`cargo xtask numa-vm`).
//!
//! Each application runs its small input (in the default run, a shorter
//! one: see [`default_input`]) with one worker per CPU under every page
//! policy (first-touch, bind, cyclic, interleave, SkelAff auto)
//! with a sampled access profile (the STM's sampler, see
//! `skelaff_worklist::AccessProfile`), attributed with `move_pages` at the
//! end of the run. Each run prints `SKELAFF-LOCALITY {json}` (a
//! `RunLocality`; the first-touch run also carries the NUCA study's schemes
//! modelled from its profile) for `skelaff locality`.
//!
//! Checks that can fail: the application's self-check; every sampled page
//! has a node; every sampled page whose allocator chunk's policy names a
//! node (bind to the worker's node, cyclic, interleave) is on that node in
//! the kernel's answer (so a policy that did not take effect, or a wrong
//! attribution, fails), and the same check fails on the bind run's profile
//! with every page's node shifted by one; and, summed over the
//! applications, the check is not vacuous for the policies that name nodes
//! (at least [`MIN_CHECKED`] pages each).
//!
//! With the sweep, each application also runs under first touch with pages
//! migrating as it goes (the NUCA study's migration applied for real by
//! `Builder::migration`'s background thread: row `first-touch+migration`,
//! each access attributed to the node its page had at the time), and under
//! first touch with the kernel's automatic NUMA balancing on, its hinting
//! faults' local share printed beside the profile's local fraction; and
//! under Oracle_High applied for real (`first-touch+oracle`:
//! `Builder::oracle` with `OracleStretch::units` moves every misplaced page
//! sampled in the first third of the run's units (the median units of the
//! policy runs) to its dominant accessor's node, and the row counts
//! the accesses after the moves; the workers wait at their next unit
//! while the pages move, one batched `move_pages`, which under TCG takes
//! about 0.6 ms a page). The row's local fraction must be within 0.05 of
//! the same accesses modelled under the plan the oracle applied (Oracle_High
//! of the stretch's samples). A run whose oracle moved nothing (its
//! sampled pages already on their dominant node) has a row too: first
//! touch's placement, kept, counted from the oracle's choice on
//! (`MigrationLog::oracle_chosen_ns`). Only a run whose oracle never acted
//! has none, and says so.
//!
//! By default two applications run (vacation and intruder); with
//! `skelaff.locality_sweep=all` on the kernel command line (`cargo xtask
//! numa-vm --stamp-sweep`) all six do, with `skelaff.locality_sweep=A,B`
//! (`--stamp-sweep=A,B`) those named do, and with `skelaff.locality_sweep=off`
//! (the default run's guests other than 4x1: this is the slowest guest test)
//! none does and the test says so.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use skelaff_locality::{CostModel, Machine, MigrationRule, Profile, RunLocality, Sampling, Scheme};
use skelaff_numa_alloc::Topology;
use skelaff_numa_alloc::alloc::NumaAlloc;
use skelaff_stamp::app::run_placed;
use skelaff_stamp::intruder::Intruder;
use skelaff_stamp::vacation::Vacation;
use skelaff_stamp::{App, AppError, CommonArgs, Entry, Outcome};
use skelaff_testkit::balancing::{Balancing, Vmstat};
use skelaff_testkit::{GuestSpec, Suite};
use skelaff_worklist::{AccessProfile, PagePolicy};

/// Worker policies follow the allocator, as in `skelaff run`.
#[global_allocator]
static ALLOC: NumaAlloc = NumaAlloc::new();

/// The applications of the default (short) run.
const DEFAULT_APPS: [&str; 2] = ["vacation", "intruder"];
/// The policies of every application's table.
const POLICIES: [PagePolicy; 5] =
    [PagePolicy::FirstTouch, PagePolicy::Bind, PagePolicy::Cyclic, PagePolicy::Interleave, PagePolicy::Auto];
/// The small inputs make few transactional accesses: sample one in 4.
const SAMPLING: Sampling = Sampling { period: 4, capacity: 1 << 15 };
/// The applications whose units say where their data is (affinity
/// scheduling gets a row of its own for them: SkelAff auto with the hint).
const HINTING_APPS: [&str; 3] = ["kmeans", "genome", "labyrinth"];
/// Share of node-naming pages that must be where their policy says (a few
/// may sit in a chunk the kernel could not bind and the allocator fell back).
const PLACED: f64 = 0.95;
/// Sampled pages in node-naming chunks that bind, cyclic and interleave
/// must each have had checked, summed over the default pair or all six
/// applications: with the default run's inputs about 300 each on 4x1
/// (vacation about 70, intruder 220 to 300; with the small inputs, 280 and
/// 700), so a run whose workers' allocations stopped landing in
/// node-naming chunks, or whose sampler recorded little, fails here rather
/// than passing on a handful of pages (sampling one access in 4096 instead
/// of 4 left 13 such pages under bind, and failed here).
const MIN_CHECKED: usize = 100;
/// vacation's transactions in the default run (its small input: 16384).
const VACATION_TRANSACTIONS: u32 = 4096;
/// vacation's relations per table in the default run (its small input:
/// 16384): building its four tables was much of a run's time (a run took
/// 1 to 4 s of guest time with 16384, 0.9 to 2.3 s with 4096, on 4x1).
const VACATION_RELATIONS: u32 = 4096;
/// intruder's flows in the default run (its small input: 4096).
const INTRUDER_FLOWS: u32 = 1024;

/// The default run's input of `app`: its small input made shorter where
/// the small one is longer than the checks need. The default run is the
/// test command's (on 4x1), where the small inputs took 48 to 77 s of
/// guest time; a quarter of vacation's transactions, relations and of
/// intruder's flows took 24 s, and still sample some hundreds of pages in
/// node-naming chunks per policy (see [`MIN_CHECKED`]) and every page
/// policy's table row. Placed as
/// `Entry::run_small` places the small input (`run_placed`: under SkelAff
/// auto the main thread's data cyclically). The sweep keeps the small
/// inputs, whose tables the documents show.
fn default_input(app: &Entry) -> Entry {
    fn shorter<A: App>(threads: usize, common: &CommonArgs, shorten: fn(&mut A::Args)) -> Result<Outcome, AppError> {
        let mut args = A::small();
        A::set_threads(&mut args, threads);
        shorten(&mut args);
        run_placed::<A>(&args, common)
    }
    let run_small: fn(usize, &CommonArgs) -> Result<Outcome, AppError> = match app.name {
        "vacation" => |threads, common| {
            shorter::<Vacation>(threads, common, |a| {
                a.transactions = VACATION_TRANSACTIONS;
                a.relations = VACATION_RELATIONS;
            })
        },
        "intruder" => |threads, common| shorter::<Intruder>(threads, common, |a| a.flows = INTRUDER_FLOWS),
        _ => app.run_small,
    };
    Entry { run_small, ..*app }
}

fn main() -> ExitCode {
    let Some(spec) = GuestSpec::from_cmdline() else {
        eprintln!("numa_vm_stamp_locality: not inside the emulated machine; run `cargo xtask numa-vm`");
        return ExitCode::FAILURE;
    };
    let topo = match Topology::get() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("numa_vm_stamp_locality: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let param = |key: &str| cmdline.split_whitespace().find_map(|w| w.strip_prefix(key).map(str::to_owned));
    let sweep = param("skelaff.locality_sweep=");
    if sweep.as_deref() == Some("off") {
        println!("numa_vm_stamp_locality: not run on {spec} (the default run measures it on 4x1 only)");
        return ExitCode::SUCCESS;
    }
    // `all`, or the applications to sweep, comma-separated.
    let chosen: Option<Vec<String>> =
        sweep.as_deref().filter(|v| *v != "all").map(|v| v.split(',').map(str::to_owned).collect());
    let sweep = sweep.is_some();
    let name = param("skelaff.machine=").unwrap_or_else(|| spec.to_string());
    let mut s = Suite::new(&format!("STAMP locality on {spec}"));
    let machine = match Machine::from_topology(name, topo) {
        Ok(m) => m,
        Err(e) => {
            s.check("the machine's topology", || Err(e.to_string()));
            return s.finish();
        }
    };
    let threads = topo.nodes_with_cpus().iter().map(|n| topo.node(n).map_or(0, |n| n.cpus.len())).sum::<usize>();
    let registry = skelaff_stamp::registry();
    if let Some(unknown) = chosen.iter().flatten().find(|n| !registry.iter().any(|e| e.name == n.as_str())) {
        let names: Vec<&str> = registry.iter().map(|e| e.name).collect();
        s.check("the applications to sweep", || {
            Err(format!("no application `{unknown}`; the applications are: {}", names.join(", ")))
        });
        return s.finish();
    }
    let apps: Vec<Entry> = registry
        .into_iter()
        .filter(|e| match &chosen {
            Some(names) => names.iter().any(|n| n == e.name),
            None => sweep || DEFAULT_APPS.contains(&e.name),
        })
        .map(|e| if sweep { e } else { default_input(&e) })
        .collect();
    // Placement is per 4 KiB page only where huge pages are not made
    // behind the program's back (the guest boots with `madvise`).
    println!(
        "transparent huge pages: {}",
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .map_or_else(|e| e.to_string(), |s| s.trim().to_owned())
    );
    // Pages checked against their policy's node, per policy, over the apps.
    let mut checked: BTreeMap<String, usize> = BTreeMap::new();
    for app in &apps {
        let mut bind_run = None;
        // The median units of the policy runs, to size the applied
        // oracle's profiling stretch: a third of the work. Not a third of
        // their time: under TCG the same run's length varies severalfold
        // (labyrinth on NUMA32 ran its work in 233 ms where the policy runs'
        // median was 855 ms, so a time stretch outlasted it; intruder's
        // 1035 ms stretch from a slow first-touch run outlasted a 713 ms
        // oracle run). A unit count is the same share of every run.
        let mut work: Vec<u64> = Vec::new();
        for policy in POLICIES {
            s.check(&format!("{} under {policy}: placed as the policy says", app.name), || {
                let (p, ap, units) = run(app, policy, Extra::None, threads, &machine)?;
                let n = check_placement(&p, &ap)?;
                *checked.entry(policy.to_string()).or_default() += n;
                work.push(units);
                if policy == PagePolicy::Bind {
                    bind_run = Some((p, ap, units));
                }
                Ok(())
            });
        }
        if HINTING_APPS.contains(&app.name) {
            s.check(&format!("{} under auto with affinity scheduling: placed as the policy says", app.name), || {
                let (p, ap, _) = run(app, PagePolicy::Auto, Extra::Affinity, threads, &machine)?;
                check_placement(&p, &ap).map(drop)
            });
        }
        if sweep && machine.nodes() > 1 {
            s.check(&format!("{} under first touch with pages migrating as it runs", app.name), || {
                let (p, ap, _) = run(app, PagePolicy::FirstTouch, Extra::Migrate, threads, &machine)?;
                let log = ap.migration.as_ref().ok_or("the run kept no migration log")?;
                println!(
                    "     migration: {} epochs, {} pages moved, {} refused, {} samples dropped",
                    log.epochs,
                    log.moves.len(),
                    log.failed,
                    log.dropped_samples
                );
                check_placement(&p, &ap).map(drop)
            });
            s.check(&format!("{} under Oracle_High applied after a first third of the run", app.name), || {
                let mut sorted = work.clone();
                sorted.sort_unstable();
                let median = sorted.get(sorted.len() / 2).ok_or("no policy run committed a unit")?;
                let third = (median / 3).max(1);
                let migrated = || {
                    std::fs::read_to_string("/proc/vmstat").ok().map(|t| {
                        [
                            "pgmigrate_success ",
                            "numa_pages_migrated ",
                            "thp_collapse_alloc ",
                            "compact_migrate_scanned ",
                        ]
                        .map(|k| t.lines().find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok()).unwrap_or(0))
                    })
                };
                let before = migrated();
                let (p, ap, _) = run(app, PagePolicy::FirstTouch, Extra::Oracle(third), threads, &machine)?;
                let moved = ap.migration.as_ref().map_or(0, |l| l.moves.len());
                println!(
                    "     oracle: {moved} pages moved after {third} units; vmstat pgmigrate_success, numa_pages_migrated, \
                     thp_collapse_alloc, compact_migrate_scanned meanwhile: {:?}",
                    migrated().zip(before).map(|(a, b)| [a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3]])
                );
                check_placement(&p, &ap).map(drop)
            });
            s.check(
                &format!("{}: first touch under the kernel's NUMA balancing, beside its hinting faults", app.name),
                || autonuma(app, threads),
            );
        }
        s.check(&format!("{}: the placement check fails with every page's node shifted", app.name), || {
            let (p, ap, _) = bind_run.take().ok_or("the bind run did not produce a profile")?;
            if ap.intended.is_empty() || machine.nodes() < 2 {
                println!("     (nothing to shift: no node-naming page, or one node)");
                return Ok(());
            }
            let (header, accesses) = p.into_parts();
            let shift = |n: u16| (n + 1) % machine.nodes() as u16;
            let wrong = accesses.into_iter().map(|a| skelaff_locality::PageAccess { home: a.home.map(shift), ..a });
            let wrong = Profile::new(header, wrong.collect()).map_err(|e| e.to_string())?;
            match check_placement(&wrong, &ap) {
                Err(why) => {
                    println!("     (as it should: {why})");
                    Ok(())
                }
                Ok(_) => Err("a profile with every page on the wrong node passed the placement check".into()),
            }
        });
    }
    s.check("the placement check was not vacuous for bind, cyclic and interleave", || {
        for policy in [PagePolicy::Bind, PagePolicy::Cyclic, PagePolicy::Interleave] {
            let n = checked.get(&policy.to_string()).copied().unwrap_or(0);
            println!("     {policy}: {n} sampled pages checked against the node their policy names");
            // Over the default pair or all six; a chosen few (labyrinth
            // alone samples only its grid, allocated before the workers
            // exist) may name no node, and say so.
            if n < MIN_CHECKED && chosen.is_none() {
                return Err(format!(
                    "only {n} sampled pages under {policy} lay in a chunk whose policy names a node \
                     (at least {MIN_CHECKED} needed)"
                ));
            }
        }
        if chosen.is_some() {
            println!("     (asked of the default pair or all six applications only, not of a chosen few)");
        }
        Ok(())
    });
    s.finish()
}

/// First touch with the kernel's automatic NUMA balancing on: the
/// kernel's own sample of every access of the process (hinting faults),
/// its local share printed beside the profile's local fraction. The
/// profile samples only transactional accesses; the hinting faults sample
/// all of them, so the two agree only where the transactional accesses are
/// most of the memory traffic. No table row: a page the scanner has just
/// unmapped for a hinting fault is invisible to `move_pages` until it is
/// touched again, so many samples of such a run have no node (their share
/// is printed), and the local fraction is over the attributed ones only.
/// Reported, not asserted (beyond the application's self-check): how much
/// the scanner does within a short run depends on the emulator's speed.
fn autonuma(app: &Entry, threads: usize) -> Result<(), String> {
    let Some(on) = Balancing::enable_fast()? else {
        println!("     (skipped: a kernel without automatic NUMA balancing)");
        return Ok(());
    };
    let common = CommonArgs {
        policy: PagePolicy::FirstTouch,
        profile: Some("/tmp/unused.prof".into()),
        sample_period: SAMPLING.period,
        sample_capacity: SAMPLING.capacity,
        ..CommonArgs::default()
    };
    let before = Vmstat::read()?;
    let outcome = (app.run_small)(threads, &common).map_err(|e| e.to_string());
    let k = Vmstat::read()?.since(before);
    drop(on);
    let outcome = outcome?;
    if let Err(why) = &outcome.check {
        return Err(format!("self-check failed with NUMA balancing on: {why}"));
    }
    let ap = outcome.report.and_then(|r| r.access_profile).ok_or("the run recorded no access profile")?;
    if let Some(e) = &ap.attribution_error {
        return Err(format!("the kernel could not say where the pages are: {e}"));
    }
    let f = ap.profile.measured(&CostModel::default()).map_err(|e| {
        let unplaced = ap.profile.accesses().iter().filter(|a| a.home.is_none()).count();
        format!(
            "{e} ({} samples, {unplaced} of them on pages the kernel gave no node for)",
            ap.profile.accesses().len()
        )
    })?;
    let kernel = k.local_share().map_or("-".to_owned(), |s| format!("{s:.3}"));
    println!(
        "     kernel: {} hinting faults, local share {kernel}, {} pages migrated; profile: local fraction {:.3} over {} attributed samples ({} without a node)",
        k.hint_faults, k.pages_migrated, f.local_fraction, f.accesses, f.unattributed
    );
    Ok(())
}

/// What a run adds to its page policy.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extra {
    /// Nothing: the policy's own row.
    None,
    /// Affinity scheduling (`+affinity`).
    Affinity,
    /// Pages migrating as the run goes (`+migration`).
    Migrate,
    /// Oracle_High applied once this many units have committed
    /// (`+oracle`; the row counts only the accesses after the moves).
    Oracle(u64),
}

impl Extra {
    fn suffix(self) -> &'static str {
        match self {
            Extra::None => "",
            Extra::Affinity => "+affinity",
            Extra::Migrate => "+migration",
            Extra::Oracle(_) => "+oracle",
        }
    }
}

/// Runs `app`'s small input under `policy` (and `extra`) with a profile;
/// prints its `SKELAFF-LOCALITY` line, whose row is the policy's name
/// followed by `extra`'s suffix. Returns the profile (on `machine`, named
/// after the app), the allocator's intended nodes, and the units the
/// skeleton runs committed.
fn run(
    app: &Entry,
    policy: PagePolicy,
    extra: Extra,
    threads: usize,
    machine: &Machine,
) -> Result<(Profile, AccessProfile, u64), String> {
    let affinity = extra == Extra::Affinity;
    let suffix = extra.suffix();
    let common = CommonArgs {
        policy,
        affinity: affinity.then_some(true),
        migrate: extra == Extra::Migrate,
        oracle_after_units: if let Extra::Oracle(units) = extra { units } else { 0 },
        // `run_small` writes no file; the path only switches the profile on.
        profile: Some("/tmp/unused.prof".into()),
        sample_period: SAMPLING.period,
        sample_capacity: SAMPLING.capacity,
        ..CommonArgs::default()
    };
    let started = Instant::now();
    let outcome = (app.run_small)(threads, &common).map_err(|e| e.to_string())?;
    let took = started.elapsed();
    if let Err(why) = &outcome.check {
        return Err(format!("self-check failed: {why}"));
    }
    let report = outcome.report.ok_or("the run made no report")?;
    if affinity {
        // What the hint did: the share of units that ran on the node of
        // their data (the profile cannot show it: a unit's data is read
        // outside its transaction).
        println!("     affinity scheduling: {}", report.affinity());
        if report.affinity().hinted == 0 {
            return Err("affinity scheduling was on but no unit named its data's node".into());
        }
    }
    let ap = report.access_profile.ok_or("the run recorded no access profile")?;
    if let Some(e) = &ap.attribution_error {
        return Err(format!("the kernel could not say where the pages are: {e}"));
    }
    let (mut header, mut accesses) = ap.profile.clone().into_parts();
    let mut emit = true;
    let units = report.units;
    if let Extra::Oracle(stretch) = extra {
        // Only what ran on the oracle's placement: the accesses from the
        // first move on; from its choice on when its plan moved no page
        // (first touch's placement, kept); none when it never acted.
        let chosen_at = ap.migration.as_ref().and_then(|l| l.oracle_chosen_ns);
        let from =
            ap.migration.as_ref().and_then(|l| l.moves.first()).map(|m| m.time_ns).or(chosen_at).unwrap_or(u64::MAX);
        let last_move = ap.migration.as_ref().and_then(|l| l.moves.last()).map_or(0, |m| m.time_ns);
        let last_sample = accesses.iter().map(|a| a.time_ns).max().unwrap_or(0);
        println!(
            "     oracle: stretch {stretch} of {units} units, chosen at {:.1} ms, moves from {:.1} to {:.1} ms, \
             last sample at {:.1} ms",
            ap.migration.as_ref().and_then(|l| l.moves.first()).map_or(0.0, |m| m.chosen_ns as f64 / 1e6),
            ap.migration.as_ref().and_then(|l| l.moves.first()).map_or(0.0, |m| m.time_ns as f64 / 1e6),
            last_move as f64 / 1e6,
            last_sample as f64 / 1e6
        );
        let after: Vec<_> = accesses.iter().filter(|a| a.time_ns >= from).copied().collect();
        println!("     {} of {} samples came after the oracle's moves", after.len(), accesses.len());
        let moved = ap.migration.as_ref().is_some_and(|l| !l.moves.is_empty());
        let acted = moved || chosen_at.is_some();
        if acted && !moved {
            println!(
                "     the oracle's plan moved no page: its row is first touch's placement from the oracle's choice on"
            );
        }
        if let Some(l) = &ap.migration {
            let (held, of) = l.held_workers.unwrap_or_default();
            println!(
                "     {held} of {of} workers held while the pages moved (moved by {}); {} moves refused; {:?} of {} \
                 moved pages still on their node at the end",
                if l.by_worker { "a worker" } else { "the oracle's thread" },
                l.failed,
                l.still_there,
                l.moves.len()
            );
        }
        // The oracle applied is Oracle_High of the stretch's samples (those
        // posted before it chose), by its own rule: a page moves to the node with
        // the most samples (ties: the lowest) unless its node has as many.
        // Modelled on the accesses after the moves (a page the stretch never
        // sampled stays where it was), the measured local fraction must
        // match, or a page did not land where the oracle put it.
        // The stretch is what the board held when the oracle chose: the
        // samples before that moment (a batch can take tens of
        // milliseconds under TCG, and workers not held post on meanwhile).
        let chosen =
            ap.migration.as_ref().and_then(|l| l.moves.first()).map(|m| m.chosen_ns).or(chosen_at).unwrap_or(from);
        let before: Vec<_> = accesses.iter().filter(|a| a.time_ns < chosen).collect();
        if acted && !after.is_empty() && !before.is_empty() {
            let nodes = machine.nodes();
            let mut counts: BTreeMap<u64, (Option<u16>, Vec<u64>)> = BTreeMap::new();
            for a in &before {
                let e = counts.entry(a.page).or_insert_with(|| (a.home, vec![0; nodes]));
                if let Some(c) = e.1.get_mut(usize::from(a.node)) {
                    *c += 1;
                }
            }
            let planned: BTreeMap<u64, u16> = counts
                .iter()
                .filter_map(|(&page, (home, c))| {
                    let home = (*home)?;
                    let best = (0..c.len()).fold(0, |b, i| if c[i] > c[b] { i } else { b });
                    let keep = c.get(usize::from(home)).copied().unwrap_or(0) >= c[best];
                    Some((page, if keep { home } else { best as u16 }))
                })
                .collect();
            let share = |home: &dyn Fn(&skelaff_locality::PageAccess) -> Option<u16>| {
                after.iter().filter(|a| home(a) == Some(a.node)).count() as f64 / after.len() as f64
            };
            // Where the moved pages were found after their move.
            let to: BTreeMap<u64, u16> =
                ap.migration.iter().flat_map(|l| l.moves.iter().map(|m| (m.page, m.to))).collect();
            let on_moved: Vec<_> = after.iter().filter(|a| to.contains_key(&a.page)).collect();
            let landed = on_moved.iter().filter(|a| a.home == to.get(&a.page).copied()).count();
            let mismatched = planned.iter().filter(|(p, n)| to.get(p).is_some_and(|t| t != *n)).count();
            println!(
                "     {} of {} accesses after the moves are to moved pages, {landed} of them on the node moved to; \
                 {mismatched} moved pages went elsewhere than this model plans; {} samples dropped by the board",
                on_moved.len(),
                after.len(),
                ap.migration.as_ref().map_or(0, |l| l.dropped_samples)
            );
            let measured = share(&|a| a.home);
            let modelled = share(&|a| planned.get(&a.page).copied().or(a.home));
            println!(
                "     oracle of the stretch ({} pages planned): local fraction after the moves {measured:.3} measured, \
                 {modelled:.3} modelled",
                planned.len()
            );
            if (measured - modelled).abs() > 0.05 {
                return Err(format!(
                    "the applied oracle's local fraction {measured:.3} is not within 0.05 of its plan's {modelled:.3}"
                ));
            }
        }
        if after.is_empty() || !acted {
            // The oracle's epoch came after the run's workers had left (or
            // in no skeleton run at all): no row, and the placement check
            // runs on the whole run.
            println!("     (no row: the oracle never acted, or the run ended before its choice took effect)");
            emit = false;
        } else {
            accesses = after;
        }
    }
    header.machine = machine.clone();
    header.app = app.name.to_owned();
    header.placement = format!("{policy}{suffix}");
    let p = Profile::new(header, accesses).map_err(|e| e.to_string())?;
    // The NUCA study's schemes, modelled from the first-touch run's profile;
    // Oracle_High also on SkelAff's own runs' accesses (the best static
    // placement of exactly the accesses SkelAff's run made).
    let schemes: Vec<Scheme> = match (policy, extra) {
        (PagePolicy::FirstTouch, Extra::None) => Scheme::all().collect(),
        (PagePolicy::Auto, Extra::None | Extra::Affinity) => vec![Scheme::OracleHigh],
        _ => Vec::new(),
    };
    let model = CostModel::default();
    let line = RunLocality::from_profile(&p, &schemes, &MigrationRule::default(), &model).map_err(|e| e.to_string())?;
    if emit {
        println!("SKELAFF-LOCALITY {}", serde_json::to_string(&line).map_err(|e| e.to_string())?);
    }
    let f = p.measured(&model).map_err(|e| e.to_string())?;
    println!(
        "     {} samples (1 in {}), {} pages: {f}; the run took {took:.1?}",
        p.accesses().len(),
        p.header().sampling.period,
        p.pages().len()
    );
    if f.unattributed * 20 > f.accesses.max(1) {
        return Err(format!(
            "{} of {} sampled accesses have no node (pages not resident?)",
            f.unattributed, f.accesses
        ));
    }
    Ok((p, ap, units))
}

/// Every sampled page whose chunk's policy names a node is on that node
/// (at least [`PLACED`] of them). Returns how many pages were checked.
fn check_placement(p: &Profile, ap: &AccessProfile) -> Result<usize, String> {
    let mut home: BTreeMap<u64, Option<u16>> = BTreeMap::new();
    for a in p.accesses() {
        home.entry(a.page).or_insert(a.home);
    }
    let (mut agree, mut wrong) = (0usize, Vec::new());
    for (page, &want) in &ap.intended {
        match home.get(page).copied().flatten() {
            Some(got) if got == want => agree += 1,
            got => wrong.push(format!("page {page:#x} on {got:?}, its policy says {want}")),
        }
    }
    let n = agree + wrong.len();
    println!("     {n} of {} sampled pages in node-naming chunks; {agree} where their policy says", home.len());
    if (agree as f64) < PLACED * n as f64 {
        return Err(format!(
            "{} of {n} pages are not where their policy puts them, e.g. {}",
            wrong.len(),
            wrong.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
        ));
    }
    Ok(n)
}
