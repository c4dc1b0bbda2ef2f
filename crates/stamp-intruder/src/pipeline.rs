//! The capture → reassembly → detection pipeline, on the skeleton and
//! sequentially, and the self-check of its result.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use skelaff_stm::{TBTreeMap, THashMap, TMap, TPtr, TVar, TxError, TxOps, Word, atomically};
use skelaff_worklist::{Affinity, ProcessCtx, RunReport, Skeleton, WorkerInfo};

use super::detector::Detector;
use super::stream::{Packet, Stream, digest};
use skelaff_stamp_core::app::{AppError, CommonArgs};
use skelaff_stamp_core::check::Problems;

/// Where a reassembled flow is checked against the dictionary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DetectIn {
    /// In a work-unit of its own, added by the unit that completed the flow
    /// (published when that unit commits). The default: reassembly
    /// transactions stay as short as STAMP's, the detection work is never
    /// re-run when a reassembly transaction conflicts, and a detection unit
    /// touches only its flow's verdict, so it cannot conflict.
    #[default]
    NewUnit,
    /// In the transaction of the packet that completed the flow.
    SameUnit,
}

/// The workers' clock policy unless `--clock` says otherwise:
/// [`ClockPolicy::Readers`](skelaff_stm::ClockPolicy). A packet's
/// transaction is short (a few hundred nanoseconds) and touches one flow,
/// which other packets rarely touched just before; with every commit
/// moving the STM's clock, two workers passed its cache line back and
/// forth at every packet. Measured at 2 workers on the built-in input
/// against `commits`, same run: 0.81 to 0.88 of the time in three runs of
/// 5 to 11 rounds (the issue notes).
pub const CLOCK: skelaff_stm::ClockPolicy = skelaff_stm::ClockPolicy::Readers;

/// Whether the workers own the flows unless `--affinity` says otherwise:
/// yes. Every unit of a flow names one worker
/// ([`Affinity::Worker`]), so a flow's map entry, slots, digest and
/// verdict stay in that worker's cache instead of moving between the
/// cores at every packet. Measured at 2 workers against no affinity, same
/// run, 5 to 7 interleaved rounds: 0.91 of the time on STAMP's standard
/// input (`-a10 -l128 -n262144`), 0.84 (B+tree) and 0.88 (hash map) on
/// `-a10 -l16 -n65536` (the issue notes).
pub const AFFINITY: bool = true;

/// The reassembly map: flow id → the flow's fragments so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum MapKind {
    /// An ordered map: a red-black tree on the skeleton (STAMP's
    /// `MAP_USE_RBTREE`, what intruder is characterised with: rebalancing
    /// makes conflicts), a `BTreeMap` in the sequential version.
    Rbtree,
    /// An ordered map of fewer levels: the copy-on-write B+tree
    /// ([`TBTreeMap`]) on the skeleton, a `BTreeMap` in the sequential
    /// version. A lookup reads one transactional link per level of a tree
    /// about four times shallower than the red-black one; each flow's
    /// insert and remove copy a leaf of 16 entries. On STAMP's standard
    /// input (7.8 million packets, up to 262,144 flows in the map) it runs
    /// 1.36x (1 worker) and 1.46x (2 workers) as fast as the red-black
    /// tree. The default.
    #[default]
    Btree,
    /// A hash map with one bucket per flow on the skeleton, a `HashMap` in
    /// the sequential version. With many flows each level of the tree is a
    /// cache miss; a bucket is one.
    Hash,
}

/// How the pipeline is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Variant {
    /// Where a reassembled flow is checked.
    pub detect_in: DetectIn,
    /// The reassembly map.
    pub map: MapKind,
}

/// What became of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Verdict {
    /// Not (yet) decided: never reassembled, or never checked.
    Pending = 0,
    /// Reassembled, checked, no signature.
    Clean = 1,
    /// Reassembled, checked, a signature matched: flagged.
    Attack = 2,
    /// Its fragments did not fit together (STAMP's decoder errors).
    Malformed = 3,
    /// Reassembled or checked more than once.
    Duplicate = 4,
}

impl Word for Verdict {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Self {
        match w {
            0 => Verdict::Pending,
            1 => Verdict::Clean,
            2 => Verdict::Attack,
            3 => Verdict::Malformed,
            _ => Verdict::Duplicate,
        }
    }
}

/// The result of a run: per flow, the digest of the payload reassembly
/// produced (0: never reassembled) and the verdict; and how many flows were
/// left half-assembled in the reassembly map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    /// Per flow, [`digest`] of the reassembled payload, 0 if none.
    pub digests: Vec<u64>,
    /// Per flow, its verdict.
    pub verdicts: Vec<Verdict>,
    /// Flows still in the reassembly map at the end.
    pub unfinished: usize,
}

impl Detection {
    /// The flagged flows, in increasing order.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_intruder::{MapKind, Stream, run_sequential};
    ///
    /// let stream = Stream::generate(50, 8, 40, 2)?;
    /// assert_eq!(run_sequential(&stream, MapKind::Rbtree).flagged(), stream.attacks());
    /// # Ok::<(), skelaff_stamp_intruder::StreamError>(())
    /// ```
    pub fn flagged(&self) -> Vec<u32> {
        self.verdicts.iter().enumerate().filter(|&(_, &v)| v == Verdict::Attack).map(|(f, _)| f as u32).collect()
    }
}

impl Stream {
    /// STAMP's self-check, strengthened: every flow was reassembled exactly
    /// once into its original payload and checked, nothing is left in the
    /// reassembly map, and the flagged flows are exactly the attack flows
    /// the generator made (same count, same ids).
    ///
    /// # Errors
    ///
    /// [`BadDetection`]: what is wrong, with the first few offending flows.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_intruder::{MapKind, Stream, Verdict, run_sequential};
    ///
    /// let stream = Stream::generate(10, 4, 200, 1)?;
    /// let mut d = run_sequential(&stream, MapKind::Hash);
    /// assert!(stream.check(&d).is_ok());
    /// let clean = d.verdicts.iter().position(|&v| v == Verdict::Clean).unwrap();
    /// d.verdicts[clean] = Verdict::Attack; // flag an innocent flow
    /// assert!(stream.check(&d).is_err());
    /// # Ok::<(), skelaff_stamp_intruder::StreamError>(())
    /// ```
    pub fn check(&self, d: &Detection) -> Result<String, BadDetection> {
        let flows = self.flows();
        if d.digests.len() != flows || d.verdicts.len() != flows {
            return Err(BadDetection::Shape { digests: d.digests.len(), verdicts: d.verdicts.len(), flows });
        }
        let mut problems = Problems::default();
        for f in 0..flows {
            if d.digests[f] == 0 {
                problems.note(FlowProblem::NeverReassembled { flow: f });
            } else if d.digests[f] != digest(self.payload(f)) {
                problems.note(FlowProblem::WrongPayload { flow: f });
            }
            match d.verdicts[f] {
                Verdict::Clean | Verdict::Attack => {}
                verdict => problems.note(FlowProblem::Undecided { flow: f, verdict }),
            }
        }
        if d.unfinished != 0 {
            problems.note(FlowProblem::Unfinished { flows: d.unfinished });
        }
        let want = self.attacks();
        let got = d.flagged();
        if got != want {
            let missed: Vec<u32> = want.iter().copied().filter(|f| got.binary_search(f).is_err()).take(5).collect();
            let extra: Vec<u32> = got.iter().copied().filter(|f| want.binary_search(f).is_err()).take(5).collect();
            problems.note(FlowProblem::Flagged { flagged: got.len(), attacks: want.len(), missed, extra });
        }
        problems.into_result(()).map_err(BadDetection::Problems)?;
        Ok(format!(
            "{} attacks found ({} injected, {} random payloads matching a signature) and nothing else flagged; all {flows} flows reassembled intact",
            want.len(),
            self.injected,
            want.len() - self.injected as usize
        ))
    }
}

/// What intruder's self-check found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadDetection {
    /// The result does not have one digest and one verdict per flow.
    #[error("result covers {digests} digests and {verdicts} verdicts for {flows} flows")]
    Shape {
        /// Digests in the result.
        digests: usize,
        /// Verdicts in the result.
        verdicts: usize,
        /// Flows in the stream.
        flows: usize,
    },
    /// Flows lost, corrupted, undecided, or flagged wrongly.
    #[error("{0}")]
    Problems(Problems<FlowProblem>),
}

/// One problem intruder's self-check found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FlowProblem {
    /// A flow never reassembled.
    #[error("flow {flow} was never reassembled")]
    NeverReassembled {
        /// The flow.
        flow: usize,
    },
    /// A flow reassembled into another payload than it was cut from.
    #[error("flow {flow} was reassembled into the wrong payload")]
    WrongPayload {
        /// The flow.
        flow: usize,
    },
    /// A flow that ended neither clean nor an attack.
    #[error("flow {flow} ended {verdict:?}")]
    Undecided {
        /// The flow.
        flow: usize,
        /// How it ended.
        verdict: Verdict,
    },
    /// Flows left in the reassembly map.
    #[error("{flows} flows left in the reassembly map")]
    Unfinished {
        /// How many.
        flows: usize,
    },
    /// The flagged flows are not the attacks generated.
    #[error(
        "{flagged} flows flagged, {attacks} attacks generated (missed e.g. {missed:?}, wrongly flagged e.g. {extra:?})"
    )]
    Flagged {
        /// Flows flagged.
        flagged: usize,
        /// Attacks generated.
        attacks: usize,
        /// The first few attacks not flagged.
        missed: Vec<u32>,
        /// The first few flows flagged that are not attacks.
        extra: Vec<u32>,
    },
}

/// Concatenates the bytes of a complete flow's fragments, given in
/// fragment order as [`Packet::piece`]s.
fn assemble(stream: &Stream, pieces: &[u64]) -> Vec<u8> {
    let mut data = Vec::with_capacity(pieces.iter().map(|&w| (w & 0xffff) as usize).sum());
    for &w in pieces {
        data.extend_from_slice(stream.piece(w));
    }
    data
}

/// The sequential version: one pass over the packets in arrival order with
/// a plain map of the flows being reassembled (`BTreeMap` or `HashMap`,
/// as `map` says), each completed flow checked at once.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_intruder::{MapKind, Stream, run_sequential};
///
/// let stream = Stream::generate(10, 4, 100, 1)?;
/// let d = run_sequential(&stream, MapKind::Rbtree);
/// assert_eq!(d.unfinished, 0);
/// assert!(stream.check(&d).is_ok());
/// # Ok::<(), skelaff_stamp_intruder::StreamError>(())
/// ```
pub fn run_sequential(stream: &Stream, map: MapKind) -> Detection {
    match map {
        MapKind::Rbtree | MapKind::Btree => reassemble_sequentially::<BTreeMap<u32, Partially>>(stream),
        MapKind::Hash => reassemble_sequentially::<HashMap<u32, Partially>>(stream),
    }
}

/// A flow being reassembled by the sequential version: fragments arrived,
/// and per fragment id its piece (0: not arrived).
type Partially = (u16, Vec<u64>);

/// The plain maps the sequential version runs on.
trait PlainMap: Default {
    fn slot(&mut self, flow: u32, fragments: u16) -> &mut Partially;
    fn take(&mut self, flow: u32) -> Option<Partially>;
    fn count(&self) -> usize;
}

macro_rules! plain_map {
    ($($m:ident),*) => {$(
        impl PlainMap for $m<u32, Partially> {
            fn slot(&mut self, flow: u32, fragments: u16) -> &mut Partially {
                self.entry(flow).or_insert_with(|| (0, vec![0; fragments.into()]))
            }
            fn take(&mut self, flow: u32) -> Option<Partially> {
                self.remove(&flow)
            }
            fn count(&self) -> usize {
                self.len()
            }
        }
    )*};
}
plain_map!(BTreeMap, HashMap);

fn reassemble_sequentially<M: PlainMap>(stream: &Stream) -> Detection {
    let flows = stream.flows();
    let mut d = Detection { digests: vec![0; flows], verdicts: vec![Verdict::Pending; flows], unfinished: 0 };
    let mut partial = M::default();
    let mut detector = Detector::default();
    for p in &stream.packets {
        let f = p.flow as usize;
        if p.fragment >= p.fragments {
            d.verdicts[f] = Verdict::Malformed;
            continue;
        }
        let data = if p.fragments == 1 {
            stream.data(p).to_vec()
        } else {
            let id = usize::from(p.fragment);
            let (arrived, slots) = partial.slot(p.flow, p.fragments);
            if slots.len() != usize::from(p.fragments) || slots[id] != 0 {
                partial.take(p.flow);
                d.verdicts[f] = Verdict::Malformed;
                continue;
            }
            slots[id] = p.piece();
            *arrived += 1;
            if *arrived < p.fragments {
                continue;
            }
            let slots = partial.take(p.flow).map(|(_, slots)| slots).unwrap_or_default();
            assemble(stream, &slots)
        };
        if d.digests[f] != 0 || d.verdicts[f] != Verdict::Pending {
            d.verdicts[f] = Verdict::Duplicate;
            continue;
        }
        d.digests[f] = digest(&data);
        d.verdicts[f] = if detector.is_attack(&data) { Verdict::Attack } else { Verdict::Clean };
    }
    d.unfinished = partial.count();
    d
}

/// A work-unit: a captured packet, or a reassembled flow to check.
#[derive(Clone)]
pub(crate) enum Unit {
    /// The packet (copied into the unit, so the pool hands it over with
    /// the unit instead of the worker fetching it from a random place in
    /// [`Stream::packets`]).
    Packet(Packet),
    /// A reassembled flow and its payload.
    Flow(u32, Box<[u8]>),
}

impl fmt::Debug for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unit::Packet(p) => write!(f, "Packet(flow {} fragment {}/{})", p.flow, p.fragment, p.fragments),
            Unit::Flow(flow, data) => write!(f, "Flow({flow}, {} bytes)", data.len()),
        }
    }
}

/// A flow being reassembled: how many fragments arrived, and per fragment
/// id its [`Packet::piece`] (0: not arrived). STAMP keeps a
/// sorted list per flow; its insert walks the list in the transaction,
/// which made reassembly quadratic in the fragments of a flow (most of the
/// run at `-l128`); slots by fragment id make it one read and one write.
struct Partial {
    arrived: TVar<u32>,
    slots: Box<[TVar<u64>]>,
}

/// The transactional reassembly map.
enum FlowMap {
    Tree(TMap<u32, TPtr<Partial>>),
    BTree(TBTreeMap<u32, TPtr<Partial>>),
    Hash(THashMap<u32, TPtr<Partial>>),
}

impl FlowMap {
    fn get<'t, X: TxOps<'t>>(&'t self, tx: &mut X, flow: u32) -> Result<Option<TPtr<Partial>>, TxError> {
        match self {
            FlowMap::Tree(m) => m.get(tx, &flow),
            FlowMap::BTree(m) => m.get(tx, &flow),
            FlowMap::Hash(m) => m.get(tx, &flow),
        }
    }
    fn insert<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        flow: u32,
        p: TPtr<Partial>,
    ) -> Result<Option<TPtr<Partial>>, TxError> {
        match self {
            FlowMap::Tree(m) => m.insert(tx, flow, p),
            FlowMap::BTree(m) => m.insert(tx, flow, p),
            FlowMap::Hash(m) => m.insert(tx, flow, p),
        }
    }
    fn remove<'t, X: TxOps<'t>>(&'t self, tx: &mut X, flow: u32) -> Result<Option<TPtr<Partial>>, TxError> {
        match self {
            FlowMap::Tree(m) => m.remove(tx, &flow),
            FlowMap::BTree(m) => m.remove(tx, &flow),
            FlowMap::Hash(m) => m.remove(tx, &flow),
        }
    }
    fn to_vec<'t, X: TxOps<'t>>(&'t self, tx: &mut X) -> Result<Vec<(u32, TPtr<Partial>)>, TxError> {
        match self {
            FlowMap::Tree(m) => m.to_vec(tx),
            FlowMap::BTree(m) => m.to_vec(tx),
            FlowMap::Hash(m) => m.to_vec(tx),
        }
    }
}

/// The transactional state: the reassembly map (flow → partial flow) and
/// each flow's digest and verdict.
pub(crate) struct Reassembly {
    map: FlowMap,
    digests: Box<[TVar<u64>]>,
    verdicts: Box<[TVar<Verdict>]>,
}

impl fmt::Debug for Reassembly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reassembly").field("flows", &self.digests.len()).finish_non_exhaustive()
    }
}

impl Reassembly {
    fn new(flows: usize, kind: MapKind) -> Self {
        Reassembly {
            map: match kind {
                MapKind::Rbtree => FlowMap::Tree(TMap::new()),
                MapKind::Btree => FlowMap::BTree(TBTreeMap::new()),
                MapKind::Hash => FlowMap::Hash(THashMap::with_buckets(flows)),
            },
            digests: (0..flows).map(|_| TVar::new(0)).collect(),
            verdicts: (0..flows).map(|_| TVar::new(Verdict::Pending)).collect(),
        }
    }

    /// The result, once no worker runs.
    fn harvest(&self) -> Detection {
        Detection {
            digests: self.digests.iter().map(TVar::load).collect(),
            verdicts: self.verdicts.iter().map(TVar::load).collect(),
            unfinished: atomically(|tx| Ok(self.map.to_vec(tx)?.len())),
        }
    }
}

impl Drop for Reassembly {
    fn drop(&mut self) {
        // Flows left half-assembled (only after a failed run): free them.
        atomically(|tx| {
            for (flow, p) in self.map.to_vec(tx)? {
                self.map.remove(tx, flow)?;
                // SAFETY: `p` was allocated by a committed transaction and
                // linked only from the map, from which this transaction
                // unlinks it; each entry is visited once, so it is freed once.
                unsafe { tx.free(p)? };
            }
            Ok(())
        });
    }
}

/// The pipeline on the skeleton: capture is taking a packet unit from the
/// pool; reassembly runs in the unit's transaction; detection runs where
/// [`DetectIn`] says.
struct Pipeline<'s> {
    stream: &'s Stream,
    detect_in: DetectIn,
    /// The run's workers, for [`Skeleton::affinity`].
    workers: usize,
}

impl Pipeline<'_> {
    /// Records a reassembled flow and checks it (now or in a new unit).
    fn reassembled<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        flow: u32,
        data: Vec<u8>,
        detector: &mut Detector,
        s: &'t Reassembly,
        ctx: &mut ProcessCtx<Unit>,
    ) -> Result<(), TxError> {
        let f = flow as usize;
        if tx.read(&s.digests[f])? != 0 {
            return tx.write(&s.verdicts[f], Verdict::Duplicate);
        }
        tx.write(&s.digests[f], digest(&data))?;
        match self.detect_in {
            DetectIn::NewUnit => {
                ctx.add_work_unit(Unit::Flow(flow, data.into_boxed_slice()));
                Ok(())
            }
            DetectIn::SameUnit => judge(tx, flow, &data, detector, s),
        }
    }
}

/// Checks a reassembled flow and records the verdict.
fn judge<'t, X: TxOps<'t>>(
    tx: &mut X,
    flow: u32,
    data: &[u8],
    detector: &mut Detector,
    s: &'t Reassembly,
) -> Result<(), TxError> {
    let v = &s.verdicts[flow as usize];
    let verdict = if tx.read(v)? != Verdict::Pending {
        Verdict::Duplicate
    } else if detector.is_attack(data) {
        Verdict::Attack
    } else {
        Verdict::Clean
    };
    tx.write(v, verdict)
}

impl Skeleton for Pipeline<'_> {
    type Unit = Unit;
    type Shared = Reassembly;
    type PerWorker = Detector;

    fn init_worker(&self, _: &Reassembly, _: &WorkerInfo) -> Detector {
        Detector::default()
    }

    /// With affinity scheduling (`--affinity`), every unit of a flow
    /// belongs to one worker: flows are split among the workers in
    /// contiguous ranges of ids, so a flow's map entry, its fragments'
    /// slots, its digest and its verdict stay in one core's cache, and the
    /// ordered maps' leaves and the result arrays are mostly written by one
    /// worker each.
    fn affinity(&self, unit: &Unit, _: &Reassembly) -> Affinity {
        let flow = match unit {
            Unit::Packet(p) => p.flow,
            Unit::Flow(flow, _) => *flow,
        };
        let flows = self.stream.flows().max(1);
        Affinity::Worker(flow as usize * self.workers / flows)
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        unit: &Unit,
        detector: &mut Detector,
        s: &'t Reassembly,
        ctx: &mut ProcessCtx<Unit>,
    ) -> Result<(), TxError> {
        let p = match unit {
            Unit::Flow(flow, data) => return judge(tx, *flow, data, detector, s),
            Unit::Packet(p) => p,
        };
        if p.fragment >= p.fragments {
            return tx.write(&s.verdicts[p.flow as usize], Verdict::Malformed);
        }
        if p.fragments == 1 {
            return self.reassembled(tx, p.flow, self.stream.data(p).to_vec(), detector, s, ctx);
        }
        let (id, n) = (usize::from(p.fragment), usize::from(p.fragments));
        let Some(ptr) = s.map.get(tx, p.flow)? else {
            let slots = (0..n).map(|f| TVar::new(if f == id { p.piece() } else { 0 })).collect();
            let fresh = tx.alloc(Partial { arrived: TVar::new(1), slots })?;
            s.map.insert(tx, p.flow, fresh)?;
            return Ok(());
        };
        // SAFETY: read from the map by this transaction; the reference is
        // not used after `process` returns, and an object unlinked by a
        // committed transaction is reclaimed only once no transaction that
        // could have read it is running.
        let partial = unsafe { ptr.get() };
        let fits = partial.slots.len() == n && tx.read(&partial.slots[id])? == 0;
        let arrived = tx.read(&partial.arrived)? + 1;
        if fits && (arrived as usize) < n {
            tx.write(&partial.slots[id], p.piece())?;
            return tx.write(&partial.arrived, arrived);
        }
        // Complete, or malformed (fragment count differs, fragment repeated):
        // either way the flow leaves the map.
        let mut pieces = Vec::with_capacity(n);
        if fits {
            for (f, slot) in partial.slots.iter().enumerate() {
                pieces.push(if f == id { p.piece() } else { tx.read(slot)? });
            }
        }
        s.map.remove(tx, p.flow)?;
        // SAFETY: allocated by a committed transaction (or this one), linked
        // only from the map entry this transaction just removed, and freed
        // only by the transaction that removes the entry.
        unsafe { tx.free(ptr)? };
        if !fits {
            return tx.write(&s.verdicts[p.flow as usize], Verdict::Malformed);
        }
        let data = assemble(self.stream, &pieces);
        self.reassembled(tx, p.flow, data, detector, s, ctx)
    }
}

/// Runs the pipeline on the skeleton with `threads` workers, one unit per
/// packet (the shuffled stream is the seed units).
///
/// # Errors
///
/// [`AppError::Worklist`] if the skeleton cannot run (zero threads,
/// pinning, a panic).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::app::CommonArgs;
/// use skelaff_stamp_intruder::{MapKind, Stream, Variant, run_sequential, run_skeleton};
///
/// let stream = Stream::generate(10, 4, 300, 1)?;
/// let (d, report) = run_skeleton(&stream, 2, Variant::default(), &CommonArgs::default())?;
/// assert_eq!(d, run_sequential(&stream, MapKind::Rbtree));
/// assert_eq!(report.units as usize, stream.packets.len() + stream.flows());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_skeleton(
    stream: &Stream,
    threads: usize,
    variant: Variant,
    common: &CommonArgs,
) -> Result<(Detection, RunReport), AppError> {
    let shared = Reassembly::new(stream.flows(), variant.map);
    let pipeline = Pipeline { stream, detect_in: variant.detect_in, workers: threads };
    let clock = common.clock.unwrap_or(CLOCK);
    let affinity = common.affinity.unwrap_or(AFFINITY);
    let mut wl = common.builder(threads).clock(clock).affinity_scheduling(affinity).build(&pipeline, &shared)?;
    wl.add_work_units(stream.packets.iter().copied().map(Unit::Packet));
    let report = common.run(&mut wl)?;
    Ok((shared.harvest(), report))
}
