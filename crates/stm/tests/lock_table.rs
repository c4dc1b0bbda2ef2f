//! The lock table is backed by real pages once the first transaction has
//! run (see `prefault_lock_table` in `runtime.rs`): commits in a parallel
//! run must not take write-protect faults on the zero page, each of which
//! flushes every other CPU's TLB.
//!
//! Its own test binary: the first transaction of the process happens here.

use skelaff_stm::{LOCK_TABLE_SIZE, TVar, TxOps, atomically};

/// Resident memory of this process, in bytes (Linux's `/proc`).
fn resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 =
        status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kb * 1024)
}

#[test]
fn the_first_transaction_pages_in_the_whole_lock_table() {
    let Some(before) = resident() else {
        eprintln!("no /proc/self/status: resident memory cannot be read here");
        return;
    };
    let v = TVar::new(1u64);
    atomically(|tx| tx.update(&v, |x| x + 1));
    let after = resident().expect("read before, so readable now");
    let table = (LOCK_TABLE_SIZE * 8) as u64;
    // Everything else the first transaction allocates is a few pages.
    assert!(
        after.saturating_sub(before) >= table - table / 16,
        "resident memory grew by {} bytes, the lock table is {table}",
        after.saturating_sub(before)
    );
    assert_eq!(atomically(|tx| tx.read(&v)), 2);
}
