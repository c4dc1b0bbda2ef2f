//! Sampled traces of the memory a team's SpMV and CG touch: for each sampled
//! access, the address, the array, read or write, the team thread (and the
//! CPU and node it runs on) and the time.
//!
//! # How a trace is taken, and why it is the kernel's own access stream
//!
//! The kernels are not instrumented: with tracing off they run exactly as
//! they always do and pay nothing. A trace is a separate *traced pass*
//! ([`CsrSpmv::trace_apply`] for one SpMV, [`NasCg::trace`] for one outer
//! iteration of NAS CG) that runs as a job of the same [`Team`] — the same
//! pinned threads, thread `t` on the same CPU — over the same placed arrays,
//! and walks each thread's rows in the order the kernel and CG walk them,
//! recording what they touch:
//!
//! - the SpMV, per row `r` of the thread's chunk: `ptrA[r]` and `ptrA[r + 1]`
//!   read, then per stored entry `k` of the row `A[k]`, `jA[k]` and
//!   `x[jA[k]]` read, then `y[r]` written;
//! - CG's vector loops, per element `i` of the thread's rows: the elements
//!   of `p`, `q`, `r`, `z` (and NAS CG's `x`) each loop reads and writes, in
//!   the order the loop's source states them (a read-modify-write counts as
//!   a read and a write).
//!
//! Which addresses the kernel touches depends only on the matrix's
//! structure, the static row split and the thread's index, never on the
//! values: there is no data-dependent branch in the SpMV or in NAS CG's 25
//! steps. So the traced pass records exactly the addresses the untraced
//! kernel touches, from the same threads on the same CPUs and nodes. It
//! reads `ptrA` and `jA` itself (it needs them to know which `x[col]` comes
//! next) and records the other addresses without loading them. It does not
//! see the AVX2 kernel's software prefetches (hints into the same `A` and
//! `jA` streams a few KiB ahead), the team's barrier and reduction words,
//! or the stack. Its times are those of the traced pass, which runs slower
//! than the kernel; only their order matters to a locality profile.
//!
//! # Sampling and bounds
//!
//! Each thread records into its own [`ThreadTrace`] (no sharing, no locks).
//! Every array is sampled on its own: of a thread's accesses to one array,
//! every `period`-th is kept, so each array's samples stand for the same
//! share of its accesses whatever the loop interleaves it with (one counter
//! over all arrays would alias with the loop's pattern: three accesses per
//! stored entry and a period of 3 would keep only `x` reads).
//!
//! A thread never holds more than `capacity` samples. When its buffer is
//! full it *thins by halves*: of each array's samples it keeps every other
//! one and the period doubles, so the samples stay evenly spread over the
//! whole pass and each still stands for `period` accesses. After any number
//! of thinnings, a thread holds exactly the accesses `n` of each array
//! (counted from 1) with `n ≡ period₀ (mod period)`, where `period₀` is the
//! period asked for. [`AccessTrace::evened`] thins every thread to the
//! largest period, so that every sample of the trace stands for as many
//! accesses.
//!
//! Files: `recorder` ([`ThreadTrace`], the per-thread buffer), `replay` (the
//! traced walk over a CSR operator's rows, and [`CsrSpmv::trace_apply`]);
//! NAS CG's traced iteration is in `nas/trace.rs`.
//!
//! [`NasCg::trace`]: crate::nas::NasCg::trace
//! [`CsrSpmv::trace_apply`]: crate::CsrSpmv::trace_apply
//! [`Team`]: crate::Team

mod recorder;
pub(crate) mod replay;

use core::ops::Range;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::masa::ArrayPlacement;

pub use self::recorder::ThreadTrace;

/// How a trace samples: every `period`-th access of a thread to each array,
/// at most `capacity` samples per thread.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::trace::TraceOptions;
///
/// let o = TraceOptions::new(16, 4096)?;
/// assert_eq!((o.period, o.capacity), (16, 4096));
/// assert!(TraceOptions::new(0, 4096).is_err());
/// assert!(TraceOptions::new(16, 2).is_err()); // fewer than one sample per array
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct TraceOptions {
    /// Every `period`-th access of a thread to an array is kept (before any
    /// thinning).
    pub period: u32,
    /// The most samples one thread keeps (at least one per array,
    /// [`TracedArray::ALL`]`.len()`).
    pub capacity: usize,
}

impl TraceOptions {
    /// The default: one access in 64, at most 16 384 samples per thread.
    pub const DEFAULT: TraceOptions = TraceOptions { period: 64, capacity: 1 << 14 };

    /// Checked options.
    ///
    /// # Errors
    ///
    /// [`Error::BadTraceOptions`] for a zero period, or a capacity below
    /// one sample per array (thinning by halves needs that much room).
    pub fn new(period: u32, capacity: usize) -> Result<TraceOptions> {
        TraceOptions { period, capacity }.checked()
    }

    /// These options if they are valid (see [`TraceOptions::new`]).
    ///
    /// # Errors
    ///
    /// As [`TraceOptions::new`].
    pub fn checked(self) -> Result<TraceOptions> {
        if self.period == 0 {
            return Err(Error::BadTraceOptions { what: "sampling period", value: 0, min: 1 });
        }
        if self.capacity < TracedArray::ALL.len() {
            return Err(Error::BadTraceOptions {
                what: "capacity (samples per thread)",
                value: self.capacity,
                min: TracedArray::ALL.len(),
            });
        }
        Ok(self)
    }
}

impl Default for TraceOptions {
    fn default() -> TraceOptions {
        TraceOptions::DEFAULT
    }
}

/// Which buffer an access touched.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::trace::TracedArray;
///
/// assert_eq!(TracedArray::ColIdx.to_string(), "jA");
/// assert_eq!("p".parse::<TracedArray>()?, TracedArray::P);
/// assert_eq!(TracedArray::ALL.len(), 9);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub enum TracedArray {
    /// The row pointers `ptrA`.
    RowPtr = 0,
    /// The column indices `jA`.
    ColIdx,
    /// The stored values `A`.
    Values,
    /// An SpMV's input `x` (in NAS CG: the power method's iterate `x`).
    X,
    /// An SpMV's output `y`.
    Y,
    /// CG's search direction `p` (the input of its SpMV).
    P,
    /// CG's `q = A p`.
    Q,
    /// CG's residual `r`.
    R,
    /// CG's iterate `z`.
    Z,
}

skelaff_numa_alloc::enum_names! {
    TracedArray {
        RowPtr => "ptrA",
        ColIdx => "jA",
        Values => "A",
        X => "x",
        Y => "y",
        P => "p",
        Q => "q",
        R => "r",
        Z => "z",
    }
    parse: Error = unknown_array;
}

fn unknown_array(given: &str) -> Error {
    Error::unknown_name("traced array", given, TracedArray::VARIANTS)
}

impl TracedArray {
    /// Every array, in index order.
    pub const ALL: [TracedArray; 9] = [
        TracedArray::RowPtr,
        TracedArray::ColIdx,
        TracedArray::Values,
        TracedArray::X,
        TracedArray::Y,
        TracedArray::P,
        TracedArray::Q,
        TracedArray::R,
        TracedArray::Z,
    ];

    /// Its index in [`TracedArray::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// Whether an access read or wrote.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TouchKind {
    /// A load.
    Read,
    /// A store.
    Write,
}

skelaff_numa_alloc::enum_names! {
    TouchKind {
        Read => "read",
        Write => "write",
    }
}

/// One sampled access of a thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Touch {
    /// The address of the element touched.
    pub addr: usize,
    /// Nanoseconds since the traced pass began (one origin for all threads).
    pub time_ns: u64,
    /// The buffer it lies in.
    pub array: TracedArray,
    /// Read or write.
    pub kind: TouchKind,
}

/// One buffer a traced pass touched: where it is, and which thread touches
/// which of its elements.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::trace::{TracedArray, TracedBuffer};
///
/// let b = TracedBuffer { array: TracedArray::Y, addr: 0x1000, len: 10, elem_size: 8, split: Some(vec![0, 4, 10]) };
/// assert_eq!(b.bytes(), 0x1000..0x1050);
/// assert_eq!(b.index_of(0x1000 + 5 * 8 + 3), Some(5));
/// assert_eq!(b.owner(5), Some(1));
/// assert_eq!(b.owner(10), None);
/// ```
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct TracedBuffer {
    /// Which buffer.
    pub array: TracedArray,
    /// The address of its first element.
    pub addr: usize,
    /// Its elements.
    pub len: usize,
    /// Bytes per element.
    pub elem_size: usize,
    /// `Some(bounds)` for a deterministic access (MASA binds each chunk to
    /// its thread's node): thread `t` touches elements `bounds[t]..bounds[t +
    /// 1]` (and, for `ptrA`, the first pointer of the next chunk, which ends
    /// its last row); `None` when any thread may touch any element (MASA
    /// interleaves it).
    pub split: Option<Vec<usize>>,
}

impl TracedBuffer {
    /// The bytes its elements occupy.
    pub fn bytes(&self) -> Range<usize> {
        self.addr..self.addr.saturating_add(self.len.saturating_mul(self.elem_size))
    }

    /// Whether `addr` lies in one of its elements.
    pub fn contains(&self, addr: usize) -> bool {
        self.bytes().contains(&addr)
    }

    /// The element holding `addr`, if it is in the buffer.
    pub fn index_of(&self, addr: usize) -> Option<usize> {
        self.contains(addr).then(|| (addr - self.addr) / self.elem_size.max(1))
    }

    /// The thread whose chunk holds element `index` (`None` for an index
    /// outside the buffer or a buffer any thread touches).
    pub fn owner(&self, index: usize) -> Option<usize> {
        let bounds = self.split.as_ref()?;
        bounds.windows(2).position(|w| w[0] <= index && index < w[1])
    }
}

/// The sampled accesses of one traced pass, per team thread (thread 0
/// first), with the buffers they touched.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::trace::{TraceOptions, TracedArray};
/// use skelaff_spmv::{CsrSpmv, Masa, SpmvOptions, TeamSpmv, Triplets};
///
/// let mut t = Triplets::new(4, 4)?;
/// for i in 0..4 { t.push(i, i, 1.0)?; }
/// let masa = Masa::preprocess(2)?;
/// let team = masa.team()?;
/// let op = CsrSpmv::new(&masa, &t.to_csr(), SpmvOptions::default())?;
/// let (x, y) = (op.input_vector()?, op.output_vector()?);
/// // Every access kept: per thread 2 rows, so 4 pointer reads, 2 entries, 2 writes of y.
/// let trace = op.trace_apply(&team, &x, &y, TraceOptions::new(1, 64)?)?;
/// for th in trace.threads() {
///     assert_eq!(th.seen_of(TracedArray::RowPtr), 4);
///     assert_eq!(th.seen_of(TracedArray::Y), 2);
///     assert_eq!(th.samples().len(), 4 + 3 * 2 + 2);
/// }
/// assert!(trace.samples().all(|(_, s)| trace.buffer_at(s.addr).is_some_and(|b| b.array == s.array)));
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct AccessTrace {
    threads: Vec<ThreadTrace>,
    buffers: Vec<TracedBuffer>,
    page_size: usize,
    placement: ArrayPlacement,
    options: TraceOptions,
}

impl AccessTrace {
    /// A trace of `threads` (thread `t` at index `t`) over `buffers`.
    pub(crate) fn new(
        threads: Vec<ThreadTrace>,
        buffers: Vec<TracedBuffer>,
        page_size: usize,
        placement: ArrayPlacement,
        options: TraceOptions,
    ) -> AccessTrace {
        AccessTrace { threads, buffers, page_size, placement, options }
    }

    /// Each thread's samples, thread 0 first.
    pub fn threads(&self) -> &[ThreadTrace] {
        &self.threads
    }

    /// The buffers the pass touched.
    pub fn buffers(&self) -> &[TracedBuffer] {
        &self.buffers
    }

    /// The buffer `array`, if the pass touched it.
    pub fn buffer(&self, array: TracedArray) -> Option<&TracedBuffer> {
        self.buffers.iter().find(|b| b.array == array)
    }

    /// The buffer holding `addr`.
    pub fn buffer_at(&self, addr: usize) -> Option<&TracedBuffer> {
        self.buffers.iter().find(|b| b.contains(addr))
    }

    /// The base page size of the buffers' mappings.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Where the operator's arrays were placed.
    pub fn placement(&self) -> ArrayPlacement {
        self.placement
    }

    /// The options the pass was asked for.
    pub fn options(&self) -> TraceOptions {
        self.options
    }

    /// The largest period any thread's samples stand for.
    pub fn period(&self) -> u32 {
        self.threads.iter().map(ThreadTrace::period).max().unwrap_or(self.options.period)
    }

    /// Accesses the threads made during the pass, sampled or not.
    pub fn seen(&self) -> u64 {
        self.threads.iter().map(ThreadTrace::seen).sum()
    }

    /// Samples the threads thinned away.
    pub fn discarded(&self) -> u64 {
        self.threads.iter().map(ThreadTrace::discarded).sum()
    }

    /// Every sample with its thread, thread 0's first.
    pub fn samples(&self) -> impl Iterator<Item = (&ThreadTrace, &Touch)> + '_ {
        self.threads.iter().flat_map(|t| t.samples().iter().map(move |s| (t, s)))
    }

    /// The same trace with every thread thinned to the largest period, so
    /// every sample stands for as many accesses (see the [module docs](self)).
    pub fn evened(mut self) -> AccessTrace {
        let period = self.period();
        for t in &mut self.threads {
            t.thin_to(period);
        }
        self
    }
}
