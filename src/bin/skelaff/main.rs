//! The `skelaff` command line: inspect the machine, and (as the workspace
//! grows) run the applications and experiments.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod inspect;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect(args) => inspect::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("skelaff: {e}");
            ExitCode::FAILURE
        }
    }
}
