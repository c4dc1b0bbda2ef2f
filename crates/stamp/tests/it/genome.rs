//! genome: the self-check under every page policy, thread count and
//! distribution; determinism; the check catches a gene that cannot be
//! rebuilt; bad flags are errors.
//!
//! genome is deterministic: the distinct segments are numbered in sorted
//! order whatever the thread count, and in these inputs every segment end
//! overlaps exactly one other segment's start by `-s - 1` characters, so
//! every run links the same chains and rebuilds the gene itself.

use std::process::ExitCode;

use skelaff_stamp::app::main_for;
use skelaff_stamp::figures::GenomeFigures;
use skelaff_stamp::genome::{
    BadSequence, Dedup, Genome, GenomeArgs, Input, check, pack, sequence_on_skeleton, sequence_sequentially,
};
use skelaff_stamp::{App, AppError, CommonArgs, Figures, Outcome};
use skelaff_worklist::{Distribution, PagePolicy};

const POLICIES: [PagePolicy; 5] =
    [PagePolicy::Auto, PagePolicy::FirstTouch, PagePolicy::Bind, PagePolicy::Cyclic, PagePolicy::Interleave];
const DISTRIBUTIONS: [Distribution; 2] = [Distribution::Shared, Distribution::PerNode];

fn small(threads: usize) -> GenomeArgs {
    GenomeArgs { gene: 1024, segment: 16, number: 4096, threads, ..GenomeArgs::default() }
}

fn figures(o: &Outcome) -> &GenomeFigures {
    match &o.figures {
        Figures::Genome(f) => f,
        other => panic!("not genome's figures: {other:?}"),
    }
}

#[test]
fn self_check_passes_under_every_policy_thread_count_and_distribution() {
    let seq = Genome::run(&small(1), &CommonArgs { sequential: true, ..CommonArgs::default() }).unwrap();
    assert!(seq.passed(), "{:?}", seq.check);
    for policy in POLICIES {
        for distribution in DISTRIBUTIONS {
            for (threads, dedup) in [(1, Dedup::Remembered), (2, Dedup::Remembered), (2, Dedup::Transactional)] {
                let common = CommonArgs { policy, distribution, ..CommonArgs::default() };
                let o = Genome::run(&GenomeArgs { dedup, ..small(threads) }, &common).unwrap();
                let what = format!("{policy} {distribution} {threads} threads {dedup:?}");
                assert!(o.passed(), "{what}: {:?}", o.check);
                let result = |o| {
                    let f = figures(o);
                    (f.sequence_digest.clone(), f.unique_segments, f.passes, f.chains)
                };
                assert_eq!(result(&o), result(&seq), "{what}: digest, unique segments, passes, chains");
            }
        }
    }
}

#[test]
fn remembered_segments_are_not_looked_up_again() {
    // 65536 segments of 16 over a gene of 1024: about 64 copies of each.
    let reads = |dedup| {
        let args = GenomeArgs { dedup, number: 1 << 16, ..small(2) };
        let o = Genome::run(&args, &CommonArgs::default()).unwrap();
        assert!(o.passed(), "{dedup:?}: {:?}", o.check);
        o.report.expect("a run on the skeleton has a report").stats().read_set_total
    };
    let (every, remembered) = (reads(Dedup::Transactional), reads(Dedup::Remembered));
    assert!(
        remembered * 4 < every,
        "remembering skipped too few lookups: {remembered} transactional reads against {every}"
    );
}

#[test]
fn stamp_sized_inputs_and_long_segments_pass() {
    // STAMP's standard input, and 64-nucleotide segments (the longest).
    for args in [
        GenomeArgs { threads: 2, ..GenomeArgs::default() },
        GenomeArgs { gene: 2048, segment: 64, number: 8192, threads: 2, ..GenomeArgs::default() },
    ] {
        let o = Genome::run(&args, &CommonArgs::default()).unwrap();
        assert!(o.passed(), "{args:?}: {:?}", o.check);
    }
}

#[test]
fn stamp_sequencer_cases_on_the_skeleton() {
    // STAMP's sequencer tests: plain, aliasing, non-overlapping segments.
    let codes =
        |s: &str| -> Vec<u8> { s.bytes().map(|b| b"acgt".iter().position(|&n| n == b).unwrap() as u8).collect() };
    for (gene, segments) in [
        ("gatcggcagc", &["atcg", "gcag", "tcgg", "cagc", "gatc"][..]),
        ("aaagc", &["aaa", "aag", "agc"][..]),
        ("aaacaaagaaat", &["aaac", "aaag", "aaat"][..]),
    ] {
        let input = Input {
            gene: codes(gene),
            segment_length: segments[0].len(),
            segments: segments.iter().map(|s| pack(&codes(s))).collect(),
        };
        assert_eq!(sequence_sequentially(&input), input.gene, "{gene}");
        for threads in [1, 2] {
            assert_eq!(sequence_on_skeleton(&input, threads, &CommonArgs::default()).unwrap(), input.gene, "{gene}");
        }
    }
}

#[test]
fn the_check_catches_a_gene_that_cannot_be_rebuilt() {
    let input = Input::generate(400, 12, 1000, 5);
    assert_eq!(sequence_on_skeleton(&input, 2, &CommonArgs::default()).unwrap(), input.gene);
    // Remove every segment that covers position 200: two pieces remain.
    let covering: Vec<u128> = (189..=200).map(|at| pack(&input.gene[at..at + 12])).collect();
    let mut cut = input.clone();
    cut.segments.retain(|k| !covering.contains(k));
    let rebuilt = sequence_on_skeleton(&cut, 2, &CommonArgs::default()).unwrap();
    assert_ne!(rebuilt, input.gene);
    assert_eq!(rebuilt, sequence_sequentially(&cut), "the same two chains either way");
    let from = rebuilt.iter().zip(&input.gene).position(|(a, b)| a != b).unwrap_or(rebuilt.len().min(400));
    assert!(from <= 200, "the cut at 200 shows by then, not at {from}");
    assert_eq!(check(&input.gene, &rebuilt), Err(BadSequence::Differs { sequence: rebuilt.len(), gene: 400, from }));
    let mut flipped = input.gene.clone();
    flipped[399] ^= 1;
    assert_eq!(
        check(&input.gene, &flipped),
        Err(BadSequence::Differs { sequence: 400, gene: 400, from: 399 }),
        "one nucleotide off"
    );
    assert_eq!(
        check(&input.gene, &input.gene[..399]),
        Err(BadSequence::Differs { sequence: 399, gene: 400, from: 399 }),
        "one nucleotide short"
    );
}

#[test]
fn bad_flags_are_errors_not_panics() {
    let common = CommonArgs::default();
    for bad in [
        GenomeArgs { threads: 0, ..small(1) },
        GenomeArgs { gene: 1, ..small(1) },
        GenomeArgs { segment: 1, ..small(1) },
        GenomeArgs { segment: 65, ..small(1) },
        GenomeArgs { gene: 10, segment: 11, ..small(1) },
        GenomeArgs { number: 0, ..small(1) },
    ] {
        match Genome::run(&bad, &common) {
            Err(AppError::Invalid(m)) => assert!(!m.is_empty()),
            other => panic!("{bad:?}: expected an invalid-argument error, got {other:?}"),
        }
    }
    let bad_input = Input { gene: vec![0; 10], segment_length: 70, segments: vec![1] };
    assert!(matches!(sequence_on_skeleton(&bad_input, 1, &common), Err(AppError::Invalid(_))));
    assert!(sequence_sequentially(&bad_input).is_empty());
    let code = |argv: &[&str]| format!("{:?}", main_for::<Genome>(argv.iter().map(|s| s.to_string())));
    assert_eq!(code(&["genome", "-g", "-5"]), format!("{:?}", ExitCode::from(2)));
    assert_eq!(code(&["genome", "-s", "100"]), format!("{:?}", ExitCode::FAILURE));
}
