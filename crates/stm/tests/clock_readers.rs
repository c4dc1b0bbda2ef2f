//! Threads whose commits leave the clock alone (`ClockPolicy::Readers`),
//! alone and beside threads whose commits move it.
//! A binary of its own, its tests one at a time: a thread of another test
//! descheduled inside a transaction (this runs on machines of two cores)
//! would hold up the garbage test's frees.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use skelaff_stm::{
    AuxPlacement, ClockPolicy, Config, Mode, ReadOnly, TPtr, TVar, Throttle, TxOps, atomically, atomically_with, clock,
    set_thread_clock, thread_clock,
};

static DROPPED: AtomicUsize = AtomicUsize::new(0);

/// Counts its drops in `DROPPED`.
struct Counted;

impl Drop for Counted {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

const READERS: ClockPolicy = ClockPolicy::Readers;
const COMMITS: ClockPolicy = ClockPolicy::Commits;

#[test]
fn a_readers_commit_leaves_the_clock_and_its_reader_moves_it() {
    let _serial = serial();
    let v = TVar::new(0u64);
    assert_eq!(thread_clock(), COMMITS, "every thread starts with the default");
    let before = clock();
    assert_eq!(set_thread_clock(READERS), COMMITS);
    atomically(|tx| tx.write(&v, 1));
    assert_eq!(clock(), before, "the commit left the clock alone");
    assert_eq!(set_thread_clock(COMMITS), READERS);
    assert_eq!(atomically(|tx| tx.read(&v)), 1);
    assert_eq!(clock(), before + 1, "the reader moved it up to the word's version");
    atomically(|tx| tx.write(&v, 2));
    assert_eq!(clock(), before + 2, "a default commit moves it");
    // Set inside a transaction, the policy applies from its commit on.
    atomically(|tx| {
        set_thread_clock(READERS);
        tx.write(&v, 3)
    });
    set_thread_clock(COMMITS);
    assert_eq!(clock(), before + 2);
}

const ACCOUNTS: usize = 32;
const INITIAL: u64 = 100;

/// Two threads move money between accounts while a third sums them inside
/// its transactions (a broken total, even in a doomed attempt, panics);
/// every account also counts the transfers that touched it (a lost update
/// shows as a missing count). The movers commit with `movers`' clock
/// policy, the auditor (read-only) with `auditor`'s.
fn bank<M: Mode>(cfg: &Config<M>, movers: ClockPolicy, auditor: ClockPolicy, transfers: usize) {
    let balances: Vec<TVar<u64>> = (0..ACCOUNTS).map(|_| TVar::new(INITIAL)).collect();
    let touched: Vec<TVar<u64>> = (0..ACCOUNTS).map(|_| TVar::new(0)).collect();
    let done = AtomicBool::new(false);
    let moved = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let auditor = s.spawn(|| {
            set_thread_clock(auditor);
            let mut audits = 0u64;
            while !done.load(Ordering::Acquire) || audits == 0 {
                let sum = atomically_with(cfg, |tx| {
                    let mut sum = 0;
                    for b in &balances {
                        sum += tx.read(b)?;
                    }
                    assert_eq!(sum, INITIAL * ACCOUNTS as u64, "the auditor saw a broken total");
                    Ok(sum)
                });
                assert_eq!(sum, INITIAL * ACCOUNTS as u64);
                audits += 1;
            }
            audits
        });
        let movers: Vec<_> = (0..2u64)
            .map(|t| {
                let (balances, touched, moved) = (&balances, &touched, &moved);
                s.spawn(move || {
                    set_thread_clock(movers);
                    // xorshift64: any spread of pairs will do.
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (t + 1);
                    for _ in 0..transfers {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let (from, to) = ((x % ACCOUNTS as u64) as usize, ((x >> 32) % ACCOUNTS as u64) as usize);
                        let did = atomically_with(cfg, |tx| {
                            let f = tx.read(&balances[from])?;
                            if f == 0 || from == to {
                                return Ok(false);
                            }
                            tx.write(&balances[from], f - 1)?;
                            tx.update(&balances[to], |x| x + 1)?;
                            tx.update(&touched[from], |x| x + 1)?;
                            tx.update(&touched[to], |x| x + 1)?;
                            Ok(true)
                        });
                        if did {
                            moved.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for m in movers {
            m.join().expect("a mover panicked");
        }
        done.store(true, Ordering::Release);
        assert!(auditor.join().expect("the auditor panicked") > 0);
    });
    let total: u64 = balances.iter().map(TVar::load).sum();
    assert_eq!(total, INITIAL * ACCOUNTS as u64);
    // Each transfer that moved money counted twice, once per account, and
    // every count landed: the counts sum to twice the transfers that moved.
    let counts: u64 = touched.iter().map(TVar::load).sum();
    assert_eq!(counts, 2 * moved.load(Ordering::Relaxed) as u64);
}

#[test]
fn transfers_keep_the_total_under_every_mix_of_policies() {
    let _serial = serial();
    for (movers, auditor) in [(READERS, READERS), (READERS, COMMITS), (COMMITS, READERS)] {
        bank(&Config::new(), movers, auditor, 50_000);
    }
}

#[test]
fn transfers_keep_the_total_with_read_only_auditors() {
    let _serial = serial();
    // The movers write, so their `ReadOnly` attempts roll back and run
    // again logged; the auditor's stay read-only and restart on a newer word.
    bank(&Config::new().mode::<ReadOnly>(), READERS, READERS, 50_000);
}

#[test]
fn assisted_transfers_keep_the_total() {
    let _serial = serial();
    // The auxiliary's verdict covers commits up to a clock value, which
    // `Readers` commits do not move: the application threads validate
    // themselves.
    let cfg = Config::new().assisted().placement(AuxPlacement::Anywhere).throttle(Throttle::ALL);
    bank(&cfg, READERS, COMMITS, 5_000);
}

/// Frees `n` objects, each in a transaction of its own (allocated by the
/// one before), with clock policy `policy` and no read: nothing in them
/// moves the clock.
fn free_objects(n: usize, policy: ClockPolicy) {
    let before = set_thread_clock(policy);
    let sink = TVar::new(0u64);
    let mut held: Option<TPtr<Counted>> = None;
    for i in 0..=n as u64 {
        let old = held.take();
        held = Some(atomically(|tx| {
            if let Some(p) = old {
                // SAFETY: `p` was allocated by a committed transaction of
                // this loop and never published: only this thread knows it,
                // and it is freed once (`old` was taken out of `held`).
                unsafe { tx.free(p)? };
            }
            tx.write(&sink, i)?;
            tx.alloc(Counted)
        }));
    }
    if let Some(p) = held {
        // SAFETY: as above: the last object, known only here.
        atomically(|tx| unsafe { tx.free(p) });
    }
    set_thread_clock(before);
}

/// Garbage is freed although no commit moves the clock: a collection
/// stamps by moving the clock on, so a transaction that starts after it is
/// newer than the stamp. Another thread holds a transaction open while
/// this one frees objects (so none can be dropped yet), then ends it and
/// opens a new one; the objects freed before must then be dropped at this
/// thread's next collections. Had the stamp been read without moving the
/// clock, the new transaction would start at the stamp, and none would be.
#[test]
fn garbage_is_freed_when_only_readers_commits_run() {
    let _serial = serial();
    const FIRST: usize = 4096;
    let (open, phase) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let before = DROPPED.load(Ordering::Relaxed);
    let dropped_while_open = std::thread::scope(|s| {
        s.spawn(|| {
            for round in 1..=2 {
                atomically(|_| {
                    open.store(round, Ordering::Release);
                    while phase.load(Ordering::Acquire) < round {
                        std::hint::spin_loop();
                    }
                    Ok(())
                });
            }
        });
        let wait_open = |round| {
            while open.load(Ordering::Acquire) < round {
                std::hint::spin_loop();
            }
        };
        wait_open(1);
        free_objects(FIRST, READERS);
        let dropped_while_open = DROPPED.load(Ordering::Relaxed) - before;
        phase.store(1, Ordering::Release);
        wait_open(2);
        // Enough frees for the next collections (the threshold doubles).
        free_objects(4 * FIRST, READERS);
        phase.store(2, Ordering::Release);
        dropped_while_open
    });
    assert_eq!(dropped_while_open, 0, "an object was dropped while a transaction older than its free ran");
    let freed = DROPPED.load(Ordering::Relaxed) - before;
    // The objects of the first batch that a collection stamped before the
    // second transaction opened: at least the first collection's (1024, the
    // largest first threshold).
    assert!(freed >= 1024, "only {freed} freed objects were dropped, of {FIRST} freed first");
}
