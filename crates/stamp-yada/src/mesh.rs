//! The shared mesh: elements (triangles and boundary segments) linked to
//! their neighbours edge by edge, built from a [`Triangulation`], walked
//! and freed.
//!
//! Each element is a transactional object ([`TPtr`]): its [`Shape`] is
//! fixed when it is made; what changes is held in [`TVar`]s: the neighbour
//! across each edge, and two flags (removed from the mesh; named by a
//! pending work-unit). STAMP keeps neighbours in a sorted list per element
//! and the boundary in a red-black set; here each edge has its slot, and
//! "is this edge a boundary segment" is "is the neighbour across it a
//! segment", so refinement touches no global structure but the mesh's
//! root.

use std::collections::HashMap;

use std::sync::atomic::Ordering;

use skelaff_stm::{TPtr, TVar, Word};

use super::geometry::{Edge, Point, Shape};
use super::input::Triangulation;

/// The element is no longer in the mesh (a cavity removed it).
pub(crate) const GARBAGE: u8 = 1;
/// A pending work-unit names the element: whoever removes it must not
/// free it (the unit does, STAMP's `isReferenced`).
pub(crate) const REFERENCED: u8 = 2;
/// The element is the mesh's root: whoever removes it names a new root.
/// (A flag on the element, so that only the transaction that removes the
/// root touches the mesh's root pointer; reading that pointer in every
/// transaction made it a point of conflict.)
pub(crate) const ROOT: u8 = 4;

/// A triangle or a boundary segment of the mesh.
#[derive(Debug)]
pub(crate) struct Element {
    /// Its geometry (never changes).
    pub(crate) shape: Shape,
    /// The element across each edge (`[0]` only, for a segment).
    pub(crate) neighbors: [TVar<Option<ElemPtr>>; 3],
    /// [`GARBAGE`], [`REFERENCED`] and [`ROOT`].
    pub(crate) state: TVar<u8>,
}

/// A pointer to an element.
pub(crate) type ElemPtr = TPtr<Element>;

impl Element {
    pub(crate) fn new(shape: Shape, neighbors: [Option<ElemPtr>; 3], state: u8) -> Element {
        Element { shape, neighbors: neighbors.map(TVar::new), state: TVar::new(state) }
    }
}

/// Sets `var`, part of an element no other thread can reach yet (made
/// by this thread and not linked into the mesh): a plain store, made
/// visible to others by whatever later publishes the element (the commit
/// of the transaction that links it, or the start of the workers).
#[inline]
pub(crate) fn set_unpublished<T: Word>(var: &TVar<T>, value: T) {
    var.cell().store(value.to_word(), Ordering::Relaxed);
}

/// The element behind `p`.
///
/// # Safety
///
/// The element is alive while the reference is used: `p` was read from a
/// `TVar` or allocated by the running transaction (reclamation waits for
/// it), or `p` is a unit's element flagged [`REFERENCED`] (nobody else
/// frees it), or the caller has exclusive access to the mesh.
#[inline(always)]
pub(crate) unsafe fn el<'a>(p: ElemPtr) -> &'a Element {
    // SAFETY: forwarded to the caller.
    unsafe { p.get() }
}

/// A bad element waiting to be refined: a work-unit of yada.
///
/// It names an element flagged as referenced by a unit, which stays allocated (even
/// once removed from the mesh) until the unit is processed, once. Only
/// this crate makes them ([`Built`] keeps its own private).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadElement(pub(crate) ElemPtr);

/// Why an input cannot be made into a mesh.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MeshError {
    /// A triangle whose corners are collinear.
    #[error("triangle {index} (entry {index} of the .ele file, from 0) has collinear corners")]
    Degenerate {
        /// Its position in the `.ele` file.
        index: usize,
    },
    /// An edge shared by more than two elements.
    #[error("edge ({}, {})-({}, {}) belongs to more than two elements (the third: {what})", .edge.first.x, .edge.first.y, .edge.second.x, .edge.second.y)]
    Overshared {
        /// The edge.
        edge: Edge,
        /// The element that met it a third time.
        what: String,
    },
    /// Two vertices at the same place, or an element using one twice.
    #[error("{what} has two corners at the same point ({}, {})", .at.x, .at.y)]
    Coincident {
        /// The element.
        what: String,
        /// The point.
        at: Point,
    },
    /// Elements that cannot reach each other through shared edges.
    #[error(
        "the mesh falls into separate parts ({reached} of {total} elements reachable from the first); yada needs one connected mesh"
    )]
    Disconnected {
        /// Elements reachable from the first one.
        reached: usize,
        /// All elements.
        total: usize,
    },
    /// No triangles.
    #[error("the mesh has no triangles")]
    Empty,
}

/// The mesh: its root element (any live element: where walks start) and
/// the angle bound.
#[derive(Debug)]
pub struct Mesh {
    pub(crate) root: TVar<Option<ElemPtr>>,
    pub(crate) bound: f64,
    /// The input's boundary segments, for the self-check.
    pub(crate) input_segments: Vec<Edge>,
    /// Elements (segments and triangles) of the input.
    pub(crate) initial_elements: usize,
}

/// The input mesh and its bad elements in STAMP's order: what
/// [`sequential`](super::sequential), [`Sequential`](super::Sequential)
/// and [`run_skeleton`](super::run_skeleton) refine.
///
/// The bad elements are private: each names an element that its unit
/// frees, so it must be processed exactly once.
#[derive(Debug)]
pub struct Built {
    /// The mesh.
    pub mesh: Mesh,
    /// The bad elements, in creation order (segments, then the `.ele`
    /// file's triangles).
    pub(crate) bad: Vec<BadElement>,
}

impl Built {
    /// The number of bad elements of the input.
    pub fn initial_bad(&self) -> usize {
        self.bad.len()
    }
}

impl Mesh {
    /// Makes the elements of `t` (its segments first, then its triangles,
    /// as STAMP's `mesh_read`) under angle bound `bound`, linking elements
    /// that share an edge.
    ///
    /// # Errors
    ///
    /// [`MeshError`] for collinear triangles, coincident corners, an edge
    /// of more than two elements, a mesh in separate parts or without
    /// triangles.
    pub fn build(t: &Triangulation, bound: f64) -> Result<Built, MeshError> {
        if t.triangles.is_empty() {
            return Err(MeshError::Empty);
        }
        let boundary: std::collections::HashSet<[u64; 4]> =
            t.segments.iter().map(|s| Edge::new(t.points[s[0] as usize], t.points[s[1] as usize]).key()).collect();
        let mut edges: HashMap<[u64; 4], Option<(ElemPtr, u8)>> = HashMap::new();
        let mut all: Vec<ElemPtr> = Vec::with_capacity(t.segments.len() + t.triangles.len());
        let mut bad = Vec::new();
        let mut guard = Guard(Vec::new());
        let corners = t.segments.iter().map(|s| &s[..]).chain(t.triangles.iter().map(|c| &c[..]));
        for (i, c) in corners.enumerate() {
            let what = || {
                if i < t.segments.len() {
                    format!("segment {i} of the .poly file")
                } else {
                    format!("triangle {} of the .ele file", i - t.segments.len())
                }
            };
            let pts: Vec<Point> = c.iter().map(|&v| t.points[v as usize]).collect();
            for a in 0..pts.len() {
                for b in a + 1..pts.len() {
                    if pts[a].bits() == pts[b].bits() {
                        return Err(MeshError::Coincident { what: what(), at: pts[a] });
                    }
                }
            }
            let mut shape = Shape::new(&pts, bound);
            if pts.len() == 3 && shape.area2() == 0.0 {
                return Err(MeshError::Degenerate { index: i - t.segments.len() });
            }
            shape.keep_encroached_if(|e| boundary.contains(&e.key()));
            let is_bad = shape.is_bad();
            let p = TPtr::from_box(Box::new(Element::new(shape, [None; 3], if is_bad { REFERENCED } else { 0 })));
            guard.0.push(p);
            // SAFETY: `p` was just made here and is not shared yet.
            let e = unsafe { el(p) };
            for k in 0..e.shape.edges() {
                let edge = e.shape.edge(k);
                match edges.get_mut(&edge.key()) {
                    None => {
                        edges.insert(edge.key(), Some((p, k as u8)));
                    }
                    Some(slot) => {
                        let Some((q, j)) = slot.take() else {
                            return Err(MeshError::Overshared { edge, what: what() });
                        };
                        set_unpublished(&e.neighbors[k], Some(q));
                        // SAFETY: every element made so far is owned by this function.
                        set_unpublished(&unsafe { el(q) }.neighbors[j as usize], Some(p));
                    }
                }
            }
            all.push(p);
            if is_bad {
                bad.push(BadElement(p));
            }
        }
        let root = all.iter().copied().find(|&p| {
            // SAFETY: owned by this function.
            !unsafe { el(p) }.shape.is_segment()
        });
        if let Some(r) = root {
            // SAFETY: owned by this function.
            let state = &unsafe { el(r) }.state;
            set_unpublished(state, state.load() | ROOT);
        }
        let mesh = Mesh {
            root: TVar::new(root),
            bound,
            input_segments: t
                .segments
                .iter()
                .map(|s| Edge::new(t.points[s[0] as usize], t.points[s[1] as usize]))
                .collect(),
            initial_elements: all.len(),
        };
        guard.0.clear(); // from here on `mesh` frees what it reaches
        let reached = mesh.walk(|_| ());
        if reached != all.len() {
            // Free the parts the mesh's walk does not reach (the mesh's
            // drop frees the part it does).
            let mut seen = std::collections::HashSet::new();
            mesh.walk(|p| {
                seen.insert(p.addr());
            });
            for p in all.iter().filter(|p| !seen.contains(&p.addr())) {
                // SAFETY: made here, unreachable from `mesh`, freed once.
                drop(unsafe { p.into_box() });
            }
            return Err(MeshError::Disconnected { reached, total: all.len() });
        }
        Ok(Built { mesh, bad })
    }

    /// The angle bound (degrees) of the refinement.
    pub fn bound(&self) -> f64 {
        self.bound
    }

    /// The number of elements (segments and triangles) the input had.
    pub fn initial_elements(&self) -> usize {
        self.initial_elements
    }

    /// Calls `f` on every element reachable from the root through
    /// neighbour links (breadth first) and returns their number. Needs
    /// the mesh to itself: no transaction may run on it meanwhile.
    pub(crate) fn walk(&self, mut f: impl FnMut(ElemPtr)) -> usize {
        let Some(root) = self.root.load() else { return 0 };
        let mut seen = std::collections::HashSet::new();
        let mut queue = std::collections::VecDeque::from([root]);
        seen.insert(root.addr());
        while let Some(p) = queue.pop_front() {
            // SAFETY: the caller has the mesh to itself; reachable elements
            // are alive.
            let e = unsafe { el(p) };
            for k in 0..e.shape.edges() {
                if let Some(q) = e.neighbors[k].load() {
                    if seen.insert(q.addr()) {
                        queue.push_back(q);
                    }
                }
            }
            f(p);
        }
        seen.len()
    }

    /// The number of elements reachable from the root.
    pub fn len(&self) -> usize {
        self.walk(|_| ())
    }

    /// Whether the mesh has no elements.
    pub fn is_empty(&self) -> bool {
        self.root.load().is_none()
    }
}

impl Drop for Mesh {
    fn drop(&mut self) {
        let mut all = Vec::new();
        self.walk(|p| all.push(p));
        for p in all {
            // SAFETY: `&mut self`: nothing else uses the mesh; each
            // reachable element is alive and freed once.
            drop(unsafe { p.into_box() });
        }
    }
}

/// Frees the elements made so far when building fails.
struct Guard(Vec<ElemPtr>);

impl Drop for Guard {
    fn drop(&mut self) {
        for p in self.0.drain(..) {
            // SAFETY: made by `build` and not handed out (the guard is
            // emptied once the mesh owns them).
            drop(unsafe { p.into_box() });
        }
    }
}
