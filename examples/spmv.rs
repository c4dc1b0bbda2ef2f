//! Repeated SpMVs on a Matrix Market file or a NAS CG matrix, with the
//! effective bandwidth, the STREAM triad measured in the same run, and the
//! peer crates (`sprs`, `nalgebra-sparse`) on the same CSR matrix.
//!
//! ```sh
//! cargo run --release --example spmv --features cli,spmv-peers -- --nas-class B --threads 2 --placement masa
//! cargo run --release --example spmv --features cli,spmv-peers -- matrix.mtx --format csc --split nnz --json
//! ```
//!
//! Byte model (per SpMV): every stored value and index once (8 + 4 bytes),
//! every row (CSR) or column (CSC) pointer once (4), the output once (8 per
//! row) and the input once (8 per column): for CSR
//! `nnz × (8 + 4) + rows × (4 + 8) + cols × 8`. The symmetric formats count
//! the entries they store (both copies for `duplicated`). Effective GB/s is
//! that divided by the median SpMV time (and, for comparison, the best).
//!
//! The STREAM triad (`a = b + q c`, 24 bytes per element, best of the timed
//! passes as STREAM reports it, arrays first-touched by their threads) runs
//! on the same team with arrays of max(last-level cache, 128 MiB) each
//! unless `--stream-mib` says otherwise, once with 4 KiB pages (what
//! STREAM's own binary gets here) and once with transparent huge pages.
//! SpMVs, peer SpMVs and triad passes are interleaved in `--rounds` rounds,
//! so a burst of load from elsewhere on a shared machine hits all of them.

use skelaff_bench_support::median;
use skelaff_bench_support::spmv_peers as peers;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use serde_json::json;
use skelaff::numa::Topology;
use skelaff::spmv::nas::{self, Class};
use skelaff::spmv::{CscSpmv, Csr, CsrSpmv, SharedArray, SymSpmv, SymVariant, TeamSpmv, Triplets, mm, stream};
use skelaff::spmv_args::EngineArgs;

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum Format {
    Csr,
    Csc,
    Sym,
}

/// Repeated SpMVs: effective bandwidth by the byte model, against the
/// STREAM triad and the peer crates, all measured in this run.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// A Matrix Market file (coordinate or array; real, integer or pattern;
    /// general, symmetric or skew-symmetric).
    #[arg(required_unless_present = "nas_class", conflicts_with = "nas_class")]
    file: Option<PathBuf>,
    /// Use the NAS CG matrix of this class (S, W, A, B, C) instead of a file.
    #[arg(long)]
    nas_class: Option<Class>,
    /// Storage and kernel: csr, csc, or sym (the lower triangle in CSC, MFDn style).
    #[arg(long, value_enum, default_value = "csr")]
    format: Format,
    #[command(flatten)]
    engine: EngineArgs,
    /// For --format sym: duplicated (CSC + CSR, the paper's Fig. 7) or single (CSC only).
    #[arg(long, default_value = "single")]
    sym_variant: SymVariant,
    /// Timed SpMVs per implementation.
    #[arg(long, default_value_t = 30)]
    reps: usize,
    /// Rounds the SpMVs, peers and triad passes are interleaved in (one
    /// triad pass of each kind per round; STREAM's best pass is reported).
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// MiB per STREAM array (default: max(last-level cache, 128 MiB)).
    #[arg(long)]
    stream_mib: Option<usize>,
    /// Skip the peer crates.
    #[arg(long)]
    no_peers: bool,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

fn max_rel_err(got: &[f64], want: &[f64]) -> f64 {
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(f64::MIN_POSITIVE);
    got.iter().zip(want).fold(0.0f64, |m, (g, w)| m.max((g - w).abs())) / scale
}

/// The symmetric matrix whose lower triangle `a` holds, in CSR.
fn symmetric_from_lower(a: &Csr) -> Result<Csr, skelaff::spmv::Error> {
    let mut t = Triplets::with_capacity(a.nrows(), a.ncols(), 2 * a.nnz())?;
    let mut res = Ok(());
    a.for_each(|i, j, v| {
        if i >= j && res.is_ok() {
            res = t.push(i, j, v).and_then(|()| if i != j { t.push(j, i, v) } else { Ok(()) });
        }
    });
    res?;
    Ok(t.to_csr())
}

fn llc_bytes(topo: &Topology) -> u64 {
    let top = topo.cache_groups().iter().map(|g| g.level).max().unwrap_or(0);
    topo.cache_groups().iter().filter(|g| g.level == top).filter_map(|g| g.size).max().unwrap_or(0)
}

fn main() -> ExitCode {
    skelaff_bench_support::exit_code("spmv", run(&Args::parse()), "")
}

fn run(args: &Args) -> Result<bool, Box<dyn std::error::Error>> {
    let topo = Topology::get()?;
    let engine = args.engine.engine()?;
    let (masa, team, opts) = (engine.masa(), engine.team(), engine.options());

    let t0 = Instant::now();
    let (name, a) = match (&args.file, args.nas_class) {
        (_, Some(class)) => (format!("NAS CG class {class}"), nas::class_matrix(class)?),
        (Some(path), None) => (path.display().to_string(), mm::read_path::<f64>(path)?.triplets.to_csr()),
        (None, None) => return Err("give a Matrix Market file or --nas-class".into()),
    };
    let load_s = t0.elapsed().as_secs_f64();
    if args.format == Format::Sym && a.nrows() != a.ncols() {
        return Err(format!("--format sym needs a square matrix; {name} is {}x{}", a.nrows(), a.ncols()).into());
    }

    // The operator, and the matrix its result must equal.
    let (mut op, reference): (Box<dyn TeamSpmv<f64>>, Csr) = match args.format {
        Format::Csr => (Box::new(CsrSpmv::new(masa, &a, opts)?), a.clone()),
        Format::Csc => (Box::new(CscSpmv::new(masa, &a.to_csc(), opts)?), a.clone()),
        Format::Sym => {
            let lower = a.lower_triangle();
            (Box::new(SymSpmv::new(masa, &lower, args.sym_variant, opts)?), symmetric_from_lower(&a)?)
        }
    };
    let mut x: SharedArray<f64> = op.input_vector()?;
    for (i, xi) in x.iter_mut().enumerate() {
        *xi = 1.0 + (i % 17) as f64 / 16.0;
    }
    let mut y: SharedArray<f64> = op.output_vector()?;
    let mut want = vec![0.0; reference.nrows()];
    reference.mul_vec_seq(&x, &mut want)?;

    let stream_len = match args.stream_mib {
        Some(mib) => (mib << 20) / 8,
        None => (llc_bytes(topo).max(128 << 20) / 8) as usize,
    };
    let mut triad_4k = stream::TriadArrays::new(team, stream_len, false)?;
    let mut triad_thp = stream::TriadArrays::new(team, stream_len, true)?;
    let peers = (args.format == Format::Csr && !args.no_peers)
        .then(|| (peers::Sprs::new(&a), vec![0.0; a.nrows()], peers::Nalgebra::new(&a, &x)));
    let mut peers = peers;

    // Everything is measured in interleaved rounds, so that a burst of
    // load from elsewhere hits every implementation alike.
    let rounds = args.rounds.max(1);
    let per_round = args.reps.div_ceil(rounds).max(1);
    let (mut t_op, mut t_4k, mut t_thp, mut t_sprs, mut t_na) = (vec![], vec![], vec![], vec![], vec![]);
    let timed = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    for round in 0..=rounds {
        let warm = round == 0;
        let p4 = triad_4k.pass(team);
        let ph = triad_thp.pass(team);
        for _ in 0..if warm { 1 } else { per_round } {
            let s = timed(&mut || op.apply(team, &x, &mut y).expect("sizes were checked"));
            if !warm {
                t_op.push(s);
            }
        }
        if let Some((sp, ys, na)) = peers.as_mut() {
            for _ in 0..if warm { 1 } else { per_round } {
                let s = timed(&mut || sp.mul(&x, ys));
                let n = timed(&mut || na.mul());
                if !warm {
                    t_sprs.push(s);
                    t_na.push(n);
                }
            }
        }
        if !warm {
            t_4k.push(p4);
            t_thp.push(ph);
        }
    }
    let best_of = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (med, best) = (median(&t_op), best_of(&t_op));
    let err = max_rel_err(&y, &want);
    let correct = err <= 1e-12;
    let bytes = op.model_bytes() as f64;
    let gbs = bytes / med / 1e9;
    let gbs_best = bytes / best / 1e9;
    // STREAM reports the best pass.
    let triad_gbs = triad_4k.bytes() / best_of(&t_4k) / 1e9;
    let triad_thp_gbs = triad_thp.bytes() / best_of(&t_thp) / 1e9;

    let mut peers_json = serde_json::Map::new();
    let mut peer_lines = Vec::new();
    if let Some((_, ys, na)) = &peers {
        let s_ok = max_rel_err(ys, &want) <= 1e-12;
        let n_ok = max_rel_err(na.y(), &want) <= 1e-12;
        for (peer, t, ok) in [("sprs", median(&t_sprs), s_ok), ("nalgebra-sparse", median(&t_na), n_ok)] {
            peer_lines.push(format!(
                "  {peer:<16} {:9.3} ms  {:6.2} GB/s  skelaff is {:.2}x faster{}",
                t * 1e3,
                bytes / t / 1e9,
                t / med,
                if ok { "" } else { "  (WRONG RESULT)" }
            ));
            peers_json.insert(
                peer.into(),
                json!({"median_ms": t * 1e3, "gbs": bytes / t / 1e9, "speedup_vs_peer": t / med, "correct": ok}),
            );
        }
    }

    let nodes = topo.nodes().len();
    println!("matrix     {name}: {} x {}, {} entries (loaded in {load_s:.2} s)", a.nrows(), a.ncols(), a.nnz());
    println!(
        "spmv       {:?} ({}) on {engine}",
        args.format,
        if args.format == Format::Sym { args.sym_variant.to_string() } else { "-".into() },
    );
    println!(
        "result     max relative error {err:.2e} against the sequential reference: {}",
        if correct { "ok" } else { "WRONG" }
    );
    println!("time       median {:.3} ms, best {:.3} ms over {} SpMVs", med * 1e3, best * 1e3, t_op.len());
    println!(
        "bandwidth  {gbs:.2} GB/s by the byte model from the median, {gbs_best:.2} GB/s from the best ({:.1} MB per SpMV)",
        bytes / 1e6
    );
    println!(
        "triad      {:.2} GB/s (4 KiB pages), {:.2} GB/s (huge pages); {} MiB per array, {} threads",
        triad_gbs,
        triad_thp_gbs,
        (stream_len * 8) >> 20,
        engine.team().threads()
    );
    println!(
        "ratio      median SpMV {:.2} of the triad (4 KiB pages), {:.2} (huge pages); best SpMV {:.2}, {:.2}",
        gbs / triad_gbs,
        gbs / triad_thp_gbs,
        gbs_best / triad_gbs,
        gbs_best / triad_thp_gbs
    );
    for l in &peer_lines {
        println!("{l}");
    }
    if nodes == 1 {
        println!(
            "note       this machine has 1 NUMA node: every placement puts every page on it, so MASA cannot beat first touch here"
        );
    }
    if args.json {
        let j = json!({
            "matrix": name, "nrows": a.nrows(), "ncols": a.ncols(), "nnz": a.nnz(),
            "format": format!("{:?}", args.format).to_lowercase(),
            "sym_variant": (args.format == Format::Sym).then(|| args.sym_variant.to_string()),
            "split": opts.split.to_string(), "threads": engine.team().threads(), "placement": opts.placement.to_string(),
            "simd": opts.simd.to_string(), "huge_pages": masa.uses_huge_pages(), "numa_nodes": nodes,
            "correct": correct, "max_rel_err": err,
            "median_ms": med * 1e3, "best_ms": best * 1e3, "reps": t_op.len(),
            "model_bytes": bytes, "gbs": gbs, "gbs_best": gbs_best,
            "triad_gbs": triad_gbs, "triad_thp_gbs": triad_thp_gbs, "rounds": rounds, "triad_mib_per_array": (stream_len * 8) >> 20,
            "ratio_to_triad": gbs / triad_gbs, "ratio_to_triad_thp": gbs / triad_thp_gbs,
            "best_ratio_to_triad": gbs_best / triad_gbs, "best_ratio_to_triad_thp": gbs_best / triad_thp_gbs,
            "peers": peers_json,
        });
        println!("{j}");
    }
    Ok(correct)
}
