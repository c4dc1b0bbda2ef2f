//! Running transactions alone: the solo gate.
//!
//! A thread that runs transactions while no other thread does (a worklist
//! run with one worker) pays for a protocol it does not need: every read
//! checks a lock and is logged, every commit locks its words, advances
//! the global clock and validates. [`enter`] gives the calling thread the
//! solo gate: once it returns, no other thread's transaction runs until
//! the [`SoloGuard`] is dropped, and the calling thread's transactions in
//! [`Solo`](crate::Solo) mode run the solo protocol: reads load the word
//! and check no lock or version, and record nothing; writes store the new
//! value in place at once, logging the old one (an undo log); a commit
//! forgets the log, without locking anything, moving the clock or
//! validating. Conflicts cannot happen; a user error or a panic puts the
//! logged words back to their old values, newest first.
//!
//! Other threads lose nothing but time: a transaction (or a
//! [`TVar::store`](crate::TVar::store)) that starts on another thread
//! while the gate is held waits at its start, and the holder, seeing it
//! wait, gives the gate back before its own next transaction and runs the
//! rest plain ([`SoloGuard::given_back`] says so). A `retry` in a solo
//! transaction gives the gate back too (nobody else could change what it
//! waits for), and runs again plain, which then waits.
//!
//! Epoch guards and non-transactional loads ([`TVar::load`](crate::TVar::load))
//! are not held up, so they see a solo transaction's writes as it makes
//! them, including writes that a user error or a panic will undo. That is
//! safe: every value is one some transaction wrote, and an object a solo
//! transaction allocated and then rolled back is handed to the reclaimer
//! (not dropped at once), so an epoch-guard reader that followed a link to
//! it keeps it alive. A [`TVar::store`](crate::TVar::store) made inside a
//! solo transaction to a word that transaction also wrote is undone with
//! it if it rolls back.
//!
//! Entering waits for the transactions running on other threads to end,
//! after a process-wide barrier (`membarrier`, a few microseconds): take
//! the gate once for many transactions, not per transaction.
//!
//! # Examples
//!
//! ```
//! use skelaff_stm::{atomically_with, solo, Config, Solo, TVar, TxOps};
//!
//! let (a, b) = (TVar::new(10u64), TVar::new(0u64));
//! let cfg = Config::new().mode::<Solo>();
//! {
//!     let guard = solo::enter()?;
//!     for _ in 0..10 {
//!         // Solo: no lock checks, no locks, no validation.
//!         atomically_with(&cfg, |tx| {
//!             let x = tx.read(&a)?;
//!             tx.write(&a, x - 1)?;
//!             tx.update(&b, |y| y + 1)
//!         });
//!     }
//!     assert!(!guard.given_back());
//! } // the gate opens here
//! assert_eq!((a.load(), b.load()), (0, 10));
//! # Ok::<(), skelaff_stm::solo::SoloError>(())
//! ```
//!
//! Without the gate, a `Solo`-mode transaction is a plain one; a second
//! thread cannot take the gate while one holds it:
//!
//! ```
//! use skelaff_stm::solo::{self, SoloError};
//!
//! let guard = solo::enter()?;
//! assert_eq!(solo::enter().unwrap_err(), SoloError::AlreadyHeld);
//! let other = std::thread::spawn(|| solo::enter().map(drop)).join().unwrap();
//! assert_eq!(other.unwrap_err(), SoloError::Taken);
//! drop(guard);
//! # Ok::<(), SoloError>(())
//! ```
//!
//! Two things wait where the plain protocol would not: code on the
//! holder's thread that waits for another thread's transaction (that one
//! waits for the gate, which the holder gives back only at its next
//! transaction's start, or when [`give_back`] is called: call it first, as
//! the worklist does before a nested run), and a guard that is leaked
//! (`mem::forget`), which keeps the gate closed for good.
//!
//! A solo attempt records no read set, so it cannot be validated once
//! others have run: when it gives the gate back midway ([`give_back`], or
//! its guard dropped inside it), its in-place writes are undone before the
//! gate opens, and its next access (or its commit) aborts it; the
//! transaction runs again, plain.

use core::marker::PhantomData;

use crate::runtime::solo::{self as gate, Refusal};
use crate::runtime::thread::{in_transaction, this_owner};

/// Why [`enter`] did not give the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SoloError {
    /// `enter` was called inside a transaction (take the gate between
    /// transactions).
    #[error("solo::enter called inside a transaction; take the solo gate between transactions")]
    InTransaction,
    /// The calling thread already holds a [`SoloGuard`].
    #[error("this thread already holds the solo gate")]
    AlreadyHeld,
    /// Another thread holds the gate; run plain, or try again after it is
    /// dropped.
    #[error("another thread holds the solo gate")]
    Taken,
    /// The process-wide barrier the gate needs could not be made (the
    /// kernel refused `membarrier`).
    #[error("the solo gate needs a process-wide memory barrier, and the kernel refused membarrier")]
    NoBarrier,
}

/// The solo gate, held by the calling thread until dropped (see the
/// [module docs](self)). Not `Send`: the gate belongs to the thread that
/// entered it.
#[derive(Debug)]
#[must_use = "the gate opens again when the guard is dropped"]
pub struct SoloGuard {
    _not_send: PhantomData<*mut ()>,
}

/// Takes the solo gate for the calling thread: closes it to other threads'
/// transactions, then waits until those running end.
///
/// # Errors
///
/// [`SoloError`]: inside a transaction, already held by this thread or by
/// another, or no barrier.
pub fn enter() -> Result<SoloGuard, SoloError> {
    if in_transaction() {
        return Err(SoloError::InTransaction);
    }
    gate::enter(this_owner()).map_err(|r| match r {
        Refusal::AlreadyHeld => SoloError::AlreadyHeld,
        Refusal::Taken => SoloError::Taken,
        Refusal::NoBarrier => SoloError::NoBarrier,
    })?;
    Ok(SoloGuard { _not_send: PhantomData })
}

/// Gives the calling thread's gate back now, if it holds it: its
/// transactions run plain from here on. Called from inside a solo
/// transaction, it first puts back the words that transaction wrote in
/// place, and the transaction's attempt aborts at its next access or at
/// its commit, then runs again, plain (its reads were not recorded, so
/// they cannot be validated).
/// Call it before code on this thread waits for transactions of other
/// threads (a nested run of the worklist does), which would otherwise wait
/// for the gate. The guard stays; [`SoloGuard::given_back`] then says so.
///
/// # Aborts
///
/// If called by a global allocator while the STM grows the calling
/// thread's undo log (a solo write that allocates): undoing the log then
/// would touch it while the STM is changing it, so the process aborts,
/// with a message on standard error.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, atomically_with, solo, Config, Solo, TVar, TxOps};
///
/// let v = TVar::new(1u64);
/// let gate = solo::enter()?;
/// let mut first = true;
/// let seen = atomically_with(&Config::new().mode::<Solo>(), |tx| {
///     let x = tx.read(&v)?;
///     if first {
///         first = false;
///         solo::give_back();
///         // Another thread's transaction can run now (it would wait otherwise).
///         std::thread::scope(|s| s.spawn(|| atomically(|tx| tx.update(&v, |y| y + 10))).join().unwrap());
///     }
///     tx.write(&v, x + 1)?;
///     Ok(x)
/// });
/// // The first attempt read 1 before the other thread's update: it could
/// // not commit (its reads were not recorded), and the transaction ran
/// // again, plain.
/// assert_eq!((seen, v.load()), (11, 12));
/// assert!(gate.given_back());
/// # Ok::<(), solo::SoloError>(())
/// ```
pub fn give_back() {
    gate::give_back();
}

impl SoloGuard {
    /// Whether the gate was given back before the guard's end (another
    /// thread wanted to run a transaction, or a solo transaction waited in
    /// `retry`): the transactions after that ran plain.
    pub fn given_back(&self) -> bool {
        gate::given_back()
    }
}

impl Drop for SoloGuard {
    fn drop(&mut self) {
        gate::leave();
    }
}
