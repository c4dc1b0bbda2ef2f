//! Labyrinth: the self-check at small size under every page policy, both
//! distributions, 1 and 2 threads; the check fails on corrupted results;
//! STAMP's file format; bad flags and bad files are errors.
//!
//! Labyrinth is not deterministic across thread counts: which pairs get
//! routed depends on the order in which routing transactions commit (a
//! path claimed first blocks the others). So with 2 threads the tests check
//! the invariants (every path connected, disjoint, clear of walls, matching
//! the grid; no unrouted pair routable), not the identity of the result.
//! With one thread the order is the seed order, which the page policy does
//! not change, so 1-thread results are identical across policies.

use std::process::ExitCode;

use skelaff_stamp::app::{App, AppError, CommonArgs, main_for};
use skelaff_stamp::labyrinth::{
    BadRouting, Cell, Costs, Labyrinth, LabyrinthArgs, Maze, MazeError, RouteProblem, Routing, run_sequential,
    run_skeleton,
};
use skelaff_worklist::{Distribution, PagePolicy};

const POLICIES: [PagePolicy; 5] =
    [PagePolicy::Auto, PagePolicy::FirstTouch, PagePolicy::Bind, PagePolicy::Cyclic, PagePolicy::Interleave];

fn small_maze(walls: u32) -> Maze {
    let a = Labyrinth::small();
    Maze::load(&a.input, a.seed, walls).expect("the small input is valid")
}

#[test]
fn every_policy_distribution_and_thread_count_routes_valid_paths() {
    for walls in [0, 15] {
        let maze = small_maze(walls);
        let order = maze.routing_order();
        let seq = run_sequential(&maze, Costs::default(), &order);
        maze.check(&seq).expect("the sequential version passes its check");
        assert!(seq.routed() > maze.pairs.len() / 4, "only {} routed", seq.routed());
        for distribution in [Distribution::Shared, Distribution::PerNode] {
            let mut one_thread: Option<Routing> = None;
            for policy in POLICIES {
                for threads in [1, 2] {
                    let common = CommonArgs { policy, distribution, ..CommonArgs::default() };
                    let (r, report) = run_skeleton(&maze, Costs::default(), &order, threads, &common).unwrap();
                    let what = format!("walls {walls}% {policy} {distribution} {threads} threads");
                    maze.check(&r).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(report.units as usize, maze.pairs.len(), "{what}");
                    if threads == 1 {
                        match &one_thread {
                            None => one_thread = Some(r),
                            Some(first) => assert_eq!(&r, first, "{what}: 1-thread result differs across policies"),
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn one_thread_in_stamp_order_matches_the_sequential_version() {
    let maze = small_maze(10);
    let order = maze.routing_order();
    let seq = run_sequential(&maze, Costs::default(), &order);
    let common = CommonArgs { shuffle: 0, distribution: Distribution::Shared, ..CommonArgs::default() };
    let (r, _) = run_skeleton(&maze, Costs::default(), &order, 1, &common).unwrap();
    assert_eq!(r, seq);
}

#[test]
fn the_app_runs_its_small_input_and_its_sequential_version() {
    for sequential in [false, true] {
        let common = CommonArgs { sequential, ..CommonArgs::default() };
        let mut args = Labyrinth::small();
        Labyrinth::set_threads(&mut args, 2);
        let out = Labyrinth::run(&args, &common).unwrap();
        assert!(out.passed(), "{:?}", out.check);
        assert_eq!(out.report.is_none(), sequential);
        assert_eq!(out.to_json()["figures"]["pairs"], 96);
    }
    let entry = skelaff_stamp::find("labyrinth").expect("registered");
    assert!((entry.run_small)(2, &CommonArgs::default()).unwrap().passed());
}

/// A correct result with at least two paths of three or more cells, to corrupt.
fn good() -> (Maze, Routing) {
    let maze = small_maze(0);
    let r = run_sequential(&maze, Costs::default(), &maze.routing_order());
    maze.check(&r).unwrap();
    (maze, r)
}

fn long_paths(r: &Routing) -> Vec<usize> {
    (0..r.paths.len()).filter(|&k| r.paths[k].as_ref().is_some_and(|p| p.len() >= 4)).collect()
}

#[test]
fn the_check_fails_on_corrupted_results() {
    let (maze, r) = good();
    let long = long_paths(&r);
    let (a, b) = (long[0], long[1]);

    // A path with a gap.
    let mut gap = r.clone();
    let p = gap.paths[a].as_mut().unwrap();
    let cell = p.remove(1);
    let (from, to) = (p[0], p[1]);
    gap.grid[cell as usize] = Routing::EMPTY;
    // (The broken path's cells are then claimed by no path: the grid disagrees too.)
    assert_eq!(problems(&maze, &gap)[0], RouteProblem::Jumps { pair: a, from, to });

    // A path that does not reach its destination.
    let mut short = r.clone();
    short.paths[a].as_mut().unwrap().pop();
    let (start, end) = maze.pairs[a];
    assert_eq!(problems(&maze, &short)[0], RouteProblem::Ends { pair: a, start, end });

    // A path with a cell inserted out of place.
    let mut detour = r.clone();
    let stolen = detour.paths[a].as_ref().unwrap()[1];
    detour.paths[b].as_mut().unwrap().insert(1, stolen);
    assert!(maze.check(&detour).is_err());

    // The grid claims a cell no path uses.
    let mut stray = r.clone();
    let free = stray.grid.iter().position(|&v| v == Routing::EMPTY).unwrap();
    stray.grid[free] = Routing::PATH_BASE + a as u32;
    assert_eq!(
        problems(&maze, &stray),
        [RouteProblem::GridDisagrees { cells: 1, first: free, holds: Cell::Path(a as u32), paths_say: Cell::Empty }]
    );

    // A routed pair dropped: it could still be routed.
    let mut dropped = r.clone();
    for &c in &dropped.paths[a].take().unwrap()[1..] {
        if dropped.grid[c as usize] >= Routing::PATH_BASE {
            dropped.grid[c as usize] = Routing::EMPTY;
        }
    }
    // (Its freed cells may give other unrouted pairs a path too.)
    assert_eq!(problems(&maze, &dropped)[0], RouteProblem::StillRoutable { pair: a });

    let (pairs, cells) = (r.paths.len(), r.grid.len());
    let mut truncated = r;
    truncated.paths.pop();
    assert_eq!(maze.check(&truncated), Err(BadRouting::Shape { paths: pairs - 1, grid: cells, pairs, cells }));
}

/// The problems the check reports for `r` (it must fail with some).
fn problems(maze: &Maze, r: &Routing) -> Vec<RouteProblem> {
    match maze.check(r) {
        Err(BadRouting::Problems(p)) => {
            assert_eq!(p.count, p.first.len(), "fewer than Problems::SHOWN problems are all kept");
            p.first
        }
        other => panic!("expected route problems, got {other:?}"),
    }
}

#[test]
fn the_check_rejects_a_path_through_a_wall() {
    // A corridor 0-1-2 with a wall in the middle: no route exists.
    let maze = Maze::parse("d 3 1 1\np 0 0 0 2 0 0\nw 1 0 0\n", "corridor").unwrap();
    let routed = run_sequential(&maze, Costs::default(), &maze.routing_order());
    assert_eq!(routed.routed(), 0);
    maze.check(&routed).unwrap();
    let mut grid = maze.initial_grid();
    grid[1] = Routing::PATH_BASE;
    let through = Routing { paths: vec![Some(vec![0, 1, 2])], grid };
    assert_eq!(
        problems(&maze, &through),
        [
            RouteProblem::CrossesWall { pair: 0, cell: 1 },
            RouteProblem::GridDisagrees { cells: 1, first: 1, holds: Cell::Path(0), paths_say: Cell::Wall }
        ]
    );
}

#[test]
fn the_check_rejects_crossing_paths() {
    // Pair 0 runs left to right through the centre of a 3x3 grid, pair 1
    // top to bottom through the same centre cell.
    let maze = Maze::parse("d 3 3 1\np 0 1 0 2 1 0\np 1 0 0 1 2 0\n", "cross").unwrap();
    let centre = maze.dims.index(1, 1, 0);
    let mut grid = maze.initial_grid();
    grid[centre as usize] = Routing::PATH_BASE;
    let crossing = Routing {
        paths: vec![
            Some(vec![maze.pairs[0].0, centre, maze.pairs[0].1]),
            Some(vec![maze.pairs[1].0, centre, maze.pairs[1].1]),
        ],
        grid,
    };
    assert_eq!(problems(&maze, &crossing), [RouteProblem::Shared { pair: 1, other: 0, cell: centre }]);
    assert!(maze.check(&crossing).unwrap_err().to_string().contains("paths 1 and 0 share cell"));
    // Routed for real, only one of them fits.
    let r = run_sequential(&maze, Costs::default(), &maze.routing_order());
    maze.check(&r).unwrap();
    assert_eq!(r.routed(), 1);
}

/// Parses `args` as the binary does (the STAMP flags and the common ones),
/// without printing.
fn parse(args: &[&str]) -> Result<(), clap::Error> {
    let cmd = <CommonArgs as clap::Args>::augment_args(<LabyrinthArgs as clap::Args>::augment_args(
        clap::Command::new("labyrinth"),
    ));
    cmd.try_get_matches_from(std::iter::once("labyrinth").chain(args.iter().copied())).map(|_| ())
}

fn main_exit(args: &[&str]) -> ExitCode {
    main_for::<Labyrinth>(std::iter::once("labyrinth").chain(args.iter().copied()).map(String::from))
}

#[test]
fn stamp_format_files_are_read() {
    let dir = std::env::temp_dir().join(format!("skelaff-labyrinth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("maze.txt");
    let mut text = String::from("# Dimensions (x, y, z)\nd  8 8 2\n\n# Paths\n");
    for (s, d) in [((0, 0, 0), (7, 7, 1)), ((0, 7, 0), (7, 0, 0)), ((3, 3, 1), (4, 4, 0)), ((1, 1, 0), (6, 6, 1))] {
        text += &format!("p {} {} {}  {} {} {}\n", s.0, s.1, s.2, d.0, d.1, d.2);
    }
    text += "w 4 0 0\nw 4 1 0\nw 4 2 0\n";
    std::fs::write(&good, &text).unwrap();
    let maze = Maze::load(good.to_str().unwrap(), 0, 0).unwrap();
    assert_eq!((maze.pairs.len(), maze.walls.len()), (4, 3));
    let path = good.to_str().unwrap();
    assert_eq!(main_exit(&["-i", path, "-t2", "-p"]), ExitCode::SUCCESS);
    assert_eq!(main_exit(&["-i", path, "--sequential", "-b0", "-x2", "-y1", "-z5"]), ExitCode::SUCCESS);

    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "d 8 8 2\np 0 0 0 1 1\n").unwrap();
    let e = Maze::load(bad.to_str().unwrap(), 0, 0).unwrap_err();
    assert!(matches!(&e, MazeError::Line { line: 2, .. }), "{e}");
    let mut args = Labyrinth::small();
    args.input = bad.to_str().unwrap().to_owned();
    let e = Labyrinth::run(&args, &CommonArgs::default()).unwrap_err();
    assert!(matches!(&e, AppError::Invalid(m) if m.contains("line 2")), "{e}");
    assert_eq!(main_exit(&["-i", bad.to_str().unwrap()]), ExitCode::FAILURE);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_flags_are_errors_not_panics() {
    for bad in
        [&["-t0"][..], &["-x0"], &["-z", "-3"], &["-b", "x"], &["--walls", "101"], &["--policy", "nearest"], &["-q"]]
    {
        let e = parse(bad).expect_err(&format!("{bad:?} parsed"));
        assert!(e.use_stderr(), "{bad:?}: {e}");
    }
    // The binary turns a parse error into exit code 2 (clap's message on stderr).
    assert_eq!(main_exit(&["-t0"]), ExitCode::from(2));
    for input in ["no-such-maze.txt", "random-x0-y4-z1-n2", "random-x1-y1-z1-n1"] {
        assert_eq!(main_exit(&["-i", input]), ExitCode::FAILURE, "{input}");
    }
    let mut args = Labyrinth::small();
    Labyrinth::set_threads(&mut args, 0);
    assert!(matches!(Labyrinth::run(&args, &CommonArgs::default()), Err(AppError::Worklist(_))));
}

/// Found by fuzzing (fuzz/fuzz_targets/labyrinth.rs): a 14-byte file names a
/// maze of 172 million cells, whose grid is 688 MB. The reader accepts it
/// (a maze's grid is its size, up to `MAX_CELLS`, 2^28 cells) without
/// allocating it; one cell more than `MAX_CELLS` is refused at its line.
#[test]
fn a_short_file_may_name_a_large_grid_up_to_max_cells() {
    use skelaff_stamp::labyrinth::{MAX_CELLS, Maze};
    let m = Maze::parse("d 4 4777770 9\n", "t").unwrap();
    assert_eq!(m.dims.cells(), 171_999_720);
    let over = format!("# big\nd {} 1 1\n", MAX_CELLS + 1);
    let e = Maze::parse(&over, "t").unwrap_err().to_string();
    assert!(e.starts_with("t, line 2: dimensions (268435457, 1, 1) make 268435457 cells; at most 268435456"), "{e}");
}

/// Found by fuzzing: three sides near 2^63 overflowed the cell count's
/// u128 product (a panic with debug assertions, a wrapped count and
/// truncated sides without). Refused at the line instead.
#[test]
fn sides_whose_product_overflows_are_refused() {
    use skelaff_stamp::labyrinth::Maze;
    let text = "d 7777777777777777777 7777777777777777777 9\n";
    let e = Maze::parse(text, "t").unwrap_err().to_string();
    assert!(
        e.starts_with("t, line 1: dimensions (7777777777777777777, 7777777777777777777, 9) make over 2^128 cells"),
        "{e}"
    );
}
