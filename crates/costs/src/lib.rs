//! The STM's instruction-count guard.
//!
//! The costs that matter most in skelaff are per operation: one
//! transactional read, one write, one commit, one transaction of a
//! collection. A change that adds a few instructions to a read makes every
//! application slower, and wall-clock timings on shared 2-core machines
//! drift by more than that within an hour. So these costs are counted,
//! not timed: each [scenario](scenario::SCENARIOS) runs under valgrind's
//! callgrind, which counts the instructions executed inside one function
//! ([`costs_measured`](scenario::costs_measured)) the same on every run,
//! and the counts are compared with the baselines committed in
//! `baseline.json`. `skelaff-costs check` fails when one grew by more than
//! [`LIMIT_PERCENT`](baseline::LIMIT_PERCENT).
//!
//! ```sh
//! cargo run -p skelaff-costs --profile costs -- check            # the test command's step
//! cargo run -p skelaff-costs --profile costs -- show --cache-sim # per operation, with simulated misses
//! cargo run -p skelaff-costs --profile costs -- update           # rewrite the baselines (say why in the commit)
//! ```
//!
//! Why not gungraun (the maintained successor of iai-callgrind): it needs
//! its runner binary, `gungraun-runner`, installed at the library's exact
//! version, and on the CI's fresh two-core machine that install alone took
//! 3 min 29 s (`cargo install gungraun-runner --version 0.20.0 --locked`,
//! measured on this project's build machine), a quarter of the test
//! command's budget, for what is here one callgrind run and one number per
//! scenario.
//!
//! The [`intset`] module is TinySTM's intset workload on skelaff's
//! collections, shared with `examples/intset`, so the guard counts exactly
//! the operations that example times.

pub mod baseline;
pub mod callgrind;
pub mod intset;
pub mod scenario;

use std::path::PathBuf;

/// What can go wrong when counting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// valgrind could not be started.
    #[error("cannot run valgrind (install Debian's `valgrind`; scripts/setup.sh does)")]
    Valgrind {
        /// What the OS said.
        source: std::io::Error,
    },
    /// The scenario failed under callgrind.
    #[error("scenario `{name}` failed under callgrind ({status}): {last}")]
    Scenario {
        /// The scenario.
        name: String,
        /// Its exit status.
        status: String,
        /// The last line it printed to standard error.
        last: String,
    },
    /// Callgrind's output file could not be read.
    #[error("cannot read callgrind's output {path}")]
    Output {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        source: OutputError,
    },
    /// The baseline file could not be read or written.
    #[error("baseline file {path}")]
    Baseline {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        source: BaselineError,
    },
    /// A scenario name that does not exist.
    #[error("no scenario `{given}`; the scenarios are: {known}")]
    UnknownScenario {
        /// The name given.
        given: String,
        /// The names that exist.
        known: String,
    },
}

/// Why callgrind's output file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The file could not be read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// It was read but is not what callgrind writes.
    #[error(transparent)]
    Parse(#[from] callgrind::ParseError),
}

/// Why the baseline file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// The file could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// It is not a baseline file (or the baselines cannot be written as JSON).
    #[error("not a baseline file")]
    Json(#[from] serde_json::Error),
}
