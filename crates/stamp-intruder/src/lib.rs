//! STAMP's **intruder**: signature-based network intrusion detection.
//!
//! A generator makes `-n` flows, `-a` percent of them attacks (a word of the
//! attack dictionary) and the rest random printable payloads of up to `-l`
//! bytes, splits each flow into packets and shuffles them all (seed `-s`).
//! Each packet then goes through capture (taking it from the stream),
//! reassembly (a transactional map from flow id to the fragments received
//! so far; the packet that completes a flow removes it and concatenates its
//! fragments) and detection (the lower-cased payload against the
//! dictionary).
//!
//! On the skeleton a work-unit is one packet, and taking it from the pool
//! is the capture. The reassembly map is a transactional B+tree
//! (`--map btree`, the default), a red-black tree as STAMP's
//! (`--map rbtree`) or a hash map (`--map hash`). A completed flow is checked in a new unit by default
//! (`--detect-in new-unit`; see [`DetectIn`] for why), or in the same
//! transaction (`--detect-in same-unit`).
//!
//! The self-check ([`Stream::check`]): every flow reassembled exactly once
//! into its original payload, nothing left in the map, and the flagged
//! flows exactly the attack flows the generator made. The set of flagged
//! flows is a function of the input alone, so it is the same for every
//! policy, distribution and thread count.
//!
//! The generator is STAMP's: its Mersenne twister (MT19937) seeded as
//! STAMP seeds it, its dictionary, and its draws in its order (attack or
//! not, the word or the payload, the packet count, then its own shuffle).
//! The same `-a -l -n -s` therefore give the C program's packets in the
//! C program's order, and the number of attack flows matches the
//! `Num attack` and `Num found` STAMP prints.

mod detector;
mod pipeline;
mod stream;

use std::time::Instant;

use clap::value_parser;

pub use detector::{Detector, SIGNATURES};
pub use pipeline::{
    AFFINITY, BadDetection, CLOCK, DetectIn, Detection, FlowProblem, MapKind, Variant, Verdict, run_sequential,
    run_skeleton,
};
pub use stream::{Packet, Stream, StreamError, digest};

use skelaff_stamp_core::app::{App, AppError, CommonArgs, Outcome};
use skelaff_stamp_core::check::CheckFailed;
use skelaff_stamp_core::figures::IntruderFigures;

/// The application (see the [module docs](self)).
#[derive(Debug, Clone, Copy)]
pub struct Intruder;

/// STAMP's intruder flags.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct IntruderArgs {
    /// Percent of flows that are attacks.
    #[arg(short = 'a', value_name = "PERCENT", default_value_t = 10, value_parser = value_parser!(u32).range(0..=100))]
    pub attack: u32,
    /// Maximum length in bytes of a random payload (and so of its packet count).
    #[arg(short = 'l', value_name = "BYTES", default_value_t = 4, value_parser = value_parser!(u32).range(1..=65535))]
    pub length: u32,
    /// Number of flows.
    #[arg(short = 'n', value_name = "FLOWS", default_value_t = 2048, value_parser = value_parser!(u32).range(1..))]
    pub flows: u32,
    /// Seed of the stream generator.
    #[arg(short = 's', value_name = "SEED", default_value_t = 1)]
    pub seed: u64,
    /// Number of worker threads.
    #[arg(short = 't', value_name = "THREADS", default_value_t = 1, value_parser = value_parser!(u32).range(1..=4096))]
    pub threads: u32,
    /// Where a reassembled flow is checked: in a new work-unit or in the
    /// unit that completed it.
    #[arg(long, value_enum, default_value_t = DetectIn::NewUnit)]
    pub detect_in: DetectIn,
    /// The reassembly map: btree, rbtree (STAMP's) or hash.
    #[arg(long, value_enum, default_value_t = MapKind::default())]
    pub map: MapKind,
}

impl IntruderArgs {
    /// The pipeline these flags ask for.
    pub fn variant(&self) -> Variant {
        Variant { detect_in: self.detect_in, map: self.map }
    }
}

impl Default for IntruderArgs {
    /// The flags' defaults: `-a10 -l4 -n2048 -s1 -t1`, STAMP's simulator input.
    fn default() -> Self {
        IntruderArgs {
            attack: 10,
            length: 4,
            flows: 2048,
            seed: 1,
            threads: 1,
            detect_in: DetectIn::NewUnit,
            map: MapKind::default(),
        }
    }
}

impl App for Intruder {
    const NAME: &'static str = "intruder";
    type Args = IntruderArgs;

    /// `-a10 -l16 -n4096 -s1`: about 19 000 packets and 4 000 detection
    /// units, a few milliseconds at one worker. The flags' default
    /// (`-a10 -l4 -n2048`, about 3 600 packets) is so short that a second
    /// worker's start-up is a visible part of it.
    fn small() -> IntruderArgs {
        IntruderArgs { length: 16, flows: 4096, ..IntruderArgs::default() }
    }

    fn threads(args: &IntruderArgs) -> usize {
        args.threads as usize
    }

    fn set_threads(args: &mut IntruderArgs, threads: usize) {
        args.threads = u32::try_from(threads).unwrap_or(u32::MAX);
    }

    fn run(args: &IntruderArgs, common: &CommonArgs) -> Result<Outcome, AppError> {
        let stream = Stream::generate(args.attack, args.length, args.flows, args.seed)
            .map_err(|e| AppError::Invalid(e.to_string()))?;
        let mut prepared = None;
        let (detection, report, time) = if common.sequential {
            let t = Instant::now();
            let d = run_sequential(&stream, args.map);
            (d, None, t.elapsed())
        } else {
            prepared = Some(skelaff_stamp_core::phases::prepare_before_timing(common, args.threads as usize)?);
            let (d, report) = run_skeleton(&stream, args.threads as usize, args.variant(), common)?;
            let wall = report.wall;
            (d, Some(report), wall)
        };
        let name = |v: Option<clap::builder::PossibleValue>| v.map(|v| v.get_name().to_owned());
        let figures = IntruderFigures {
            flows: stream.flows(),
            packets: stream.packets.len(),
            attacks_generated: stream.attacks().len(),
            attacks_injected: stream.injected,
            flagged: detection.flagged().len(),
            threads: if common.sequential { 1 } else { args.threads },
            sequential: common.sequential,
            detect_in: name(clap::ValueEnum::to_possible_value(&args.detect_in)),
            map: name(clap::ValueEnum::to_possible_value(&args.map)),
        };
        let check = stream.check(&detection).map_err(|e| CheckFailed::new(Self::NAME, e));
        Ok(Outcome { app: Self::NAME, report, time, prepared, check, figures: figures.into() })
    }
}
