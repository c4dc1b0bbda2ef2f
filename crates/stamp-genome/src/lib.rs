//! STAMP's **genome**: put a gene back together from overlapping segments.
//!
//! A random gene of `-g` nucleotides is cut into at least `-n` segments of
//! `-s` nucleotides starting at random positions (plus the ones needed so
//! that every part of the gene is covered with overlaps, see
//! [`Input::generate`]). The sequencer then runs STAMP's three phases:
//!
//! 1. remove duplicate segments, inserting them all into a shared hash set;
//! 2. for overlap lengths from `-s - 1` down to 1, link every chain end to
//!    a chain start that begins with the end's last characters (hash
//!    tables of the starts' prefixes of that length), merging chains;
//! 3. concatenate the chains into the sequence.
//!
//! # On the skeleton
//!
//! Each parallel phase is one run of the worklist: phase 1's units are
//! chunks of segments, each inserting its segments into the transactional
//! hash set in one transaction (by default skipping the segments its worker
//! already saw committed there: [`Dedup`]); each overlap length of phase 2 is a run
//! whose units are chunks of chain ends, linking in one transaction. Between
//! runs one thread does what STAMP does between its barriers: it lists the
//! distinct segments (sorted, so the entries are numbered the same way
//! whatever the thread count), the chain ends, and the prefixes of the
//! chain starts for the next overlap length (only starts can be linked to,
//! so the table holds only them; STAMP hashes every segment's prefixes once
//! instead). A pass with a single chain left has nothing to link and ends
//! phase 2.
//!
//! # Data
//!
//! STAMP's own: the gene and the segments come from STAMP's Mersenne
//! Twister drawn in STAMP's order ([`Input::generate`]), so the same flags
//! (and `--seed 0`, the default, STAMP's seed) give the same gene and
//! segments as STAMP's C program.
//!
//! # Self-check
//!
//! STAMP's: the reconstructed sequence equals the gene. The result is
//! deterministic: the segments of the inputs used here overlap in a unique
//! way, so every thread count and page policy gives the gene back (a
//! failure prints where the sequence first differs).
//!
//! # Flags
//!
//! STAMP's letters and meanings; the defaults are STAMP's standard input
//! (`-g256 -s16 -n16384`); its large input is `-g16384 -s64 -n16777216`.
//! STAMP's program defaults are `-g16384 -s64 -n4194304`.

mod input;
mod sequencer;

use std::time::Instant;

pub use input::{Input, MAX_SEGMENT, NUCLEOTIDES, pack, unpack};
pub use sequencer::Dedup;

use sequencer::{Sequenced, SequentialBackend, Transactional, sequence};
use skelaff_stamp_core::app::{App, AppError, CommonArgs, Outcome};
use skelaff_stamp_core::check::CheckFailed;
use skelaff_stamp_core::figures::GenomeFigures;

/// The genome application (see the [module docs](self)).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::{App, CommonArgs};
/// use skelaff_stamp_genome::{Genome, GenomeArgs};
///
/// let args = GenomeArgs { gene: 128, segment: 8, number: 512, threads: 2, ..GenomeArgs::default() };
/// let outcome = Genome::run(&args, &CommonArgs::default())?;
/// assert!(outcome.passed(), "{:?}", outcome.check);
/// # Ok::<(), skelaff_stamp_core::AppError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Genome;

/// genome's STAMP flags.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct GenomeArgs {
    /// Length of the gene.
    #[arg(short = 'g', long = "gene", default_value_t = 256)]
    pub gene: usize,
    /// Length of a segment (2..=64).
    #[arg(short = 's', long = "segment", default_value_t = 16)]
    pub segment: usize,
    /// Minimum number of segments (more may be made to cover the gene).
    #[arg(short = 'n', long = "number", default_value_t = 16384)]
    pub number: usize,
    /// Number of threads.
    #[arg(short = 't', long = "threads", default_value_t = 1)]
    pub threads: usize,
    /// Seed of the gene and of the segments.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How phase 1's workers look segments up: remembered (each worker
    /// skips the segments it already knows are in the shared set) or
    /// transactional (every segment in a transaction, as STAMP).
    #[arg(long, value_enum, default_value_t = Dedup::default())]
    pub dedup: Dedup,
}

impl Default for GenomeArgs {
    fn default() -> Self {
        GenomeArgs { gene: 256, segment: 16, number: 16384, threads: 1, seed: 0, dedup: Dedup::default() }
    }
}

/// The longest gene accepted.
pub const MAX_GENE: usize = 1 << 28;
/// The most segments accepted (16 bytes each in memory).
pub const MAX_SEGMENTS: usize = 1 << 28;

impl GenomeArgs {
    /// The generated input.
    ///
    /// # Errors
    ///
    /// [`AppError::Invalid`] for flags out of range.
    pub fn input(&self) -> Result<Input, AppError> {
        let bad = |m: String| Err(AppError::Invalid(m));
        if self.threads == 0 {
            return bad("-t (threads) must be at least 1".into());
        }
        if !(2..=MAX_GENE).contains(&self.gene) {
            return bad(format!("-g (gene length) must be 2..={MAX_GENE} (got {})", self.gene));
        }
        if !(2..=MAX_SEGMENT.min(self.gene)).contains(&self.segment) {
            return bad(format!(
                "-s (segment length) must be 2..={} (at most the gene length and {MAX_SEGMENT}) (got {})",
                MAX_SEGMENT.min(self.gene),
                self.segment
            ));
        }
        if !(1..=MAX_SEGMENTS).contains(&self.number) {
            return bad(format!("-n (segments) must be 1..={MAX_SEGMENTS} (got {})", self.number));
        }
        Ok(Input::generate(self.gene, self.segment, self.number, self.seed))
    }
}

/// Sequences `input` sequentially (the speed baseline): returns the
/// sequence as nucleotide codes (empty for a segment length outside
/// `2..=64`).
///
/// # Examples
///
/// ```
/// use skelaff_stamp_genome::{pack, sequence_sequentially, Input};
///
/// let input = Input::generate(200, 12, 400, 1);
/// assert_eq!(sequence_sequentially(&input), input.gene);
/// // Without the segments that cover position 100, the gene cannot be rebuilt.
/// let covering: Vec<u128> = (89..=100).map(|at| pack(&input.gene[at..at + 12])).collect();
/// let mut cut = input.clone();
/// cut.segments.retain(|k| !covering.contains(k));
/// assert_ne!(sequence_sequentially(&cut), input.gene);
/// ```
pub fn sequence_sequentially(input: &Input) -> Vec<u8> {
    if !(2..=MAX_SEGMENT).contains(&input.segment_length) {
        return Vec::new();
    }
    match sequence(
        &mut SequentialBackend::new(input.gene.len().min(input.segments.len())),
        &input.segments,
        input.segment_length,
    ) {
        Ok(s) => s.sequence,
        Err(_) => Vec::new(),
    }
}

/// Sequences `input` on the skeleton with `threads` workers configured by
/// `common` (its `sequential` flag is ignored): returns the sequence as
/// nucleotide codes.
///
/// # Errors
///
/// [`AppError::Invalid`] for 0 threads or a segment length outside
/// `2..=64`; the skeleton's errors.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::CommonArgs;
/// use skelaff_stamp_genome::{sequence_on_skeleton, Input};
///
/// let input = Input::generate(300, 10, 600, 2);
/// assert_eq!(sequence_on_skeleton(&input, 2, &CommonArgs::default())?, input.gene);
/// # Ok::<(), skelaff_stamp_core::AppError>(())
/// ```
pub fn sequence_on_skeleton(input: &Input, threads: usize, common: &CommonArgs) -> Result<Vec<u8>, AppError> {
    if threads == 0 || !(2..=MAX_SEGMENT).contains(&input.segment_length) {
        return Err(AppError::Invalid(format!(
            "need at least 1 thread (got {threads}) and a segment length in 2..={MAX_SEGMENT} (got {})",
            input.segment_length
        )));
    }
    let mut b = Transactional::new(common, threads, input.gene.len().min(input.segments.len()), Dedup::default());
    Ok(sequence(&mut b, &input.segments, input.segment_length)?.sequence)
}

/// What genome's self-check found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadSequence {
    /// The sequence is not the gene.
    #[error("the sequence ({sequence} nucleotides) differs from the gene ({gene} nucleotides) from position {from} on")]
    Differs {
        /// The sequence's length.
        sequence: usize,
        /// The gene's length.
        gene: usize,
        /// The first position where they differ (or the shorter length,
        /// when one is a prefix of the other).
        from: usize,
    },
}

/// STAMP's check: the sequence equals the gene.
///
/// # Errors
///
/// [`BadSequence::Differs`]: where they first differ.
///
/// # Examples
///
/// A failure, as the run's [`CheckFailed`] holds it and gives it back:
///
/// ```
/// use skelaff_stamp_core::check::CheckFailed;
/// use skelaff_stamp_genome::{self as genome, BadSequence};
///
/// let e = CheckFailed::new("genome", genome::check(b"ACGT", b"ACTT").unwrap_err());
/// assert!(matches!(e.failure::<BadSequence>(), Some(BadSequence::Differs { from: 2, .. })));
/// assert_eq!((e.app(), e.to_string().as_str()),
///     ("genome", "the sequence (4 nucleotides) differs from the gene (4 nucleotides) from position 2 on"));
/// ```
pub fn check(gene: &[u8], sequence: &[u8]) -> Result<String, BadSequence> {
    if gene == sequence {
        return Ok(format!("the sequence equals the gene ({} nucleotides)", gene.len()));
    }
    let from = gene.iter().zip(sequence).position(|(a, b)| a != b).unwrap_or(gene.len().min(sequence.len()));
    Err(BadSequence::Differs { sequence: sequence.len(), gene: gene.len(), from })
}

impl App for Genome {
    const NAME: &'static str = "genome";
    type Args = GenomeArgs;

    /// The large input's gene and segments with a sixteenth of its
    /// segments (`-g16384 -s64 -n1048576`): phase 1 has a million segments
    /// to split over threads, phase 2 sixteen thousand chains.
    fn small() -> GenomeArgs {
        GenomeArgs { gene: 16384, segment: 64, number: 1 << 20, ..GenomeArgs::default() }
    }

    fn threads(args: &GenomeArgs) -> usize {
        args.threads
    }

    fn set_threads(args: &mut GenomeArgs, threads: usize) {
        args.threads = threads;
    }

    fn run(args: &GenomeArgs, common: &CommonArgs) -> Result<Outcome, AppError> {
        let input = args.input()?;
        let s = input.segment_length;
        let mut runs = None;
        let mut prepared = None;
        let (seq, time, report): (Sequenced, _, _) = if common.sequential {
            let start = Instant::now();
            let seq = sequence(&mut SequentialBackend::new(args.gene.min(input.segments.len())), &input.segments, s)?;
            (seq, start.elapsed(), None)
        } else {
            prepared = Some(skelaff_stamp_core::phases::prepare_before_timing(common, args.threads)?);
            let mut b = Transactional::new(common, args.threads, args.gene.min(input.segments.len()), args.dedup);
            let start = Instant::now();
            let seq = sequence(&mut b, &input.segments, s)?;
            let time = start.elapsed();
            runs = Some(b.runs.len());
            (seq, time, b.runs.merged())
        };
        let figures = GenomeFigures {
            runs,
            gene_length: args.gene,
            segment_length: s,
            segments: input.segments.len(),
            unique_segments: seq.unique,
            passes: seq.passes,
            chains: seq.chains,
            sequence_length: seq.sequence.len(),
            sequence_digest: format!("{:016x}", skelaff_stamp_core::phases::digest(&seq.sequence)),
            threads: args.threads,
            dedup: (!common.sequential).then(|| format!("{:?}", args.dedup).to_lowercase()),
        };
        let check = check(&input.gene, &seq.sequence).map_err(|e| CheckFailed::new(Genome::NAME, e));
        Ok(Outcome { app: Genome::NAME, report, time, prepared, check, figures: figures.into() })
    }
}
