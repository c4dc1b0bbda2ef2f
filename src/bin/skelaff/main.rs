//! The `skelaff` command line: inspect the machine, run the STAMP
//! applications and the paper's experiment, solve or multiply a user's
//! Matrix Market matrix.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use skelaff::numa::alloc::NumaAlloc;

/// Every allocation follows the calling thread's page policy, so SkelAff's
/// cyclic-then-bind switch places the applications' data (paper §4.1).
#[global_allocator]
static ALLOC: NumaAlloc = NumaAlloc::new();

mod experiment;
mod inspect;
mod linear;
mod locality;
mod plot;
mod results;

/// NUMA-aware transactional worklists.
#[derive(Debug, Parser)]
#[command(name = "skelaff", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the machine's NUMA topology; with --demo, allocate a region under
    /// each page policy and print where the kernel put its pages.
    Inspect(inspect::Args),
    /// Run one STAMP application with its own flags (e.g. `skelaff run vacation -c2`).
    #[command(disable_help_flag = true)]
    Run {
        /// The application: vacation, kmeans, intruder, genome, labyrinth, yada.
        app: String,
        /// Its flags (`skelaff run APP --help` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The paper's experiment: applications x page policies x thread counts,
    /// written to results.csv, results.md and speedup plots (with --peer, also
    /// plots against STAMP's C programs from `cargo xtask stamp-vs-c`).
    Experiment(experiment::Args),
    /// The emulated machines' locality runs (`cargo xtask numa-vm`) as one
    /// table per application: rows policies and schemes, columns local
    /// fraction, imbalance, modelled cost relative to first touch.
    Locality(locality::LocalityArgs),
    /// The footprint of a recorded profile: accesses per page over time per
    /// thread, and pages by sharers, as CSV and SVG.
    Footprint(locality::FootprintArgs),
    /// Solve A x = b by conjugate gradients for a symmetric positive definite
    /// Matrix Market matrix (under mpirun, with the `mpi` feature: over every rank).
    Cg(linear::CgArgs),
    /// Multiply a Matrix Market matrix by a vector once: y = A x (under
    /// mpirun, with the `mpi` feature: over every rank).
    Spmv(linear::SpmvArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Inspect(args) => match inspect::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("skelaff: {:#}", anyhow::Error::from(e));
                ExitCode::FAILURE
            }
        },
        Command::Run { app, args } => experiment::run_app(&app, args),
        Command::Locality(args) => report(locality::locality(&args), "locality"),
        Command::Footprint(args) => report(locality::footprint(&args), "footprint"),
        Command::Cg(args) => linear::main(linear::Linear::Cg(args)),
        Command::Spmv(args) => linear::main(linear::Linear::Spmv(args)),
        Command::Experiment(args) => match experiment::experiment(&args) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            // A failure before or between the runs (2); a failed self-check is 1.
            Err(e) => {
                eprintln!("skelaff experiment: {e:#}");
                ExitCode::from(2)
            }
        },
    }
}

/// A command's exit: 0, or 1 with its error and the error's causes.
fn report(result: anyhow::Result<()>, command: &str) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("skelaff {command}: {e:#}");
            ExitCode::FAILURE
        }
    }
}
