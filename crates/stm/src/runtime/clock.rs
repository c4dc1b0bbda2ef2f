//! The calling thread's clock policy: whether its writing commits move the
//! global clock ([`ClockPolicy`]). A module of its own, below `tx` (which
//! reads it at each writing commit) and beside `thread` (which holds the
//! rest of the thread's state).

use core::cell::Cell;

use crate::raw::ClockPolicy;

#[cfg(not(loom))]
std::thread_local! {
    /// Apart from the thread's `ThreadState`, which has a destructor and
    /// so a state to check at each access: a plain thread-local word, one
    /// load for the commit that reads it.
    static CLOCK: Cell<ClockPolicy> = const { Cell::new(ClockPolicy::Commits) };
}

#[cfg(loom)]
loom::thread_local! {
    static CLOCK: Cell<ClockPolicy> = Cell::new(ClockPolicy::Commits);
}

/// Sets whether the calling thread's writing commits move the global clock
/// (see [`ClockPolicy`]); returns the policy it had. Every thread starts
/// with [`ClockPolicy::Commits`]. Threads of both policies may run side by
/// side, and the setting may change at any time: inside a transaction, it
/// applies from that transaction's commit on.
///
/// A thread's setting, not a transaction's: a writing commit reads it
/// with one thread-local load, a transaction pays nothing to carry it, and
/// code that runs transactions on worker threads sets it once per thread (as
/// [`skelaff_worklist`'s `Builder::clock`](https://docs.rs/skelaff-worklist) does).
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically, clock, set_thread_clock, ClockPolicy, TVar, TxOps};
///
/// let v = TVar::new(0u64);
/// let before = set_thread_clock(ClockPolicy::Readers);
/// assert_eq!(before, ClockPolicy::Commits);
/// let c = clock();
/// atomically(|tx| tx.write(&v, 1));
/// assert_eq!(clock(), c); // this thread's commits leave the clock alone
/// set_thread_clock(before);
/// assert_eq!(atomically(|tx| tx.read(&v)), 1); // a reader moved it up
/// assert!(clock() > c);
/// ```
pub fn set_thread_clock(policy: ClockPolicy) -> ClockPolicy {
    CLOCK.with(|c| c.replace(policy))
}

/// The calling thread's clock policy ([`set_thread_clock`]).
#[inline]
pub fn thread_clock() -> ClockPolicy {
    CLOCK.with(Cell::get)
}
