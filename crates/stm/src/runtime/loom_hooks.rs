//! Hooks for the loom models (loom builds only): fault injection that shows
//! the models detect a missing announcement fence, a collection on demand,
//! and the end of a model thread.

use super::registry::START_FENCE_REMOVED;
use super::solo::{GATE_CHECK_REMOVED, SOLO_ALLOCS_DROPPED};
use super::thread::{with_thread, with_tx};

/// Runs `f` (a loom model) with the SeqCst fence after an announcement —
/// a transaction's first attempt, an outermost epoch guard — removed.
///
/// The switch covers the models that `f` runs on the calling test thread
/// and no others (loom runs a model's threads as coroutines on the thread
/// that calls it).
pub fn without_start_fence<R>(f: impl FnOnce() -> R) -> R {
    with_fault(&START_FENCE_REMOVED, f)
}

/// Runs `f` (a loom model) with the solo gate's check at a transaction's
/// start removed: transactions of other threads run beside a solo one.
/// Covers the models `f` runs on the calling test thread, as
/// [`without_start_fence`].
pub fn without_solo_gate<R>(f: impl FnOnce() -> R) -> R {
    with_fault(&GATE_CHECK_REMOVED, f)
}

/// Runs `f` (a loom model) with a rolled-back solo attempt dropping the
/// objects it allocated at once, as a plain attempt does, instead of
/// handing them to the reclaimer. Covers the models `f` runs on the
/// calling test thread, as [`without_start_fence`].
pub fn solo_allocs_dropped_at_once<R>(f: impl FnOnce() -> R) -> R {
    with_fault(&SOLO_ALLOCS_DROPPED, f)
}

/// Runs `f` with the fault switch `flag` on, and off again after (also
/// when `f` unwinds: loom reports a failure by panicking).
fn with_fault<R>(flag: &'static std::thread::LocalKey<core::cell::Cell<bool>>, f: impl FnOnce() -> R) -> R {
    struct Restore(&'static std::thread::LocalKey<core::cell::Cell<bool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            self.0.with(|c| c.set(false));
        }
    }
    flag.with(|c| c.set(true));
    let _restore = Restore(flag);
    f()
}

/// What the calling thread's exit does to the STM, now: its descriptor
/// goes (its garbage is handed over to the orphans) and its registry record
/// is given back — the code of the thread-local's destructor.
///
/// A model thread calls it last, the main thread included. Loom runs
/// thread-local destructors only after the thread's `join` has returned,
/// and drops its statics (the registry) before the main thread's, so
/// without it a model could end before its threads had left the STM.
///
/// # Panics
///
/// Inside a transaction.
pub fn exit_thread() {
    with_thread(|t| t.leave());
}

/// Collects the calling thread's garbage now (adopting the orphans), as a
/// commit does once enough garbage waits: for the end of a model, where
/// the doubling threshold would leave the last objects waiting.
///
/// # Panics
///
/// Inside a transaction.
pub fn collect_garbage() {
    with_tx(|tx| tx.collect_garbage());
}
