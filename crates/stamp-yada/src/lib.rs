//! STAMP's **yada**: Ruppert's Delaunay mesh refinement.
//!
//! The input is a triangulated planar domain (Triangle's `.node`, `.ele`
//! and `.poly` files: `-i inputs/633.2` reads all three, each plain or
//! gzip-compressed). An element is *bad* when it has an angle below `-a`
//! degrees, or an obtuse angle facing a boundary segment (it *encroaches*
//! on the segment). Refining a bad element inserts a point (the midpoint
//! of the segment it encroaches on, else its circumcentre): the cavity of
//! elements whose circumcircle holds the point is grown breadth first
//! from the element; a boundary segment whose diametral circle holds the
//! point is split at its midpoint first; the cavity is replaced by a fan
//! of triangles around the point; the new bad triangles become new
//! work-units. Each unit runs in one transaction.
//!
//! # On the skeleton
//!
//! A work-unit is one bad element ([`BadElement`]); the initial ones are
//! seeded in STAMP's order (its shuffle with seed 0; `--shuffle` reorders
//! them again on the skeleton, `--shuffle 0` keeps STAMP's), and each
//! unit adds the bad triangles it makes, so SkelAff switches its page
//! policy to bind once workers generate units, as in the paper. Elements
//! are transactional objects allocated and freed in transactions; each
//! worker counts the elements it added in its own transactional counter.
//! The refinement step departs from STAMP's only on inputs where STAMP's
//! would fold the mesh (never on STAMP's inputs): before changing
//! anything it checks that the new point lies inside the cavity's side of
//! every border edge, and splits the boundary segment it lies beyond (or,
//! where rounding put it beyond an inner edge, leaves the element and
//! counts it as given up); and when a segment is split, another segment
//! whose diametral circle holds the midpoint bounds the cavity instead of
//! joining it.
//!
//! # Sequential version
//!
//! The same refinement step over the uninstrumented
//! [`UninstrumentedTx`], taking units in STAMP's order (its
//! binary heap, encroaching elements first): on STAMP's inputs its final
//! mesh has exactly the size STAMP's C program prints (`-a20 -i 633.2`:
//! 2 678 elements; `-a15 -i ttimeu10000.2`: 30 158; `-a15 -i
//! ttimeu100000.2`: 288 866).
//!
//! # Self-check
//!
//! STAMP's (which its build leaves switched off) made stronger: the final
//! mesh is consistent, every boundary segment of the input is present, no
//! element the algorithm could still refine is bad, and the number of
//! elements is the input's plus what the units added ([`Mesh::check`]).
//! With one worker the order of units is fixed, so the element count is
//! the same under every page policy; with more, it depends on the order
//! in which transactions commit.

mod check;
mod geometry;
mod input;
mod mesh;
mod order;
mod refine;

use std::path::PathBuf;
use std::time::Instant;

use skelaff_stm::{TVar, TxError, TxOps};
use skelaff_worklist::{LocalOrder, ProcessCtx, Skeleton, WorkerInfo};

pub use check::{BadMesh, Corners, MeshSummary};
pub use geometry::{Edge, Point, Shape, angle, orient};
pub use input::{InputError, MAX_ENTRIES, Triangulation, read_text};
pub use mesh::{BadElement, Built, Mesh, MeshError};
pub use order::stamp_shuffle;

use mesh::el;
use order::StampHeap;
use refine::Scratch;
use skelaff_stamp_core::app::{App, AppError, CommonArgs, Outcome};
use skelaff_stamp_core::check::CheckFailed;
use skelaff_stamp_core::figures::YadaFigures;
use skelaff_stamp_core::plain::UninstrumentedTx;

/// The path of a mesh shipped with skelaff-stamp-core (`data/yada/`: `633.2` and
/// `ttimeu10000.2`), embedded in the binary: see [`skelaff_stamp_core::shipped`].
pub fn shipped_input(name: &str) -> PathBuf {
    PathBuf::from(format!("{}{name}", skelaff_stamp_core::shipped::PREFIX))
}

/// The application (see the [module docs](self)).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::{App, CommonArgs};
/// use skelaff_stamp_yada::{Yada, YadaArgs, shipped_input};
///
/// let args = YadaArgs { angle: 20.0, input: shipped_input("633.2"), threads: 2 };
/// let outcome = Yada::run(&args, &CommonArgs::default())?;
/// assert!(outcome.passed(), "{:?}", outcome.check);
/// # Ok::<(), skelaff_stamp_core::AppError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Yada;

/// STAMP's yada flags.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct YadaArgs {
    /// Minimum angle constraint, in degrees (Ruppert's algorithm reaches about 20-30).
    #[arg(short = 'a', value_name = "DEGREES", default_value_t = 20.0)]
    pub angle: f64,
    /// Input name prefix: reads PREFIX.node, PREFIX.ele and PREFIX.poly (each may be .gz).
    #[arg(short = 'i', value_name = "PREFIX", default_value_os_t = shipped_input("633.2"))]
    pub input: PathBuf,
    /// Number of threads.
    #[arg(short = 't', value_name = "THREADS", default_value_t = 1)]
    pub threads: usize,
}

impl Default for YadaArgs {
    fn default() -> Self {
        YadaArgs { angle: 20.0, input: shipped_input("633.2"), threads: 1 }
    }
}

/// The largest angle bound accepted: above 60 degrees no triangle
/// qualifies, and Ruppert's algorithm stops terminating well before.
pub const MAX_ANGLE: f64 = 45.0;

impl YadaArgs {
    fn validate(&self) -> Result<(), AppError> {
        if self.threads == 0 {
            return Err(AppError::Invalid("-t (threads) must be at least 1".into()));
        }
        if !(self.angle > 0.0 && self.angle <= MAX_ANGLE) {
            return Err(AppError::Invalid(format!(
                "-a {}: the angle constraint must be above 0 and at most {MAX_ANGLE} degrees (STAMP runs 15 and 20)",
                self.angle
            )));
        }
        Ok(())
    }

    /// Reads the input and builds the mesh.
    ///
    /// # Errors
    ///
    /// [`AppError::Invalid`] for bad flags, an unreadable or malformed
    /// file, or a mesh [`Mesh::build`] refuses.
    pub fn build(&self) -> Result<Built, AppError> {
        self.validate()?;
        let t = Triangulation::read(&self.input).map_err(|e| AppError::Invalid(e.to_string()))?;
        Mesh::build(&t, self.angle).map_err(|e| AppError::Invalid(format!("{}: {e}", self.input.display())))
    }
}

/// What a refinement run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Totals {
    /// Elements added minus elements removed.
    pub added: i64,
    /// Units whose element was still in the mesh when they came up.
    pub processed: u64,
    /// Elements left unrefined because their point could not be inserted.
    pub gave_up: u64,
}

/// Refines `built` sequentially in STAMP's order (see the [module
/// docs](self)): [`Sequential`] run to the end.
///
/// # Errors
///
/// Only if the mesh is inconsistent (a bug): the refinement step's stop.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_yada::{YadaArgs, sequential, shipped_input};
///
/// let built = YadaArgs { angle: 20.0, input: shipped_input("633.2"), threads: 1 }.build()?;
/// let initial = built.mesh.initial_elements();
/// let (mesh, totals) = sequential(built).expect("a consistent mesh");
/// assert_eq!(initial as i64 + totals.added, 2678); // as STAMP's C program
/// assert!(mesh.check(2678).is_ok());
/// # Ok::<(), skelaff_stamp_core::AppError>(())
/// ```
pub fn sequential(built: Built) -> Result<(Mesh, Totals), TxError> {
    let mut r = Sequential::new(built);
    while r.step()? {}
    Ok((r.mesh, r.totals))
}

/// The sequential refinement, one unit at a time: STAMP's heap of bad
/// elements, each refined by the same step as on the skeleton, over
/// [`UninstrumentedTx`].
///
/// # Examples
///
/// ```
/// use skelaff_stamp_yada::{Sequential, YadaArgs, shipped_input};
///
/// let built = YadaArgs { angle: 20.0, input: shipped_input("633.2"), threads: 1 }.build()?;
/// let mut r = Sequential::new(built);
/// for _ in 0..10 {
///     assert!(r.step().expect("a consistent mesh"));
///     r.mesh().check_consistency(r.elements()).expect("valid after every step");
/// }
/// # Ok::<(), skelaff_stamp_core::AppError>(())
/// ```
#[derive(Debug)]
pub struct Sequential {
    // Field order: `tx` is dropped before `mesh` (it may hold removed
    // elements, which the mesh does not reach).
    tx: UninstrumentedTx,
    mesh: Mesh,
    heap: StampHeap<mesh::ElemPtr>,
    scratch: Scratch,
    fresh: Vec<mesh::ElemPtr>,
    totals: Totals,
}

impl Sequential {
    /// Puts the initial bad elements of `built` into the heap, in STAMP's
    /// shuffled order.
    pub fn new(built: Built) -> Sequential {
        let Built { mesh, bad } = built;
        let order = stamp_shuffle(bad, 0);
        let mut heap = StampHeap::new();
        for b in &order {
            heap.insert(b.0, encroaches(b.0));
        }
        // SAFETY: this value owns the mesh: nothing else runs on it.
        let tx = unsafe { UninstrumentedTx::new() };
        Sequential { tx, mesh, heap, scratch: Scratch::default(), fresh: Vec::new(), totals: Totals::default() }
    }

    /// Refines the next bad element; `false` when none is left.
    ///
    /// # Errors
    ///
    /// Only if the mesh is inconsistent (a bug): the refinement step's stop.
    pub fn step(&mut self) -> Result<bool, TxError> {
        let Some(e) = self.heap.remove() else { return Ok(false) };
        let fresh = &mut self.fresh;
        // SAFETY: a unit's element, taken from the heap once.
        let r = unsafe { self.mesh.process_unit(&mut self.tx, e, &mut self.scratch, |b| fresh.push(b)) }?;
        self.tx.end();
        self.totals.add(&r);
        for b in self.fresh.drain(..) {
            self.heap.insert(b, encroaches(b));
        }
        Ok(true)
    }

    /// The mesh as refined so far.
    pub fn mesh(&self) -> &Mesh {
        &self.mesh
    }

    /// What the steps so far did.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// The number of elements the mesh should have now (the input's plus
    /// what the steps added).
    pub fn elements(&self) -> usize {
        (self.mesh.initial_elements() as i64 + self.totals.added).max(0) as usize
    }
}

/// Whether a unit's element encroaches on a segment (STAMP's heap order).
fn encroaches(p: mesh::ElemPtr) -> bool {
    // SAFETY: a unit's element (REFERENCED), alive until its unit runs.
    unsafe { el(p) }.shape.encroached.is_some()
}

impl Totals {
    fn add(&mut self, r: &refine::UnitResult) {
        self.added += r.delta;
        self.processed += u64::from(!r.was_garbage);
        self.gave_up += u64::from(r.gave_up);
    }
}

/// One worker's counters, alone on their cache lines.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Counters {
    added: TVar<i64>,
    processed: TVar<u64>,
    gave_up: TVar<u64>,
}

/// The mesh and the workers' counters: the skeleton's shared state.
#[derive(Debug)]
struct Shared {
    mesh: Mesh,
    counters: Vec<Counters>,
}

/// Refines `built` on the skeleton with `threads` workers configured by
/// `common` (the initial bad elements seeded in STAMP's shuffled order).
///
/// # Errors
///
/// The skeleton's (topology, pinning, a panic in the refinement step).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::CommonArgs;
/// use skelaff_stamp_yada::{YadaArgs, run_skeleton, shipped_input};
///
/// let built = YadaArgs { angle: 20.0, input: shipped_input("633.2"), threads: 2 }.build()?;
/// let (mesh, totals, report) = run_skeleton(built, 2, &CommonArgs::default())?;
/// let n = (mesh.initial_elements() as i64 + totals.added) as usize;
/// assert!(mesh.check(n).is_ok() && report.units >= totals.processed);
/// # Ok::<(), skelaff_stamp_core::AppError>(())
/// ```
pub fn run_skeleton(
    built: Built,
    threads: usize,
    common: &CommonArgs,
) -> Result<(Mesh, Totals, skelaff_worklist::RunReport), AppError> {
    let Built { mesh, bad } = built;
    let shared = Shared { mesh, counters: (0..threads.max(1)).map(|_| Counters::default()).collect() };
    let report = {
        // Newest first unless the flag says otherwise: a unit's new bad
        // triangles lie in the cavity it just rebuilt, still in the cache
        // (Galois refines from per-thread LIFO chunks for the same reason).
        let order = common.local_order.unwrap_or(LocalOrder::Lifo);
        let mut wl = common.builder(threads).local_order(order).build(&Refinement, &shared)?;
        wl.add_work_units(stamp_shuffle(bad, 0));
        common.run(&mut wl)?
    };
    let mut totals = Totals::default();
    for c in &shared.counters {
        totals.added += c.added.load();
        totals.processed += c.processed.load();
        totals.gave_up += c.gave_up.load();
    }
    Ok((shared.mesh, totals, report))
}

/// The refinement step as a worklist program.
struct Refinement;

impl Skeleton for Refinement {
    type Unit = BadElement;
    type Shared = Shared;
    type PerWorker = Scratch;

    fn init_worker(&self, _: &Shared, _: &WorkerInfo) -> Scratch {
        Scratch::default()
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        unit: &BadElement,
        s: &mut Scratch,
        shared: &'t Shared,
        ctx: &mut ProcessCtx<BadElement>,
    ) -> Result<(), TxError> {
        // SAFETY: a unit's element (REFERENCED) stays alive until a
        // committed run of this unit frees it, and the skeleton commits
        // each unit once; a helper's shadow runs it too, but its frees
        // and writes stay private.
        let r = unsafe { shared.mesh.process_unit(tx, unit.0, s, |b| ctx.add_work_unit(BadElement(b))) }?;
        let c = &shared.counters[ctx.worker().index % shared.counters.len()];
        tx.update(&c.added, |v| v + r.delta)?;
        if !r.was_garbage {
            tx.update(&c.processed, |v| v + 1)?;
        }
        if r.gave_up > 0 {
            tx.update(&c.gave_up, |v| v + u64::from(r.gave_up))?;
        }
        Ok(())
    }
}

impl App for Yada {
    const NAME: &'static str = "yada";
    type Args = YadaArgs;

    /// `-a15 -i ttimeu10000.2` (STAMP's middle input, shipped with this
    /// crate): about 7000 units, some 10 ms of refinement on one thread of
    /// a current x86 CPU.
    fn small() -> YadaArgs {
        YadaArgs { angle: 15.0, input: shipped_input("ttimeu10000.2"), threads: 1 }
    }

    fn threads(args: &YadaArgs) -> usize {
        args.threads
    }

    fn set_threads(args: &mut YadaArgs, threads: usize) {
        args.threads = threads;
    }

    fn run(args: &YadaArgs, common: &CommonArgs) -> Result<Outcome, AppError> {
        let built = args.build()?;
        let initial = built.mesh.initial_elements();
        let initial_bad = built.initial_bad();
        let mut prepared = None;
        let (mesh, totals, time, report) = if common.sequential {
            let start = Instant::now();
            let (mesh, totals) = sequential(built)
                .map_err(|e| AppError::Invalid(format!("the sequential refinement stopped: {e:?}")))?;
            (mesh, totals, start.elapsed(), None)
        } else {
            prepared = Some(skelaff_stamp_core::phases::prepare_before_timing(common, args.threads)?);
            let (mesh, totals, report) = run_skeleton(built, args.threads, common)?;
            let time = report.wall;
            (mesh, totals, time, Some(report))
        };
        let expected = initial as i64 + totals.added;
        let mut figures = YadaFigures {
            input: args.input.display().to_string(),
            angle: args.angle,
            initial_elements: initial,
            initial_bad,
            final_elements: expected,
            processed: totals.processed,
            gave_up: totals.gave_up,
            threads: if common.sequential { 1 } else { args.threads },
            min_angle: None,
            mesh_digest: None,
        };
        let check = usize::try_from(expected)
            .map_err(|_| BadMesh::NegativeCount { expected })
            .and_then(|n| mesh.check(n))
            .map(|s| {
                figures.min_angle = Some(s.min_angle);
                figures.mesh_digest = Some(format!("{:016x}", s.digest));
                format!("final mesh: {s}")
            })
            .map_err(|e| CheckFailed::new(Self::NAME, e));
        Ok(Outcome { app: Self::NAME, report, time, prepared, check, figures: figures.into() })
    }
}
