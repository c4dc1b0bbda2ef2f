//! Per-thread event counters through `perf_event_open` (the `perf-event`
//! crate): last-level cache misses where the machine has hardware counters,
//! else the software counters that every Linux kernel has (task clock,
//! page faults). Counters that cannot be opened are reported as such; they
//! never fail a run.
//!
//! The counters need the crate's feature `perf` (the umbrella's `perf`, or
//! its `cli`). Without it [`PerfCounters::open`] opens none: its kind is
//! [`CounterKind::None`] and its note names the feature.

#[cfg(feature = "perf")]
use perf_event::events::{Cache, CacheOp, CacheResult, Software, WhichCache};
#[cfg(feature = "perf")]
use perf_event::{Builder, Counter};
use skelaff_worklist::CounterFigures;

/// Which counters a [`PerfCounters`] could open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterKind {
    /// Hardware last-level cache read accesses and misses (and the software ones).
    Hardware,
    /// Only software counters: task clock and page faults.
    Software,
    /// None (perf events refused, e.g. by `perf_event_paranoid` or
    /// seccomp, or the crate built without its feature `perf`).
    None,
}

/// Counters of the calling thread, opened and enabled by [`PerfCounters::open`].
///
/// # Examples
///
/// ```
/// use skelaff_helper_threads::counters::{CounterKind, PerfCounters};
///
/// let mut c = PerfCounters::open();
/// let v: Vec<u64> = (0..100_000).collect();
/// std::hint::black_box(&v);
/// let figures = c.read();
/// match c.kind() {
///     CounterKind::None => assert!(figures.is_empty()),
///     CounterKind::Software => assert!(figures.task_clock_ns.is_some() && figures.llc_read_misses.is_none()),
///     CounterKind::Hardware => assert!(figures.llc_read_misses.is_some()),
/// }
/// ```
#[derive(Debug)]
pub struct PerfCounters {
    kind: CounterKind,
    #[cfg(feature = "perf")]
    counters: Vec<(Which, Counter)>,
    note: Option<String>,
}

/// The note of every [`PerfCounters`] in a build without the feature
/// `perf` (with it, the notes say why a counter could not be opened).
pub const NOT_BUILT: &str = "no perf counters: skelaff-helper-threads was built without its feature `perf`";

/// Which figure a counter feeds.
#[cfg(feature = "perf")]
#[derive(Debug, Clone, Copy)]
enum Which {
    LlcMisses,
    LlcAccesses,
    TaskClock,
    PageFaults,
}

#[cfg(feature = "perf")]
const LLC_MISS: Cache = Cache { which: WhichCache::LL, operation: CacheOp::READ, result: CacheResult::MISS };
#[cfg(feature = "perf")]
const LLC_ACCESS: Cache = Cache { which: WhichCache::LL, operation: CacheOp::READ, result: CacheResult::ACCESS };

#[cfg(feature = "perf")]
fn open_one<K: Into<perf_event::events::Event>>(kind: K) -> std::io::Result<Counter> {
    let mut c = Builder::new().kind(kind).build()?;
    c.enable()?;
    Ok(c)
}

impl PerfCounters {
    /// Opens and enables counters for the calling thread: hardware LLC
    /// read misses and accesses if the machine has them, and task clock and
    /// page faults.
    #[cfg(feature = "perf")]
    pub fn open() -> PerfCounters {
        let mut counters = Vec::new();
        let mut note = None;
        let hw = open_one(LLC_MISS).and_then(|m| open_one(LLC_ACCESS).map(|a| (m, a)));
        let kind = match hw {
            Ok((m, a)) => {
                counters.push((Which::LlcMisses, m));
                counters.push((Which::LlcAccesses, a));
                CounterKind::Hardware
            }
            Err(e) => {
                note = Some(format!(
                    "no hardware cache counters on this machine (perf_event_open: {e}); software counters only"
                ));
                CounterKind::Software
            }
        };
        match (open_one(Software::TASK_CLOCK), open_one(Software::PAGE_FAULTS)) {
            (Ok(t), Ok(p)) => {
                counters.push((Which::TaskClock, t));
                counters.push((Which::PageFaults, p));
            }
            (Err(e), _) | (_, Err(e)) => {
                if kind == CounterKind::Software {
                    note = Some(format!("no perf counters at all (perf_event_open: {e})"));
                    return PerfCounters { kind: CounterKind::None, counters: Vec::new(), note };
                }
            }
        }
        PerfCounters { kind, counters, note }
    }

    /// Opens nothing: the crate was built without its feature `perf`
    /// (the kind is [`CounterKind::None`], the note [`NOT_BUILT`]).
    #[cfg(not(feature = "perf"))]
    pub fn open() -> PerfCounters {
        PerfCounters { kind: CounterKind::None, note: Some(NOT_BUILT.to_owned()) }
    }

    /// Which counters are open.
    pub fn kind(&self) -> CounterKind {
        self.kind
    }

    /// What could not be opened, in words.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The counts since `open` (a counter that is not open or cannot be
    /// read is `None`).
    #[cfg(feature = "perf")]
    pub fn read(&mut self) -> CounterFigures {
        let mut f = CounterFigures::default();
        for (which, c) in &mut self.counters {
            let v = c.read().ok();
            match which {
                Which::LlcMisses => f.llc_read_misses = v,
                Which::LlcAccesses => f.llc_read_accesses = v,
                Which::TaskClock => f.task_clock_ns = v,
                Which::PageFaults => f.page_faults = v,
            }
        }
        f
    }

    /// The counts since `open`: none, without the feature `perf`.
    #[cfg(not(feature = "perf"))]
    pub fn read(&mut self) -> CounterFigures {
        CounterFigures::default()
    }
}
