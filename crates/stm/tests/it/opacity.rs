//! Opacity: transactions check a cross-variable invariant inside their
//! bodies and never see it broken, while writers change every variable.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use skelaff_stm::{Assisted, AuxPlacement, Config, Mode, TVar, Throttle, TxOps, atomically_with};

const VARS: usize = 8;
const READER_TXS: u64 = 1_000_000;
const WRITER_TXS: u64 = 200_000;

/// Assisted mode (an auxiliary thread per transaction thread), unpinned so
/// that it runs on any machine, with every throttling lever or none.
fn assisted(throttle: Throttle) -> Config<Assisted> {
    Config::new().assisted().placement(AuxPlacement::Anywhere).throttle(throttle)
}

#[test]
fn no_transaction_ever_sees_a_broken_invariant() {
    broken_invariant_never_seen(&Config::new(), 1);
}

/// Read-only mode everywhere: the readers record no read set and restart
/// on a newer word; every writer's first attempt is rolled back when it
/// writes, and it runs again recording its reads.
#[test]
fn no_read_only_transaction_ever_sees_a_broken_invariant() {
    broken_invariant_never_seen(&Config::new().read_only(), 2);
}

#[test]
fn no_assisted_transaction_ever_sees_a_broken_invariant() {
    broken_invariant_never_seen(&assisted(Throttle::ALL), 10);
    broken_invariant_never_seen(&assisted(Throttle::NONE), 20);
}

/// Runs `READER_TXS / scale` readers' and `WRITER_TXS / scale` writers'
/// transactions with `cfg`.
fn broken_invariant_never_seen<M: Mode>(cfg: &Config<M>, scale: u64) {
    let (reader_txs, writer_txs) = (READER_TXS / scale, WRITER_TXS / scale);
    // Invariant: every variable holds the same value, and `offset` is
    // always 0 (a = b) — a torn snapshot would index out of `table`.
    let vars: Vec<TVar<u64>> = (0..VARS).map(|_| TVar::new(0)).collect();
    let table = [7u64; 1];
    let violations = AtomicU64::new(0);
    let attempts = AtomicU64::new(0);
    let writers_done = AtomicBool::new(false);
    std::thread::scope(|s| {
        // Writer: bumps every variable in one transaction, in varying order.
        let (vars_w, done) = (&vars, &writers_done);
        s.spawn(move || {
            for i in 0..writer_txs {
                atomically_with(cfg, |tx| {
                    for j in 0..VARS {
                        let k = (j + i as usize) % VARS;
                        tx.update(&vars_w[k], |v| v + 1)?;
                    }
                    Ok(())
                });
            }
            done.store(true, Ordering::Relaxed);
        });
        // Readers: read the variables one by one and check on the way.
        for r in 0..2 {
            let (vars, table, violations, attempts) = (&vars, &table, &violations, &attempts);
            s.spawn(move || {
                for i in 0..reader_txs / 2 {
                    let sum = atomically_with(cfg, |tx| {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        let first = tx.read(&vars[(i as usize + r) % VARS])?;
                        let mut sum = 0;
                        for v in vars {
                            let x = tx.read(v)?;
                            if x != first {
                                violations.fetch_add(1, Ordering::Relaxed);
                            }
                            // Out of bounds unless x == first.
                            sum += table[(x.wrapping_sub(first)) as usize];
                        }
                        Ok(sum)
                    });
                    assert_eq!(sum, 7 * VARS as u64);
                }
            });
        }
    });
    assert!(writers_done.load(Ordering::Relaxed));
    assert_eq!(violations.load(Ordering::Relaxed), 0, "a running transaction saw an inconsistent snapshot");
    let final_values: Vec<u64> = vars.iter().map(TVar::load).collect();
    assert!(final_values.iter().all(|&v| v == writer_txs), "{final_values:?}");
    assert!(attempts.load(Ordering::Relaxed) >= reader_txs);
}

#[test]
fn a_doomed_traversal_cannot_loop() {
    doomed_traversal(&Config::new(), 100_000);
}

#[test]
fn a_doomed_read_only_traversal_cannot_loop() {
    doomed_traversal(&Config::new().read_only(), 50_000);
}

#[test]
fn a_doomed_assisted_traversal_cannot_loop() {
    doomed_traversal(&assisted(Throttle::ALL), 10_000);
}

fn doomed_traversal<M: Mode>(cfg: &Config<M>, rounds: u64) {
    // A ring of 4 indices that writers rotate; a reader follows `next`
    // links for exactly 4 steps and must come back to its start: a mixed
    // snapshot could produce a cycle that never returns.
    let next: Vec<TVar<u64>> = (0..4).map(|i| TVar::new((i + 1) % 4)).collect();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (next_w, stop_w) = (&next, &stop);
        s.spawn(move || {
            let mut perm = [0u64, 1, 2, 3];
            for round in 0..rounds {
                perm.rotate_left(1 + (round % 3) as usize);
                atomically_with(cfg, |tx| {
                    for i in 0..4 {
                        tx.write(&next_w[perm[i] as usize], perm[(i + 1) % 4])?;
                    }
                    Ok(())
                });
            }
            stop_w.store(true, Ordering::Relaxed);
        });
        let mut checked = 0u64;
        while !stop.load(Ordering::Relaxed) || checked < rounds {
            let back = atomically_with(cfg, |tx| {
                let mut at = 0u64;
                for _ in 0..4 {
                    at = tx.read(&next[at as usize])?;
                }
                Ok(at)
            });
            assert_eq!(back, 0, "the ring was seen broken");
            checked += 1;
        }
    });
}
