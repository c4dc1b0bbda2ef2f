//! What the two Shoal examples share: the `--arrays` names, the spmv
//! `Team` as the workloads' runner and the per-variant figures.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use skelaff::arrays::workloads::{ArrayReport, Runner};
use skelaff::arrays::{Choice, MemoryUse};
use skelaff::spmv::Team;

/// One `--arrays` value: an arrays implementation choice, or plain `Vec`s.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Variant {
    Arrays(Choice),
    Vec,
}

/// Every `--arrays` name.
pub(crate) const VARIANT_NAMES: &[&str] = &["auto", "single", "distributed", "replicated", "partitioned", "vec"];

impl FromStr for Variant {
    type Err = skelaff::arrays::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "vec" => Ok(Variant::Vec),
            other => other.parse::<Choice>().map(Variant::Arrays).map_err(|_| {
                skelaff::arrays::Error::UnknownName(skelaff_numa_alloc::UnknownName {
                    what: "--arrays value",
                    given: s.to_owned(),
                    allowed: VARIANT_NAMES,
                })
            }),
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Variant::Arrays(c) => c.fmt(f),
            Variant::Vec => f.write_str("vec"),
        }
    }
}

/// The spmv crate's pinned `Team` running the workloads' loops: thread `t`
/// is team thread `t`, on the node of its layout slot.
pub(crate) struct TeamRunner {
    team: Team,
    nodes: Vec<usize>,
}

impl TeamRunner {
    pub(crate) fn new(threads: usize) -> Result<TeamRunner, skelaff::spmv::Error> {
        let team = Team::with_threads(threads)?;
        let nodes = team.layout().slots().iter().map(|s| s.node).collect();
        Ok(TeamRunner { team, nodes })
    }
}

impl Runner for TeamRunner {
    fn thread_nodes(&self) -> Vec<usize> {
        self.nodes.clone()
    }
    fn run(&self, job: &(dyn Fn(usize) + Sync)) {
        self.team.run(|ctx| job(ctx.index()));
    }
}

/// One variant's figures.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct VariantFigures {
    pub(crate) arrays: String,
    /// Median over rounds of the time per iteration.
    pub(crate) seconds_per_iteration: f64,
    /// Each round's time per iteration.
    pub(crate) rounds: Vec<f64>,
    /// This variant's median over the Vec version's median (same run).
    pub(crate) ratio_vs_vec: f64,
    /// Allocating and filling its data.
    pub(crate) init_seconds: f64,
    /// Whether its result equals the Vec version's.
    pub(crate) agrees: bool,
    /// Memory its arrays hold per node (none for vec).
    pub(crate) memory_per_node: MemoryUse,
    /// That memory over one copy of each array: replication's cost.
    pub(crate) memory_vs_one_copy: f64,
    /// What each array got, and why.
    pub(crate) arrays_detail: Vec<ArrayReport>,
}

impl VariantFigures {
    pub(crate) fn memory_factor(detail: &[ArrayReport]) -> (MemoryUse, f64) {
        let mut m = MemoryUse::default();
        detail.iter().for_each(|r| m.add(&r.memory));
        let one: u64 = detail.iter().map(|r| r.bytes).sum();
        let factor = if one == 0 { 1.0 } else { m.total() as f64 / one as f64 };
        (m, factor)
    }
}

/// Prints the figures table and each arrays variant's choices.
pub(crate) fn print_table(figures: &[VariantFigures], unit: &str) {
    println!("{:<12} {:>14} {:>10} {:>8} {:>10}  memory per node", "arrays", unit, "vs vec", "check", "init s");
    for f in figures {
        let memory = if f.arrays_detail.is_empty() {
            "- (ordinary allocations, placed by first touch)".to_owned()
        } else {
            format!("{} ({:.2}x one copy)", f.memory_per_node, f.memory_vs_one_copy)
        };
        println!(
            "{:<12} {:>14.6} {:>9.3}x {:>8} {:>10.3}  {memory}",
            f.arrays,
            f.seconds_per_iteration,
            f.ratio_vs_vec,
            if f.agrees { "ok" } else { "DIFFERS" },
            f.init_seconds,
        );
    }
    for f in figures.iter().filter(|f| !f.arrays_detail.is_empty()) {
        println!("-- {}:", f.arrays);
        for r in &f.arrays_detail {
            println!("   {r}");
        }
    }
}

/// The machine in a line, and as JSON.
pub(crate) fn machine() -> serde_json::Value {
    match skelaff::numa::Topology::get() {
        Ok(t) => serde_json::json!({
            "nodes": t.allowed_nodes().iter().collect::<Vec<_>>(),
            "nodes_with_cpus": t.nodes_with_cpus().iter().collect::<Vec<_>>(),
            "cpus": t.allowed_cpus().len(),
            "thp_size": t.thp_size(),
        }),
        Err(e) => serde_json::json!({ "error": e.to_string() }),
    }
}
