//! Unit tests of the protocol in `raw.rs` (kept apart to keep that file short).
use super::*;

#[test]
fn words_and_locks_share_a_line() {
    assert_eq!(core::mem::size_of::<VWord>(), 16);
    assert_eq!(core::mem::align_of::<VWord>(), 16);
    let words: Vec<VWord> = (0..64).map(VWord::new).collect();
    for w in &words {
        assert_eq!(w.value() as *const AtomicU64 as usize / 64, w.lock() as *const AtomicU64 as usize / 64);
    }
}

#[test]
fn read_your_writes_and_commit() {
    let e = Engine::new();
    let words: Vec<VWord> = (0..40).map(VWord::new).collect();
    let mut t = TxState::new(1);
    t.begin(&e);
    for (i, w) in words.iter().enumerate() {
        // SAFETY: `words` outlives the attempt and does not move.
        assert_eq!(unsafe { t.read(&e, w) }.unwrap(), i as u64);
        // SAFETY: as above.
        unsafe { t.write(w, 100 + i as u64) };
    }
    for (i, w) in words.iter().enumerate() {
        // SAFETY: as above.
        assert_eq!(unsafe { t.read(&e, w) }.unwrap(), 100 + i as u64, "read-after-write through the index");
    }
    assert_eq!(t.commit(&e).unwrap(), Committed::Wrote(1));
    assert_eq!((t.read_set_len(), t.write_set_len()), (0, 0), "a committed attempt keeps no address");
    for (i, w) in words.iter().enumerate() {
        assert_eq!(w.value().load(Ordering::Relaxed), 100 + i as u64);
        assert_eq!(w.lock().load(Ordering::Relaxed), unlocked(1));
    }
}

#[test]
fn stale_read_set_fails_commit_and_releases_locks() {
    let e = Engine::new();
    let (a, b) = (VWord::new(1), VWord::new(2));
    let mut t1 = TxState::new(1);
    let mut t2 = TxState::new(2);
    t1.begin(&e);
    // SAFETY: `a` and `b` outlive both attempts and do not move.
    assert_eq!(unsafe { t1.read(&e, &a) }.unwrap(), 1);
    t2.begin(&e);
    // SAFETY: as above.
    unsafe { t2.write(&a, 10) };
    t2.commit(&e).unwrap();
    // SAFETY: as above.
    unsafe { t1.write(&b, 20) };
    assert_eq!(t1.commit(&e), Err(AbortReason::ValidateOnCommit));
    assert_eq!(b.value().load(Ordering::Relaxed), 2);
    assert!(!is_locked(a.lock().load(Ordering::Relaxed)) && !is_locked(b.lock().load(Ordering::Relaxed)));
}

#[test]
fn snapshot_extends_when_unrelated_words_change() {
    let e = Engine::new();
    let (a, b) = (VWord::new(0), VWord::new(0));
    let mut t1 = TxState::new(1);
    let mut t2 = TxState::new(2);
    t1.begin(&e);
    // SAFETY: `a` and `b` outlive both attempts and do not move.
    unsafe { t1.read(&e, &a) }.unwrap();
    t2.begin(&e);
    // SAFETY: as above.
    unsafe { t2.write(&b, 5) };
    t2.commit(&e).unwrap();
    // b is newer than t1's snapshot, but a did not change: extend.
    // SAFETY: as above.
    assert_eq!(unsafe { t1.read(&e, &b) }.unwrap(), 5);
    assert_eq!(t1.rv(), 1);
}
