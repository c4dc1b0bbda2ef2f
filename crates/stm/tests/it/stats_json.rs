//! The JSON form of [`Stats`] (its serde `Serialize`): the keys, their
//! order and the values the hand-written `Stats::to_json` gave before it
//! was derived, so `--json` readers see the same object.
#![cfg(not(loom))]

use skelaff_stm::{AbortReason, Stats, TVar, TxOps, atomically};

/// What `Stats::to_json` printed for these counters (commit 543fb3a).
const BEFORE: &str = r#"{"commits":7,"read_only_commits":2,"aborts":45,"aborts_by_reason":{"locked_read":1,"validate_read":2,"locked_commit":3,"validate_commit":4,"aux_conflict":5,"retry":6,"explicit":7,"panic":8,"read_only_upgrade":9},"read_set_total":40,"write_set_total":12,"read_set_max":9,"write_set_max":4}"#;

#[test]
fn the_json_keeps_the_keys_order_and_values_of_the_hand_written_form() {
    let s = Stats {
        commits: 7,
        read_only_commits: 2,
        aborts: [1, 2, 3, 4, 5, 6, 7, 8, 9],
        read_set_total: 40,
        write_set_total: 12,
        read_set_max: 9,
        write_set_max: 4,
    };
    assert_eq!(serde_json::to_string(&s).unwrap(), BEFORE);
}

#[test]
fn a_thread_s_counters_serialise_with_every_reason() {
    let v = TVar::new(0u64);
    std::thread::spawn(move || {
        Stats::take_thread();
        atomically(|tx| tx.update(&v, |x| x + 1));
        atomically(|tx| tx.read(&v));
        let j = serde_json::to_value(Stats::take_thread()).unwrap();
        assert_eq!(
            (j["commits"].as_u64(), j["read_only_commits"].as_u64(), j["aborts"].as_u64()),
            (Some(2), Some(1), Some(0))
        );
        let reasons: Vec<&str> = j["aborts_by_reason"].as_object().unwrap().keys().map(String::as_str).collect();
        let mut names: Vec<&str> = AbortReason::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable(); // a `Value`'s map is ordered by key
        assert_eq!(reasons, names);
        assert_eq!(j["write_set_max"], 1);
    })
    .join()
    .unwrap();
}
