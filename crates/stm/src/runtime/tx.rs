//! The transaction descriptor ([`TxCore`]): one per thread, reused across
//! attempts and transactions. It runs a closure as a transaction (begin,
//! conflict, retry, commit, roll back), handing the closure a [`Tx`]: the
//! same descriptor seen through a type that carries the transaction's
//! lifetime `'tcell` and its [`Mode`], and implements [`TxOps`].

use core::marker::PhantomData;

use crate::assist::{AssistPairing, AssistUnavailable, AuxPlacement, Throttle};
use crate::config::Config;
use crate::engine::engine;
use crate::erased::ErasedBox;
use crate::error::{AbortReason, TxError};
use crate::mode::{Mode, Plain};
use crate::primitive::AtomicU64;
use crate::raw::{AUTO_HOLD, ClockPolicy, Committed, TxState, VALIDATE_ALWAYS};
use crate::tvar::TVar;
use crate::txops::TxOps;
use crate::word::{TPtr, Word};

use super::assist::AssistSlot;
use super::clock::thread_clock;
use super::contention::Contention;
use super::reclaim::Garbage;
use super::registry::{ThreadRecord, registry};
use super::retry::{self, Slots};
use super::sampling::{AccessKind, Sampler};
use super::solo;

/// A running transaction, handed to the closure of
/// [`atomically`](crate::atomically) as `&mut Tx<'tcell>`. Use it through
/// [`TxOps`].
///
/// - `'tcell` outlives the call of `atomically` that runs the closure:
///   every variable the transaction writes is borrowed for it, so none can
///   be dropped or moved before the commit stores to it (see
///   [`TxOps`](TxOps#the-lifetime-tcell)). `Tx` is invariant in `'tcell`.
/// - `M` is the transaction's [`Mode`], fixed for the whole transaction by
///   the [`Config`] it runs with: a [`Plain`] transaction's accesses carry
///   no sampler or assist code at all.
///
/// A `Tx` exists only behind the `&mut` its closure receives, on the thread
/// that runs it (it is neither `Send` nor `Sync`).
#[repr(transparent)]
pub struct Tx<'tcell, M: Mode = Plain> {
    core: TxCore,
    _mode: PhantomData<M>,
    _tcell: Invariant<'tcell>,
    _not_send: PhantomData<*mut ()>,
}

/// Makes a type invariant in `'a` (it appears both as an argument and as
/// a result of a function pointer).
type Invariant<'a> = PhantomData<fn(&'a ()) -> &'a ()>;

impl<M: Mode> core::fmt::Debug for Tx<'_, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tx")
            .field("mode", &crate::mode::mode_name::<M>())
            .field("snapshot", &self.core.st.rv())
            .field("reads", &self.core.st.read_set_len())
            .field("writes", &self.core.st.write_set_len())
            .finish()
    }
}

/// The transaction descriptor of a thread (see the module docs).
#[derive(Debug)]
pub(crate) struct TxCore {
    st: TxState,
    record: &'static ThreadRecord,
    /// The first signal raised in this attempt; the attempt cannot commit
    /// while one is pending.
    pending: Option<TxError>,
    /// Objects this attempt allocated: dropped if it rolls back.
    allocs: Vec<ErasedBox>,
    /// Objects this attempt freed: retired if it commits.
    frees: Vec<ErasedBox>,
    garbage: Garbage,
    contention: Contention,
    sampler: Sampler,
    /// The wake slots of a transaction waiting in `retry`.
    retry_slots: Slots,
    /// The auxiliary thread of assisted mode, once asked for.
    assist: AssistSlot,
    /// This transaction runs assisted (its auxiliary is `assist`).
    assisted: bool,
    /// The attempt records its reads. False only in a read-only mode's
    /// attempts before one wrote (see `mode`).
    logging: bool,
    /// The throttling levers of this transaction (when `assisted`).
    throttle: Throttle,
    /// Under `ClockPolicy::Auto`: how many more writing commits move the
    /// clock (see `AUTO_HOLD`).
    auto_hold: u32,
    /// This attempt began solo: it writes in place (the thread's undo log,
    /// `solo::write_in_place`) and records no reads. Such an attempt can
    /// only commit solo: once the gate is given back midway (its in-place
    /// writes were undone then) its next access or its commit aborts it,
    /// and the next attempt runs plain. Whether the gate is still held is
    /// the thread's gate state: `solo::running` (see `solo::start_solo`).
    solo_attempt: bool,
    /// Reads of this solo attempt (counted for the statistics, not recorded).
    solo_reads: usize,
}

impl<'tcell, M: Mode> Tx<'tcell, M> {
    /// The descriptor seen as a transaction of lifetime `'tcell` in mode `M`.
    ///
    /// Private to this module: only [`TxCore::run`] calls it, with the
    /// `'tcell` of the `atomically` call it serves (its `F` bound).
    #[inline(always)]
    fn from_core(core: &mut TxCore) -> &mut Self {
        // SAFETY: `Tx` is `repr(transparent)` over `TxCore` (its other field
        // is a zero-sized `PhantomData`), so the pointer is to a valid `Tx`
        // with the same layout; the returned borrow is the input borrow.
        unsafe { &mut *(core as *mut TxCore).cast::<Self>() }
    }

    /// The snapshot bound of the running attempt (a clock value).
    pub fn snapshot(&self) -> u64 {
        self.core.st.rv()
    }

    /// Reads recorded so far in this attempt (none in a solo attempt,
    /// which records no reads; see [`solo`](crate::solo)).
    pub fn read_set_len(&self) -> usize {
        self.core.st.read_set_len()
    }

    /// Distinct words written so far in this attempt (none in a solo
    /// attempt, which writes in place).
    pub fn write_set_len(&self) -> usize {
        self.core.st.write_set_len()
    }

    /// Validates the read set now, and aborts the attempt (returns the
    /// conflict) if it no longer holds.
    ///
    /// Plain mode: a full scan of the read set, even when nothing committed
    /// since the snapshot (an explicit, possibly unnecessary validation, as
    /// the STM² paper's Eigenbench adds every N operations). Assisted mode
    /// ([`Config::assisted`]): the auxiliary thread is asked for a full
    /// pass and this returns at once, with the conflict if the auxiliary
    /// already found a stale read; reads kept on this thread (ring full)
    /// are checked here. Either way the values read so far were consistent
    /// when read (opacity does not depend on this call).
    ///
    /// # Errors
    ///
    /// A conflict ([`AbortReason::ValidateOnRead`], or
    /// [`AbortReason::AuxiliaryConflict`] in assisted mode); propagate it
    /// with `?`.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically, TVar, TxOps};
    ///
    /// let v = TVar::new(3u32);
    /// let x = atomically(|tx| {
    ///     let x = tx.read(&v)?;
    ///     tx.validate()?;
    ///     Ok(x)
    /// });
    /// assert_eq!(x, 3);
    /// ```
    pub fn validate(&mut self) -> Result<(), TxError> {
        self.core.validate(M::ASSISTED)
    }
}

impl TxCore {
    /// The descriptor of the thread holding record `record_no`.
    pub(crate) fn new(record_no: usize) -> TxCore {
        let owner = record_no as u64 + 1;
        TxCore {
            st: TxState::new(owner),
            record: registry().record(record_no),
            pending: None,
            allocs: Vec::new(),
            frees: Vec::new(),
            garbage: Garbage::default(),
            contention: Contention::new(owner),
            sampler: Sampler::default(),
            retry_slots: Slots::default(),
            assist: AssistSlot::Untried,
            assisted: false,
            logging: true,
            throttle: Throttle::NONE,
            auto_hold: 0,
            solo_attempt: false,
            solo_reads: 0,
        }
    }

    /// [`Tx::validate`]; `assisted_mode`: the transaction's mode is assisted.
    fn validate(&mut self, assisted_mode: bool) -> Result<(), TxError> {
        let ok = match (&mut self.assist, assisted_mode && self.assisted) {
            (AssistSlot::Active(a), true) => a.validate_now(&self.st),
            _ => self.st.validate(),
        };
        if ok {
            return Ok(());
        }
        let reason =
            if assisted_mode && self.assisted { AbortReason::AuxiliaryConflict } else { AbortReason::ValidateOnRead };
        Err(self.signal(TxError::Conflict(reason)))
    }

    /// Sets up this thread's auxiliary (on first use); where it runs.
    pub(crate) fn assistant(&mut self, placement: AuxPlacement) -> Result<AssistPairing, AssistUnavailable> {
        let owner = self.st.owner();
        self.assist.ensure(owner, placement)
    }

    /// Whether this run of a transaction with `cfg` is assisted.
    #[inline]
    fn use_assist<M: Mode>(&mut self, cfg: &Config<M>) -> bool {
        if !M::ASSISTED {
            return false;
        }
        self.throttle = cfg.throttle;
        match &self.assist {
            AssistSlot::Active(_) => true,
            AssistSlot::Unavailable(_) => false,
            AssistSlot::Untried => self.assistant(cfg.placement).is_ok(),
        }
    }

    /// This thread's access sampler.
    pub(crate) fn sampler_mut(&mut self) -> &mut Sampler {
        &mut self.sampler
    }

    #[inline(always)]
    fn signal(&mut self, e: TxError) -> TxError {
        if self.pending.is_none() {
            self.pending = Some(e);
        }
        e
    }

    /// First attempt: announce the start (with the fence that pairs with
    /// reclamation; see the registry's docs), then begin.
    ///
    /// Then the solo gate: if another thread holds it, the announcement is
    /// withdrawn and the transaction waits for the gate to open before it
    /// reads anything (see the `solo` module).
    #[inline]
    fn begin_first<M: Mode>(&mut self) {
        let mut s = engine().now();
        self.record.announce_tx(s);
        // A solo transaction holds the gate (`start_solo` said so just
        // before): it is clear for this thread without loading it.
        if !(M::SOLO && solo::running() || solo::clear_for(self.st.owner())) {
            s = self.wait_for_gate();
        }
        self.st.begin_at(s);
        self.begin_solo::<M>();
        self.assist_begin::<M>();
    }

    /// Whether the attempt beginning now is solo (see `solo_attempt`).
    #[inline(always)]
    fn begin_solo<M: Mode>(&mut self) {
        if M::SOLO {
            self.solo_attempt = solo::running();
            self.solo_reads = 0;
        }
    }

    /// The solo gate is held by another thread: withdraw the announcement,
    /// wait until the gate opens, announce again; the new start.
    #[cold]
    #[inline(never)]
    fn wait_for_gate(&mut self) -> u64 {
        loop {
            self.record.end_tx();
            solo::wait_open();
            let s = engine().now();
            self.record.announce_tx(s);
            if solo::clear_for(self.st.owner()) {
                return s;
            }
        }
    }

    /// A later attempt: the record already protects an older start, so
    /// moving it forward needs no fence.
    #[inline]
    fn begin_again<M: Mode>(&mut self) {
        // First: an assisted attempt waits until its auxiliary loads no lock
        // of the attempt before, whose words the record protects until it
        // moves on.
        self.assist_begin::<M>();
        // A read-only attempt that met a word above the clock left its
        // version for the clock to catch up to, so that the new snapshot
        // covers the word.
        self.st.settle(engine());
        let s = engine().now();
        self.record.advance_tx(s);
        self.st.begin_at(s);
        self.begin_solo::<M>();
    }

    /// The mode is a constant: a plain transaction has no assist code here.
    #[inline(always)]
    fn assist_begin<M: Mode>(&mut self) {
        if M::ASSISTED && self.assisted {
            if let AssistSlot::Active(a) = &mut self.assist {
                a.begin(self.throttle);
            }
        }
    }

    #[inline(always)]
    fn assist_end<M: Mode>(&mut self) {
        if M::ASSISTED && self.assisted {
            if let AssistSlot::Active(a) = &mut self.assist {
                a.end();
            }
        }
    }

    /// Commits the attempt: the plain protocol, or with the auxiliary's
    /// verdict standing in for the read-set validation.
    ///
    /// When a transaction waits in `retry`, the locks the commit releases
    /// bump their wake slots, and the waiters are woken after.
    #[inline(always)]
    fn commit<M: Mode>(&mut self) -> Result<Committed, AbortReason> {
        if M::SOLO && self.solo_attempt {
            return self.commit_solo();
        }
        // An attempt that wrote nothing commits here, inlined in the
        // transaction's loop, in every mode (no lock, no validation, no
        // waiter to wake); the rest out of line (it was all out of line:
        // 40 instructions for an empty transaction, counted).
        match self.st.commit_if_read_only() {
            Some(c) => Ok(c),
            None => self.commit_writes::<M>(),
        }
    }

    /// [`TxCore::commit`] of an attempt that wrote.
    #[inline(never)]
    fn commit_writes<M: Mode>(&mut self) -> Result<Committed, AbortReason> {
        let wake = retry::waiters_exist();
        let bump = |lock: &AtomicU64| {
            if wake {
                retry::released(lock);
            }
        };
        let policy = thread_clock();
        let policy = if policy == ClockPolicy::Auto { self.auto_clock() } else { policy };
        let r = match (&mut self.assist, M::ASSISTED && self.assisted) {
            (AssistSlot::Active(a), true) => {
                let throttle = self.throttle;
                // The auxiliary's verdict covers the commits up to a clock
                // value, and `ClockPolicy::Readers` commits do not move the
                // clock: once one has run (the bound says so), the
                // application thread validates itself (the auxiliary may
                // still abort an attempt early).
                let valid = |st: &TxState, bound| {
                    if bound == VALIDATE_ALWAYS { st.validate() } else { a.confirm(st, bound, throttle) }
                };
                self.st.commit_checked(engine(), policy, valid, bump)
            }
            _ => self.st.commit_checked(engine(), policy, |st, _| st.validate(), bump),
        };
        if wake && matches!(r, Ok(Committed::Wrote(_))) {
            retry::wake_waiters();
        }
        r
    }

    /// Commits an attempt that began solo: its words are written already,
    /// so there is nothing to lock, store or validate; the undo log is
    /// forgotten. If the gate was given back meanwhile (the writes were
    /// undone then), the attempt cannot commit: its reads were not
    /// recorded, so they cannot be validated against what others have
    /// committed since. It aborts and runs again, plain.
    #[inline]
    fn commit_solo(&mut self) -> Result<Committed, AbortReason> {
        if !solo::running() {
            return Err(AbortReason::ValidateOnRead);
        }
        // `running`: this thread has held the gate since before this
        // attempt began (`Running` is set only by `solo::start_solo`, at
        // the start of this transaction, and left only at `finish` or for
        // good), so no other transaction or `TVar::store` ran meanwhile and
        // the words it wrote hold its values.
        let wake = retry::waiters_exist();
        let wrote = solo::commit_in_place(wake, retry::released);
        if wrote == 0 {
            return Ok(Committed::ReadOnly);
        }
        if wake {
            retry::wake_waiters();
        }
        Ok(Committed::Wrote(self.st.rv()))
    }

    /// `ClockPolicy::Auto`'s choice for this commit: `Commits` for
    /// `AUTO_HOLD` commits after a read had to move the clock, else
    /// `Readers`. Out of line: the other policies pay only its test.
    #[inline(never)]
    fn auto_clock(&mut self) -> ClockPolicy {
        if self.st.take_caught_up() {
            self.auto_hold = AUTO_HOLD;
        }
        if self.auto_hold > 0 {
            self.auto_hold -= 1;
            ClockPolicy::Commits
        } else {
            ClockPolicy::Readers
        }
    }

    /// An assisted read: the plain read (checked against the snapshot as
    /// always), then the entry goes to the auxiliary.
    #[inline]
    ///
    /// # Safety
    ///
    /// As [`TxState::read`]: `var` stays alive and in place until this
    /// attempt ends.
    unsafe fn read_assisted<T: Word>(&mut self, var: &TVar<T>) -> Result<T, TxError> {
        let AssistSlot::Active(a) = &mut self.assist else { unreachable!("assisted without an auxiliary") };
        if a.conflicted() {
            return Err(self.signal(TxError::Conflict(AbortReason::AuxiliaryConflict)));
        }
        let before = self.st.read_set_len();
        // SAFETY: forwarded to the caller.
        match unsafe { self.st.read(engine(), var.vword()) } {
            Ok(w) => {
                if self.st.read_set_len() != before {
                    let lock = *self.st.read_locks().last().expect("a read was recorded");
                    a.push(lock, self.st.rv(), self.throttle);
                }
                Ok(T::from_word(w))
            }
            Err(reason) => Err(self.signal(TxError::Conflict(reason))),
        }
    }

    /// Rolls the attempt back: nothing was published, objects it allocated
    /// are dropped, its frees are forgotten.
    #[cold]
    fn rollback(&mut self, reason: AbortReason) {
        self.st.rollback();
        self.pending = None;
        self.record.counters.abort(reason);
        self.frees.clear();
        if self.solo_attempt {
            // Its words get their old values back (the gate is still
            // closed to others: one given back was undone then). Its
            // in-place stores may have published the objects it allocated
            // to readers outside transactions (an epoch guard loading a
            // link), so they go to the reclaimer as a commit's frees do
            // (the undo is their unlink), and are dropped once no guard or
            // transaction that began before it runs.
            solo::undo_in_place();
            self.solo_attempt = false;
            if !self.allocs.is_empty() && !solo::allocs_dropped_at_once() {
                self.garbage.retire(&mut self.allocs);
            }
        }
        for o in self.allocs.drain(..) {
            // SAFETY: `ErasedBox::destroy`'s list: `alloc` made the object
            // with `TPtr::from_box` and recorded it here only; this attempt
            // did not commit and did not begin solo (a solo attempt's
            // objects went to the reclaimer above), so its writes (the only
            // way the object could have been published) were never applied:
            // no other thread can reach it, and the closure that could has
            // returned or unwound. (In loom builds the fault injection
            // `loom_hooks::solo_allocs_dropped_at_once` breaks this on
            // purpose.)
            unsafe { o.destroy() };
        }
    }

    #[cold]
    fn conflict<M: Mode>(&mut self, reason: AbortReason, cfg: &Config<M>, attempt: &mut u32) {
        self.rollback(reason);
        *attempt = attempt.saturating_add(1);
        self.contention.after_abort(cfg.contention, *attempt);
        self.begin_again::<M>();
    }

    /// A read-only attempt wrote or asked to retry: run again at once,
    /// recording reads (no contention manager: nobody conflicted).
    #[cold]
    fn upgrade<M: Mode>(&mut self) {
        self.rollback(AbortReason::ReadOnlyUpgrade);
        self.logging = true;
        self.begin_again::<M>();
    }

    /// A solo attempt, or one that still keeps the gate closed (its guard
    /// was dropped inside it), asked to `retry`: nobody else can change
    /// what it read while the gate is held, so give the gate back (for
    /// good: the transaction goes on plain; a solo attempt's writes are
    /// undone first). A solo attempt recorded no reads to wait on, so it
    /// runs again at once, plain, and waits when that attempt retries; the
    /// other waits as a plain one does.
    #[cold]
    fn leave_solo<M: Mode>(&mut self) {
        solo::give_back();
        if self.solo_attempt {
            // Its reads were not recorded, so it has nothing to wait on:
            // run again at once, plain, and wait when that attempt retries.
            self.rollback(AbortReason::Retry);
            self.begin_again::<M>();
            return;
        }
        self.retry_later::<M>();
    }

    /// `retry`: register on the wake slots of what was read while the
    /// transaction still protects it, validate (something read may have
    /// changed already: then run again at once), roll back, and wait until
    /// a slot moves or a poll interval passes; then run again (see the
    /// `retry` module).
    #[cold]
    fn retry_later<M: Mode>(&mut self) {
        retry::register(self.st.read_locks(), &mut self.retry_slots);
        let unchanged = self.st.validate();
        self.rollback(AbortReason::Retry);
        self.assist_end::<M>();
        self.record.end_tx();
        if unchanged {
            retry::wait(&self.retry_slots);
        } else {
            retry::give_up();
        }
        self.begin_first::<M>();
    }

    /// The attempt committed, with `reads` reads and `writes` words written.
    #[inline]
    fn committed(&mut self, c: Committed, reads: usize, writes: usize) {
        self.record.counters.commit(c == Committed::ReadOnly, reads, writes);
        self.allocs.clear();
        if !self.frees.is_empty() {
            self.garbage.retire(&mut self.frees);
        }
    }

    /// Ends the transaction: the record no longer protects anything, and
    /// garbage is collected when enough has piled up (sooner in solo mode:
    /// see `reclaim::COLLECT_MIN_SOLO`).
    #[inline]
    fn finish<M: Mode>(&mut self) {
        if M::SOLO {
            solo::end_solo();
        }
        self.assist_end::<M>();
        self.record.end_tx();
        if self.garbage.wants_collect(M::SOLO) {
            self.garbage.collect();
        }
    }

    /// The attempt signalled (`pending`: a conflict, an upgrade, `retry`):
    /// roll it back and begin the next. Out of line, so that an attempt
    /// that signalled nothing pays one test of `pending` (taken and matched
    /// in the loop it was a jump table: six instructions, counted).
    #[cold]
    #[inline(never)]
    fn on_signal<M: Mode>(&mut self, cfg: &Config<M>, attempt: &mut u32) {
        let Some(sig) = self.pending.take() else { unreachable!("on_signal is called with a signal pending") };
        match sig {
            TxError::Conflict(AbortReason::ReadOnlyUpgrade) => self.upgrade::<M>(),
            TxError::Conflict(reason) => self.conflict(reason, cfg, attempt),
            TxError::Retry if M::SOLO && (self.solo_attempt || solo::in_solo()) => self.leave_solo::<M>(),
            TxError::Retry => self.retry_later::<M>(),
            TxError::Stop(reason) => {
                panic!(
                    "skelaff-stm: TxError::Stop({reason}) is a shadow transaction's signal; a real transaction cannot stop"
                )
            }
        }
    }

    /// Runs `f` as a transaction until it commits or returns a user error.
    ///
    /// `'tcell` is the lifetime parameter of the public entry point that
    /// calls this (`try_atomically_with` and the functions over it): it
    /// outlives that call, and every attempt begins and ends inside this one.
    #[inline]
    pub(crate) fn run<'tcell, M: Mode, R, E, F>(&mut self, cfg: &Config<M>, f: &mut F) -> Result<R, E>
    where
        F: FnMut(&mut Tx<'tcell, M>) -> Result<R, E>,
    {
        self.assisted = self.use_assist(cfg);
        self.logging = !M::READ_ONLY;
        if M::SOLO {
            solo::start_solo();
        }
        self.begin_first::<M>();
        let g = AttemptGuard::<M> { tx: self, _mode: PhantomData };
        let mut attempt = 0u32;
        loop {
            let res = f(Tx::from_core(g.tx));
            let tx = &mut *g.tx;
            if tx.pending.is_some() {
                tx.on_signal(cfg, &mut attempt);
                continue;
            }
            match res {
                Ok(r) => match (tx.reads_now::<M>(), tx.writes_now::<M>(), tx.commit::<M>()) {
                    (reads, writes, Ok(c)) => {
                        tx.committed(c, reads, writes);
                        let tx = g.disarm();
                        tx.finish::<M>();
                        return Ok(r);
                    }
                    (_, _, Err(reason)) => tx.conflict(reason, cfg, &mut attempt),
                },
                Err(e) => {
                    tx.rollback(AbortReason::Explicit);
                    let tx = g.disarm();
                    tx.finish::<M>();
                    return Err(e);
                }
            }
        }
    }

    /// Reads of the running attempt (recorded, or counted in a solo one).
    #[inline(always)]
    fn reads_now<M: Mode>(&self) -> usize {
        if M::SOLO && self.solo_attempt { self.solo_reads } else { self.st.read_set_len() }
    }

    /// Words the running attempt wrote (distinct; in a solo one, every
    /// write counts).
    #[inline(always)]
    fn writes_now<M: Mode>(&self) -> usize {
        if M::SOLO && self.solo_attempt { solo::written_in_place() } else { self.st.write_set_len() }
    }

    /// Collects this thread's garbage now (see `loom_hooks::collect_garbage`).
    #[cfg(loom)]
    pub(crate) fn collect_garbage(&mut self) {
        self.garbage.collect();
    }

    #[inline]
    fn assist_conflicted(&self) -> bool {
        matches!(&self.assist, AssistSlot::Active(a) if a.conflicted())
    }

    #[inline(never)]
    fn sample(&mut self, addr: usize, kind: AccessKind) {
        self.sampler.record(addr, kind);
    }
}

/// Rolls the attempt back if the closure unwinds.
struct AttemptGuard<'a, M: Mode> {
    tx: &'a mut TxCore,
    _mode: PhantomData<M>,
}

impl<'a, M: Mode> AttemptGuard<'a, M> {
    fn disarm(self) -> &'a mut TxCore {
        let me = core::mem::ManuallyDrop::new(self);
        // SAFETY: `me` is never dropped, so moving the reference out leaves
        // no second user of it.
        unsafe { core::ptr::read(&me.tx) }
    }
}

impl<M: Mode> Drop for AttemptGuard<'_, M> {
    fn drop(&mut self) {
        // Only reached by unwinding out of the closure (or of a drop it
        // caused): no lock is held outside `commit`, so rolling back is all.
        self.tx.rollback(AbortReason::Panic);
        self.tx.finish::<M>();
    }
}

impl Drop for TxCore {
    fn drop(&mut self) {
        self.garbage.hand_over();
    }
}

// SAFETY: the trait's four conditions: (1) every read returns either the
// write set's entry for the word or a value loaded between two equal loads
// of its unlocked lock at a version within the snapshot (`TxState::read`,
// `read_unlogged`), so a value the word held since the attempt began; or,
// in a solo attempt under the gate, the word as it is, which no other
// thread has written since the attempt began (the gate), so a value held
// since then or this attempt's own last in-place write (an attempt that
// lost the gate midway was undone then, and returns no more values); (2)
// the attempt is announced to the epoch
// reclamation before its first read (`begin_first`) and withdrawn only
// when it ends, and objects freed by commits are deallocated only after
// every attempt announced before their retirement has ended; (3) `alloc`
// boxes the value (`TPtr::from_box`) and drops it only if the attempt
// aborts, when nothing else can have reached it (a solo attempt's in-place
// writes may have published it to epoch-guard readers: its rollback retires
// it to the reclamation instead, after undoing the writes); (4) `free` only records
// the object; a commit retires it to the same reclamation.
unsafe impl<'tcell, M: Mode> TxOps<'tcell> for Tx<'tcell, M> {
    #[inline(always)]
    fn read<T: Word>(&mut self, var: &'tcell TVar<T>) -> Result<T, TxError> {
        let core = &mut self.core;
        if M::SOLO {
            if solo::running() {
                // No lock to check and nothing to record: no other
                // transaction runs while the gate is held, and the attempt's
                // own writes are in place (`write` below).
                core.solo_reads += 1;
                return Ok(T::from_word(var.vword().value().load(crate::primitive::Ordering::Acquire)));
            }
            if core.solo_attempt {
                // The gate was given back midway: see `TxCore::commit_solo`.
                return Err(core.signal(TxError::Conflict(AbortReason::ValidateOnRead)));
            }
        }
        // `M::SAMPLED` and `M::ASSISTED` are constants: a plain transaction's
        // read is the protocol's read and nothing else.
        if M::SAMPLED && core.sampler.enabled && core.sampler.tick() {
            core.sample(var.addr(), AccessKind::Read);
        }
        if M::ASSISTED && core.assisted {
            // SAFETY: as for the plain read below.
            return unsafe { core.read_assisted(var) };
        }
        if M::READ_ONLY && !core.logging {
            return match core.st.read_unlogged(var.vword()) {
                Ok(w) => Ok(T::from_word(w)),
                Err(reason) => Err(core.signal(TxError::Conflict(reason))),
            };
        }
        // SAFETY: `TxState::read` needs `var` alive and in place until this
        // attempt ends (its lock stays in the read set and is loaded again
        // by validations). `var` is borrowed for `'tcell`, which outlives
        // the attempt: see the same argument on `write` below.
        match unsafe { core.st.read(engine(), var.vword()) } {
            Ok(w) => Ok(T::from_word(w)),
            Err(reason) => Err(core.signal(TxError::Conflict(reason))),
        }
    }

    #[inline(always)]
    fn write<T: Word>(&mut self, var: &'tcell TVar<T>, value: T) -> Result<(), TxError> {
        let core = &mut self.core;
        if M::SOLO {
            if solo::running() {
                // SAFETY: the gate is held (`running`), and `var` outlives
                // the attempt, which empties the undo log before it ends:
                // the argument on `TxState::write` below.
                unsafe { solo::write_in_place(var.vword(), value.to_word()) };
                return Ok(());
            }
            if core.solo_attempt {
                return Err(core.signal(TxError::Conflict(AbortReason::ValidateOnRead)));
            }
        }
        if M::SAMPLED && core.sampler.enabled && core.sampler.tick() {
            core.sample(var.addr(), AccessKind::Write);
        }
        if M::ASSISTED && core.assisted && core.assist_conflicted() {
            return Err(core.signal(TxError::Conflict(AbortReason::AuxiliaryConflict)));
        }
        if M::READ_ONLY && !core.logging {
            // Its reads were not recorded, so it cannot be validated at
            // commit: run again as a plain attempt.
            return Err(core.signal(TxError::Conflict(AbortReason::ReadOnlyUpgrade)));
        }
        // SAFETY: `TxState::write` needs `var` alive and in place until this
        // attempt ends. `var` is borrowed for `'tcell`, so it is neither
        // dropped nor moved while `'tcell` lasts. Safe code reaches a
        // `Tx<'tcell, M>` only as the argument `TxCore::run` passes to the
        // closure of one `atomically`/`try_atomically` call (`from_core` is
        // private to this module, `Tx` has no constructor, and being
        // `!Send` it cannot reach another thread's call), and there
        // `'tcell` is a lifetime parameter of that public function, so it
        // outlives the call; the attempt ends inside the call (commit,
        // rollback, or `AttemptGuard::drop` while unwinding). Invariance
        // keeps a `&mut Tx<'tcell>` from being used as a `Tx` of a shorter
        // lifetime. So `var` outlives the attempt, whoever the caller is.
        unsafe { core.st.write(var.vword(), value.to_word()) };
        Ok(())
    }

    #[inline]
    fn alloc<T: Send + Sync + 'static>(&mut self, value: T) -> Result<TPtr<T>, TxError> {
        let p = TPtr::from_box(Box::new(value));
        self.core.allocs.push(ErasedBox::new(p));
        Ok(p)
    }

    #[inline]
    unsafe fn free<T: Send + Sync + 'static>(&mut self, ptr: TPtr<T>) -> Result<(), TxError> {
        self.core.frees.push(ErasedBox::new(ptr));
        Ok(())
    }

    fn retry(&mut self) -> TxError {
        if M::READ_ONLY && !self.core.logging {
            // Waiting needs the read set: run again recording it (the
            // retry comes again, and then waits).
            return self.core.signal(TxError::Conflict(AbortReason::ReadOnlyUpgrade));
        }
        self.core.signal(TxError::Retry)
    }
}
