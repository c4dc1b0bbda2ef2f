//! The plane geometry of yada's elements: points, the order STAMP sorts
//! them in, angles, circumcircles, and the fixed shape of a triangle or
//! boundary segment (computed once, when the element is made).
//!
//! The arithmetic follows STAMP's `coordinate.c` and `element.c` operation
//! for operation (the same formulas on the same vertex order), so a mesh
//! refined here in STAMP's order comes out with the same points.

use std::cmp::Ordering;

/// A point of the plane.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Point {
    /// Abscissa.
    pub x: f64,
    /// Ordinate.
    pub y: f64,
}

impl Point {
    /// STAMP's order of points: by `x`, then by `y` (`coordinate_compare`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cmp::Ordering;
    /// use skelaff_stamp_yada::Point;
    ///
    /// let (a, b) = (Point { x: 0.0, y: 5.0 }, Point { x: 1.0, y: 0.0 });
    /// assert_eq!(a.compare(&b), Ordering::Less);
    /// assert_eq!(a.compare(&a), Ordering::Equal);
    /// ```
    #[inline]
    pub fn compare(&self, other: &Point) -> Ordering {
        if self.x < other.x {
            Ordering::Less
        } else if self.x > other.x {
            Ordering::Greater
        } else if self.y < other.y {
            Ordering::Less
        } else if self.y > other.y {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }

    /// The Euclidean distance to `other`.
    #[inline]
    pub fn distance(&self, other: &Point) -> f64 {
        let dx = self.x - other.x;
        let dy = self.y - other.y;
        (dx * dx + dy * dy).sqrt()
    }

    /// The midpoint of `self` and `other`.
    #[inline]
    pub fn midpoint(&self, other: &Point) -> Point {
        Point { x: (self.x + other.x) / 2.0, y: (self.y + other.y) / 2.0 }
    }

    /// The key under which the point is hashed: its coordinates' bits.
    #[inline]
    pub(crate) fn bits(&self) -> (u64, u64) {
        (self.x.to_bits(), self.y.to_bits())
    }
}

/// The angle at `a` of the triangle `a b c`, in degrees (STAMP's
/// `coordinate_angle`).
#[inline]
pub fn angle(a: &Point, b: &Point, c: &Point) -> f64 {
    let (bx, by) = (b.x - a.x, b.y - a.y);
    let (cx, cy) = (c.x - a.x, c.y - a.y);
    let cosine = (bx * cx + by * cy) / (a.distance(b) * a.distance(c));
    180.0 * cosine.acos() / std::f64::consts::PI
}

/// Twice the signed area of `a b c`: positive when they turn
/// counter-clockwise, zero when they are collinear.
#[inline]
pub fn orient(a: &Point, b: &Point, c: &Point) -> f64 {
    (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)
}

/// An edge as STAMP keys it: its two end points, the lesser (in
/// [`Point::compare`]'s order) first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Edge {
    /// The lesser end point.
    pub first: Point,
    /// The greater end point.
    pub second: Point,
}

impl Edge {
    /// The edge between `a` and `b`, in either order.
    #[inline]
    pub fn new(a: Point, b: Point) -> Edge {
        if a.compare(&b) == Ordering::Greater { Edge { first: b, second: a } } else { Edge { first: a, second: b } }
    }

    /// STAMP's order of edges (`compareEdge`): by first point, then second.
    #[inline]
    pub fn compare(&self, other: &Edge) -> Ordering {
        self.first.compare(&other.first).then_with(|| self.second.compare(&other.second))
    }

    /// Whether the two edges join the same points (exactly).
    #[inline]
    pub fn same(&self, other: &Edge) -> bool {
        self.first.bits() == other.first.bits() && self.second.bits() == other.second.bits()
    }

    /// The key under which the edge is hashed.
    #[inline]
    pub(crate) fn key(&self) -> [u64; 4] {
        let (a, b) = (self.first.bits(), self.second.bits());
        [a.0, a.1, b.0, b.1]
    }
}

/// The fixed geometry of one element: a triangle (3 points) or a boundary
/// segment (2 points), with what refinement needs to know about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The corners, rotated so that the least point (in
    /// [`Point::compare`]'s order) comes first, keeping their cyclic order;
    /// `points[2]` is unused for a segment.
    pub points: [Point; 3],
    /// 3 for a triangle, 2 for a segment.
    pub corners: u8,
    /// The centre of the circumcircle (a segment's: its midpoint).
    pub center: Point,
    /// The circumradius (a segment's: half its length).
    pub radius: f64,
    /// The smallest angle in degrees (180 for a segment).
    pub min_angle: f64,
    /// The edge opposite an obtuse angle when that edge is a boundary
    /// segment (the triangle *encroaches* on it): its index.
    pub encroached: Option<u8>,
    /// Whether an angle is below the angle bound.
    pub skinny: bool,
}

impl Shape {
    /// The shape with corners `points` (2 or 3 of them) under angle bound
    /// `bound` (degrees). `encroached` is set for an obtuse triangle; the
    /// mesh clears it when the opposite edge is not a boundary segment
    /// ([`Shape::keep_encroached_if`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_yada::{Point, Shape};
    ///
    /// let p = |x, y| Point { x, y };
    /// let t = Shape::new(&[p(1.0, 0.0), p(0.0, 0.0), p(0.0, 1.0)], 20.0);
    /// assert_eq!(t.points[0], p(0.0, 0.0)); // the least corner first
    /// assert_eq!(t.center, p(0.5, 0.5));
    /// assert!((t.min_angle - 45.0).abs() < 1e-9 && !t.skinny && t.encroached.is_none());
    /// let thin = Shape::new(&[p(0.0, 0.0), p(1.0, 0.0), p(0.5, 0.05)], 20.0);
    /// assert!(thin.skinny && thin.encroached.is_some());
    /// ```
    pub fn new(points: &[Point], bound: f64) -> Shape {
        let n = points.len();
        debug_assert!(n == 2 || n == 3);
        let mut p = [Point::default(); 3];
        p[..n].copy_from_slice(points);
        // The least corner first, the cyclic order kept (STAMP's
        // `minimizeCoordinates`).
        let least = (1..n).fold(0, |m, i| if p[i].compare(&p[m]) == Ordering::Less { i } else { m });
        p[..n].rotate_left(least);
        let mut shape = Shape {
            points: p,
            corners: n as u8,
            center: Point::default(),
            radius: 0.0,
            min_angle: 180.0,
            encroached: None,
            skinny: false,
        };
        if n == 3 {
            for i in 0..3 {
                let a = angle(&p[i], &p[(i + 1) % 3], &p[(i + 2) % 3]);
                if a > 90.0 {
                    shape.encroached = Some(((i + 1) % 3) as u8);
                }
                if a < bound {
                    shape.skinny = true;
                }
                if a < shape.min_angle {
                    shape.min_angle = a;
                }
            }
            let (ax, ay) = (p[0].x, p[0].y);
            let (bxd, byd) = (p[1].x - ax, p[1].y - ay);
            let (cxd, cyd) = (p[2].x - ax, p[2].y - ay);
            let b2 = bxd * bxd + byd * byd;
            let c2 = cxd * cxd + cyd * cyd;
            let xnum = byd * c2 - cyd * b2;
            let ynum = bxd * c2 - cxd * b2;
            let den = 2.0 * (bxd * cyd - cxd * byd);
            shape.center = Point { x: ax - xnum / den, y: ay + ynum / den };
        } else {
            shape.center = p[0].midpoint(&p[1]);
        }
        shape.radius = shape.center.distance(&p[0]);
        shape
    }

    /// Whether this is a boundary segment.
    #[inline]
    pub fn is_segment(&self) -> bool {
        self.corners == 2
    }

    /// The number of edges: 3 for a triangle, 1 for a segment.
    #[inline]
    pub fn edges(&self) -> usize {
        if self.corners == 3 { 3 } else { 1 }
    }

    /// Edge `i`: from corner `i` to the next corner.
    #[inline]
    pub fn edge(&self, i: usize) -> Edge {
        Edge::new(self.points[i], self.points[(i + 1) % self.corners as usize])
    }

    /// The corner not on edge `i` of a triangle.
    #[inline]
    pub fn apex(&self, i: usize) -> Point {
        self.points[(i + 2) % 3]
    }

    /// The index of the edge equal to `e`, if this shape has it.
    #[inline]
    pub fn edge_index(&self, e: &Edge) -> Option<usize> {
        (0..self.edges()).find(|&i| self.edge(i).same(e))
    }

    /// Keeps the encroached mark only if `is_boundary(edge)` says the
    /// edge opposite the obtuse angle is a boundary segment (STAMP's check
    /// in `mesh_insert`).
    pub fn keep_encroached_if(&mut self, is_boundary: impl FnOnce(&Edge) -> bool) {
        if let Some(e) = self.encroached {
            if !is_boundary(&self.edge(e as usize)) {
                self.encroached = None;
            }
        }
    }

    /// Whether the element needs refining: it encroaches on a boundary
    /// segment or has an angle below the bound.
    #[inline]
    pub fn is_bad(&self) -> bool {
        self.encroached.is_some() || self.skinny
    }

    /// The point refinement inserts for this element: the midpoint of the
    /// segment it encroaches on, else its circumcentre (a segment's
    /// midpoint).
    #[inline]
    pub fn new_point(&self) -> Point {
        match self.encroached {
            Some(e) => {
                let e = e as usize;
                self.points[e].midpoint(&self.points[(e + 1) % 3])
            }
            None => self.center,
        }
    }

    /// Whether `p` lies in the closed circumcircle.
    #[inline]
    pub fn in_circle(&self, p: &Point) -> bool {
        p.distance(&self.center) <= self.radius
    }

    /// STAMP's order of elements (`element_compare`): segments before
    /// triangles, then by corners.
    pub fn compare(&self, other: &Shape) -> Ordering {
        self.corners.cmp(&other.corners).then_with(|| {
            (0..self.corners as usize)
                .map(|i| self.points[i].compare(&other.points[i]))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        })
    }

    /// The smallest angle recomputed, and whether it is below `bound`
    /// (STAMP's `element_checkAngles`); always `false` for a segment.
    pub fn below(&self, bound: f64) -> bool {
        self.corners == 3
            && (0..3).any(|i| angle(&self.points[i], &self.points[(i + 1) % 3], &self.points[(i + 2) % 3]) < bound)
    }

    /// Twice the signed area (0 for a segment).
    pub fn area2(&self) -> f64 {
        if self.corners == 3 { orient(&self.points[0], &self.points[1], &self.points[2]) } else { 0.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(x: f64, y: f64) -> Point {
        Point { x, y }
    }

    #[test]
    fn circumcentre_is_equidistant() {
        let t = Shape::new(&[p(0.3, 0.1), p(2.0, 0.4), p(0.9, 1.7)], 20.0);
        for q in &t.points {
            assert!((q.distance(&t.center) - t.radius).abs() < 1e-12);
        }
        assert!(t.area2() > 0.0);
    }

    #[test]
    fn rotation_keeps_orientation() {
        let t = Shape::new(&[p(1.0, 0.0), p(1.0, 1.0), p(0.0, 0.0)], 20.0);
        assert_eq!(t.points, [p(0.0, 0.0), p(1.0, 0.0), p(1.0, 1.0)]);
        let s = Shape::new(&[p(1.0, 0.0), p(0.0, 0.0)], 20.0);
        assert_eq!((s.points[0], s.points[1], s.center, s.radius), (p(0.0, 0.0), p(1.0, 0.0), p(0.5, 0.0), 0.5));
        assert!(s.is_segment() && !s.is_bad() && s.edges() == 1);
    }

    #[test]
    fn obtuse_triangle_names_the_opposite_edge() {
        let t = Shape::new(&[p(0.0, 0.0), p(4.0, 0.0), p(2.0, 0.5)], 20.0);
        let e = t.edge(t.encroached.unwrap() as usize);
        assert!(e.same(&Edge::new(p(0.0, 0.0), p(4.0, 0.0))));
        assert_eq!(t.new_point(), p(2.0, 0.0));
        let mut u = t.clone();
        u.keep_encroached_if(|_| false);
        assert!(u.encroached.is_none() && u.new_point() == u.center);
    }

    #[test]
    fn element_order_puts_segments_first() {
        let s = Shape::new(&[p(5.0, 0.0), p(6.0, 0.0)], 20.0);
        let t = Shape::new(&[p(0.0, 0.0), p(1.0, 0.0), p(0.0, 1.0)], 20.0);
        assert_eq!(s.compare(&t), Ordering::Less);
        assert_eq!(t.compare(&t.clone()), Ordering::Equal);
    }
}
