//! Intruder: the self-check at small size under every page policy, both
//! distributions, 1 and 2 threads; the check fails on corrupted results;
//! bad flags are errors.
//!
//! Intruder is deterministic: which flows are attacks is fixed by the
//! generator, and every flow is reassembled from the same packets whatever
//! order they are taken in, so the result (per flow: the payload digest
//! and the verdict) must be identical for every policy, distribution,
//! thread count, reassembly map and detection placement, and equal to the
//! sequential one.

use std::process::ExitCode;

use skelaff_stamp::app::{App, AppError, CommonArgs, main_for};
use skelaff_stamp::intruder::{
    BadDetection, DetectIn, Detection, FlowProblem, Intruder, IntruderArgs, MapKind, Stream, Variant, Verdict,
    run_sequential, run_skeleton,
};
use skelaff_stm::ClockPolicy;
use skelaff_worklist::{Distribution, PagePolicy};

const POLICIES: [PagePolicy; 5] =
    [PagePolicy::Auto, PagePolicy::FirstTouch, PagePolicy::Bind, PagePolicy::Cyclic, PagePolicy::Interleave];

fn small_stream() -> Stream {
    let a = Intruder::small();
    Stream::generate(a.attack, a.length, a.flows, a.seed).expect("the small input is valid")
}

#[test]
fn every_policy_distribution_and_thread_count_finds_exactly_the_attacks() {
    let stream = small_stream();
    let reference = run_sequential(&stream, MapKind::Rbtree);
    stream.check(&reference).expect("the sequential version passes its check");
    assert!(!reference.flagged().is_empty());
    assert_eq!(run_sequential(&stream, MapKind::Hash), reference);
    assert_eq!(run_sequential(&stream, MapKind::Btree), reference);
    let maps = [MapKind::Btree, MapKind::Rbtree, MapKind::Hash];
    for (policy, map) in POLICIES.iter().flat_map(|&p| maps.map(|m| (p, m))) {
        for distribution in [Distribution::Shared, Distribution::PerNode] {
            for threads in [1, 2] {
                let common = CommonArgs { policy, distribution, ..CommonArgs::default() };
                let variant = Variant { detect_in: DetectIn::NewUnit, map };
                let (d, report) = run_skeleton(&stream, threads, variant, &common).unwrap();
                let what = format!("{policy} {map:?} {distribution} {threads} threads");
                stream.check(&d).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(d, reference, "{what}: result differs from the sequential one");
                // One unit per packet plus one detection unit per flow.
                assert_eq!(report.units as usize, stream.packets.len() + stream.flows(), "{what}");
            }
        }
    }
}

#[test]
fn detection_in_the_same_unit_gives_the_same_result() {
    let stream = small_stream();
    let reference = run_sequential(&stream, MapKind::Rbtree);
    for threads in [1, 2] {
        let variant = Variant { detect_in: DetectIn::SameUnit, map: MapKind::Rbtree };
        let (d, report) = run_skeleton(&stream, threads, variant, &CommonArgs::default()).unwrap();
        assert_eq!(d, reference);
        assert_eq!(report.units as usize, stream.packets.len());
    }
}

#[test]
fn the_app_runs_its_small_input_and_its_sequential_version() {
    for sequential in [false, true] {
        let common = CommonArgs { sequential, ..CommonArgs::default() };
        let mut args = Intruder::small();
        Intruder::set_threads(&mut args, 2);
        let out = Intruder::run(&args, &common).unwrap();
        assert!(out.passed(), "{:?}", out.check);
        assert_eq!(out.report.is_none(), sequential);
        let json = out.to_json();
        assert_eq!(json["figures"]["flagged"], json["figures"]["attacks_generated"]);
    }
    // The workers' commits leave the clock alone unless `--clock` says
    // otherwise, and the report says which.
    let mut args = Intruder::small();
    Intruder::set_threads(&mut args, 2);
    for (flag, name) in [(None, "readers"), (Some(ClockPolicy::Commits), "commits")] {
        let common = CommonArgs { clock: flag, ..CommonArgs::default() };
        let out = Intruder::run(&args, &common).unwrap();
        assert!(out.passed(), "{:?}", out.check);
        assert_eq!(out.to_json()["report"]["clock"], name);
    }
    let entry = skelaff_stamp::find("intruder").expect("registered");
    assert!((entry.run_small)(1, &CommonArgs::default()).unwrap().passed());
}

/// A correct result, to corrupt.
fn good() -> (Stream, Detection) {
    let stream = small_stream();
    let d = run_sequential(&stream, MapKind::Rbtree);
    (stream, d)
}

#[test]
fn the_check_fails_on_corrupted_results() {
    let (stream, d) = good();
    let attack = d.flagged()[0] as usize;
    let clean = d.verdicts.iter().position(|&v| v == Verdict::Clean).unwrap();

    let mut missed = d.clone();
    missed.verdicts[attack] = Verdict::Clean;
    let (flagged, attacks) = (d.flagged().len(), stream.attacks().len());
    assert_eq!(
        problems(&stream, &missed),
        [FlowProblem::Flagged { flagged: flagged - 1, attacks, missed: vec![attack as u32], extra: vec![] }]
    );

    let mut extra = d.clone();
    extra.verdicts[clean] = Verdict::Attack;
    assert_eq!(
        problems(&stream, &extra),
        [FlowProblem::Flagged { flagged: flagged + 1, attacks, missed: vec![], extra: vec![clean as u32] }]
    );

    let mut garbled = d.clone();
    garbled.digests[clean] ^= 0x10;
    assert_eq!(problems(&stream, &garbled), [FlowProblem::WrongPayload { flow: clean }]);

    let mut lost = d.clone();
    lost.digests[clean] = 0;
    lost.verdicts[clean] = Verdict::Pending;
    assert_eq!(
        problems(&stream, &lost),
        [
            FlowProblem::NeverReassembled { flow: clean },
            FlowProblem::Undecided { flow: clean, verdict: Verdict::Pending }
        ]
    );

    let mut twice = d.clone();
    twice.verdicts[clean] = Verdict::Duplicate;
    assert_eq!(problems(&stream, &twice), [FlowProblem::Undecided { flow: clean, verdict: Verdict::Duplicate }]);
    assert!(stream.check(&twice).unwrap_err().to_string().contains("Duplicate"));

    let mut leftover = d.clone();
    leftover.unfinished = 3;
    assert_eq!(problems(&stream, &leftover), [FlowProblem::Unfinished { flows: 3 }]);

    let flows = d.verdicts.len();
    let mut short = d;
    short.verdicts.pop();
    assert_eq!(stream.check(&short), Err(BadDetection::Shape { digests: flows, verdicts: flows - 1, flows }));
}

/// The problems the check reports for `d` (it must fail with some).
fn problems(stream: &Stream, d: &Detection) -> Vec<FlowProblem> {
    match stream.check(d) {
        Err(BadDetection::Problems(p)) => {
            assert_eq!(p.count, p.first.len(), "fewer than Problems::SHOWN problems are all kept");
            p.first
        }
        other => panic!("expected flow problems, got {other:?}"),
    }
}

/// Parses `args` as the binary does (the STAMP flags and the common ones),
/// without printing.
fn parse(args: &[&str]) -> Result<(), clap::Error> {
    let cmd = <CommonArgs as clap::Args>::augment_args(<IntruderArgs as clap::Args>::augment_args(clap::Command::new(
        "intruder",
    )));
    cmd.try_get_matches_from(std::iter::once("intruder").chain(args.iter().copied())).map(|_| ())
}

fn main_exit(args: &[&str]) -> ExitCode {
    main_for::<Intruder>(std::iter::once("intruder").chain(args.iter().copied()).map(String::from))
}

#[test]
fn bad_flags_are_errors_not_panics() {
    for bad in [
        &["-a101"][..],
        &["-l0"],
        &["-l70000"],
        &["-n0"],
        &["-t0"],
        &["-s", "x"],
        &["--policy", "nearest"],
        &["--distribution", "random"],
        &["--detect-in", "later"],
        &["--map", "skiplist"],
        &["extra"],
    ] {
        let e = parse(bad).expect_err(&format!("{bad:?} parsed"));
        assert!(e.use_stderr(), "{bad:?}: {e}");
    }
    // The binary turns a parse error into exit code 2 (clap's message on stderr).
    assert_eq!(main_exit(&["-t0"]), ExitCode::from(2));
    // Too much payload for one stream: a typed error from the generator.
    let mut args = Intruder::small();
    args.length = 65535;
    args.flows = u32::MAX;
    assert!(matches!(Intruder::run(&args, &CommonArgs::default()), Err(AppError::Invalid(m)) if m.contains("at most")));
    // Zero threads through the library: the skeleton refuses.
    let mut args = Intruder::small();
    Intruder::set_threads(&mut args, 0);
    assert!(matches!(Intruder::run(&args, &CommonArgs::default()), Err(AppError::Worklist(_))));
}

#[test]
fn stamp_flags_parse_and_the_binary_exits_zero() {
    assert_eq!(main_exit(&["-a10", "-l4", "-n512", "-s3", "-t2", "--json"]), ExitCode::SUCCESS);
    assert_eq!(main_exit(&["-a", "0", "-n", "64", "--sequential", "--map", "hash"]), ExitCode::SUCCESS);
    assert_eq!(main_exit(&["-n", "300", "-t2", "--map", "hash", "--detect-in", "same-unit"]), ExitCode::SUCCESS);
}
