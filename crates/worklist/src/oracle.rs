//! The applied oracle's profiling stretch, which may span several skeleton
//! runs: programs such as kmeans (one run per iteration) and genome (one per
//! phase) are made of runs each shorter than a useful stretch, so the
//! stretch counts skeleton time (or committed units) over all the runs
//! given it, and its samples gather on one board until the oracle acts.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use skelaff_locality::{SampleBoard, Stretch};

use crate::access_profile::MIGRATION_SLOT;

/// Oracle_High applied once, after a stretch of skeleton time, or of
/// committed units, summed over the runs that share it (see
/// [`Builder::oracle`](crate::Builder::oracle)). Clones share one stretch.
///
/// A run given a stretch that has not acted yet posts its workers' samples
/// to the stretch's board and starts the oracle with what is left of the
/// stretch; when the run ends first, its time (and units) count and the
/// next run goes on from there. Once the oracle has moved pages, later runs
/// neither sample for it nor start it.
///
/// A stretch of units is the same share of the work in every run (a third
/// of the units is a third of the work); a stretch of time is that only
/// when every run takes as long, which under an emulator they do not.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use skelaff_locality::Stretch;
/// use skelaff_worklist::OracleStretch;
///
/// let stretch = OracleStretch::new(Duration::from_millis(30));
/// assert_eq!(stretch.stretch(), Stretch::Time(Duration::from_millis(30)));
/// assert_eq!((stretch.used(), stretch.acted()), (Duration::ZERO, false));
/// // The oracle acts at the commit of the 1000th unit, over all the runs.
/// assert_eq!(OracleStretch::units(1000).stretch(), Stretch::Units(1000));
/// ```
#[derive(Clone, Debug)]
pub struct OracleStretch {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    stretch: Stretch,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Skeleton time of the runs so far.
    used: Duration,
    /// The board the runs post to, made by the first run.
    board: Option<Arc<SampleBoard>>,
    acted: bool,
}

impl OracleStretch {
    /// A stretch of `stretch` skeleton time (a zero stretch is refused when
    /// a worklist is built with it).
    pub fn new(stretch: Duration) -> Self {
        OracleStretch::of(Stretch::Time(stretch))
    }

    /// A stretch of `units` committed units: the worker that commits the
    /// last of them acts (zero is refused when a worklist is built with it).
    pub fn units(units: u64) -> Self {
        OracleStretch::of(Stretch::Units(units))
    }

    /// A stretch of either kind.
    pub fn of(stretch: Stretch) -> Self {
        OracleStretch { inner: Arc::new(Inner { stretch, state: Mutex::new(State::default()) }) }
    }

    /// The stretch's length.
    pub fn stretch(&self) -> Stretch {
        self.inner.stretch
    }

    /// Skeleton time of the runs that ran with it so far (up to the end of
    /// the run in which the oracle acted).
    pub fn used(&self) -> Duration {
        self.inner.state.lock().used
    }

    /// Whether the oracle has moved pages (or tried to).
    pub fn acted(&self) -> bool {
        self.inner.state.lock().acted
    }

    /// How long the oracle waits for every worker to reach a checkpoint
    /// before it moves: a quarter of the stretch, from 1 ms to 250 ms (for
    /// a stretch of units, a quarter of the run's time when it acts, within
    /// the same bounds: `None`). A run whose stretch is short has units too
    /// long or too few to wait out (labyrinth's small input: 10 ms
    /// stretches, multi-millisecond units); a long one loses little by
    /// waiting for every worker.
    pub(crate) fn hold(&self) -> Option<Duration> {
        match self.inner.stretch {
            Stretch::Time(t) => Some((t / 4).clamp(Duration::from_millis(1), Duration::from_millis(250))),
            Stretch::Units(_) => None,
        }
    }

    /// What a run of `threads` workers needs, while the oracle has not
    /// acted: the board to post to (made by the first run; workers beyond
    /// its slots post nothing) and what is left of the stretch (at least
    /// 1 ns or one unit: a stretch of time used up by runs that ended
    /// before the oracle's epoch acts at the start of the next; the units
    /// are counted on the board).
    pub(crate) fn next_run(&self, threads: usize) -> Option<(Arc<SampleBoard>, Stretch)> {
        let mut s = self.inner.state.lock();
        if s.acted {
            return None;
        }
        let board = s.board.get_or_insert_with(|| SampleBoard::new(threads, MIGRATION_SLOT)).clone();
        let left = match self.inner.stretch {
            Stretch::Time(t) => Stretch::Time(t.saturating_sub(s.used).max(Duration::from_nanos(1))),
            Stretch::Units(n) => Stretch::Units(n.saturating_sub(board.units_counted()).max(1)),
        };
        Some((board, left))
    }

    /// A run that had the oracle's thread ended after `time` on the
    /// oracle's clock; `acted` when the oracle moved (or tried to) in it.
    pub(crate) fn run_ended(&self, time: Duration, acted: bool) {
        let mut s = self.inner.state.lock();
        s.used += time;
        if acted {
            s.acted = true;
            // Nothing posts to it any more.
            s.board = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_add_their_time_until_the_oracle_acts() {
        let o = OracleStretch::new(Duration::from_millis(10));
        let (b1, left) = o.next_run(2).unwrap();
        assert_eq!(left, Stretch::Time(Duration::from_millis(10)));
        o.run_ended(Duration::from_millis(4), false);
        let (b2, left) = o.clone().next_run(2).unwrap();
        // One board over the runs, and what is left of the stretch.
        assert!(Arc::ptr_eq(&b1, &b2));
        assert_eq!(left, Stretch::Time(Duration::from_millis(6)));
        o.run_ended(Duration::from_millis(7), false);
        // Used up without acting: the next run acts at once.
        assert_eq!(o.next_run(2).unwrap().1, Stretch::Time(Duration::from_nanos(1)));
        o.run_ended(Duration::from_millis(1), true);
        assert!(o.acted());
        assert!(o.next_run(2).is_none());
        assert_eq!(o.used(), Duration::from_millis(12));
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
    fn a_stretch_of_units_counts_what_is_left_on_the_board() {
        let o = OracleStretch::units(5);
        let (board, left) = o.next_run(1).unwrap();
        assert_eq!(left, Stretch::Units(5));
        let m = skelaff_locality::Migrator::start_oracle(board.clone(), left, None, 1, 4096, std::time::Instant::now())
            .unwrap();
        board.count_unit();
        board.count_unit();
        m.stop().unwrap();
        o.run_ended(Duration::from_millis(1), false);
        assert_eq!(o.next_run(1).unwrap().1, Stretch::Units(3));
    }
}
