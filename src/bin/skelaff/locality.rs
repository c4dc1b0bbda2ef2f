//! `skelaff locality`: the emulated machines' locality runs as one table per
//! application; `skelaff footprint --profile`: a recorded profile's footprint.

use std::fs;
use std::path::{Path, PathBuf};

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

/// Options of `skelaff footprint`.
#[derive(Debug, clap::Args)]
pub(crate) struct FootprintArgs {
    /// A profile file recorded by a run (`*.prof`).
    #[arg(long)]
    profile: PathBuf,
    /// The directory for footprint.csv, sharing.csv and footprint.svg.
    #[arg(long)]
    out: PathBuf,
    /// Time bins of the footprint.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    bins: u32,
    /// Print one JSON object (the sharing table) as the last line.
    #[arg(long)]
    json: bool,
}

fn default_files() -> Result<Vec<PathBuf>, String> {
    let dir = Path::new("target/numa-vm");
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}; run `cargo xtask numa-vm` first, or name the files", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("locality-") && n.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no locality-*.jsonl in {}; run `cargo xtask numa-vm` first", dir.display()));
    }
    Ok(files)
}

/// Reads every run of every file.
fn read_runs(files: &[PathBuf]) -> Result<Vec<RunLocality>, String> {
    let mut runs = Vec::new();
    for f in files {
        let text = fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let run: RunLocality = serde_json::from_str(line)
                .map_err(|e| format!("{}:{}: not a locality run: {e}", f.display(), i + 1))?;
            runs.push(run);
        }
    }
    Ok(runs)
}

pub(crate) fn locality(args: &LocalityArgs) -> Result<(), String> {
    let files = if args.files.is_empty() { default_files()? } else { args.files.clone() };
    let tables = LocalityTable::gather(&read_runs(&files)?);
    for t in &tables {
        println!("{t}");
        let oracle = t.row(&Scheme::OracleHigh.to_string(), RowKind::Modelled);
        if let (Some(auto), Some(oracle)) = (t.row("auto", RowKind::Measured), oracle) {
            let gap = auto.figures.relative_cost(&oracle.figures) - 1.0;
            println!("SkelAff (auto) costs {:+.1}% against Oracle_High\n", gap * 100.0);
        }
    }
    if args.json {
        println!("{}", serde_json::json!({ "tables": tables }));
    }
    Ok(())
}

pub(crate) fn footprint(args: &FootprintArgs) -> Result<(), String> {
    let p = Profile::load(&args.profile).map_err(|e| e.to_string())?;
    let f = Footprint::new(&p, args.bins);
    fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let open = |name: &str| {
        let path = args.out.join(name);
        fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    f.write_cells_csv(open("footprint.csv")?).map_err(|e| e.to_string())?;
    f.write_sharing_csv(open("sharing.csv")?).map_err(|e| e.to_string())?;
    f.plot_svg(&args.out.join("footprint.svg")).map_err(|e| e.to_string())?;
    print!("{f}");
    println!("wrote footprint.csv, sharing.csv and footprint.svg in {}", args.out.display());
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "app": f.app, "pages": f.pages, "accesses": f.accesses, "sharing": f.sharing })
        );
    }
    Ok(())
}
