//! Refining one bad element, in one transaction: grow the cavity of the
//! point it needs (STAMP's `TMgrowRegion`), split a boundary segment that
//! point encroaches on first, then replace the cavity by a fan of
//! triangles around the point (`TMretriangulate`).
//!
//! The same code runs in the skeleton's transactions, in a helper
//! thread's shadow and, over [`UninstrumentedTx`], in the
//! sequential version.
//!
//! Two guards STAMP does not have keep the mesh valid where STAMP's would
//! fold: before anything is changed, the new point must lie strictly on
//! the cavity's side of every border edge. When it lies beyond a boundary
//! segment, that segment is split first (the point is outside the domain:
//! Ruppert's rule); when it lies beyond anything else (rounding in a
//! nearly degenerate cavity), the element is left as it is and counted as
//! given up. When a segment is being split, another segment whose
//! diametral circle holds the midpoint bounds the cavity instead of
//! joining it (STAMP lets it join and loses it from the boundary). On
//! STAMP's inputs neither guard fires: the refined meshes have exactly the
//! element counts of STAMP's C program.

use skelaff_stm::{Stop, TxError, TxOps};

use super::geometry::{Edge, Point, Shape, orient};
use super::mesh::{ElemPtr, Element, GARBAGE, Mesh, REFERENCED, ROOT, el, set_unpublished};

/// How often one element may have a segment split for it before it is
/// given up (each split halves a segment near its new point, so a few
/// suffice; the cap bounds a shadow that reads an inconsistent mesh).
const MAX_SPLITS: u32 = 64;

/// A border edge of a cavity: an edge between an element inside and one
/// outside.
#[derive(Debug, Clone, Copy)]
struct Border {
    edge: Edge,
    /// The corner of the inside triangle off this edge.
    apex: Point,
    outside: ElemPtr,
    /// The edge's index in the outside element.
    slot: u8,
}

/// An edge of the new elements still looking for its second element.
#[derive(Debug, Clone, Copy)]
enum Link {
    /// `(element, edge index, made in this transaction)`.
    Open(ElemPtr, u8, bool),
    /// Both elements found.
    Closed,
}

/// What growing a cavity found.
enum Grown {
    /// The cavity is in the scratch's `before` and `border`.
    Cavity,
    /// The point encroaches on this boundary segment: split it first.
    Encroached(ElemPtr),
    /// The element cannot be refined here.
    GiveUp,
}

/// A worker's private scratch (STAMP's `region_t`).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// The cavity, in breadth-first order, with each element's state as read.
    before: Vec<(ElemPtr, u8)>,
    border: Vec<Border>,
    links: Vec<(Edge, Link)>,
    /// The bad triangles made by this unit (STAMP's `badVector`).
    bad: Vec<ElemPtr>,
    neighbors: Vec<(ElemPtr, u8)>,
}

/// What one unit did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct UnitResult {
    /// Elements added minus elements removed.
    pub(crate) delta: i64,
    /// Whether the unit's element had been removed before it came up.
    pub(crate) was_garbage: bool,
    /// Elements (the unit's or a split segment's) left unrefined because
    /// their point could not be inserted.
    pub(crate) gave_up: u32,
}

/// Signals an inconsistent view of the mesh, which only a speculative
/// reader (a helper's shadow) can have: the real STM's reads are
/// consistent.
fn inconsistent() -> TxError {
    TxError::Stop(INCONSISTENT_VIEW)
}

/// What a speculative reader that met an inconsistent mesh stops with.
pub(crate) const INCONSISTENT_VIEW: Stop = Stop::new(1, "inconsistent view of the mesh (a speculative reader)");

impl Mesh {
    /// Processes one work-unit: refines the bad element `e` (unless it
    /// was removed meanwhile), and passes each bad triangle it made that
    /// is still in the mesh to `new_unit`. Frees what the unit owns.
    ///
    /// # Safety
    ///
    /// `e` is a unit's element (flagged [`REFERENCED`], alive), processed
    /// once.
    pub(crate) unsafe fn process_unit<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        e: ElemPtr,
        s: &mut Scratch,
        mut new_unit: impl FnMut(ElemPtr),
    ) -> Result<UnitResult, TxError> {
        // SAFETY: the caller guarantees `e` is alive (referenced).
        let elem = unsafe { el(e) };
        let state = tx.read(&elem.state)?;
        let mut r = UnitResult::default();
        if state & GARBAGE != 0 {
            r.was_garbage = true;
            // SAFETY: removed from the mesh by an earlier transaction, which
            // left it to this unit (REFERENCED); freed once, here.
            unsafe { tx.free(e)? };
            return Ok(r);
        }
        s.bad.clear();
        self.refine(tx, e, s, false, &mut r)?;
        let state = tx.read(&elem.state)?;
        if state & GARBAGE != 0 {
            // SAFETY: this transaction removed it; the unit owned it.
            unsafe { tx.free(e)? };
        } else {
            tx.write(&elem.state, state & !REFERENCED)?;
        }
        for i in 0..s.bad.len() {
            let b = s.bad[i];
            // SAFETY: allocated by this transaction.
            let st = tx.read(&unsafe { el(b) }.state)?;
            if st & GARBAGE != 0 {
                // SAFETY: made and removed by this transaction, flagged
                // REFERENCED so its removal left it here; freed once.
                unsafe { tx.free(b)? };
            } else {
                new_unit(b);
            }
        }
        Ok(r)
    }

    /// Refines `e`: splits the segments its point encroaches on, then
    /// retriangulates its cavity (STAMP's `TMregion_refine`).
    fn refine<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        e: ElemPtr,
        s: &mut Scratch,
        splitting: bool,
        r: &mut UnitResult,
    ) -> Result<(), TxError> {
        let mut splits = 0;
        loop {
            match self.grow(tx, e, s)? {
                Grown::Cavity => return self.retriangulate(tx, e, s, r),
                Grown::GiveUp => {
                    r.gave_up += 1;
                    return Ok(());
                }
                Grown::Encroached(segment) => {
                    if splitting || splits == MAX_SPLITS {
                        r.gave_up += 1;
                        return Ok(());
                    }
                    splits += 1;
                    self.refine(tx, segment, s, true, r)?;
                    // SAFETY: `e` is a unit's element or read in this transaction.
                    if tx.read(&unsafe { el(e) }.state)? & GARBAGE != 0 {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Whether refining `e` would change the mesh: its cavity can be
    /// retriangulated, or a segment it encroaches on can be split. Only
    /// reads.
    pub(crate) fn would_change<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        e: ElemPtr,
        s: &mut Scratch,
    ) -> Result<bool, TxError> {
        Ok(match self.grow(tx, e, s)? {
            Grown::Cavity => true,
            Grown::GiveUp => false,
            Grown::Encroached(segment) => matches!(self.grow(tx, segment, s)?, Grown::Cavity),
        })
    }

    /// Grows the cavity of `center`'s new point: breadth first from
    /// `center` through neighbours whose circumcircle holds the point.
    fn grow<'t, X: TxOps<'t>>(&'t self, tx: &mut X, center: ElemPtr, s: &mut Scratch) -> Result<Grown, TxError> {
        // SAFETY: a unit's element, or read in this transaction.
        let cs = &unsafe { el(center) }.shape;
        let splitting = cs.is_segment();
        let p = cs.new_point();
        s.before.clear();
        s.border.clear();
        // SAFETY: as above: the unit's element, or read in this transaction.
        let state = tx.read(&unsafe { el(center) }.state)?;
        s.before.push((center, state));
        let mut i = 0;
        while i < s.before.len() {
            let (cur, _) = s.before[i];
            i += 1;
            // SAFETY: in the cavity: read in this transaction (or the center).
            let c = unsafe { el(cur) };
            s.neighbors.clear();
            for k in 0..c.shape.edges() {
                if let Some(n) = tx.read(&c.neighbors[k])? {
                    s.neighbors.push((n, k as u8));
                }
            }
            // STAMP visits neighbours in its element order.
            // SAFETY: read from `TVar`s in this transaction.
            s.neighbors.sort_by(|a, b| unsafe { el(a.0) }.shape.compare(&unsafe { el(b.0) }.shape));
            for j in 0..s.neighbors.len() {
                let (n, k) = s.neighbors[j];
                if s.before.iter().any(|&(b, _)| b == n) {
                    continue;
                }
                // SAFETY: read from a `TVar` in this transaction.
                let ne = unsafe { el(n) };
                let ns = &ne.shape;
                if ns.in_circle(&p) {
                    if ns.is_segment() && !splitting {
                        return Ok(Grown::Encroached(n));
                    }
                    if !ns.is_segment() {
                        let state = tx.read(&ne.state)?;
                        if state & GARBAGE != 0 {
                            return Err(inconsistent());
                        }
                        s.before.push((n, state));
                        continue;
                    }
                }
                if c.shape.is_segment() {
                    // The segment's own triangle does not hold its midpoint:
                    // only a degenerate triangle can do that.
                    return Ok(Grown::GiveUp);
                }
                let edge = c.shape.edge(k as usize);
                let Some(slot) = ns.edge_index(&edge) else { return Err(inconsistent()) };
                s.border.push(Border { edge, apex: c.shape.apex(k as usize), outside: n, slot: slot as u8 });
            }
        }
        // The point must lie strictly inside the cavity's side of every
        // border edge, or the fan would fold over.
        for b in &s.border {
            let side = orient(&b.edge.first, &b.edge.second, &p);
            let inner = orient(&b.edge.first, &b.edge.second, &b.apex);
            // Same side, strictly (a NaN orientation fails too).
            if (side * inner).partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                // SAFETY: read from a `TVar` in this transaction.
                return Ok(if unsafe { el(b.outside) }.shape.is_segment() && !splitting {
                    Grown::Encroached(b.outside)
                } else {
                    Grown::GiveUp
                });
            }
        }
        // STAMP makes the new triangles in its edge order.
        s.border.sort_by(|a, b| a.edge.compare(&b.edge));
        Ok(Grown::Cavity)
    }

    /// Replaces the cavity in `s` by a fan of triangles around `center`'s
    /// new point (and, for a segment, by its two halves).
    fn retriangulate<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        center: ElemPtr,
        s: &mut Scratch,
        r: &mut UnitResult,
    ) -> Result<(), TxError> {
        // SAFETY: a unit's element or read in this transaction.
        let cs = &unsafe { el(center) }.shape;
        let p = cs.new_point();
        let mut root_removed = false;
        for &(x, state) in &s.before {
            root_removed |= state & ROOT != 0;
            // SAFETY: read in this transaction.
            tx.write(&unsafe { el(x) }.state, state | GARBAGE)?;
            if state & REFERENCED == 0 {
                // SAFETY: unlinked by this transaction (its border
                // neighbours get the new elements, its inside neighbours
                // are removed too, the root is replaced below) and named by
                // no unit; freed once, as it leaves the mesh.
                unsafe { tx.free(x)? };
            }
        }
        r.delta -= s.before.len() as i64;
        s.links.clear();
        s.links.extend(s.border.iter().map(|b| (b.edge, Link::Open(b.outside, b.slot, false))));
        let mut first = None;
        if cs.is_segment() {
            let e = cs.edge(0);
            for end in [e.first, e.second] {
                let half = self.make(tx, &[p, end], s)?;
                first.get_or_insert(half);
            }
            r.delta += 2;
        }
        for i in 0..s.border.len() {
            let b = s.border[i].edge;
            let t = self.make(tx, &[p, b.first, b.second], s)?;
            first.get_or_insert(t);
            // SAFETY: allocated by this transaction.
            if unsafe { el(t) }.shape.is_bad() {
                s.bad.push(t);
            }
        }
        r.delta += s.border.len() as i64;
        if root_removed {
            if let Some(f) = first {
                // SAFETY: allocated by this transaction, not yet published.
                let state = &unsafe { el(f) }.state;
                set_unpublished(state, state.load() | ROOT);
            }
            tx.write(&self.root, first)?;
        }
        Ok(())
    }

    /// Makes the element with corners `points` and links it to the
    /// elements in `s.links` that share its edges (STAMP's
    /// `TMelement_alloc` and `TMmesh_insert`).
    fn make<'t, X: TxOps<'t>>(&'t self, tx: &mut X, points: &[Point], s: &mut Scratch) -> Result<ElemPtr, TxError> {
        let mut shape = Shape::new(points, self.bound);
        let mut init = [None; 3];
        let mut partners = [None; 3];
        for (k, (init, partner)) in init.iter_mut().zip(&mut partners).enumerate().take(shape.edges()) {
            let edge = shape.edge(k);
            if let Some(l) = s.links.iter_mut().find(|(e, _)| e.same(&edge)) {
                match std::mem::replace(&mut l.1, Link::Closed) {
                    Link::Open(q, j, new) => {
                        *init = Some(q);
                        *partner = Some((q, j, new));
                    }
                    Link::Closed => return Err(inconsistent()),
                }
            }
        }
        // Encroached only on a boundary segment (STAMP checks its boundary
        // set; here: is the element across that edge a segment).
        // SAFETY: partners were read in, or allocated by, this transaction.
        let on_segment = |k: u8| init[k as usize].is_some_and(|q| unsafe { el(q) }.shape.is_segment());
        let keep = shape.encroached.is_some_and(on_segment);
        shape.keep_encroached_if(|_| keep);
        let state = if shape.is_bad() { REFERENCED } else { 0 };
        let edges = shape.edges();
        let x = tx.alloc(Element::new(shape, init, state))?;
        // SAFETY: allocated by this transaction.
        let xe = unsafe { el(x) };
        for (k, partner) in partners.iter().enumerate().take(edges) {
            match *partner {
                // SAFETY: allocated by this transaction, not yet published.
                Some((q, j, true)) => set_unpublished(&unsafe { el(q) }.neighbors[j as usize], Some(x)),
                // SAFETY: read in this transaction.
                Some((q, j, false)) => tx.write(&unsafe { el(q) }.neighbors[j as usize], Some(x))?,
                None => s.links.push((xe.shape.edge(k), Link::Open(x, k as u8, true))),
            }
        }
        Ok(x)
    }
}
