//! Routing every pair, on the skeleton and sequentially, and the
//! self-check of the routed grid.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use skelaff_stm::{AbortReason, TPtr, TVar, TxError, TxOps};
use skelaff_worklist::{Affinity, ProcessCtx, RunReport, Skeleton, WorkerInfo};

use super::maze::{Dims, EMPTY, ENDPOINT, Maze, PATH_BASE, WALL};
use super::router::{Costs, Router};
use skelaff_stamp_core::app::{AppError, CommonArgs};
use skelaff_stamp_core::check::Problems;

/// The result of routing: per pair its path (cells from source to
/// destination) or `None`, and the grid as the run left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routing {
    /// Per pair (input order), the routed path.
    pub paths: Vec<Option<Vec<u32>>>,
    /// Per cell: [`Routing::EMPTY`], [`Routing::WALL`],
    /// [`Routing::ENDPOINT`], or `Routing::PATH_BASE + k` for a cell on
    /// pair `k`'s path.
    pub grid: Vec<u32>,
}

impl Routing {
    /// A grid cell that is free.
    pub const EMPTY: u32 = EMPTY;
    /// A wall cell.
    pub const WALL: u32 = WALL;
    /// A source or destination cell.
    pub const ENDPOINT: u32 = ENDPOINT;
    /// A cell claimed by pair `k` holds `PATH_BASE + k`.
    pub const PATH_BASE: u32 = PATH_BASE;

    /// How many pairs were routed.
    pub fn routed(&self) -> usize {
        self.paths.iter().filter(|p| p.is_some()).count()
    }

    /// Cells on routed paths, endpoints included.
    pub fn cells_used(&self) -> usize {
        self.paths.iter().flatten().map(Vec::len).sum()
    }
}

impl Maze {
    /// STAMP's self-check, strengthened. From the maze alone (walls, then
    /// endpoints) it rebuilds the grid path by path and verifies that:
    /// each routed path starts at its source and ends at its destination;
    /// consecutive cells are adjacent; no inner cell is a wall, an endpoint
    /// or a cell of another path (paths are disjoint); the grid the run
    /// left is exactly that rebuilt grid (no cell claimed without a path,
    /// no path cell unclaimed); and no unrouted pair could still be routed
    /// in it (cells are only ever claimed, so a pair that found no path
    /// when it was routed has none at the end either).
    ///
    /// # Errors
    ///
    /// [`BadRouting`]: what is wrong, with the first few offending pairs or
    /// cells.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_labyrinth::{Costs, Maze, Routing, run_sequential};
    ///
    /// let m = Maze::parse("d 4 1 1\np 0 0 0 3 0 0\n", "corridor")?;
    /// let mut r = run_sequential(&m, Costs::default(), &m.routing_order());
    /// assert!(m.check(&r).is_ok());
    /// r.grid[1] = Routing::EMPTY; // forget a claimed cell
    /// assert!(m.check(&r).is_err());
    /// # Ok::<(), skelaff_stamp_labyrinth::MazeError>(())
    /// ```
    pub fn check(&self, r: &Routing) -> Result<String, BadRouting> {
        let cells = self.dims.cells();
        if r.paths.len() != self.pairs.len() || r.grid.len() != cells {
            return Err(BadRouting::Shape { paths: r.paths.len(), grid: r.grid.len(), pairs: self.pairs.len(), cells });
        }
        let mut expect = self.initial_grid();
        let mut problems = Problems::default();
        for (k, path) in r.paths.iter().enumerate() {
            let Some(path) = path else { continue };
            let (start, end) = self.pairs[k];
            if path.len() < 2 || path[0] != start || path[path.len() - 1] != end {
                problems.note(RouteProblem::Ends { pair: k, start, end });
                continue;
            }
            if let Some(&cell) = path.iter().find(|&&c| c as usize >= cells) {
                problems.note(RouteProblem::LeavesGrid { pair: k, cell });
                continue;
            }
            if let Some(w) = path.windows(2).find(|w| !self.dims.adjacent(w[0], w[1])) {
                problems.note(RouteProblem::Jumps { pair: k, from: w[0], to: w[1] });
                continue;
            }
            for &c in &path[1..path.len() - 1] {
                match expect[c as usize] {
                    EMPTY => expect[c as usize] = PATH_BASE + k as u32,
                    WALL => problems.note(RouteProblem::CrossesWall { pair: k, cell: c }),
                    ENDPOINT => problems.note(RouteProblem::ThroughEndpoint { pair: k, cell: c }),
                    other => problems.note(RouteProblem::Shared { pair: k, other: other - PATH_BASE, cell: c }),
                }
            }
        }
        if let Some(c) = (0..cells).find(|&c| r.grid[c] != expect[c]) {
            problems.note(RouteProblem::GridDisagrees {
                cells: (0..cells).filter(|&c| r.grid[c] != expect[c]).count(),
                first: c,
                holds: Cell::of(r.grid[c]),
                paths_say: Cell::of(expect[c]),
            });
        }
        let mut unrouted = 0usize;
        let mut router = Router::new(self.dims);
        for (k, _) in r.paths.iter().enumerate().filter(|(_, p)| p.is_none()) {
            unrouted += 1;
            let (src, dst) = self.pairs[k];
            let unit = Costs { x: 1, y: 1, z: 1, bend: 0 };
            if router.route(self.dims, unit, src, dst, |c| expect[c as usize] == EMPTY).is_some() {
                problems.note(RouteProblem::StillRoutable { pair: k });
            }
        }
        problems.into_result(()).map_err(BadRouting::Problems)?;
        Ok(format!(
            "{} of {} pairs routed: every path connected from source to destination, disjoint, clear of walls and endpoints, and matching the grid; the {unrouted} unrouted pairs have no path left",
            r.routed(),
            self.pairs.len()
        ))
    }
}

/// What labyrinth's self-check found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadRouting {
    /// The result does not have one path per pair and one value per cell.
    #[error("result has {paths} paths and {grid} cells for {pairs} pairs and {cells} cells")]
    Shape {
        /// Paths in the result.
        paths: usize,
        /// Cells of the result's grid.
        grid: usize,
        /// Pairs in the maze.
        pairs: usize,
        /// Cells in the maze.
        cells: usize,
    },
    /// Paths that are not paths, overlap, or disagree with the grid.
    #[error("{0}")]
    Problems(Problems<RouteProblem>),
}

/// What a cell of a routed grid holds, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Nothing.
    Empty,
    /// A wall.
    Wall,
    /// A source or destination.
    Endpoint,
    /// A cell on this pair's path.
    Path(u32),
}

impl Cell {
    /// The cell a grid value ([`Routing::grid`]) stands for.
    pub fn of(v: u32) -> Cell {
        match v {
            EMPTY => Cell::Empty,
            WALL => Cell::Wall,
            ENDPOINT => Cell::Endpoint,
            p => Cell::Path(p - PATH_BASE),
        }
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cell::Empty => f.write_str("nothing"),
            Cell::Wall => f.write_str("a wall"),
            Cell::Endpoint => f.write_str("an endpoint"),
            Cell::Path(p) => write!(f, "path {p}"),
        }
    }
}

/// One problem labyrinth's self-check found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouteProblem {
    /// A path that does not run from its pair's source to its destination.
    #[error("path {pair} does not run from its source {start} to its destination {end}")]
    Ends {
        /// The pair.
        pair: usize,
        /// Its source cell.
        start: u32,
        /// Its destination cell.
        end: u32,
    },
    /// A path through a cell the grid does not have.
    #[error("path {pair} leaves the grid at cell {cell}")]
    LeavesGrid {
        /// The pair.
        pair: usize,
        /// The cell.
        cell: u32,
    },
    /// A path with consecutive cells that do not share a face.
    #[error("path {pair} jumps from cell {from} to non-adjacent cell {to}")]
    Jumps {
        /// The pair.
        pair: usize,
        /// The cell before the jump.
        from: u32,
        /// The cell after it.
        to: u32,
    },
    /// A path through a wall.
    #[error("path {pair} crosses the wall at cell {cell}")]
    CrossesWall {
        /// The pair.
        pair: usize,
        /// The wall.
        cell: u32,
    },
    /// A path through another pair's endpoint.
    #[error("path {pair} passes through the endpoint at cell {cell}")]
    ThroughEndpoint {
        /// The pair.
        pair: usize,
        /// The endpoint.
        cell: u32,
    },
    /// Two paths through one cell.
    #[error("paths {pair} and {other} share cell {cell}")]
    Shared {
        /// The later pair.
        pair: usize,
        /// The pair that claimed the cell first.
        other: u32,
        /// The cell.
        cell: u32,
    },
    /// The run's grid is not the one the paths make.
    #[error(
        "{cells} cells of the grid disagree with the paths (first: cell {first} holds {holds}, the paths say {paths_say})"
    )]
    GridDisagrees {
        /// How many cells.
        cells: usize,
        /// The first of them.
        first: usize,
        /// What the run's grid holds there.
        holds: Cell,
        /// What the paths put there.
        paths_say: Cell,
    },
    /// A pair left unrouted although the final grid has a path for it.
    #[error("pair {pair} was left unrouted, but the final grid still has a path for it")]
    StillRoutable {
        /// The pair.
        pair: usize,
    },
}

/// The sequential version: routes the pairs one after the other, in
/// `order`, on a plain grid.
///
/// # Panics
///
/// If `order` names a pair the maze does not have.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_labyrinth::{Costs, Maze, run_sequential};
///
/// let m = Maze::load("random-x16-y16-z2-n10", 1, 0)?;
/// let r = run_sequential(&m, Costs::default(), &m.routing_order());
/// assert!(r.routed() > 0);
/// assert!(m.check(&r).is_ok());
/// # Ok::<(), skelaff_stamp_labyrinth::MazeError>(())
/// ```
pub fn run_sequential(maze: &Maze, costs: Costs, order: &[u32]) -> Routing {
    let dims = maze.dims;
    // The grid in the router's layout, as the skeleton's board.
    let mut grid = to_slots(dims, &maze.initial_grid());
    // The router asks the bitmap, as the skeleton's workers do.
    let mut taken = Occupancy::of(&grid);
    let mut paths = vec![None; maze.pairs.len()];
    let mut router = Router::new(dims);
    for &k in order {
        let (src, dst) = maze.pairs[k as usize];
        if let Some(path) = router.route_slots(dims, costs, src, dst, |s| taken.is_free(s)) {
            for &c in &path[1..path.len() - 1] {
                let s = Router::slot(dims, c);
                grid[s] = PATH_BASE + k;
                taken.take_mut(s);
            }
            paths[k as usize] = Some(path);
        }
    }
    let grid = (0..dims.cells() as u32).map(|c| grid[Router::slot(dims, c)]).collect();
    Routing { paths, grid }
}

/// One bit per slot of the router's layout, set for every slot that is
/// not free (walls, endpoints, border slots and claimed cells): the view a
/// router expands through, 32 times smaller than the grid of words.
///
/// On the skeleton it lags the transactional grid: a worker sets the bits
/// of a path only after the transaction that claimed it committed
/// ([`Skeleton::committed`]), and bits are never cleared, since labyrinth
/// never frees a cell. A set bit therefore always names a cell that is
/// taken; a clear bit may name one just claimed, which the claiming
/// transaction then finds taken (and routes again), as it would with
/// STAMP's private copy of the grid.
struct Occupancy {
    words: Box<[AtomicU64]>,
}

impl Occupancy {
    /// The bitmap of `slots` (a grid in the router's layout).
    fn of(slots: &[u32]) -> Self {
        let words = slots
            .chunks(64)
            .map(|w| AtomicU64::new(w.iter().enumerate().fold(0, |b, (i, &v)| b | (u64::from(v != EMPTY) << i))))
            .collect();
        Occupancy { words }
    }

    /// Whether slot `s` was free when last published.
    #[inline(always)]
    fn is_free(&self, s: usize) -> bool {
        // Relaxed: a stale answer only costs a re-route (see the type).
        self.words[s / 64].load(Ordering::Relaxed) & (1 << (s % 64)) == 0
    }

    /// Publishes that slot `s` is taken.
    fn take(&self, s: usize) {
        self.words[s / 64].fetch_or(1 << (s % 64), Ordering::Relaxed);
    }

    /// [`Occupancy::take`] without the atomic operation, for the only owner.
    fn take_mut(&mut self, s: usize) {
        *self.words[s / 64].get_mut() |= 1 << (s % 64);
    }
}

/// A routed path shared through a transactional slot.
type PathSlot = TVar<Option<TPtr<Vec<u32>>>>;

/// The transactional state: the grid (one word per cell) and, per pair,
/// its routed path once a routing transaction commits.
pub(crate) struct Board {
    dims: Dims,
    /// The grid in the router's layout ([`Router::slot`]; border slots
    /// hold walls and are never asked about), so that a router's view of
    /// the board follows its expansion through the same cache lines.
    cells: Box<[TVar<u32>]>,
    /// What routers ask instead of `cells`: a lagging bitmap of them.
    taken: Occupancy,
    paths: Box<[PathSlot]>,
}

impl fmt::Debug for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Board").field("cells", &self.cells.len()).field("pairs", &self.paths.len()).finish()
    }
}

impl Board {
    fn new(maze: &Maze) -> Self {
        let dims = maze.dims;
        let grid = to_slots(dims, &maze.initial_grid());
        Board {
            dims,
            taken: Occupancy::of(&grid),
            cells: grid.into_iter().map(TVar::new).collect(),
            paths: (0..maze.pairs.len()).map(|_| TVar::new(None)).collect(),
        }
    }

    /// The result, once no worker runs.
    fn harvest(&self) -> Routing {
        Routing {
            paths: self
                .paths
                .iter()
                .map(|p| {
                    // SAFETY: every pointer stored was allocated by a
                    // committed transaction and is freed only by `drop`;
                    // no transaction runs any more.
                    p.load().map(|p| unsafe { p.get() }.clone())
                })
                .collect(),
            grid: (0..self.dims.cells() as u32).map(|c| self.cell(c).load()).collect(),
        }
    }

    fn cell(&self, c: u32) -> &TVar<u32> {
        &self.cells[Router::slot(self.dims, c)]
    }
}

/// `grid` (STAMP's order) in the router's layout, border slots walls.
fn to_slots(dims: Dims, grid: &[u32]) -> Vec<u32> {
    let mut slots = vec![WALL; Router::slots(dims)];
    for (c, &v) in grid.iter().enumerate() {
        slots[Router::slot(dims, c as u32)] = v;
    }
    slots
}

impl Drop for Board {
    fn drop(&mut self) {
        for p in self.paths.iter_mut() {
            if let Some(p) = p.get_mut() {
                // SAFETY: allocated by a committed transaction, reachable
                // only from this slot (`&mut self`: no transaction runs),
                // and freed here once.
                drop(unsafe { p.into_box() });
            }
        }
    }
}

/// The router on the skeleton: a work-unit is one pair.
struct Lee<'m> {
    maze: &'m Maze,
    costs: Costs,
}

/// A worker's router, and the slots its last attempt claimed.
struct LeeWorker {
    router: Router,
    claimed: Vec<usize>,
}

impl Skeleton for Lee<'_> {
    type Unit = u32;
    type Shared = Board;
    type PerWorker = LeeWorker;

    fn init_worker(&self, _: &Board, _: &WorkerInfo) -> LeeWorker {
        LeeWorker { router: Router::new(self.maze.dims), claimed: Vec::new() }
    }

    /// The grid cell the pair's route starts from: the expansion reads
    /// the cells around it first.
    fn affinity(&self, &k: &u32, board: &Board) -> Affinity {
        let Some(&(src, _)) = self.maze.pairs.get(k as usize) else { return Affinity::Anywhere };
        if src as usize >= self.maze.dims.cells() {
            return Affinity::Anywhere;
        }
        Affinity::of(board.cell(src))
    }

    /// Expands and traces back on the worker's own scratch, reading the
    /// board's occupancy bitmap without the transaction (a possibly stale
    /// view, as STAMP's private copy of the grid), then claims the path's
    /// inner cells transactionally. A cell found taken means the view was
    /// stale: the transaction restarts and routes again (STAMP's
    /// `TM_RESTART`); claims that race with another commit are caught by
    /// the STM.
    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &k: &u32,
        w: &mut LeeWorker,
        board: &'t Board,
        _: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        w.claimed.clear();
        let (src, dst) = self.maze.pairs[k as usize];
        let dims = self.maze.dims;
        let view = |s: usize| board.taken.is_free(s);
        let Some(path) = w.router.route_slots(dims, self.costs, src, dst, view) else {
            return Ok(()); // no path in this grid, nor in any later one
        };
        for &c in &path[1..path.len() - 1] {
            let s = Router::slot(dims, c);
            let cell = &board.cells[s];
            if tx.read(cell)? != EMPTY {
                return Err(TxError::Conflict(AbortReason::Explicit));
            }
            tx.write(cell, PATH_BASE + k)?;
            w.claimed.push(s);
        }
        let stored = tx.alloc(path)?;
        tx.write(&board.paths[k as usize], Some(stored))
    }

    /// The claim committed: publish its cells in the bitmap.
    fn committed(&self, _: &u32, w: &mut LeeWorker, board: &Board) {
        for s in w.claimed.drain(..) {
            board.taken.take(s);
        }
    }
}

/// Routes every pair on the skeleton with `threads` workers, the pairs
/// seeded in `order`.
///
/// # Errors
///
/// [`AppError::Worklist`] if the skeleton cannot run.
///
/// # Panics
///
/// If `order` names a pair the maze does not have.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::app::CommonArgs;
/// use skelaff_stamp_labyrinth::{Costs, Maze, run_skeleton};
///
/// let m = Maze::load("random-x16-y16-z2-n10", 1, 0)?;
/// let (r, report) = run_skeleton(&m, Costs::default(), &m.routing_order(), 2, &CommonArgs::default())?;
/// assert_eq!(report.units, 10);
/// assert!(m.check(&r).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_skeleton(
    maze: &Maze,
    costs: Costs,
    order: &[u32],
    threads: usize,
    common: &CommonArgs,
) -> Result<(Routing, RunReport), AppError> {
    let board = Board::new(maze);
    let lee = Lee { maze, costs };
    let mut wl = common.builder(threads).build(&lee, &board)?;
    wl.add_work_units(order.iter().copied());
    let report = common.run(&mut wl)?;
    Ok((board.harvest(), report))
}
