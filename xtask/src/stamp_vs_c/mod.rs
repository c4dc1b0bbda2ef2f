//! `cargo xtask stamp-vs-c`: every STAMP application measured side by side
//! with STAMP's own C programs (sequential, and on TinySTM).
//!
//! `build` compiles TinySTM, STAMP's sequential and STM programs (in
//! copies under `target/stamp-vs-c/`) and skelaff's release examples;
//! `run` times, in interleaved rounds, C sequential, C on TinySTM at
//! 1..N threads, skelaff sequential and skelaff at 1..N threads on each
//! workload (STAMP's standard inputs, or its simulator inputs with
//! `--small`), checks both sides' self-checks, and prints the table of
//! medians and ratios (and JSON with `--json` / `--out`); `table` merges
//! the JSON of several runs into one table; `all` builds, then runs.

mod build;
mod parse;
mod workloads;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use clap::{Args, Subcommand};
use skelaff_stamp::peer::{Comparison, Sample, Side};

use build::{CPrograms, Sources, build_c, build_skelaff};
use workloads::{Input, SIMULATOR, STANDARD, Workload};

/// The side-by-side comparison with STAMP's C programs on TinySTM.
#[derive(Debug, Args)]
pub(crate) struct StampVsC {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Build TinySTM, STAMP's programs and skelaff's examples.
    Build(SourceArgs),
    /// Time both sides (needs `build` first).
    Run(RunArgs),
    /// Build, then run.
    All {
        /// TinySTM's source tree (default: $TINYSTM_SRC, or peers/tinystm in an ancestor of the workspace).
        #[arg(long)]
        tinystm: Option<PathBuf>,
        // `--stamp` and `--skelaff-bin` are the run's, used by the build too
        // (flattening `SourceArgs` beside them gave two arguments each of
        // those names, which clap refuses: `all` panicked in debug builds).
        #[command(flatten)]
        run: RunArgs,
    },
    /// Merge the JSON of several runs into one table.
    Table {
        /// The JSON files (`run --out`).
        files: Vec<PathBuf>,
        /// Print the merged JSON as the last line.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
struct SourceArgs {
    /// STAMP's source tree (default: $STAMP_SRC, or peers/stamp in an ancestor of the workspace).
    #[arg(long)]
    stamp: Option<PathBuf>,
    /// TinySTM's source tree (default: $TINYSTM_SRC, or peers/tinystm in an ancestor of the workspace).
    #[arg(long)]
    tinystm: Option<PathBuf>,
    /// Use the skelaff examples already in this directory instead of building them.
    #[arg(long)]
    skelaff_bin: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// STAMP's simulator inputs instead of its standard ones.
    #[arg(long)]
    small: bool,
    /// The most threads: each side runs at 1..=N.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: u32,
    /// Interleaved rounds (medians of this many runs).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: u32,
    /// Workloads to run (default: all): vacation-low, vacation-high, kmeans-low, kmeans-high, intruder, genome, labyrinth, yada.
    #[arg(long, value_delimiter = ',')]
    workloads: Vec<String>,
    /// Only one side's programs, skelaff's or C's (default: both).
    #[arg(long)]
    only: Option<String>,
    /// Where STAMP's input files are: DIR/APP/FILE[.gz] (default: the STAMP tree's APP/inputs/).
    #[arg(long)]
    inputs: Option<PathBuf>,
    /// STAMP's source tree, for its inputs (as for `build`; `all` also builds from it).
    #[arg(long)]
    stamp: Option<PathBuf>,
    /// skelaff's example binaries (default: target/release/examples; given to `all`, they are not built).
    #[arg(long)]
    skelaff_bin: Option<PathBuf>,
    /// Seconds after which one run is stopped (and the comparison fails).
    #[arg(long, default_value_t = 900)]
    timeout: u64,
    /// Also write the JSON to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the JSON as the last line.
    #[arg(long)]
    json: bool,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_owned()
}

fn work() -> PathBuf {
    root().join("target/stamp-vs-c")
}

/// `cargo xtask stamp-vs-c ARGS`.
pub(crate) fn main(cli: StampVsC) -> Result<()> {
    match cli.task {
        Task::Build(s) => {
            build_all(&s)?;
            Ok(())
        }
        Task::Run(r) => run(&r).map(|_| ()),
        Task::All { tinystm, run: mut r } => {
            let sources = SourceArgs { stamp: r.stamp.clone(), tinystm, skelaff_bin: r.skelaff_bin.clone() };
            let bin = build_all(&sources)?;
            r.skelaff_bin.get_or_insert(bin);
            run(&r).map(|_| ())
        }
        Task::Table { files, json } => {
            let mut all = Comparison::default();
            for f in &files {
                let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
                let c: Comparison = serde_json::from_str(&text).with_context(|| format!("{}", f.display()))?;
                // skelaff-stamp's `merge` says in words why two runs do not merge.
                all.merge(c).map_err(|e| anyhow!("merging {}: {e}", f.display()))?;
            }
            print!("{all}");
            if json {
                println!("{}", serde_json::to_string(&all).context("writing the merged comparison as JSON")?);
            }
            Ok(())
        }
    }
}

fn sources(stamp: Option<PathBuf>, tinystm: Option<PathBuf>) -> Result<Sources> {
    let found = Sources::find(&root());
    let stamp = stamp.or_else(|| found.as_ref().map(|s| s.stamp.clone()));
    let tinystm = tinystm.or_else(|| found.as_ref().map(|s| s.tinystm.clone()));
    match (stamp, tinystm) {
        (Some(stamp), Some(tinystm)) => Ok(Sources { stamp, tinystm }),
        _ => Err(anyhow!("give --stamp DIR and --tinystm DIR (or set STAMP_SRC and TINYSTM_SRC)")),
    }
}

fn build_all(s: &SourceArgs) -> Result<PathBuf> {
    let src = sources(s.stamp.clone(), s.tinystm.clone())?;
    let start = Instant::now();
    build_c(&src, &work())?;
    eprintln!("stamp-vs-c: built TinySTM and STAMP's programs in {:.0?}", start.elapsed());
    match &s.skelaff_bin {
        Some(b) => Ok(b.clone()),
        None => {
            let b = build_skelaff(&root())?;
            eprintln!("stamp-vs-c: built skelaff's examples ({:.0?} in all)", start.elapsed());
            Ok(b)
        }
    }
}

/// The input file `name` of `app`, decompressed under the work directory.
fn input_file(app: &str, name: &str, dirs: &[PathBuf]) -> Result<PathBuf> {
    let out = work().join("inputs").join(app).join(name);
    if out.is_file() {
        return Ok(out);
    }
    for d in dirs {
        let plain = d.join(app).join(name);
        let gz = d.join(app).join(format!("{name}.gz"));
        if plain.is_file() || gz.is_file() {
            let text = if plain.is_file() {
                std::fs::read(&plain).with_context(|| format!("reading {}", plain.display()))?
            } else {
                let f = std::fs::File::open(&gz).with_context(|| format!("opening {}", gz.display()))?;
                let mut v = Vec::new();
                flate2::read::MultiGzDecoder::new(f)
                    .read_to_end(&mut v)
                    .with_context(|| format!("decompressing {}", gz.display()))?;
                v
            };
            let dir = out.parent().expect("a path joined to a name has a parent");
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            std::fs::write(&out, text).with_context(|| format!("writing {}", out.display()))?;
            return Ok(out);
        }
    }
    let tried: Vec<String> = dirs.iter().map(|d| d.join(app).join(name).display().to_string()).collect();
    Err(anyhow!("input {name} of {app} not found (tried {}, each also with .gz)", tried.join(", ")))
}

/// The `-i` argument of a workload, if it reads a file.
fn input_arg(w: &Workload, dirs: &[PathBuf]) -> Result<Option<PathBuf>> {
    match w.input {
        Input::Generated => Ok(None),
        Input::File(name) => input_file(w.app, name, dirs).map(Some),
        Input::Mesh(prefix) => {
            let mut node = None;
            for ext in ["node", "ele", "poly"] {
                let f = input_file(w.app, &format!("{prefix}.{ext}"), dirs)?;
                node.get_or_insert(f);
            }
            let node = node.expect("three files");
            Ok(Some(node.with_file_name(prefix)))
        }
    }
}

/// One configuration of one workload.
#[derive(Debug, Clone, Copy)]
struct Config {
    side: Side,
    threads: Option<u32>,
}

fn command(w: &Workload, cfg: Config, input: Option<&Path>, c: &CPrograms, bin: &Path) -> Command {
    let mut cmd = match cfg.side {
        Side::C => Command::new(c.binary(w.app, cfg.threads.is_some())),
        Side::Skelaff => Command::new(bin.join(w.app)),
    };
    cmd.args(w.flags);
    if let Some(i) = input {
        cmd.arg("-i").arg(i);
    }
    cmd.arg(format!("{}{}", w.thread_flag, cfg.threads.unwrap_or(1)));
    if cfg.side == Side::Skelaff {
        if cfg.threads.is_none() {
            cmd.arg("--sequential");
        }
        cmd.arg("--json");
    }
    cmd
}

/// Runs `cmd` to its end (or `timeout`).
fn execute(mut cmd: Command, timeout: Duration) -> Result<Finished> {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().with_context(|| format!("waiting for {what}"))? {
            break s;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{what}: still running after {timeout:?}; stopped");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Ok(Finished { status, stdout, stderr })
}

/// How a program ended, and what it printed.
struct Finished {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map_or_else(|_| "?".into(), |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

fn run(r: &RunArgs) -> Result<Comparison> {
    let table: &[Workload] = if r.small { &SIMULATOR } else { &STANDARD };
    let names: Vec<&str> = table.iter().map(|w| w.name).collect();
    let chosen: Vec<Workload> = if r.workloads.is_empty() {
        table.to_vec()
    } else {
        r.workloads
            .iter()
            .map(|n| {
                table
                    .iter()
                    .copied()
                    .find(|w| w.name == n)
                    .ok_or_else(|| anyhow!("unknown workload `{n}`; the workloads are: {}", names.join(", ")))
            })
            .collect::<Result<_>>()?
    };
    let sides: Vec<Side> = match r.only.as_deref() {
        None => vec![Side::C, Side::Skelaff],
        Some("c" | "C") => vec![Side::C],
        Some("skelaff") => vec![Side::Skelaff],
        Some(o) => bail!("--only `{o}`; expected one of: c, skelaff"),
    };
    let mut dirs = Vec::new();
    dirs.extend(r.inputs.clone());
    let stamp = r.stamp.clone().or_else(|| Sources::find(&root()).map(|s| s.stamp));
    if let Some(s) = &stamp {
        // STAMP keeps its inputs in <app>/inputs/: a directory per app whose
        // files sit one level down.
        dirs.push(work().join("stamp-inputs-view"));
        link_stamp_inputs(s)?;
    }
    let c = CPrograms::at(&work());
    let bin = r.skelaff_bin.clone().unwrap_or_else(|| root().join("target/release/examples"));
    for w in &chosen {
        if sides.contains(&Side::C) {
            for stm in [false, true] {
                if !c.binary(w.app, stm).is_file() {
                    bail!("{} is missing: run `cargo xtask stamp-vs-c build` first", c.binary(w.app, stm).display());
                }
            }
        }
        if sides.contains(&Side::Skelaff) && !bin.join(w.app).is_file() {
            bail!("{} is missing: run `cargo xtask stamp-vs-c build` first", bin.join(w.app).display());
        }
    }
    let inputs: Vec<Option<PathBuf>> = chosen.iter().map(|w| input_arg(w, &dirs)).collect::<Result<_>>()?;
    let mut configs = Vec::new();
    for &side in &sides {
        configs.push(Config { side, threads: None });
        configs.extend((1..=r.threads).map(|t| Config { side, threads: Some(t) }));
    }
    let mut cmp = Comparison { inputs: if r.small { "simulator" } else { "standard" }.into(), ..Comparison::default() };
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    cmp.notes.push(format!("{cpus} CPUs; load average before: {}", load_average()));
    let timeout = Duration::from_secs(r.timeout);
    // Per workload, the first result reported and who reported it; every
    // later run must report the same.
    let mut results: Vec<Option<(u64, String)>> = vec![None; chosen.len()];
    let mut disagreements = Vec::new();
    let mut crashes: Vec<String> = Vec::new();
    for round in 0..r.rounds {
        for ((w, input), first) in chosen.iter().zip(&inputs).zip(&mut results) {
            for &cfg in &configs {
                let cmd = command(w, cfg, input.as_deref(), &c, &bin);
                let Finished { status, stdout, stderr } = execute(cmd, timeout)?;
                let ok = status.success();
                let label = cfg.threads.map_or("seq".to_owned(), |t| format!("t{t}"));
                let got = match cfg.side {
                    Side::C => parse::c_output(w.app, &stdout, ok),
                    Side::Skelaff => parse::skelaff_output(w.app, &stdout, ok),
                };
                let got = match got {
                    Ok(g) => g,
                    // A crash before the program printed its time: noted,
                    // left out of the medians, and the run fails at the end
                    // (after the table of what did finish).
                    Err(e) if !ok => {
                        let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
                        let what = format!(
                            "{} {} {label} (round {}) ended with {status}: {e}; last error line: `{last}`",
                            w.name,
                            cfg.side,
                            round + 1
                        );
                        eprintln!("stamp-vs-c: CRASHED: {what}");
                        crashes.push(what);
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                if let Some(value) = got.result {
                    let who = format!("{} {label} (round {})", cfg.side, round + 1);
                    match first {
                        None => *first = Some((value, who)),
                        Some((v, by)) if *v != value => {
                            disagreements.push(format!("{}: {who} reported {value}, {by} reported {v}", w.name));
                        }
                        Some(_) => {}
                    }
                }
                eprintln!(
                    "stamp-vs-c: round {}/{} {} {} {label}: {:.4} s{}",
                    round + 1,
                    r.rounds,
                    w.name,
                    cfg.side,
                    got.seconds,
                    if got.check_passed { "" } else { " CHECK FAILED" }
                );
                cmp.samples.push(Sample {
                    workload: w.name.into(),
                    side: cfg.side,
                    threads: cfg.threads,
                    round,
                    seconds: got.seconds,
                    check_passed: got.check_passed,
                });
            }
        }
    }
    for (w, first) in chosen.iter().zip(&results) {
        if let (Some((value, _)), Some((c_line, _))) = (first, workloads::result_keys(w.app)) {
            if !disagreements.iter().any(|d| d.starts_with(&format!("{}:", w.name))) {
                cmp.notes.push(format!("{}: every run of both sides reported {c_line} = {value}", w.name));
            }
        }
    }
    cmp.notes.extend(disagreements.iter().map(|d| format!("RESULTS DIFFER: {d}")));
    cmp.notes.extend(crashes.iter().map(|c| format!("CRASHED (not in the medians): {c}")));
    cmp.notes.push(format!("load average after: {}", load_average()));
    print!("{cmp}");
    let json = serde_json::to_string(&cmp).context("writing the comparison as JSON")?;
    if let Some(out) = &r.out {
        std::fs::write(out, &json).with_context(|| format!("writing {}", out.display()))?;
    }
    if r.json {
        println!("{json}");
    }
    if cmp.samples.iter().any(|s| !s.check_passed) {
        bail!("a self-check failed (see CHECK FAILED above)");
    }
    if !crashes.is_empty() {
        bail!("{} run(s) crashed: {}", crashes.len(), crashes.join("; "));
    }
    if !disagreements.is_empty() {
        bail!("the two sides' results differ: {}", disagreements.join("; "));
    }
    Ok(cmp)
}

/// Makes `stamp-inputs-view/<app>` link to STAMP's `<app>/inputs`, so that
/// STAMP's tree has the `DIR/<app>/<file>` layout of `--inputs`.
fn link_stamp_inputs(stamp: &Path) -> Result<()> {
    let view = work().join("stamp-inputs-view");
    std::fs::create_dir_all(&view).with_context(|| format!("creating {}", view.display()))?;
    for app in workloads::APPS {
        let link = view.join(app);
        let target = stamp.join(app).join("inputs");
        if target.is_dir() && std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(&target, &link).with_context(|| format!("linking {}", link.display()))?;
        }
    }
    Ok(())
}
