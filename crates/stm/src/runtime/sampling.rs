//! The per-thread recorder of the access sampler: what a thread's
//! descriptor keeps while sampling is on, and the records it hands out.
//! The public switch is [`sampler`](crate::sampler).

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

/// What [`sampler::take`](crate::sampler::take) returns.
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
