//! The maze: a 3-D grid of cells, walls, and source/destination pairs;
//! generated in-process in the shape of STAMP's `random-x…-y…-z…-n…`
//! inputs, or read from STAMP's text format.

use std::fmt;
use std::path::Path;

/// The grid's size in cells along each axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    /// Cells along x (STAMP's width).
    pub x: u32,
    /// Cells along y (STAMP's height).
    pub y: u32,
    /// Cells along z (STAMP's depth: the layers).
    pub z: u32,
}

impl fmt::Display for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.x, self.y, self.z)
    }
}

/// The most cells a maze may have (cell indices and per-worker scratch
/// arrays stay reasonable).
pub const MAX_CELLS: u64 = 1 << 28;
/// The most source/destination pairs a maze may have.
pub const MAX_PAIRS: usize = 1 << 24;

impl Dims {
    /// The number of cells.
    pub fn cells(self) -> usize {
        self.x as usize * self.y as usize * self.z as usize
    }

    /// The index of cell `(x, y, z)` (x fastest, as STAMP lays out its
    /// grid); [`Dims::coords`] is its inverse.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_labyrinth::Dims;
    ///
    /// let d = Dims { x: 4, y: 3, z: 2 };
    /// assert_eq!(d.index(1, 2, 1), 21);
    /// assert_eq!(d.coords(21), (1, 2, 1));
    /// assert!(d.adjacent(21, 9) && !d.adjacent(21, 22 - 4));
    /// ```
    #[inline]
    pub fn index(self, x: u32, y: u32, z: u32) -> u32 {
        (z * self.y + y) * self.x + x
    }

    /// The coordinates of cell `i`.
    #[inline]
    pub fn coords(self, i: u32) -> (u32, u32, u32) {
        (i % self.x, (i / self.x) % self.y, i / (self.x * self.y))
    }

    /// Whether cells `a` and `b` share a face.
    pub fn adjacent(self, a: u32, b: u32) -> bool {
        let (ax, ay, az) = self.coords(a);
        let (bx, by, bz) = self.coords(b);
        ax.abs_diff(bx) + ay.abs_diff(by) + az.abs_diff(bz) == 1
    }

    fn checked(x: i64, y: i64, z: i64) -> Result<Dims, BadDims> {
        if x < 1 || y < 1 || z < 1 {
            return Err(BadDims::NotPositive { x, y, z });
        }
        // Each side is below 2^63, so x * y fits u128 but a third side may
        // not: overflow (`cells: None`) is one more way to exceed MAX_CELLS.
        match (x as u128).checked_mul(y as u128).and_then(|xy| xy.checked_mul(z as u128)) {
            Some(cells) if cells <= u128::from(MAX_CELLS) => {}
            cells => return Err(BadDims::TooManyCells { x, y, z, cells }),
        }
        Ok(Dims { x: x as u32, y: y as u32, z: z as u32 })
    }
}

/// Dimensions a maze cannot have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadDims {
    /// A side below 1.
    #[error("dimensions ({x}, {y}, {z}) must each be at least 1")]
    NotPositive {
        /// Cells along x.
        x: i64,
        /// Cells along y.
        y: i64,
        /// Cells along z.
        z: i64,
    },
    /// More than [`MAX_CELLS`] cells.
    #[error(
        "dimensions ({x}, {y}, {z}) make {} cells; at most {MAX_CELLS} are allowed",
        cells.map_or_else(|| "over 2^128".to_owned(), |c| c.to_string())
    )]
    TooManyCells {
        /// Cells along x.
        x: i64,
        /// Cells along y.
        y: i64,
        /// Cells along z.
        z: i64,
        /// Their product (`None`: over 2^128).
        cells: Option<u128>,
    },
}

/// What is wrong with one line of a maze file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadLine {
    /// An item that is not `d`, `p`, `w` or a comment.
    #[error("unknown item `{item}`; expected `d`, `p`, `w` or a `#` comment")]
    UnknownItem {
        /// The line's first word.
        item: String,
    },
    /// Too few or too many values after the item.
    #[error("{found} values after `{item}`; expected `{form}`")]
    ValueCount {
        /// The item (`d`, `p` or `w`).
        item: char,
        /// Values given.
        found: usize,
        /// The item's form (`d X Y Z`, …).
        form: &'static str,
    },
    /// A value that is not an integer.
    #[error("`{text}` is not an integer; expected `{form}`")]
    NotInteger {
        /// The value.
        text: String,
        /// The item's form.
        form: &'static str,
    },
    /// A second `d` line.
    #[error("second dimensions line (the first is line {first})")]
    SecondDimensions {
        /// The first `d` line.
        first: usize,
    },
    /// Dimensions out of range.
    #[error(transparent)]
    Dims(BadDims),
    /// A coordinate outside the grid.
    #[error("{what} ({}, {}, {}) is outside the {dims} grid", at[0], at[1], at[2])]
    Outside {
        /// `wall`, `source` or `destination`.
        what: &'static str,
        /// Its coordinates.
        at: [i64; 3],
        /// The grid.
        dims: Dims,
    },
    /// A pair whose source is its destination.
    #[error("source and destination are the same cell ({}, {}, {})", at[0], at[1], at[2])]
    SameCell {
        /// The cell.
        at: [i64; 3],
    },
    /// More than [`MAX_PAIRS`] pairs.
    #[error("more than {MAX_PAIRS} pairs")]
    TooManyPairs,
}

/// A maze to route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Maze {
    /// The grid's size.
    pub dims: Dims,
    /// Wall cells.
    pub walls: Vec<u32>,
    /// Source and destination cells of each pair, in input order.
    pub pairs: Vec<(u32, u32)>,
    /// Where it came from (a file name or a generated shape), for messages.
    pub origin: String,
}

/// A cell of a routed grid.
pub(crate) const EMPTY: u32 = 0;
/// A wall cell.
pub(crate) const WALL: u32 = 1;
/// A source or destination (no path may pass through it).
pub(crate) const ENDPOINT: u32 = 2;
/// Cell value of a cell claimed by pair `p`: `PATH_BASE + p`.
pub(crate) const PATH_BASE: u32 = 3;

/// A maze that could not be made or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MazeError {
    /// A malformed line of a maze file.
    #[error("{origin}, line {line}: {what}")]
    Line {
        /// The file.
        origin: String,
        /// Its 1-based line number.
        line: usize,
        /// What is wrong and what is expected.
        what: BadLine,
    },
    /// A maze file without a `d X Y Z` line.
    #[error("{origin}: no dimensions line; expected a line `d X Y Z`")]
    NoDimensions {
        /// The file.
        origin: String,
    },
    /// The file exists but could not be read.
    #[error("cannot read maze file {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Neither a file nor a shape name.
    #[error(
        "`{0}` is neither a maze file nor a maze shape; a shape is random-x<X>-y<Y>-z<Z>-n<PAIRS> (e.g. random-x32-y32-z3-n96, optionally with a directory and .txt), generated in-process"
    )]
    UnknownInput(String),
    /// A shape's dimensions out of range.
    #[error(transparent)]
    Dims(#[from] BadDims),
    /// A grid of one cell: no room for a source and a different destination.
    #[error("a {dims} grid has no room for a source and a different destination")]
    NoRoom {
        /// The grid.
        dims: Dims,
    },
    /// More than [`MAX_PAIRS`] pairs asked.
    #[error("{pairs} pairs asked; at most {MAX_PAIRS} are allowed")]
    TooManyPairs {
        /// Pairs asked.
        pairs: usize,
    },
    /// A wall percentage over 100.
    #[error("wall percentage {percent}; allowed: 0 to 100")]
    WallPercent {
        /// The percentage asked.
        percent: u32,
    },
}

impl Maze {
    /// A maze of `dims` with `pairs` source/destination pairs drawn
    /// uniformly at random (destination different from source), as STAMP's
    /// `inputs/generate.py` made its `random-x…-y…-z…-n…` files, from a
    /// generator seeded with `seed`; then, if `wall_percent > 0`, each
    /// cell that is not an endpoint becomes a wall with that probability
    /// (STAMP's inputs have no walls).
    ///
    /// # Errors
    ///
    /// [`MazeError::NoRoom`] for a grid of fewer than 2 cells,
    /// [`MazeError::Dims`] for more than [`MAX_CELLS`],
    /// [`MazeError::TooManyPairs`] for more than [`MAX_PAIRS`] pairs, and
    /// [`MazeError::WallPercent`] for a wall percentage over 100.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_labyrinth::{Dims, Maze};
    ///
    /// let m = Maze::random(Dims { x: 32, y: 32, z: 3 }, 96, 0, 0)?;
    /// assert_eq!(m.pairs.len(), 96);
    /// assert!(m.pairs.iter().all(|&(s, d)| s != d));
    /// # Ok::<(), skelaff_stamp_labyrinth::MazeError>(())
    /// ```
    pub fn random(dims: Dims, pairs: usize, seed: u64, wall_percent: u32) -> Result<Maze, MazeError> {
        let dims = Dims::checked(dims.x.into(), dims.y.into(), dims.z.into())?;
        let cells = dims.cells() as u32;
        if cells < 2 {
            return Err(MazeError::NoRoom { dims });
        }
        if pairs > MAX_PAIRS {
            return Err(MazeError::TooManyPairs { pairs });
        }
        if wall_percent > 100 {
            return Err(MazeError::WallPercent { percent: wall_percent });
        }
        let mut rng = fastrand::Rng::with_seed(seed);
        let pairs: Vec<(u32, u32)> = (0..pairs)
            .map(|_| {
                let src = rng.u32(..cells);
                let mut dst = rng.u32(..cells);
                while dst == src {
                    dst = rng.u32(..cells);
                }
                (src, dst)
            })
            .collect();
        let mut walls = Vec::new();
        if wall_percent > 0 {
            let mut endpoint = vec![false; cells as usize];
            for &(s, d) in &pairs {
                endpoint[s as usize] = true;
                endpoint[d as usize] = true;
            }
            walls = (0..cells).filter(|&c| !endpoint[c as usize] && rng.u32(0..100) < wall_percent).collect();
        }
        let origin = format!(
            "random-x{}-y{}-z{}-n{} (generated, seed {seed}{})",
            dims.x,
            dims.y,
            dims.z,
            pairs.len(),
            if wall_percent > 0 { format!(", {wall_percent}% walls") } else { String::new() }
        );
        Ok(Maze { dims, walls, pairs, origin })
    }

    /// Reads STAMP's maze format: one item per line, `d X Y Z` (the
    /// dimensions, once), `p X1 Y1 Z1 X2 Y2 Z2` (a source/destination
    /// pair), `w X Y Z` (a wall); blank lines and lines starting with `#`
    /// are ignored. `origin` names the text in messages.
    ///
    /// # Errors
    ///
    /// [`MazeError::Line`] with the line number for an unknown item, a
    /// wrong number of values, a value that is not an integer, a second
    /// dimensions line, a coordinate outside the grid, or a pair whose
    /// source is its destination; [`MazeError::NoDimensions`] when no `d`
    /// line is given.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_labyrinth::Maze;
    ///
    /// let m = Maze::parse("# a maze\nd 4 4 1\np 0 0 0  3 3 0\nw 1 1 0\n", "m.txt")?;
    /// assert_eq!((m.pairs.len(), m.walls.len()), (1, 1));
    /// let e = Maze::parse("d 4 4 1\np 0 0 0 9 0 0\n", "m.txt").unwrap_err();
    /// assert_eq!(e.to_string(), "m.txt, line 2: destination (9, 0, 0) is outside the 4x4x1 grid");
    /// # Ok::<(), skelaff_stamp_labyrinth::MazeError>(())
    /// ```
    pub fn parse(text: &str, origin: &str) -> Result<Maze, MazeError> {
        let err = |line: usize, what: BadLine| MazeError::Line { origin: origin.to_owned(), line, what };
        let mut dims: Option<(usize, Dims)> = None;
        // (line, kind, coordinates) until the dimensions are known.
        let mut items: Vec<(usize, char, [i64; 6])> = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let mut tokens = raw.split_whitespace();
            let Some(code) = tokens.next() else { continue };
            if code.starts_with('#') {
                continue;
            }
            let values: Vec<&str> = tokens.collect();
            let (kind, count, form) = match code {
                "d" => ('d', 3, "d X Y Z"),
                "p" => ('p', 6, "p X1 Y1 Z1 X2 Y2 Z2"),
                "w" => ('w', 3, "w X Y Z"),
                other => {
                    return Err(err(line, BadLine::UnknownItem { item: other.to_owned() }));
                }
            };
            if values.len() != count {
                return Err(err(line, BadLine::ValueCount { item: kind, found: values.len(), form }));
            }
            let mut v = [0i64; 6];
            for (slot, text) in v.iter_mut().zip(&values) {
                *slot = text.parse().map_err(|_| err(line, BadLine::NotInteger { text: (*text).to_owned(), form }))?;
            }
            if kind == 'd' {
                if let Some((first, _)) = dims {
                    return Err(err(line, BadLine::SecondDimensions { first }));
                }
                dims = Some((line, Dims::checked(v[0], v[1], v[2]).map_err(|e| err(line, BadLine::Dims(e)))?));
            } else {
                items.push((line, kind, v));
            }
        }
        let Some((_, dims)) = dims else { return Err(MazeError::NoDimensions { origin: origin.to_owned() }) };
        let cell = |line: usize, what: &'static str, c: &[i64]| -> Result<u32, MazeError> {
            let inside = |v: i64, n: u32| v >= 0 && v < i64::from(n);
            if inside(c[0], dims.x) && inside(c[1], dims.y) && inside(c[2], dims.z) {
                Ok(dims.index(c[0] as u32, c[1] as u32, c[2] as u32))
            } else {
                Err(err(line, BadLine::Outside { what, at: [c[0], c[1], c[2]], dims }))
            }
        };
        let mut maze = Maze { dims, walls: Vec::new(), pairs: Vec::new(), origin: origin.to_owned() };
        for (line, kind, v) in items {
            if kind == 'w' {
                maze.walls.push(cell(line, "wall", &v[..3])?);
                continue;
            }
            let src = cell(line, "source", &v[..3])?;
            let dst = cell(line, "destination", &v[3..])?;
            if src == dst {
                return Err(err(line, BadLine::SameCell { at: [v[0], v[1], v[2]] }));
            }
            if maze.pairs.len() == MAX_PAIRS {
                return Err(err(line, BadLine::TooManyPairs));
            }
            maze.pairs.push((src, dst));
        }
        Ok(maze)
    }

    /// The maze `input` names: the file at that path if there is one,
    /// else a maze generated in-process if its file name (without
    /// directory and `.txt`) is a shape `random-x<X>-y<Y>-z<Z>-n<PAIRS>`,
    /// with generator `seed` and `wall_percent` (see [`Maze::random`]). So
    /// STAMP's command lines (`-i inputs/random-x32-y32-z3-n96.txt`) run
    /// without STAMP's files, on a maze of the same shape.
    ///
    /// # Errors
    ///
    /// [`MazeError::Io`] for a file that cannot be read, the errors of
    /// [`Maze::parse`] and [`Maze::random`], and
    /// [`MazeError::UnknownInput`] for anything else.
    pub fn load(input: &str, seed: u64, wall_percent: u32) -> Result<Maze, MazeError> {
        let path = Path::new(input);
        if path.is_file() {
            let text = std::fs::read_to_string(path)
                .map_err(|source| MazeError::Io { path: path.display().to_string(), source })?;
            return Maze::parse(&text, &path.display().to_string());
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or(input);
        let name = name.strip_suffix(".txt").unwrap_or(name);
        let (dims, pairs) = parse_shape(name).ok_or_else(|| MazeError::UnknownInput(input.to_owned()))?;
        Maze::random(dims, pairs, seed, wall_percent)
    }

    /// The grid before routing: walls, then every source and destination.
    pub fn initial_grid(&self) -> Vec<u32> {
        let mut g = vec![EMPTY; self.dims.cells()];
        for &w in &self.walls {
            g[w as usize] = WALL;
        }
        for &(s, d) in &self.pairs {
            g[s as usize] = ENDPOINT;
            g[d as usize] = ENDPOINT;
        }
        g
    }

    /// The order STAMP routes pairs in: longest first (by straight-line
    /// distance, ties in input order), so that long paths, the hardest to
    /// place, meet an emptier grid.
    pub fn routing_order(&self) -> Vec<u32> {
        let d2 = |&(s, d): &(u32, u32)| {
            let (a, b) = (self.dims.coords(s), self.dims.coords(d));
            let sq = |p: u32, q: u32| u64::from(p.abs_diff(q)).pow(2);
            sq(a.0, b.0) + sq(a.1, b.1) + sq(a.2, b.2)
        };
        let mut order: Vec<u32> = (0..self.pairs.len() as u32).collect();
        order.sort_by_key(|&p| std::cmp::Reverse(d2(&self.pairs[p as usize])));
        order
    }
}

/// `random-x<X>-y<Y>-z<Z>-n<PAIRS>` → its dimensions and pair count.
fn parse_shape(name: &str) -> Option<(Dims, usize)> {
    let rest = name.strip_prefix("random-")?;
    let mut parts = rest.split('-');
    let mut field = |tag: char| parts.next()?.strip_prefix(tag)?.parse::<u64>().ok();
    let (x, y, z, n) = (field('x')?, field('y')?, field('z')?, field('n')?);
    if parts.next().is_some() {
        return None;
    }
    let small = |v: u64| u32::try_from(v).ok();
    Some((Dims { x: small(x)?, y: small(y)?, z: small(z)? }, usize::try_from(n).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(parse_shape("random-x32-y32-z3-n96"), Some((Dims { x: 32, y: 32, z: 3 }, 96)));
        assert_eq!(parse_shape("random-x32-y32-z3"), None);
        assert_eq!(parse_shape("random-x32-y32-z3-n96-q1"), None);
        assert_eq!(parse_shape("random-y32-x32-z3-n96"), None);
        let m = Maze::load("inputs/random-x8-y9-z2-n5.txt", 3, 0).unwrap();
        assert_eq!((m.dims, m.pairs.len()), (Dims { x: 8, y: 9, z: 2 }, 5));
        assert!(matches!(Maze::load("no/such/file.txt", 0, 0), Err(MazeError::UnknownInput(_))));
        assert!(matches!(
            Maze::load("random-x0-y9-z2-n5", 0, 0),
            Err(MazeError::Dims(BadDims::NotPositive { x: 0, y: 9, z: 2 }))
        ));
        assert!(matches!(Maze::load("random-x1-y1-z1-n5", 0, 0), Err(MazeError::NoRoom { .. })));
    }

    #[test]
    fn generation_is_seeded() {
        let d = Dims { x: 16, y: 16, z: 2 };
        assert_eq!(Maze::random(d, 20, 5, 10).unwrap(), Maze::random(d, 20, 5, 10).unwrap());
        assert_ne!(Maze::random(d, 20, 5, 0).unwrap().pairs, Maze::random(d, 20, 6, 0).unwrap().pairs);
        let m = Maze::random(d, 20, 5, 30).unwrap();
        let g = m.initial_grid();
        assert!(m.walls.iter().all(|&w| g[w as usize] == WALL));
        assert!(m.walls.len() > 100);
    }

    #[test]
    fn parse_errors_name_the_line() {
        let cases = [
            ("d 2 2 1\nq 1\n", "line 2: unknown item `q`"),
            ("d 2 2\n", "line 1: 2 values after `d`"),
            ("d 2 2 x\n", "line 1: `x` is not an integer"),
            ("\n\nd 2 2 0\n", "line 3: dimensions (2, 2, 0)"),
            ("d 2 2 1\nd 2 2 1\n", "line 2: second dimensions line (the first is line 1)"),
            ("d 2 2 1\np 0 0 0 0 0 0\n", "line 2: source and destination are the same cell"),
            ("w 5 0 0\nd 2 2 1\n", "line 1: wall (5, 0, 0) is outside"),
            ("p 0 0 0 -1 0 0\nd 2 2 1\n", "line 1: destination (-1, 0, 0) is outside"),
        ];
        for (text, want) in cases {
            let e = Maze::parse(text, "t").unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} should contain {want:?}");
        }
        assert!(matches!(Maze::parse("# nothing\n", "t"), Err(MazeError::NoDimensions { .. })));
        // Typed: what was wrong, where, and what was expected.
        assert!(matches!(
            Maze::parse("d 2 2 1\np 0 0 0 5 0 0\n", "t"),
            Err(MazeError::Line { line: 2, what: BadLine::Outside { what: "destination", at: [5, 0, 0], .. }, .. })
        ));
        assert!(matches!(
            Maze::parse("d 2 2\n", "t"),
            Err(MazeError::Line { line: 1, what: BadLine::ValueCount { item: 'd', found: 2, form: "d X Y Z" }, .. })
        ));
        assert!(matches!(
            Maze::parse("d 2 2 99999999999\n", "t"),
            Err(MazeError::Line {
                what: BadLine::Dims(BadDims::TooManyCells { cells: Some(399_999_999_996), .. }),
                ..
            })
        ));
        let d = Dims { x: 4, y: 4, z: 1 };
        assert!(matches!(Maze::random(d, 1, 0, 101), Err(MazeError::WallPercent { percent: 101 })));
        assert!(matches!(Maze::random(d, MAX_PAIRS + 1, 0, 0), Err(MazeError::TooManyPairs { .. })));
    }

    #[test]
    fn order_is_longest_first() {
        let m = Maze::parse("d 10 1 1\np 0 0 0 1 0 0\np 0 0 0 9 0 0\np 2 0 0 5 0 0\n", "t").unwrap();
        assert_eq!(m.routing_order(), vec![1, 2, 0]);
    }
}
