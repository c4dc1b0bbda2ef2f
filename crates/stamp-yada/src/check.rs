//! yada's self-check: the refined mesh is a consistent triangulation of
//! the input's domain with no bad element the algorithm could still
//! refine (STAMP's `mesh_check`, which its build switches off, made
//! stronger).

use std::collections::HashMap;
use std::fmt;

use super::geometry::{Point, orient};
use super::mesh::{ElemPtr, GARBAGE, Mesh, ROOT, el};
use super::refine::Scratch;
use skelaff_stamp_core::plain::UninstrumentedTx;

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
    /// The first problem found: [`BadMesh::Refinable`] for a bad triangle
    /// that could still be refined, else as [`Mesh::check_consistency`].
    pub fn check(&self, expected: usize) -> Result<MeshSummary, BadMesh> {
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
                    return Err(BadMesh::Refinable {
                        triangle: Corners::of(&e.shape.points),
                        min_angle: e.shape.min_angle,
                        bound: self.bound,
                    });
                }
                Err(e) => return Err(BadMesh::Probe(e)),
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
    /// The first problem found, as a [`BadMesh`].
    pub fn check_consistency(&self, expected: usize) -> Result<MeshSummary, BadMesh> {
        self.consistency(expected).map(|(s, _)| s)
    }

    fn consistency(&self, expected: usize) -> Result<(MeshSummary, Vec<ElemPtr>), BadMesh> {
        let Some(root) = self.root.load() else { return Err(BadMesh::NoRoot) };
        // SAFETY: the caller has the mesh to itself; the root is alive.
        if unsafe { el(root) }.state.load() & GARBAGE != 0 {
            return Err(BadMesh::RootRemoved);
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
            let at = || Corners::of(&e.shape.points[..e.shape.corners as usize]);
            sum.digest = sum.digest.wrapping_add(element_digest(&s.points[..s.corners as usize]));
            let state = e.state.load();
            if state & GARBAGE != 0 {
                return Err(BadMesh::Removed { element: at() });
            }
            if (state & ROOT != 0) != (p == root) {
                return Err(BadMesh::RootFlag { element: at() });
            }
            if s.is_segment() {
                sum.segments += 1;
                for (a, b) in [(0, 1), (1, 0)] {
                    segments.entry(s.points[a].bits()).or_default().push(s.points[b]);
                }
                if e.neighbors[0].load().is_none() {
                    return Err(BadMesh::LoneSegment { segment: at() });
                }
            } else {
                sum.triangles += 1;
                if s.area2() == 0.0 || !s.area2().is_finite() {
                    return Err(BadMesh::Degenerate { triangle: at() });
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
                    return Err(BadMesh::ForeignEdge {
                        element: at(),
                        neighbour: Corners::of(&n.shape.points[..n.shape.corners as usize]),
                    });
                };
                if n.neighbors[j].load() != Some(p) {
                    return Err(BadMesh::OneWayLink { element: at() });
                }
                if !s.is_segment() && !n.shape.is_segment() {
                    let o1 = orient(&edge.first, &edge.second, &s.apex(k));
                    let o2 = orient(&edge.first, &edge.second, &n.shape.apex(j));
                    // Opposite sides, strictly (a NaN orientation fails too).
                    if (o1 * o2).partial_cmp(&0.0) != Some(std::cmp::Ordering::Less) {
                        return Err(BadMesh::Folds { triangle: at() });
                    }
                }
            }
        }
        self.check_boundary(&segments, sum.segments)?;
        if sum.elements != expected {
            return Err(BadMesh::ElementCount { reachable: sum.elements, initial: self.initial_elements, expected });
        }
        Ok((sum, bad))
    }

    /// Every input segment is covered by a chain of segments from one end
    /// to the other, along it; and every segment is on such a chain.
    fn check_boundary(&self, ends: &HashMap<(u64, u64), Vec<Point>>, count: usize) -> Result<(), BadMesh> {
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
                    return Err(BadMesh::Uncovered { segment: Corners::of(&[a, b]), at });
                };
                at = q;
                steps += 1;
                if steps > count {
                    return Err(BadMesh::EndlessChain { segment: Corners::of(&[a, b]) });
                }
            }
            used += steps;
        }
        if used != count {
            return Err(BadMesh::StraySegments { segments: count, on_boundary: used });
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

/// An element's corners (two for a segment, three for a triangle), for
/// messages: `(x, y)-(x, y)-(x, y)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Corners(pub Vec<Point>);

impl Corners {
    fn of(points: &[Point]) -> Corners {
        Corners(points.to_vec())
    }
}

impl fmt::Display for Corners {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("-")?;
            }
            write!(f, "({}, {})", p.x, p.y)?;
        }
        Ok(())
    }
}

/// What yada's self-check found wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BadMesh {
    /// No root element.
    #[error("the mesh has no root element")]
    NoRoot,
    /// The root element is marked removed.
    #[error("the root element was removed from the mesh")]
    RootRemoved,
    /// An element reachable from the root but marked removed.
    #[error("element {element} is linked into the mesh but marked removed")]
    Removed {
        /// The element.
        element: Corners,
    },
    /// An element whose root flag disagrees with the mesh's root.
    #[error("element {element} disagrees with the mesh about being its root")]
    RootFlag {
        /// The element.
        element: Corners,
    },
    /// A segment with no triangle beside it.
    #[error("segment {segment} borders no triangle")]
    LoneSegment {
        /// The segment.
        segment: Corners,
    },
    /// A triangle of zero (or not finite) area.
    #[error("triangle {triangle} is degenerate")]
    Degenerate {
        /// The triangle.
        triangle: Corners,
    },
    /// A neighbour link along an edge the neighbour does not have.
    #[error("{element} is linked to {neighbour} along an edge the latter does not have")]
    ForeignEdge {
        /// The element.
        element: Corners,
        /// Its neighbour.
        neighbour: Corners,
    },
    /// A neighbour link that the neighbour does not return.
    #[error("the link from {element} is not returned by its neighbour")]
    OneWayLink {
        /// The element.
        element: Corners,
    },
    /// Two neighbouring triangles on the same side of their shared edge.
    #[error("triangles {triangle} and its neighbour overlap (the mesh folds)")]
    Folds {
        /// One of them.
        triangle: Corners,
    },
    /// An input boundary segment not covered by the mesh's segments.
    #[error("input segment {segment} is not covered: no segment continues it from ({}, {})", at.x, at.y)]
    Uncovered {
        /// The input segment.
        segment: Corners,
        /// Where the chain of segments along it stops.
        at: Point,
    },
    /// A chain of segments along an input segment that does not end.
    #[error("input segment {segment} is covered by a chain that does not end")]
    EndlessChain {
        /// The input segment.
        segment: Corners,
    },
    /// Segments that lie on no input boundary segment.
    #[error("{segments} segments in the mesh, {on_boundary} of them on the input's boundary segments")]
    StraySegments {
        /// Segments in the mesh.
        segments: usize,
        /// Of which on the input's boundary segments.
        on_boundary: usize,
    },
    /// Another number of elements than the input's and the units' additions.
    #[error("{reachable} elements reachable, but the input's {initial} and the units' additions make {expected}")]
    ElementCount {
        /// Elements reachable from the root.
        reachable: usize,
        /// The input's elements.
        initial: usize,
        /// The input's plus the units' additions.
        expected: usize,
    },
    /// The units removed more elements than the input and they added.
    #[error("a negative element count ({expected}): the units removed more elements than there were")]
    NegativeCount {
        /// The input's elements plus the units' additions.
        expected: i64,
    },
    /// A triangle still below the angle bound that a refinement step
    /// would change.
    #[error(
        "triangle {triangle} (smallest angle {min_angle:.3} degrees, bound {bound}) is still bad and could be refined"
    )]
    Refinable {
        /// The triangle.
        triangle: Corners,
        /// Its smallest angle, in degrees.
        min_angle: f64,
        /// The angle bound, in degrees.
        bound: f64,
    },
    /// Probing whether a bad triangle could be refined failed.
    #[error("probing a bad triangle failed")]
    Probe(#[source] skelaff_stm::TxError),
}

#[cfg(test)]
mod tests {
    use super::super::input::Triangulation;
    use super::super::mesh::set_unpublished;
    use super::*;

    /// The unit square cut along its diagonal: two triangles, four segments.
    fn square() -> Mesh {
        let points = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)].map(|(x, y)| Point { x, y }).to_vec();
        let t = Triangulation {
            points,
            segments: vec![[0, 1], [1, 2], [2, 3], [3, 0]],
            triangles: vec![[0, 1, 2], [0, 2, 3]],
        };
        Mesh::build(&t, 20.0).unwrap().mesh
    }

    #[test]
    fn a_corrupted_mesh_fails_with_the_typed_failure() {
        let mesh = square();
        let n = mesh.len();
        assert_eq!(mesh.check(n).map(|s| (s.triangles, s.segments)), Ok((2, 4)));
        assert_eq!(mesh.check(n + 1), Err(BadMesh::ElementCount { reachable: n, initial: n, expected: n + 1 }));

        // One triangle forgets the other: the other's link is one-way.
        let mut all = Vec::new();
        mesh.walk(|p| all.push(p));
        // SAFETY: the test has the mesh to itself; walked elements are alive.
        let triangle = |p: ElemPtr| !unsafe { el(p) }.shape.is_segment();
        let p = all.iter().copied().find(|&p| triangle(p)).unwrap();
        // SAFETY: as above.
        let e = unsafe { el(p) };
        let q = e.neighbors.iter().filter_map(|l| l.load()).find(|&q| triangle(q)).unwrap();
        // SAFETY: as above.
        let back = unsafe { el(q) }.neighbors.iter().find(|l| l.load() == Some(p)).unwrap();
        set_unpublished(back, None);
        let corners = Corners::of(&e.shape.points[..e.shape.corners as usize]);
        assert_eq!(mesh.check(n), Err(BadMesh::OneWayLink { element: corners.clone() }));
        assert_eq!(
            mesh.check_consistency(n).unwrap_err().to_string(),
            format!("the link from {corners} is not returned by its neighbour")
        );
        // Restored, so that the mesh frees its elements as built.
        set_unpublished(back, Some(p));
        assert!(mesh.check(n).is_ok());
    }
}
