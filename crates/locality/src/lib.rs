//! Where a NUMA program's memory accesses land, and where they could.
//!
//! A run records a bounded, sampled page-access [`Profile`] (each sample: the
//! page, the thread and its node, read or write, the time, and — once the
//! kernel has been asked — the node holding the page). From a profile this
//! crate computes:
//!
//! - the **footprint** ([`Footprint`], the SkelAff paper's Fig. 1): accesses
//!   per page over time per thread, and pages by how many threads share them,
//!   as CSV and an SVG plot;
//! - the **locality figures** of a placement ([`LocalityFigures`]): the
//!   local-access fraction, the per-node load and its imbalance, and a cost
//!   modelled over the machine's distance matrix ([`CostModel`]);
//! - the same figures under the NUCA study's **schemes** ([`Scheme`]): first
//!   touch, migration, Oracle_High, Oracle_COG and Ideal, for any
//!   [`Machine`] — including the SkelAff paper's NUMA16 and NUMA32;
//! - the oracle's **placement plan** ([`PlacementPlan`]), which a second run
//!   applies for real.
//!
//! # Examples
//!
//! ```
//! use skelaff_locality::{Access, CostModel, MigrationRule, Profile, ProfileHeader, Scheme};
//!
//! // Two threads on NUMA16's nodes 0 and 7 (the ladder's far corners, distance 15).
//! let header = ProfileHeader::new("numa16".parse()?, "demo", "first-touch", 2);
//! let mut accesses = Vec::new();
//! for t in 0..100u64 {
//!     accesses.push(Access::write(1, 0, 0, t)); // page 1: thread 0's
//!     accesses.push(Access::read(2, 1, 7, t));  // page 2: thread 1's ...
//! }
//! accesses.insert(0, Access::write(2, 0, 0, 0)); // ... but thread 0 touched it first
//! let profile = Profile::new(header, accesses)?;
//! let (rule, model) = (MigrationRule::default(), CostModel::default());
//! let first_touch = profile.scheme(Scheme::FirstTouch, &rule, &model)?;
//! let oracle = profile.scheme(Scheme::OracleHigh, &rule, &model)?;
//! assert!(first_touch.local_fraction < 0.51 && oracle.local_fraction > 0.99);
//! assert!(oracle.relative_cost(&first_touch) < 0.9);
//! # Ok::<(), skelaff_locality::Error>(())
//! ```

pub mod atomic_file;
mod board;
mod cost;
mod error;
mod footprint;
mod format;
mod kernel;
mod machine;
mod migrate;
mod page_index;
mod plan;
mod plot;
mod profile;
mod recorder;
mod report;
mod schemes;

pub use board::SampleBoard;
pub use cost::{CostModel, LocalityFigures};
pub use error::{Error, Result};
pub use footprint::{Footprint, FootprintCell, SharingRow};
pub use format::RECORD_BYTES;
pub use kernel::{Applied, page_nodes};
pub use machine::{DEFAULT_REMOTE_DISTANCE, LOCAL_DISTANCE, MAX_DISTANCE, MAX_NODES, Machine, PaperMachine};
pub use migrate::{MigrationLog, Migrator, PageMove, Stretch};
pub use page_index::PageIndex;
pub use plan::PlacementPlan;
pub use profile::{Access, AccessKind, Attribution, Profile, ProfileHeader, Sampling};
pub use recorder::{Overflow, Recorder};
pub use report::{LocalityRow, LocalityTable, RowKind, RunLocality, SchemeFigures, modelled_label};
pub use schemes::{Epoch, MigrationRule, Scheme};
