//! Loom models of assisted execution's ring handshake (src/runtime/assist/
//! ring.rs): an application thread, its auxiliary thread and, where it
//! matters, a writer, on a small engine.
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p skelaff-stm --release --test loom_assist
//! ```
//!
//! - the commit's verdict covers exactly the entries sent: with one of two
//!   entries stale it is never `Valid`;
//! - a conflict the auxiliary can see is seen before the commit: a
//!   transaction that read the old value of a word commits only before
//!   the writer of the new one (its write version is smaller);
//! - a read that overflowed the ring is validated by the application
//!   thread: the same guarantee for a read that never reached the ring.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use skelaff_stm::assist_ring::{AppCursor, AuxCursor, Channel, Verdict};
use skelaff_stm::lockword::{unlocked, version};
use skelaff_stm::raw::{Committed, Engine, TxState};

type E = Engine<4>;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// The auxiliary thread of the commit models: at most `rounds` rounds, then
/// it stops (and says so), so that a commit waiting for it falls back to
/// validating by itself: both ways are explored.
fn bounded_auxiliary(
    e: Arc<E>,
    ch: Arc<Channel>,
    rounds: u32,
    finished: Arc<AtomicBool>,
) -> loom::thread::JoinHandle<()> {
    loom::thread::spawn(move || {
        let mut aux = AuxCursor::default();
        for _ in 0..rounds {
            aux.step(&ch, &e);
        }
        finished.store(true, Ordering::Release);
    })
}

/// The auxiliary thread: rounds until the application thread is done.
fn auxiliary(e: Arc<E>, ch: Arc<Channel>, done: Arc<AtomicBool>) -> loom::thread::JoinHandle<()> {
    loom::thread::spawn(move || {
        let mut aux = AuxCursor::default();
        while !done.load(Ordering::Acquire) {
            aux.step(&ch, &e);
            loom::thread::yield_now();
        }
    })
}

/// The verdict once it is not pending (the auxiliary eventually runs).
fn final_verdict(cur: &mut AppCursor, ch: &Channel, bound: u64) -> Verdict {
    loop {
        match cur.verdict(ch, bound) {
            Verdict::Pending => loom::thread::yield_now(),
            v => return v,
        }
    }
}

#[test]
fn the_verdict_covers_exactly_the_entries_sent() {
    for second_stale in [false, true] {
        model(move || {
            let e = Arc::new(E::new());
            if second_stale {
                // Lock 2 moved to version 5: an entry with bound 0 is stale.
                e.lock(2).store(unlocked(5), Ordering::Relaxed);
            }
            let ch = Arc::new(Channel::new(4, 1));
            let done = Arc::new(AtomicBool::new(false));
            let aux = auxiliary(e.clone(), ch.clone(), done.clone());
            let mut cur = AppCursor::default();
            cur.begin(&ch);
            assert!(cur.push(&ch, 1, 0, false));
            assert!(cur.push(&ch, 2, 0, false));
            let v = final_verdict(&mut cur, &ch, 0);
            done.store(true, Ordering::Release);
            aux.join().unwrap();
            let expected = if second_stale { Verdict::Stale } else { Verdict::Valid };
            assert_eq!(v, expected, "the verdict did not cover both entries");
        });
    }
}

/// Runs the application thread's transaction: read `cells[0]` (and
/// `cells[4]` when `two_reads`), write `cells[8]`, commit with the
/// auxiliary's verdict. The ring holds `cap` entries; with `aux_late` the
/// auxiliary starts only after the reads were sent. Returns what the first
/// read (or the second, if two) saw, the commit's outcome, and whether a
/// read was kept.
fn assisted_tx_against_writer(cap: usize, two_reads: bool, aux_late: bool) {
    let e = Arc::new(E::new());
    // 12 words: 0, 4 and 8 lie in three different 32-byte stripes.
    let cells = Arc::new([(); 12].map(|_| AtomicU64::new(0)));
    let ch = Arc::new(Channel::new(cap, 1));
    let finished = Arc::new(AtomicBool::new(false));
    let reads: &[usize] = if two_reads { &[0, 4] } else { &[0] };
    let watched = reads[reads.len() - 1];
    let writer = {
        let (e, cells) = (e.clone(), cells.clone());
        loom::thread::spawn(move || e.store_single(&cells[watched], 1, 0))
    };
    let rounds = 2;
    let mut aux =
        if aux_late { None } else { Some(bounded_auxiliary(e.clone(), ch.clone(), rounds, finished.clone())) };
    // Whether the attempt during which the auxiliary started kept a read.
    let mut kept_before_aux = None;
    let mut st = TxState::new(1);
    let mut cur = AppCursor::default();
    let outcome = loop {
        st.begin(&e);
        cur.begin(&ch);
        let mut seen = 0;
        let mut ok = true;
        for &i in reads {
            let before = st.read_set_len();
            match st.read(&e, &cells[i]) {
                Ok(v) => seen = v,
                Err(_) => {
                    ok = false;
                    break;
                }
            }
            if st.read_set_len() != before {
                let lock = *st.read_locks().last().unwrap();
                cur.push(&ch, lock, st.rv(), false);
            }
        }
        if !ok {
            st.rollback();
            loom::thread::yield_now();
            continue;
        }
        if aux.is_none() {
            kept_before_aux = Some(cur.kept_reads());
            aux = Some(bounded_auxiliary(e.clone(), ch.clone(), rounds, finished.clone()));
        }
        // SAFETY: `cells` outlives the attempt (held by this thread).
        unsafe { st.write(&e, &cells[8], 7) };
        let kept = cur.kept_reads();
        let r = st.commit_checked(&e, |st, bound| {
            cur.confirm(&ch, st, &e, bound, || {
                loom::thread::yield_now();
                !finished.load(Ordering::Acquire)
            })
        });
        match r {
            Ok(c) => break (seen, c, kept),
            Err(_) => {
                st.rollback();
                loom::thread::yield_now();
            }
        }
    };
    writer.join().unwrap();
    aux.unwrap().join().unwrap();
    let (seen, committed, _kept) = outcome;
    if aux_late && cap == 1 {
        assert_eq!(kept_before_aux, Some(true), "the second read should have overflowed the ring");
    }
    let Committed::Wrote(wv) = committed else { panic!("the transaction wrote") };
    let (_, lock) = e.lock_for(&cells[watched] as *const AtomicU64 as usize);
    let writer_version = version(lock.load(Ordering::Acquire));
    if seen == 0 {
        assert!(writer_version > wv, "committed at {wv} after reading a word overwritten at {writer_version}");
    }
}

#[test]
fn a_stale_read_is_caught_before_commit() {
    model(|| assisted_tx_against_writer(4, false, false));
}

#[test]
fn an_overflowed_read_is_validated_by_the_application_thread() {
    model(|| assisted_tx_against_writer(1, true, true));
}
