//! Bank: accounts, concurrent transfers, an auditor. The total never
//! changes, inside any transaction or after; no update is lost.
#![cfg(not(loom))]

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use skelaff_stm::{Assisted, AuxPlacement, Config, ContentionManager, Mode, TVar, Throttle, TxOps, atomically_with};

const ACCOUNTS: usize = 64;
const INITIAL: u64 = 1_000;
const THREADS: usize = 4;
const TRANSFERS: usize = 1_000_000;

struct Account {
    balance: TVar<u64>,
    /// Incremented by every transfer that touches the account: a lost
    /// update shows as a missing count.
    touched: TVar<u64>,
}

/// Assisted mode (an auxiliary thread per transaction thread), unpinned so
/// that it runs on any machine, with every throttling lever or none.
fn assisted(throttle: Throttle) -> Config<Assisted> {
    Config::new().assisted().placement(AuxPlacement::Anywhere).throttle(throttle)
}

fn run_bank<M: Mode>(cfg: Config<M>, transfers: usize) {
    let accounts: Vec<Account> =
        (0..ACCOUNTS).map(|_| Account { balance: TVar::new(INITIAL), touched: TVar::new(0) }).collect();
    let done = AtomicBool::new(false);
    let audits = AtomicU64::new(0);
    let moved = AtomicU64::new(0);
    std::thread::scope(|s| {
        let (accounts_a, done_a, audits_a) = (&accounts, &done, &audits);
        s.spawn(move || {
            loop {
                let stop = done_a.load(Ordering::Acquire);
                let sum = atomically_with(&cfg, |tx| {
                    let mut sum = 0;
                    for a in accounts_a {
                        sum += tx.read(&a.balance)?;
                    }
                    // Checked inside the transaction: a doomed attempt must
                    // never see a broken total either.
                    assert_eq!(sum, INITIAL * ACCOUNTS as u64, "auditor saw a broken total");
                    Ok(sum)
                });
                assert_eq!(sum, INITIAL * ACCOUNTS as u64);
                audits_a.fetch_add(1, Ordering::Relaxed);
                if stop {
                    break;
                }
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (accounts, moved) = (&accounts, &moved);
                s.spawn(move || {
                    let mut x = 0x1234_5678_9abc_def1u64 ^ ((t as u64) << 40);
                    for _ in 0..transfers / THREADS {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let from = (x % ACCOUNTS as u64) as usize;
                        let to = ((x >> 20) % (ACCOUNTS as u64 - 1)) as usize;
                        let to = if to >= from { to + 1 } else { to };
                        let amount = (x >> 40) % 50;
                        let ok = atomically_with(&cfg, |tx| {
                            let f = tx.read(&accounts[from].balance)?;
                            tx.update(&accounts[from].touched, |c| c + 1)?;
                            tx.update(&accounts[to].touched, |c| c + 1)?;
                            if f < amount {
                                return Ok(false);
                            }
                            tx.write(&accounts[from].balance, f - amount)?;
                            tx.update(&accounts[to].balance, |b| b + amount)?;
                            Ok(true)
                        });
                        if ok {
                            moved.fetch_add(amount, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        let panicked = workers.into_iter().map(|w| w.join()).filter(Result::is_err).count();
        done.store(true, Ordering::Release);
        assert_eq!(panicked, 0, "a transfer thread panicked");
    });
    let total: u64 = accounts.iter().map(|a| a.balance.load()).sum();
    assert_eq!(total, INITIAL * ACCOUNTS as u64, "money was created or destroyed");
    let touched: u64 = accounts.iter().map(|a| a.touched.load()).sum();
    assert_eq!(touched, 2 * (transfers / THREADS * THREADS) as u64, "an update was lost");
    assert!(moved.load(Ordering::Relaxed) > 0, "no transfer succeeded");
    assert!(audits.load(Ordering::Relaxed) > 0, "the auditor never ran");
    common::assert_unlocked(accounts.iter().map(|a| &a.balance));
    common::assert_unlocked(accounts.iter().map(|a| &a.touched));
}

#[test]
fn a_million_transfers_keep_the_total() {
    run_bank(Config::new(), TRANSFERS);
}

#[test]
fn transfers_with_backoff_keep_the_total() {
    run_bank(Config::new().contention(ContentionManager::BACKOFF), TRANSFERS / 10);
}

#[test]
fn assisted_transfers_keep_the_total() {
    run_bank(assisted(Throttle::ALL), TRANSFERS / 20);
}

#[test]
fn assisted_transfers_without_throttling_keep_the_total() {
    run_bank(assisted(Throttle::NONE), TRANSFERS / 50);
}
