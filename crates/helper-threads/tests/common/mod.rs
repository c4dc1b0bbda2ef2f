//! Shared pieces of the helper-thread tests.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

use skelaff_worklist::RunReport;

/// The figures of helper `i` by name.
pub(crate) fn helper(report: &RunReport, i: usize) -> HashMap<String, u64> {
    report.helpers.per_helper[i].iter().cloned().collect()
}

/// Sum of figure `name` over every helper.
pub(crate) fn total(report: &RunReport, name: &str) -> u64 {
    report.helpers.per_helper.iter().flatten().filter(|(k, _)| k == name).map(|(_, v)| v).sum()
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
