//! kmeans: the self-check under every page policy, thread count and
//! distribution; determinism; the check catches corrupted clusterings; bad
//! flags are errors.
//!
//! kmeans is deterministic in its memberships and iteration counts: each
//! point goes to its nearest center, and the centers are means whose sums
//! differ between orders of addition only in the last bits of an `f64`,
//! which rounding to `f32` removes (see the module docs). So the
//! memberships are identical across policies, thread counts and the
//! sequential version, and the centers equal within 4 `f32` ulps.

use std::process::ExitCode;

use skelaff_stamp::app::main_for;
use skelaff_stamp::figures::KmeansFigures;
use skelaff_stamp::kmeans::{BadClustering, Kmeans, KmeansArgs, close, sequential, shipped_input};
use skelaff_stamp::{App, AppError, CommonArgs, Figures, Outcome};
use skelaff_worklist::{Distribution, PagePolicy};

const POLICIES: [PagePolicy; 5] =
    [PagePolicy::Auto, PagePolicy::FirstTouch, PagePolicy::Bind, PagePolicy::Cyclic, PagePolicy::Interleave];
const DISTRIBUTIONS: [Distribution; 2] = [Distribution::Shared, Distribution::PerNode];

fn small(threads: usize) -> KmeansArgs {
    KmeansArgs {
        input: "random-n1024-d8-c8".into(),
        max_clusters: 12,
        min_clusters: 10,
        threshold: 0.001,
        threads,
        ..KmeansArgs::default()
    }
}

fn figures(o: &Outcome) -> &KmeansFigures {
    match &o.figures {
        Figures::Kmeans(f) => f,
        other => panic!("not kmeans's figures: {other:?}"),
    }
}

#[test]
fn self_check_passes_under_every_policy_thread_count_and_distribution() {
    let (reference, _) = sequential(&small(1)).unwrap();
    let mut digests = Vec::new();
    for policy in POLICIES {
        for distribution in DISTRIBUTIONS {
            for threads in [1, 2] {
                let common = CommonArgs { policy, distribution, ..CommonArgs::default() };
                let o = Kmeans::run(&small(threads), &common).unwrap();
                let what = format!("{policy} {distribution} {threads} threads");
                assert!(o.passed(), "{what}: {:?}", o.check);
                assert_eq!(figures(&o).iterations, reference.iterations, "{what}");
                digests.push(figures(&o).membership_digest.clone());
                let report = o.report.as_ref().expect("a parallel run has a report");
                let iterations: u32 = reference.iterations.iter().sum();
                assert_eq!(report.units, u64::from(iterations) * 16, "{what}: 16 chunks of 64 points per iteration");
            }
        }
    }
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "memberships differ between runs: {digests:?}");
}

#[test]
fn high_contention_and_sequential_mode_pass() {
    // Few clusters: every unit adds to the same few sums.
    let few = KmeansArgs { max_clusters: 3, min_clusters: 2, chunk: 16, ..small(2) };
    let o = Kmeans::run(&few, &CommonArgs::default()).unwrap();
    assert!(o.passed(), "{:?}", o.check);
    let seq = Kmeans::run(&small(1), &CommonArgs { sequential: true, ..CommonArgs::default() }).unwrap();
    assert!(seq.passed(), "{:?}", seq.check);
    assert!(seq.report.is_none());
    // Without the z-score transform too.
    let raw = KmeansArgs { no_zscore: true, ..small(2) };
    let o = Kmeans::run(&raw, &CommonArgs::default()).unwrap();
    assert!(o.passed(), "{:?}", o.check);
}

#[test]
fn the_check_catches_corrupted_clusterings() {
    let args = small(1);
    let points = args.points().unwrap();
    let (good, _) = sequential(&args).unwrap();
    good.check_means(&points).unwrap();
    good.compare(&good).unwrap();

    let mut moved = good.clone();
    moved.centers[5] += 1e-3;
    let d = points.dims;
    assert!(
        matches!(moved.check_means(&points), Err(BadClustering::NotTheMean { center, feature, value, .. })
            if center == 5 / d && feature == 5 % d && value == moved.centers[5]),
        "a center off its points' mean: {:?}",
        moved.check_means(&points)
    );
    assert_eq!(
        moved.compare(&good),
        Err(BadClustering::CenterDiffers { index: 5, found: moved.centers[5], sequential: good.centers[5] }),
        "a center beyond the tolerance"
    );

    let mut ulp = good.clone();
    ulp.centers[5] = f32::from_bits(ulp.centers[5].to_bits() + 1);
    assert!(ulp.compare(&good).is_ok(), "one f32 ulp is within the tolerance");
    assert!(close(1.0, 1.0 + 4.0 * f32::EPSILON) && !close(1.0, 1.0 + 16.0 * f32::EPSILON));

    let mut member = good.clone();
    let i = member.membership.iter().position(|&m| m != member.membership[0]).unwrap();
    member.membership[i] = member.membership[0];
    assert_eq!(
        member.compare(&good),
        Err(BadClustering::Memberships { points: 1, first: i }),
        "a point in another cluster"
    );
    assert!(
        matches!(member.check_means(&points), Err(BadClustering::NotTheMean { .. })),
        "the means no longer match the memberships"
    );

    let mut out = good.clone();
    out.membership[0] = out.clusters as u32;
    assert_eq!(
        out.check_means(&points),
        Err(BadClustering::MembershipOutOfRange { point: 0, cluster: out.clusters as u32, clusters: out.clusters }),
        "a membership out of range"
    );

    let mut iters = good.clone();
    iters.iterations[0] += 1;
    assert_eq!(
        iters.compare(&good),
        Err(BadClustering::Iterations { found: iters.iterations.clone(), sequential: good.iterations.clone() }),
        "another iteration count"
    );

    let mut fewer = good.clone();
    fewer.membership.pop();
    assert!(matches!(fewer.check_means(&points), Err(BadClustering::Shape { memberships, points: n, .. })
        if memberships + 1 == n));
}

#[test]
fn bad_flags_are_errors_not_panics() {
    let common = CommonArgs::default();
    for bad in [
        KmeansArgs { threads: 0, ..small(1) },
        KmeansArgs { min_clusters: 0, ..small(1) },
        KmeansArgs { min_clusters: 13, max_clusters: 12, ..small(1) },
        KmeansArgs { max_clusters: 2000, ..small(1) },
        KmeansArgs { threshold: -0.5, ..small(1) },
        KmeansArgs { threshold: f64::NAN, ..small(1) },
        KmeansArgs { input: "inputs/color100".into(), ..small(1) },
        KmeansArgs { input: "random-n0-d8-c1".into(), ..small(1) },
        KmeansArgs { input: "random-n10-d8-c11".into(), ..small(1) },
        KmeansArgs { input: "random-nX-d8-c1".into(), ..small(1) },
    ] {
        match Kmeans::run(&bad, &common) {
            Err(AppError::Invalid(m)) => assert!(!m.is_empty()),
            other => panic!("{bad:?}: expected an invalid-argument error, got {other:?}"),
        }
    }
    let code = |argv: &[&str]| format!("{:?}", main_for::<Kmeans>(argv.iter().map(|s| s.to_string())));
    assert_eq!(code(&["kmeans", "-p", "two"]), format!("{:?}", ExitCode::from(2)));
    assert_eq!(code(&["kmeans", "-i", "edge100"]), format!("{:?}", ExitCode::FAILURE));
}

/// STAMP's own n2048 file (shipped gzipped): the skeleton at 1 and 2
/// threads gives the sequential version's memberships and iterations.
#[test]
fn reads_stamps_n2048_file_and_matches_the_sequential_version() {
    let path = shipped_input("random-n2048-d16-c16.txt");
    let args = |threads| KmeansArgs {
        input: path.display().to_string(),
        max_clusters: 15,
        min_clusters: 15,
        threshold: 0.00001,
        threads,
        ..KmeansArgs::default()
    };
    let (reference, _) = sequential(&args(1)).unwrap();
    assert_eq!(reference.membership.len(), 2048);
    let points = args(1).points().unwrap();
    assert_eq!((points.len(), points.dims), (2048, 16));
    let seq = Kmeans::run(&args(1), &CommonArgs { sequential: true, ..CommonArgs::default() }).unwrap();
    let digest = figures(&seq).membership_digest.clone();
    for threads in [1, 2] {
        let o = Kmeans::run(&args(threads), &CommonArgs::default()).unwrap();
        assert!(o.passed(), "{threads} threads: {:?}", o.check);
        assert_eq!(figures(&o).membership_digest, digest, "{threads} threads");
        assert_eq!(figures(&o).iterations, reference.iterations);
    }
}

#[test]
fn malformed_points_file_names_the_line() {
    let path = std::env::temp_dir().join(format!("kmeans-bad-{}.txt", std::process::id()));
    std::fs::write(&path, "1 0.1 0.2\n2 0.3 zero\n").unwrap();
    let args = KmeansArgs { input: path.display().to_string(), max_clusters: 1, min_clusters: 1, ..small(1) };
    let e = Kmeans::run(&args, &CommonArgs::default()).unwrap_err().to_string();
    assert!(e.contains(&format!("{}, line 2: feature `zero` is not a finite number", path.display())), "{e}");
    let b = KmeansArgs { binary: true, ..args };
    let e = Kmeans::run(&b, &CommonArgs::default()).unwrap_err().to_string();
    assert!(e.contains("(binary): header says"), "{e}");
    std::fs::remove_file(&path).unwrap();
}
