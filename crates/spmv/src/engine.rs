//! [`SpmvEngine`]: the set-up every program of this crate starts with — MASA's
//! preprocessing for a thread count, its pinned team, and the options the
//! operators are built with — in one value, with one line that says what
//! was set up.

use core::fmt;

use skelaff_numa_alloc::Topology;

use crate::error::Result;
use crate::kernel::Simd;
use crate::masa::{ArrayPlacement, Masa, Schedule, SplitKind};
use crate::matrix::Csr;
use crate::nas::{self, Class, NasReport};
use crate::ops::{CsrSpmv, SpmvOptions};
use crate::team::Team;

/// What to set up: threads, placement, split, kernels and pages.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{ArrayPlacement, SpmvEngineOptions};
///
/// let o = SpmvEngineOptions { threads: 2, placement: ArrayPlacement::FirstTouch, ..SpmvEngineOptions::default() };
/// assert!(o.huge_pages && o.simd.is_none());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct SpmvEngineOptions {
    /// Team threads, one pinned per CPU (scatter, grouped by node).
    pub threads: usize,
    /// Where the arrays go.
    pub placement: ArrayPlacement,
    /// How rows are split among the threads.
    pub split: SplitKind,
    /// The kernels (`None`: the best this CPU has).
    pub simd: Option<Simd>,
    /// Whether arrays ask for transparent huge pages.
    pub huge_pages: bool,
}

impl Default for SpmvEngineOptions {
    fn default() -> Self {
        SpmvEngineOptions {
            threads: 1,
            placement: ArrayPlacement::Masa,
            split: SplitKind::Rows,
            simd: None,
            huge_pages: true,
        }
    }
}

/// MASA preprocessed for this machine, its team started, and the operator
/// options resolved (a kernel level the CPU lacks falls back to portable).
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{SpmvEngine, SpmvEngineOptions, TeamSpmv, Triplets};
///
/// let engine = SpmvEngine::new(SpmvEngineOptions { threads: 2, ..SpmvEngineOptions::default() })?;
/// let mut t = Triplets::new(2, 2)?;
/// t.push(0, 0, 2.0)?;
/// t.push(1, 0, 1.0)?;
/// let mut op = engine.csr(&t.to_csr())?;
/// let mut y = [0.0; 2];
/// op.apply(engine.team(), &[1.0, 1.0], &mut y)?;
/// assert_eq!(y, [2.0, 1.0]);
/// assert!(engine.to_string().starts_with("2 threads"));
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Debug)]
pub struct SpmvEngine {
    masa: Masa,
    team: Team,
    opts: SpmvOptions,
}

impl SpmvEngine {
    /// Preprocesses MASA on this machine for `opts.threads` threads with the
    /// environment's schedule ([`Schedule::from_env`]) and starts the team.
    ///
    /// # Errors
    ///
    /// [`crate::Error::ZeroThreads`]; [`crate::Error::NonStaticSchedule`] and
    /// the schedule's parse errors; topology and pinning errors.
    pub fn new(opts: SpmvEngineOptions) -> Result<SpmvEngine> {
        let masa =
            Masa::preprocess_with(Topology::get()?, opts.threads, Schedule::from_env()?)?.huge_pages(opts.huge_pages);
        let team = masa.team()?;
        let simd = opts.simd.unwrap_or_else(Simd::best);
        let opts = SpmvOptions::default().split(opts.split).placement(opts.placement).simd(simd);
        Ok(SpmvEngine { masa, team, opts })
    }

    /// MASA's state.
    pub fn masa(&self) -> &Masa {
        &self.masa
    }

    /// The pinned team.
    pub fn team(&self) -> &Team {
        &self.team
    }

    /// The options operators are built with.
    pub fn options(&self) -> SpmvOptions {
        self.opts
    }

    /// A CSR operator for `a` on this engine.
    ///
    /// # Errors
    ///
    /// As [`CsrSpmv::new`].
    pub fn csr(&self, a: &Csr<f64>) -> Result<CsrSpmv<f64>> {
        CsrSpmv::new(&self.masa, a, self.opts)
    }

    /// NAS CG of `class` on this engine ([`nas::run`]).
    ///
    /// # Errors
    ///
    /// As [`nas::run`].
    pub fn nas(&self, class: Class) -> Result<NasReport> {
        nas::run(&self.masa, &self.team, class, self.opts)
    }
}

/// `2 threads (cpu0@node0 cpu1@node0), placement masa, split rows, kernels
/// avx2, huge pages on`.
impl fmt::Display for SpmvEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slots = self.team.layout().slots();
        write!(f, "{} thread{} (", slots.len(), if slots.len() == 1 { "" } else { "s" })?;
        for (i, s) in slots.iter().enumerate() {
            write!(f, "{}cpu{}@node{}", if i == 0 { "" } else { " " }, s.cpu, s.node)?;
        }
        write!(
            f,
            "), placement {}, split {}, kernels {}, huge pages {}",
            self.opts.placement,
            self.opts.split,
            self.opts.simd,
            if self.masa.uses_huge_pages() { "on" } else { "off" }
        )
    }
}
