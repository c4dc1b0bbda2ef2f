//! yada: STAMP's simulator input refined at 1 and 2 threads and
//! sequentially (the same size as STAMP's C program), the same element
//! count under every page policy with one worker, the mesh invariants
//! after every refinement step on random meshes, and malformed inputs.

use proptest::prelude::*;
use skelaff_stamp::figures::YadaFigures;
use skelaff_stamp::yada::{
    Mesh, Point, Sequential, Triangulation, Yada, YadaArgs, run_skeleton, sequential, shipped_input,
};
use skelaff_stamp::{App, AppError, CommonArgs, Figures, Outcome};
use skelaff_worklist::{Distribution, LocalOrder, PagePolicy};

use skelaff_testkit::peak;

#[global_allocator]
static PEAK: peak::Peak = peak::Peak;

/// The most a reader may allocate at once for a file of a few hundred bytes.
const SMALL: usize = 4 << 20;

fn sim(threads: usize) -> YadaArgs {
    YadaArgs { angle: 20.0, input: shipped_input("633.2"), threads }
}

/// STAMP's C program (0.9.10, sequential build) prints `Final mesh size =
/// 2678` for `-a20 -i inputs/633.2`.
const STAMP_633_FINAL: i64 = 2678;

fn figures(o: &Outcome) -> &YadaFigures {
    match &o.figures {
        Figures::Yada(f) => f,
        other => panic!("not yada's figures: {other:?}"),
    }
}

#[test]
fn simulator_input_at_one_and_two_threads_and_sequentially() {
    let seq = Yada::run(&sim(1), &CommonArgs { sequential: true, ..CommonArgs::default() }).unwrap();
    assert!(seq.passed(), "{:?}", seq.check);
    let again = Yada::run(&sim(1), &CommonArgs { sequential: true, ..CommonArgs::default() }).unwrap();
    let (f, again) = (figures(&seq), figures(&again));
    assert!(f.mesh_digest.is_some());
    assert_eq!(f.mesh_digest, again.mesh_digest, "the sequential run is deterministic");
    assert_eq!(f.final_elements, STAMP_633_FINAL);
    assert_eq!(f.initial_elements, 1264);
    assert_eq!(f.initial_bad, 438);
    assert_eq!(f.processed, 705, "STAMP prints 705 elements processed");
    for threads in [1, 2] {
        for distribution in [Distribution::Shared, Distribution::PerNode] {
            let o = Yada::run(&sim(threads), &CommonArgs { distribution, ..CommonArgs::default() }).unwrap();
            assert!(o.passed(), "{threads} threads {distribution}: {:?}", o.check);
            assert_eq!(figures(&o).gave_up, 0);
            let report = o.report.as_ref().unwrap();
            let processed = figures(&o).processed;
            assert!(report.units >= processed, "{} units, {processed} processed", report.units);
        }
    }
}

#[test]
fn yada_runs_newest_first_unless_told_otherwise_and_either_order_refines() {
    for (flag, want) in [(None, LocalOrder::Lifo), (Some(LocalOrder::Fifo), LocalOrder::Fifo)] {
        let built = sim(2).build().unwrap();
        let common = CommonArgs { local_order: flag, ..CommonArgs::default() };
        let (mesh, totals, report) = run_skeleton(built, 2, &common).unwrap();
        assert_eq!(report.local_order, want);
        let n = (mesh.initial_elements() as i64 + totals.added) as usize;
        assert!(mesh.check(n).is_ok(), "{want}");
    }
}

#[test]
fn one_worker_gives_the_same_mesh_under_every_policy() {
    let mut counts = Vec::new();
    for policy in
        [PagePolicy::Auto, PagePolicy::FirstTouch, PagePolicy::Bind, PagePolicy::Cyclic, PagePolicy::Interleave]
    {
        for shuffle in [0, 1] {
            let o = Yada::run(&sim(1), &CommonArgs { policy, shuffle, ..CommonArgs::default() }).unwrap();
            assert!(o.passed(), "{policy}: {:?}", o.check);
            let f = figures(&o);
            counts.push((shuffle, f.final_elements, f.processed, f.mesh_digest.clone()));
        }
    }
    for shuffle in [0, 1] {
        let same: Vec<_> = counts.iter().filter(|c| c.0 == shuffle).collect();
        assert!(same.windows(2).all(|w| w[0] == w[1]), "{same:?}");
    }
}

#[test]
fn malformed_files_and_flags_are_errors() {
    let dir = std::env::temp_dir().join(format!("yada-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("m.node"), "3 2 0 0\n0 0 0\n1 1 0\n2 0 one\n").unwrap();
    std::fs::write(dir.join("m.poly"), "0 2 0 0\n0 0\n").unwrap();
    std::fs::write(dir.join("m.ele"), "1 3 0\n0 0 1 2\n").unwrap();
    let args = YadaArgs { input: dir.join("m"), ..sim(1) };
    let e = Yada::run(&args, &CommonArgs::default()).unwrap_err().to_string();
    assert!(e.contains("m.node, line 4: y `one` is not a finite number"), "{e}");
    // Collinear corners.
    std::fs::write(dir.join("m.node"), "3 2 0 0\n0 0 0\n1 1 0\n2 2 0\n").unwrap();
    let e = Yada::run(&args, &CommonArgs::default()).unwrap_err().to_string();
    assert!(e.contains("collinear"), "{e}");
    let e = Yada::run(&YadaArgs { input: dir.join("absent"), ..sim(1) }, &CommonArgs::default()).unwrap_err();
    assert!(e.to_string().contains("absent.node"), "{e}");
    for bad in
        [YadaArgs { threads: 0, ..sim(1) }, YadaArgs { angle: 0.0, ..sim(1) }, YadaArgs { angle: 70.0, ..sim(1) }]
    {
        assert!(matches!(Yada::run(&bad, &CommonArgs::default()), Err(AppError::Invalid(_))), "{bad:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The Delaunay triangulation of `points` (Bowyer-Watson inside a large
/// enclosing triangle, by brute force: the test meshes are small).
fn delaunay(points: &[Point]) -> Vec<[u32; 3]> {
    let n = points.len();
    let mut pts = points.to_vec();
    pts.extend([Point { x: -1e5, y: -1e5 }, Point { x: 1e5, y: -1e5 }, Point { x: 0.0, y: 1e5 }]);
    let in_circle = |t: &[u32; 3], p: &Point| {
        let [a, b, c] = t.map(|i| pts[i as usize]);
        let (ax, ay, bx, by, cx, cy) = (a.x - p.x, a.y - p.y, b.x - p.x, b.y - p.y, c.x - p.x, c.y - p.y);
        let det = (ax * ax + ay * ay) * (bx * cy - cx * by) - (bx * bx + by * by) * (ax * cy - cx * ay)
            + (cx * cx + cy * cy) * (ax * by - bx * ay);
        let orient = (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
        det * orient.signum() > 0.0
    };
    let mut tris = vec![[n as u32, n as u32 + 1, n as u32 + 2]];
    for (i, p) in points.iter().enumerate() {
        let (bad, keep): (Vec<_>, Vec<_>) = tris.into_iter().partition(|t| in_circle(t, p));
        let mut edges: Vec<[u32; 2]> = Vec::new();
        for t in &bad {
            for k in 0..3 {
                let e = [t[k], t[(k + 1) % 3]];
                let shared = bad.iter().filter(|u| u.contains(&e[0]) && u.contains(&e[1])).count() > 1;
                if !shared {
                    edges.push(e);
                }
            }
        }
        tris = keep;
        tris.extend(edges.into_iter().map(|[a, b]| [a, b, i as u32]));
    }
    tris.retain(|t| t.iter().all(|&v| (v as usize) < n));
    tris
}

/// A mesh of the unit square: its corners and `inner` points inside it,
/// triangulated (Delaunay), the square's sides as boundary segments.
fn square_mesh(inner: &[(f64, f64)]) -> Triangulation {
    let mut points =
        vec![Point { x: 0.0, y: 0.0 }, Point { x: 1.0, y: 0.0 }, Point { x: 1.0, y: 1.0 }, Point { x: 0.0, y: 1.0 }];
    points.extend(inner.iter().map(|&(x, y)| Point { x, y }));
    let triangles = delaunay(&points);
    let area: f64 = triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| points[i as usize]);
            ((b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)).abs() / 2.0
        })
        .sum();
    assert!((area - 1.0).abs() < 1e-9, "the triangulation covers {area} of the unit square");
    Triangulation { points, segments: vec![[0, 1], [1, 2], [2, 3], [3, 0]], triangles }
}

/// Inner points at least `gap` from each other and from the sides.
fn spread(raw: Vec<(f64, f64)>, gap: f64) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (x, y) in raw {
        let (x, y) = (gap + x * (1.0 - 2.0 * gap), gap + y * (1.0 - 2.0 * gap));
        if out.iter().all(|&(a, b)| (a - x).hypot(b - y) >= gap) {
            out.push((x, y));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// After every refinement step the mesh is consistent (links mutual,
    /// no fold, the square's sides covered, the count right); at the end
    /// no bad triangle that could be refined is left.
    #[test]
    fn every_step_keeps_the_mesh_valid(raw in prop::collection::vec((0.0..1.0f64, 0.0..1.0f64), 0..24),
                                       angle in 10.0..25.0f64) {
        let t = square_mesh(&spread(raw, 0.02));
        let built = Mesh::build(&t, angle).unwrap();
        let mut r = Sequential::new(built);
        let mut steps = 0;
        while r.step().unwrap() {
            steps += 1;
            if let Err(e) = r.mesh().check_consistency(r.elements()) {
                prop_assert!(false, "after step {}: {}", steps, e);
            }
            prop_assert!(steps < 100_000, "refinement does not end");
        }
        let summary = r.mesh().check(r.elements());
        prop_assert!(summary.is_ok(), "{:?}", summary);
        let summary = summary.unwrap();
        prop_assert!(summary.min_angle >= angle || summary.unrefinable > 0, "{:?}", summary);
        prop_assert_eq!(r.totals().gave_up, 0);
    }

    /// The skeleton, at 1 and 2 threads, refines the same random meshes
    /// to valid meshes with no bad triangle left.
    #[test]
    fn skeleton_refines_random_meshes(raw in prop::collection::vec((0.0..1.0f64, 0.0..1.0f64), 0..40)) {
        let t = square_mesh(&spread(raw, 0.02));
        let (reference, _) = sequential(Mesh::build(&t, 20.0).unwrap()).unwrap();
        prop_assert!(reference.check(reference.len()).is_ok());
        for threads in [1, 2] {
            let built = Mesh::build(&t, 20.0).unwrap();
            let (mesh, totals, _) = run_skeleton(built, threads, &CommonArgs::default()).unwrap();
            let n = (mesh.initial_elements() as i64 + totals.added) as usize;
            let check = mesh.check(n);
            prop_assert!(check.is_ok(), "{} threads: {:?}", threads, check);
            prop_assert_eq!(totals.gave_up, 0);
        }
    }
}

/// A header that declares 2^26 vertices, segments or triangles in a file of
/// a few lines: the reader reserves for the lines there are (it reserved
/// 1 GiB of points and a 2^26-entry map before).
#[test]
fn short_files_with_huge_counts_allocate_little() {
    let node = "3 2 0 0\n1 0 0\n2 1 0\n3 0 1\n";
    let poly = "0 2 0 0\n0 0\n";
    let ele = "1 3 0\n1 1 2 3\n";
    let huge = 1 << 26;
    let cases = [
        (format!("{huge} 2 0 0\n1 0 0\n"), poly.to_owned(), ele.to_owned(), "t.node, line 3: the file ends early"),
        (node.to_owned(), format!("0 2 0 0\n{huge} 0\n1 1 2\n"), ele.to_owned(), "t.poly, line 4: the file ends"),
        (node.to_owned(), poly.to_owned(), format!("{huge} 3 0\n1 1 2 3\n"), "t.ele, line 3: the file ends early"),
    ];
    for (node, poly, ele, want) in cases {
        let (r, bytes) = peak::largest(|| Triangulation::parse("t".as_ref(), &node, &poly, &ele));
        assert!(bytes <= SMALL, "{want}: one allocation of {bytes} bytes");
        let e = r.unwrap_err().to_string();
        assert!(e.starts_with(want), "{e}");
    }
}
