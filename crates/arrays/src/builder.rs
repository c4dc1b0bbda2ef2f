//! [`ArrayBuilder`]: hints and limits in, an [`Array`] and the reason for
//! its implementation out.

use core::marker::PhantomData;
use core::mem::{align_of, size_of};

use skelaff_numa_alloc::Topology;

use crate::array::{Array, Element};
use crate::error::{Error, Result};
use crate::hints::{AccessHints, Choice, LargePages};
use crate::partition::Partition;
use crate::select::{Limits, MachineMemory, Request, select};
use crate::storage::{self, AllocRequest};

/// Describes an array to allocate: its length, the program's access hints,
/// and optionally a fixed implementation, a large-page setting, the
/// partition (static schedule) of the loop that uses it, the node of a
/// single-node array, and limits on replication.
///
/// # Examples
///
/// ```
/// use skelaff_arrays::{AccessHints, Array, Choice, Implementation, Partition};
///
/// // Written by the loop's index only: partitioned, by the loop's schedule.
/// let schedule = Partition::for_machine(1 << 16)?;
/// let next = Array::<f64>::builder(1 << 16)
///     .hints(AccessHints::new().loop_indexed())
///     .partition(&schedule)
///     .build()?;
/// assert_eq!(next.implementation(), Implementation::Partitioned);
/// assert_eq!(next.partition(), Some(&schedule));
///
/// // The same array, but the program fixes the implementation.
/// let single = Array::<f64>::builder(1 << 16).choice(Choice::Single).build()?;
/// assert_eq!(single.implementation(), Implementation::Single);
/// # Ok::<(), skelaff_arrays::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct ArrayBuilder<T> {
    len: usize,
    hints: AccessHints,
    choice: Choice,
    large_pages: LargePages,
    limits: Limits,
    partition: Option<Partition>,
    node: Option<usize>,
    _elem: PhantomData<fn() -> T>,
}

// The way in to a builder is a method of `Array`, written here so that
// `array` (what is built) does not depend on its builder.
impl<T: Element> Array<T> {
    /// A builder for an array of `len` elements.
    pub fn builder(len: usize) -> ArrayBuilder<T> {
        ArrayBuilder::new(len)
    }
}

impl<T: Element> ArrayBuilder<T> {
    /// An array of `len` elements about which nothing is known.
    pub fn new(len: usize) -> Self {
        ArrayBuilder {
            len,
            hints: AccessHints::new(),
            choice: Choice::Auto,
            large_pages: LargePages::Auto,
            limits: Limits::default(),
            partition: None,
            node: None,
            _elem: PhantomData,
        }
    }

    /// The program's access hints.
    pub fn hints(mut self, hints: AccessHints) -> Self {
        self.hints = hints;
        self
    }

    /// A fixed implementation, or [`Choice::Auto`] (the default).
    pub fn choice(mut self, choice: Choice) -> Self {
        self.choice = choice;
        self
    }

    /// Whether to use large pages ([`LargePages::Auto`] by default).
    pub fn large_pages(mut self, large_pages: LargePages) -> Self {
        self.large_pages = large_pages;
        self
    }

    /// Forbids replication when the implementation is chosen automatically.
    pub fn forbid_replication(mut self, forbid: bool) -> Self {
        self.limits.forbid_replication = forbid;
        self
    }

    /// The most bytes all copies together may take (replication beyond it
    /// is not chosen, and is an error when requested).
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.limits.memory_budget = Some(bytes);
        self
    }

    /// The static schedule of the loop that indexes the array: a
    /// partitioned array puts each thread's range on that thread's node.
    /// Without it, a partitioned array uses [`Partition::for_machine`].
    pub fn partition(mut self, partition: &Partition) -> Self {
        self.partition = Some(partition.clone());
        self
    }

    /// The node of a single-node array (default: the calling thread's home node).
    pub fn node(mut self, node: usize) -> Self {
        self.node = Some(node);
        self
    }

    /// Chooses the implementation and allocates the array, every page
    /// mapped on its node; elements start as zero.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroLength`]; [`Error::ZeroSizedElement`];
    /// [`Error::SizeOverflow`]; [`Error::UnsupportedAlignment`];
    /// [`Error::ReplicaDoesNotFit`] / [`Error::OverBudget`] for a requested
    /// replication that cannot be had; [`Error::PartitionLength`];
    /// [`Error::Numa`] for a node that does not exist or may not be used,
    /// or memory or an `mbind` the kernel refused.
    pub fn build(self) -> Result<Array<T>> {
        let topo = Topology::get()?;
        let bytes = self.check(topo)?;
        let machine = MachineMemory::read(topo)?;
        if let Some(node) = self.node {
            topo.check_node(node)?;
        }
        let largest_partition = self.partition.as_ref().map(|p| {
            let most = p.elements_per_node().into_iter().map(|(_, c)| c).max().unwrap_or(0);
            (most * size_of::<T>()) as u64
        });
        let req = Request {
            hints: self.hints,
            choice: self.choice,
            large_pages: self.large_pages,
            bytes: bytes as u64,
            limits: self.limits,
            largest_partition,
            single_node: self.node,
        };
        let mut selection = select(&req, &machine)?;
        let layout = AllocRequest {
            len: self.len,
            elem_size: size_of::<T>(),
            single_node: self.node,
            partition: self.partition.as_ref(),
        };
        let storage = storage::allocate(topo, &machine, &layout, &mut selection)?;
        Ok(Array { storage, len: self.len, selection, master_ahead: false, _elem: PhantomData })
    }

    /// As [`build`](Self::build), then [`init_from`](Array::init_from) `data`
    /// (the array's length is `data.len()`, whatever `new` was given).
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_from(mut self, data: &[T]) -> Result<Array<T>> {
        self.len = data.len();
        let mut a = self.build()?;
        a.init_from(data)?;
        Ok(a)
    }

    /// Checks the length and element type; returns the size in bytes.
    fn check(&self, topo: &Topology) -> Result<usize> {
        let type_name = core::any::type_name::<T>();
        if size_of::<T>() == 0 {
            return Err(Error::ZeroSizedElement { type_name });
        }
        if self.len == 0 {
            return Err(Error::ZeroLength);
        }
        if align_of::<T>() > topo.page_size() {
            return Err(Error::UnsupportedAlignment { type_name, align: align_of::<T>(), page_size: topo.page_size() });
        }
        // Leave room for rounding up to a (huge) page.
        let max = (isize::MAX as usize) >> 1;
        match self.len.checked_mul(size_of::<T>()) {
            Some(b) if b <= max => Ok(b),
            _ => Err(Error::SizeOverflow { len: self.len, elem_size: size_of::<T>(), max }),
        }
    }
}
