#![doc = include_str!("../README.md")]

pub mod atomic_file;
mod board;
mod cost;
mod error;
mod footprint;
mod format;
mod kernel;
mod machine;
mod migrate;
mod oracle;
mod page_index;
mod plan;
#[cfg(feature = "plots")]
mod plot;
mod profile;
mod recorder;
mod report;
mod schemes;

pub use board::SampleBoard;
pub use cost::{CostModel, LocalityFigures};
pub use error::{Error, RecordError, Result};
pub use footprint::{Footprint, FootprintCell, SharingRow};
pub use format::RECORD_BYTES;
pub use kernel::{Applied, page_nodes};
pub use machine::{DEFAULT_REMOTE_DISTANCE, LOCAL_DISTANCE, MAX_DISTANCE, MAX_NODES, Machine, PaperMachine};
pub use migrate::{MigrationLog, Migrator, PageMove};
pub use oracle::{AppliedOracle, OracleRun, OracleStretch, Stretch};
pub use page_index::PageIndex;
pub use plan::PlacementPlan;
pub use profile::{AccessKind, Attribution, PageAccess, Profile, ProfileHeader, Sampling};
pub use recorder::{Overflow, Recorder};
pub use report::{LocalityRow, LocalityTable, RowKind, RunLocality, SchemeFigures, modelled_label};
pub use schemes::{Epoch, MigrationRule, Scheme};

#[cfg(all(test, not(loom)))]
mod names_tests;
