//! A per-thread sampler of transactional accesses, for page-access
//! footprints.
//!
//! When enabled on a thread, every `period`-th transactional read or write
//! of that thread is recorded as (address of the `TVar`, read or write),
//! up to `capacity` records; later samples are counted as dropped until
//! the records are taken. Disabled, it costs one predictable branch per
//! access.
//!
//! # Examples
//!
//! ```
//! use skelaff_stm::{atomically, sampler, TVar, TxOps};
//!
//! let v = TVar::new(0u64);
//! sampler::enable(1, 16)?;
//! atomically(|tx| tx.update(&v, |x| x + 1));
//! let s = sampler::take()?;
//! sampler::disable()?;
//! assert!(s.accesses.iter().any(|a| a.addr == v.addr() && a.kind == sampler::AccessKind::Write));
//! # Ok::<(), skelaff_stm::SamplerError>(())
//! ```

pub use crate::runtime::{sampler_disable as disable, sampler_enable as enable, sampler_take as take};

/// Whether an access read or wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// A transactional read.
    Read,
    /// A transactional write.
    Write,
}

/// One sampled access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Access {
    /// The address of the `TVar` accessed.
    pub addr: usize,
    /// Read or write.
    pub kind: AccessKind,
}

/// What [`take`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Samples {
    /// The records, in access order.
    pub accesses: Vec<Access>,
    /// Accesses seen while enabled since the last take.
    pub seen: u64,
    /// Samples not recorded because the buffer was full.
    pub dropped: u64,
}

/// The sampler state of one thread.
#[derive(Debug, Default)]
pub(crate) struct Sampler {
    pub(crate) enabled: bool,
    period: u32,
    countdown: u32,
    capacity: usize,
    buf: Vec<Access>,
    seen: u64,
    dropped: u64,
}

impl Sampler {
    pub(crate) fn configure(&mut self, period: u32, capacity: usize) {
        self.enabled = true;
        self.period = period;
        self.countdown = period;
        self.capacity = capacity;
        self.buf.reserve(capacity.min(1 << 16));
    }

    pub(crate) fn disable(&mut self) {
        self.enabled = false;
    }

    #[cold]
    pub(crate) fn record(&mut self, addr: usize, kind: AccessKind) {
        self.seen += 1;
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = self.period;
            if self.buf.len() < self.capacity {
                self.buf.push(Access { addr, kind });
            } else {
                self.dropped += 1;
            }
        }
    }

    pub(crate) fn take(&mut self) -> Samples {
        let s = Samples { accesses: core::mem::take(&mut self.buf), seen: self.seen, dropped: self.dropped };
        self.seen = 0;
        self.dropped = 0;
        s
    }
}
