//! What the worker-pool tests share: a skeleton that sums, a helper
//! implementation that records where its bodies ran (and can panic), and
//! a placement that gives every worker a helper place.
#![allow(dead_code)] // helper_pool_threads uses part of it

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::ThreadId;

use parking_lot::Mutex;
use skelaff_numa_alloc::Topology;
use skelaff_stm::{TVar, TxError, TxOps};
use skelaff_worklist::{
    Assist, Builder, ChannelFigures, HelperFigures, HelperPlace, HelperSite, ProcessCtx, RunReport, Skeleton,
    ThreadLayout, ThreadPlace, ThreadPlacement, WorkerInfo, WorkerPool,
};

/// Sums its units.
pub(crate) struct Add;

impl Skeleton for Add {
    type Unit = u64;
    type Shared = TVar<u64>;
    type PerWorker = ();
    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        u: &u64,
        _: &mut (),
        t: &'t TVar<u64>,
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        tx.update(t, |v| v + u).map(|_| ())
    }
}

/// Unpinned workers, each with a helper place: on `cpu` (a CPU the
/// process may lack, to see a helper that cannot be pinned), or unpinned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Helped {
    pub(crate) cpu: Option<usize>,
}

impl ThreadPlacement for Helped {
    fn name(&self) -> String {
        format!("helped-{:?}", self.cpu)
    }
    fn place(&self, _: &Topology, workers: usize) -> Result<ThreadLayout, skelaff_numa_alloc::Error> {
        let site = if self.cpu.is_some() { HelperSite::Dedicated } else { HelperSite::Unpinned };
        let place = ThreadPlace { cpu: None, node: None, helper: Some(HelperPlace { cpu: self.cpu, site }) };
        Ok(ThreadLayout { workers: vec![place; workers], oversubscribed: false })
    }
}

/// Counts the units handed over, and records the threads its helper
/// bodies ran on; with `panic_in_helper`, every helper body panics.
#[derive(Default)]
pub(crate) struct Counting {
    pub(crate) panic_in_helper: bool,
    pub(crate) bodies: AtomicU64,
    pub(crate) threads: Mutex<HashSet<ThreadId>>,
    pub(crate) names: Mutex<HashSet<String>>,
}

pub(crate) struct Channel {
    place: Option<HelperPlace>,
    shown: AtomicU64,
    done: AtomicBool,
}

impl Assist<Add> for Counting {
    type Channel = Channel;
    type WorkerSide = ();
    fn channel(&self, _: &WorkerInfo, place: Option<HelperPlace>) -> Channel {
        Channel { place, shown: AtomicU64::new(0), done: AtomicBool::new(false) }
    }
    fn worker_start(&self, _: &Channel) {}
    fn worker_end(&self, _: &Channel, _: ()) {}
    fn helper(&self, ch: &Channel, _: &Add, _: &TVar<u64>, _: &WorkerInfo) {
        let me = std::thread::current();
        self.threads.lock().insert(me.id());
        self.names.lock().insert(me.name().unwrap_or("").to_owned());
        self.bodies.fetch_add(1, Ordering::SeqCst);
        assert!(!self.panic_in_helper, "helper fails on purpose");
        while !ch.done.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
    }
    fn handoff(&self, ch: &Channel, _: &mut (), next: Option<&u64>) {
        if next.is_some() {
            ch.shown.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn finish(&self, ch: &Channel) {
        ch.done.store(true, Ordering::Release);
    }
    fn figures(&self, ch: Channel) -> ChannelFigures {
        let helper = ch.place.map(|p| HelperFigures { units_handed: ch.shown.into_inner(), ..HelperFigures::new(p) });
        ChannelFigures { helper, ..Default::default() }
    }
}

/// Sums `1..=n` on `pool` with `assist`'s helpers: the sum and the report.
pub(crate) fn add_with_helpers(builder: &Builder, pool: &WorkerPool, assist: &Counting, n: u64) -> (u64, RunReport) {
    let total = TVar::new(0);
    let mut wl = builder.clone().build(&Add, &total).unwrap();
    wl.add_work_units(1..=n);
    let report = wl.run_with_on(pool, assist).unwrap();
    (total.load(), report)
}

/// Splits ranges until they are small, then counts their numbers (units
/// generate units: SkelAff's switch to bind happens in every run).
pub(crate) struct Split;

impl Skeleton for Split {
    type Unit = (u64, u64);
    type Shared = TVar<u64>;
    type PerWorker = ();
    fn init_worker(&self, _: &TVar<u64>, _: &WorkerInfo) {}
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &(lo, hi): &'t (u64, u64),
        _: &mut (),
        count: &'t TVar<u64>,
        ctx: &mut ProcessCtx<(u64, u64)>,
    ) -> Result<(), TxError> {
        if hi - lo > 8 {
            let mid = (lo + hi) / 2;
            ctx.add_work_unit((lo, mid));
            ctx.add_work_unit((mid, hi));
            return Ok(());
        }
        tx.update(count, |c| c + (hi - lo)).map(|_| ())
    }
}
