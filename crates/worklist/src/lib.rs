#![doc = include_str!("../README.md")]

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
mod helper_crew;
#[cfg(not(loom))]
mod helper_run;
#[cfg(not(loom))]
mod job;
#[cfg(not(loom))]
mod moves;
#[cfg(not(loom))]
mod observe;
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
mod run_state;
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
pub use error::{Error, ProfileError};
#[cfg(not(loom))]
pub use placement::{
    HelperPlace, HelperSite, ThreadLayout, ThreadMapping, ThreadPlace, ThreadPlacement, TopologyPlacement,
};
#[cfg(not(loom))]
pub use pool::{Distribution, LocalOrder};
#[cfg(not(loom))]
pub use report::{
    ChannelFigures, CounterFigures, Decision, DecisionAt, HelperFigures, HelpersReport, NoHelper, RunReport,
    ShadowEnds, TIME_DENSE_UNITS, TIME_EVERY, TIME_EVERY_LATER, TimeBreakdown, TimingFigures, TuningFigures,
    WorkerReport,
};
#[cfg(not(loom))]
pub use run::{RunFuture, Worklist};
/// The applied oracle's stretch lives with the oracle, in `skelaff-locality`.
#[cfg(not(loom))]
pub use skelaff_locality::OracleStretch;
#[cfg(not(loom))]
pub use skeleton::{ProcessCtx, Skeleton, WorkerInfo};
#[cfg(not(loom))]
pub use worker_pool::WorkerPool;

#[cfg(all(test, not(loom)))]
mod names_tests;
