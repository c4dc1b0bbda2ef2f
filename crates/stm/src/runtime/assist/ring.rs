//! The channel between an application thread and its auxiliary thread: a
//! bounded single-producer single-consumer ring of read entries, and the
//! few words each side publishes to the other. Both halves of the
//! handshake live here ([`AppCursor`] for the application thread,
//! [`AuxCursor`] for the auxiliary), independent of threads and pinning,
//! so the loom model (`tests/loom_assist.rs`) runs this very code.
//!
//! Each entry is one transactional read: the address of the word's lock and
//! the snapshot bound `B` the read was checked against. It stays valid
//! while the lock is unlocked (or locked by the reader itself) at a
//! version `<= B`.
//!
//! **The lock addresses are the application thread's to vouch for.** A
//! word its attempt read stays alive only while that attempt runs (then
//! reclamation may free it), so the auxiliary loads an entry's lock only
//! inside a *busy section* for that attempt: it publishes `aux_busy =
//! attempt`, issues a SeqCst fence, and checks that the application thread
//! is still in that attempt (`app_attempt`); the application thread, when
//! an attempt ends (a new one begins, or the transaction ends), stores its
//! new `app_attempt`, issues a SeqCst fence, and waits while `aux_busy`
//! names the old attempt, before its record stops protecting what it read.
//! Of the two fenced store/load pairs one sees the other's store: either
//! the auxiliary sees the attempt over and loads nothing, or the
//! application thread waits until the auxiliary has left (its Release of
//! `aux_busy = 0`, loaded with Acquire, orders every load of the section
//! before the words can be freed). `tests/loom_assist.rs` checks it, and
//! fails without the wait.
//!
//! The auxiliary publishes two words, `progress` (attempt number and how
//! many of its entries were checked) and `stamp` (a clock value), with the
//! invariant: *every entry counted in `progress` was last found valid by a
//! check that began after the clock had reached `stamp`*. Such a check
//! shows that no other commit with a version in `(B, stamp]` wrote the
//! word (a committer locks its words before it advances the clock and
//! releases them at its write version). Checks happen at a clock that only
//! grows, so the invariant holds whichever of the two words is older.

use crossbeam_utils::CachePadded;
use skelaff_numa_alloc::park::Parking;

use crate::lockword::{is_locked, owner, version};
use crate::primitive::{AtomicBool, AtomicU64, Ordering, UnsafeCell, fence, spin_loop, yield_now};
use crate::raw::{Engine, TxState};

/// One read: the attempt, the address of the word's lock, and the snapshot
/// bound it was checked against.
type Entry = [u64; 3];

/// Entries the application thread writes before it publishes `tail`: one
/// store to the line the auxiliary polls per batch rather than per read
/// (on separate cores each such store moves the line). A commit or a
/// validation publishes the rest first.
pub const PUBLISH_EVERY: u64 = 8;

/// Whether lock word `w` still vouches for a read checked against bound
/// `bound` by the transaction of owner `me`.
#[inline(always)]
pub fn entry_valid(w: u64, bound: u64, me: u64) -> bool {
    version(w) <= bound && (!is_locked(w) || owner(w) == me)
}

/// What the application thread learns when it asks whether its read set
/// is confirmed up to a validation bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every entry sent in this attempt was checked after the clock
    /// reached the bound: the read set needs no validation of its own.
    Valid,
    /// The auxiliary found an entry of this attempt stale.
    Stale,
    /// Not yet known (the auxiliary is behind, or gone).
    Pending,
}

/// The shared channel of one application/auxiliary pair.
#[derive(Debug)]
pub struct Channel {
    /// Entries written so far (application → auxiliary).
    tail: CachePadded<AtomicU64>,
    /// The running attempt's number; 0 while outside transactions.
    app_attempt: CachePadded<AtomicU64>,
    /// Forced validation passes asked for (application → auxiliary).
    requests: AtomicU64,
    /// Entries consumed so far (auxiliary → application).
    head: CachePadded<AtomicU64>,
    /// `(attempt << 32) | entries checked` (auxiliary → application).
    progress: CachePadded<AtomicU64>,
    /// The clock bound of the invariant in the module docs.
    stamp: AtomicU64,
    /// The attempt number the auxiliary found stale (0: none).
    conflict: CachePadded<AtomicU64>,
    /// The attempt whose locks the auxiliary may be loading right now (0:
    /// none): its busy section (see the module docs).
    aux_busy: CachePadded<AtomicU64>,
    /// Where the idle auxiliary thread parks (its waker: the application
    /// thread, when it starts an attempt).
    pub(crate) parking: Parking,
    /// The auxiliary thread runs (false once it exits or unwinds).
    pub(crate) alive: AtomicBool,
    /// The application side is gone: the auxiliary thread exits.
    pub(crate) shutdown: AtomicBool,
    /// Throttle lever (a): park when the application thread is outside
    /// transactions (set by the application thread per transaction).
    pub(crate) park_idle: AtomicBool,
    /// The application thread's owner id (its own locks do not invalidate).
    owner: u64,
    slots: Box<[UnsafeCell<Entry>]>,
    /// Loom only: the busy-section handshake is skipped, so the model shows
    /// what it prevents.
    #[cfg(loom)]
    handshake_removed: bool,
}

// SAFETY: the slots are the only non-`Sync` part. Slot `i % capacity` is
// written only by the producer (`push`) while `i - head < capacity`, i.e.
// after the consumer's Release store of `head` said it is done with it (the
// producer loads `head` with Acquire), and read only by the consumer for
// `i < tail` after the producer's Release store of `tail` (loaded with
// Acquire). One producer and one consumer: the cursors are `&mut`.
unsafe impl Sync for Channel {}
// SAFETY: the entries are plain integers; see `Sync`.
unsafe impl Send for Channel {}

impl Channel {
    /// A channel of `capacity` entries (a power of two) for the transaction
    /// of owner `owner`.
    pub fn new(capacity: usize, owner: u64) -> Channel {
        assert!(capacity.is_power_of_two(), "the ring capacity must be a power of two");
        Channel {
            aux_busy: CachePadded::new(AtomicU64::new(0)),
            #[cfg(loom)]
            handshake_removed: false,
            tail: CachePadded::new(AtomicU64::new(0)),
            app_attempt: CachePadded::new(AtomicU64::new(0)),
            requests: AtomicU64::new(0),
            head: CachePadded::new(AtomicU64::new(0)),
            progress: CachePadded::new(AtomicU64::new(0)),
            stamp: AtomicU64::new(0),
            conflict: CachePadded::new(AtomicU64::new(0)),
            parking: Parking::new(),
            alive: AtomicBool::new(true),
            shutdown: AtomicBool::new(false),
            park_idle: AtomicBool::new(false),
            owner,
            slots: (0..capacity).map(|_| UnsafeCell::new([0; 3])).collect(),
        }
    }

    /// Loom only: a channel whose busy-section handshake is skipped (the
    /// model that shows the handshake matters).
    #[cfg(loom)]
    pub fn without_handshake(capacity: usize, owner: u64) -> Channel {
        Channel { handshake_removed: true, ..Channel::new(capacity, owner) }
    }

    #[inline(always)]
    fn handshake(&self) -> bool {
        #[cfg(loom)]
        return !self.handshake_removed;
        #[cfg(not(loom))]
        true
    }

    /// The application thread's half of the handshake: its attempt changed
    /// to `current` (0: outside transactions) and it will stop protecting
    /// what the old one read; waits while the auxiliary is in a busy
    /// section of another attempt. The caller stored `app_attempt` first.
    fn quiesce(&self, current: u64) {
        if !self.handshake() {
            return;
        }
        fence(Ordering::SeqCst);
        let mut spins = 0u32;
        loop {
            let busy = self.aux_busy.load(Ordering::Acquire);
            if busy == 0 || busy == current || !self.alive.load(Ordering::Acquire) {
                return;
            }
            spins = spins.wrapping_add(1);
            if spins % 64 == 0 {
                // The auxiliary may be descheduled inside its section.
                yield_now();
            } else {
                spin_loop();
            }
        }
    }

    /// The ring's capacity in entries.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    #[inline(always)]
    fn slot(&self, i: u64) -> &UnsafeCell<Entry> {
        &self.slots[(i as usize) & (self.slots.len() - 1)]
    }

    /// Whether the application thread is outside transactions.
    #[inline]
    pub fn app_outside(&self) -> bool {
        // SeqCst: the auxiliary's half of the parking handshake (see
        // `AppCursor::begin`).
        self.app_attempt.load(Ordering::SeqCst) == 0
    }

    /// Whether entries wait in the ring.
    #[inline]
    pub fn has_entries(&self, aux: &AuxCursor) -> bool {
        self.tail.load(Ordering::Acquire) != aux.head
    }

    /// Whether the auxiliary thread is still running.
    #[inline]
    pub fn aux_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }
}

/// The application thread's side of a channel (owned by it, not shared).
#[derive(Debug, Default)]
pub struct AppCursor {
    /// The running attempt's number (never 0 inside one).
    attempt: u64,
    /// Entries this attempt sent.
    sent: u64,
    /// Entries written over the channel's life (the next slot).
    tail: u64,
    /// The `tail` last published to the auxiliary.
    published: u64,
    /// The last `head` loaded (the consumer is at least there).
    head_seen: u64,
    /// This attempt stopped sending: its later reads stay with the
    /// application thread (validated by it at commit).
    kept: bool,
}

impl AppCursor {
    /// Entries this attempt sent (a prefix of its read set).
    #[inline]
    pub fn sent(&self) -> usize {
        self.sent as usize
    }

    /// Whether this attempt kept reads of its own (ring full or helping).
    #[inline]
    pub fn kept_reads(&self) -> bool {
        self.kept
    }

    /// Starts an attempt: a new number, published before any of its entries.
    #[inline]
    pub fn begin(&mut self, ch: &Channel) {
        self.attempt = (self.attempt + 1) & 0xffff_ffff;
        if self.attempt == 0 {
            self.attempt = 1;
        }
        self.sent = 0;
        self.kept = false;
        ch.app_attempt.store(self.attempt, Ordering::SeqCst);
        // The last attempt's words may be freed once the caller moves its
        // record on: not while the auxiliary loads their locks. Its SeqCst
        // fence, after the store above, is also the waker's fence of the
        // auxiliary's parking: the caller then wakes it with
        // `Parking::wake_after_fence` (the auxiliary's condition is this
        // attempt; see `auxiliary`). Only the loom model without the
        // handshake skips the fence, and it parks nobody.
        ch.quiesce(self.attempt);
    }

    /// Ends the transaction: the auxiliary may go idle. Returns once the
    /// auxiliary loads no lock of the ended attempt (the caller may then
    /// stop protecting what it read).
    #[inline]
    pub fn end(&mut self, ch: &Channel) {
        ch.app_attempt.store(0, Ordering::SeqCst);
        ch.quiesce(0);
    }

    /// Sends read `(lock, bound)` to the auxiliary. Returns false when the
    /// read stays with the application thread: the ring is full, or
    /// (`help`) more than half full, or an earlier read of this attempt
    /// stayed. Never blocks.
    #[inline]
    pub fn push(&mut self, ch: &Channel, lock: *const AtomicU64, bound: u64, help: bool) -> bool {
        if self.kept {
            return false;
        }
        let cap = ch.capacity() as u64;
        let limit = if help { cap / 2 } else { cap };
        if self.tail - self.head_seen >= limit {
            self.head_seen = ch.head.load(Ordering::Acquire);
            if self.tail - self.head_seen >= limit || self.sent >= u64::from(u32::MAX) {
                self.kept = true;
                return false;
            }
        }
        ch.slot(self.tail).with_mut(|p| {
            // SAFETY: `tail - head_seen < capacity`, so the consumer is done
            // with this slot (its Release store of `head` was loaded with
            // Acquire) and does not read it before our Release of `tail`.
            unsafe { *p = [self.attempt, lock as usize as u64, bound] }
        });
        self.tail += 1;
        self.sent += 1;
        if self.tail - self.published >= PUBLISH_EVERY {
            self.publish(ch);
        }
        true
    }

    /// Publishes every entry written so far to the auxiliary.
    #[inline]
    pub fn publish(&mut self, ch: &Channel) {
        if self.published != self.tail {
            self.published = self.tail;
            ch.tail.store(self.tail, Ordering::Release);
        }
    }

    /// Whether the auxiliary found this attempt stale (abort early).
    #[inline(always)]
    pub fn conflicted(&self, ch: &Channel) -> bool {
        ch.conflict.load(Ordering::Relaxed) == self.attempt
    }

    /// Asks the auxiliary for a full validation pass of this attempt
    /// (publishing what was written first).
    #[inline]
    pub fn request_pass(&mut self, ch: &Channel) {
        self.publish(ch);
        ch.requests.fetch_add(1, Ordering::Release);
    }

    /// Whether every entry sent in this attempt is confirmed for
    /// validation bound `bound` (see the module docs). One poll; the
    /// caller decides how long to wait. Publishes what was written first.
    #[inline]
    pub fn verdict(&mut self, ch: &Channel, bound: u64) -> Verdict {
        self.publish(ch);
        if ch.conflict.load(Ordering::Acquire) == self.attempt {
            return Verdict::Stale;
        }
        if self.sent == 0 {
            return Verdict::Valid;
        }
        let p = ch.progress.load(Ordering::Acquire);
        let s = ch.stamp.load(Ordering::Acquire);
        if p == (self.attempt << 32) | self.sent && s >= bound {
            return Verdict::Valid;
        }
        // A conflict raised between the first load and `progress`.
        if ch.conflict.load(Ordering::Acquire) == self.attempt { Verdict::Stale } else { Verdict::Pending }
    }

    /// A writing commit's read-set validation up to `bound` (see the
    /// runtime's `assist` docs): polls the auxiliary's [`Verdict`] while it
    /// is pending and `keep_waiting()` says so, then decides — `Valid`:
    /// the reads sent are confirmed, and the reads kept (`st`'s from the
    /// [`sent`](Self::sent)-th on) are validated here; `Stale`: invalid;
    /// still pending: `st`'s whole read set is validated here.
    pub fn confirm(&mut self, ch: &Channel, st: &TxState, bound: u64, mut keep_waiting: impl FnMut() -> bool) -> bool {
        let verdict = loop {
            match self.verdict(ch, bound) {
                Verdict::Pending if keep_waiting() => {}
                v => break v,
            }
        };
        match verdict {
            Verdict::Valid => !self.kept || st.validate_from(self.sent()),
            Verdict::Stale => false,
            Verdict::Pending => st.validate(),
        }
    }

    /// Whether the auxiliary has published progress for this attempt.
    #[inline]
    pub fn aux_reached_attempt(&self, ch: &Channel) -> bool {
        ch.progress.load(Ordering::Acquire) >> 32 == self.attempt
    }
}

/// The auxiliary thread's side of a channel.
#[derive(Debug, Default)]
pub struct AuxCursor {
    /// The attempt whose entries `reads` holds.
    attempt: u64,
    /// This attempt's entries checked so far: `(lock, bound)`, kept only
    /// while the attempt runs.
    reads: Vec<(*const AtomicU64, u64)>,
    /// The clock value all of `reads` were last checked at or after.
    stamp: u64,
    /// This attempt was found stale (nothing more to check).
    stale: bool,
    /// Entries consumed over the channel's life.
    head: u64,
    /// Forced passes served.
    requests_seen: u64,
}

impl AuxCursor {
    /// One round of the auxiliary's work: re-check this attempt's entries
    /// if the clock moved (or a pass was asked for), check and consume the
    /// new entries, publish. Returns whether there was anything to do.
    pub fn step(&mut self, ch: &Channel, e: &Engine) -> bool {
        self.step_with(ch, e, |lock| {
            // SAFETY: `step_with` calls this only inside a busy section for
            // the attempt that read the word, which keeps it alive (the
            // module docs give the handshake).
            unsafe { &*lock }.load(Ordering::Acquire)
        })
    }

    /// [`AuxCursor::step`] with the load of a lock supplied (the loom
    /// model checks with it that no load reaches a freed word).
    pub fn step_with(&mut self, ch: &Channel, e: &Engine, load: impl Fn(*const AtomicU64) -> u64) -> bool {
        let active = ch.app_attempt.load(Ordering::Acquire);
        if active != 0 && active != self.attempt {
            self.attempt = active;
            self.reads.clear();
            self.stale = false;
        }
        let inside = active != 0 && self.enter(ch, active);
        if !inside {
            // The attempt is over: its words may be freed, forget them.
            self.reads.clear();
        }
        // Every check below begins after this load: the clock had reached `c`.
        let c = e.now();
        let requests = ch.requests.load(Ordering::Acquire);
        let mut worked = false;
        if inside && !self.stale && (c != self.stamp || requests != self.requests_seen) {
            self.requests_seen = requests;
            if !self.reads.is_empty() {
                worked = true;
                let me = ch.owner;
                if !self.reads.iter().all(|&(l, b)| entry_valid(load(l), b, me)) {
                    self.raise(ch);
                }
            }
            if !self.stale {
                self.stamp = c;
                ch.stamp.store(c, Ordering::Release);
            }
        }
        let tail = ch.tail.load(Ordering::Acquire);
        while self.head != tail {
            let [attempt, lock, bound] = ch.slot(self.head).with(|p| {
                // SAFETY: `head < tail` (Acquire), so the producer wrote this
                // slot before its Release of `tail` and will not write it
                // again before our Release of `head` past it.
                unsafe { *p }
            });
            if attempt != self.attempt || !inside {
                // An entry of a newer attempt whose start we have not seen:
                // leave it for the next round. One of an ended attempt: drop.
                if attempt != self.attempt && attempt == ch.app_attempt.load(Ordering::Acquire) {
                    break;
                }
            } else if !self.stale {
                let lock = lock as usize as *const AtomicU64;
                if entry_valid(load(lock), bound, ch.owner) {
                    self.reads.push((lock, bound));
                } else {
                    self.raise(ch);
                }
            }
            self.head += 1;
            worked = true;
        }
        if inside && ch.handshake() {
            ch.aux_busy.store(0, Ordering::Release);
        }
        if worked {
            ch.head.store(self.head, Ordering::Release);
            if !self.stale && self.attempt != 0 {
                ch.progress.store((self.attempt << 32) | self.reads.len() as u64, Ordering::Release);
            }
        }
        worked
    }

    /// Enters a busy section for attempt `a`: true if the application
    /// thread is still in it (the section's loads are then safe until
    /// `aux_busy` is cleared), false (and no section) otherwise.
    fn enter(&self, ch: &Channel, a: u64) -> bool {
        if !ch.handshake() {
            return true;
        }
        ch.aux_busy.store(a, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if ch.app_attempt.load(Ordering::Acquire) == a {
            true
        } else {
            ch.aux_busy.store(0, Ordering::Release);
            false
        }
    }

    #[cold]
    fn raise(&mut self, ch: &Channel) {
        self.stale = true;
        self.reads.clear();
        ch.conflict.store(self.attempt, Ordering::Release);
    }
}
