//! Pairing auxiliary threads with CPUs (`AuxPlacement::SharedCache`): pairs
//! never share a CPU, and a thread that finds every CPU of its cache taken
//! is told so (`AssistUnavailable::NoFreeCpu`) and runs its assisted
//! transactions plain, with the right results. Its own test binary: the
//! claimed CPUs are process-wide.
#![cfg(not(loom))]

use std::collections::BTreeSet;
use std::sync::mpsc;
use std::time::Duration;

use skelaff_stm::{AssistUnavailable, AuxPlacement, Config, TVar, TxOps, assist_pairing, atomically_with};

#[test]
fn a_thread_without_a_free_cpu_is_told_and_runs_plain() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cfg = Config::new().assisted().placement(AuxPlacement::SharedCache);
    let counter = TVar::new(0u64);
    let (results, rx) = mpsc::channel();
    // Every live pair holds its CPUs until the end of the scope.
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let stop_rx = std::sync::Mutex::new(stop_rx);
    let mut pairs = Vec::new();
    let mut refused = None;
    std::thread::scope(|s| {
        // Each successful pairing claims at least one CPU no other pair
        // holds (its auxiliary's), so within `cpus` threads one finds none.
        for _ in 0..=cpus {
            let (results, cfg, counter, stop_rx) = (results.clone(), &cfg, &counter, &stop_rx);
            s.spawn(move || {
                let pairing = assist_pairing(AuxPlacement::SharedCache);
                if pairing.is_err() {
                    // Transactions asked to be assisted still run (plain).
                    for _ in 0..1000 {
                        atomically_with(cfg, |tx| tx.update(counter, |c| c + 1));
                    }
                    // The refusal is kept for the thread's life.
                    assert_eq!(assist_pairing(AuxPlacement::SharedCache), pairing, "a second answer differs");
                }
                let failed = pairing.is_err();
                results.send(pairing).unwrap();
                if !failed {
                    let _ = stop_rx.lock().unwrap().recv();
                }
            });
            // A thread that panicked sends nothing: stop waiting, and let
            // the scope re-raise its panic once the others are released.
            match rx.recv_timeout(Duration::from_secs(60)) {
                Ok(Ok(p)) => pairs.push(p),
                Ok(Err(e)) => {
                    refused = Some(e);
                    break;
                }
                Err(_) => break,
            }
        }
        drop(stop_tx);
    });
    let refused = refused.expect("every thread got an auxiliary although each pair claims a CPU of its own");
    match &refused {
        AssistUnavailable::NoFreeCpu { taken, .. } => assert!(*taken >= 1, "{refused}"),
        other => panic!("expected NoFreeCpu, got {other:?}"),
    }
    assert!(refused.to_string().contains("no free CPU"), "{refused}");
    assert_eq!(counter.load(), 1000, "the unassisted thread's transactions were lost");
    let mut aux = BTreeSet::new();
    for p in &pairs {
        let (app, helper) = (p.app_cpu.expect("pinned pairing"), p.aux_cpu.expect("pinned pairing"));
        assert_ne!(app, helper, "an auxiliary shares its application thread's CPU");
        assert!(aux.insert(helper), "two auxiliaries on CPU {helper}");
    }
}
