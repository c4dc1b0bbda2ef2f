//! Shared pieces of the helper-thread tests.

use std::sync::mpsc;
use std::time::Duration;

use skelaff_worklist::{HelperFigures, RunReport};

/// The figures of helper `i`.
pub(crate) fn helper(report: &RunReport, i: usize) -> HelperFigures {
    report.helpers.per_helper[i].clone()
}

/// Every helper's figures summed.
pub(crate) fn total(report: &RunReport) -> HelperFigures {
    report.helpers.total().expect("at least one helper")
}

/// Runs `f` on another thread and fails if it has not returned within
/// `limit` (a deadlock would otherwise hang the test binary).
pub(crate) fn within<T: Send + 'static>(limit: Duration, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} did not return within {limit:?}: deadlock"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked (see above)"),
    }
}
