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

// With t2's commit under `Readers` the clock never moves: the commit's
// shortcut (no validation when the clock still reads the snapshot) would
// then miss that `a` changed, whichever policy t1 commits with.
#[test]
fn stale_read_set_fails_commit_and_releases_locks() {
    use ClockPolicy::{Commits, Readers};
    for (p1, p2) in [(Commits, Commits), (Commits, Readers), (Readers, Readers)] {
        let e = Engine::new();
        let (a, b) = (VWord::new(1), VWord::new(2));
        let mut t1 = with_policy(1, p1);
        let mut t2 = with_policy(2, p2);
        t1.begin(&e);
        // SAFETY: `a` and `b` outlive both attempts and do not move.
        assert_eq!(unsafe { t1.read(&e, &a) }.unwrap(), 1);
        t2.begin(&e);
        // SAFETY: as above.
        unsafe { t2.write(&a, 10) };
        t2.commit(&e).unwrap();
        // SAFETY: as above.
        unsafe { t1.write(&b, 20) };
        assert_eq!(t1.commit(&e), Err(AbortReason::ValidateOnCommit), "{p1} after {p2}");
        assert_eq!(b.value().load(Ordering::Relaxed), 2);
        assert!(!is_locked(a.lock().load(Ordering::Relaxed)) && !is_locked(b.lock().load(Ordering::Relaxed)));
    }
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

fn with_policy(owner: u64, policy: ClockPolicy) -> TxState {
    let mut t = TxState::new(owner);
    t.set_clock_policy(policy);
    t
}

// A `Readers` commit leaves the clock alone: the write version is one
// above it.
#[test]
fn a_readers_commit_writes_above_the_clock_without_moving_it() {
    let e = Engine::new();
    let w = VWord::new(0);
    let mut t = with_policy(1, ClockPolicy::Readers);
    for round in 1..=3 {
        t.begin(&e);
        // SAFETY: `w` outlives the attempts and does not move.
        unsafe { t.write(&w, round) };
        assert_eq!(t.commit(&e).unwrap(), Committed::Wrote(1), "round {round}");
        assert_eq!(e.now(), 0);
        assert_eq!(w.lock().load(Ordering::Relaxed), unlocked(1));
    }
    assert!(e.readers_seen());
}

// A reader that meets a word above its snapshot moves the clock up to it,
// then extends (logged) or restarts (unlogged) with a snapshot that covers it.
#[test]
fn a_reader_moves_the_clock_to_the_version_it_met() {
    let e = Engine::new();
    let (a, b) = (VWord::new(0), VWord::new(0));
    let mut w = with_policy(2, ClockPolicy::Readers);
    w.begin(&e);
    // SAFETY: `a` and `b` outlive every attempt and do not move.
    unsafe { w.write(&b, 5) };
    w.commit(&e).unwrap();
    assert_eq!(e.now(), 0);

    let mut r = TxState::new(1);
    r.begin(&e);
    assert_eq!(r.read_unlogged(&b), Err(AbortReason::ValidateOnRead));
    r.begin(&e);
    assert_eq!(e.now(), 1, "the restart moved the clock to b's version");
    assert_eq!(r.read_unlogged(&b), Ok(5), "the restarted snapshot covers b");

    w.begin(&e);
    // SAFETY: as above.
    unsafe { w.write(&b, 6) };
    w.commit(&e).unwrap();
    r.begin(&e);
    // SAFETY: as above.
    unsafe { r.read(&e, &a) }.unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { r.read(&e, &b) }.unwrap(), 6, "extended past the new version");
    assert_eq!((e.now(), r.rv()), (2, 2));
}

#[test]
fn a_tick_moves_the_clock_and_policies_have_names() {
    let e = Engine::new();
    assert_eq!((e.tick(), e.now()), (0, 1));
    for p in [ClockPolicy::Commits, ClockPolicy::Readers, ClockPolicy::Auto] {
        assert_eq!(p.to_string().parse::<ClockPolicy>(), Ok(p));
    }
    let err = "lazy".parse::<ClockPolicy>().unwrap_err();
    assert_eq!(err.to_string(), "unknown clock policy `lazy`; expected one of: commits, readers, auto");
}
