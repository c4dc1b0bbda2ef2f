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

/// Distance of a cell not reached (yet).
const UNREACHED: u32 = u32::MAX - 1;
/// Distance of a cell that cannot be entered.
const BLOCKED: u32 = u32::MAX;
/// State of a cell of the border around the grid (outside it).
const BORDER: u64 = u64::MAX;

/// One worker's routing scratch.
///
/// It covers the grid with a border of one cell on every side, so that a
/// step never needs a bounds check: a border cell stops it. Each cell's
/// state word is the route number (generation) in the high half and the
/// distance from the source in the low half; a distance counts only if the
/// generation is the current route's, so nothing is cleared between
/// routes. Border cells hold a value no generation reaches.
///
/// # Examples
///
/// ```
/// use skelaff_stamp::labyrinth::{Costs, Dims, Router};
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
    /// Strides of the bordered grid along y and z.
    row: usize,
    layer: usize,
    state: Vec<u64>,
    generation: u32,
    /// Cells to expand, by distance modulo their count: (bordered index, grid index).
    buckets: Vec<Vec<(u32, u32)>>,
}

impl Router {
    /// Scratch for grids of `dims`.
    pub fn new(dims: Dims) -> Self {
        let (bx, by, bz) = (dims.x as usize + 2, dims.y as usize + 2, dims.z as usize + 2);
        let mut state = vec![BORDER; bx * by * bz];
        for z in 1..bz - 1 {
            for y in 1..by - 1 {
                let row = (z * by + y) * bx;
                state[row + 1..row + bx - 1].fill(0);
            }
        }
        Router { dims, row: bx, layer: bx * by, state, generation: 0, buckets: Vec::new() }
    }

    /// The bordered index of grid cell `c`.
    fn bordered(&self, c: u32) -> usize {
        let (x, y, z) = self.dims.coords(c);
        (z as usize + 1) * self.layer + (y as usize + 1) * self.row + x as usize + 1
    }

    /// The six steps (+x, -x, +y, -y, +z, -z) in the bordered grid and in the grid.
    fn steps(&self) -> [(usize, u32); DIRECTIONS] {
        let xy = self.dims.x * self.dims.y;
        [
            (1, 1),
            (1usize.wrapping_neg(), 1u32.wrapping_neg()),
            (self.row, self.dims.x),
            (self.row.wrapping_neg(), self.dims.x.wrapping_neg()),
            (self.layer, xy),
            (self.layer.wrapping_neg(), xy.wrapping_neg()),
        ]
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
    /// STAMP's traceback does.
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
        assert_eq!(dims, self.dims, "router made for a {} grid", self.dims);
        assert!(src < dims.cells() as u32 && dst < dims.cells() as u32, "endpoints outside the grid");
        assert!(costs.x > 0 && costs.y > 0 && costs.z > 0, "step costs must be at least 1");
        let step_cost = [costs.x, costs.x, costs.y, costs.y, costs.z, costs.z];
        let steps = self.steps();
        let nb = costs.x.max(costs.y).max(costs.z) as usize + 1;
        if self.buckets.len() != nb {
            self.buckets = vec![Vec::new(); nb];
        }
        self.generation += 1;
        if self.generation == u32::MAX {
            for s in self.state.iter_mut().filter(|s| **s != BORDER) {
                *s = 0;
            }
            self.generation = 1;
        }
        let gen_bits = u64::from(self.generation) << 32;
        let current = |s: u64| s != BORDER && s & !u64::from(u32::MAX) == gen_bits;
        let bsrc = self.bordered(src);
        self.state[bsrc] = gen_bits;
        self.buckets[0].push((bsrc as u32, src));
        let mut pending = 1usize;
        let mut at = 0u32;
        let mut found = false;
        'expand: while pending > 0 {
            let b = at as usize % nb;
            while let Some((p, c)) = self.buckets[b].pop() {
                pending -= 1;
                if self.state[p as usize] as u32 != at {
                    continue; // superseded by a shorter distance
                }
                if c == dst {
                    found = true;
                    break 'expand;
                }
                for (&(dp, dc), &cost) in steps.iter().zip(&step_cost) {
                    let np = (p as usize).wrapping_add(dp);
                    let s = self.state[np];
                    if s == BORDER {
                        continue;
                    }
                    let n = c.wrapping_add(dc);
                    let known = if current(s) {
                        s as u32
                    } else {
                        let v = if n == dst || free(n) { UNREACHED } else { BLOCKED };
                        self.state[np] = gen_bits | u64::from(v);
                        v
                    };
                    let nd = at + cost;
                    // BLOCKED is above every distance, but must stay BLOCKED.
                    if known != BLOCKED && nd < known {
                        self.state[np] = gen_bits | u64::from(nd);
                        self.buckets[nd as usize % nb].push((np as u32, n));
                        pending += 1;
                    }
                }
            }
            at += 1;
        }
        for b in &mut self.buckets {
            b.clear();
        }
        if !found {
            return None;
        }
        self.traceback(costs, src, dst)
    }

    /// Walks from `dst` down the distances to `src`. Every cell with a
    /// distance below `dst`'s is settled, and every settled cell but `src`
    /// has a neighbour closer to `src`, so each step finds one.
    fn traceback(&self, costs: Costs, src: u32, dst: u32) -> Option<Vec<u32>> {
        let gen_bits = u64::from(self.generation) << 32;
        let dist = |s: u64| if s != BORDER && s & !u64::from(u32::MAX) == gen_bits { s as u32 } else { BLOCKED };
        let steps = self.steps();
        let mut path = vec![dst];
        let (mut p, mut c) = (self.bordered(dst), dst);
        let mut heading: Option<usize> = None;
        while c != src {
            let here = dist(self.state[p]);
            let mut best: Option<(u64, usize, u32, usize)> = None;
            for (d, &(dp, dc)) in steps.iter().enumerate() {
                let np = p.wrapping_add(dp);
                let there = dist(self.state[np]);
                if there >= here {
                    continue;
                }
                let bend = if heading.is_some_and(|h| h != d) { u64::from(costs.bend) } else { 0 };
                let score = u64::from(there) + bend;
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

    #[test]
    fn bends_are_avoided_in_open_space() {
        let dims = Dims { x: 6, y: 6, z: 1 };
        let mut r = Router::new(dims);
        let p = r.route(dims, Costs { x: 1, y: 1, z: 2, bend: 5 }, 0, dims.index(5, 5, 0), |_| true).unwrap();
        let turns = p.windows(3).filter(|w| w[1].wrapping_sub(w[0]) != w[2].wrapping_sub(w[1])).count();
        assert_eq!((p.len(), turns), (11, 1));
    }
}
