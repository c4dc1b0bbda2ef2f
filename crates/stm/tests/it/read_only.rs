//! Read-only mode (`Config::read_only`): no read set while the transaction
//! only reads; a write or a retry runs it again as a plain one.
#![cfg(not(loom))]

use skelaff_stm::{AbortReason, Config, Stats, TQueue, TVar, TxOps, atomically, atomically_with};

#[test]
fn a_lookup_records_no_read_set() {
    let vars: Vec<TVar<u64>> = (0..10).map(TVar::new).collect();
    std::thread::spawn(move || {
        Stats::take_thread();
        let sum = atomically_with(&Config::new().read_only(), |tx| vars.iter().try_fold(0, |s, v| Ok(s + tx.read(v)?)));
        assert_eq!(sum, 45);
        let s = Stats::take_thread();
        assert_eq!((s.commits, s.read_only_commits, s.read_set_total), (1, 1, 0));
        assert_eq!(s.total_aborts(), 0);
        // The same transaction in plain mode records its ten reads.
        atomically(|tx| vars.iter().try_fold(0, |s, v| Ok(s + tx.read(v)?)));
        assert_eq!(Stats::take_thread().read_set_total, 10);
    })
    .join()
    .unwrap();
}

#[test]
fn a_read_only_transaction_that_writes_runs_again_and_commits() {
    let (a, b) = (TVar::new(3u64), TVar::new(0u64));
    std::thread::scope(|s| {
        s.spawn(|| {
            Stats::take_thread();
            let mut runs = 0;
            let r = atomically_with(&Config::new().read_only(), |tx| {
                runs += 1;
                let x = tx.read(&a)?;
                tx.write(&b, x * 2)?;
                Ok(x)
            });
            assert_eq!((r, b.load(), runs), (3, 6, 2));
            let s = Stats::take_thread();
            assert_eq!(s.aborts_for(AbortReason::ReadOnlyUpgrade), 1);
            assert_eq!((s.commits, s.read_only_commits), (1, 0));
        });
    });
}

#[test]
fn a_read_only_transaction_can_wait_in_retry() {
    let q = TQueue::<u32>::new();
    std::thread::scope(|s| {
        let consumer = s.spawn(|| {
            atomically_with(&Config::new().read_only(), |tx| match q.peek_front(tx)? {
                Some(v) => Ok(v),
                None => Err(tx.retry()),
            })
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        atomically(|tx| q.push_back(tx, 42));
        assert_eq!(consumer.join().expect("consumer panicked"), 42);
    });
}
