//! `skelaff locality`: the emulated machines' locality runs as one table per
//! application; `skelaff footprint --profile`: a recorded profile's footprint.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use skelaff::locality::atomic_file::AtomicFile;
use skelaff::locality::{Footprint, LocalityTable, Profile, RowKind, RunLocality, Scheme};

/// Options of `skelaff locality`.
#[derive(Debug, clap::Args)]
pub(crate) struct LocalityArgs {
    /// The guests' locality files (JSON lines written by `cargo xtask
    /// numa-vm`); default: every target/numa-vm/locality-*.jsonl.
    files: Vec<PathBuf>,
    /// Print one JSON object (the tables) as the last line.
    #[arg(long)]
    json: bool,
}

/// Options of `skelaff footprint`: `skelaff footprint APP [APP flags]
/// --threads N --out DIR` runs the application with a profile and plots it;
/// `skelaff footprint --profile FILE --out DIR` plots a recorded profile.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct FootprintArgs {
    /// A profile file recorded by a run (`*.prof`), instead of running APP.
    #[arg(long, conflicts_with = "app")]
    profile: Option<PathBuf>,
    /// The directory for footprint.csv, sharing.csv and footprint.svg (and
    /// profile.prof when APP runs).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Worker threads of APP's run (default: its own default).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// The application to run (vacation, kmeans, intruder, genome, labyrinth).
    app: Option<String>,
    /// Its flags, e.g. `--policy bind --sample-period 16` (this command's
    /// own --threads, --out, --bins and --json may come among them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
    /// Time bins of the footprint.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    bins: u32,
    /// Print one JSON object (the sharing table) as the last line.
    #[arg(long)]
    json: bool,
}

fn default_files() -> Result<Vec<PathBuf>> {
    let dir = Path::new("target/numa-vm");
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("reading {} (run `cargo xtask numa-vm` first, or name the files)", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("locality-") && n.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no locality-*.jsonl in {}; run `cargo xtask numa-vm` first", dir.display());
    }
    Ok(files)
}

/// Reads every run of every file.
fn read_runs(files: &[PathBuf]) -> Result<Vec<RunLocality>> {
    let mut runs = Vec::new();
    for f in files {
        let text = fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let run: RunLocality =
                serde_json::from_str(line).with_context(|| format!("{}:{}: not a locality run", f.display(), i + 1))?;
            runs.push(run);
        }
    }
    Ok(runs)
}

pub(crate) fn locality(args: &LocalityArgs) -> Result<()> {
    let files = if args.files.is_empty() { default_files()? } else { args.files.clone() };
    let tables = LocalityTable::gather(&read_runs(&files)?);
    for t in &tables {
        println!("{t}");
        let oracle = t.row(&Scheme::OracleHigh.to_string(), RowKind::Modelled);
        // SkelAff's own placement: `auto` for the skeleton's applications,
        // `masa` for NAS CG.
        let own = ["auto", "masa"].into_iter().find_map(|label| t.row(label, RowKind::Measured));
        if let (Some(own), Some(oracle)) = (own, oracle) {
            let gap = own.figures.relative_cost(&oracle.figures) - 1.0;
            print!("SkelAff ({}) costs {:+.1}% against Oracle_High", own.label, gap * 100.0);
            // Against Oracle_High on SkelAff's own run's accesses, when the
            // run modelled it: the same accesses, so no difference between
            // two runs' mixes of accessors.
            if let Some(same) = t.modelled_on(Scheme::OracleHigh, &own.label) {
                let gap = own.figures.relative_cost(&same.figures) - 1.0;
                print!(", {:+.1}% against Oracle_High on its own accesses", gap * 100.0);
            }
            println!("\n");
        }
    }
    if args.json {
        println!("{}", serde_json::json!({ "tables": tables }));
    }
    Ok(())
}

/// Takes this command's own options out of the application's flags (they
/// may follow APP, where clap hands them over with the rest).
fn own_options(args: &mut FootprintArgs) -> Result<()> {
    let mut rest = Vec::new();
    let mut it = std::mem::take(&mut args.args).into_iter();
    while let Some(a) = it.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (a.clone(), None),
        };
        let mut value = |what: &str| inline.clone().or_else(|| it.next()).ok_or_else(|| anyhow!("{name} needs {what}"));
        match name.as_str() {
            "--threads" => {
                let v = value("a thread count")?;
                args.threads = Some(
                    v.parse().ok().filter(|&n| n >= 1).ok_or_else(|| anyhow!("--threads `{v}`: expected 1 or more"))?,
                );
            }
            "--out" => args.out = Some(PathBuf::from(value("a directory")?)),
            "--bins" => {
                let v = value("a number of bins")?;
                args.bins = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=100_000).contains(n))
                    .ok_or_else(|| anyhow!("--bins `{v}`: expected 1 to 100000"))?;
            }
            "--json" => args.json = true,
            _ => rest.push(a),
        }
    }
    args.args = rest;
    Ok(())
}

/// Runs `app` with its flags and a profile into `out/profile.prof`.
fn record(app: &str, args: &FootprintArgs, out: &Path) -> Result<PathBuf> {
    let entry = skelaff::stamp::find(app).ok_or_else(|| {
        let names: Vec<&str> = skelaff::stamp::registry().iter().map(|e| e.name).collect();
        anyhow!("unknown application `{app}`; the applications are: {}", names.join(", "))
    })?;
    if args.args.iter().any(|a| a == "--profile" || a.starts_with("--profile=")) {
        bail!("the profile goes to OUT/profile.prof; give --profile only without APP");
    }
    let path = out.join("profile.prof");
    let mut argv = vec![format!("skelaff footprint {app}")];
    argv.extend(args.args.iter().cloned());
    argv.extend(["--profile".to_owned(), path.display().to_string()]);
    let code = match args.threads {
        Some(t) => (entry.main_with_threads)(argv, usize::from(t)),
        None => (entry.main)(argv),
    };
    if code != std::process::ExitCode::SUCCESS {
        bail!("the {app} run failed; no footprint");
    }
    Ok(path)
}

pub(crate) fn footprint(args: &FootprintArgs) -> Result<()> {
    let mut args = args.clone();
    own_options(&mut args)?;
    let out = args.out.clone().context("--out DIR is required (where the CSV and SVG go)")?;
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let profile = match (&args.app, &args.profile) {
        (Some(app), _) => record(app, &args, &out)?,
        (None, Some(p)) => p.clone(),
        (None, None) => bail!("name an application (APP [flags]) or a recorded --profile FILE"),
    };
    let p = Profile::load(&profile)?;
    let f = Footprint::new(&p, args.bins);
    // Each file is written atomically: a run killed here leaves the previous
    // run's file or this one's, complete.
    let write = |name: &str, fill: &dyn Fn(&mut AtomicFile) -> skelaff::locality::Result<()>| {
        let path = out.join(name);
        let mut file = AtomicFile::create(&path).with_context(|| format!("creating {}", path.display()))?;
        fill(&mut file).with_context(|| format!("writing {}", path.display()))?;
        file.commit().with_context(|| format!("writing {}", path.display()))
    };
    write("footprint.csv", &|w| f.write_cells_csv(w))?;
    write("sharing.csv", &|w| f.write_sharing_csv(w))?;
    f.plot_svg(&out.join("footprint.svg"))?;
    print!("{f}");
    println!("wrote footprint.csv, sharing.csv and footprint.svg in {}", out.display());
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "app": f.app, "pages": f.pages, "accesses": f.accesses, "sharing": f.sharing })
        );
    }
    Ok(())
}
