//! Statistics per thread and summed; the access sampler.
#![cfg(not(loom))]

use skelaff_stm::sampler::{self, AccessKind};
use skelaff_stm::{
    AbortReason, Config, Sampled, SamplerError, Stats, TVar, TxOps, atomically, atomically_with, try_atomically,
};

/// Transactions whose accesses tick the sampler.
const SAMPLED: Config<Sampled> = Config::new().sampled();

#[test]
fn per_thread_counts_add_up_to_the_work() {
    let v = TVar::new(0u64);
    let per_thread: Vec<Stats> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    Stats::take_thread();
                    for _ in 0..10_000 {
                        atomically(|tx| tx.update(&v, |x| x + 1));
                    }
                    for _ in 0..100 {
                        atomically(|tx| tx.read(&v));
                    }
                    let r: Result<(), &str> = try_atomically(|tx| {
                        tx.write(&v, 0).map_err(|_| "tx")?;
                        Err("user")
                    });
                    assert_eq!(r, Err("user"));
                    Stats::take_thread()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread panicked")).collect()
    });
    assert_eq!(v.load(), 20_000);
    let mut sum = Stats::default();
    for s in &per_thread {
        assert_eq!(s.commits, 10_100);
        assert_eq!(s.read_only_commits, 100);
        assert_eq!(s.aborts_for(AbortReason::Explicit), 1);
        assert_eq!(s.write_set_max, 1);
        assert_eq!(s.read_set_max, 1);
        assert_eq!(s.total_aborts(), s.conflict_aborts() + 1);
        sum.merge(s);
    }
    assert_eq!(sum.commits, 20_200);
    // The threads reset their counters when they took them, so the global
    // sum (which includes exited threads) holds at least this thread's own.
    let before = Stats::global().commits;
    atomically(|tx| tx.read(&v));
    assert!(Stats::global().commits > before);
}

#[test]
fn the_sampler_is_bounded_and_sees_reads_and_writes() {
    let vars: Vec<TVar<u32>> = (0..10).map(TVar::new).collect();
    assert_eq!(sampler::enable(0, 4), Err(SamplerError::Zero { what: "period" }));
    sampler::enable(2, 4).expect("enable");
    atomically_with(&SAMPLED, |tx| {
        for v in &vars {
            let x = tx.read(v)?;
            tx.write(v, x + 1)?;
        }
        // The sampler cannot be changed inside a transaction.
        assert_eq!(sampler::disable(), Err(SamplerError::InTransaction));
        Ok(())
    });
    let s = sampler::take().expect("take");
    assert_eq!(s.seen, 20);
    assert_eq!(s.accesses.len(), 4, "capacity bounds the records");
    assert_eq!(s.dropped, 6, "10 samples (every 2nd of 20), 4 kept");
    // Every 2nd access of read, write, read, write...: the writes.
    assert!(s.accesses.iter().all(|a| a.kind == AccessKind::Write));
    assert_eq!(s.accesses[0].addr, vars[0].addr());
    sampler::disable().expect("disable");
    atomically_with(&SAMPLED, |tx| tx.read(&vars[0]));
    assert_eq!(sampler::take().expect("take").seen, 0, "disabled: nothing seen");
}

#[test]
fn plain_transactions_are_not_sampled() {
    let v = TVar::new(0u32);
    sampler::enable(1, 64).expect("enable");
    // Plain mode: no sampler code in the accesses, so nothing is seen even
    // while the thread's sampler is on.
    atomically(|tx| tx.update(&v, |x| x + 1));
    let plain = sampler::take().expect("take");
    // The same transaction in sampled mode: both accesses recorded.
    atomically_with(&SAMPLED, |tx| tx.update(&v, |x| x + 1));
    let sampled = sampler::take().expect("take");
    sampler::disable().expect("disable");
    assert_eq!((plain.seen, plain.accesses.len()), (0, 0));
    assert_eq!((sampled.seen, sampled.accesses.len()), (2, 2));
}

#[test]
fn seen_counts_partial_periods_across_takes() {
    let v = TVar::new(0u32);
    let mut s = sampler::Samples::default();
    sampler::enable(3, 64).expect("enable");
    // Five reads: the third is recorded, two are past it.
    atomically_with(&SAMPLED, |tx| (0..5).try_for_each(|_| tx.read(&v).map(drop)));
    sampler::take_into(&mut s).expect("take");
    assert_eq!((s.seen, s.accesses.len()), (5, 1));
    // Four more: accesses 6 and 9 of the whole run are recorded.
    atomically_with(&SAMPLED, |tx| (0..4).try_for_each(|_| tx.read(&v).map(drop)));
    sampler::take_into(&mut s).expect("take");
    assert_eq!((s.seen, s.accesses.len()), (4, 2), "the old records are replaced, not appended");
    // One, then disabled: counted once, and nothing after.
    atomically_with(&SAMPLED, |tx| tx.read(&v));
    sampler::disable().expect("disable");
    atomically_with(&SAMPLED, |tx| tx.read(&v));
    sampler::take_into(&mut s).expect("take");
    assert_eq!((s.seen, s.accesses.len()), (1, 0));
}
