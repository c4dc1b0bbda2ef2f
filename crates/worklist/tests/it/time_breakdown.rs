//! The report's time breakdown: which units are timed, how the parts add
//! up to the workers' busy time, and its JSON.

use std::time::{Duration, Instant};

use skelaff_stm::{TVar, TxError, TxOps};
use skelaff_worklist::{
    Builder, ProcessCtx, RunReport, Skeleton, TIME_DENSE_UNITS, TIME_EVERY, TIME_EVERY_LATER, WorkerInfo,
};

/// Each unit spins `spin` inside its transaction, then counts itself.
struct Spin {
    spin: Duration,
}

impl Skeleton for Spin {
    type Unit = u32;
    type Shared = TVar<u64>;
    type PerWorker = ();

    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        _: &u32,
        _: &mut (),
        count: &'t TVar<u64>,
        _: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        let t = Instant::now();
        while t.elapsed() < self.spin {
            std::hint::spin_loop();
        }
        tx.update(count, |c| c + 1).map(|_| ())
    }
}

fn run(threads: usize, units: u32, spin: Duration) -> RunReport {
    let count = TVar::new(0);
    let skeleton = Spin { spin };
    let mut wl = Builder::new().threads(threads).build(&skeleton, &count).unwrap();
    wl.add_work_units(0..units);
    let r = wl.run().unwrap();
    assert_eq!(count.load(), u64::from(units));
    r
}

#[test]
fn every_64th_unit_of_each_worker_is_timed_then_every_512th() {
    assert_eq!(TIME_EVERY, 64);
    // From a random offset: n units hold floor(n / 64) or one more timed ones.
    let timed_ok = |units: u64, timed: u64| timed == units / 64 || timed == units / 64 + 1;
    for _ in 0..4 {
        let r = run(1, 1000, Duration::ZERO);
        let t = r.time();
        assert_eq!(t.units, 1000);
        assert!(timed_ok(1000, t.timed_units), "{t:?}");
    }
    let r = run(2, 1000, Duration::ZERO);
    assert_eq!(r.time().units, 1000);
    for w in &r.workers {
        assert!(timed_ok(w.units, w.time.timed_units), "{:?}", w.time);
    }
    // 6400 units: the first 4096 hold exactly 64 timed, whatever the
    // offset (under 64); then one in 512 from 4096 + offset: 4096, 4608,
    // 5120, 5632 and 6144 plus the offset, all under 6400.
    assert_eq!((TIME_DENSE_UNITS, TIME_EVERY_LATER), (4096, 512));
    assert_eq!(run(1, 6400, Duration::ZERO).time().timed_units, 64 + 5);
}

#[test]
fn the_parts_add_up_to_the_busy_time_and_process_holds_the_spin() {
    let r = run(1, 256, Duration::from_micros(50));
    let w = &r.workers[0];
    let t = w.time;
    assert_eq!(t.timed_units, 4);
    // The parts add up to the busy time, which is measured in full.
    assert_eq!(t.busy(), w.busy);
    assert_eq!(t.untimed, Duration::ZERO);
    // The timed units' own time: each spun 50 µs inside `process`.
    assert!(t.timed >= Duration::from_micros(200), "{t:?}");
    // Spinning is most of every unit's time: `process` gets most of `busy`
    // (a unit's other phases take a few microseconds at most).
    assert!(t.process > t.busy() / 2, "{t:?}");
    assert_eq!(t.idle, w.idle);
    assert!(t.setup > Duration::ZERO, "{t:?}");
    // Fewer units than one in 64 may leave nothing timed: then all untimed.
    let r = run(1, 1, Duration::ZERO);
    let t = r.workers[0].time;
    assert!(t.timed_units <= 1);
    if t.timed_units == 0 {
        assert_eq!((t.untimed, t.process), (r.workers[0].busy, Duration::ZERO));
    }
}

#[test]
fn the_json_carries_the_breakdown_and_its_shares() {
    let r = run(2, 300, Duration::ZERO);
    let j = r.to_json();
    let time = &j["time"];
    assert_eq!(time["units"], 300);
    for part in ["setup", "pool", "aborted", "process", "commit", "other", "untimed", "idle"] {
        assert!(time["seconds"][part].is_number(), "{part}: {time}");
        assert!(time["shares"][part].is_number(), "{part}: {time}");
    }
    let shares: f64 = time["shares"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-9, "{time}");
    assert!(j["setup_seconds"].as_f64().unwrap() > 0.0, "{j}");
    assert_eq!(j["workers"][0]["time"]["units"], r.workers[0].units);
}
