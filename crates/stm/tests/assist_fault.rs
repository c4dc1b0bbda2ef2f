//! Assisted mode with a faulty auxiliary thread: one that sleeps for long
//! stretches, and one that panics. The application threads must neither
//! hang nor commit a read set nobody validated. One test function: the
//! fault is injected process-wide.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use skelaff_stm::{AuxPlacement, Config, Mode, TVar, Throttle, TxOps, atomically_with};

const ACCOUNTS: usize = 4;
const INITIAL: u64 = 100;

/// Two threads move money between four accounts (many conflicts: a commit
/// whose stale reads went unvalidated would create or destroy money, or
/// lose a `touched` count), while a third sums the accounts.
fn transfers<M: Mode>(cfg: &Config<M>, per_thread: u64) {
    let balances: Vec<TVar<u64>> = (0..ACCOUNTS).map(|_| TVar::new(INITIAL)).collect();
    let touched = TVar::new(0u64);
    let broken = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (balances, touched) = (&balances, &touched);
            s.spawn(move || {
                for i in 0..per_thread {
                    let from = ((i + t) % ACCOUNTS as u64) as usize;
                    let to = (from + 1 + (i % 3) as usize) % ACCOUNTS;
                    atomically_with(cfg, |tx| {
                        let f = tx.read(&balances[from])?;
                        let amount = f.min(7);
                        tx.write(&balances[from], f - amount)?;
                        tx.update(&balances[to], |b| b + amount)?;
                        tx.update(touched, |c| c + 1)
                    });
                }
            });
        }
        let (balances, broken) = (&balances, &broken);
        s.spawn(move || {
            for _ in 0..per_thread {
                let sum = atomically_with(cfg, |tx| {
                    let mut sum = 0;
                    for b in balances {
                        sum += tx.read(b)?;
                    }
                    Ok(sum)
                });
                if sum != INITIAL * ACCOUNTS as u64 {
                    broken.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    });
    assert_eq!(broken.load(Ordering::Relaxed), 0, "a reader saw a broken total");
    let total: u64 = balances.iter().map(TVar::load).sum();
    assert_eq!(total, INITIAL * ACCOUNTS as u64, "money was created or destroyed");
    assert_eq!(touched.load(), 2 * per_thread, "an update was lost");
}

#[test]
fn a_sleeping_or_panicking_auxiliary_neither_hangs_nor_lets_a_stale_commit_through() {
    let cfg = Config::new().assisted().placement(AuxPlacement::Anywhere).throttle(Throttle::ALL);
    // Healthy auxiliaries first: the same check passes.
    transfers(&cfg, 20_000);

    // Every auxiliary sleeps 20 ms per round: each commit gives up waiting
    // after its budget and validates itself.
    skelaff_stm::inject_aux_fault(20);
    let start = Instant::now();
    transfers(&cfg, 5_000);
    // Generous: 15 000 transactions that each waited for 20 ms would take
    // minutes; a hang would never end.
    assert!(start.elapsed() < Duration::from_secs(120), "assisted transactions waited for a sleeping auxiliary");

    // Auxiliaries started now panic at once: their threads are gone.
    skelaff_stm::inject_aux_fault(u64::MAX);
    transfers(&cfg, 5_000);
    skelaff_stm::inject_aux_fault(0);
}
