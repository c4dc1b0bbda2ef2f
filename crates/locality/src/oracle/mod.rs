//! The applied oracle, in one place: Oracle_High applied for real, once,
//! after a profiling stretch that may span several runs.
//!
//! - [`OracleStretch`] is the oracle over a program's runs: its stretch, the
//!   time the runs used of it, the board their workers post to, the units
//!   they committed, and its life, one [`state`] word (idle, waiting until
//!   its stretch's end, claimed by whoever acts, acted).
//! - [`OracleStretch::begin_run`] gives one run the oracle: an [`OracleRun`],
//!   which the run keeps and stops, and the [`AppliedOracle`] its workers
//!   (and, for a stretch of time, the oracle's own thread) look at between
//!   units: the first to find it due claims it and moves the pages,
//!   holding the others at the board's gate.
//!
//! The board ([`SampleBoard`]) holds only the samples and the gate; the
//! moves are the migration module's (one batch through `move_pages`).

mod state;
#[cfg(test)]
mod tests;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::board::SampleBoard;
use crate::error::{Error, Result};
use crate::migrate::{MigrationLog, move_hottest, still_there};
use state::{OracleState, StateWord};

/// How long an applied oracle profiles before it acts, from when it starts.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use skelaff_locality::Stretch;
///
/// assert!(Stretch::Time(Duration::ZERO).is_zero());
/// assert!(!Stretch::Units(100).is_zero());
/// assert_eq!(Stretch::Units(100).to_string(), "100 units");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stretch {
    /// This long on the run's clock.
    Time(Duration),
    /// Until this many more units have committed, counted by the oracle
    /// ([`AppliedOracle::count_unit`]) over every run it has. A fixed share
    /// of the work, where a time is a share of one run only if every run
    /// takes as long: under an emulator the same run's length varies
    /// severalfold (labyrinth's small input on NUMA32 ran its work in
    /// 233 ms where the policy runs' median was 855 ms, so a third of that
    /// median outlasted it).
    Units(u64),
}

impl Stretch {
    /// A stretch of no time or no unit (refused by [`OracleStretch::begin_run`]).
    pub fn is_zero(&self) -> bool {
        match self {
            Stretch::Time(t) => t.is_zero(),
            Stretch::Units(n) => *n == 0,
        }
    }
}

impl std::fmt::Display for Stretch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stretch::Time(t) => write!(f, "{:.1} ms", t.as_secs_f64() * 1e3),
            Stretch::Units(n) => write!(f, "{n} units"),
        }
    }
}

/// The bounds of an oracle's hold when it is a share of a time.
const HOLD_MIN: Duration = Duration::from_millis(1);
const HOLD_MAX: Duration = Duration::from_millis(250);

/// Oracle_High applied once, after a stretch of run time, or of committed
/// units, summed over the runs that share it. Clones share one stretch.
///
/// Programs such as kmeans (one run per iteration) and genome (one per
/// phase) are made of runs each shorter than a useful stretch: each run
/// [begun](OracleStretch::begin_run) before the oracle acted posts its
/// workers' samples to the stretch's one board and waits for what is left
/// of the stretch; a run that ends first leaves its samples, its time and
/// its units counted, and the next goes on from there. When the stretch is
/// over, every sample posted so far is taken and every misplaced sampled
/// page moves to its dominant accessor's node (all of them, not the
/// hottest few); then nothing more: later runs neither sample for it nor
/// begin it. One run has the oracle at a time: a run begun while another
/// has it runs without it.
///
/// A stretch of units is the same share of the work in every run (a third
/// of the units is a third of the work); a stretch of time is that only
/// when every run takes as long, which under an emulator they do not.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use skelaff_locality::{OracleStretch, Stretch};
///
/// let stretch = OracleStretch::new(Duration::from_millis(30));
/// assert_eq!(stretch.stretch(), Stretch::Time(Duration::from_millis(30)));
/// assert_eq!((stretch.used(), stretch.acted()), (Duration::ZERO, false));
/// // The oracle acts at the commit of the 1000th unit, over all the runs.
/// assert_eq!(OracleStretch::units(1000).stretch(), Stretch::Units(1000));
/// ```
#[derive(Clone, Debug)]
pub struct OracleStretch {
    inner: Arc<Shared>,
}

/// What the runs of one stretch share.
#[derive(Debug)]
struct Shared {
    stretch: Stretch,
    /// The oracle's life ([`state`]).
    state: StateWord,
    /// Units committed while the oracle waited on a stretch of units, over
    /// every run ([`AppliedOracle::count_unit`]).
    units: AtomicU64,
    /// Run bookkeeping, touched when a run begins and ends.
    runs: Mutex<Runs>,
}

#[derive(Debug, Default)]
struct Runs {
    /// Run time of the runs so far.
    used: Duration,
    /// The board the runs post to, made by the first run (dropped once the
    /// oracle acted: nothing posts to it any more).
    board: Option<Arc<SampleBoard>>,
}

impl OracleStretch {
    /// A stretch of `stretch` run time (a zero stretch is refused when a
    /// run begins with it).
    pub fn new(stretch: Duration) -> Self {
        OracleStretch::of(Stretch::Time(stretch))
    }

    /// A stretch of `units` committed units: the worker that commits the
    /// last of them acts (zero is refused when a run begins with it).
    pub fn units(units: u64) -> Self {
        OracleStretch::of(Stretch::Units(units))
    }

    /// A stretch of either kind.
    pub fn of(stretch: Stretch) -> Self {
        OracleStretch {
            inner: Arc::new(Shared {
                stretch,
                state: StateWord::new(OracleState::Idle),
                units: AtomicU64::new(0),
                runs: Mutex::new(Runs::default()),
            }),
        }
    }

    /// The stretch's length.
    pub fn stretch(&self) -> Stretch {
        self.inner.stretch
    }

    /// Run time of the runs that had the oracle so far (up to the end of
    /// the run in which it acted).
    pub fn used(&self) -> Duration {
        self.inner.runs.lock().used
    }

    /// Whether the oracle has moved pages (or tried to).
    pub fn acted(&self) -> bool {
        self.inner.state.load(Ordering::Acquire) == OracleState::Acted
    }

    /// Units counted toward a stretch of units so far, over every run.
    pub fn units_counted(&self) -> u64 {
        self.inner.units.load(Ordering::Relaxed)
    }

    /// How long the oracle waits for every worker to reach a checkpoint
    /// before it moves: a quarter of a stretch of time, from 1 ms to
    /// 250 ms (for a stretch of units, a quarter of the run's time when it
    /// acts, within the same bounds: `None`). A run whose stretch is short
    /// has units too long or too few to wait out (labyrinth's small input:
    /// 10 ms stretches, multi-millisecond units); a long one loses little
    /// by waiting for every worker.
    pub(crate) fn hold(&self) -> Option<Duration> {
        match self.inner.stretch {
            Stretch::Time(t) => Some((t / 4).clamp(HOLD_MIN, HOLD_MAX)),
            Stretch::Units(_) => None,
        }
    }

    /// Gives the oracle to a run of `workers` workers, on a machine of
    /// `nodes` nodes (the largest node number plus one) and pages of
    /// `page_size` bytes, whose clock is `start` (so move times compare
    /// with sample times): `None` once the oracle has acted, or while
    /// another run has it. The run waits for what is left of the stretch
    /// (at least 1 ns, or one unit: a stretch of time used up by runs that
    /// ended before its end acts at the start of the next). The board is
    /// made by the first run, with `slot` distinct `(page, node)` pairs per
    /// worker; workers beyond its slots post nothing.
    ///
    /// A stretch of time also gets a thread, as a fallback for a run whose
    /// workers are all inside long units at its end; a stretch of units
    /// ends at a unit's commit, so it has none.
    ///
    /// # Errors
    ///
    /// [`Error::Migration`] for a zero stretch; [`Error::Io`] when the
    /// thread cannot be spawned (the run then does not have the oracle).
    pub fn begin_run(
        &self,
        workers: usize,
        slot: usize,
        nodes: usize,
        page_size: u64,
        start: Instant,
    ) -> Result<Option<OracleRun>> {
        let shared = &self.inner;
        if shared.stretch.is_zero() {
            return Err(Error::Migration { reason: "the oracle needs a profiling stretch longer than zero".into() });
        }
        let mut runs = shared.runs.lock();
        if shared.state.load(Ordering::Acquire) != OracleState::Idle {
            return Ok(None);
        }
        let board = runs.board.get_or_insert_with(|| SampleBoard::new(workers, slot)).clone();
        let left = match shared.stretch {
            Stretch::Time(t) => Stretch::Time(t.saturating_sub(runs.used).max(Duration::from_nanos(1))),
            Stretch::Units(n) => Stretch::Units(n.saturating_sub(self.units_counted()).max(1)),
        };
        drop(runs);
        let (log, received) = channel();
        let oracle = Arc::new(AppliedOracle {
            shared: shared.clone(),
            dropped_before: board.dropped(),
            left_before: board.workers_left(),
            board,
            left,
            hold: self.hold(),
            nodes,
            page_size,
            start,
            ended: AtomicBool::new(false),
            log,
        });
        // Armed before the thread starts: it finds the oracle waiting.
        if shared.state.transition(OracleState::Idle, oracle.waiting_from_now()).is_err() {
            return Ok(None);
        }
        let mut run = OracleRun { oracle, thread: None, log: received, stopped: false };
        if let Stretch::Time(_) = left {
            let o = run.oracle.clone();
            let spawned = std::thread::Builder::new().name("skelaff-oracle".into()).spawn(move || o.wait_on_thread());
            // On an error, dropping `run` withdraws the oracle again.
            run.thread = Some(spawned.map_err(Error::io("spawning the oracle's thread"))?);
        }
        Ok(Some(run))
    }
}

/// The oracle as one run's workers and thread see it: the first to find
/// its stretch over claims it and acts.
#[derive(Debug)]
pub struct AppliedOracle {
    shared: Arc<Shared>,
    board: Arc<SampleBoard>,
    /// What was left of the stretch when the run began: the run waits this
    /// long, and again this long when the oracle found no sample.
    left: Stretch,
    /// How long to wait for the workers to reach their checkpoints (`None`:
    /// a quarter of the run's time so far, from 1 ms to 250 ms).
    hold: Option<Duration>,
    nodes: usize,
    page_size: u64,
    /// The run's clock.
    start: Instant,
    /// The board's drops when the run began (a board serves several runs).
    dropped_before: u64,
    /// The workers that had left the board when the run began.
    left_before: u64,
    /// The run is stopping: its thread returns.
    ended: AtomicBool,
    /// Where the one who acted sends its log, to [`OracleRun::stop`].
    log: Sender<Result<MigrationLog>>,
}

impl AppliedOracle {
    /// The board the run's workers post their kept samples to.
    pub fn board(&self) -> &Arc<SampleBoard> {
        &self.board
    }

    /// Whether the oracle waits for its stretch to end (one relaxed load):
    /// a worker then reads the clock between units and asks
    /// [`due`](Self::due).
    #[inline]
    pub fn waiting(&self) -> bool {
        self.shared.state.waiting()
    }

    /// A worker committed a unit: counted when the oracle waits on a
    /// stretch of units (one relaxed load otherwise).
    #[inline]
    pub fn count_unit(&self) {
        if matches!(self.left, Stretch::Units(_)) && self.waiting() {
            self.shared.units.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether the oracle's stretch has ended at `now` (on the run's clock),
    /// or with the units counted so far, and nobody has acted on it yet.
    #[inline]
    pub fn due(&self, now: Duration) -> bool {
        self.due_state(now).is_some()
    }

    /// A worker between two units, its samples posted: if the oracle is
    /// due and nobody has claimed it, this worker moves the pages itself,
    /// holding the other workers (it counts itself among the held), and
    /// returns `true`. Under an emulator that runs many virtual CPUs on few
    /// host cores, the oracle's thread waited for a CPU for hundreds of
    /// milliseconds after its stretch, by which time short runs had ended;
    /// a running worker has one. What it did goes to the run's log, and a
    /// kernel error there is returned by [`OracleRun::stop`].
    pub fn act_if_due(&self, now: Duration) -> bool {
        match self.due_state(now) {
            Some(seen) => self.act(seen, 1),
            None => false,
        }
    }

    /// The waiting state the oracle is in, if it is due at `now`.
    #[inline]
    fn due_state(&self, now: Duration) -> Option<OracleState> {
        let seen = self.shared.state.load(Ordering::Relaxed);
        let OracleState::Waiting { due } = seen else { return None };
        let reached = match self.left {
            Stretch::Time(_) => u64::try_from(now.as_nanos()).unwrap_or(u64::MAX) >= due,
            Stretch::Units(_) => self.shared.units.load(Ordering::Relaxed) >= due,
        };
        reached.then_some(seen)
    }

    /// The waiting state a whole run's stretch (`left`) from now: a time
    /// on the run's clock, or the unit count then.
    fn waiting_from_now(&self) -> OracleState {
        let due = match self.left {
            Stretch::Time(after) => u64::try_from((self.start.elapsed() + after).as_nanos()).unwrap_or(u64::MAX),
            Stretch::Units(n) => self.shared.units.load(Ordering::Relaxed).saturating_add(n),
        };
        OracleState::Waiting { due }
    }

    /// Claims the oracle from `seen` (the waiting state found due) and acts
    /// on it (`acting` of the board's workers being the caller); a board
    /// without samples, or a run whose workers have all finished, makes it
    /// wait another stretch. Whether the caller claimed it.
    fn act(&self, seen: OracleState, acting: usize) -> bool {
        let state = &self.shared.state;
        if state.transition(seen, OracleState::Claimed).is_err() {
            return false;
        }
        // The claim ends on every way out: a panic in the moves ends it as
        // an error, so that the run's stop does not wait for it forever.
        let outcome = catch_unwind(AssertUnwindSafe(|| act_oracle(self, acting)))
            .unwrap_or_else(|_| Err(Error::Migration { reason: "the oracle panicked while it moved pages".into() }));
        let next = match outcome {
            Ok(log) if log.held_workers.is_none() => self.waiting_from_now(),
            log => {
                // Sent before the state says so: the run's stop reads the
                // log once the oracle is no longer claimed. Its receiver
                // lives as long as the run's `OracleRun`, which waits for
                // this claim to end before it drops it.
                let _ = self.log.send(log);
                OracleState::Acted
            }
        };
        // Only the claimer leaves `Claimed`, so this cannot be lost.
        let moved = state.transition(OracleState::Claimed, next);
        debug_assert!(moved.is_ok(), "{moved:?}");
        true
    }

    /// The oracle's thread: parked until the stretch's end (the run's stop
    /// unparks it), then acts unless a worker has.
    fn wait_on_thread(&self) {
        let Stretch::Time(after) = self.left else { return };
        while !self.ended.load(Ordering::Acquire) {
            match self.shared.state.load(Ordering::Acquire) {
                OracleState::Idle | OracleState::Acted => return,
                // A worker is acting: looked at again once a stretch.
                OracleState::Claimed => std::thread::park_timeout(after),
                seen @ OracleState::Waiting { due } => {
                    let now = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    if now < due {
                        // Parked, not slept in slices: a sleep in 5 ms slices
                        // woke the oracle of a 17 ms labyrinth run 6 ms late in
                        // a TCG guest.
                        std::thread::park_timeout(Duration::from_nanos(due - now));
                    } else {
                        self.act(seen, 0);
                    }
                }
            }
        }
    }

    /// The run is over: no worker may act any more. A claim in progress
    /// (a worker still acting) is waited out.
    fn withdraw(&self) {
        let state = &self.shared.state;
        loop {
            match state.load(Ordering::Acquire) {
                OracleState::Idle | OracleState::Acted => return,
                OracleState::Claimed => std::thread::sleep(Duration::from_millis(1)),
                seen @ OracleState::Waiting { .. } => {
                    if state.transition(seen, OracleState::Idle).is_ok() {
                        return;
                    }
                }
            }
        }
    }
}

/// The oracle given to one run ([`OracleStretch::begin_run`]), which the
/// run stops when its workers are done. Dropped without
/// [`stop`](OracleRun::stop), it stops all the same (its log is lost).
#[derive(Debug)]
pub struct OracleRun {
    oracle: Arc<AppliedOracle>,
    /// The thread of a stretch of time.
    thread: Option<JoinHandle<()>>,
    log: Receiver<Result<MigrationLog>>,
    stopped: bool,
}

impl OracleRun {
    /// What the run's workers look at between units.
    pub fn applied(&self) -> &Arc<AppliedOracle> {
        &self.oracle
    }

    /// Stops the oracle's part in this run: its thread is joined, and the
    /// oracle withdrawn if it has not acted (its samples stay on the board
    /// for the next run); the run's time counts toward the stretch. The
    /// log of what it did in this run (an empty one, but for the dropped
    /// samples, when it did not act).
    ///
    /// # Errors
    ///
    /// [`Error::Numa`] when the kernel could not be asked where pages are
    /// or could not move them, [`Error::Migration`] if the oracle's thread
    /// or its moves panicked.
    pub fn stop(mut self) -> Result<MigrationLog> {
        self.stopped = true;
        self.end()
    }

    fn end(&mut self) -> Result<MigrationLog> {
        let oracle = &self.oracle;
        oracle.ended.store(true, Ordering::Release);
        let joined = match self.thread.take() {
            Some(handle) => {
                handle.thread().unpark();
                handle.join().map_err(|_| Error::Migration { reason: "the oracle's thread panicked".into() })
            }
            None => Ok(()),
        };
        oracle.withdraw();
        let acted = oracle.shared.state.load(Ordering::Acquire) == OracleState::Acted;
        {
            let mut runs = oracle.shared.runs.lock();
            runs.used += oracle.start.elapsed();
            if acted {
                runs.board = None;
            }
        }
        joined?;
        // Whoever acted in this run left its log; nobody did if the run ended first.
        let mut log = self.log.try_recv().unwrap_or_else(|_| Ok(MigrationLog::default()))?;
        log.dropped_samples = oracle.board.dropped().saturating_sub(oracle.dropped_before);
        log.still_there = still_there(&log.moves, oracle.page_size);
        Ok(log)
    }
}

impl Drop for OracleRun {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.end();
        }
    }
}

/// Workers held at the board's gate, let go when dropped.
struct Held<'a> {
    board: &'a SampleBoard,
    /// Held and entered workers when the wait ended.
    counts: (u64, u64),
}

impl<'a> Held<'a> {
    fn new(board: &'a SampleBoard, within: Duration, acting: usize) -> Self {
        let (held, active) = board.hold_workers(within, acting);
        Held { board, counts: (held as u64, active as u64) }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.board.release_workers();
    }
}

/// Oracle_High applied once: the workers held (`acting` of them being the
/// caller), every misplaced sampled page moved to its dominant accessor's
/// node.
fn act_oracle(oracle: &AppliedOracle, acting: usize) -> Result<MigrationLog> {
    let began = Instant::now();
    let board = &*oracle.board;
    let mut log = MigrationLog { epochs: 1, by_worker: acting > 0, ..MigrationLog::default() };
    // The oracle holds the workers while it moves: under TCG a page takes
    // about 0.6 ms to move, and workers running meanwhile made most of a
    // small run's accesses before the placement was the oracle's. Released
    // when `held` drops, on every way out.
    let hold = oracle.hold.unwrap_or_else(|| (oracle.start.elapsed() / 4).clamp(HOLD_MIN, HOLD_MAX));
    let held = Held::new(board, hold, acting);
    if board.run_over(oracle.left_before) {
        // The run's workers have all finished (its stretch ended in the
        // gap before the run stops the thread): moves now would come after
        // its last access. The samples stay on the board, and a later run
        // of the stretch acts on them at its start.
        return Ok(log);
    }
    if let Some(chosen) = move_hottest(board, oracle.nodes, oracle.page_size, usize::MAX, oracle.start, &mut log)? {
        log.held_workers = Some(held.counts);
        log.oracle_chosen_ns = Some(chosen);
    }
    log.work_ns = began.elapsed().as_nanos() as u64;
    Ok(log)
}
