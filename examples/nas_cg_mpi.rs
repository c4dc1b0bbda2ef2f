//! NAS CG (NPB 3.x) over MPI ranks, each rank's rows on its own pinned
//! team with MASA placement; run under `mpirun` (build with `--features mpi`).
//!
//! ```sh
//! cargo build --release --features cli,mpi --example nas_cg_mpi
//! mpirun -np 2 --bind-to core target/release/examples/nas_cg_mpi --class B
//! # one rank per NUMA node, one thread per core of the node:
//! mpirun --map-by ppr:1:numa --bind-to numa target/release/examples/nas_cg_mpi --class C --threads 8
//! ```
//!
//! Rank 0 prints NPB's iteration log, zeta, `VERIFICATION SUCCESSFUL` or
//! `VERIFICATION UNSUCCESSFUL` (every rank then exits non-zero), the time
//! of the timed iterations (the slowest rank's), NPB's Mop/s, the halo
//! volume per SpMV and the share of the exchange hidden behind the local
//! multiply; with `--json`, one JSON object as its last line.

use std::process::ExitCode;

use clap::Parser;
use skelaff::spmv::SplitKind;
use skelaff::spmv::dist::{self, Mpi};
use skelaff::spmv::nas::Class;
use skelaff::spmv_args::EngineArgs;

/// NAS CG over MPI ranks, verified against NPB's official zeta.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Problem class: S, W, A, B or C.
    #[arg(long, default_value = "S")]
    class: Class,
    #[command(flatten)]
    engine: EngineArgs,
    /// How rows are split over the ranks: rows (equal) or nnz (balanced entries).
    #[arg(long, default_value = "rows")]
    rank_split: SplitKind,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mpi = match Mpi::init() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("nas_cg_mpi: {e}");
            return ExitCode::FAILURE;
        }
    };
    let comm = mpi.world();
    let result = comm.agree(args.engine.engine()).and_then(|engine| {
        let r = dist::nas::run(&comm, &engine, args.class, args.rank_split)?;
        Ok((r, engine.to_string()))
    });
    let (r, engine) = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("nas_cg_mpi: rank {}: {e}", comm.rank());
            return ExitCode::FAILURE;
        }
    };
    if comm.rank() == 0 {
        let n = &r.report;
        let p = n.params;
        println!("\n NAS Parallel Benchmarks (skelaff-spmv, MPI) - CG Benchmark\n");
        println!(" Size: {:>11}", p.na);
        println!(" Iterations: {:>5}", p.niter);
        println!(" Number of active processes: {:>5}", r.ranks);
        println!(" Rows split over ranks by {}; each rank: {engine}", r.split);
        println!("{}", n.npb_log());
        println!(" Class           =                        {}", n.class);
        println!(" Total processes =             {:12}", r.ranks);
        println!(" Time in seconds =             {:12.2}", n.seconds);
        println!(" Mop/s total     =             {:12.2}", n.mops);
        println!(" Mop/s/process   =             {:12.2}", n.mops / r.ranks as f64);
        println!(" Nonzeros        =             {:12}", n.nnz);
        println!(
            " Halo per SpMV   =             {:12} entries ({} bytes, all ranks)",
            r.halo_entries_per_spmv, r.halo_bytes_per_spmv
        );
        println!(
            " Exchange        =   {:.1} us posted-to-complete, {:.1} us exposed, {:.1} us alone: {:.1}% hidden",
            r.exchange_seconds * 1e6,
            r.exposed_seconds * 1e6,
            r.exchange_alone_seconds * 1e6,
            100.0 * r.hidden_fraction
        );
        if args.json {
            println!("{}", serde_json::to_string(&r).unwrap_or_default());
        }
    }
    if r.report.verified { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
