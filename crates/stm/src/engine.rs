//! The process's one engine: the global version clock every transaction
//! runs on, and what may be asked of it from outside a transaction.
//!
//! Under `cfg(loom)` the engine is created afresh in each model execution
//! (a loom `lazy_static`), so the models run the runtime's own code.
//!
//! There is no lock table: every transactional word carries its own
//! versioned lock beside it ([`VWord`](crate::raw::VWord)).

#[cfg(doc)]
use crate::raw::ClockPolicy;
use crate::raw::Engine;

#[cfg(not(loom))]
static ENGINE: Engine = Engine::new();

#[cfg(loom)]
loom::lazy_static! {
    static ref ENGINE: Engine = Engine::new();
}

/// The global engine.
#[inline(always)]
pub(crate) fn engine() -> &'static Engine {
    &ENGINE
}

/// The global clock: under the default [`ClockPolicy::Commits`] it counts
/// the writing commits (and non-transactional stores and garbage
/// collections) so far; commits of threads set to [`ClockPolicy::Readers`]
/// leave it to the transactions that read their words.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, clock, TVar, TxOps};
///
/// let v = TVar::new(0u8);
/// let before = clock();
/// atomically(|tx| tx.write(&v, 1));
/// assert!(clock() > before); // the default: the commit moved it
/// ```
pub fn clock() -> u64 {
    engine().now()
}
