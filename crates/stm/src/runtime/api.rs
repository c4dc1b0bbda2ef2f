//! The public entry points of the runtime: [`atomically`] and its
//! variants, and [`startup`].

use crate::assist::{AssistPairing, AssistUnavailable, AuxPlacement};
use crate::config::Config;
use crate::engine::engine;
use crate::error::TxError;
use crate::mode::Mode;
use crate::tvar::TVar;
use crate::word::Word;

use super::registry::registry;
use super::solo;
use super::thread::{in_transaction, this_owner, this_record, with_tx};
use super::tx::Tx;

impl<T: Word> TVar<T> {
    /// Stores `value` outside any transaction, as a transaction of one write
    /// would: running transactions see it atomically (those that read the
    /// variable before will fail validation). Like a transaction, it waits
    /// while another thread holds the [solo gate](crate::solo).
    ///
    /// # Examples
    ///
    /// ```
    /// let v = skelaff_stm::TVar::new(1u32);
    /// v.store(2);
    /// assert_eq!(v.load(), 2);
    /// ```
    pub fn store(&self, value: T) {
        let word = value.to_word();
        if in_transaction() {
            // Inside a transaction of this thread, which is announced and
            // past the gate.
            engine().store_single(self.vword(), word, 0);
            return;
        }
        let record = this_record();
        let me = this_owner();
        // Announced as a transaction (the gate's check needs it; see the
        // `solo` module), for the lock-store-release of one word.
        loop {
            record.announce_tx(engine().now());
            if solo::clear_for(me) {
                break;
            }
            record.end_tx();
            solo::wait_open();
        }
        engine().store_single(self.vword(), word, 0);
        record.end_tx();
    }
}

/// Prepares the STM for its first transaction: sets up the thread
/// registry (1023 records, once per process). Every transaction does this
/// itself if needed; call it ahead, as STAMP's `TM_STARTUP`, to keep that
/// one-time cost out of a timed region. Later calls return at once.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, startup, TVar, TxOps};
///
/// startup(); // before the clock starts
/// let v = TVar::new(1u64);
/// assert_eq!(atomically(|tx| tx.update(&v, |x| x + 1)), 2);
/// ```
pub fn startup() {
    let _ = registry();
}

/// Runs `f` as a transaction with the default [`Config`] and returns its value.
///
/// `f` may run several times (after conflicts); only the run that commits
/// has effects. Inside, use the [`TxOps`](crate::TxOps) methods on `tx` and
/// propagate their errors with `?`. Returning `Err(tx.retry())` waits until
/// something the transaction read changes and runs it again.
///
/// # Panics
///
/// - If `f` panics: the attempt is rolled back (no lock held, no write
///   visible, its allocations dropped) and the panic propagates.
/// - If called inside another transaction on the same thread (transactions
///   do not nest; pass `tx` down instead).
/// - If `f` returns [`TxError::Stop`] (a shadow's signal).
/// - If more than [`MAX_THREADS`](crate::MAX_THREADS) threads use
///   transactions at once.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, TVar, TxOps};
///
/// let counter = TVar::new(0u64);
/// std::thread::scope(|s| {
///     for _ in 0..2 {
///         s.spawn(|| {
///             for _ in 0..1000 {
///                 atomically(|tx| tx.update(&counter, |c| c + 1));
///             }
///         });
///     }
/// });
/// assert_eq!(counter.load(), 2000);
/// ```
#[inline]
pub fn atomically<'tcell, R, F>(f: F) -> R
where
    F: FnMut(&mut Tx<'tcell>) -> Result<R, TxError>,
{
    atomically_with(&Config::DEFAULT, f)
}

/// [`atomically`] with an explicit configuration: the contention manager,
/// and the transaction's [`Mode`] (the closure receives a `Tx<'tcell, M>`;
/// see [`Config::sampled`] and [`Config::assisted`]).
///
/// A `TxError` that `f` returns without the transaction having raised it
/// (one made by hand) is treated as what it says: a conflict runs `f`
/// again, a retry yields and runs it again.
///
/// # Panics
///
/// As [`atomically`].
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically_with, Config, ContentionManager, TVar, TxOps};
///
/// let cfg = Config::new().contention(ContentionManager::BACKOFF);
/// let v = TVar::new(1i32);
/// assert_eq!(atomically_with(&cfg, |tx| tx.update(&v, |x| -x)), -1);
/// ```
#[inline]
pub fn atomically_with<'tcell, M: Mode, R, F>(cfg: &Config<M>, mut f: F) -> R
where
    F: FnMut(&mut Tx<'tcell, M>) -> Result<R, TxError>,
{
    loop {
        match try_atomically_with(cfg, &mut f) {
            Ok(r) => return r,
            Err(TxError::Stop(reason)) => {
                panic!("skelaff-stm: TxError::Stop({reason}) returned from a real transaction")
            }
            Err(TxError::Retry) => crate::primitive::yield_now(),
            Err(_) => {}
        }
    }
}

/// Runs `f` as a transaction that may end with a user error.
///
/// When `f` returns `Err(e)` and the error is not a signal the transaction
/// raised (conflict, retry), the attempt is rolled back — nothing it wrote
/// becomes visible — and `Err(e)` is returned. Make your error type
/// `From<TxError>` so `?` works on the [`TxOps`](crate::TxOps) methods.
///
/// # Errors
///
/// The user error `f` returned.
///
/// # Panics
///
/// As [`atomically`].
///
/// # Examples
///
/// ```
/// use skelaff_stm::{try_atomically, TVar, TxError, TxOps};
///
/// #[derive(Debug, PartialEq)]
/// enum BankError { Insufficient, Tx(TxError) }
/// impl From<TxError> for BankError {
///     fn from(e: TxError) -> Self { BankError::Tx(e) }
/// }
///
/// let acct = TVar::new(10u64);
/// let r = try_atomically(|tx| {
///     tx.write(&acct, 0)?;              // rolled back below
///     if tx.read(&acct)? < 50 {
///         return Err(BankError::Insufficient);
///     }
///     Ok(())
/// });
/// assert_eq!(r, Err(BankError::Insufficient));
/// assert_eq!(acct.load(), 10);
/// ```
#[inline]
pub fn try_atomically<'tcell, R, E, F>(f: F) -> Result<R, E>
where
    F: FnMut(&mut Tx<'tcell>) -> Result<R, E>,
{
    try_atomically_with(&Config::DEFAULT, f)
}

/// [`try_atomically`] with an explicit configuration.
///
/// # Errors
///
/// The user error `f` returned.
///
/// # Panics
///
/// As [`atomically`].
#[inline]
pub fn try_atomically_with<'tcell, M: Mode, R, E, F>(cfg: &Config<M>, mut f: F) -> Result<R, E>
where
    F: FnMut(&mut Tx<'tcell, M>) -> Result<R, E>,
{
    with_tx(|tx| tx.run(cfg, &mut f))
}

/// Sets up the calling thread's auxiliary thread for `placement` (if it has
/// none yet) and says where it runs, or why there is none. Transactions run
/// with an [assisted](crate::Assisted) configuration do this themselves on their first run (and
/// then run plain when it fails); call it first to learn the outcome.
/// The first placement that succeeds stays for the thread's life.
///
/// # Errors
///
/// Why the thread gets no auxiliary (kept: later calls give the same answer).
///
/// # Examples
///
/// ```
/// use skelaff_stm::{assist_pairing, atomically_with, Assist, AuxPlacement, Config, TVar, TxOps};
///
/// let cfg = Config::new().assisted().placement(AuxPlacement::Anywhere);
/// std::thread::spawn(move || {
///     assert!(assist_pairing(AuxPlacement::Anywhere).is_ok());
///     let v = TVar::new(1u32);
///     assert_eq!(atomically_with(&cfg, |tx| tx.update(&v, |x| x + 1)), 2);
/// })
/// .join()
/// .unwrap();
/// ```
pub fn assist_pairing(placement: AuxPlacement) -> Result<AssistPairing, AssistUnavailable> {
    with_tx(|tx| tx.assistant(placement))
}

/// Fault injection for tests, only with the `fault-injection` feature:
/// every auxiliary thread sleeps this many milliseconds per round (0: none;
/// `u64::MAX`: panics).
#[cfg(feature = "fault-injection")]
pub fn inject_aux_fault(millis: u64) {
    super::assist::set_fault(millis);
}
