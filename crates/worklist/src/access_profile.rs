//! A run's sampled page-access profile: each worker's STM sampler drained
//! into a bounded recorder after every [`DRAIN_UNITS`] units, the workers'
//! recorders merged and attributed to the kernel's nodes when the run ends.
//!
//! What it sees and misses: the STM's sampler sees every `period`-th
//! transactional read and write of a worker (the `TVar`'s address); it does
//! not see non-transactional accesses (the input's generation, code outside
//! `process`); accesses of attempts that aborted are sampled like the
//! committed ones. A sample's time is the end of the batch of up to
//! [`DRAIN_UNITS`] units that made it (the sampler keeps no clock, and
//! reading the clock and draining after every unit cost 5–8% of the run of
//! an application whose units take a microsecond, such as vacation's; after
//! every 16 units, timed inside the workers, still 3–5%), so times have the
//! resolution of some tens of units (tens of microseconds for vacation).
//! The pages' nodes are asked of the kernel once, at the end of the run,
//! while the skeleton's data is still alive (by physical frame from
//! `/proc/self/pagemap`, `move_pages` for the rest): right for the page
//! policies, which never move a page once placed. That end costs 0.1-0.9
//! microseconds per distinct sampled page in the kernel; the workers'
//! time-ordered samples are merged a block at a time into the largest
//! worker's buffer, and each sample finds its page's answer through a page
//! index ([`PageIndex`](skelaff_locality::PageIndex)) rather than a sort:
//! about 4 ms for vacation's default workload (90,700 samples on 6,800
//! pages), 1% of its run, where sorting the samples took twice that.

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::Arc;

use skelaff_locality::{
    Attribution, Machine, MigrationLog, Overflow, PageAccess, Profile, ProfileHeader, Recorder, Sampling,
};
use skelaff_numa_alloc::Topology;
use skelaff_stm::sampler;

use crate::moves::PageMover;

/// The STM sampler's own buffer: it is drained after every
/// [`DRAIN_UNITS`] units, so it only has to hold that many units' samples
/// (beyond, samples are counted as dropped).
const UNIT_SAMPLES: usize = 1 << 16;

/// Samples a worker's recorder makes room for when it starts (at most its
/// capacity): 32 KiB, a short run's worth at the default period. A longer
/// run's buffer doubles as it fills, which for large blocks is a `mremap`
/// (skelaff's allocator and glibc's alike), not a copy; reserving 16K
/// samples up front cost every run 128 fresh pages per worker, a fixed
/// cost that weighed on runs of a few milliseconds (labyrinth's small
/// input keeps 50 samples).
const RECORDER_RESERVE: usize = 1 << 10;

/// Units between two drains of the STM sampler into the recorder.
pub(crate) const DRAIN_UNITS: u32 = 64;

/// While an applied oracle waits, a worker also drains (and posts to the
/// board) after any unit that ends this long after its last drain: the
/// oracle plans from what is on the board, and in a run of long units
/// (labyrinth's: a few per worker) 64 units are the whole run.
const POST_EVERY: Duration = Duration::from_millis(1);

/// One worker's share of the profile while it runs.
pub(crate) struct WorkerSampler {
    thread: u16,
    node: u16,
    recorder: Recorder,
    /// Transactional accesses the STM saw (sampled or not).
    seen: u64,
    /// Samples the STM's buffer could not hold.
    dropped: u64,
    /// The buffer the STM's records are swapped into at each drain (kept,
    /// so draining allocates nothing once both buffers have grown).
    unit: sampler::Samples,
    /// Units since the last drain.
    undrained: u32,
    /// When this worker last drained at a checkpoint (time since the run's start).
    posted_at: Duration,
    /// What moves pages as the run goes, when something does: each kept
    /// sample also goes to its board, and the worker looks in at its
    /// checkpoints.
    mover: Option<Arc<dyn PageMover>>,
}

impl WorkerSampler {
    /// Switches the STM sampler on for this thread (between transactions).
    pub(crate) fn start(
        sampling: Sampling,
        thread: usize,
        node: usize,
        mover: Option<Arc<dyn PageMover>>,
    ) -> Result<WorkerSampler, skelaff_stm::SamplerError> {
        sampler::enable(sampling.period, UNIT_SAMPLES)?;
        let _ = sampler::take();
        // The STM already keeps one access in `period`; the recorder keeps
        // every sample it is given until its capacity forces it to thin.
        let every = Sampling { period: 1, capacity: sampling.capacity };
        if let Some(m) = &mover {
            m.board().enter();
        }
        Ok(WorkerSampler {
            thread: u16::try_from(thread).unwrap_or(u16::MAX),
            node: u16::try_from(node).unwrap_or(u16::MAX),
            recorder: {
                let mut r = Recorder::new(every, Overflow::Thin);
                r.reserve(RECORDER_RESERVE);
                r
            },
            seen: 0,
            dropped: 0,
            unit: sampler::Samples::default(),
            undrained: 0,
            posted_at: Duration::ZERO,
            mover,
        })
    }

    /// A unit committed: every [`DRAIN_UNITS`] units, [`drain`](Self::drain).
    #[inline]
    pub(crate) fn unit_done(&mut self, at: impl Fn() -> Duration, page_size: usize) {
        self.undrained += 1;
        if self.mover.as_ref().is_some_and(|m| m.looking()) && self.checkpoint(&at, page_size, true) {
            return;
        }
        if self.undrained >= DRAIN_UNITS {
            self.drain(at, page_size);
        }
    }

    /// A worker with no unit to run: it waits at the oracle's gate too, and
    /// acts for the oracle when its stretch has ended (a run of long units
    /// may have only idle workers at the end of the stretch, none between
    /// two units).
    #[inline]
    pub(crate) fn idle(&mut self, at: impl Fn() -> Duration, page_size: usize) {
        if self.mover.as_ref().is_some_and(|m| m.looking()) {
            self.checkpoint(&at, page_size, false);
        }
    }

    /// With an applied oracle on the board: while it moves pages, this
    /// worker's samples go to the board and it waits; until it acts, the
    /// unit just committed (`unit`) is counted toward a stretch of units,
    /// its stretch's end is looked for (one clock read: only runs with an
    /// applied oracle pay it), and the first worker to see it acts at once,
    /// instead of the oracle's thread, which may wait long for a CPU.
    /// Whether the samples were drained.
    #[cold]
    fn checkpoint(&mut self, at: &impl Fn() -> Duration, page_size: usize, unit: bool) -> bool {
        // Decided on the borrowed mover (no clone of the shared `Arc`, whose
        // count every worker would bump after every unit of the stretch).
        let due = match &self.mover {
            None => return false,
            Some(m) if m.board().holding() => None,
            Some(m) => {
                if unit {
                    m.unit_committed();
                }
                let now = at();
                if !m.due(now) {
                    if self.undrained > 0 && now.saturating_sub(self.posted_at) >= POST_EVERY {
                        self.posted_at = now;
                        self.drain(|| now, page_size);
                        return true;
                    }
                    return false;
                }
                Some(now)
            }
        };
        match due {
            None => self.drain(at, page_size),
            Some(now) => self.drain(|| now, page_size),
        }
        if let Some(m) = &self.mover {
            match due {
                None => m.board().checkpoint(),
                Some(now) => {
                    m.act_if_due(now);
                }
            }
        }
        true
    }

    /// Moves the samples of the units committed since the last drain into
    /// the recorder, stamped `at()` (time since the run's start; read only
    /// when there are samples) and converted to pages.
    pub(crate) fn drain(&mut self, at: impl FnOnce() -> Duration, page_size: usize) {
        self.undrained = 0;
        if sampler::take_into(&mut self.unit).is_err() {
            return;
        }
        let s = &self.unit;
        self.seen += s.seen;
        self.dropped += s.dropped;
        if s.accesses.is_empty() {
            return;
        }
        // Page sizes are powers of two: a shift, not a division per sample.
        let shift = page_size.trailing_zeros();
        let page_of = |addr: usize| {
            if page_size.is_power_of_two() { (addr >> shift) as u64 } else { (addr / page_size.max(1)) as u64 }
        };
        // With a board, the batch is posted whole and stamped while the
        // worker's slot is locked: a drain of the board then either has the
        // whole batch and its time is before the drain's, or neither (see
        // `SampleBoard::post_stamped`).
        let at = match &self.mover {
            Some(m) => m.board().post_stamped(
                usize::from(self.thread),
                self.node,
                at,
                s.accesses.iter().map(|a| page_of(a.addr)),
            ),
            None => at(),
        };
        let t = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX);
        for a in &s.accesses {
            let page = page_of(a.addr);
            let access = match a.kind {
                sampler::AccessKind::Read => PageAccess::read(page, self.thread, self.node, t),
                sampler::AccessKind::Write => PageAccess::write(page, self.thread, self.node, t),
            };
            self.recorder.offer(access);
        }
    }

    /// Switches the sampler off; the last samples are drained first.
    pub(crate) fn stop(mut self, at: impl FnOnce() -> Duration, page_size: usize) -> FinishedSampler {
        self.drain(at, page_size);
        if let Some(m) = &self.mover {
            m.board().leave();
        }
        let _ = sampler::disable();
        FinishedSampler { recorder: self.recorder, seen: self.seen, dropped: self.dropped }
    }
}

/// A worker's recorder once it stopped.
pub(crate) struct FinishedSampler {
    recorder: Recorder,
    seen: u64,
    dropped: u64,
}

/// The sampled accesses of a run (or of several merged runs), with the
/// node the kernel had each page on at the end of its run and the node the
/// allocator's policy meant it for.
///
/// # Examples
///
/// ```
/// use skelaff_locality::Sampling;
/// use skelaff_stm::{TVar, TxError, TxOps};
/// use skelaff_worklist::{Builder, ProcessCtx, Skeleton, WorkerInfo};
///
/// struct Bump;
/// impl Skeleton for Bump {
///     type Unit = usize;
///     type Shared = Vec<TVar<u64>>;
///     type PerWorker = ();
///     fn init_worker(&self, _: &Self::Shared, _: &WorkerInfo) {}
///     fn process<'t, X: TxOps<'t>>(&'t self, tx: &mut X, u: &usize, _: &mut (), s: &'t Self::Shared,
///                          _: &mut ProcessCtx<usize>) -> Result<(), TxError> {
///         tx.update(&s[*u % s.len()], |x| x + 1)?;
///         Ok(())
///     }
/// }
/// let shared: Vec<TVar<u64>> = (0..64).map(|_| TVar::new(0)).collect();
/// let mut w = Builder::new().threads(2).access_profile(Some(Sampling::new(1, 1 << 12)?)).build(&Bump, &shared)?;
/// w.add_work_units(0..1000);
/// let report = w.run()?;
/// let profile = report.access_profile.expect("asked for");
/// // Each unit reads and writes its TVar: two accesses, every one sampled
/// // (more if a conflict re-ran a transaction: its accesses count too).
/// assert!(profile.profile.header().seen >= 2000);
/// assert_eq!(profile.profile.accesses().len() as u64, profile.profile.header().seen);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct AccessProfile {
    /// The accesses, attributed to the pages' nodes when the kernel could
    /// say (else the header's attribution is `none` and why is in
    /// [`attribution_error`](AccessProfile::attribution_error)).
    pub profile: Profile,
    /// For sampled pages inside `NumaAlloc` chunks whose policy names one
    /// node for them (bind to a node, cyclic, interleave): that node. The
    /// kernel's node must agree; a placement check compares them.
    pub intended: BTreeMap<u64, u16>,
    /// Why the kernel could not be asked for the pages' nodes, if it could not.
    pub attribution_error: Option<String>,
    /// What the migration thread did, when the run migrated pages as it
    /// went ([`Builder::migration`](crate::Builder::migration)); the
    /// accesses are then attributed to the node their page had at the time.
    pub migration: Option<MigrationLog>,
}

impl AccessProfile {
    /// The profile of one run from its workers' recorders; `sampling` is
    /// what was asked for.
    pub(crate) fn build(
        sampling: Sampling,
        topo: &Topology,
        policy: &str,
        threads: usize,
        finished: Vec<FinishedSampler>,
        migration: Option<MigrationLog>,
    ) -> Result<AccessProfile, skelaff_locality::Error> {
        let machine = Machine::from_topology("this machine", topo)?;
        let mut header = ProfileHeader::new(machine, "worklist", policy, u16::try_from(threads).unwrap_or(u16::MAX));
        header.page_size = topo.page_size() as u64;
        header.sampling = sampling;
        let seen: u64 = finished.iter().map(|f| f.seen).sum();
        let dropped: u64 = finished.iter().map(|f| f.dropped).sum();
        let mut profile = Profile::from_recorders(header, finished.into_iter().map(|f| f.recorder).collect())?;
        // The recorders counted samples; the header counts accesses, and
        // each kept sample now stands for STM period x recorder period.
        let h = profile.header();
        let (period, discarded) = (sampling.period.saturating_mul(h.sampling.period), h.discarded + dropped);
        profile.restate_counts(period, seen, discarded);
        // The distinct pages, found once for both look-ups below.
        let index = profile.page_index();
        let listed;
        let pages = match &index {
            Some(index) => index.pages(),
            None => {
                listed = profile.pages();
                &listed
            }
        };
        let intended = intended_nodes(pages, profile.header().page_size);
        let (profile, attribution_error) = match &migration {
            Some(log) => match profile.clone().attribute_with_moves(&log.moves) {
                Ok(p) => (p, None),
                Err(e) => (profile, Some(e.to_string())),
            },
            // In place, without a copy of the samples: on an error the
            // profile stays as it was, unattributed.
            None => {
                let mut profile = profile;
                let attributed = match &index {
                    Some(index) => profile.attribute_indexed(index),
                    None => profile.attribute_now(),
                };
                (profile, attributed.err().map(|e| e.to_string()))
            }
        };
        Ok(AccessProfile { profile, intended, attribution_error, migration })
    }

    /// Adds the profile of a later run of the same program: its times
    /// shifted by `offset` (the earlier runs' wall time); both thinned to
    /// the larger period; then thinned by halves while the total exceeds
    /// `capacity` samples per thread.
    pub(crate) fn merge(&mut self, later: AccessProfile, offset: Duration) {
        let (mut h, mut a) = self.profile.clone().into_parts();
        let (lh, la) = later.profile.into_parts();
        let period = h.sampling.period.max(lh.sampling.period);
        let thin = |v: Vec<PageAccess>, own: u32| -> (Vec<PageAccess>, u64) {
            let step = (period / own.max(1)).max(1) as usize;
            let len = v.len();
            let kept: Vec<PageAccess> =
                v.into_iter().enumerate().filter(|(i, _)| (i + 1) % step == 0).map(|(_, x)| x).collect();
            let lost = (len - kept.len()) as u64;
            (kept, lost)
        };
        let (mut kept, lost) = thin(a, h.sampling.period);
        let shift = u64::try_from(offset.as_nanos()).unwrap_or(u64::MAX);
        let (later_kept, later_lost) = thin(la, lh.sampling.period);
        kept.extend(later_kept.into_iter().map(|x| PageAccess { time_ns: x.time_ns.saturating_add(shift), ..x }));
        a = kept;
        h.sampling.period = period;
        h.seen += lh.seen;
        h.discarded += lh.discarded + lost + later_lost;
        h.threads = h.threads.max(lh.threads);
        if h.attribution == Attribution::None {
            h.attribution = lh.attribution;
        }
        let bound = h.sampling.capacity.saturating_mul(usize::from(h.threads.max(1)));
        while a.len() > bound && h.sampling.period < u32::MAX / 2 {
            let before = a.len();
            let mut i = 0;
            a.retain(|_| {
                i += 1;
                i % 2 == 0
            });
            h.discarded += (before - a.len()) as u64;
            h.sampling.period *= 2;
        }
        match Profile::new(h, a) {
            Ok(p) => {
                self.profile = p;
                self.intended.extend(later.intended);
                // The later run's log on this profile's clock.
                let shift = u64::try_from(offset.as_nanos()).unwrap_or(u64::MAX);
                let later_log = later.migration.map(|l| MigrationLog {
                    moves: l
                        .moves
                        .into_iter()
                        .map(|x| skelaff_locality::PageMove {
                            time_ns: x.time_ns.saturating_add(shift),
                            chosen_ns: x.chosen_ns.saturating_add(shift),
                            ..x
                        })
                        .collect(),
                    oracle_chosen_ns: l.oracle_chosen_ns.map(|t| t.saturating_add(shift)),
                    ..l
                });
                match (&mut self.migration, later_log) {
                    (Some(m), Some(l)) => {
                        m.epochs += l.epochs;
                        m.failed += l.failed;
                        m.dropped_samples += l.dropped_samples;
                        m.work_ns += l.work_ns;
                        // The oracle acts in one run of a stretch; moved
                        // pages still in place count per run, unknown if
                        // any run could not tell.
                        m.held_workers = m.held_workers.or(l.held_workers);
                        m.by_worker |= l.by_worker;
                        m.still_there = m.still_there.zip(l.still_there).map(|(a, b)| a + b);
                        m.oracle_chosen_ns = m.oracle_chosen_ns.or(l.oracle_chosen_ns);
                        m.moves.extend(l.moves);
                    }
                    (None, l) => self.migration = l,
                    (Some(_), None) => {}
                }
                if self.attribution_error.is_none() {
                    self.attribution_error = later.attribution_error;
                }
            }
            // Both were valid on one machine, so this cannot happen; keep
            // the earlier profile and say so rather than lose the run.
            Err(e) => self.attribution_error = Some(format!("a later run's profile was not merged: {e}")),
        }
    }
}

/// The node each sampled page's allocator chunk means it for, where the
/// chunk's policy names one.
fn intended_nodes(pages: &[u64], page_size: u64) -> BTreeMap<u64, u16> {
    use skelaff_numa_alloc::alloc::{CHUNK_SIZE, ChunkInfo, chunk_info};
    // Chunks are `CHUNK_SIZE`-aligned and the pages come sorted, so the
    // allocator is asked once per aligned window holding sampled pages,
    // and a window outside every chunk (the system heap, the stacks) is not
    // searched for again for each of its pages.
    let mut last: Option<(usize, Option<ChunkInfo>)> = None;
    pages
        .iter()
        .filter_map(|&page| {
            let addr = (page * page_size) as usize;
            let window = addr & !(CHUNK_SIZE - 1);
            let chunk = match last {
                Some((w, c)) if w == window => c,
                _ => {
                    let c = chunk_info(window as *const u8);
                    last = Some((window, c));
                    c
                }
            }?;
            let node = chunk.intended_node(addr - chunk.start)?;
            Some((page, u16::try_from(node).ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(period: u32, capacity: usize, times: &[u64]) -> AccessProfile {
        let mut h = ProfileHeader::new("2x1".parse().unwrap(), "t", "bind", 2);
        h.sampling = Sampling { period, capacity };
        h.seen = times.len() as u64 * u64::from(period);
        let a = times.iter().map(|&t| PageAccess::read(t, (t % 2) as u16, 0, t)).collect();
        AccessProfile {
            profile: Profile::new(h, a).unwrap(),
            intended: BTreeMap::new(),
            attribution_error: None,
            migration: None,
        }
    }

    #[test]
    fn merge_shifts_later_times_and_sums_counts() {
        let mut a = profile(4, 100, &[1, 2, 3]);
        a.merge(profile(4, 100, &[1, 2]), Duration::from_nanos(10));
        let times: Vec<u64> = a.profile.accesses().iter().map(|x| x.time_ns).collect();
        assert_eq!(times, [1, 2, 3, 11, 12]);
        assert_eq!((a.profile.header().seen, a.profile.header().sampling.period), (20, 4));
    }

    #[test]
    fn merge_thins_to_the_larger_period() {
        let mut a = profile(2, 100, &[1, 2, 3, 4]);
        a.merge(profile(8, 100, &[1]), Duration::from_nanos(100));
        // Period 2 -> 8: every fourth of the first profile's samples stays.
        let times: Vec<u64> = a.profile.accesses().iter().map(|x| x.time_ns).collect();
        assert_eq!(times, [4, 101]);
        assert_eq!(a.profile.header().sampling.period, 8);
        assert_eq!(a.profile.header().discarded, 3);
    }

    #[test]
    fn a_later_run_s_oracle_and_moves_are_shifted_onto_the_merged_clock() {
        use skelaff_locality::PageMove;
        let acted = MigrationLog {
            moves: vec![PageMove { page: 1, from: 1, to: 0, time_ns: 7, chosen_ns: 5 }],
            oracle_chosen_ns: Some(5),
            ..MigrationLog::default()
        };
        for first in [Some(MigrationLog::default()), None] {
            let mut a = profile(1, 100, &[1, 2]);
            a.migration = first.clone();
            let mut later = profile(1, 100, &[1]);
            later.migration = Some(acted.clone());
            a.merge(later, Duration::from_nanos(100));
            let m = a.migration.expect("merged");
            assert_eq!(m.oracle_chosen_ns, Some(105), "{first:?}");
            assert_eq!((m.moves[0].time_ns, m.moves[0].chosen_ns), (107, 105), "{first:?}");
        }
    }

    #[test]
    fn while_an_oracle_waits_a_worker_posts_its_samples_every_millisecond() {
        use skelaff_locality::OracleStretch;
        use skelaff_stm::{Config, TVar, TxOps, atomically_with};
        let page_size = 4096;
        // A stretch of units no unit here ends: the oracle waits throughout.
        let stretch = OracleStretch::units(1000);
        let sampling = Sampling { period: 1, capacity: 1 << 10 };
        let cfg = crate::Builder::new().access_profile(Some(sampling)).oracle(Some(stretch.clone()));
        let topo = Topology::get().unwrap();
        let mover = crate::moves::start(&cfg, 1, topo, std::time::Instant::now()).unwrap().expect("an oracle");
        let mut w = WorkerSampler::start(sampling, 0, 0, Some(mover.clone())).unwrap();
        let v = TVar::new(0u64);
        let unit_ending_at = |w: &mut WorkerSampler, us: u64| {
            // Sampled mode: the worker's own transactions in a profiled run.
            atomically_with(&Config::new().sampled(), |tx| tx.update(&v, |x| x + 1));
            w.unit_done(|| Duration::from_micros(us), page_size);
        };
        // Half a millisecond into the run: too soon to post.
        unit_ending_at(&mut w, 500);
        assert_eq!(w.undrained, 1);
        assert!(w.recorder.samples().is_empty());
        // 1.2 ms in: both units' samples are posted (and recorded), stamped then.
        unit_ending_at(&mut w, 1200);
        assert_eq!(w.undrained, 0);
        let times: Vec<u64> = w.recorder.samples().iter().map(|a| a.time_ns).collect();
        assert!(times.len() >= 4 && times.iter().all(|&t| t == 1_200_000), "{times:?}");
        // 0.9 ms after that post, not yet; a millisecond after it, again.
        unit_ending_at(&mut w, 2100);
        assert_eq!(w.undrained, 1);
        unit_ending_at(&mut w, 2200);
        assert_eq!(w.undrained, 0);
        assert_eq!(w.recorder.samples().last().map(|a| a.time_ns), Some(2_200_000));
        // Every unit counted toward the stretch.
        assert_eq!(stretch.units_counted(), 4);
        mover.stop().unwrap();
        // With no oracle waiting, only every `DRAIN_UNITS` units, whatever the time.
        let kept = w.recorder.samples().len();
        unit_ending_at(&mut w, 10_000_000);
        assert_eq!((w.undrained, w.recorder.samples().len()), (1, kept));
        let finished = w.stop(|| Duration::from_secs(11), page_size);
        assert!(finished.recorder.samples().len() > kept);
    }

    #[test]
    fn merged_runs_stay_bounded() {
        // Capacity 2 per thread, 2 threads: at most 4 samples whatever the runs.
        let mut a = profile(1, 2, &[1, 2, 3, 4]);
        for i in 1..=10u64 {
            a.merge(profile(1, 2, &[1, 2, 3, 4]), Duration::from_nanos(10 * i));
            assert!(a.profile.accesses().len() <= 4, "{} samples", a.profile.accesses().len());
        }
        let h = a.profile.header();
        assert_eq!(h.seen, 44);
        // What is kept stands for the accesses seen: samples x period + discarded stays whole.
        assert!(h.sampling.period >= 8, "period {}", h.sampling.period);
    }
}
