#![doc = include_str!("../README.md")]

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
