//! No thread leaks from a pool with helpers: the process has as many
//! threads after 100 runs as after 1, and after the pool is dropped as
//! before it was built. Alone in its test target, so that no other test's
//! threads come and go meanwhile.

#[path = "it/pool_common.rs"]
mod pool_common;

use pool_common::{Counting, Helped, add_with_helpers};
use skelaff_worklist::{Builder, Helpers, WorkerPool};

/// The threads of this process, as Linux lists them.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").expect("/proc/self/task").count()
}

#[test]
fn runs_with_helpers_leak_no_thread_and_dropping_the_pool_joins_them_all() {
    let workers = 2;
    let builder = Builder::new().threads(workers).placement(Helped { cpu: None }).helpers(Helpers::On);
    let assist = Counting::default();
    // Whatever the STM or the runtime starts once per process starts here.
    drop(WorkerPool::new(&builder).map(|p| add_with_helpers(&builder, &p, &assist, 10)).unwrap());
    let before = threads();

    let pool = WorkerPool::new(&builder).unwrap();
    assert_eq!(threads(), before + workers, "the pool's workers");
    let (sum, _) = add_with_helpers(&builder, &pool, &assist, 100);
    assert_eq!(sum, 5050);
    let after_one = threads();
    assert_eq!(after_one, before + 2 * workers, "one helper per worker, made by the first run with helpers");
    for round in 1..100 {
        let (sum, report) = add_with_helpers(&builder, &pool, &assist, 100);
        assert_eq!(sum, 5050, "round {round}");
        assert_eq!(report.helpers.per_helper.len(), workers, "round {round}");
    }
    assert_eq!(threads(), after_one, "threads after 100 runs against after 1");
    drop(pool);
    assert_eq!(threads(), before, "threads after the pool was dropped against before it was built");
}
