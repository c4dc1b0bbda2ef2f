//! The transaction descriptor [`Tx`]: one per thread, reused across
//! attempts and transactions. It runs a closure as a transaction (begin,
//! conflict, retry, commit, roll back) and is what the closure's [`TxOps`]
//! calls reach.

use crate::assist::{Assist, AssistPairing, AssistUnavailable, AuxPlacement, Throttle};
use crate::config::Config;
use crate::engine::engine;
use crate::erased::ErasedBox;
use crate::error::{AbortReason, TxError};
use crate::raw::{Committed, TxState};
use crate::tvar::TVar;
use crate::txops::TxOps;
use crate::word::{TPtr, Word};

use super::assist::AssistSlot;
use super::contention::Contention;
use super::reclaim::Garbage;
use super::registry::{ThreadRecord, registry};
use super::retry::{wait_for_change, wake_waiters};
use super::sampling::{AccessKind, Sampler};

/// The transaction descriptor of a thread, handed to the closure of
/// [`atomically`](crate::atomically) as `&mut Tx`. Use it through [`TxOps`].
#[derive(Debug)]
pub struct Tx {
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
    retry_locks: Vec<u32>,
    /// The auxiliary thread of assisted mode, once asked for.
    assist: AssistSlot,
    /// This transaction runs assisted (its auxiliary is `assist`).
    assisted: bool,
    /// The throttling levers of this transaction (when `assisted`).
    throttle: Throttle,
}

impl Tx {
    /// The descriptor of the thread holding record `record_no`.
    pub(crate) fn new(record_no: usize) -> Tx {
        let owner = record_no as u64 + 1;
        Tx {
            st: TxState::new(owner),
            record: registry().record(record_no),
            pending: None,
            allocs: Vec::new(),
            frees: Vec::new(),
            garbage: Garbage::default(),
            contention: Contention::new(owner),
            sampler: Sampler::default(),
            retry_locks: Vec::new(),
            assist: AssistSlot::Untried,
            assisted: false,
            throttle: Throttle::NONE,
        }
    }

    /// The snapshot bound of the running attempt (a clock value).
    pub fn snapshot(&self) -> u64 {
        self.st.rv()
    }

    /// Reads recorded so far in this attempt.
    pub fn read_set_len(&self) -> usize {
        self.st.read_set_len()
    }

    /// Distinct words written so far in this attempt.
    pub fn write_set_len(&self) -> usize {
        self.st.write_set_len()
    }

    /// Validates the read set now, and aborts the attempt (returns the
    /// conflict) if it no longer holds.
    ///
    /// Plain mode: a full scan of the read set, even when nothing committed
    /// since the snapshot (an explicit, possibly unnecessary validation, as
    /// the STM² paper's Eigenbench adds every N operations). Assisted mode
    /// ([`Assist::Validation`]): the auxiliary thread is asked for a full
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
        let ok = match (&mut self.assist, self.assisted) {
            (AssistSlot::Active(a), true) => a.validate_now(&self.st, engine()),
            _ => self.st.validate(engine()),
        };
        if ok {
            return Ok(());
        }
        let reason = if self.assisted { AbortReason::AuxiliaryConflict } else { AbortReason::ValidateOnRead };
        Err(self.signal(TxError::Conflict(reason)))
    }

    /// Sets up this thread's auxiliary (on first use); where it runs.
    pub(crate) fn assistant(&mut self, placement: AuxPlacement) -> Result<AssistPairing, AssistUnavailable> {
        let owner = self.st.owner();
        self.assist.ensure(owner, placement)
    }

    /// Whether this run of a transaction with `cfg` is assisted.
    #[inline]
    fn use_assist(&mut self, cfg: &Config) -> bool {
        if cfg.assist == Assist::Off {
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
    #[inline]
    fn begin_first(&mut self) {
        let s = engine().now();
        self.record.announce_tx(s);
        self.st.begin_at(s);
        self.assist_begin();
    }

    /// A later attempt: the record already protects an older start, so
    /// moving it forward needs no fence.
    #[inline]
    fn begin_again(&mut self) {
        let s = engine().now();
        self.record.advance_tx(s);
        self.st.begin_at(s);
        self.assist_begin();
    }

    #[inline(always)]
    fn assist_begin(&mut self) {
        if self.assisted {
            if let AssistSlot::Active(a) = &mut self.assist {
                a.begin(self.throttle);
            }
        }
    }

    #[inline(always)]
    fn assist_end(&mut self) {
        if self.assisted {
            if let AssistSlot::Active(a) = &mut self.assist {
                a.end();
            }
        }
    }

    /// Commits the attempt: the plain protocol, or with the auxiliary's
    /// verdict standing in for the read-set validation.
    #[inline]
    fn commit(&mut self) -> Result<Committed, AbortReason> {
        match (&mut self.assist, self.assisted) {
            (AssistSlot::Active(a), true) => {
                let throttle = self.throttle;
                self.st.commit_checked(engine(), |st, bound| a.confirm(st, engine(), bound, throttle))
            }
            _ => self.st.commit(engine()),
        }
    }

    /// An assisted read: the plain read (checked against the snapshot as
    /// always), then the entry goes to the auxiliary.
    #[inline]
    fn read_assisted<T: Word>(&mut self, var: &TVar<T>) -> Result<T, TxError> {
        let AssistSlot::Active(a) = &mut self.assist else { unreachable!("assisted without an auxiliary") };
        if a.conflicted() {
            return Err(self.signal(TxError::Conflict(AbortReason::AuxiliaryConflict)));
        }
        let before = self.st.read_set_len();
        match self.st.read(engine(), var.cell()) {
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
        for o in self.allocs.drain(..) {
            // SAFETY: `ErasedBox::destroy`'s list: `alloc` made the object
            // with `TPtr::from_box` and recorded it here only; this attempt
            // did not commit, so its writes (the only way the object could
            // have been published) were never applied: no other thread can
            // reach it, and the closure that could has returned or unwound.
            unsafe { o.destroy() };
        }
    }

    #[cold]
    fn conflict(&mut self, reason: AbortReason, cfg: &Config, attempt: &mut u32) {
        self.rollback(reason);
        *attempt = attempt.saturating_add(1);
        self.contention.after_abort(cfg.contention, *attempt);
        self.begin_again();
    }

    /// `retry`: remember what was read, roll back, wait until one of those
    /// stripes moves past the snapshot (or a poll interval passes), run again.
    #[cold]
    fn retry_later(&mut self) {
        let rv = self.st.rv();
        self.retry_locks.clear();
        self.retry_locks.extend_from_slice(self.st.read_locks());
        self.retry_locks.sort_unstable();
        self.retry_locks.dedup();
        self.rollback(AbortReason::Retry);
        self.assist_end();
        self.record.end_tx();
        wait_for_change(&self.retry_locks, rv);
        self.begin_first();
    }

    #[inline]
    fn committed(&mut self, c: Committed) {
        let reads = self.st.read_set_len();
        let writes = self.st.write_set_len();
        self.record.counters.commit(c == Committed::ReadOnly, reads, writes);
        self.allocs.clear();
        if let Committed::Wrote(_) = c {
            wake_waiters();
        }
        if !self.frees.is_empty() {
            self.garbage.retire(&mut self.frees);
        }
        self.st.rollback();
    }

    /// Ends the transaction: the record no longer protects anything, and
    /// garbage is collected when enough has piled up.
    #[inline]
    fn finish(&mut self) {
        self.assist_end();
        self.record.end_tx();
        if self.garbage.wants_collect() {
            self.garbage.collect();
        }
    }

    /// Runs `f` as a transaction until it commits or returns a user error.
    pub(crate) fn run<R, E, F>(&mut self, cfg: &Config, f: &mut F) -> Result<R, E>
    where
        F: FnMut(&mut Tx) -> Result<R, E>,
    {
        self.assisted = self.use_assist(cfg);
        self.begin_first();
        let g = AttemptGuard { tx: self };
        let mut attempt = 0u32;
        loop {
            let res = f(g.tx);
            let tx = &mut *g.tx;
            if let Some(sig) = tx.pending.take() {
                match sig {
                    TxError::Conflict(reason) => tx.conflict(reason, cfg, &mut attempt),
                    TxError::Retry => tx.retry_later(),
                    TxError::Stop(reason) => {
                        panic!(
                            "skelaff-stm: TxError::Stop({reason}) is a shadow transaction's signal; a real transaction cannot stop"
                        )
                    }
                }
                continue;
            }
            match res {
                Ok(r) => match tx.commit() {
                    Ok(c) => {
                        tx.committed(c);
                        let tx = g.disarm();
                        tx.finish();
                        return Ok(r);
                    }
                    Err(reason) => tx.conflict(reason, cfg, &mut attempt),
                },
                Err(e) => {
                    tx.rollback(AbortReason::Explicit);
                    let tx = g.disarm();
                    tx.finish();
                    return Err(e);
                }
            }
        }
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
struct AttemptGuard<'a> {
    tx: &'a mut Tx,
}

impl<'a> AttemptGuard<'a> {
    fn disarm(self) -> &'a mut Tx {
        let me = core::mem::ManuallyDrop::new(self);
        // SAFETY: `me` is never dropped, so moving the reference out leaves
        // no second user of it.
        unsafe { core::ptr::read(&me.tx) }
    }
}

impl Drop for AttemptGuard<'_> {
    fn drop(&mut self) {
        // Only reached by unwinding out of the closure (or of a drop it
        // caused): no lock is held outside `commit`, so rolling back is all.
        self.tx.rollback(AbortReason::Panic);
        self.tx.finish();
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        self.garbage.hand_over();
    }
}

impl TxOps for Tx {
    #[inline(always)]
    fn read<T: Word>(&mut self, var: &TVar<T>) -> Result<T, TxError> {
        if self.sampler.enabled && self.sampler.tick() {
            self.sample(var.addr(), AccessKind::Read);
        }
        if self.assisted {
            return self.read_assisted(var);
        }
        match self.st.read(engine(), var.cell()) {
            Ok(w) => Ok(T::from_word(w)),
            Err(reason) => Err(self.signal(TxError::Conflict(reason))),
        }
    }

    #[inline(always)]
    fn write<T: Word>(&mut self, var: &TVar<T>, value: T) -> Result<(), TxError> {
        if self.sampler.enabled && self.sampler.tick() {
            self.sample(var.addr(), AccessKind::Write);
        }
        if self.assisted && self.assist_conflicted() {
            return Err(self.signal(TxError::Conflict(AbortReason::AuxiliaryConflict)));
        }
        // SAFETY: `TxState::write` needs `var` alive and in place until this
        // attempt ends. That holds for every variable the closure reaches
        // from outside itself: one it borrows from its environment stays
        // borrowed for the whole `atomically` call, and one inside a
        // transactional object stays alive while this transaction runs
        // (reclamation waits for it). It is NOT enforced for a variable
        // that the closure itself creates and then drops or moves before
        // the attempt ends: `TxOps::write` states this as a rule of use
        // ("Variables written must outlive the transaction"), which safe code
        // can break. Closing that gap needs a lifetime on `TxOps` (as swym's
        // `Write<'tcell>`); see the crate README, "Soundness".
        unsafe { self.st.write(engine(), var.cell(), value.to_word()) };
        Ok(())
    }

    #[inline]
    fn alloc<T: Send + Sync + 'static>(&mut self, value: T) -> Result<TPtr<T>, TxError> {
        let p = TPtr::from_box(Box::new(value));
        self.allocs.push(ErasedBox::new(p));
        Ok(p)
    }

    #[inline]
    unsafe fn free<T: Send + Sync + 'static>(&mut self, ptr: TPtr<T>) -> Result<(), TxError> {
        self.frees.push(ErasedBox::new(ptr));
        Ok(())
    }

    fn retry(&mut self) -> TxError {
        self.signal(TxError::Retry)
    }
}
