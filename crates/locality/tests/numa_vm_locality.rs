//! Locality measured in the emulated NUMA machine (`cargo xtask numa-vm`).
//!
//! 1. The guest sees the machine's node distances (`-numa dist` for the
//!    paper's NUMA16/NUMA32, the 10/20 defaults otherwise).
//! 2. A synthetic program whose threads (one per node with CPUs, pinned)
//!    touch only their own pages: the sampled accesses, attributed with
//!    `move_pages`, are local 1.0 under bind and under first touch by the
//!    owner, `1/n` under interleave over `n` nodes, and each thread's node
//!    carries its own load. The same check fails on a profile whose threads'
//!    nodes are misattributed (shifted by one node).
//! 3. The oracle for real: the pages first touched by the main thread (all on
//!    its node), profiled; the Oracle_High plan is applied (`mbind` +
//!    migrate); a second pass measures local fraction within 0.05 of the
//!    modelled oracle, which equals Ideal.
//!
//! Each run prints `SKELAFF-LOCALITY {json}` (a `RunLocality`) for the report.

use std::process::ExitCode;

use skelaff_locality::{
    Access, CostModel, LocalityFigures, Machine, MigrationRule, Overflow, PlacementPlan, Profile, ProfileHeader,
    Recorder, RunLocality, Sampling, Scheme,
};
use skelaff_numa_alloc::testkit::{GuestSpec, Suite};
use skelaff_numa_alloc::{NodeSet, NumaRegion, Policy, RegionOptions, Topology, pin};

/// Pages each thread owns.
const PAGES: usize = 96;
/// Passes over them.
const ROUNDS: usize = 24;
/// Tolerance on a sampled fraction (binomial error of ~10^3 samples is < 0.02).
const TOLERANCE: f64 = 0.05;

fn main() -> ExitCode {
    let Some(spec) = GuestSpec::from_cmdline() else {
        eprintln!("numa_vm_locality: not inside the emulated machine; run `cargo xtask numa-vm`");
        return ExitCode::FAILURE;
    };
    let topo = match Topology::get() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("numa_vm_locality: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut s = Suite::new(&format!("locality on {spec}"));
    let expected = expected_machine(&spec);
    s.check("the guest reports the machine's node distances", || check_distances(topo, &expected));
    let machine = expected;
    let cpu_nodes: Vec<usize> = topo.nodes_with_cpus().iter().collect();
    let all = topo.node_set();

    let mut bind_profile = None;
    s.check("bind: every sampled access is local", || {
        let p = run(&machine, topo, "bind", &cpu_nodes, |node| {
            region(RegionOptions::new(Policy::Bind(NodeSet::single(node))).prefault(true))
        })?;
        let r = check_private(&p, &cpu_nodes, 1.0)?;
        bind_profile = Some(p);
        Ok(r)
    });
    s.check("first touch by the owner: every sampled access is local", || {
        let p = run(&machine, topo, "first-touch", &cpu_nodes, |_| region(RegionOptions::new(Policy::FirstTouch)))?;
        check_private(&p, &cpu_nodes, 1.0)
    });
    s.check("interleave over all nodes: local fraction 1/n", || {
        let p = run(&machine, topo, "interleave", &cpu_nodes, |_| {
            region(RegionOptions::new(Policy::Interleave(all)).prefault(true))
        })?;
        let f = figures(&p)?;
        let want = 1.0 / all.len() as f64;
        near("interleave local fraction", f.local_fraction, want)?;
        // Every node serves about 1/n of the accesses: imbalance near 1.
        if f.imbalance > 1.0 + 4.0 * TOLERANCE {
            return Err(format!("interleave imbalance {:.3} (loads {:?}); want about 1", f.imbalance, f.node_load));
        }
        Ok(())
    });
    s.check("the check fails when each thread's node is misattributed", || {
        let p = bind_profile.take().ok_or("the bind run did not produce a profile")?;
        if cpu_nodes.len() < 2 {
            return Ok(()); // one node: every attribution is the same node
        }
        let (header, accesses) = p.into_parts();
        let shift = |n: u16| {
            cpu_nodes[(cpu_nodes.iter().position(|&c| c == usize::from(n)).unwrap_or(0) + 1) % cpu_nodes.len()] as u16
        };
        let wrong = accesses.into_iter().map(|a| Access { node: shift(a.node), ..a }).collect();
        let wrong = Profile::new(header, wrong).map_err(|e| e.to_string())?;
        match check_private(&wrong, &cpu_nodes, 1.0) {
            Err(why) => {
                println!("     (as it should: {why})");
                Ok(())
            }
            Ok(()) => Err("a profile with every thread on the wrong node passed the bind check".into()),
        }
    });
    s.check("the oracle's plan, applied, reaches its modelled locality and Ideal", || {
        oracle(&machine, topo, &cpu_nodes)
    });
    s.finish()
}

/// The machine the guest should be: a paper machine named on the command
/// line, else `NODESxCPUS[+MEMONLY]` with the 10/20 defaults.
fn expected_machine(spec: &GuestSpec) -> Machine {
    let named = std::fs::read_to_string("/proc/cmdline")
        .ok()
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("skelaff.machine=").map(str::to_owned)));
    if let Some(m) = named.and_then(|n| n.parse::<Machine>().ok()) {
        return m;
    }
    let n = spec.total_nodes();
    let cpus = (0..n).map(|i| if i < spec.nodes { spec.cpus_per_node as u32 } else { 0 }).collect();
    let d = (0..n * n).map(|i| if i / n == i % n { 10 } else { 20 }).collect();
    Machine::new(spec.to_string(), cpus, d).expect("a valid default machine")
}

fn check_distances(topo: &Topology, want: &Machine) -> Result<(), String> {
    let got = Machine::from_topology(want.name(), topo).map_err(|e| e.to_string())?;
    if got != *want {
        let n = want.nodes().min(got.nodes());
        let diff: Vec<String> = (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .filter(|&(i, j)| got.distance(i, j) != want.distance(i, j))
            .take(8)
            .map(|(i, j)| format!("{i}->{j}: {:?}, want {:?}", got.distance(i, j), want.distance(i, j)))
            .collect();
        return Err(format!("the guest is {got}, want {want}; differing: {}", diff.join(", ")));
    }
    println!("     {got}");
    Ok(())
}

fn region(options: RegionOptions) -> Result<NumaRegion, String> {
    NumaRegion::new(PAGES * 4096, options).map_err(|e| format!("allocating: {e}"))
}

/// One thread per node of `cpu_nodes`, pinned to that node, allocating its
/// region with `alloc(node)` and reading/writing only it; each access offered
/// to the thread's recorder. Returns the attributed profile.
fn run(
    machine: &Machine,
    topo: &Topology,
    placement: &str,
    cpu_nodes: &[usize],
    alloc: impl Fn(usize) -> Result<NumaRegion, String> + Sync,
) -> Result<Profile, String> {
    let regions = std::thread::scope(|scope| {
        let handles: Vec<_> = cpu_nodes
            .iter()
            .enumerate()
            .map(|(t, &node)| {
                let alloc = &alloc;
                scope.spawn(move || -> Result<(NumaRegion, Recorder), String> {
                    let cpu = topo.node(node).and_then(|n| n.cpus.iter().next()).ok_or("node without CPUs")?;
                    pin::pin_to_cpu(cpu).map_err(|e| e.to_string())?;
                    let mut r = alloc(node)?;
                    let rec = touch(&mut r, t as u16)?;
                    Ok((r, rec))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "a thread panicked".to_owned())?)
            .collect::<Result<Vec<_>, _>>()
    })?;
    let (regions, recorders): (Vec<NumaRegion>, Vec<Recorder>) = regions.into_iter().unzip();
    let header = ProfileHeader::new(machine.clone(), "synthetic-private", placement, cpu_nodes.len() as u16);
    let p = Profile::from_recorders(header, recorders).map_err(|e| e.to_string())?;
    let p = p.attribute_at_end().map_err(|e| e.to_string())?;
    drop(regions);
    Ok(p)
}

/// The owner's passes over its region: a write then a read of every page.
fn touch(r: &mut NumaRegion, thread: u16) -> Result<Recorder, String> {
    let node = pin::current_node().map_err(|e| e.to_string())? as u16;
    let mut rec = Recorder::new(Sampling::new(3, 1 << 12).map_err(|e| e.to_string())?, Overflow::Thin);
    let start = std::time::Instant::now();
    let base = r.as_ptr() as u64 / 4096;
    let bytes = r.as_mut_slice();
    for round in 0..ROUNDS {
        for page in 0..PAGES {
            let at = page * 4096 + round * 8;
            bytes[at] = bytes[at].wrapping_add(1);
            let t = start.elapsed().as_nanos() as u64;
            rec.offer(Access::write(base + page as u64, thread, node, t));
            let _ = std::hint::black_box(bytes[at + 1]);
            rec.offer(Access::read(base + page as u64, thread, node, t));
        }
    }
    Ok(rec)
}

fn figures(p: &Profile) -> Result<LocalityFigures, String> {
    let f = p.measured(&CostModel::default()).map_err(|e| e.to_string())?;
    let run = RunLocality::from_profile(
        p,
        &Scheme::all().collect::<Vec<_>>(),
        &MigrationRule::default(),
        &CostModel::default(),
    )
    .map_err(|e| e.to_string())?;
    println!("SKELAFF-LOCALITY {}", serde_json::to_string(&run).map_err(|e| e.to_string())?);
    println!("     {}: {f}", p.header().placement);
    if f.unattributed > 0 {
        return Err(format!("{} sampled accesses have no node (pages not resident?)", f.unattributed));
    }
    Ok(f)
}

fn near(what: &str, got: f64, want: f64) -> Result<(), String> {
    if (got - want).abs() > TOLERANCE {
        return Err(format!("{what} is {got:.3}; the placement implies {want:.3} (tolerance {TOLERANCE})"));
    }
    Ok(())
}

/// Private pages all on their owner's node: local fraction `want`, and each
/// thread's node serving that thread's samples.
fn check_private(p: &Profile, cpu_nodes: &[usize], want: f64) -> Result<(), String> {
    let f = figures(p)?;
    near(&format!("{} local fraction", p.header().placement), f.local_fraction, want)?;
    let per_thread = f.accesses as f64 / cpu_nodes.len() as f64;
    for &n in cpu_nodes {
        if (f.node_load[n] as f64 - per_thread).abs() > TOLERANCE * per_thread + 1.0 {
            return Err(format!(
                "node {n} served {} sampled accesses; its thread made about {per_thread:.0}",
                f.node_load[n]
            ));
        }
    }
    Ok(())
}

/// Profile with every page on the main thread's node, plan Oracle_High,
/// apply it, measure again.
fn oracle(machine: &Machine, topo: &Topology, cpu_nodes: &[usize]) -> Result<(), String> {
    let main_cpu = topo.node(cpu_nodes[0]).and_then(|n| n.cpus.iter().next()).ok_or("no CPU")?;
    pin::pin_to_cpu(main_cpu).map_err(|e| e.to_string())?;
    // The main thread allocates and touches everything first.
    let mut regions: Vec<NumaRegion> = cpu_nodes
        .iter()
        .map(|_| region(RegionOptions::new(Policy::FirstTouch).prefault(true)))
        .collect::<Result<_, _>>()?;
    let pass = |regions: &mut Vec<NumaRegion>, placement: &str| -> Result<Profile, String> {
        let recorders = std::thread::scope(|scope| {
            let handles: Vec<_> = regions
                .iter_mut()
                .zip(cpu_nodes)
                .enumerate()
                .map(|(t, (r, &node))| {
                    scope.spawn(move || -> Result<Recorder, String> {
                        let cpu = topo.node(node).and_then(|n| n.cpus.iter().next()).ok_or("node without CPUs")?;
                        pin::pin_to_cpu(cpu).map_err(|e| e.to_string())?;
                        touch(r, t as u16)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().map_err(|_| "a thread panicked".to_owned())?)
                .collect::<Result<Vec<_>, _>>()
        })?;
        let header = ProfileHeader::new(machine.clone(), "synthetic-private", placement, cpu_nodes.len() as u16);
        Profile::from_recorders(header, recorders).and_then(Profile::attribute_at_end).map_err(|e| e.to_string())
    };
    let first = pass(&mut regions, "first-touch-by-main")?;
    let before = figures(&first)?;
    near(
        "pages first touched by the main thread: local fraction",
        before.local_fraction,
        1.0 / cpu_nodes.len() as f64,
    )?;
    let model = CostModel::default();
    let modelled = first.scheme(Scheme::OracleHigh, &MigrationRule::default(), &model).map_err(|e| e.to_string())?;
    let ideal = first.scheme(Scheme::Ideal, &MigrationRule::default(), &model).map_err(|e| e.to_string())?;
    let plan = PlacementPlan::from_profile(&first, Scheme::OracleHigh).map_err(|e| e.to_string())?;
    let applied = plan.apply().map_err(|e| e.to_string())?;
    println!(
        "     oracle-high plan: {} pages in {} ranges, per node {:?}",
        applied.pages,
        applied.ranges,
        plan.pages_per_node()
    );
    let second = pass(&mut regions, "oracle-high")?;
    let after = figures(&second)?;
    near("applied oracle-high local fraction vs its model", after.local_fraction, modelled.local_fraction)?;
    near("modelled oracle-high vs ideal", modelled.local_fraction, ideal.local_fraction)?;
    Ok(())
}
