//! NAS CG (NPB 3.x) on a pinned thread team, with the matrix and vectors
//! placed by first touch or by MASA.
//!
//! ```sh
//! cargo run --release --features cli --example nas_cg -- --class B --threads 2 --placement masa
//! cargo run --release --features cli --example nas_cg -- --class S --threads 1 --placement first-touch --json
//! ```
//!
//! Prints NPB's iteration log, zeta, `VERIFICATION SUCCESSFUL` or
//! `VERIFICATION UNSUCCESSFUL` (and then exits non-zero), the time of the
//! timed iterations and NPB's Mop/s. First touch means what a naive program
//! does: the main thread writes every array, so all pages land on its node.

use std::process::ExitCode;

use clap::Parser;
use serde_json::json;
use skelaff::numa::Topology;
use skelaff::spmv::nas::Class;
use skelaff::spmv_args::EngineArgs;

/// NAS CG on a pinned thread team, verified against NPB's official zeta.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Problem class: S, W, A, B or C.
    #[arg(long, default_value = "S")]
    class: Class,
    #[command(flatten)]
    engine: EngineArgs,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    skelaff_bench_support::exit_code("nas_cg", run(&Args::parse()), "")
}

fn run(args: &Args) -> Result<bool, Box<dyn std::error::Error>> {
    let topo = Topology::get()?;
    let engine = args.engine.engine()?;
    let opts = engine.options();
    let p = args.class.params();
    println!("\n NAS Parallel Benchmarks (skelaff-spmv) - CG Benchmark\n");
    println!(" Size: {:>11}", p.na);
    println!(" Iterations: {:>5}", p.niter);
    println!(" Threads: {engine}");
    let r = engine.nas(args.class)?;
    println!("{}", r.npb_log());
    println!(" Class           =                        {}", r.class);
    println!(" Time in seconds =             {:12.2}", r.seconds);
    println!(" Mop/s total     =             {:12.2}", r.mops);
    println!(" Nonzeros        =             {:12}", r.nnz);
    if topo.nodes().len() == 1 {
        println!(
            " Note: this machine has 1 NUMA node; every placement puts every page on it, so MASA cannot beat first touch here."
        );
    }
    if args.json {
        let j = json!({
            "benchmark": "CG", "class": r.class.to_string(), "na": p.na, "nonzer": p.nonzer, "niter": p.niter,
            "shift": p.shift, "nnz": r.nnz, "threads": r.threads, "placement": opts.placement.to_string(),
            "split": opts.split.to_string(), "simd": opts.simd.to_string(), "huge_pages": engine.masa().uses_huge_pages(),
            "numa_nodes": topo.nodes().len(),
            "zeta": r.zeta, "zeta_verify": p.zeta_verify, "error": r.error, "verified": r.verified,
            "seconds": r.seconds, "init_seconds": r.init_seconds, "mops": r.mops,
        });
        println!("{j}");
    }
    Ok(r.verified)
}
