//! Applications whose parallel part is several skeleton runs (kmeans runs
//! one per iteration, genome one per phase and overlap length): their
//! reports summed into one.

use std::time::Duration;

use skelaff_helper_threads::HelperThreads;
use skelaff_worklist::{Builder, OracleStretch, RunReport, Skeleton, Worklist};

use crate::app::CommonArgs;

/// The reports of the skeleton runs that make up one timed phase, summed
/// into one [`RunReport`] per application run ([`RunReport::merge`]:
/// times, units, statistics and helper figures summed per worker index;
/// each decision kept once).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::phases::Runs;
/// use skelaff_stm::{TVar, TxError, TxOps};
/// use skelaff_worklist::{Builder, ProcessCtx, Skeleton, WorkerInfo};
///
/// struct Add;
/// impl Skeleton for Add {
///     type Unit = u64;
///     type Shared = TVar<u64>;
///     type PerWorker = ();
///     fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}
///     fn process<'t, X: TxOps<'t>>(&'t self, tx: &mut X, u: &u64, _: &mut (), t: &'t TVar<u64>, _: &mut ProcessCtx<u64>) -> Result<(), TxError> {
///         tx.update(t, |v| v + u).map(|_| ())
///     }
/// }
///
/// let total = TVar::new(0);
/// let mut runs = Runs::default();
/// for _ in 0..3 {
///     let mut wl = Builder::new().threads(1).build(&Add, &total)?;
///     wl.add_work_units([1, 2, 3]);
///     runs.push(wl.run()?);
/// }
/// assert_eq!(runs.len(), 3);
/// let r = runs.merged().expect("three runs");
/// assert_eq!(r.units, 9);
/// assert_eq!(total.load(), 18);
/// # Ok::<(), skelaff_worklist::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct Runs {
    merged: Option<RunReport>,
    count: usize,
    /// The helper threads of every run, so what the timing probe learnt in
    /// one run holds in the next.
    helpers: HelperThreads,
    /// The applied oracle's stretch, over all the runs (`--oracle-after-ms`
    /// or `--oracle-after-units`).
    oracle: Option<OracleStretch>,
}

impl Runs {
    /// The builder for the next run: as [`CommonArgs::builder`], except that
    /// `--oracle-after-ms` (or `--oracle-after-units`) counts skeleton time
    /// (or units) over all the runs, so that the oracle acts in a program
    /// whose runs are each shorter than its stretch (kmeans's iterations).
    pub fn builder(&mut self, common: &CommonArgs, threads: usize) -> Builder {
        let stretch = match &self.oracle {
            Some(s) => Some(s.clone()),
            None => {
                self.oracle = common.oracle_stretch();
                self.oracle.clone()
            }
        };
        common.builder(threads).oracle(stretch)
    }

    /// Runs `worklist` as `common` asks (helpers shared with the earlier
    /// runs) and adds its report.
    ///
    /// # Errors
    ///
    /// As [`Worklist::run`].
    pub fn run<S: Skeleton>(
        &mut self,
        common: &CommonArgs,
        worklist: &mut Worklist<'_, S>,
    ) -> Result<(), skelaff_worklist::Error>
    where
        S::Unit: Clone,
    {
        let r = common.run_helped_by(worklist, &self.helpers)?;
        self.push(r);
        Ok(())
    }

    /// Adds the report of one run.
    pub fn push(&mut self, r: RunReport) {
        self.count += 1;
        match &mut self.merged {
            Some(m) => m.merge(r),
            None => self.merged = Some(r),
        }
    }

    /// How many runs were added.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no run was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Wall time of the runs so far (the skeleton's part of the phase).
    pub fn wall(&self) -> Duration {
        self.merged.as_ref().map_or(Duration::ZERO, |m| m.wall)
    }

    /// The summed report (`None` if no run was added).
    pub fn merged(self) -> Option<RunReport> {
        self.merged
    }
}

/// Does the one-time set-up of a process before the clock starts:
/// discovers the machine's topology (reading sysfs, or hwloc with the
/// feature `hwloc`, which takes tens of milliseconds; the skeleton reads
/// the cached result), starts the STM (pages in its lock table, a few
/// milliseconds) and readies the worker pool the runs of `common` at
/// `threads` threads will use ([`Builder::warm_up`]: its threads created,
/// pinned and run once, about 3 ms on a two-core machine). Without it the
/// first timed skeleton run pays for all three. STAMP likewise creates its
/// threads and calls `TM_STARTUP` before starting the clock.
///
/// Returns the time it took ([`Outcome::prepared`](crate::app::Outcome::prepared)).
///
/// # Errors
///
/// The skeleton's error if the machine's topology cannot be read or the
/// pool's threads cannot be made.
pub fn prepare_before_timing(common: &CommonArgs, threads: usize) -> Result<Duration, skelaff_worklist::Error> {
    let start = std::time::Instant::now();
    skelaff_numa_alloc::Topology::get()?;
    skelaff_stm::startup();
    common.builder(threads).warm_up()?;
    Ok(start.elapsed())
}

/// A 64-bit digest of a value, the same in every run of the program
/// (equal values, equal digests): how runs are compared in figures (each
/// application's crate computes its own figures' digests with it).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::phases::digest;
///
/// assert_eq!(digest(&[1u32, 2, 3][..]), digest(&vec![1u32, 2, 3][..]));
/// assert_ne!(digest("abc"), digest("acb"));
/// ```
pub fn digest<T: std::hash::Hash + ?Sized>(x: &T) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(x)
}
