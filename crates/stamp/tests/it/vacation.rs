//! vacation: the self-check under every page policy, thread count and
//! distribution; determinism where there is some; the check catches
//! corrupted tables; bad flags are errors.
//!
//! Vacation is deterministic with one client only: with one worker the
//! skeleton takes the (shuffled) transactions in order, so the final
//! tables equal the sequential version's run in that order. With two
//! clients the transactions interleave in an order the scheduler picks,
//! and the tables differ from run to run (each is still consistent).

use std::process::ExitCode;

use skelaff_stamp::CheckFailed;
use skelaff_stamp::app::main_for;
use skelaff_stamp::figures::VacationFigures;
use skelaff_stamp::vacation::{
    BadTables, BrokenTable, Kind, SequentialTables, Snapshot, Vacation, VacationArgs, sequential_tables,
};
use skelaff_stamp::{App, AppError, CommonArgs, Figures, Outcome};
use skelaff_worklist::{Distribution, PagePolicy};

const POLICIES: [PagePolicy; 5] =
    [PagePolicy::Auto, PagePolicy::FirstTouch, PagePolicy::Bind, PagePolicy::Cyclic, PagePolicy::Interleave];
const DISTRIBUTIONS: [Distribution; 2] = [Distribution::Shared, Distribution::PerNode];

/// A small high-contention input: few relations, long transactions.
fn small(clients: usize) -> VacationArgs {
    VacationArgs {
        clients,
        number: 4,
        queries: 60,
        user: 90,
        relations: 512,
        transactions: 3000,
        ..VacationArgs::default()
    }
}

fn figures(o: &Outcome) -> &VacationFigures {
    match &o.figures {
        Figures::Vacation(f) => f,
        other => panic!("not vacation's figures: {other:?}"),
    }
}

fn digest(o: &Outcome) -> String {
    figures(o).tables_digest.clone().unwrap_or_else(|| panic!("no tables digest: {:?}", o.check))
}

#[test]
fn self_check_passes_under_every_policy_thread_count_and_distribution() {
    let args = small(1);
    let reference = format!("{:016x}", sequential_tables(&args, CommonArgs::default().shuffle).unwrap().digest());
    for policy in POLICIES {
        for distribution in DISTRIBUTIONS {
            for clients in [1, 2] {
                let common = CommonArgs { policy, distribution, ..CommonArgs::default() };
                let o = Vacation::run(&small(clients), &common).unwrap();
                let what = format!("{policy} {distribution} {clients} clients");
                assert!(o.passed(), "{what}: {:?}", o.check);
                let report = o.report.as_ref().expect("a parallel run has a report");
                assert_eq!(report.units, 3000, "{what}: every transaction is a unit");
                assert_eq!(report.commits(), 3000 + clients as u64, "{what}: units and the final updates");
                if clients == 1 {
                    assert_eq!(digest(&o), reference, "{what}: one client ends where the sequential run does");
                }
            }
        }
    }
}

#[test]
fn sequential_mode_and_batches_pass_and_agree() {
    let args = small(1);
    let seq = Vacation::run(&args, &CommonArgs { sequential: true, ..CommonArgs::default() }).unwrap();
    assert!(seq.passed(), "{:?}", seq.check);
    assert!(seq.report.is_none());
    let reference = format!("{:016x}", sequential_tables(&args, 1).unwrap().digest());
    assert_eq!(digest(&seq), reference);
    // Unshuffled, in batches of 8 transactions per unit: same tables as the
    // sequential run in index order.
    let batched = VacationArgs { batch: 8, ..args.clone() };
    let common = CommonArgs { shuffle: 0, ..CommonArgs::default() };
    let o = Vacation::run(&batched, &common).unwrap();
    assert!(o.passed(), "{:?}", o.check);
    assert_eq!(o.report.as_ref().unwrap().units, 375);
    assert_eq!(digest(&o), format!("{:016x}", sequential_tables(&args, 0).unwrap().digest()));
    let two = Vacation::run(&VacationArgs { clients: 2, ..batched }, &common).unwrap();
    assert!(two.passed(), "{:?}", two.check);
}

/// The workers' commits leave the STM's clock alone unless `--clock` says
/// otherwise (vacation's default), and the run report says which; the
/// tables pass their check either way.
#[test]
fn the_clock_policy_is_readers_by_default_and_reported() {
    for (flag, name) in [(None, "readers"), (Some(skelaff_stm::ClockPolicy::Commits), "commits")] {
        let common = CommonArgs { clock: flag, ..CommonArgs::default() };
        let o = Vacation::run(&small(2), &common).unwrap();
        assert!(o.passed(), "{:?}", o.check);
        assert_eq!(o.report.as_ref().unwrap().clock.name(), name);
    }
}

/// The STAMP-style sequential version runs the transactional manager's code
/// without the STM; on the same requests in the same order it must end
/// with exactly the tables of the `BTreeMap` version.
#[test]
fn stamp_sequential_tables_agree_with_the_std_ones() {
    for args in [small(1), VacationArgs { transactions: 2000, ..VacationArgs::default() }] {
        let common = CommonArgs { sequential: true, ..CommonArgs::default() };
        let std_run = Vacation::run(&args, &common).unwrap();
        let stamp_args = VacationArgs { sequential_tables: SequentialTables::Stamp, ..args.clone() };
        let stamp_run = Vacation::run(&stamp_args, &common).unwrap();
        assert!(stamp_run.passed(), "{:?}", stamp_run.check);
        assert!(stamp_run.report.is_none());
        assert_eq!(figures(&stamp_run).sequential_tables, "stamp");
        assert_eq!(figures(&std_run).sequential_tables, "std");
        assert_eq!(digest(&stamp_run), digest(&std_run), "same requests, same order, same tables");
        assert_eq!(figures(&stamp_run).reservations_held, figures(&std_run).reservations_held);
    }
}

#[test]
fn the_low_contention_input_passes_with_two_clients() {
    let args = VacationArgs { clients: 2, transactions: 2048, ..VacationArgs::default() };
    let o = Vacation::run(&args, &CommonArgs::default()).unwrap();
    assert!(o.passed(), "{:?}", o.check);
    assert!(figures(&o).reservations_held.unwrap() > 0, "reservations were made");
}

/// A way to break a consistent state.
type Corruption = Box<dyn Fn(&mut Snapshot)>;

#[test]
fn the_check_catches_corrupted_tables() {
    let relations = 256;
    let args = VacationArgs { relations, transactions: 2000, ..VacationArgs::default() };
    let good = sequential_tables(&args, 1).unwrap();
    good.check(relations).unwrap();
    let (held_kind, held_id) = {
        let (_, list) = good.customers.iter().find(|(_, l)| !l.is_empty()).expect("someone holds a reservation");
        ((list[0].0 >> 32) as usize, list[0].0 as u32)
    };
    let held_at = good.tables[held_kind].iter().position(|e| e.id == held_id).unwrap();
    let held = Kind::ALL[held_kind];
    let over = relations + 1;
    // What is corrupted, how, and the failure the check must report.
    let corruptions: Vec<(&str, Corruption, Expected)> = vec![
        (
            "used count off",
            Box::new(move |s| s.tables[held_kind][held_at].used -= 1),
            Box::new(move |e| matches!(e, BadTables::EntrySum { kind, entry } if *kind == held && entry.id == held_id)),
        ),
        (
            "free count off",
            Box::new(|s| s.tables[1][0].free += 1),
            Box::new(
                |e| matches!(e, BadTables::EntrySum { kind: Kind::Flight, entry } if entry.free == entry.total - entry.used + 1),
            ),
        ),
        (
            "negative price",
            Box::new(|s| s.tables[2][3].price = -10),
            Box::new(|e| matches!(e, BadTables::EntryValues { kind: Kind::Room, entry } if entry.price == -10)),
        ),
        (
            "empty entry kept",
            Box::new(|s| {
                let e = &mut s.tables[0][0];
                (e.used, e.free, e.total) = (0, 0, 0);
            }),
            Box::new(|e| matches!(e, BadTables::EntryValues { kind: Kind::Car, entry } if entry.total == 0)),
        ),
        (
            "held entry missing",
            Box::new(move |s| {
                s.tables[held_kind].remove(held_at);
            }),
            Box::new(
                move |e| matches!(e, BadTables::Missing { kind, id, holders } if *kind == held && *id == held_id && *holders >= 1),
            ),
        ),
        (
            "reservation dropped from a customer",
            Box::new(|s| {
                let c = s.customers.iter_mut().find(|(_, l)| !l.is_empty()).unwrap();
                c.1.pop();
            }),
            Box::new(|e| matches!(e, BadTables::Holders { holders, used, .. } if holders + 1 == *used)),
        ),
        (
            "customer id out of range",
            Box::new(move |s| s.customers.push((over, Vec::new()))),
            Box::new(
                move |e| matches!(e, BadTables::CustomerId { customer, relations: r, .. } if *customer == over && *r == relations),
            ),
        ),
    ];
    for (what, corrupt, expected) in corruptions {
        let mut bad = good.clone();
        corrupt(&mut bad);
        match bad.check(relations) {
            Err(e) => assert!(expected(&e), "{what}: reported as {e:?}"),
            Ok(_) => panic!("{what} went unnoticed"),
        }
    }
}

/// Whether a failure is the one a corruption must give.
type Expected = Box<dyn Fn(&BadTables) -> bool>;

#[test]
fn a_failed_check_is_printed_and_serialised_with_its_causes() {
    let mut o = Vacation::run(&small(1), &CommonArgs { sequential: true, ..CommonArgs::default() }).unwrap();
    assert!(o.passed(), "{:?}", o.check);
    // A broken tree, as reading the tables back would report it: the stm's
    // typed invariant is the cause of the cause.
    let broken = BrokenTable { table: "car", invariant: skelaff_stm::collections::Broken::RedRoot };
    o.check = Err(CheckFailed::new(Vacation::NAME, BadTables::Broken(broken.clone())));
    let failed = o.check.as_ref().unwrap_err();
    assert_eq!(failed.app(), "vacation");
    assert_eq!(failed.failure::<BadTables>(), Some(&BadTables::Broken(broken)));
    let line = "the tables cannot be read back: the car table's tree is broken: the root is red";
    assert_eq!(failed.with_causes(), line);
    assert!(!o.passed());
    assert!(o.to_string().ends_with(&format!("vacation: check FAILED: {line}\n")), "{o}");
    let json = o.to_json();
    assert_eq!((json["check_passed"].as_bool(), json["check"].as_str()), (Some(false), Some(line)));
}

#[test]
fn bad_flags_are_errors_not_panics() {
    let common = CommonArgs::default();
    for bad in [
        VacationArgs { clients: 0, ..VacationArgs::default() },
        VacationArgs { number: 0, ..VacationArgs::default() },
        VacationArgs { queries: 0, ..VacationArgs::default() },
        VacationArgs { queries: 101, ..VacationArgs::default() },
        VacationArgs { user: 101, ..VacationArgs::default() },
        VacationArgs { relations: 0, ..VacationArgs::default() },
        VacationArgs { transactions: 0, ..VacationArgs::default() },
        VacationArgs { batch: 0, ..VacationArgs::default() },
        VacationArgs { queries: 1, relations: 10, ..VacationArgs::default() },
    ] {
        match Vacation::run(&bad, &common) {
            Err(AppError::Invalid(m)) => assert!(!m.is_empty()),
            other => panic!("{bad:?}: expected an invalid-argument error, got {other:?}"),
        }
    }
    let code = |argv: &[&str]| format!("{:?}", main_for::<Vacation>(argv.iter().map(|s| s.to_string())));
    assert_eq!(code(&["vacation", "-c", "many"]), format!("{:?}", ExitCode::from(2)), "unparsable flag");
    assert_eq!(code(&["vacation", "--policy", "nearest"]), format!("{:?}", ExitCode::from(2)), "unknown policy");
    assert_eq!(code(&["vacation", "-q", "200"]), format!("{:?}", ExitCode::FAILURE), "value out of range");
    assert_eq!(
        code(&["vacation", "--sequential", "--sequential-tables", "hash"]),
        format!("{:?}", ExitCode::from(2)),
        "unknown sequential tables"
    );
}
