//! The transactional worklist skeleton (OpenSkel) with the SkelAff
//! memory-affinity heuristic.
//!
//! A program implements [`Skeleton`]: how to process one work-unit inside a
//! transaction, and per-worker set-up and tear-down. [`Builder`] configures
//! a run and builds the [`Worklist`], which runs it on
//! pinned worker threads, each unit in a transaction of `skelaff-stm`, with
//! units that transactions add published only when they commit, until the
//! pool is empty and no running unit can add more.
//!
//! With [`PagePolicy::Auto`] (SkelAff, paper §4.3) the workers are
//! scattered over the machine and pinned, their memory is placed cyclically
//! over the nodes while they process the seed units, and every worker
//! switches to binding its allocations to its own node as soon as the
//! workers start generating new units. The decisions, with their times, are
//! in the [`RunReport`].
//!
//! With [`Worklist::run_with`] and an [`Assist`] implementation (the
//! `skelaff-helper-threads` crate), a helper thread beside each worker runs
//! the worker's next unit ahead of it as a shadow that publishes nothing,
//! to bring its data into the shared cache (paper §4.2). Where workers and
//! helpers run is one strategy's decision ([`Placement`]; the default,
//! [`TopologyPlacement`], follows the topology).
//!
//! The modules, each with one job: `config` (the settings and the
//! builder), `access_profile` (a run's sampled page accesses), `affinity` (units
//! queued on their data's node), `error`, `placement` (where threads run), `page_policy` (which
//! policy a worker has and how it takes effect), `pool` (the units and
//! termination), `skeleton` (what a program implements), `assist` (the
//! helper hook), `worker` (one worker's loop), `run` (a run from layout to
//! report, and the builder's `build`), `report` (what a run did, its decisions and helper figures),
//! `worker_pool` (the pinned threads that outlive runs, and the
//! process-wide pools), `crew` (how a pool's parked threads are handed a
//! run and how its caller learns they are done with it) with its loom
//! shim `primitive`.
//!
//! Runs take their workers from a [`WorkerPool`] whose threads park
//! between runs: [`Worklist::run`] uses a process-wide pool per layout,
//! [`Worklist::run_on`] a pool of the caller's, and
//! [`Worklist::submit`] returns a future for async callers.

// Loom builds (`RUSTFLAGS="--cfg loom"`, `tests/loom_crew.rs`) compile the
// pool's hand-off and its shim alone: the rest of the crate needs
// dependencies that loom builds leave out (see Cargo.toml).
#[cfg(loom)]
pub mod crew;
#[cfg(not(loom))]
#[allow(unreachable_pub)]
mod crew;
mod primitive;

#[cfg(not(loom))]
mod access_profile;
#[cfg(not(loom))]
mod affinity;
#[cfg(not(loom))]
mod assist;
#[cfg(not(loom))]
mod config;
#[cfg(not(loom))]
mod error;
#[cfg(not(loom))]
mod oracle;
#[cfg(not(loom))]
mod page_policy;
#[cfg(not(loom))]
mod placement;
#[cfg(not(loom))]
mod pool;
#[cfg(not(loom))]
mod report;
#[cfg(not(loom))]
mod run;
#[cfg(not(loom))]
mod skeleton;
#[cfg(not(loom))]
mod worker;
#[cfg(not(loom))]
mod worker_pool;

#[cfg(not(loom))]
pub use access_profile::AccessProfile;
#[cfg(not(loom))]
pub use affinity::{Affinity, AffinityFigures};
#[cfg(not(loom))]
pub use assist::{Assist, NoAssist};
#[cfg(not(loom))]
pub use config::{Builder, Helpers, PagePolicy, TxAssist};
#[cfg(not(loom))]
pub use error::Error;
#[cfg(not(loom))]
pub use oracle::OracleStretch;
#[cfg(not(loom))]
pub use placement::{HelperPlace, HelperSite, Layout, Placement, ThreadMapping, ThreadPlace, TopologyPlacement};
#[cfg(not(loom))]
pub use pool::Distribution;
#[cfg(not(loom))]
pub use report::{
    ChannelFigures, CounterFigures, Decision, DecisionAt, HelperFigures, HelpersReport, NoHelper, RunReport,
    ShadowEnds, TimingFigures, TuningFigures, WorkerReport,
};
#[cfg(not(loom))]
pub use run::{RunFuture, Worklist};
#[cfg(not(loom))]
pub use skeleton::{ProcessCtx, Skeleton, WorkerInfo};
#[cfg(not(loom))]
pub use worker_pool::WorkerPool;
