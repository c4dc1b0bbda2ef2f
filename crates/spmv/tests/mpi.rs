//! The distributed operators under `mpirun` (feature `mpi`). Run as a test,
//! this binary launches itself under `mpirun` once per case and rank count
//! (`--oversubscribe`, so 3 and 4 ranks run on two CPUs); launched by
//! `mpirun`, it runs one case on each rank and exits non-zero if the case
//! fails there.
//!
//! - Distributed SpMV equals the sequential product on random matrices at
//!   1, 2 and 3 ranks, with ranks that hold no rows, columns owned by a rank
//!   without rows, columns no row uses, and rectangular shapes.
//! - Distributed CG matches the one-machine CG.
//! - NAS CG classes S and W verify at 1, 2 and 4 ranks.
//! - A rank that cannot read its file makes every rank exit with an error;
//!   a rank that panics in the middle of a collective step takes the whole
//!   job down instead of leaving the others waiting.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use skelaff_spmv::cg::{self, CgOptions};
use skelaff_spmv::dist::{self, DistCsr, Mpi, RankComm};
use skelaff_spmv::nas::Class;
use skelaff_spmv::{Csr, CsrSpmv, Split, SplitKind, SpmvEngine, SpmvEngineOptions, Triplets};

/// Each case, the rank counts it runs at, and whether every rank must succeed.
const CASES: &[(&str, &[usize], bool)] = &[
    ("spmv-random", &[1, 2, 3], true),
    ("spmv-threads", &[2], true),
    ("cg-random", &[1, 3], true),
    ("nas-s", &[1, 2, 4], true),
    ("nas-w", &[1, 2, 4], true),
    ("bad-file-on-one-rank", &[3], false),
    ("panic-on-one-rank", &[3], false),
];

/// How long one `mpirun` may take before it counts as hung.
const TIMEOUT: Duration = Duration::from_secs(180);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == "--rank-case") {
        return rank_main(&args[pos + 1..]);
    }
    launcher()
}

fn launcher() -> ExitCode {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = std::env::temp_dir().join(format!("skelaff-mpi-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let good = "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 4.0\n2 1 1.0\n2 2 4.0\n3 3 4.0\n";
    std::fs::write(dir.join("good.mtx"), good).expect("write good.mtx");
    std::fs::write(dir.join("bad.mtx"), "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 7 1.0\n")
        .expect("write bad.mtx");
    let (mut passed, mut failed) = (0, 0);
    for &(case, ranks, must_succeed) in CASES {
        for &np in ranks {
            let name = format!("mpi::{case} np={np}");
            match run_case(&exe, &dir, case, np, must_succeed) {
                Ok(()) => {
                    println!("test {name} ... ok");
                    passed += 1;
                }
                Err(e) => {
                    println!("test {name} ... FAILED\n{e}");
                    failed += 1;
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("\ntest result: {}. {passed} passed; {failed} failed", if failed == 0 { "ok" } else { "FAILED" });
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn run_case(exe: &Path, dir: &Path, case: &str, np: usize, must_succeed: bool) -> Result<(), String> {
    let mut cmd = Command::new("mpirun");
    // Ranks yield while they wait for a message: with as many ranks as CPUs
    // and `--bind-to none`, Open MPI would otherwise spin in every wait, and the
    // engines' worker threads would starve (NAS CG at 2 ranks took 14 s here
    // instead of 1.7 s).
    cmd.args(["--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"])
        .args(["-np", &np.to_string()])
        .arg(exe)
        .args(["--rank-case", case])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot start mpirun (install openmpi-bin): {e}"))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) => break s,
            None if start.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("mpirun still running after {TIMEOUT:?}: a rank hung"));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if must_succeed {
        let oks = text.lines().filter(|l| l.starts_with("rank-ok ")).count();
        return if status.success() && oks == np {
            Ok(())
        } else {
            Err(format!("mpirun exited with {status}, {oks} of {np} ranks reported success:\n{text}"))
        };
    }
    if status.success() {
        return Err(format!("every rank should have failed, but mpirun exited with {status}:\n{text}"));
    }
    if case == "bad-file-on-one-rank" {
        // Every rank says what failed, and the failing rank names the file's problem.
        let errors = text.lines().filter(|l| l.starts_with("rank-error ")).count();
        if errors != np || !text.contains("column index 7 is outside 1..=2") || !text.contains("MPI rank 1 of 3 failed")
        {
            return Err(format!("expected an error from each of the {np} ranks naming rank 1's bad file:\n{text}"));
        }
    }
    Ok(())
}

/// One case on this rank; prints `rank-ok R` or `rank-error R: ...`.
fn rank_main(args: &[String]) -> ExitCode {
    let (case, dir) = (args[0].as_str(), PathBuf::from(&args[1]));
    let mpi = match Mpi::init() {
        Ok(m) => m,
        Err(e) => {
            println!("rank-error ?: {e}");
            return ExitCode::from(2);
        }
    };
    let comm = mpi.world();
    let result = match case {
        "spmv-random" => spmv_random(&comm, 1),
        "spmv-threads" => spmv_random(&comm, 2),
        "cg-random" => cg_random(&comm),
        "nas-s" => nas(&comm, Class::S),
        "nas-w" => nas(&comm, Class::W),
        "bad-file-on-one-rank" => {
            let file = if comm.rank() == 1 { "bad.mtx" } else { "good.mtx" };
            dist::read_csr(&comm, dir.join(file)).map(|_| ()).map_err(|e| e.to_string())
        }
        "panic-on-one-rank" => {
            if comm.rank() == 1 {
                panic!("rank 1 panics on purpose, before a collective step");
            }
            comm.barrier();
            Err("the barrier returned although rank 1 never reached it".into())
        }
        other => Err(format!("unknown case {other}")),
    };
    match result {
        Ok(()) => {
            println!("rank-ok {}", comm.rank());
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("rank-error {}: {e}", comm.rank());
            ExitCode::from(3)
        }
    }
}

/// A deterministic random matrix (the same on every rank): each entry
/// present with probability `density`.
fn random(nrows: usize, ncols: usize, density: f64, seed: u64, empty_cols: &[usize]) -> Csr {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut t = Triplets::new(nrows, ncols).unwrap();
    for i in 0..nrows {
        for j in 0..ncols {
            if (next() % 1000) as f64 / 1000.0 < density && !empty_cols.contains(&j) {
                t.push(i, j, (next() % 2001) as f64 / 100.0 - 10.0).unwrap();
            }
        }
    }
    t.to_csr()
}

fn input(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 7 + 3) % 23) as f64 / 4.0 - 2.5).collect()
}

/// `a x` over the ranks against the sequential product.
fn check_product(
    comm: &RankComm,
    engine: &SpmvEngine,
    a: &Csr,
    rows: Split,
    cols: Split,
    what: &str,
) -> Result<(), String> {
    let x = input(a.ncols());
    let mut want = vec![0.0; a.nrows()];
    a.mul_vec_seq(&x, &mut want).map_err(|e| e.to_string())?;
    let local = a.row_block(rows.range(comm.rank()));
    let mut op = DistCsr::new(comm, engine, &local, rows.clone(), cols.clone()).map_err(|e| e.to_string())?;
    let xr = &x[cols.range(comm.rank())];
    let mut y = vec![f64::NAN; op.local_rows()];
    for _ in 0..3 {
        op.apply(engine.team(), xr, &mut y).map_err(|e| e.to_string())?;
    }
    let got = comm.all_gather_vec(&y);
    if got.len() != want.len() {
        return Err(format!("{what}: gathered {} rows, expected {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        if (g - w).abs() > 1e-12 * (1.0 + w.abs()) {
            return Err(format!("{what}: row {i} is {g}, the sequential product has {w}"));
        }
    }
    let st = op.stats();
    if st.exchanges != 3 || st.recv_entries != op.plan().recv_len() {
        return Err(format!("{what}: stats {st:?}"));
    }
    Ok(())
}

fn spmv_random(comm: &RankComm, threads: usize) -> Result<(), String> {
    let engine =
        SpmvEngine::new(SpmvEngineOptions { threads, ..SpmvEngineOptions::default() }).map_err(|e| e.to_string())?;
    let p = comm.size();
    for (seed, (n, m, density)) in
        [(40, 40, 0.15), (7, 13, 0.4), (13, 7, 0.4), (2, 2, 1.0), (1, 5, 0.9), (0, 0, 0.0), (60, 60, 0.02)]
            .into_iter()
            .enumerate()
    {
        // Columns 0 and m-1 stay empty: no row uses them.
        let empty: Vec<usize> = if m > 2 { vec![0, m - 1] } else { vec![] };
        let a = random(n, m, density, 1000 + seed as u64, &empty);
        for kind in [SplitKind::Rows, SplitKind::Nnz] {
            let rows = if kind == SplitKind::Rows { Split::equal(n, p) } else { Split::nnz(a.row_ptr(), p) };
            let cols = if n == m { rows.clone() } else { Split::equal(m, p) };
            check_product(comm, &engine, &a, rows, cols, &format!("{n}x{m} split {kind}"))?;
        }
        // Rank 0 holds no rows but owns columns; the last rank holds every row.
        let mut rb = vec![0; p + 1];
        rb[p] = n;
        let rows = Split::from_bounds(rb).map_err(|e| e.to_string())?;
        check_product(comm, &engine, &a, rows, Split::equal(m, p), &format!("{n}x{m}, all rows on the last rank"))?;
        // The from_global path.
        let mut op = DistCsr::from_global(comm, &engine, &a, SplitKind::Nnz).map_err(|e| e.to_string())?;
        if op.shape() != (n, m) {
            return Err(format!("from_global shape {:?}", op.shape()));
        }
        let x = input(m);
        let mut y = vec![0.0; op.local_rows()];
        op.apply(engine.team(), &x[op.cols().range(comm.rank())], &mut y).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn cg_random(comm: &RankComm) -> Result<(), String> {
    let engine = SpmvEngine::new(SpmvEngineOptions::default()).map_err(|e| e.to_string())?;
    // Symmetric and strictly diagonally dominant: SPD.
    let n = 120;
    let r = random(n, n, 0.05, 77, &[]);
    let mut t = Triplets::new(n, n).unwrap();
    let mut row_sum = vec![0.0; n];
    r.for_each(|i, j, v| {
        if i != j {
            t.push(i, j, v).unwrap();
            t.push(j, i, v).unwrap();
            row_sum[i] += v.abs();
            row_sum[j] += v.abs();
        }
    });
    for (i, s) in row_sum.iter().enumerate() {
        t.push(i, i, s + 1.0).unwrap();
    }
    let a = t.to_csr();
    let b = input(n);
    let opts = CgOptions { tolerance: 1e-12, max_iter: 500 };
    let mut one = CsrSpmv::new(engine.masa(), &a, engine.options()).map_err(|e| e.to_string())?;
    let mut x_one = vec![0.0; n];
    let r1 = cg::solve(engine.team(), &mut one, &b, &mut x_one, opts).map_err(|e| e.to_string())?;
    let mut op = DistCsr::from_global(comm, &engine, &a, SplitKind::Rows).map_err(|e| e.to_string())?;
    let rows = op.rows().range(comm.rank());
    let mut x = vec![0.0; rows.len()];
    let report = dist::cg::solve(engine.team(), &mut op, &b[rows], &mut x, opts).map_err(|e| e.to_string())?;
    let x = comm.all_gather_vec(&x);
    if !report.converged || report.relative_residual > 1e-11 {
        return Err(format!("distributed CG: {report}"));
    }
    if report.iterations.abs_diff(r1.iterations) > 2 {
        return Err(format!("distributed CG took {} iterations, one machine {}", report.iterations, r1.iterations));
    }
    for (i, (g, w)) in x.iter().zip(&x_one).enumerate() {
        if (g - w).abs() > 1e-9 * (1.0 + w.abs()) {
            return Err(format!("x[{i}] = {g} over MPI, {w} on one machine"));
        }
    }
    Ok(())
}

fn nas(comm: &RankComm, class: Class) -> Result<(), String> {
    let engine = SpmvEngine::new(SpmvEngineOptions::default()).map_err(|e| e.to_string())?;
    for split in [SplitKind::Rows, SplitKind::Nnz] {
        let r = dist::nas::run(comm, &engine, class, split).map_err(|e| e.to_string())?;
        if !r.report.verified {
            return Err(format!("class {class} at {} ranks, split {split}: {r}", comm.size()));
        }
        if comm.size() == 1 && r.halo_entries_per_spmv != 0 {
            return Err(format!("one rank exchanged {} entries", r.halo_entries_per_spmv));
        }
    }
    Ok(())
}
