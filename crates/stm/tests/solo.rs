//! The solo gate (`skelaff_stm::solo`): what a solo transaction does, and
//! that no other thread's transaction or store runs beside one.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use skelaff_stm::solo::{self, SoloError};
use skelaff_stm::{Config, Solo, Stats, TMap, TVar, TxError, TxOps, atomically, atomically_with, try_atomically_with};

/// The gate is one per process and the tests of this file share a process:
/// each test holds this lock, so none runs transactions beside another's.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn solo_cfg() -> Config<Solo> {
    Config::new().mode::<Solo>()
}

#[test]
fn solo_transactions_compute_what_plain_ones_do() {
    let _serial = serial();
    let map = TMap::new();
    let total = TVar::new(0u64);
    let _ = Stats::take_thread();
    {
        let _gate = solo::enter().expect("the gate is free");
        for k in 0..1000u64 {
            atomically_with(&solo_cfg(), |tx| {
                map.insert(tx, k % 97, k)?;
                let t = tx.read(&total)?;
                tx.write(&total, t + k)?;
                // Read-after-write inside a solo attempt sees the value written in place.
                assert_eq!(tx.read(&total)?, t + k);
                Ok(())
            });
        }
    }
    assert_eq!(total.load(), (0..1000).sum::<u64>());
    let entries = atomically(|tx| map.to_vec(tx));
    assert_eq!(entries.len(), 97);
    for (k, v) in entries {
        assert_eq!(v, (0..1000u64).filter(|x| x % 97 == k).max().unwrap());
    }
    let s = Stats::take_thread();
    assert_eq!(s.commits, 1001);
    assert!(s.read_set_total >= 2000, "solo reads are counted: {}", s.read_set_total);
    assert_eq!(s.aborts.iter().sum::<u64>(), 0);
}

#[test]
fn a_user_error_or_a_panic_in_a_solo_transaction_writes_nothing() {
    let _serial = serial();
    let a = TVar::new(1u64);
    let gate = solo::enter().expect("the gate is free");
    let r: Result<(), &str> = try_atomically_with(&solo_cfg(), |tx| {
        tx.write(&a, 2).map_err(|_| "tx")?;
        Err("no")
    });
    assert_eq!(r, Err("no"));
    assert_eq!(a.load(), 1);
    let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        atomically_with(&solo_cfg(), |tx| {
            tx.write(&a, 3)?;
            panic!("inside");
            #[allow(unreachable_code)]
            Ok(())
        })
    }));
    assert!(p.is_err());
    assert_eq!(a.load(), 1);
    // Still solo after both.
    atomically_with(&solo_cfg(), |tx| tx.write(&a, 4));
    assert!(!gate.given_back());
    assert_eq!(a.load(), 4);
}

#[test]
fn entering_is_refused_inside_a_transaction_twice_or_beside_another_holder() {
    let _serial = serial();
    let r = atomically(|_| Ok(solo::enter().map(drop)));
    assert_eq!(r, Err(SoloError::InTransaction));
    let gate = solo::enter().expect("the gate is free");
    assert_eq!(solo::enter().map(drop), Err(SoloError::AlreadyHeld));
    let other = std::thread::spawn(|| solo::enter().map(drop)).join().unwrap();
    assert_eq!(other, Err(SoloError::Taken));
    drop(gate);
    let again = std::thread::spawn(|| solo::enter().map(drop)).join().unwrap();
    assert_eq!(again, Ok(()));
}

/// Two accounts whose sum is constant: a solo thread moves money between
/// them while another thread's plain transactions (and stores) check and
/// move it too. A plain transaction running beside a solo commit (which
/// stores its words without locks) would see a broken sum; with the gate
/// it waits, and the solo thread gives the gate back.
#[test]
fn no_transaction_or_store_runs_beside_a_solo_one() {
    let _serial = serial();
    const SUM: u64 = 1_000_000;
    let accounts = Arc::new([TVar::new(SUM / 2), TVar::new(SUM / 2), TVar::new(0u64)]);
    let stop = Arc::new(AtomicBool::new(false));
    let broken = Arc::new(AtomicU64::new(0));
    let given_back = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(2));
    let solo_thread = {
        let (accounts, stop, broken, given_back, start) =
            (accounts.clone(), stop.clone(), broken.clone(), given_back.clone(), start.clone());
        std::thread::spawn(move || {
            start.wait();
            let mut rounds = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let gate = solo::enter().expect("only this thread enters");
                for i in 0..200u64 {
                    atomically_with(&solo_cfg(), |tx| {
                        let (a, b) = (tx.read(&accounts[0])?, tx.read(&accounts[1])?);
                        if a + b != SUM {
                            broken.fetch_add(1, Ordering::Relaxed);
                        }
                        let m = i % 7 + 1;
                        let (from, to) = if a >= m { (0, 1) } else { (1, 0) };
                        let (f, t) = (tx.read(&accounts[from])?, tx.read(&accounts[to])?);
                        tx.write(&accounts[from], f - m)?;
                        tx.write(&accounts[to], t + m)
                    });
                }
                if gate.given_back() {
                    given_back.fetch_add(1, Ordering::Relaxed);
                }
                drop(gate);
                rounds += 1;
            }
            rounds
        })
    };
    start.wait();
    let until = Instant::now() + Duration::from_millis(600);
    let mut plain = 0u64;
    while Instant::now() < until {
        atomically(|tx| {
            let (a, b) = (tx.read(&accounts[0])?, tx.read(&accounts[1])?);
            if a + b != SUM {
                broken.fetch_add(1, Ordering::Relaxed);
            }
            let (from, to) = if a > b { (0, 1) } else { (1, 0) };
            let (f, t) = (tx.read(&accounts[from])?, tx.read(&accounts[to])?);
            tx.write(&accounts[from], f - 1)?;
            tx.write(&accounts[to], t + 1)
        });
        // A store waits for the gate as a transaction does.
        accounts[2].store(plain);
        plain += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = solo_thread.join().unwrap();
    assert_eq!(broken.load(Ordering::Relaxed), 0, "a transaction saw a half-committed transfer");
    assert_eq!(accounts[0].load() + accounts[1].load(), SUM);
    assert!(plain > 0 && rounds > 0, "both threads ran: {plain} plain, {rounds} solo rounds");
    assert!(given_back.load(Ordering::Relaxed) > 0, "the solo thread gave the gate back to the waiting one");
}

#[test]
fn a_solo_transaction_that_retries_gives_the_gate_back_and_waits() {
    let _serial = serial();
    let flag = Arc::new(TVar::new(0u64));
    let gate = solo::enter().expect("the gate is free");
    let setter = {
        let flag = flag.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            // Waits for the gate: the retrying solo transaction gives it back.
            atomically(|tx| tx.write(&flag, 7));
        })
    };
    let seen = atomically_with(&solo_cfg(), |tx| {
        let f = tx.read(&flag)?;
        if f == 0 {
            return Err(tx.retry());
        }
        Ok(f)
    });
    setter.join().unwrap();
    assert_eq!(seen, 7);
    assert!(gate.given_back());
}

#[test]
fn a_guard_dropped_inside_a_solo_transaction_opens_the_gate_at_its_end() {
    let _serial = serial();
    let a = TVar::new(0u64);
    let mut gate = Some(solo::enter().expect("the gate is free"));
    atomically_with(&solo_cfg(), |tx| {
        drop(gate.take());
        // Still solo until this transaction ends: no other thread can enter.
        let other = std::thread::scope(|s| s.spawn(|| solo::enter().map(drop)).join().unwrap());
        assert_eq!(other, Err(SoloError::Taken));
        tx.write(&a, 1)
    });
    let other = std::thread::spawn(|| solo::enter().map(drop)).join().unwrap();
    assert_eq!(other, Ok(()));
    assert_eq!(a.load(), 1);
}

#[test]
fn a_solo_transaction_that_retries_after_its_guard_was_dropped_opens_the_gate_and_waits() {
    let _serial = serial();
    let flag = Arc::new(TVar::new(0u64));
    let mut gate = Some(solo::enter().expect("the gate is free"));
    let setter = {
        let flag = flag.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            // Waits for the gate: the retrying transaction must open it,
            // although its guard is gone (the gate was to open at its end).
            atomically(|tx| tx.write(&flag, 7));
        })
    };
    let start = Instant::now();
    let seen = atomically_with(&solo_cfg(), |tx| {
        drop(gate.take());
        let f = tx.read(&flag)?;
        // Retry waits a poll interval at most, then runs again: with the
        // gate kept closed the setter never gets in; give up after a while
        // (and commit, which opens the gate) so that the test fails, not hangs.
        if f == 0 && start.elapsed() < Duration::from_secs(10) {
            return Err(tx.retry());
        }
        Ok(f)
    });
    setter.join().unwrap();
    assert_eq!(seen, 7, "the retrying transaction kept the gate closed");
    // Its guard is gone and the gate open: another thread may enter.
    assert_eq!(std::thread::spawn(|| solo::enter().map(drop)).join().unwrap(), Ok(()));
}

#[test]
fn without_the_gate_a_solo_mode_transaction_is_plain() {
    let _serial = serial();
    let a = TVar::new(5u64);
    let _ = Stats::take_thread();
    let r: Result<u64, TxError> = Ok(atomically_with(&solo_cfg(), |tx| tx.update(&a, |x| x * 2)));
    assert_eq!(r, Ok(10));
    assert_eq!(a.load(), 10);
    assert_eq!(Stats::take_thread().commits, 1);
}

/// Counts its drops.
struct Counted(Arc<AtomicU64>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_solo_worker_gets_the_objects_it_frees_back_soon() {
    let _serial = serial();
    // The thresholds of the STM's reclamation (`runtime/reclaim.rs`): after
    // a solo-mode transaction garbage is collected once 64 objects wait;
    // otherwise, with asymmetric fences (`membarrier`, where the kernel
    // offers it), once 1024 wait. (With SeqCst fences both are 64, and the
    // test cannot tell them apart.)
    const SOLO: u64 = 64;
    const PLAIN: u64 = 1024;
    // A thread of its own, so that its garbage starts empty; no other test
    // of this file runs transactions meanwhile (`serial`), so a collection
    // drops everything that waits.
    let drops = Arc::new(AtomicU64::new(0));
    let d = drops.clone();
    let (freed, dropped) = std::thread::spawn(move || {
        let gate = solo::enter().expect("the tests of this file take the gate one at a time");
        let freed = PLAIN - SOLO;
        for _ in 0..freed {
            atomically_with(&solo_cfg(), |tx| {
                let p = tx.alloc(Counted(d.clone()))?;
                // SAFETY: never published, freed once.
                unsafe { tx.free(p) }
            });
        }
        assert!(!gate.given_back(), "nothing else ran a transaction");
        // Counted before the thread exits and hands what it still holds over.
        (freed, d.load(Ordering::SeqCst))
    })
    .join()
    .unwrap();
    assert!(
        dropped + SOLO >= freed,
        "{freed} objects freed by solo transactions, {dropped} dropped: more than {SOLO} were waiting"
    );
}

/// A solo attempt writes in place: a user error puts every word back to
/// its value before the attempt, a word written twice included (the undo
/// log is replayed newest first).
#[test]
fn a_solo_attempt_that_fails_puts_every_word_back_even_one_written_twice() {
    let _serial = serial();
    let (a, b) = (TVar::new(1u64), TVar::new(10u64));
    let _gate = solo::enter().expect("the gate is free");
    let r: Result<(), &str> = try_atomically_with(&solo_cfg(), |tx| {
        tx.write(&a, 2).map_err(|_| "tx")?;
        tx.write(&b, 20).map_err(|_| "tx")?;
        tx.write(&a, 3).map_err(|_| "tx")?;
        // In place: a load outside the transaction sees the new value.
        assert_eq!((a.load(), b.load()), (3, 20));
        Err("no")
    });
    assert_eq!(r, Err("no"));
    assert_eq!((a.load(), b.load()), (1, 10));
}

/// `give_back` inside a solo attempt that wrote in place: the words get
/// their old values back before the gate opens, so the other thread's
/// transaction (which runs inside the attempt, after `give_back`) never
/// sees the attempt's writes; and the attempt, whose reads were not
/// recorded, does not commit: it runs again, plain, and its increment
/// lands once, after the other thread's.
#[test]
fn giving_the_gate_back_midway_undoes_the_attempts_writes_and_runs_it_again() {
    let _serial = serial();
    let a = TVar::new(1u64);
    let gate = solo::enter().expect("the gate is free");
    let mut attempts = 0;
    let mut other_saw = None;
    atomically_with(&solo_cfg(), |tx| {
        attempts += 1;
        let x = tx.read(&a)?;
        tx.write(&a, x + 1)?;
        if attempts == 1 {
            solo::give_back();
            other_saw = Some(std::thread::scope(|s| {
                s.spawn(|| atomically(|tx| tx.update(&a, |y| y + 100).map(|y| y - 100))).join().unwrap()
            }));
        }
        Ok(())
    });
    assert!(gate.given_back());
    assert_eq!(other_saw, Some(1), "the other thread saw the solo attempt's write, not undone");
    assert_eq!(attempts, 2);
    assert_eq!(a.load(), 102, "the increment of the solo transaction was lost or applied twice");
}

/// As above, but the attempt gives the gate back after its last access:
/// its commit must not take the (undone) in-place writes for done.
#[test]
fn a_solo_attempt_that_gave_the_gate_back_after_its_last_write_runs_again() {
    let _serial = serial();
    let a = TVar::new(1u64);
    let _gate = solo::enter().expect("the gate is free");
    let mut attempts = 0;
    atomically_with(&solo_cfg(), |tx| {
        attempts += 1;
        tx.update(&a, |x| x + 1)?;
        if attempts == 1 {
            solo::give_back();
        }
        Ok(())
    });
    assert_eq!((attempts, a.load()), (2, 2), "the increment was lost");
}
