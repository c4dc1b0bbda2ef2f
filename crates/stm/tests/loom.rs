//! Loom models of the lock and commit protocol (src/raw.rs) with two threads.
//! (Reclamation and the thread registry: `tests/loom_reclaim.rs`.)
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p skelaff-stm --release --test loom
//! ```
//!
//! Each model builds its own engine (a clock) and words (`VWord`: a value
//! and its versioned lock side by side), and runs real `TxState`
//! transactions on loom atomics; loom explores the interleavings (bounded
//! preemptions).
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::Ordering;
use skelaff_stm::AbortReason;
use skelaff_stm::raw::{Engine, TxState, VWord};

type E = Engine;

/// Runs `body` as a transaction until it commits; returns its result and
/// the number of aborted attempts.
fn transact<R>(e: &Engine, t: &mut TxState, mut body: impl FnMut(&mut TxState) -> Result<R, AbortReason>) -> (R, u32) {
    let mut aborts = 0;
    loop {
        t.begin(e);
        match body(t) {
            Ok(r) => match t.commit(e) {
                Ok(_) => return (r, aborts),
                Err(_) => t.rollback(),
            },
            Err(_) => t.rollback(),
        }
        aborts += 1;
        loom::thread::yield_now();
    }
}

/// A transactional read of `w`, which every model keeps alive (in an
/// `Arc` its threads hold) past the attempt.
fn read(t: &mut TxState, e: &Engine, w: &VWord) -> Result<u64, AbortReason> {
    // SAFETY: the models' words live in `Arc`s the reading thread holds
    // until after the attempt, and never move.
    unsafe { t.read(e, w) }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// Two concurrent increments of the same two words: no lost update, and
/// neither transaction sees the words differ (opacity inside the body).
#[test]
fn concurrent_increments_are_atomic() {
    model(|| {
        let e = Arc::new(E::new());
        let cells = Arc::new([VWord::new(0), VWord::new(0)]);
        let threads: Vec<_> = (1..=2u64)
            .map(|owner| {
                let (e, cells) = (e.clone(), cells.clone());
                loom::thread::spawn(move || {
                    let mut t = TxState::new(owner);
                    transact(&e, &mut t, |t| {
                        let a = read(t, &e, &cells[0])?;
                        let b = read(t, &e, &cells[1])?;
                        assert_eq!(a, b, "a transaction saw a torn pair");
                        // SAFETY: the cells live in an `Arc` this thread holds past the attempt.
                        unsafe { t.write(&cells[0], a + 1) };
                        // SAFETY: the cells live in an `Arc` this thread holds past the attempt.
                        unsafe { t.write(&cells[1], b + 1) };
                        Ok(())
                    });
                })
            })
            .collect();
        for h in threads {
            h.join().unwrap();
        }
        assert_eq!(cells[0].value().load(Ordering::Relaxed), 2);
        assert_eq!(cells[1].value().load(Ordering::Relaxed), 2);
        for w in cells.iter() {
            assert_eq!(w.lock().load(Ordering::Relaxed) & 1, 0, "a lock was left held");
        }
    });
}

/// A writer moves a unit from one word to the other while a reader (which
/// commits read-only) checks the sum inside its body.
#[test]
fn read_only_snapshots_are_consistent() {
    model(|| {
        let e = Arc::new(E::new());
        let cells = Arc::new([VWord::new(5), VWord::new(5)]);
        let writer = {
            let (e, cells) = (e.clone(), cells.clone());
            loom::thread::spawn(move || {
                let mut t = TxState::new(1);
                transact(&e, &mut t, |t| {
                    let a = read(t, &e, &cells[0])?;
                    let b = read(t, &e, &cells[1])?;
                    // SAFETY: the cells live in an `Arc` this thread holds past the attempt.
                    unsafe { t.write(&cells[0], a - 1) };
                    // SAFETY: the cells live in an `Arc` this thread holds past the attempt.
                    unsafe { t.write(&cells[1], b + 1) };
                    Ok(())
                });
            })
        };
        let mut t = TxState::new(2);
        let (sum, _) = transact(&e, &mut t, |t| {
            let a = read(t, &e, &cells[0])?;
            let b = read(t, &e, &cells[1])?;
            assert_eq!(a + b, 10, "the reader saw an inconsistent snapshot");
            Ok(a + b)
        });
        assert_eq!(sum, 10);
        writer.join().unwrap();
        assert_eq!(cells[0].value().load(Ordering::Relaxed), 4);
        assert_eq!(cells[1].value().load(Ordering::Relaxed), 6);
    });
}

/// Write skew is prevented: each transaction reads both words and writes
/// one only if both are 0; serializability allows exactly one to write.
#[test]
fn write_skew_is_prevented() {
    model(|| {
        let e = Arc::new(E::new());
        let cells = Arc::new([VWord::new(0), VWord::new(0)]);
        let threads: Vec<_> = (0..2usize)
            .map(|i| {
                let (e, cells) = (e.clone(), cells.clone());
                loom::thread::spawn(move || {
                    let mut t = TxState::new(i as u64 + 1);
                    transact(&e, &mut t, |t| {
                        let a = read(t, &e, &cells[0])?;
                        let b = read(t, &e, &cells[1])?;
                        if a == 0 && b == 0 {
                            // SAFETY: the cells live in an `Arc` this thread holds past the attempt.
                            unsafe { t.write(&cells[i], 1) };
                        }
                        Ok(())
                    });
                })
            })
            .collect();
        for h in threads {
            h.join().unwrap();
        }
        let total = cells[0].value().load(Ordering::Relaxed) + cells[1].value().load(Ordering::Relaxed);
        assert_eq!(total, 1, "both transactions wrote: write skew");
    });
}

/// A reader extends its snapshot while a writer commits twice; the second
/// commit replaces the word the reader was reading when it extended. The
/// reader must not return the value it loaded before extending (found by
/// the bank stress test; this model reproduces it in a few steps).
#[test]
fn extension_does_not_return_a_stale_value() {
    model(|| {
        let e = Arc::new(Engine::new());
        let cells: Arc<[VWord; 2]> = Arc::new([VWord::new(0), VWord::new(0)]);
        let (b, c) = (0, 1);
        let writer = {
            let (e, cells) = (e.clone(), cells.clone());
            loom::thread::spawn(move || {
                let mut t = TxState::new(1);
                for round in 1..=2 {
                    transact(&e, &mut t, |t| {
                        // SAFETY: the cells live in an `Arc` this thread holds past the attempt.
                        unsafe { t.write(&cells[b], round) };
                        // SAFETY: the cells live in an `Arc` this thread holds past the attempt.
                        unsafe { t.write(&cells[c], round) };
                        Ok(())
                    });
                }
            })
        };
        let mut t = TxState::new(2);
        transact(&e, &mut t, |t| {
            let x = read(t, &e, &cells[b])?;
            let y = read(t, &e, &cells[c])?;
            assert_eq!(x, y, "the reader saw one commit's b with another's c");
            Ok(())
        });
        writer.join().unwrap();
    });
}
