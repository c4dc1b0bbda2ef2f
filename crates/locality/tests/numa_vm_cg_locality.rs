//! NAS CG's locality, measured in the emulated NUMA machine (`cargo xtask
//! numa-vm`).
//!
//! NAS CG class S runs on a MASA team with one pinned thread per CPU under
//! each placement skelaff-spmv offers: in full under MASA, verifying its
//! zeta as the one-machine benchmark does, and for one outer iteration
//! under the others (see [`FULL`] for why). While the run's buffers are
//! still mapped, a
//! traced pass of one outer iteration (`NasCg::trace`: the same pinned
//! threads walking the same placed arrays in the kernel's order; see
//! `skelaff_spmv::trace` for why it records exactly the addresses the
//! kernel touches) gives a bounded, sampled trace of the matrix and vector
//! accesses per thread. It becomes a `Profile` (app `nas-cg`), attributed
//! with `move_pages` at the end (exact here: these placements never move a
//! page), and each run prints `SKELAFF-LOCALITY {json}` (a `RunLocality`;
//! the first-touch run also carries the NUCA study's schemes modelled from
//! its profile) for `skelaff locality`.
//!
//! The placements, against the five policies of the STAMP tables:
//!
//! - `first-touch`: the main thread (pinned to CPU 0 so its node is known)
//!   writes every array, as a naive program does, so every page lands on its node;
//! - `interleave`: every array interleaved page by page over the team's
//!   nodes (the kernel's interleave, `numactl --interleave`);
//! - `masa`: skelaff-spmv's own placement, MASA (the "auto" row of this
//!   application): the chunks of `ptrA`, `jA`, `A` and of the vectors `q`,
//!   `r`, `z`, `x` that one thread alone touches are bound to its node, and
//!   `p`, which every thread's SpMV gathers from, is interleaved.
//!
//! spmv has no placement that binds every array to one node, and none
//! called cyclic: *bind* in the STAMP tables binds each worker's
//! allocations to the worker's own node, which is what MASA does for the
//! arrays one thread owns, and *cyclic* with one-page blocks is the
//! interleave row. So the table has three measured rows, not five.
//!
//! The runs use the portable kernels (see [`KERNELS`]); under TCG on a
//! two-core host a full class S run takes about 8 s, a one-iteration one
//! half a second, besides the matrix's generation and the trace.
//!
//! Checks that can fail, per placement: zeta verifies (MASA's full run),
//! or the one iteration's zeta is the full run's first (within 1e-12
//! relative: the same arithmetic on the same team's split); every team thread
//! ran on the CPU its slot names; at most 5% of the sampled accesses have
//! no node; and at least 95% of the sampled pages are where the placement
//! puts them — for MASA, a chunk-bound page on the node of the thread
//! owning the element at the page's middle (the paper's page rounding) and
//! an interleaved page on the node the kernel's interleave gives its
//! address; for interleave, that node for every page; for first touch, the
//! main thread's node. The same check fails on the MASA run's profile with
//! every page's node shifted by one, and it is not vacuous (the MASA run
//! checks both bound and interleaved pages).
//!
//! On 4x1 it runs by default; with `skelaff.locality_sweep=off` on the
//! kernel command line (the default run's other guests) it does not run and
//! says so.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::process::ExitCode;

use skelaff_locality::{
    CostModel, Machine, MigrationRule, PageAccess, Profile, ProfileHeader, RunLocality, Sampling, Scheme,
};
use skelaff_numa_alloc::policy::interleave_node;
use skelaff_numa_alloc::{Topology, pin};
use skelaff_spmv::nas::{Class, NasCg};
use skelaff_spmv::trace::{AccessTrace, TouchKind, TraceOptions, TracedBuffer};
use skelaff_spmv::{ArrayPlacement, Masa, Schedule, Simd, SpmvOptions, Team};
use skelaff_testkit::{GuestSpec, Suite};

/// The application's name in the locality table.
const APP: &str = "nas-cg";
/// The smallest class: the guest's CPUs are emulated.
const CLASS: Class = Class::S;
/// One access in 64 of each array per thread, at most 8192 samples per
/// thread (class S on 4 threads thins to about one in 256).
const TRACE: TraceOptions = TraceOptions { period: 64, capacity: 1 << 13 };
/// The placements spmv offers, first touch first (the table's baseline).
const PLACEMENTS: [ArrayPlacement; 3] = [ArrayPlacement::FirstTouch, ArrayPlacement::Interleave, ArrayPlacement::Masa];
/// The placement whose run is the whole benchmark, verified. The others run
/// one outer iteration (`NasCg::run_iterations`): what this test checks of
/// them is where the pages are, and that is fixed before any iteration runs
/// (by `NasCg::new`'s allocation, `mbind` and first writes; these placements
/// never move a page), while one iteration already makes every access the
/// trace samples (the trace is one iteration's accesses, and every
/// iteration makes the same ones). The arithmetic is the same whatever the
/// placement: zeta's verification under one placement, and each short run's
/// zeta against the full run's first (`FIRST_ZETA`), keep every run's
/// numbers checked. The host's tests verify class S under every placement
/// and split (crates/spmv/tests: `nas_verify`). Fourteen fewer iterations
/// for two runs: about 14 s less of guest time on 4x1.
const FULL: ArrayPlacement = ArrayPlacement::Masa;
/// Relative difference allowed between a short run's zeta and the full
/// run's first (the same operations in the same order give the same bits;
/// the margin is NPB's 1e-10 tolerance's hundredth).
const FIRST_ZETA: f64 = 1e-12;
/// The portable kernels: the emulated CPU runs AVX2 gathers slowly (the
/// benchmark took twice as long with them), and the kernel level changes
/// no address the SpMV touches, so no figure here.
const KERNELS: Simd = Simd::Portable;
/// Share of sampled pages that must be where their placement puts them.
const PLACED: f64 = 0.95;
/// Share of sampled accesses that may lack a node.
const UNATTRIBUTED: f64 = 0.05;

/// What the placement says about one sampled page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Rule {
    /// On the node of the thread owning the element at its middle (MASA's chunk binding).
    Chunk,
    /// On the node the kernel's interleave gives its address.
    Interleaved,
    /// On the node of the main thread, which wrote it first.
    FirstTouch,
}

/// The node each sampled page should be on, and why.
type Intended = BTreeMap<u64, (u16, Rule)>;

fn main() -> ExitCode {
    let Some(spec) = GuestSpec::from_cmdline() else {
        eprintln!("numa_vm_cg_locality: not inside the emulated machine; run `cargo xtask numa-vm`");
        return ExitCode::FAILURE;
    };
    let topo = match Topology::get() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("numa_vm_cg_locality: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let param = |key: &str| cmdline.split_whitespace().find_map(|w| w.strip_prefix(key).map(str::to_owned));
    if param("skelaff.locality_sweep=").as_deref() == Some("off") {
        println!("numa_vm_cg_locality: not run on {spec} (the default run measures it on 4x1 only)");
        return ExitCode::SUCCESS;
    }
    let name = param("skelaff.machine=").unwrap_or_else(|| spec.to_string());
    let threads = spec.total_cpus();
    let mut s = Suite::new(&format!("NAS CG class {CLASS} locality on {spec}, {threads} threads"));
    // The main thread writes the arrays under first touch: keep it on one
    // CPU so that their node is known.
    let mut main_node = None;
    s.check("the main thread is pinned to CPU 0", || {
        pin::pin_to_cpu(0).map_err(|e| e.to_string())?;
        main_node = Some(pin::current_node().map_err(|e| e.to_string())?);
        Ok(())
    });
    let setup = Machine::from_topology(name, topo).map_err(|e| e.to_string()).and_then(|machine| {
        let masa = Masa::preprocess_with(topo, threads, Schedule::Static).map_err(|e| e.to_string())?;
        let team = masa.team().map_err(|e| e.to_string())?;
        Ok((machine, masa, team))
    });
    let (machine, masa, team) = match (setup, main_node) {
        (Ok(m), Some(_)) => m,
        (Err(e), _) => {
            s.check("the machine, MASA's layout and the team", || Err(e));
            return s.finish();
        }
        (Ok(_), None) => return s.finish(),
    };
    let main_node = main_node.unwrap_or(0) as u16;
    // Pages checked per rule, over the runs; the MASA run's profile and plan;
    // each run's first zeta.
    let mut checked: BTreeMap<(String, &str), usize> = BTreeMap::new();
    let mut masa_run = None;
    let mut first_zetas: Vec<(ArrayPlacement, f64)> = Vec::new();
    for placement in PLACEMENTS {
        let what = if placement == FULL { "zeta verifies" } else { "one iteration runs" };
        s.check(&format!("{APP} under {placement}: {what}; sampled pages where the placement puts them"), || {
            let (p, intended, zeta) = run(&masa, &team, &machine, placement, main_node)?;
            first_zetas.push((placement, zeta));
            for (rule, n) in check_placement(&p, &intended)? {
                *checked.entry((placement.to_string(), rule)).or_default() += n;
            }
            if placement == ArrayPlacement::Masa {
                masa_run = Some((p, intended));
            }
            Ok(())
        });
    }
    s.check(&format!("{APP}: each one-iteration run's zeta is the verified run's first"), || {
        let &(_, full) = first_zetas.iter().find(|(p, _)| *p == FULL).ok_or("the verified run did not finish")?;
        if first_zetas.len() != PLACEMENTS.len() {
            return Err(format!("only {} of {} runs finished", first_zetas.len(), PLACEMENTS.len()));
        }
        for &(placement, zeta) in &first_zetas {
            println!("     {placement}: first zeta {zeta:.13}");
            if (zeta - full).abs() > FIRST_ZETA * full.abs() {
                return Err(format!("{placement}'s first zeta {zeta:.13} is not {FULL}'s {full:.13}"));
            }
        }
        Ok(())
    });
    s.check(&format!("{APP}: the placement check fails with every page's node shifted"), || {
        let (p, intended) = masa_run.take().ok_or("the masa run did not produce a profile")?;
        if machine.nodes() < 2 {
            println!("     (nothing to shift: one node)");
            return Ok(());
        }
        let (header, accesses) = p.into_parts();
        let shift = |n: u16| (n + 1) % machine.nodes() as u16;
        let wrong = accesses.into_iter().map(|a| PageAccess { home: a.home.map(shift), ..a }).collect();
        let wrong = Profile::new(header, wrong).map_err(|e| e.to_string())?;
        match check_placement(&wrong, &intended) {
            Err(why) => {
                println!("     (as it should: {why})");
                Ok(())
            }
            Ok(_) => Err("a profile with every page on the wrong node passed the placement check".into()),
        }
    });
    s.check("the masa check was not vacuous: bound chunks and interleaved pages both checked", || {
        for rule in [Rule::Chunk, Rule::Interleaved] {
            let n = checked.get(&(ArrayPlacement::Masa.to_string(), rule_name(rule))).copied().unwrap_or(0);
            println!("     masa, {}: {n} sampled pages checked", rule_name(rule));
            if n == 0 {
                return Err(format!("no sampled page of the masa run was checked as {}", rule_name(rule)));
            }
        }
        Ok(())
    });
    s.finish()
}

fn rule_name(rule: Rule) -> &'static str {
    match rule {
        Rule::Chunk => "chunk-bound",
        Rule::Interleaved => "interleaved",
        Rule::FirstTouch => "first-touch",
    }
}

/// Runs NAS CG under `placement` (in full and verified for [`FULL`], one
/// outer iteration otherwise), traces one iteration on the run's buffers,
/// attributes the sampled pages while they are mapped, and prints the
/// run's `SKELAFF-LOCALITY` line. Returns the profile, where each sampled
/// page should be, and the run's first zeta.
fn run(
    masa: &Masa,
    team: &Team,
    machine: &Machine,
    placement: ArrayPlacement,
    main_node: u16,
) -> Result<(Profile, Intended, f64), String> {
    let mut cg = NasCg::new(masa, CLASS, SpmvOptions::default().placement(placement).simd(KERNELS))
        .map_err(|e| e.to_string())?;
    let report = if placement == FULL {
        let report = cg.run(team).map_err(|e| e.to_string())?;
        if !report.verified {
            return Err(format!("zeta {} does not verify (error {:e})", report.zeta, report.error));
        }
        report
    } else {
        cg.run_iterations(team, NonZeroUsize::MIN).map_err(|e| e.to_string())?
    };
    let first_zeta = report.iterations.first().ok_or("the run made no iteration")?.zeta;
    if placement == FULL {
        println!("     {report}");
    } else {
        println!("     NAS CG class {CLASS}: one iteration, zeta {first_zeta:.13}, {:.3} s", report.seconds);
    }
    let trace = cg.trace(team, TRACE).map_err(|e| e.to_string())?.evened();
    for th in trace.threads() {
        if th.ran_on() != Some(th.slot().cpu) {
            return Err(format!(
                "team thread {} is pinned to CPU {} but ran on {:?}",
                th.thread(),
                th.slot().cpu,
                th.ran_on()
            ));
        }
    }
    let profile = to_profile(&trace, machine, &placement.to_string())?;
    // move_pages while `cg` (and so every traced buffer) is still mapped.
    let profile = profile.attribute_at_end().map_err(|e| e.to_string())?;
    let intended = intended(&trace, masa, placement, main_node);
    drop(cg);
    // Oracle_High also on MASA's own accesses (the best static placement of
    // exactly the accesses its run made).
    let schemes: Vec<Scheme> = match placement {
        ArrayPlacement::FirstTouch => Scheme::all().collect(),
        ArrayPlacement::Masa => vec![Scheme::OracleHigh],
        _ => Vec::new(),
    };
    let model = CostModel::default();
    let line =
        RunLocality::from_profile(&profile, &schemes, &MigrationRule::default(), &model).map_err(|e| e.to_string())?;
    println!("SKELAFF-LOCALITY {}", serde_json::to_string(&line).map_err(|e| e.to_string())?);
    let f = profile.measured(&model).map_err(|e| e.to_string())?;
    println!(
        "     {} samples (1 in {} of {} accesses), {} pages: {f}",
        profile.accesses().len(),
        profile.header().sampling.period,
        profile.header().seen,
        profile.pages().len()
    );
    if f.unattributed as f64 > UNATTRIBUTED * (f.accesses + f.unattributed).max(1) as f64 {
        return Err(format!(
            "{} of {} sampled accesses have no node (pages not resident?)",
            f.unattributed,
            f.accesses + f.unattributed
        ));
    }
    Ok((profile, intended, first_zeta))
}

/// The trace as a locality profile of `machine`: each sample's page, its
/// thread and the thread's node (from the team's layout, which the run
/// checked against the CPU each thread ran on), read or write, and time.
fn to_profile(trace: &AccessTrace, machine: &Machine, placement: &str) -> Result<Profile, String> {
    let small = |what: &str, v: usize| u16::try_from(v).map_err(|_| format!("{what} {v} does not fit a profile"));
    let page_size = trace.page_size() as u64;
    let mut header = ProfileHeader::new(machine.clone(), APP, placement, small("thread count", trace.threads().len())?);
    header.page_size = page_size;
    header.sampling = Sampling { period: trace.period(), capacity: trace.options().capacity };
    header.seen = trace.seen();
    header.discarded = trace.discarded();
    let accesses = trace
        .samples()
        .map(|(th, s)| {
            let (thread, node) = (small("thread", th.thread())?, small("node", th.slot().node)?);
            let page = s.addr as u64 / page_size;
            Ok(match s.kind {
                TouchKind::Read => PageAccess::read(page, thread, node, s.time_ns),
                TouchKind::Write => PageAccess::write(page, thread, node, s.time_ns),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Profile::new(header, accesses).map_err(|e| e.to_string())
}

/// Where `placement` puts each sampled page (see the module docs).
fn intended(trace: &AccessTrace, masa: &Masa, placement: ArrayPlacement, main_node: u16) -> Intended {
    let ps = trace.page_size();
    let nodes = masa.layout().nodes();
    let interleaved = |page: usize| (interleave_node(&nodes, page * ps, ps) as u16, Rule::Interleaved);
    let mut out = Intended::new();
    for (_, s) in trace.samples() {
        let page = s.addr / ps;
        if out.contains_key(&(page as u64)) {
            continue;
        }
        let Some(buffer) = trace.buffer_at(s.addr) else { continue };
        let want = match placement {
            ArrayPlacement::FirstTouch => (main_node, Rule::FirstTouch),
            ArrayPlacement::Interleave => interleaved(page),
            ArrayPlacement::Masa => match &buffer.split {
                Some(_) => (chunk_node(buffer, masa, page * ps + ps / 2) as u16, Rule::Chunk),
                None => interleaved(page),
            },
        };
        out.insert(page as u64, want);
    }
    out
}

/// The node of the thread owning the element at byte `mid` of a split
/// buffer (the last thread's for the mapped tail past the data).
fn chunk_node(buffer: &TracedBuffer, masa: &Masa, mid: usize) -> usize {
    let last = masa.layout().node_of(masa.threads() - 1);
    let element = mid.saturating_sub(buffer.addr) / buffer.elem_size.max(1);
    buffer.owner(element).map_or(last, |t| masa.layout().node_of(t))
}

/// At least [`PLACED`] of the sampled pages are where their placement puts
/// them. Returns how many pages each rule checked.
fn check_placement(p: &Profile, intended: &Intended) -> Result<BTreeMap<&'static str, usize>, String> {
    let mut home: BTreeMap<u64, Option<u16>> = BTreeMap::new();
    for a in p.accesses() {
        home.entry(a.page).or_insert(a.home);
    }
    let (mut agree, mut wrong) = (0usize, Vec::new());
    let mut per_rule: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (page, &(want, rule)) in intended {
        *per_rule.entry(rule_name(rule)).or_default() += 1;
        match home.get(page).copied().flatten() {
            Some(got) if got == want => agree += 1,
            got => wrong.push(format!("page {page:#x} on {got:?}, {} says {want}", rule_name(rule))),
        }
    }
    let n = agree + wrong.len();
    let rules: Vec<String> = per_rule.iter().map(|(r, n)| format!("{n} {r}")).collect();
    println!(
        "     {n} of {} sampled pages checked ({}); {agree} where the placement puts them",
        home.len(),
        rules.join(", ")
    );
    if n == 0 || (agree as f64) < PLACED * n as f64 {
        return Err(format!(
            "{} of {n} pages are not where the placement puts them, e.g. {}",
            wrong.len(),
            wrong.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
        ));
    }
    Ok(per_rule)
}
