//! Lee's maze router: expansion from the source, then traceback from the
//! destination.

use super::maze::Dims;

/// Movement and bend costs (STAMP's `-x -y -z -b`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Costs {
    /// Cost of a step along x.
    pub x: u32,
    /// Cost of a step along y.
    pub y: u32,
    /// Cost of a step along z (between layers).
    pub z: u32,
    /// Extra weight of changing direction during traceback.
    pub bend: u32,
}

impl Default for Costs {
    /// STAMP's defaults: 1, 1, 2 and bend 1.
    fn default() -> Self {
        Costs { x: 1, y: 1, z: 2, bend: 1 }
    }
}

/// The six directions: +x, -x, +y, -y, +z, -z.
const DIRECTIONS: usize = 6;

/// A cell's state word in the router's scratch grid: the route number
/// (generation) in its high bits, the distance from the source in its low
/// `dist` bits. All ones marks a border cell (a generation no route
/// reaches). Words are `u32` where the distances fit, `u64` otherwise.
trait StateWord: Copy + Eq {
    const BORDER: Self;
    const ZERO: Self;
    fn get(self) -> u64;
    /// `v` fits the word (the callers' masks guarantee it).
    fn make(v: u64) -> Self;
}

impl StateWord for u32 {
    const BORDER: u32 = u32::MAX;
    const ZERO: u32 = 0;
    #[inline(always)]
    fn get(self) -> u64 {
        u64::from(self)
    }
    #[inline(always)]
    fn make(v: u64) -> u32 {
        v as u32
    }
}

impl StateWord for u64 {
    const BORDER: u64 = u64::MAX;
    const ZERO: u64 = 0;
    #[inline(always)]
    fn get(self) -> u64 {
        self
    }
    #[inline(always)]
    fn make(v: u64) -> u64 {
        v
    }
}

/// How state words are split for one route: `dist` low bits of distance,
/// the generation above them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Split {
    dist: u32,
}

impl Split {
    fn mask(self) -> u64 {
        (1u64 << self.dist) - 1
    }
    /// Distance of a cell not reached (yet).
    fn unreached(self) -> u64 {
        self.mask() - 1
    }
    /// Distance of a cell that cannot be entered (above every distance).
    fn blocked(self) -> u64 {
        self.mask()
    }
    /// The last generation a route may use in words of `bits` bits (the
    /// all-ones generation is the border's).
    fn last_generation(self, bits: u32) -> u64 {
        (1u64 << (bits - self.dist)) - 2
    }
}

/// The scratch grid's words: 4 bytes a cell when the largest distance a
/// route can reach fits in 24 to 30 bits, 8 otherwise. Halving the words
/// halves the memory an expansion sweeps (on STAMP's 512x512x7 maze the
/// `u32` grid made the sequential run a quarter faster).
#[derive(Debug, Clone)]
enum States {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

/// One worker's routing scratch.
///
/// It covers the grid with a border of one cell on every side, so that a
/// step never needs a bounds check: a border cell stops it. Its cells are
/// laid out with z fastest, so the up and down steps stay in the cache
/// line of the cell they leave. Each cell's state word is the route
/// number (generation) in the high bits and the distance from the source
/// in the low bits; a distance counts only if the generation is the
/// current route's, so nothing is cleared between routes (only when the
/// generations run out, every 254 routes or more). Border cells hold a
/// value no generation reaches.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_labyrinth::{Costs, Dims, Router};
///
/// let dims = Dims { x: 3, y: 3, z: 1 };
/// let mut r = Router::new(dims);
/// // The middle cell (4) is blocked: the path goes around it.
/// let path = r.route(dims, Costs::default(), 3, 5, |c| c != 4).unwrap();
/// assert_eq!((path.len(), path[0], path[4]), (5, 3, 5));
/// assert!(!path.contains(&4));
/// ```
#[derive(Debug, Clone)]
pub struct Router {
    dims: Dims,
    /// Strides of the bordered grid along x and y (z's is 1).
    sx: usize,
    sy: usize,
    states: States,
    /// How the words are split; the generations restart when it changes.
    split: Split,
    generation: u64,
    /// Cells to expand, by distance modulo their count: (bordered index, grid index).
    buckets: Vec<Vec<(u32, u32)>>,
}

/// A bordered grid of `dims` in words `W`: border cells all ones, the
/// others zero (no generation).
fn fresh_states<W: StateWord>(dims: Dims) -> Vec<W> {
    let (bx, by, bz) = (dims.x as usize + 2, dims.y as usize + 2, dims.z as usize + 2);
    let mut state = vec![W::BORDER; bx * by * bz];
    for y in 1..by - 1 {
        for x in 1..bx - 1 {
            let column = (y * bx + x) * bz;
            state[column + 1..column + bz - 1].fill(W::ZERO);
        }
    }
    state
}

/// Clears every cell but the border's (their generations restart).
fn clear<W: StateWord>(state: &mut [W]) {
    for s in state.iter_mut().filter(|s| **s != W::BORDER) {
        *s = W::ZERO;
    }
}

/// One route's fixed inputs.
struct Job {
    steps: [(usize, u32); DIRECTIONS],
    step_cost: [u64; DIRECTIONS],
    /// Buckets: the largest step cost plus one.
    nb: usize,
    src: (usize, u32),
    dst: (usize, u32),
    /// The current generation, shifted into place.
    gen_bits: u64,
    split: Split,
}

impl Job {
    /// The distance a word holds for this route, or `blocked` if it is
    /// not this route's.
    #[inline(always)]
    fn dist<W: StateWord>(&self, s: W) -> u64 {
        let s = s.get();
        if s & !self.split.mask() == self.gen_bits { s & self.split.mask() } else { self.split.blocked() }
    }

    /// Lee's expansion from the source until the destination settles;
    /// whether it did.
    fn expand<W: StateWord>(
        &self,
        state: &mut [W],
        buckets: &mut [Vec<(u32, u32)>],
        free: &mut impl FnMut(u32, usize) -> bool,
    ) -> bool {
        let (unreached, blocked) = (self.split.unreached(), self.split.blocked());
        state[self.src.0] = W::make(self.gen_bits);
        buckets[0].push((self.src.0 as u32, self.src.1));
        let mut pending = 1usize;
        let mut at = 0u64;
        while pending > 0 {
            let b = (at % self.nb as u64) as usize;
            while let Some((p, c)) = buckets[b].pop() {
                pending -= 1;
                if self.dist(state[p as usize]) != at {
                    continue; // superseded by a shorter distance
                }
                if c == self.dst.1 {
                    return true;
                }
                for (&(dp, dc), &cost) in self.steps.iter().zip(&self.step_cost) {
                    let np = (p as usize).wrapping_add(dp);
                    let s = state[np];
                    if s == W::BORDER {
                        continue;
                    }
                    let n = c.wrapping_add(dc);
                    let known = if s.get() & !self.split.mask() == self.gen_bits {
                        s.get() & self.split.mask()
                    } else {
                        // First seen by this route: ask once.
                        let v = if n == self.dst.1 || free(n, np) { unreached } else { blocked };
                        state[np] = W::make(self.gen_bits | v);
                        v
                    };
                    let nd = at + cost;
                    // `blocked` is above every distance, but must stay so.
                    if known != blocked && nd < known {
                        state[np] = W::make(self.gen_bits | nd);
                        buckets[(nd % self.nb as u64) as usize].push((np as u32, n));
                        pending += 1;
                    }
                }
            }
            at += 1;
        }
        false
    }

    /// Walks from the destination down the distances to the source. Every
    /// cell with a distance below the destination's is settled, and every
    /// settled cell but the source has a neighbour closer to it, so each
    /// step finds one.
    fn traceback<W: StateWord>(&self, state: &[W], bend: u32) -> Option<Vec<u32>> {
        let mut path = vec![self.dst.1];
        let (mut p, mut c) = self.dst;
        let mut heading: Option<usize> = None;
        while c != self.src.1 {
            let here = self.dist(state[p]);
            let mut best: Option<(u64, usize, u32, usize)> = None;
            for (d, &(dp, dc)) in self.steps.iter().enumerate() {
                let np = p.wrapping_add(dp);
                let there = self.dist(state[np]);
                if there >= here {
                    continue;
                }
                let turn = if heading.is_some_and(|h| h != d) { u64::from(bend) } else { 0 };
                let score = there + turn;
                if best.is_none_or(|(s, ..)| score < s) {
                    best = Some((score, np, c.wrapping_add(dc), d));
                }
            }
            let (_, np, n, d) = best?;
            path.push(n);
            (p, c) = (np, n);
            heading = Some(d);
        }
        path.reverse();
        Some(path)
    }
}

impl Router {
    /// Scratch for grids of `dims`.
    pub fn new(dims: Dims) -> Self {
        let (bx, bz) = (dims.x as usize + 2, dims.z as usize + 2);
        Router {
            dims,
            sx: bz,
            sy: bx * bz,
            states: States::Narrow(fresh_states(dims)),
            split: Split { dist: 24 },
            generation: 0,
            buckets: Vec::new(),
        }
    }

    /// The bordered index of grid cell `c`.
    fn bordered(&self, c: u32) -> usize {
        Router::slot(self.dims, c)
    }

    /// Where grid cell `c` (STAMP's order, x fastest) sits in the scratch
    /// grid of a router for `dims`: a border of one cell on every side,
    /// z fastest. An array laid out the same way ([`Router::slots`] long)
    /// can be asked about by slot ([`Router::route_slots`]), so that the
    /// expansion reads it through the same cache lines as its own state.
    /// `c` must be a cell of `dims` (below `dims.cells()`); the slot of
    /// any other index is not in the scratch grid.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_labyrinth::{Dims, Router};
    ///
    /// let dims = Dims { x: 4, y: 3, z: 2 };
    /// assert_eq!(Router::slots(dims), 6 * 5 * 4);
    /// // Cell (1, 2, 1): one column of 4 per x, one row of 6 columns per y.
    /// assert_eq!(Router::slot(dims, dims.index(1, 2, 1)), (3 * 6 + 2) * 4 + 2);
    /// ```
    pub fn slot(dims: Dims, c: u32) -> usize {
        let (x, y, z) = dims.coords(c);
        let (sx, sy) = (dims.z as usize + 2, (dims.x as usize + 2) * (dims.z as usize + 2));
        (y as usize + 1) * sy + (x as usize + 1) * sx + z as usize + 1
    }

    /// The length of a router's scratch grid for `dims` (border included).
    pub fn slots(dims: Dims) -> usize {
        (dims.x as usize + 2) * (dims.y as usize + 2) * (dims.z as usize + 2)
    }

    /// The six steps (+x, -x, +y, -y, +z, -z) in the bordered grid and in the grid.
    fn steps(&self) -> [(usize, u32); DIRECTIONS] {
        let xy = self.dims.x * self.dims.y;
        [
            (self.sx, 1),
            (self.sx.wrapping_neg(), 1u32.wrapping_neg()),
            (self.sy, self.dims.x),
            (self.sy.wrapping_neg(), self.dims.x.wrapping_neg()),
            (1, xy),
            (1usize.wrapping_neg(), xy.wrapping_neg()),
        ]
    }

    /// Chooses the words and their split for a route whose steps cost at
    /// most `max_cost`, and the route's generation (clearing the grid when
    /// the generations run out or the split changes).
    fn next_generation(&mut self, max_cost: u64) -> (Split, u64) {
        // No distance exceeds every cell's step at the dearest cost; two
        // more values mark unreached and blocked cells.
        let bound = (self.dims.cells() as u64 + 1) * max_cost + 2;
        let needed = u64::BITS - bound.leading_zeros();
        // At least 8 bits of generation in narrow words where the
        // distances leave room (a clear every 254 routes), at least 2.
        let narrow = needed.max(24);
        let (wide, split) = if narrow <= u32::BITS - 2 {
            (false, Split { dist: narrow })
        } else {
            (true, Split { dist: needed.max(32) })
        };
        let bits = if wide { u64::BITS } else { u32::BITS };
        match (&mut self.states, wide) {
            (States::Narrow(_), true) => self.states = States::Wide(fresh_states(self.dims)),
            (States::Wide(_), false) => self.states = States::Narrow(fresh_states(self.dims)),
            _ => {}
        }
        self.generation += 1;
        if split != self.split || self.generation > split.last_generation(bits) {
            match &mut self.states {
                States::Narrow(s) => clear(s),
                States::Wide(s) => clear(s),
            }
            self.split = split;
            self.generation = 1;
        }
        (split, self.generation << split.dist)
    }

    /// A shortest path from `src` to `dst` through cells for which `free`
    /// holds (it is asked at most once per cell per route, and never about
    /// `src` or `dst`), as cell indices from `src` to `dst`; `None` if
    /// there is none.
    ///
    /// Expansion settles cells in order of their distance from `src`
    /// (Lee's wave with the per-axis step costs, kept in one bucket per
    /// distance modulo the largest step cost) and stops when it reaches
    /// `dst`. Traceback walks from `dst` to a neighbour of smaller distance
    /// each step, preferring (by `costs.bend`) to keep its direction, as
    /// STAMP's traceback does. The queue keeps one bucket per step cost up
    /// to the largest, so its memory grows with that cost (the command
    /// line allows at most 1000).
    ///
    /// # Panics
    ///
    /// If `dims` is not the grid this router was made for, `src` or `dst`
    /// is outside it, or a step cost is 0.
    pub fn route(
        &mut self,
        dims: Dims,
        costs: Costs,
        src: u32,
        dst: u32,
        mut free: impl FnMut(u32) -> bool,
    ) -> Option<Vec<u32>> {
        self.route_with(dims, costs, src, dst, |c, _| free(c))
    }

    /// [`Router::route`], with `free` asked about a cell by its slot
    /// ([`Router::slot`]) instead of its grid index: for a caller that
    /// keeps its grid in the router's layout.
    ///
    /// # Panics
    ///
    /// As [`Router::route`].
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_labyrinth::{Costs, Dims, Router};
    ///
    /// let dims = Dims { x: 3, y: 3, z: 1 };
    /// let mut open = vec![true; Router::slots(dims)];
    /// open[Router::slot(dims, 4)] = false; // the middle cell
    /// let mut r = Router::new(dims);
    /// let path = r.route_slots(dims, Costs::default(), 3, 5, |s| open[s]).unwrap();
    /// assert_eq!(path.len(), 5);
    /// assert!(!path.contains(&4));
    /// ```
    pub fn route_slots(
        &mut self,
        dims: Dims,
        costs: Costs,
        src: u32,
        dst: u32,
        mut free: impl FnMut(usize) -> bool,
    ) -> Option<Vec<u32>> {
        self.route_with(dims, costs, src, dst, |_, s| free(s))
    }

    fn route_with(
        &mut self,
        dims: Dims,
        costs: Costs,
        src: u32,
        dst: u32,
        mut free: impl FnMut(u32, usize) -> bool,
    ) -> Option<Vec<u32>> {
        assert_eq!(dims, self.dims, "router made for a {} grid", self.dims);
        assert!(src < dims.cells() as u32 && dst < dims.cells() as u32, "endpoints outside the grid");
        assert!(costs.x > 0 && costs.y > 0 && costs.z > 0, "step costs must be at least 1");
        let max_cost = costs.x.max(costs.y).max(costs.z);
        let nb = max_cost as usize + 1;
        if self.buckets.len() != nb {
            self.buckets = vec![Vec::new(); nb];
        }
        let (split, gen_bits) = self.next_generation(u64::from(max_cost));
        let step_cost = [costs.x, costs.x, costs.y, costs.y, costs.z, costs.z].map(u64::from);
        let job = Job {
            steps: self.steps(),
            step_cost,
            nb,
            src: (self.bordered(src), src),
            dst: (self.bordered(dst), dst),
            gen_bits,
            split,
        };
        let found = match &mut self.states {
            States::Narrow(s) => job.expand(s, &mut self.buckets, &mut free),
            States::Wide(s) => job.expand(s, &mut self.buckets, &mut free),
        };
        for b in &mut self.buckets {
            b.clear();
        }
        if !found {
            return None;
        }
        match &self.states {
            States::Narrow(s) => job.traceback(s, costs.bend),
            States::Wide(s) => job.traceback(s, costs.bend),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Breadth-first step count from `src` to `dst`, for comparison.
    fn bfs_steps(dims: Dims, src: u32, dst: u32, free: &dyn Fn(u32) -> bool) -> Option<u32> {
        let mut steps = vec![u32::MAX; dims.cells()];
        let mut queue = std::collections::VecDeque::from([src]);
        steps[src as usize] = 0;
        while let Some(c) = queue.pop_front() {
            if c == dst {
                return Some(steps[c as usize]);
            }
            for n in (0..dims.cells() as u32).filter(|&n| dims.adjacent(c, n)) {
                if steps[n as usize] == u32::MAX && (n == dst || free(n)) {
                    steps[n as usize] = steps[c as usize] + 1;
                    queue.push_back(n);
                }
            }
        }
        None
    }

    fn cost(dims: Dims, costs: Costs, p: &[u32]) -> u32 {
        p.windows(2).map(|w| if dims.coords(w[0]).2 != dims.coords(w[1]).2 { costs.z } else { costs.x }).sum()
    }

    #[test]
    fn paths_are_valid_and_shortest_when_they_exist() {
        let dims = Dims { x: 9, y: 7, z: 3 };
        let mut rng = fastrand::Rng::with_seed(11);
        let mut r = Router::new(dims);
        let costs = Costs::default();
        let unit = Costs { x: 1, y: 1, z: 1, bend: 0 };
        let mut routed = 0;
        for round in 0..400 {
            let blocked: Vec<bool> = (0..dims.cells()).map(|_| rng.u32(0..100) < 35).collect();
            let free = |c: u32| !blocked[c as usize];
            let src = rng.u32(..dims.cells() as u32);
            let dst = rng.u32(..dims.cells() as u32);
            if src == dst {
                continue;
            }
            let steps = bfs_steps(dims, src, dst, &free);
            let got = r.route(dims, costs, src, dst, free);
            assert_eq!(got.is_some(), steps.is_some(), "round {round}");
            let Some(p) = got else { continue };
            routed += 1;
            assert_eq!((p[0], p[p.len() - 1]), (src, dst));
            assert!(p.windows(2).all(|w| dims.adjacent(w[0], w[1])));
            assert!(p[1..p.len() - 1].iter().all(|&c| free(c)));
            // With unit costs the path has the fewest steps; with the
            // default costs it costs no more than that fewest-steps path.
            let q = r.route(dims, unit, src, dst, free).unwrap();
            assert_eq!(q.len() as u32 - 1, steps.unwrap(), "round {round}");
            assert!(cost(dims, costs, &p) <= cost(dims, costs, &q), "round {round}");
        }
        assert!(routed > 100);
    }

    /// Distances that need more than 30 bits (a 2^18-cell grid at step
    /// costs of thousands) move the router to 8-byte words and back.
    /// Scaling every cost by one factor changes no choice, so the paths are
    /// those of the unit-scaled costs, on a router that switches words
    /// every route and on fresh ones.
    #[test]
    fn wide_words_route_as_narrow_ones() {
        let dims = Dims { x: 64, y: 64, z: 64 };
        let mut rng = fastrand::Rng::with_seed(5);
        let mut shared = Router::new(dims);
        let small = Costs { x: 1, y: 2, z: 3, bend: 1 };
        let k = 4096;
        let large = Costs { x: k, y: 2 * k, z: 3 * k, bend: k };
        let mut routed = 0;
        for round in 0..12 {
            let blocked: Vec<bool> = (0..dims.cells()).map(|_| rng.u32(0..100) < 30).collect();
            let free = |c: u32| !blocked[c as usize];
            // Endpoints a few cells apart keep each expansion small.
            let (x, y, z) = (rng.u32(0..56), rng.u32(0..56), rng.u32(0..56));
            let src = dims.index(x, y, z);
            let dst = dims.index(x + rng.u32(0..8), y + rng.u32(0..8), z + rng.u32(1..8));
            let want = Router::new(dims).route(dims, small, src, dst, free);
            let mut fresh = Router::new(dims);
            assert_eq!(fresh.route(dims, large, src, dst, free), want, "round {round}, fresh");
            assert!(matches!(fresh.states, States::Wide(_)));
            let costs = if round % 2 == 0 { large } else { small };
            assert_eq!(shared.route(dims, costs, src, dst, free), want, "round {round}, shared");
            let wide = matches!(shared.states, States::Wide(_));
            assert_eq!(wide, round % 2 == 0, "round {round}");
            routed += usize::from(want.is_some());
        }
        assert!(routed >= 6, "{routed} of 12 routed");
    }

    /// Asking by slot is asking about the same cells: the same paths as by
    /// grid index, on random grids.
    #[test]
    fn slots_name_the_same_cells() {
        let dims = Dims { x: 7, y: 5, z: 4 };
        let mut seen = vec![false; Router::slots(dims)];
        for c in 0..dims.cells() as u32 {
            let s = Router::slot(dims, c);
            assert!(!seen[s], "slot {s} given twice");
            seen[s] = true;
        }
        let mut rng = fastrand::Rng::with_seed(3);
        let (mut a, mut b) = (Router::new(dims), Router::new(dims));
        for round in 0..200 {
            let blocked: Vec<bool> = (0..dims.cells()).map(|_| rng.u32(0..100) < 30).collect();
            let mut by_slot = vec![true; Router::slots(dims)];
            for c in 0..dims.cells() {
                by_slot[Router::slot(dims, c as u32)] = !blocked[c];
            }
            let (src, dst) = (rng.u32(..dims.cells() as u32), rng.u32(..dims.cells() as u32));
            if src == dst {
                continue;
            }
            let want = a.route(dims, Costs::default(), src, dst, |c| !blocked[c as usize]);
            assert_eq!(b.route_slots(dims, Costs::default(), src, dst, |s| by_slot[s]), want, "round {round}");
        }
    }

    #[test]
    fn bends_are_avoided_in_open_space() {
        let dims = Dims { x: 6, y: 6, z: 1 };
        let mut r = Router::new(dims);
        let p = r.route(dims, Costs { x: 1, y: 1, z: 2, bend: 5 }, 0, dims.index(5, 5, 0), |_| true).unwrap();
        let turns = p.windows(3).filter(|w| w[1].wrapping_sub(w[0]) != w[2].wrapping_sub(w[1])).count();
        assert_eq!((p.len(), turns), (11, 1));
    }
}
