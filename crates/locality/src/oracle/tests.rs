use super::*;

/// Begins a run of one worker on a one-node machine of 4 KiB pages,
/// clocked from now.
fn begin(stretch: &OracleStretch) -> OracleRun {
    stretch.begin_run(1, 16, 1, 4096, Instant::now()).unwrap().expect("the oracle is free")
}

/// A page of this process's heap (inside `v`).
fn page_of(v: &[u8]) -> u64 {
    v.as_ptr() as u64 / 4096 + 1
}

#[test]
fn a_zero_stretch_is_refused() {
    for zero in [Stretch::Time(Duration::ZERO), Stretch::Units(0)] {
        let e = OracleStretch::of(zero).begin_run(1, 1, 1, 4096, Instant::now()).unwrap_err();
        assert!(e.to_string().contains("longer than zero"), "{e}");
    }
}

#[test]
fn the_hold_is_a_quarter_of_the_stretch_within_bounds() {
    let hold = |ms| OracleStretch::new(Duration::from_millis(ms)).hold().unwrap();
    assert_eq!(hold(0), Duration::from_millis(1));
    assert_eq!(hold(10), Duration::from_millis(2) + Duration::from_micros(500));
    assert_eq!(hold(200), Duration::from_millis(50));
    assert_eq!(hold(10_000), Duration::from_millis(250));
    assert_eq!(OracleStretch::units(10).hold(), None, "decided when it acts");
}

#[test]
fn stop_wakes_an_oracle_parked_until_a_far_stretch_end() {
    let run = begin(&OracleStretch::new(Duration::from_secs(60)));
    std::thread::sleep(Duration::from_millis(20));
    let t = Instant::now();
    let log = run.stop().unwrap();
    // Unparked at once, not at the end of the stretch a minute away.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!((log.epochs, log.moves.len(), log.held_workers), (0, 0, None));
}

#[test]
fn the_applied_oracle_acts_once_after_its_stretch() {
    let stretch = OracleStretch::new(Duration::from_millis(2));
    let v = vec![1u8; 1 << 14];
    let run = begin(&stretch);
    let board = run.applied().board().clone();
    board.post(0, page_of(&v), 0);
    // Until the oracle has acted (it emptied the board), or long enough.
    let waited = Instant::now();
    while !stretch.acted() && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(stretch.acted());
    // Later samples are never taken: the thread acted once and ended.
    board.post(0, page_of(&v) + 1, 0);
    std::thread::sleep(Duration::from_millis(10));
    let log = run.stop().unwrap();
    assert_eq!((log.epochs, log.by_worker), (1, false), "{log:?}");
    assert_eq!((log.moves.len(), log.failed), (0, 0), "one node: nothing is misplaced");
    assert_eq!(board.drain_counts(1).len(), 1, "the sample posted after the oracle acted is still on the board");
    // Acted for good: no later run has it.
    assert!(stretch.begin_run(1, 16, 1, 4096, Instant::now()).unwrap().is_none());
    drop(v);
}

#[test]
fn a_worker_past_the_stretch_acts_for_the_oracle_and_counts_itself_held() {
    let stretch = OracleStretch::new(Duration::from_secs(60));
    let v = vec![1u8; 1 << 14];
    let before_start = Instant::now();
    // The thread's stretch is a minute: only the worker can act here.
    let run = begin(&stretch);
    let oracle = run.applied().clone();
    let board = oracle.board().clone();
    board.enter();
    assert!(oracle.waiting());
    assert!(!oracle.due(Duration::from_secs(1)));
    assert!(!oracle.act_if_due(Duration::from_secs(1)), "acted before the stretch ended");
    // The stretch ended with nothing sampled: the worker claims it, finds
    // the board empty, and the oracle waits another stretch.
    assert!(oracle.act_if_due(Duration::from_secs(61)));
    assert!(oracle.waiting());
    // Re-armed a stretch after the (real) moment it found the board empty.
    assert!(!oracle.due(Duration::from_secs(60)), "re-armed a stretch later");
    board.post(0, page_of(&v), 0);
    let began = Instant::now();
    assert!(oracle.act_if_due(Duration::from_secs(1000)));
    // The one worker entered is the one acting: no wait for the others.
    assert!(began.elapsed() < Duration::from_secs(30), "{:?}", began.elapsed());
    assert!(!oracle.waiting());
    assert!(stretch.acted());
    assert!(!oracle.act_if_due(Duration::from_secs(2000)), "the oracle acts once");
    board.leave();
    let log = run.stop().unwrap();
    assert_eq!((log.epochs, log.held_workers, log.by_worker), (1, Some((1, 1)), true), "{log:?}");
    assert_eq!((log.moves.len(), log.failed), (0, 0), "one node: nothing is misplaced");
    // A plan that moved nothing still says when it was chosen: the
    // accesses after it ran on the oracle's (unchanged) placement.
    assert!(log.oracle_chosen_ns.is_some_and(|t| t <= before_start.elapsed().as_nanos() as u64), "{log:?}");
    drop(v);
}

#[test]
fn workers_racing_for_a_due_oracle_act_once() {
    let stretch = OracleStretch::new(Duration::from_secs(60));
    let v = vec![1u8; 1 << 14];
    let run = stretch.begin_run(4, 16, 1, 4096, Instant::now()).unwrap().unwrap();
    let oracle = run.applied().clone();
    oracle.board().post(0, page_of(&v), 0);
    let acted: usize = std::thread::scope(|s| {
        let racers: Vec<_> = (0..4).map(|_| s.spawn(|| oracle.act_if_due(Duration::from_secs(61)))).collect();
        racers.into_iter().map(|r| usize::from(r.join().unwrap())).sum()
    });
    assert_eq!(acted, 1);
    let log = run.stop().unwrap();
    assert_eq!((log.epochs, log.by_worker), (1, true), "{log:?}");
    assert!(stretch.acted());
    drop(v);
}

#[test]
fn an_oracle_of_units_acts_at_the_unit_that_ends_its_stretch() {
    let stretch = OracleStretch::units(3);
    let v = vec![1u8; 1 << 14];
    let run = begin(&stretch);
    assert!(run.thread.is_none(), "a stretch of units has no thread");
    let oracle = run.applied().clone();
    let board = oracle.board().clone();
    board.enter();
    assert!(oracle.waiting());
    oracle.count_unit();
    oracle.count_unit();
    assert!(!oracle.due(Duration::from_secs(1 << 40)), "no time ends a stretch of units");
    assert!(!oracle.act_if_due(Duration::from_secs(1 << 40)));
    // The third unit ends it; the board is empty, so the oracle waits
    // three units more.
    oracle.count_unit();
    assert!(oracle.due(Duration::ZERO));
    assert!(oracle.act_if_due(Duration::ZERO));
    assert!(oracle.waiting());
    board.post(0, page_of(&v), 0);
    oracle.count_unit();
    oracle.count_unit();
    assert!(!oracle.act_if_due(Duration::ZERO), "re-armed three units on");
    oracle.count_unit();
    assert!(oracle.act_if_due(Duration::ZERO));
    assert!(!oracle.waiting(), "acted");
    oracle.count_unit();
    assert_eq!(stretch.units_counted(), 6, "no unit is counted once the oracle acted");
    board.leave();
    let log = run.stop().unwrap();
    assert_eq!((log.epochs, log.held_workers, log.by_worker), (1, Some((1, 1)), true), "{log:?}");
    drop(v);
}

#[test]
fn runs_share_one_board_and_count_on_where_the_last_stopped() {
    let units = OracleStretch::units(5);
    let first = begin(&units);
    let board = first.applied().board().clone();
    first.applied().count_unit();
    first.applied().count_unit();
    first.stop().unwrap();
    // What is left: three units, on the same board.
    let second = begin(&units);
    assert_eq!(second.applied().left, Stretch::Units(3));
    assert!(Arc::ptr_eq(second.applied().board(), &board));
    second.applied().count_unit();
    second.applied().count_unit();
    assert!(!second.applied().due(Duration::ZERO));
    second.applied().count_unit();
    assert!(second.applied().due(Duration::ZERO));
    second.stop().unwrap();

    let time = OracleStretch::new(Duration::from_secs(60));
    begin(&time).stop().unwrap();
    let used = time.used();
    assert!(used > Duration::ZERO);
    let next = begin(&time);
    assert_eq!(next.applied().left, Stretch::Time(Duration::from_secs(60) - used));
    next.stop().unwrap();
    // Used up without acting: the next run's oracle is due at once.
    time.inner.runs.lock().used = Duration::from_secs(61);
    let last = begin(&time);
    assert_eq!(last.applied().left, Stretch::Time(Duration::from_nanos(1)));
    drop(last);
    assert!(!time.acted());
}

#[test]
fn an_oracle_due_after_its_run_s_workers_finished_leaves_the_samples_for_the_next_run() {
    let stretch = OracleStretch::new(Duration::from_secs(60));
    let v = vec![1u8; 1 << 14];
    let run = begin(&stretch);
    let oracle = run.applied().clone();
    let board = oracle.board().clone();
    // The run's one worker samples a page and finishes.
    board.enter();
    board.post(0, page_of(&v), 0);
    board.leave();
    // The thread's turn comes now (as if its stretch had ended in the gap
    // before the run stops it): it claims, and does nothing.
    let seen = oracle.shared.state.load(Ordering::Relaxed);
    assert!(oracle.act(seen, 0));
    assert!(oracle.waiting(), "waits again");
    let log = run.stop().unwrap();
    assert_eq!((log.epochs, log.held_workers, log.oracle_chosen_ns), (0, None, None), "{log:?}");
    assert_eq!(board.drain_counts(1).len(), 1, "the sample is still on the board");
    assert!(!stretch.acted());
    drop(v);
}

#[test]
fn a_stopped_or_dropped_run_leaves_the_oracle_and_its_board_to_the_next_run() {
    let stretch = OracleStretch::new(Duration::from_secs(60));
    let run = begin(&stretch);
    let oracle = run.applied().clone();
    // One run has the oracle at a time.
    assert!(stretch.begin_run(1, 16, 1, 4096, Instant::now()).unwrap().is_none());
    let log = run.stop().unwrap();
    assert_eq!((log.held_workers, log.oracle_chosen_ns), (None, None));
    // The run ended before the stretch: no worker may act on it now.
    assert!(!oracle.waiting());
    assert!(!oracle.act_if_due(Duration::from_secs(1000)));
    // A run dropped without being stopped gives the oracle back too.
    let next = begin(&stretch);
    assert!(Arc::ptr_eq(next.applied().board(), oracle.board()));
    drop(next);
    assert!(!oracle.waiting());
    begin(&stretch).stop().unwrap();
}
