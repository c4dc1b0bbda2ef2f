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
//! report, and the builder's `build`), `report` (what a run did, its decisions and helper figures).

mod access_profile;
mod affinity;
mod assist;
mod config;
mod error;
mod oracle;
mod page_policy;
mod placement;
mod pool;
mod report;
mod run;
mod skeleton;
mod worker;

pub use access_profile::AccessProfile;
pub use affinity::{Affinity, AffinityFigures};
pub use assist::{Assist, NoAssist};
pub use config::{Builder, Helpers, PagePolicy, TxAssist};
pub use error::Error;
pub use oracle::OracleStretch;
pub use placement::{HelperPlace, HelperSite, Layout, Placement, ThreadMapping, ThreadPlace, TopologyPlacement};
pub use pool::Distribution;
pub use report::{
    ChannelFigures, CounterFigures, Decision, DecisionAt, HelperFigures, HelpersReport, NoHelper, RunReport,
    ShadowEnds, TimingFigures, TuningFigures, WorkerReport,
};
pub use run::Worklist;
pub use skeleton::{ProcessCtx, Skeleton, WorkerInfo};
