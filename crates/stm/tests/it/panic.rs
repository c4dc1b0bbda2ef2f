//! Panic safety: a panicking transaction releases every lock, writes
//! nothing, drops what it allocated, and the thread can go on.
#![cfg(not(loom))]

use crate::common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use skelaff_stm::{
    AbortReason, Assisted, AuxPlacement, Config, Mode, Stats, TPtr, TVar, Throttle, TxOps, atomically, atomically_with,
};

struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Assisted mode (an auxiliary thread per transaction thread), unpinned so
/// that it runs on any machine, with every throttling lever or none.
fn assisted(throttle: Throttle) -> Config<Assisted> {
    Config::new().assisted().placement(AuxPlacement::Anywhere).throttle(throttle)
}

#[test]
fn a_panic_writes_nothing_and_frees_every_lock() {
    panic_writes_nothing(&Config::new());
}

#[test]
fn an_assisted_panic_writes_nothing_and_frees_every_lock() {
    // A thread of its own: `Stats::thread` counts this thread's aborts.
    std::thread::spawn(|| panic_writes_nothing(&assisted(Throttle::ALL))).join().unwrap();
}

fn panic_writes_nothing<M: Mode>(cfg: &Config<M>) {
    let vars: Vec<TVar<u64>> = (0..100).map(TVar::new).collect();
    let link: TVar<Option<TPtr<Counted>>> = TVar::new(None);
    let drops = Arc::new(AtomicUsize::new(0));
    Stats::take_thread();
    let r = catch_unwind(AssertUnwindSafe(|| {
        atomically_with(cfg, |tx| {
            for v in &vars {
                tx.update(v, |x| x + 1000)?;
            }
            let p = tx.alloc(Counted(drops.clone()))?;
            tx.write(&link, Some(p))?;
            if tx.read(&vars[0])? == 1000 {
                panic!("boom");
            }
            Ok(())
        })
    }));
    assert!(r.is_err(), "the panic must propagate");
    common::assert_unlocked(&vars);
    common::assert_unlocked([&link]);
    for (i, v) in vars.iter().enumerate() {
        assert_eq!(v.load(), i as u64, "a write of the panicking transaction became visible");
    }
    assert!(link.load().is_none());
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the panicking transaction's allocation was not dropped");
    assert_eq!(Stats::thread().aborts_for(AbortReason::Panic), 1);

    // The thread's descriptor is usable again.
    atomically_with(cfg, |tx| tx.update(&vars[0], |x| x + 1));
    assert_eq!(vars[0].load(), 1);
}

#[test]
fn a_panic_while_others_commit_leaves_no_lock() {
    panic_while_others_commit(&Config::new());
}

#[test]
fn an_assisted_panic_while_others_commit_leaves_no_lock() {
    panic_while_others_commit(&assisted(Throttle::ALL));
}

fn panic_while_others_commit<M: Mode>(cfg: &Config<M>) {
    let v = TVar::new(0u64);
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..50_000 {
                atomically_with(cfg, |tx| tx.update(&v, |x| x + 1));
            }
        });
        for i in 0..2_000u64 {
            let _ = catch_unwind(AssertUnwindSafe(|| {
                atomically_with(cfg, |tx| {
                    let x = tx.read(&v)?;
                    tx.write(&v, x + 1_000_000)?;
                    if i % 2 == 0 {
                        panic!("boom {x}");
                    }
                    Ok(())
                })
            }));
        }
    });
    common::assert_unlocked([&v]);
    assert_eq!(v.load(), 50_000 + 1_000 * 1_000_000);
}

#[test]
#[should_panic(expected = "do not nest")]
fn nesting_is_a_clear_error() {
    let v = TVar::new(1u8);
    atomically(|tx| {
        let x = tx.read(&v)?;
        Ok(atomically(|tx2| tx2.read(&v)) + x)
    });
}
