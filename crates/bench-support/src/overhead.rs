//! The skeleton-overhead workload, shared by `benches/worklist.rs` and
//! `examples/skeleton_overhead.rs`: `units` seeded units that do nothing,
//! through the skeleton (each in an empty transaction) and through the
//! plain loops a user would write instead.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Worker};
use skelaff_stm::{TxError, TxOps};
use skelaff_worklist::{Builder, Distribution, ProcessCtx, Skeleton, WorkerInfo};

/// Units that do nothing, each in a (read-only, empty) transaction.
#[derive(Debug)]
pub struct Empty;

impl Skeleton for Empty {
    type Unit = u64;
    type Shared = ();
    type PerWorker = u64;
    fn init_worker(&self, _: &(), _: &WorkerInfo) -> u64 {
        0
    }
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        _: &mut X,
        u: &u64,
        seen: &mut u64,
        _: &'t (),
        _: &mut ProcessCtx<u64>,
    ) -> Result<(), TxError> {
        *seen = seen.wrapping_add(black_box(*u));
        Ok(())
    }
}

/// Seeds `units` units into a worklist and runs it; returns the wall time
/// of seeding and running.
pub fn skelaff(units: u64, threads: usize, distribution: Distribution) -> Duration {
    let start = Instant::now();
    let mut wl = Builder::new().threads(threads).distribution(distribution).build(&Empty, &()).expect("threads > 0");
    wl.add_work_units(0..units);
    let report = wl.run().expect("the empty skeleton cannot fail");
    assert_eq!(report.units, units);
    start.elapsed()
}

/// crossbeam-deque's canonical find-task loop over an injector, per-thread
/// FIFO deques and stealers; a thread stops when everything is empty.
pub fn crossbeam(units: u64, threads: usize) -> Duration {
    let start = Instant::now();
    let injector = Injector::new();
    for u in 0..units {
        injector.push(u);
    }
    let workers: Vec<Worker<u64>> = (0..threads).map(|_| Worker::new_fifo()).collect();
    let stealers: Vec<_> = workers.iter().map(Worker::stealer).collect();
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for local in workers {
            let (injector, stealers, done) = (&injector, &stealers, &done);
            s.spawn(move || {
                let mut seen = 0u64;
                let mut n = 0;
                loop {
                    let task = local.pop().or_else(|| {
                        std::iter::repeat_with(|| {
                            injector
                                .steal_batch_and_pop(&local)
                                .or_else(|| stealers.iter().map(|s| s.steal()).collect())
                        })
                        .find(|s| !s.is_retry())
                        .and_then(Steal::success)
                    });
                    match task {
                        Some(u) => {
                            seen = seen.wrapping_add(black_box(u));
                            n += 1;
                        }
                        None => break,
                    }
                }
                black_box(seen);
                done.fetch_add(n, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(done.load(Ordering::Relaxed) as u64, units);
    start.elapsed()
}

/// rayon's parallel iterator over the same units, on a pool of `threads`.
pub fn rayon(units: u64, pool: &rayon::ThreadPool) -> Duration {
    use rayon::prelude::*;
    let start = Instant::now();
    let v: Vec<u64> = (0..units).collect();
    let n: u64 = pool.install(|| {
        v.par_iter()
            .map(|u| {
                black_box(*u);
                1
            })
            .sum()
    });
    assert_eq!(n, units);
    start.elapsed()
}
