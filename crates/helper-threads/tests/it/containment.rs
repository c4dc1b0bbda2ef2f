//! Shadows that misbehave on purpose are contained: panics are caught,
//! loops are cut by the lifespan, a full write log stops the shadow, and
//! the worker's results are those of a run without helpers.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use skelaff_helper_threads::{HelperConfig, HelperThreads, ShadowConfig};
use skelaff_stm::{TVar, TxError, TxOps};
use skelaff_worklist::{Builder, Helpers, ProcessCtx, RunReport, Skeleton, WorkerInfo};

use common::{helper, within};

/// How a shadow misbehaves (the worker's run never does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mischief {
    /// Index out of bounds.
    Panic,
    /// `unwrap` on `None`.
    Unwrap,
    /// Arithmetic overflow.
    Overflow,
    /// Reads forever (propagating the stop with `?`).
    LoopReading,
    /// Reads forever and swallows every error.
    LoopSwallowing,
    /// Writes more distinct words than the log holds.
    FloodLog,
    /// Calls `retry`.
    Retry,
}

struct Naughty {
    mischief: Mischief,
    cells: Vec<TVar<u64>>,
    /// More variables than the shadow's write log holds (written only by a
    /// shadow, whose writes stay in its log).
    flood: Vec<TVar<u64>>,
    /// Shadows that reached their mischief (test instrumentation: the
    /// worker waits a little for them, so that shadows get to misbehave
    /// rather than being overtaken, even on a loaded machine).
    entered: AtomicU64,
    /// Whether helpers run (else the worker does not wait).
    helpers: bool,
}

/// `true` on the helper: the shadow's `PerWorker` comes from `init_helper`.
struct IsHelper(bool);

impl Skeleton for Naughty {
    type Unit = u64;
    type Shared = TVar<u64>;
    type PerWorker = IsHelper;

    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) -> IsHelper {
        IsHelper(false)
    }
    fn init_helper(&self, _: &TVar<u64>, _: &WorkerInfo) -> IsHelper {
        IsHelper(true)
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &u: &u64,
        local: &mut IsHelper,
        sum: &'t TVar<u64>,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        let c = tx.read(&self.cells[(u % 4) as usize])?;
        if !local.0 && self.helpers {
            // Give the helper's shadow of the next unit time to misbehave
            // (at most 10 ms per unit, then 200 µs more).
            let t = Instant::now();
            while self.entered.load(Ordering::Relaxed) * 2 < u && t.elapsed() < Duration::from_millis(10) {
                std::hint::spin_loop();
            }
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(200) {
                std::hint::spin_loop();
            }
        }
        if local.0 {
            self.entered.fetch_add(1, Ordering::Relaxed);
            match self.mischief {
                Mischief::Panic => {
                    let v: Vec<u64> = Vec::new();
                    let i = std::hint::black_box(u as usize + 3);
                    std::hint::black_box(v[i]);
                }
                Mischief::Unwrap => {
                    std::hint::black_box(std::hint::black_box(None::<u64>).unwrap());
                }
                Mischief::Overflow => {
                    let big = std::hint::black_box(u64::MAX - c);
                    std::hint::black_box(big.checked_add(c + 1).expect("overflow"));
                }
                Mischief::LoopReading => loop {
                    tx.read(&self.cells[0])?;
                },
                Mischief::LoopSwallowing => loop {
                    std::hint::black_box(tx.read(&self.cells[1]).unwrap_or(0));
                },
                Mischief::FloodLog => {
                    for v in &self.flood {
                        tx.write(v, 1)?;
                    }
                }
                Mischief::Retry => return Err(tx.retry()),
            }
        }
        tx.update(sum, |s| s + u + c)?;
        Ok(())
    }
}

fn run(mischief: Mischief, helpers: Helpers) -> (u64, RunReport) {
    let skel = Naughty {
        mischief,
        cells: (0..4).map(|i| TVar::new(i * 10)).collect(),
        flood: (0..100).map(TVar::new).collect(),
        entered: AtomicU64::new(0),
        helpers: helpers != Helpers::Off,
    };
    let sum = TVar::new(0);
    let cfg = HelperConfig {
        shadow: ShadowConfig { lifespan: 64, log_capacity: 16, ..Default::default() },
        adaptive: None,
        ..Default::default()
    };
    let assist = HelperThreads::new(cfg).unwrap();
    let mut wl = Builder::new().threads(1).helpers(helpers).build(&skel, &sum).unwrap();
    wl.add_work_units(0..300);
    let report = wl.run_with(&assist).unwrap();
    (sum.load(), report)
}

#[test]
fn misbehaving_shadows_are_contained_and_change_nothing() {
    let expected: u64 = (0..300u64).map(|u| u + (u % 4) * 10).sum();
    for mischief in [
        Mischief::Panic,
        Mischief::Unwrap,
        Mischief::Overflow,
        Mischief::LoopReading,
        Mischief::LoopSwallowing,
        Mischief::FloodLog,
        Mischief::Retry,
    ] {
        let (off, _) = within(Duration::from_secs(60), "run without helpers", move || run(mischief, Helpers::Off));
        assert_eq!(off, expected);
        let (on, report) = within(Duration::from_secs(60), "run with helpers", move || run(mischief, Helpers::On));
        assert_eq!(on, expected, "{mischief:?}: results differ with helpers on");
        let h = helper(&report, 0);
        assert!(h.shadows_run > 0, "{mischief:?}: no shadow ran: {h:?}");
        // Every shadow that ran to its end by itself was stopped by the
        // mischief, unless the worker overtook it first.
        let e = h.ends;
        let (what, n) = match mischief {
            Mischief::Panic | Mischief::Unwrap | Mischief::Overflow | Mischief::LoopSwallowing => {
                ("panicked", e.panicked)
            }
            Mischief::LoopReading => ("lifespan", e.lifespan),
            Mischief::FloodLog => ("log_full", e.log_full),
            Mischief::Retry => ("unsupported", e.unsupported),
        };
        assert!(n > 0, "{mischief:?}: expected {what} > 0: {h:?}");
        assert_eq!(h.ends.completed, 0, "{mischief:?}: a shadow cannot complete here: {h:?}");
    }
}
