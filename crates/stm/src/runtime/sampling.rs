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
///
/// The hot path (every transactional access while enabled) is one
/// decrement and one predictable branch, inlined into the access
/// ([`Sampler::tick`]); only every `period`-th access calls the cold
/// [`Sampler::record`]. Accesses seen are counted in whole periods at each
/// record, plus the partial period since the last one when taken.
#[derive(Debug, Default)]
pub(crate) struct Sampler {
    pub(crate) enabled: bool,
    period: u32,
    countdown: u32,
    capacity: usize,
    buf: Vec<Access>,
    /// Accesses seen since the last take, up to the last recorded one:
    /// whole periods added at each record, less the part of the first
    /// period that the last take already counted (so it is kept modulo
    /// 2^64, and is right again once that period completes or is taken).
    seen: u64,
    dropped: u64,
}

impl Sampler {
    pub(crate) fn configure(&mut self, period: u32, capacity: usize) {
        // Accesses seen in the period under way (none when disabled) stay counted.
        self.seen = self.seen.wrapping_add(self.partial());
        self.enabled = true;
        self.period = period;
        self.countdown = period;
        self.capacity = capacity;
        // No reservation: a thread that records nothing allocates nothing,
        // and the buffer grows to what a drain interval needs, then keeps
        // its capacity (takes swap buffers).
    }

    pub(crate) fn disable(&mut self) {
        // Count the partial period now: after this no access is seen.
        self.seen = self.seen.wrapping_add(self.partial());
        self.countdown = self.period;
        self.enabled = false;
    }

    /// Accesses seen since the last record that are not yet in `seen`.
    fn partial(&self) -> u64 {
        u64::from(self.period.saturating_sub(self.countdown))
    }

    /// Counts one access; true when it is the one to record.
    #[inline(always)]
    pub(crate) fn tick(&mut self) -> bool {
        self.countdown -= 1;
        self.countdown == 0
    }

    /// Records the access whose [`tick`](Self::tick) said so. Not inlined
    /// (it is rare), but not `#[cold]` either: cold code is laid out far
    /// from the access path, and reaching it every `period`-th access cost
    /// more in instruction-cache and TLB misses than the record itself.
    #[inline(never)]
    pub(crate) fn record(&mut self, addr: usize, kind: AccessKind) {
        self.countdown = self.period;
        self.seen = self.seen.wrapping_add(u64::from(self.period));
        if self.buf.len() < self.capacity {
            self.buf.push(Access { addr, kind });
        } else {
            self.dropped += 1;
        }
    }

    /// The counters since the last take, reset.
    fn take_counts(&mut self) -> (u64, u64) {
        let seen = self.seen.wrapping_add(self.partial());
        let dropped = self.dropped;
        // The partial period is counted now; the next record counts only
        // what comes after it.
        self.seen = 0u64.wrapping_sub(self.partial());
        self.dropped = 0;
        (seen, dropped)
    }

    pub(crate) fn take(&mut self) -> Samples {
        let (seen, dropped) = self.take_counts();
        Samples { accesses: core::mem::take(&mut self.buf), seen, dropped }
    }

    /// Like [`take`](Self::take), but swaps the records into `into` (whose
    /// old contents are cleared) so both buffers keep their capacity.
    pub(crate) fn take_into(&mut self, into: &mut Samples) {
        let (seen, dropped) = self.take_counts();
        into.accesses.clear();
        core::mem::swap(&mut into.accesses, &mut self.buf);
        into.seen = seen;
        into.dropped = dropped;
    }
}
