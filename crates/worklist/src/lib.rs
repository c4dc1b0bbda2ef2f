//! The transactional worklist skeleton (OpenSkel) with the SkelAff
//! memory-affinity heuristic.
//!
//! A program implements [`Skeleton`]: how to process one work-unit inside a
//! transaction, and per-worker set-up and tear-down. [`Worklist`] runs it on
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
//! to bring its data into the shared cache (paper §4.2).

mod assist;
mod placement;
mod pool;
mod report;
mod skeleton;
mod worklist;

pub use assist::{Assist, HelperPlace, LinkFigures, NoAssist};
pub use pool::Distribution;
pub use report::{Decision, HelperFigures, RunReport, WorkerReport};
pub use skeleton::{Ctx, Skeleton, WorkerInfo};
#[doc(hidden)]
pub use worklist::Unconfigured;
pub use worklist::{Builder, Error, Helpers, PagePolicy, ThreadMapping, Worklist};
