//! The decisions a run takes (placement, page policy, helpers), as values.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::Helpers;
use crate::placement::HelperSite;

/// Why a worker runs without a helper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoHelper {
    /// Helpers are off.
    Off,
    /// Helpers were asked for but [`Worklist::run`](crate::Worklist::run)
    /// was called, not `run_with`.
    NoImplementation,
    /// `auto` and the workers are not pinned, so no cache is known to be shared.
    NotPinned,
    /// `auto` and no idle CPU shares the worker's last-level cache.
    NoIdleSharedCpu,
    /// The placement gave the worker no helper place.
    NoPlace,
}

skelaff_numa_alloc::enum_names! {
    NoHelper {
        Off => "helpers off",
        NoImplementation => "no helper implementation given (Worklist::run_with)",
        NotPinned => "the workers are not pinned, so no cache is known to be shared",
        NoIdleSharedCpu => "no idle CPU shares its last-level cache",
        NoPlace => "the placement gave it no helper place",
    }
}

/// One decision of the skeleton.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// The workers were pinned to these CPUs by the placement.
    Pinned {
        /// The placement's name.
        placement: String,
        /// Worker `i`'s CPU at `i`.
        cpus: Vec<usize>,
        /// More workers than CPUs: CPUs are shared.
        oversubscribed: bool,
    },
    /// The workers are not pinned.
    NotPinned {
        /// The placement's name.
        placement: String,
    },
    /// SkelAff: pages are dealt cyclically over these nodes until workers
    /// generate units.
    CyclicUntilGenerating {
        /// The nodes.
        nodes: Vec<usize>,
    },
    /// SkelAff: a worker generated units, so every worker switches to bind.
    WorkersGenerate,
    /// SkelAff: this worker's allocations are bound to its node from now on.
    BoundToNode {
        /// The node.
        node: usize,
    },
    /// The worker's helper runs there.
    HelperPlaced {
        /// Its CPU (`None`: not pinned).
        cpu: Option<usize>,
        /// How good that CPU is.
        site: HelperSite,
    },
    /// No helper (for this worker, or for every one).
    NoHelper {
        /// The setting asked for.
        helpers: Helpers,
        /// Why.
        reason: NoHelper,
    },
    /// The helper could not be pinned to its CPU: it runs unpinned.
    HelperNotPinned {
        /// The CPU.
        cpu: usize,
        /// What the OS said.
        error: String,
    },
    /// The helper thread could not start: none for this worker.
    HelperNotStarted {
        /// What the OS said.
        error: String,
    },
    /// The helper's body panicked; the worker goes on alone.
    HelperPanicked {
        /// The panic message.
        message: String,
    },
    /// The run's one worker holds the STM's solo gate: its transactions
    /// check no lock when they read, take none to commit and never validate.
    Solo,
    /// The solo worker gave the gate back (another thread's transaction
    /// waited for it, or a transaction waited in `retry`): its transactions
    /// from then on ran the plain protocol.
    SoloGivenBack,
    /// The solo gate could not be taken: the worker runs the plain protocol.
    SoloRefused {
        /// Why.
        reason: String,
    },
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |v: &[usize]| v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
        match self {
            Decision::Pinned { placement, cpus, oversubscribed } => write!(
                f,
                "mapping {placement}: workers pinned to CPUs [{}]{}",
                list(cpus),
                if *oversubscribed { " (more workers than CPUs: CPUs shared)" } else { "" }
            ),
            Decision::NotPinned { placement } => write!(f, "mapping {placement}: workers not pinned"),
            Decision::CyclicUntilGenerating { nodes } => {
                write!(f, "SkelAff: page policy cyclic over nodes {} until workers generate units", list(nodes))
            }
            Decision::WorkersGenerate => {
                f.write_str("SkelAff: workers generate new units: switching every worker to bind (its own node)")
            }
            Decision::BoundToNode { node } => write!(f, "SkelAff: page policy bind to node {node}"),
            Decision::HelperPlaced { cpu: Some(c), site } => write!(f, "helper on CPU {c} ({site})"),
            Decision::HelperPlaced { cpu: None, .. } => f.write_str("helper not pinned; the OS places it"),
            Decision::NoHelper { helpers, reason } => write!(f, "helpers {helpers}: no helper: {reason}"),
            Decision::HelperNotPinned { cpu, error } => {
                write!(f, "helper not pinned to CPU {cpu} ({error}): it runs unpinned")
            }
            Decision::HelperNotStarted { error } => {
                write!(f, "helper thread could not start ({error}): none for this worker")
            }
            Decision::HelperPanicked { message } => {
                write!(f, "helper stopped by a panic: {message}; the worker goes on alone")
            }
            Decision::Solo => {
                f.write_str("one worker: its transactions run solo (no lock checks, locks or validation)")
            }
            Decision::SoloGivenBack => {
                f.write_str("solo gate given back (another thread's transaction waited): the plain protocol from here")
            }
            Decision::SoloRefused { reason } => write!(f, "solo gate not taken ({reason}): the plain protocol"),
        }
    }
}

/// A [`Decision`], who took it and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionAt {
    /// Time since the start of the run.
    pub at: Duration,
    /// The worker it concerns (`None`: the whole run).
    pub worker: Option<usize>,
    /// What was decided.
    pub decision: Decision,
}

impl fmt::Display for DecisionAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = self.worker.map_or("skeleton".to_owned(), |w| format!("worker {w}"));
        write!(f, "[{:>9.6} s] {who}: {}", self.at.as_secs_f64(), self.decision)
    }
}
