//! The paper's workloads, each over ordinary `Vec`s and over [`Array`]s
//! through the same kernel, so that a run measures what the arrays cost or
//! gain and checks that both give the same result: PageRank as Green-Marl
//! generates it ([`pagerank`]) and streamcluster's hot loop from PARSEC
//! ([`streamcluster`]), on graphs and points generated or read from files
//! ([`graph`]), with their parallel loops on a [`Runner`].

pub mod graph;
pub mod pagerank;
pub mod runner;
pub mod streamcluster;

use serde::Serialize;

pub use graph::Graph;
pub use runner::{PinnedThreads, Runner, run_collect};

use crate::array::{Array, Element};
use crate::builder::ArrayBuilder;
use crate::error::Result;
use crate::hints::{AccessHints, Choice, LargePages};
use crate::partition::Partition;
use crate::select::Selection;
use crate::storage::MemoryUse;

/// What one array of a workload got.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArrayReport {
    /// The array's name in the workload.
    pub name: &'static str,
    /// Its implementation and pages, and why.
    pub selection: Selection,
    /// Bytes of one copy.
    pub bytes: u64,
    /// Memory it holds per node (all copies).
    pub memory: MemoryUse,
}

impl ArrayReport {
    /// The report of `array`, named `name`.
    pub fn of<T: Element>(name: &'static str, array: &Array<T>) -> ArrayReport {
        ArrayReport { name, selection: array.selection().clone(), bytes: array.bytes() as u64, memory: array.memory() }
    }
}

impl core::fmt::Display for ArrayReport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {} [{}]", self.name, self.selection, self.memory)
    }
}

/// How a workload allocates one array: hints, choice, pages, and the
/// loop's schedule.
struct ArraySpec<'a> {
    hints: AccessHints,
    choice: Choice,
    large_pages: LargePages,
    schedule: &'a Partition,
}

impl ArraySpec<'_> {
    /// A builder for `len` elements: arrays of the loop's length use its
    /// schedule; others (offsets, neighbour lists), if partitioned at all,
    /// split over the same threads.
    fn builder<T: Element>(&self, len: usize) -> Result<ArrayBuilder<T>> {
        let part = if len == self.schedule.len() {
            self.schedule.clone()
        } else {
            Partition::new(len, self.schedule.thread_nodes())?
        };
        Ok(Array::builder(len).hints(self.hints).choice(self.choice).large_pages(self.large_pages).partition(&part))
    }
}
