//! yada's self-check: the refined mesh is a consistent triangulation of
//! the input's domain with no bad element the algorithm could still
//! refine (STAMP's `mesh_check`, which its build switches off, made
//! stronger).

use std::collections::HashMap;
use std::fmt;

use super::geometry::{Point, orient};
use super::mesh::{ElemPtr, GARBAGE, Mesh, ROOT, el};
use super::refine::Scratch;
use crate::plain::UninstrumentedTx;

/// What the self-check verified.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MeshSummary {
    /// Elements reachable from the root (triangles and segments).
    pub elements: usize,
    /// Of which triangles.
    pub triangles: usize,
    /// Of which boundary segments.
    pub segments: usize,
    /// Triangles still below the angle bound that no refinement step can
    /// fix (their new point cannot be inserted); 0 on STAMP's inputs.
    pub unrefinable: usize,
    /// The smallest angle of the mesh, in degrees.
    pub min_angle: f64,
    /// A digest of the mesh's elements (the set of their corners, in no
    /// order): equal meshes have equal digests, whatever their addresses
    /// or the order of the walk, so runs that took the units in the same
    /// order can be compared.
    pub digest: u64,
}

impl fmt::Display for MeshSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} elements ({} triangles, {} segments), every link mutual, every input segment covered, smallest \
             angle {:.2} degrees, {} unrefinable",
            self.elements, self.triangles, self.segments, self.min_angle, self.unrefinable
        )
    }
}

impl Mesh {
    /// The self-check after a run (no transaction may run on the mesh):
    /// [`Mesh::check_consistency`], and every element still bad (an angle
    /// below the bound, or encroaching on a segment) is one the refinement
    /// step gives up on (its point cannot be inserted).
    ///
    /// # Errors
    ///
    /// The first problem found.
    pub fn check(&self, expected: usize) -> Result<MeshSummary, String> {
        let (mut sum, bad) = self.consistency(expected)?;
        let mut s = Scratch::default();
        // SAFETY: the caller has the mesh to itself (the walk needed that
        // too), and the probe only reads.
        let mut tx = unsafe { UninstrumentedTx::new() };
        for p in bad {
            match self.would_change(&mut tx, p, &mut s) {
                Ok(false) => sum.unrefinable += 1,
                Ok(true) => {
                    // SAFETY: reachable, alive.
                    let e = unsafe { el(p) };
                    return Err(format!(
                        "triangle {} (smallest angle {:.3} degrees, bound {}) is still bad and could be refined",
                        describe(&e.shape.points),
                        e.shape.min_angle,
                        self.bound
                    ));
                }
                Err(e) => return Err(format!("probing a bad triangle failed: {e:?}")),
            }
        }
        Ok(sum)
    }

    /// Checks that the mesh is a consistent triangulation of the input's
    /// domain, at any point of a run (no transaction may run on it
    /// meanwhile): from the root, every reachable element is live; every
    /// neighbour link is mutual and joins two elements along one shared
    /// edge; triangles that share an edge lie on its two sides (the mesh
    /// does not fold); every segment borders a triangle; every boundary
    /// segment of the input is covered, end to end, by a chain of
    /// segments along it, and there are no other segments; and the number
    /// of elements is `expected` (STAMP's count: the input's plus what the
    /// units added). `unrefinable` is left 0.
    ///
    /// # Errors
    ///
    /// The first problem found.
    pub fn check_consistency(&self, expected: usize) -> Result<MeshSummary, String> {
        self.consistency(expected).map(|(s, _)| s)
    }

    fn consistency(&self, expected: usize) -> Result<(MeshSummary, Vec<ElemPtr>), String> {
        let Some(root) = self.root.load() else { return Err("the mesh has no root element".into()) };
        // SAFETY: the caller has the mesh to itself; the root is alive.
        if unsafe { el(root) }.state.load() & GARBAGE != 0 {
            return Err("the root element was removed from the mesh".into());
        }
        let mut elements = Vec::new();
        self.walk(|p| elements.push(p));
        let mut sum = MeshSummary {
            elements: elements.len(),
            triangles: 0,
            segments: 0,
            unrefinable: 0,
            min_angle: 180.0,
            digest: 0,
        };
        let mut segments: HashMap<(u64, u64), Vec<Point>> = HashMap::new();
        let mut bad = Vec::new();
        for &p in &elements {
            // SAFETY: reachable from the root, which the caller has to itself.
            let e = unsafe { el(p) };
            let s = &e.shape;
            let at = || describe(&e.shape.points[..e.shape.corners as usize]);
            sum.digest = sum.digest.wrapping_add(element_digest(&s.points[..s.corners as usize]));
            let state = e.state.load();
            if state & GARBAGE != 0 {
                return Err(format!("element {} is linked into the mesh but marked removed", at()));
            }
            if (state & ROOT != 0) != (p == root) {
                return Err(format!("element {} disagrees with the mesh about being its root", at()));
            }
            if s.is_segment() {
                sum.segments += 1;
                for (a, b) in [(0, 1), (1, 0)] {
                    segments.entry(s.points[a].bits()).or_default().push(s.points[b]);
                }
                if e.neighbors[0].load().is_none() {
                    return Err(format!("segment {} borders no triangle", at()));
                }
            } else {
                sum.triangles += 1;
                if s.area2() == 0.0 || !s.area2().is_finite() {
                    return Err(format!("triangle {} is degenerate", at()));
                }
                sum.min_angle = sum.min_angle.min(s.min_angle);
                if s.is_bad() || s.below(self.bound) {
                    bad.push(p);
                }
            }
            for k in 0..s.edges() {
                let edge = s.edge(k);
                let Some(q) = e.neighbors[k].load() else { continue };
                // SAFETY: reachable, hence alive (or the walk would not be
                // sound in the first place: links point at live elements).
                let n = unsafe { el(q) };
                let Some(j) = n.shape.edge_index(&edge) else {
                    return Err(format!(
                        "{} is linked to {} along an edge the latter does not have",
                        at(),
                        describe(&n.shape.points[..n.shape.corners as usize])
                    ));
                };
                if n.neighbors[j].load() != Some(p) {
                    return Err(format!("the link from {} is not returned by its neighbour", at()));
                }
                if !s.is_segment() && !n.shape.is_segment() {
                    let o1 = orient(&edge.first, &edge.second, &s.apex(k));
                    let o2 = orient(&edge.first, &edge.second, &n.shape.apex(j));
                    // Opposite sides, strictly (a NaN orientation fails too).
                    if (o1 * o2).partial_cmp(&0.0) != Some(std::cmp::Ordering::Less) {
                        return Err(format!("triangles {} and its neighbour overlap (the mesh folds)", at()));
                    }
                }
            }
        }
        self.check_boundary(&segments, sum.segments)?;
        if sum.elements != expected {
            return Err(format!(
                "{} elements reachable, but the input's {} and the units' additions make {expected}",
                sum.elements, self.initial_elements
            ));
        }
        Ok((sum, bad))
    }

    /// Every input segment is covered by a chain of segments from one end
    /// to the other, along it; and every segment is on such a chain.
    fn check_boundary(&self, ends: &HashMap<(u64, u64), Vec<Point>>, count: usize) -> Result<(), String> {
        let mut used = 0;
        for s in &self.input_segments {
            let (a, b) = (s.first, s.second);
            let mut at = a;
            let mut steps = 0;
            while at.bits() != b.bits() {
                // The next segment from `at` goes towards `b`, along `ab`.
                let next = ends.get(&at.bits()).and_then(|v| {
                    v.iter().copied().find(|q| {
                        orient(&a, &b, q).abs() <= 1e-9 * a.distance(&b) * a.distance(&b)
                            && q.distance(&b) < at.distance(&b)
                    })
                });
                let Some(q) = next else {
                    return Err(format!(
                        "input segment {} is not covered: no segment continues it from ({}, {})",
                        describe(&[a, b]),
                        at.x,
                        at.y
                    ));
                };
                at = q;
                steps += 1;
                if steps > count {
                    return Err(format!("input segment {} is covered by a chain that does not end", describe(&[a, b])));
                }
            }
            used += steps;
        }
        if used != count {
            return Err(format!("{count} segments in the mesh, {used} of them on the input's boundary segments"));
        }
        Ok(())
    }
}

/// A digest of one element's corners that does not depend on their order
/// (a summand of [`MeshSummary::digest`]).
fn element_digest(corners: &[Point]) -> u64 {
    let mut bits: Vec<(u64, u64)> = corners.iter().map(Point::bits).collect();
    bits.sort_unstable();
    // splitmix64's finaliser over the corners' bits, one after another.
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    bits.iter().fold(corners.len() as u64, |h, &(x, y)| mix(mix(h ^ x) ^ y))
}

fn describe(points: &[Point]) -> String {
    let v: Vec<String> = points.iter().map(|p| format!("({}, {})", p.x, p.y)).collect();
    v.join("-")
}
