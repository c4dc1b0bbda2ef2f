//! Assisted execution (STM²): an auxiliary thread per application thread
//! validates the application thread's reads while it runs on.
//!
//! | file | job |
//! |---|---|
//! | `ring` | the channel and both halves of its handshake |
//! | `pairing` | choosing and claiming the auxiliary's CPU |
//! | `auxiliary` | the auxiliary thread: its loop, idling, fault injection |
//! | here | [`Assistant`]: the application thread's handle, used by `Tx` |
//!
//! # What moves to the auxiliary, what stays, and why it is still opaque
//!
//! In the plain mode three things check the read set: (1) every read
//! checks its word's lock against the snapshot bound `rv` (unlocked, version
//! `<= rv`); (2) a read that finds a newer version validates the whole read
//! set and extends `rv` to the clock (LSA); (3) a writing commit, after
//! locking its write set and advancing the clock, validates the read set
//! unless nobody committed since `rv`.
//!
//! Opacity — every value a running attempt sees, committed or not, belongs
//! to one consistent snapshot — rests on (1) and (2) alone: each read is
//! checked against `rv`, and `rv` only moves after a full validation. Both
//! **stay on the application thread, unchanged**; an assisted read does
//! exactly what a plain one does, and only then sends the entry
//! `(lock, rv)` to the ring. A read the auxiliary has not yet seen is thus
//! still checked against the snapshot as in the plain mode.
//!
//! What **moves** is (3), and the extra validations a program asks for
//! with [`Tx::validate`](crate::Tx::validate): serializability of a
//! writing commit needs the read set to be unchanged up to the commit's
//! validation bound (no other commit with a version in `(rv, bound]` wrote
//! a word read; see `Engine::advance`). The auxiliary checks each entry
//! as it arrives and re-checks all of them whenever the clock moves (or a
//! validation is asked for), publishing the clock value its last complete
//! check began at (`ring`'s invariant). The commit then takes the
//! auxiliary's word when every entry it sent is covered by a check begun
//! at or after the bound; otherwise it waits, boundedly.
//!
//! The auxiliary may also **abort early**: when it finds an entry stale it
//! raises the attempt's conflict flag, and the application thread's next
//! read or write aborts the attempt (an abort is always safe).
//!
//! Reads that are **not sent** are validated by the application thread at
//! commit, exactly as in the plain mode: once the ring is full (or half
//! full with [`Throttle::help_when_full`](crate::Throttle)), the rest of the
//! attempt's reads stay with it. An auxiliary that is gone (it panicked) or
//! slow (no verdict within [`WAIT_BUDGET`]) gets the same treatment: the
//! application thread validates its whole read set itself, so nothing
//! waits forever and nothing commits unvalidated. After such a timeout the
//! next commits do not wait for an auxiliary that has not caught up.

// Public items: the loom model (tests/loom_assist.rs) drives them.
#[cfg_attr(not(loom), allow(unreachable_pub))]
pub(crate) mod ring;

#[cfg(not(loom))]
mod auxiliary;
#[cfg(not(loom))]
mod pairing;

use std::sync::Arc;
use std::time::{Duration, Instant};

use skelaff_numa_alloc::park::Unparker;

use crate::assist::{AssistPairing, AssistUnavailable, AuxPlacement, Throttle};
#[cfg(all(not(loom), feature = "fault-injection"))]
use crate::primitive::AtomicU64;
use crate::primitive::{Ordering, spin_loop, yield_now};
use crate::raw::TxState;

use self::ring::{AppCursor, Channel};

/// Entries in each ring (64 KiB of entries).
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const RING_CAPACITY: usize = 4096;

/// How long a commit waits for its auxiliary's verdict before validating
/// its read set itself.
pub(crate) const WAIT_BUDGET: Duration = Duration::from_micros(200);

/// The injected fault (see `inject_aux_fault`, feature
/// `fault-injection`); loom builds start no auxiliary threads, so have none.
#[cfg(all(not(loom), feature = "fault-injection"))]
static FAULT: AtomicU64 = AtomicU64::new(0);

#[cfg(feature = "fault-injection")]
pub(crate) fn set_fault(millis: u64) {
    #[cfg(not(loom))]
    FAULT.store(millis, Ordering::Relaxed);
    #[cfg(loom)]
    let _ = millis;
}

/// The injected fault: always none without the `fault-injection` feature.
#[cfg(not(loom))]
fn fault() -> u64 {
    #[cfg(feature = "fault-injection")]
    return FAULT.load(Ordering::Relaxed);
    #[cfg(not(feature = "fault-injection"))]
    0
}

/// The application thread's handle on its auxiliary thread.
#[derive(Debug)]
pub(crate) struct Assistant {
    ch: Arc<Channel>,
    cur: AppCursor,
    /// The auxiliary thread's unparker, to wake it (see `Channel::parking`).
    aux: Option<Unparker>,
    pairing: AssistPairing,
    /// The CPUs claimed for this pair (released on drop).
    #[cfg_attr(loom, allow(dead_code))]
    claimed: Vec<usize>,
    /// The last wait timed out: do not wait again until the auxiliary has
    /// caught up with an attempt.
    stalled: bool,
    /// The value of throttle lever (a) last given to the auxiliary.
    park_idle: bool,
}

impl Assistant {
    /// Starts an auxiliary thread for the transaction of owner `owner`.
    #[cfg(not(loom))]
    pub(crate) fn start(owner: u64, placement: AuxPlacement) -> Result<Assistant, AssistUnavailable> {
        let (pairing, claimed) = pairing::place(placement)?;
        let ch = Arc::new(Channel::new(RING_CAPACITY, owner));
        match auxiliary::spawn(Arc::clone(&ch), pairing.aux_cpu) {
            Ok(aux) => Ok(Assistant {
                ch,
                cur: AppCursor::default(),
                aux: Some(aux),
                pairing,
                claimed,
                stalled: false,
                park_idle: false,
            }),
            Err(e) => {
                pairing::release(&claimed);
                Err(e)
            }
        }
    }

    /// Loom builds start no auxiliary threads.
    #[cfg(loom)]
    pub(crate) fn start(_owner: u64, _placement: AuxPlacement) -> Result<Assistant, AssistUnavailable> {
        Err(AssistUnavailable::Loom)
    }

    /// Where the pair runs.
    pub(crate) fn pairing(&self) -> AssistPairing {
        self.pairing
    }

    /// Starts an attempt; wakes the auxiliary if it parked. Returns once
    /// the auxiliary loads no lock of the attempt before.
    #[inline]
    pub(crate) fn begin(&mut self, throttle: Throttle) {
        if throttle.park_idle != self.park_idle {
            // Only on a change: the auxiliary reads this line while it idles.
            self.park_idle = throttle.park_idle;
            self.ch.park_idle.store(throttle.park_idle, Ordering::Relaxed);
        }
        // Stores the attempt, then a SeqCst fence (see `AppCursor::begin`):
        // the waker's half of the auxiliary's parking, whose condition
        // includes "the application thread is in an attempt".
        self.cur.begin(&self.ch);
        if let Some(aux) = &self.aux {
            self.ch.parking.wake_after_fence(aux);
        }
    }

    /// The transaction ended (committed, failed or unwound). Returns once
    /// the auxiliary loads no lock of its last attempt.
    #[inline]
    pub(crate) fn end(&mut self) {
        self.cur.end(&self.ch);
    }

    /// Sends a read to the auxiliary (or keeps it; see `AppCursor::push`).
    #[inline(always)]
    pub(crate) fn push(&mut self, lock: *const crate::primitive::AtomicU64, bound: u64, throttle: Throttle) {
        self.cur.push(&self.ch, lock, bound, throttle.help_when_full);
    }

    /// Whether the auxiliary found this attempt stale.
    #[inline(always)]
    pub(crate) fn conflicted(&self) -> bool {
        self.cur.conflicted(&self.ch)
    }

    /// A validation asked for by the program: the auxiliary re-checks every
    /// entry sent; the reads kept here are checked now. Returns false if
    /// the attempt is known stale.
    pub(crate) fn validate_now(&mut self, st: &TxState) -> bool {
        if self.conflicted() {
            return false;
        }
        self.cur.request_pass(&self.ch);
        !self.cur.kept_reads() || st.validate_from(self.cur.sent())
    }

    /// A writing commit's read-set validation up to `bound` (see the
    /// module docs): the auxiliary's verdict for what was sent, this
    /// thread's own check for what was kept, or — with no verdict within
    /// the budget — this thread's own check of everything.
    pub(crate) fn confirm(&mut self, st: &TxState, bound: u64, throttle: Throttle) -> bool {
        // An auxiliary that timed out before and has not caught up since
        // is not waited for again.
        let mut wait = !self.stalled || self.cur.aux_reached_attempt(&self.ch);
        let ch = &*self.ch;
        let start = Instant::now();
        let mut spins = 0u32;
        let mut timed_out = false;
        let ok = self.cur.confirm(ch, st, bound, || {
            if !wait {
                return false;
            }
            if !ch.aux_alive() {
                timed_out = true;
                wait = false;
                return false;
            }
            spins = spins.wrapping_add(1);
            if throttle.pause_at_commit {
                spin_loop();
                if spins % 64 == 0 {
                    yield_now();
                }
            }
            if spins % 256 == 0 && start.elapsed() > WAIT_BUDGET {
                timed_out = true;
                wait = false;
            }
            wait
        });
        if timed_out {
            self.stalled = true;
        } else if wait {
            self.stalled = false;
        }
        ok
    }
}

impl Drop for Assistant {
    fn drop(&mut self) {
        self.cur.end(&self.ch);
        self.ch.shutdown.store(true, Ordering::Release);
        // Unconditionally: a token the auxiliary's next park consumes at
        // once, whether or not it has announced itself yet.
        if let Some(aux) = &self.aux {
            aux.unpark();
        }
        #[cfg(not(loom))]
        pairing::release(&self.claimed);
    }
}

/// A thread's assisted-mode state, in its descriptor.
#[derive(Debug, Default)]
pub(crate) enum AssistSlot {
    /// Never asked for.
    #[default]
    Untried,
    /// Running.
    Active(Box<Assistant>),
    /// Asked for and refused (kept: the answer does not change).
    Unavailable(AssistUnavailable),
}

impl AssistSlot {
    /// Sets up the auxiliary on first use; where it runs, or why not.
    pub(crate) fn ensure(&mut self, owner: u64, placement: AuxPlacement) -> Result<AssistPairing, AssistUnavailable> {
        if let AssistSlot::Untried = self {
            *self = match Assistant::start(owner, placement) {
                Ok(a) => AssistSlot::Active(Box::new(a)),
                Err(e) => AssistSlot::Unavailable(e),
            };
        }
        match self {
            AssistSlot::Active(a) => Ok(a.pairing()),
            AssistSlot::Unavailable(e) => Err(e.clone()),
            AssistSlot::Untried => unreachable!("set above"),
        }
    }
}
