//! The sequencer (STAMP's `sequencer.c`), written once over [`Backend`]:
//! the transactional backend runs its phases on the skeleton, the
//! sequential one in plain loops.

use std::collections::HashMap;
use std::collections::HashSet;

use skelaff_stm::collections::FxBuildHasher;
use skelaff_stm::{THashMap, TVar, TxError, TxOps};
use skelaff_worklist::{Affinity, ProcessCtx, Skeleton, WorkerInfo};

use super::input::{mask, unpack};
use skelaff_stamp_core::app::{AppError, CommonArgs};
use skelaff_stamp_core::phases::Runs;

/// "No entry" in a link field.
const NONE: u64 = u32::MAX as u64;

/// The fields of a construct entry (STAMP's `constructEntry_t`): one per
/// unique segment, linked into chains of overlapping segments.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field {
    /// 1 while the entry starts a chain (no segment is linked before it).
    IsStart = 0,
    /// For a chain's last entry: its chain's first entry.
    Start,
    /// For a chain's first entry: its chain's last entry.
    End,
    /// The entry linked after this one, or `NONE`.
    Next,
    /// How many characters this entry shares with the next.
    Overlap,
    /// For a chain's first entry: the length of the chain's sequence.
    Length,
}

const FIELDS: usize = 6;

/// The entries' fields, read and written inside a pass's transactions.
pub(crate) trait Links {
    fn get(&mut self, i: u64, f: Field) -> Result<u64, TxError>;
    fn set(&mut self, i: u64, f: Field, v: u64) -> Result<(), TxError>;
}

/// The prefixes of length `overlap` of the entries that start chains,
/// each with the entries that have it, in entry order.
pub(crate) type StartTable = HashMap<u128, Vec<u32>, FxBuildHasher>;

/// Tries to append, after chain end `e`, a chain whose first entry begins
/// with `e`'s last `overlap` characters (the candidates all do), skipping
/// `e`'s own chain. Returns whether it linked one (STAMP's step 2b, for
/// one end).
pub(crate) fn link_end<L: Links>(l: &mut L, e: u64, candidates: &[u32], overlap: u64) -> Result<bool, TxError> {
    for &x in candidates {
        let x = u64::from(x);
        if l.get(x, Field::IsStart)? == 0 || l.get(e, Field::Start)? == x {
            continue;
        }
        l.set(x, Field::IsStart, 0)?;
        let x_end = l.get(x, Field::End)?;
        let e_start = l.get(e, Field::Start)?;
        l.set(x_end, Field::Start, e_start)?;
        l.set(e, Field::Next, x)?;
        l.set(e_start, Field::End, x_end)?;
        l.set(e, Field::Overlap, overlap)?;
        let length = l.get(e_start, Field::Length)? + l.get(x, Field::Length)? - overlap;
        l.set(e_start, Field::Length, length)?;
        return Ok(true);
    }
    Ok(false)
}

/// A fresh entry `i`: a chain of one segment of length `s`.
fn fresh(i: u64, s: u64) -> [u64; FIELDS] {
    [1, i, i, NONE, 0, s]
}

/// One way to run the sequencer's phases.
pub(crate) trait Backend {
    /// Phase 1: the distinct segments, sorted.
    fn unique(&mut self, segments: &[u128]) -> Result<Vec<u128>, AppError>;
    /// Makes one fresh entry per distinct segment.
    fn init_entries(&mut self, n: usize, s: usize);
    /// A field, read between phases (no transaction runs).
    fn field(&self, i: u32, f: Field) -> u64;
    /// Phase 2, for one overlap length: tries to link every chain end of
    /// `ends` to a chain start of `table`.
    fn pass(&mut self, keys: &[u128], ends: &[u32], table: &StartTable, overlap: usize) -> Result<(), AppError>;
}

/// What the sequencer produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sequenced {
    pub(crate) sequence: Vec<u8>,
    pub(crate) unique: usize,
    pub(crate) passes: usize,
    pub(crate) chains: usize,
}

/// Runs the three phases: remove duplicate segments; for overlap lengths
/// from `s - 1` down to 1, link chain ends to chain starts that begin with
/// their last characters; then concatenate the chains.
pub(crate) fn sequence<B: Backend>(b: &mut B, segments: &[u128], s: usize) -> Result<Sequenced, AppError> {
    let keys = b.unique(segments)?;
    let u = keys.len() as u32;
    b.init_entries(keys.len(), s);
    let mut passes = 0;
    for overlap in (1..s).rev() {
        let starts: Vec<u32> = (0..u).filter(|&i| b.field(i, Field::IsStart) == 1).collect();
        if starts.len() <= 1 {
            // One chain: every end's only candidate is its own chain's start.
            break;
        }
        let ends: Vec<u32> = (0..u).filter(|&i| b.field(i, Field::Next) == NONE).collect();
        let mut table = StartTable::default();
        for &x in &starts {
            table.entry(keys[x as usize] >> (2 * (s - overlap))).or_default().push(x);
        }
        b.pass(&keys, &ends, &table, overlap)?;
        passes += 1;
    }
    // Phase 3: every chain, in entry order, its entries' non-overlapping parts.
    let mut sequence = Vec::new();
    let mut chains = 0;
    for i in (0..u).filter(|&i| b.field(i, Field::IsStart) == 1) {
        chains += 1;
        let mut e = u64::from(i);
        let mut steps = 0;
        while e != NONE && steps <= u {
            let own = s - b.field(e as u32, Field::Overlap) as usize;
            sequence.extend(unpack(keys[e as usize], s).take(own));
            e = b.field(e as u32, Field::Next);
            steps += 1;
        }
    }
    Ok(Sequenced { sequence, unique: keys.len(), passes, chains })
}

/// The sequential backend: a hash set and plain arrays.
#[derive(Debug, Default)]
pub(crate) struct SequentialBackend {
    /// Initial capacity of the hash set of phase 1.
    capacity: usize,
    entries: Vec<[u64; FIELDS]>,
}

impl SequentialBackend {
    /// `capacity`: the initial size of the hash set of phase 1 (STAMP sizes
    /// it by the gene length).
    pub(crate) fn new(capacity: usize) -> Self {
        SequentialBackend { capacity, entries: Vec::new() }
    }
}

struct SequentialLinks<'a>(&'a mut [[u64; FIELDS]]);

impl Links for SequentialLinks<'_> {
    #[inline]
    fn get(&mut self, i: u64, f: Field) -> Result<u64, TxError> {
        Ok(self.0[i as usize][f as usize])
    }
    #[inline]
    fn set(&mut self, i: u64, f: Field, v: u64) -> Result<(), TxError> {
        self.0[i as usize][f as usize] = v;
        Ok(())
    }
}

impl Backend for SequentialBackend {
    fn unique(&mut self, segments: &[u128]) -> Result<Vec<u128>, AppError> {
        // Sized like STAMP's (by the gene length), not by the number of
        // segments, which may be a thousand times the distinct ones.
        let mut set: HashSet<u128, FxBuildHasher> =
            HashSet::with_capacity_and_hasher(self.capacity, FxBuildHasher::default());
        for &k in segments {
            set.insert(k);
        }
        let mut keys: Vec<u128> = set.into_iter().collect();
        keys.sort_unstable();
        Ok(keys)
    }

    fn init_entries(&mut self, n: usize, s: usize) {
        self.entries = (0..n as u64).map(|i| fresh(i, s as u64)).collect();
    }

    fn field(&self, i: u32, f: Field) -> u64 {
        self.entries[i as usize][f as usize]
    }

    fn pass(&mut self, keys: &[u128], ends: &[u32], table: &StartTable, overlap: usize) -> Result<(), AppError> {
        let mut links = SequentialLinks(&mut self.entries);
        for &e in ends {
            if let Some(c) = table.get(&(keys[e as usize] & mask(overlap))) {
                let _ = link_end(&mut links, u64::from(e), c, overlap as u64);
            }
        }
        Ok(())
    }
}

/// Segments per unit of phase 1 when every one is looked up in the
/// transaction.
pub(crate) const UNIQUE_CHUNK: usize = 256;
/// Segments per unit of phase 1 when workers remember: most lookups are
/// private ones of a few nanoseconds, so larger units keep the skeleton's
/// per-unit cost (taking the unit, starting and committing the
/// transaction) from dominating.
pub(crate) const REMEMBERED_CHUNK: usize = 1024;
/// Chain ends per unit of phase 2.
pub(crate) const LINK_CHUNK: usize = 16;

/// The transactional backend: phase 1 and every pass of phase 2 are runs
/// of the skeleton.
pub(crate) struct Transactional<'a> {
    common: &'a CommonArgs,
    threads: usize,
    buckets: usize,
    dedup: Dedup,
    entries: Vec<[TVar<u64>; FIELDS]>,
    pub(crate) runs: Runs,
}

impl<'a> Transactional<'a> {
    /// `buckets`: the size of the hash set of phase 1 (STAMP sizes it by
    /// the gene length; the distinct segments are at most that many, and at
    /// most as many as the segments).
    pub(crate) fn new(common: &'a CommonArgs, threads: usize, buckets: usize, dedup: Dedup) -> Self {
        Transactional { common, threads, buckets, dedup, entries: Vec::new(), runs: Runs::default() }
    }
}

/// How phase 1 on the skeleton looks a segment up in the shared set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Dedup {
    /// Each worker remembers, in a private hash set, the segments that its
    /// committed transactions found in the shared set or put there, and
    /// looks up only the others in a transaction. The set only grows
    /// during phase 1, so a segment once in it stays in it and the
    /// skipped insert would have changed nothing. Most segments are
    /// duplicates (1,000 copies of each on STAMP's large input), so most
    /// lookups become private ones, as in the sequential version; the
    /// shared set ends the same. Each worker's private set holds at most
    /// the distinct segments (16 bytes each). The default.
    #[default]
    Remembered,
    /// Every segment is looked up (and inserted if absent) in the unit's
    /// transaction, as STAMP does.
    Transactional,
}

impl Dedup {
    /// Segments per unit of phase 1.
    fn chunk(self) -> usize {
        match self {
            Dedup::Remembered => REMEMBERED_CHUNK,
            Dedup::Transactional => UNIQUE_CHUNK,
        }
    }
}

/// Phase 1 on the skeleton: a unit inserts a chunk of segments into the
/// shared hash set (STAMP's `TMHASHTABLE_INSERT` of `CHUNK_STEP1`
/// segments per transaction), skipping those its worker remembers
/// ([`Dedup`]).
struct Unique<'a> {
    segments: &'a [u128],
    dedup: Dedup,
}

/// A worker of phase 1: the segments known to be in the shared set, and
/// those the running attempt looked up (remembered once it commits).
#[derive(Default)]
struct Known {
    in_set: HashSet<u128, FxBuildHasher>,
    looked_up: Vec<u128>,
}

impl Skeleton for Unique<'_> {
    type Unit = u32;
    type Shared = THashMap<u128, ()>;
    type PerWorker = Known;

    fn init_worker(&self, _: &THashMap<u128, ()>, _: &WorkerInfo) -> Known {
        Known::default()
    }

    /// The chunk of segments the unit inserts.
    fn affinity(&self, &first: &u32, _: &THashMap<u128, ()>) -> Affinity {
        self.segments.get(first as usize).map_or(Affinity::Anywhere, Affinity::of)
    }

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &first: &u32,
        known: &mut Known,
        set: &'t THashMap<u128, ()>,
        _: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        let first = first as usize;
        known.looked_up.clear();
        let remember = self.dedup == Dedup::Remembered;
        for &k in &self.segments[first..(first + self.dedup.chunk()).min(self.segments.len())] {
            if remember {
                if known.in_set.contains(&k) {
                    continue;
                }
                known.looked_up.push(k);
            }
            // Most segments are duplicates: look first, insert when absent.
            if !set.contains(tx, &k)? {
                set.insert(tx, k, ())?;
            }
        }
        Ok(())
    }

    /// Every segment the committed transaction looked up is in the set now.
    fn committed(&self, _: &u32, known: &mut Known, _: &THashMap<u128, ()>) {
        known.in_set.extend(known.looked_up.drain(..));
    }
}

struct TxLinks<'a, 't, X> {
    tx: &'a mut X,
    entries: &'t [[TVar<u64>; FIELDS]],
}

impl<'t, X: TxOps<'t>> Links for TxLinks<'_, 't, X> {
    #[inline]
    fn get(&mut self, i: u64, f: Field) -> Result<u64, TxError> {
        self.tx.read(&self.entries[i as usize][f as usize])
    }
    #[inline]
    fn set(&mut self, i: u64, f: Field, v: u64) -> Result<(), TxError> {
        self.tx.write(&self.entries[i as usize][f as usize], v)
    }
}

/// One pass of phase 2 on the skeleton: a unit tries to link a chunk of
/// chain ends (STAMP runs one transaction per candidate tried).
struct LinkPass<'a> {
    keys: &'a [u128],
    ends: &'a [u32],
    table: &'a StartTable,
    overlap: usize,
}

impl Skeleton for LinkPass<'_> {
    type Unit = u32;
    type Shared = Vec<[TVar<u64>; FIELDS]>;
    type PerWorker = ();

    fn init_worker(&self, _: &Self::Shared, _: &WorkerInfo) {}

    fn process<'t, X: TxOps<'t>>(
        &'t self,
        tx: &mut X,
        &first: &u32,
        _: &mut (),
        entries: &'t Self::Shared,
        _: &mut ProcessCtx<u32>,
    ) -> Result<(), TxError> {
        let first = first as usize;
        let mut links = TxLinks { tx, entries };
        for &e in &self.ends[first..(first + LINK_CHUNK).min(self.ends.len())] {
            if let Some(c) = self.table.get(&(self.keys[e as usize] & mask(self.overlap))) {
                link_end(&mut links, u64::from(e), c, self.overlap as u64)?;
            }
        }
        Ok(())
    }
}

fn unit_starts(len: usize, chunk: usize) -> impl Iterator<Item = u32> {
    (0..len).step_by(chunk).map(|i| i as u32)
}

impl Backend for Transactional<'_> {
    fn unique(&mut self, segments: &[u128]) -> Result<Vec<u128>, AppError> {
        let set = THashMap::with_buckets(self.buckets);
        let skel = Unique { segments, dedup: self.dedup };
        let mut wl = self.runs.builder(self.common, self.threads).build(&skel, &set)?;
        wl.add_work_units(unit_starts(segments.len(), self.dedup.chunk()));
        self.runs.run(self.common, &mut wl)?;
        drop(wl);
        // The run is over and the set is this thread's alone: its entries
        // are taken out without a transaction (one that read them all
        // logged a read per bucket and entry).
        let mut keys: Vec<u128> = set.into_iter().map(|(k, ())| k).collect();
        keys.sort_unstable();
        Ok(keys)
    }

    fn init_entries(&mut self, n: usize, s: usize) {
        self.entries = (0..n as u64).map(|i| fresh(i, s as u64).map(TVar::new)).collect();
    }

    fn field(&self, i: u32, f: Field) -> u64 {
        self.entries[i as usize][f as usize].load()
    }

    fn pass(&mut self, keys: &[u128], ends: &[u32], table: &StartTable, overlap: usize) -> Result<(), AppError> {
        let skel = LinkPass { keys, ends, table, overlap };
        let mut wl = self.runs.builder(self.common, self.threads).build(&skel, &self.entries)?;
        wl.add_work_units(unit_starts(ends.len(), LINK_CHUNK));
        self.runs.run(self.common, &mut wl)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::input::pack;
    use super::*;

    fn codes(s: &str) -> Vec<u8> {
        s.bytes().map(|b| b"acgt".iter().position(|&n| n == b).unwrap() as u8).collect()
    }

    fn run_plain(segments: &[&str]) -> Vec<u8> {
        let s = segments[0].len();
        let keys: Vec<u128> = segments.iter().map(|x| pack(&codes(x))).collect();
        sequence(&mut SequentialBackend::new(16), &keys, s).unwrap().sequence
    }

    #[test]
    fn reconstructs_small_genes() {
        // STAMP's sequencer tests: plain, aliasing and non-overlapping cases.
        assert_eq!(run_plain(&["atcg", "gcag", "tcgg", "cagc", "gatc"]), codes("gatcggcagc"));
        assert_eq!(run_plain(&["aaa", "aag", "agc"]), codes("aaagc"));
        assert_eq!(run_plain(&["aaac", "aaag", "aaat"]), codes("aaacaaagaaat"));
        assert_eq!(
            run_plain(&["ttggctac", "tggctacg", "ggctacgt", "gctacgta", "ctacgtat", "ctacgtat"]),
            codes("ttggctacgtat")
        );
    }
}
