//! STAMP's **labyrinth**: Lee's maze routing of many source/destination
//! pairs through one shared 3-D grid.
//!
//! Each pair is routed by an expansion from its source over the grid as
//! the router sees it, a traceback from its destination, and a
//! transaction that claims the path's cells; if a cell was taken in the
//! meantime the transaction restarts and routes the pair again. Pairs are
//! routed longest first (STAMP's order; `--shuffle` reorders the seed
//! units on the skeleton, `--shuffle 0` keeps STAMP's order).
//!
//! The maze is STAMP's `-i` input: a file in STAMP's text format, or, when
//! no such file exists and the name has the shape
//! `random-x<X>-y<Y>-z<Z>-n<PAIRS>`, a maze generated in-process in that
//! shape (uniformly random pairs, no walls, as STAMP's
//! `inputs/generate.py` made `random-x32-y32-z3-n96` and
//! `random-x512-y512-z7-n512`), seeded by `--seed`; `--walls` adds walls.
//!
//! On the skeleton a work-unit is one pair. The self-check
//! ([`Maze::check`]) verifies every routed path (connected, disjoint, clear
//! of walls, matching the grid) and that no unrouted pair could still be
//! routed. Which pairs get routed depends on the order in which the
//! routing transactions commit, so with more than one thread it can
//! change from run to run: the check verifies the invariants, not the
//! identity of the result.

mod maze;
mod router;
mod solve;

use std::fmt::Write as _;
use std::time::Instant;

use clap::value_parser;

pub use maze::{BadDims, BadLine, Dims, MAX_CELLS, MAX_PAIRS, Maze, MazeError};
pub use router::{Costs, Router};
pub use solve::{BadRouting, Cell, RouteProblem, Routing, run_sequential, run_skeleton};

use skelaff_stamp_core::app::{App, AppError, CommonArgs, Outcome};
use skelaff_stamp_core::check::CheckFailed;
use skelaff_stamp_core::figures::LabyrinthFigures;

/// The application (see the [module docs](self)).
#[derive(Debug, Clone, Copy)]
pub struct Labyrinth;

/// STAMP's labyrinth flags, and the generator's.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct LabyrinthArgs {
    /// Maze file (STAMP's format), or a shape `random-x<X>-y<Y>-z<Z>-n<PAIRS>` to generate.
    #[arg(short = 'i', value_name = "FILE|SHAPE", default_value = "random-x32-y32-z3-n96")]
    pub input: String,
    /// Number of worker threads.
    #[arg(short = 't', value_name = "THREADS", default_value_t = 1, value_parser = value_parser!(u32).range(1..=4096))]
    pub threads: u32,
    /// Bend cost: how strongly traceback keeps its direction.
    #[arg(short = 'b', value_name = "COST", default_value_t = 1, value_parser = value_parser!(u32).range(0..=1_000_000))]
    pub bend: u32,
    /// Cost of a step along x.
    #[arg(short = 'x', value_name = "COST", default_value_t = 1, value_parser = value_parser!(u32).range(1..=1000))]
    pub x_cost: u32,
    /// Cost of a step along y.
    #[arg(short = 'y', value_name = "COST", default_value_t = 1, value_parser = value_parser!(u32).range(1..=1000))]
    pub y_cost: u32,
    /// Cost of a step along z.
    #[arg(short = 'z', value_name = "COST", default_value_t = 2, value_parser = value_parser!(u32).range(1..=1000))]
    pub z_cost: u32,
    /// Print the routed maze, layer by layer.
    #[arg(short = 'p')]
    pub print: bool,
    /// Seed of the maze generator (for a shape input).
    #[arg(long, value_name = "SEED", default_value_t = 0)]
    pub seed: u64,
    /// Percent of the cells that are walls (for a shape input; STAMP's have none).
    #[arg(long, value_name = "PERCENT", default_value_t = 0, value_parser = value_parser!(u32).range(0..=100))]
    pub walls: u32,
}

impl LabyrinthArgs {
    /// The movement and bend costs.
    pub fn costs(&self) -> Costs {
        Costs { x: self.x_cost, y: self.y_cost, z: self.z_cost, bend: self.bend }
    }
}

impl Default for LabyrinthArgs {
    fn default() -> Self {
        Labyrinth::small()
    }
}

/// The routed grid as text: one block per layer, `.` empty, `#` wall, `@`
/// endpoint, a letter or digit per path (its pair number modulo 62).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_labyrinth::{Costs, Maze, render, run_sequential};
///
/// let m = Maze::parse("d 4 2 1\np 0 0 0 3 0 0\nw 1 1 0\n", "m")?;
/// let r = run_sequential(&m, Costs::default(), &m.routing_order());
/// assert_eq!(render(&m, &r), "[z = 0]\n@aa@\n.#..\n");
/// # Ok::<(), skelaff_stamp_labyrinth::MazeError>(())
/// ```
pub fn render(maze: &Maze, r: &Routing) -> String {
    const GLYPHS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let d = maze.dims;
    let mut s = String::new();
    for z in 0..d.z {
        let _ = writeln!(s, "[z = {z}]");
        for y in 0..d.y {
            for x in 0..d.x {
                let v = r.grid[d.index(x, y, z) as usize];
                s.push(match v {
                    0 => '.',
                    1 => '#',
                    2 => '@',
                    p => char::from(GLYPHS[(p as usize - 3) % GLYPHS.len()]),
                });
            }
            s.push('\n');
        }
    }
    s
}

impl App for Labyrinth {
    const NAME: &'static str = "labyrinth";
    type Args = LabyrinthArgs;

    /// `-i random-x32-y32-z3-n96`, STAMP's simulator input.
    fn small() -> LabyrinthArgs {
        LabyrinthArgs {
            input: "random-x32-y32-z3-n96".into(),
            threads: 1,
            bend: 1,
            x_cost: 1,
            y_cost: 1,
            z_cost: 2,
            print: false,
            seed: 0,
            walls: 0,
        }
    }

    fn threads(args: &LabyrinthArgs) -> usize {
        args.threads as usize
    }

    fn set_threads(args: &mut LabyrinthArgs, threads: usize) {
        args.threads = u32::try_from(threads).unwrap_or(u32::MAX);
    }

    fn run(args: &LabyrinthArgs, common: &CommonArgs) -> Result<Outcome, AppError> {
        let maze = Maze::load(&args.input, args.seed, args.walls).map_err(|e| AppError::Invalid(e.to_string()))?;
        let order = maze.routing_order();
        let mut prepared = None;
        let (routing, report, time) = if common.sequential {
            let t = Instant::now();
            let r = run_sequential(&maze, args.costs(), &order);
            (r, None, t.elapsed())
        } else {
            prepared = Some(skelaff_stamp_core::phases::prepare_before_timing(common, args.threads as usize)?);
            let (r, report) = run_skeleton(&maze, args.costs(), &order, args.threads as usize, common)?;
            let wall = report.wall;
            (r, Some(report), wall)
        };
        if args.print {
            print!("{}", render(&maze, &routing));
        }
        let figures = LabyrinthFigures {
            maze: maze.origin.clone(),
            dimensions: maze.dims.to_string(),
            pairs: maze.pairs.len(),
            walls: maze.walls.len(),
            routed: routing.routed(),
            path_cells: routing.cells_used(),
            threads: if common.sequential { 1 } else { args.threads },
            sequential: common.sequential,
        };
        let check = maze.check(&routing).map_err(|e| CheckFailed::new(Self::NAME, e));
        Ok(Outcome { app: Self::NAME, report, time, prepared, check, figures: figures.into() })
    }
}
