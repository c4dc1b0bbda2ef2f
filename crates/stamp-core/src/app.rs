//! What every application shares: the common flags, the outcome of a run,
//! and the `main` of the example binaries and of `skelaff run`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, FromArgMatches, Parser};
use serde::{Serialize, Serializer};
use serde_json::Value;
use skelaff_helper_threads::HelperThreads;
use skelaff_locality::{Profile, Sampling};
use skelaff_numa_alloc::alloc::{self, NumaAlloc};
use skelaff_numa_alloc::{Policy, Topology};
use skelaff_stm::ClockPolicy;
use skelaff_worklist::{
    Builder, Distribution, Helpers, LocalOrder, PagePolicy, RunReport, Skeleton, ThreadMapping, TxAssist, Worklist,
};

use crate::check::{CheckFailed, with_causes};
use crate::figures::Figures;

/// Flags every application takes besides its STAMP flags.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct CommonArgs {
    /// Page policy: auto (SkelAff), first-touch, bind, cyclic, interleave.
    #[arg(long, default_value = "auto")]
    pub policy: PagePolicy,
    /// Helper threads: auto, on, off.
    #[arg(long, default_value = "off")]
    pub helpers: Helpers,
    /// Assisted transactions (STM²: an auxiliary thread validates each
    /// worker's reads): off, on, on+throttle.
    #[arg(long, default_value = "off")]
    pub assist: TxAssist,
    /// Work distribution: shared (one locked queue) or per-node.
    #[arg(long, default_value = "per-node")]
    pub distribution: Distribution,
    /// The order each worker runs the units of its own deque in (per-node
    /// distribution): fifo (oldest first) or lifo (newest first, as
    /// Galois's chunked LIFO). Default: the application's (lifo for yada,
    /// whose new bad triangles lie where the last unit worked; fifo for
    /// the others).
    #[arg(long, value_name = "ORDER")]
    pub local_order: Option<LocalOrder>,
    /// Whether the workers' writing commits move the STM's global clock:
    /// commits (TL2's GV4: every writing commit moves it) or readers (GV5:
    /// commits leave it, and a transaction that reads a newer word moves
    /// it). Default: the application's (readers for vacation and intruder,
    /// commits for the others).
    #[arg(long, value_name = "POLICY")]
    pub clock: Option<ClockPolicy>,
    /// Thread mapping: scatter, compact, none.
    #[arg(long, default_value = "scatter")]
    pub mapping: ThreadMapping,
    /// Affinity scheduling: queue each unit where its data is, for the
    /// applications that say where that is: on the node that holds it
    /// (kmeans: its chunk of points; genome: its chunk of segments;
    /// labyrinth: its pair's source cell) or with the worker that owns it
    /// (intruder: its flow); the others ignore it. `--affinity` alone means
    /// true. Default: the application's (true for intruder, false for the
    /// others).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub affinity: Option<bool>,
    /// Shuffle the seed units with this seed (the paper shuffles inputs); 0 keeps their order.
    #[arg(long, default_value_t = 1)]
    pub shuffle: u64,
    /// With one worker, run its transactions solo (true: the STM's solo
    /// gate; no lock checks, locks or validation) or with the plain protocol
    /// (false, for comparisons).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub solo: bool,
    /// Run the sequential version (one thread, no transactions) instead.
    #[arg(long)]
    pub sequential: bool,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
    /// Record a sampled page-access profile of the parallel run to this
    /// file (`skelaff footprint --profile FILE` reads it).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// With --profile: sample one transactional access in this many.
    #[arg(long, default_value_t = Sampling::DEFAULT.period, value_parser = clap::value_parser!(u32).range(1..))]
    pub sample_period: u32,
    /// With --profile: migrate pages as the run goes (the NUCA study's
    /// scheme applied for real: every 10 ms the 10 hottest misplaced
    /// sampled pages move to the node of their dominant accessor).
    #[arg(long, requires = "profile")]
    pub migrate: bool,
    /// With --profile: Oracle_High applied for real after this many
    /// milliseconds of the parallel run (every misplaced page sampled so far
    /// moves to its dominant accessor's node at once); 0: never. In
    /// programs made of several skeleton runs (kmeans, genome) the time is
    /// summed over the runs.
    #[arg(long, default_value_t = 0, value_name = "MS", requires = "profile", conflicts_with = "migrate")]
    pub oracle_after_ms: u64,
    /// With --profile: as --oracle-after-ms, but once this many units have
    /// committed (summed over the skeleton runs): the same share of the
    /// work whatever each run's speed; 0: never.
    #[arg(
        long,
        default_value_t = 0,
        value_name = "UNITS",
        requires = "profile",
        conflicts_with_all = ["migrate", "oracle_after_ms"]
    )]
    pub oracle_after_units: u64,
    /// With --profile: keep at most this many samples per worker (beyond,
    /// every other one is dropped and the period doubles).
    #[arg(long, default_value_t = Sampling::DEFAULT.capacity, value_parser = parse_capacity)]
    pub sample_capacity: usize,
}

/// A `--sample-capacity` that is not a count of at least one sample.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum BadCapacity {
    #[error("the sample capacity must be at least 1")]
    Zero,
    // clap prints a value parser's error by its `Display` alone: the
    // reason is in the message, not a source.
    #[error("`{given}` is not a number of samples: {reason}")]
    NotANumber { given: String, reason: std::num::ParseIntError },
}

fn parse_capacity(s: &str) -> Result<usize, BadCapacity> {
    match s.parse::<usize>() {
        Ok(0) => Err(BadCapacity::Zero),
        Ok(n) => Ok(n),
        Err(reason) => Err(BadCapacity::NotANumber { given: s.to_owned(), reason }),
    }
}

impl Default for CommonArgs {
    fn default() -> Self {
        CommonArgs {
            policy: PagePolicy::Auto,
            helpers: Helpers::Off,
            assist: TxAssist::Off,
            distribution: Distribution::PerNode,
            local_order: None,
            clock: None,
            mapping: ThreadMapping::Scatter,
            affinity: None,
            shuffle: 1,
            solo: true,
            sequential: false,
            json: false,
            profile: None,
            sample_period: Sampling::DEFAULT.period,
            sample_capacity: Sampling::DEFAULT.capacity,
            migrate: false,
            oracle_after_ms: 0,
            oracle_after_units: 0,
        }
    }
}

impl CommonArgs {
    /// A worklist builder configured by these flags for `threads` workers.
    pub fn builder(&self, threads: usize) -> skelaff_worklist::Builder {
        Builder::new()
            .threads(threads)
            .policy(self.policy)
            .helpers(self.helpers)
            .tx_assist(self.assist)
            .distribution(self.distribution)
            .local_order(self.local_order.unwrap_or_default())
            .clock(self.clock.unwrap_or_default())
            .mapping(self.mapping)
            .affinity_scheduling(self.affinity.unwrap_or(false))
            .shuffle((self.shuffle != 0).then_some(self.shuffle))
            .solo(self.solo)
            .access_profile(self.profile.is_some().then_some(self.sampling()))
            .migration(self.migrate.then(skelaff_locality::MigrationRule::default))
            .oracle(self.oracle_stretch())
    }

    /// The applied oracle's stretch `--oracle-after-ms` or
    /// `--oracle-after-units` asks for (none when both are 0; units when
    /// both are given, which the command line refuses).
    pub fn oracle_stretch(&self) -> Option<skelaff_worklist::OracleStretch> {
        use skelaff_worklist::OracleStretch;
        if self.oracle_after_units > 0 {
            Some(OracleStretch::units(self.oracle_after_units))
        } else {
            (self.oracle_after_ms > 0)
                .then(|| OracleStretch::new(std::time::Duration::from_millis(self.oracle_after_ms)))
        }
    }

    /// The sampling `--sample-period` and `--sample-capacity` ask for.
    pub fn sampling(&self) -> Sampling {
        Sampling { period: self.sample_period, capacity: self.sample_capacity }
    }
}

impl CommonArgs {
    /// Runs `worklist` as `--helpers` asks: the plain [`Worklist::run`]
    /// with `off`, else [`Worklist::run_with`] and the helper threads of
    /// `skelaff-helper-threads` (default configuration: lifespan, log
    /// size and adaptive tuning as that crate documents).
    ///
    /// # Errors
    ///
    /// As [`Worklist::run`].
    pub fn run<S: Skeleton>(&self, worklist: &mut Worklist<'_, S>) -> Result<RunReport, skelaff_worklist::Error>
    where
        S::Unit: Clone,
    {
        self.run_helped_by(worklist, &HelperThreads::default())
    }

    /// Runs `worklist` as [`run`](CommonArgs::run) does, with `helpers` as
    /// the helper threads when `--helpers` asks for them. One
    /// `HelperThreads` given to every run of a program made of several
    /// skeleton runs carries what its timing probe learnt from one run to
    /// the next (see [`Runs::run`](crate::phases::Runs::run)).
    ///
    /// # Errors
    ///
    /// As [`Worklist::run`].
    pub fn run_helped_by<S: Skeleton>(
        &self,
        worklist: &mut Worklist<'_, S>,
        helpers: &HelperThreads,
    ) -> Result<RunReport, skelaff_worklist::Error>
    where
        S::Unit: Clone,
    {
        match self.helpers {
            Helpers::Off => worklist.run(),
            Helpers::On | Helpers::Auto => worklist.run_with(helpers),
        }
    }
}

/// Why an application could not run (its self-check failing is not an
/// error: it is in [`Outcome::check`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// A flag value out of range.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// The skeleton failed (topology, pinning, a panic in the application).
    #[error(transparent)]
    Worklist(#[from] skelaff_worklist::Error),
}

/// What a run of an application produced.
///
/// Serialises (the `--json` line) as `app`, `time_seconds`,
/// `prepared_seconds` (the set-up before the clock, `null` for a
/// sequential run), `check_passed`, `check` (what was verified or what is
/// wrong), `figures` and `report` (the skeleton's, `null` for a
/// sequential run).
#[derive(Debug)]
pub struct Outcome {
    /// The application's name.
    pub app: &'static str,
    /// The skeleton's report (`None` for a sequential run).
    pub report: Option<RunReport>,
    /// Time of the timed phase (the parallel run, or the sequential one).
    pub time: Duration,
    /// Time of the set-up before the clock started, not counted in `time`
    /// ([`prepare_before_timing`](crate::phases::prepare_before_timing):
    /// topology, STM, the worker pool; `None` for a sequential run).
    pub prepared: Option<Duration>,
    /// The self-check: `Ok(what was verified)`, a report line, or
    /// `Err(what is wrong)`, the application's typed failure.
    pub check: Result<String, CheckFailed>,
    /// Application-specific figures.
    pub figures: Figures,
}

impl Outcome {
    /// Whether the self-check passed.
    pub fn passed(&self) -> bool {
        self.check.is_ok()
    }

    /// The outcome as one JSON value (its [`Serialize`] form), for callers
    /// that index into it.
    pub fn to_json(&self) -> Value {
        // Every map of the form is keyed by strings, the one thing
        // `to_value` refuses otherwise.
        serde_json::to_value(self).expect("an outcome serialises to a JSON value")
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            app: &'a str,
            time_seconds: f64,
            prepared_seconds: Option<f64>,
            check_passed: bool,
            check: &'a str,
            figures: &'a Figures,
            report: Option<&'a RunReport>,
        }
        // A failure as its message and causes: the key keeps its string.
        let check = match &self.check {
            Ok(s) => s.clone(),
            Err(e) => e.with_causes(),
        };
        Json {
            app: self.app,
            time_seconds: self.time.as_secs_f64(),
            prepared_seconds: self.prepared.map(|d| d.as_secs_f64()),
            check_passed: self.check.is_ok(),
            check: &check,
            figures: &self.figures,
            report: self.report.as_ref(),
        }
        .serialize(serializer)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: time {:.3} s", self.app, self.time.as_secs_f64())?;
        write!(f, "{}", self.figures)?;
        if let Some(r) = &self.report {
            write!(f, "{r}")?;
        }
        match &self.check {
            Ok(s) => writeln!(f, "{}: check PASSED ({s})", self.app),
            Err(e) => writeln!(f, "{}: check FAILED: {}", self.app, e.with_causes()),
        }
    }
}

/// A STAMP application on the skeleton.
pub trait App {
    /// Its name (`vacation`, `kmeans`, …).
    const NAME: &'static str;
    /// Its STAMP flags.
    type Args: Args + Clone + fmt::Debug + Send + Sync;

    /// The flags of the built-in small input (what `skelaff experiment` runs).
    fn small() -> Self::Args;
    /// The thread count in `args`.
    fn threads(args: &Self::Args) -> usize;
    /// Sets the thread count in `args`.
    fn set_threads(args: &mut Self::Args, threads: usize);
    /// Generates the input, runs, and checks the result.
    ///
    /// # Errors
    ///
    /// [`AppError`] for bad flags or a failed run; a failed self-check is
    /// reported in the outcome.
    fn run(args: &Self::Args, common: &CommonArgs) -> Result<Outcome, AppError>;
}

#[derive(Parser, Debug)]
struct Cli<A: Args> {
    #[command(flatten)]
    app: A,
    #[command(flatten)]
    common: CommonArgs,
}

/// The `main` of an application binary: parses `argv` (program name
/// first), runs, prints the outcome (and a JSON line with `--json`), and
/// exits non-zero when the run fails or the self-check does.
pub fn main_for<A: App>(argv: impl IntoIterator<Item = String>) -> ExitCode {
    main_with_threads::<A>(argv, None)
}

/// [`main_for`] with the thread count set to `threads` (when given) after
/// the flags are parsed, whatever the application calls its thread flag.
pub fn main_with_threads<A: App>(argv: impl IntoIterator<Item = String>, threads: Option<usize>) -> ExitCode {
    let command = <Cli<A::Args> as clap::CommandFactory>::command().name(A::NAME);
    let matches = match command.try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    let mut cli = match Cli::<A::Args>::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(2);
        }
    };
    if let Some(t) = threads {
        A::set_threads(&mut cli.app, t);
    }
    match run_placed::<A>(&cli.app, &cli.common) {
        Ok(outcome) => {
            print!("{outcome}");
            if let Some(path) = &cli.common.profile {
                if let Err(e) = save_profile(&outcome, path) {
                    eprintln!("{}: {}", A::NAME, with_causes(&e));
                    return ExitCode::FAILURE;
                }
            }
            if cli.common.json {
                match serde_json::to_string(&outcome) {
                    Ok(line) => println!("{line}"),
                    Err(e) => {
                        eprintln!("{}: writing the JSON line: {e}", A::NAME);
                        return ExitCode::FAILURE;
                    }
                }
            }
            if outcome.passed() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("{}: {e}", A::NAME);
            ExitCode::FAILURE
        }
    }
}

/// Runs `A` as `common` asks. Under SkelAff (`--policy auto`, with
/// `NumaAlloc` as the global allocator and several nodes) the data the main
/// thread builds before the skeleton runs (the input, the shared tables) is
/// placed cyclically over the nodes too, as the workers' allocations are
/// until they generate units: measured in the emulated machine, the input
/// left where the main thread first touched it put nearly every
/// transactional access on one memory controller under every worker policy
/// (vacation: imbalance 3.9 of 4 on 4x1).
///
/// # Errors
///
/// As [`App::run`], and [`AppError::Worklist`] when the topology cannot be
/// read or the policy set.
pub fn run_placed<A: App>(args: &A::Args, common: &CommonArgs) -> Result<Outcome, AppError> {
    if common.policy != PagePolicy::Auto || common.sequential || !NumaAlloc::is_global() {
        return A::run(args, common);
    }
    let topo = Topology::get().map_err(skelaff_worklist::Error::from)?;
    let nodes = topo.allowed_nodes();
    if nodes.len() < 2 {
        return A::run(args, common);
    }
    let cyclic = Policy::Cyclic { nodes, block: topo.page_size() };
    alloc::with_policy(cyclic, || A::run(args, common)).map_err(skelaff_worklist::Error::from)?
}

/// Why `--profile` could not save the run's access profile.
#[derive(Debug, thiserror::Error)]
enum SaveProfileError {
    #[error("--profile: this run recorded no access profile (a sequential run has none)")]
    NoProfile,
    #[error("--profile: the profile could not be named after the application")]
    Rename(#[source] skelaff_locality::Error),
    #[error("writing the profile")]
    Write(#[source] skelaff_locality::Error),
}

/// Writes the run's access profile (named after the application) to `path`.
fn save_profile(outcome: &Outcome, path: &Path) -> Result<(), SaveProfileError> {
    let Some(p) = outcome.report.as_ref().and_then(|r| r.access_profile.as_ref()) else {
        return Err(SaveProfileError::NoProfile);
    };
    let (mut header, accesses) = p.profile.clone().into_parts();
    header.app = outcome.app.to_owned();
    let profile = Profile::new(header, accesses).map_err(SaveProfileError::Rename)?;
    profile.save(path).map_err(SaveProfileError::Write)?;
    let h = profile.header();
    println!(
        "profile: {} samples of {} transactional accesses (1 in {}), {} pages, in {}",
        profile.accesses().len(),
        h.seen,
        h.sampling.period,
        profile.pages().len(),
        path.display()
    );
    if let Some(e) = &p.attribution_error {
        println!("profile: the pages' nodes are unknown: {e}");
    }
    Ok(())
}

/// An application, type-erased for the CLI's registry.
#[derive(Clone, Copy)]
pub struct Entry {
    /// The application's name.
    pub name: &'static str,
    /// Its `main` (see [`main_for`]).
    pub main: fn(Vec<String>) -> ExitCode,
    /// Its `main` with the thread count given (see [`main_with_threads`]).
    pub main_with_threads: fn(Vec<String>, usize) -> ExitCode,
    /// Runs its small built-in input with `threads` workers and the given
    /// common flags.
    pub run_small: fn(usize, &CommonArgs) -> Result<Outcome, AppError>,
    /// Runs it with its own flags (as on its command line, without the
    /// program name; a thread count among them is replaced by `threads`)
    /// and the given common flags.
    pub run_args: fn(&[String], usize, &CommonArgs) -> Result<Outcome, AppError>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry").field("name", &self.name).finish()
    }
}

impl Entry {
    /// The entry of application `A`.
    pub fn of<A: App>() -> Entry {
        Entry {
            name: A::NAME,
            main: |argv| main_for::<A>(argv),
            main_with_threads: |argv, threads| main_with_threads::<A>(argv, Some(threads)),
            run_small: |threads, common| {
                let mut args = A::small();
                A::set_threads(&mut args, threads);
                run_placed::<A>(&args, common)
            },
            run_args: |argv, threads, common| {
                let command = A::Args::augment_args(clap::Command::new(A::NAME)).no_binary_name(true);
                let bad = |e: clap::Error| AppError::Invalid(format!("{} {}: {e}", A::NAME, argv.join(" ")));
                let matches = command.try_get_matches_from(argv).map_err(bad)?;
                let mut args = A::Args::from_arg_matches(&matches).map_err(bad)?;
                A::set_threads(&mut args, threads);
                A::run(&args, common)
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `CommonArgs` alone, as an application's command line flattens it.
    #[derive(Parser, Debug)]
    struct Flags {
        #[command(flatten)]
        common: CommonArgs,
    }

    fn parse(argv: &[&str]) -> Result<CommonArgs, String> {
        Flags::try_parse_from(std::iter::once("app").chain(argv.iter().copied()))
            .map(|f| f.common)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn bad_capacities_and_unsaved_profiles_say_what_was_wrong() {
        let zero = parse(&["--sample-capacity", "0"]).unwrap_err();
        assert!(zero.contains("the sample capacity must be at least 1"), "{zero}");
        let word = parse(&["--sample-capacity", "lots"]).unwrap_err();
        assert!(word.contains("`lots` is not a number of samples: invalid digit"), "{word}");
        let e = SaveProfileError::Write(skelaff_locality::Error::Migration { reason: "the disk is full".into() });
        let line = with_causes(&e);
        assert!(line.starts_with("writing the profile: ") && line.contains("the disk is full"), "{line}");
    }

    #[test]
    fn the_oracle_s_stretch_is_time_or_units_never_both() {
        use skelaff_locality::Stretch;
        let units = parse(&["--profile", "p", "--oracle-after-units", "300"]).unwrap();
        assert_eq!(units.oracle_stretch().map(|s| s.stretch()), Some(Stretch::Units(300)));
        let ms = parse(&["--profile", "p", "--oracle-after-ms", "40"]).unwrap();
        assert_eq!(ms.oracle_stretch().map(|s| s.stretch()), Some(Stretch::Time(Duration::from_millis(40))));
        assert_eq!(parse(&["--profile", "p"]).unwrap().oracle_stretch().map(|s| s.stretch()), None);
        let both = parse(&["--profile", "p", "--oracle-after-units", "3", "--oracle-after-ms", "4"]).unwrap_err();
        assert!(both.contains("cannot be used with"), "{both}");
        let no_profile = parse(&["--oracle-after-units", "3"]).unwrap_err();
        assert!(no_profile.contains("--profile"), "{no_profile}");
        let with_migration = parse(&["--profile", "p", "--migrate", "--oracle-after-units", "3"]).unwrap_err();
        assert!(with_migration.contains("cannot be used with"), "{with_migration}");
        let bad = parse(&["--profile", "p", "--oracle-after-units", "a third"]).unwrap_err();
        assert!(bad.contains("--oracle-after-units"), "{bad}");
    }

    #[test]
    fn affinity_alone_means_true_and_takes_a_bool() {
        assert_eq!(parse(&[]).unwrap().affinity, None, "the application decides");
        assert_eq!(parse(&["--affinity"]).unwrap().affinity, Some(true));
        let then_a_flag = parse(&["--affinity", "--shuffle", "0"]).unwrap();
        assert_eq!((then_a_flag.affinity, then_a_flag.shuffle), (Some(true), 0));
        assert_eq!(parse(&["--affinity", "false"]).unwrap().affinity, Some(false));
        assert_eq!(parse(&["--affinity=true", "--shuffle", "0"]).unwrap().affinity, Some(true));
        let bad = parse(&["--affinity", "sometimes"]).unwrap_err();
        assert!(bad.contains("sometimes") && bad.contains("true"), "{bad}");
    }
}
