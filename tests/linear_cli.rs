//! `skelaff cg` and `skelaff spmv` on Matrix Market files this test writes
//! (symmetric, general, pattern, array): the solution and the product
//! equal the in-process reference, and malformed files, wrong shapes and
//! bad options fail with an error that names the problem.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use skelaff::spmv::cg::{self, CgOptions};
use skelaff::spmv::{Csr, SpmvEngine, SpmvEngineOptions, mm};

/// A directory of its own for each test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("skelaff-linear-cli-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write a test file");
    p
}

fn skelaff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skelaff"))
        .args(args)
        .env_remove("OMPI_COMM_WORLD_SIZE")
        .env_remove("PMI_SIZE")
        .env_remove("PMIX_SIZE")
        .output()
        .expect("run skelaff")
}

/// The `--json` line of a successful run.
fn report(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "skelaff failed ({}):\n{text}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(text.lines().last().expect("a JSON line")).expect("the last line is JSON")
}

/// The error of a failed run: non-zero exit, no panic, stderr returned.
fn failure(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "expected a failure, got success:\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(!err.contains("panicked"), "skelaff panicked instead of reporting an error:\n{err}");
    err
}

/// The 1-D Laplacian (2 on the diagonal, -1 beside it) plus `shift` on
/// the diagonal, lower triangle, as `coordinate real symmetric`.
fn laplacian_symmetric(n: usize, shift: f64) -> String {
    let mut s = format!("%%MatrixMarket matrix coordinate real symmetric\n% a comment\n{n} {n} {}\n", 2 * n - 1);
    for i in 1..=n {
        s += &format!("{i} {i} {}\n", 2.0 + shift);
        if i < n {
            s += &format!("{} {i} -1\n", i + 1);
        }
    }
    s
}

/// A nonsymmetric 5x5 `coordinate real general` matrix, entries in no order.
const GENERAL: &str = "%%MatrixMarket matrix coordinate real general\n5 5 9\n3 1 -1.5\n1 1 4\n2 2 3\n\
                       5 5 7\n1 4 2.25\n4 4 1\n3 3 5\n2 5 -0.5\n5 2 8\n";

fn in_process_engine() -> SpmvEngine {
    SpmvEngine::new(SpmvEngineOptions { threads: 1, ..SpmvEngineOptions::default() }).expect("a one-thread engine")
}

fn read(path: &Path) -> Csr {
    mm::read_path::<f64>(path).expect("the test's own file").triplets.to_csr()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * scale, "entry {i}: {g} against the reference {w}");
    }
}

#[test]
fn cg_symmetric_file_matches_in_process_solve() {
    let dir = scratch("cg-symmetric");
    let a_path = write(&dir, "a.mtx", &laplacian_symmetric(200, 0.01));
    let b: Vec<f64> = (0..200).map(|i| ((i * 7) % 13) as f64 - 6.0).collect();
    let b_path = dir.join("b.mtx");
    mm::write_vector(std::fs::File::create(&b_path).unwrap(), &b).unwrap();
    let x_path = dir.join("x.mtx");
    let out = skelaff(&[
        "cg",
        a_path.to_str().unwrap(),
        "--rhs",
        b_path.to_str().unwrap(),
        "--threads",
        "2",
        "--out",
        x_path.to_str().unwrap(),
        "--json",
    ]);
    let r = report(&out);
    assert_eq!(r["command"], "cg");
    assert_eq!(r["converged"], true);
    assert!(r["relative_residual"].as_f64().unwrap() <= 1e-10, "{r}");
    assert!(r["iterations"].as_u64().unwrap() > 1);
    assert!(r["seconds"].as_f64().unwrap() >= 0.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("converged after") && stdout.contains("relative"), "{stdout}");

    let engine = in_process_engine();
    let a = read(&a_path);
    let mut op = engine.csr(&a).unwrap();
    let mut want = vec![0.0; 200];
    let rep = cg::solve(engine.team(), &mut op, &b, &mut want, CgOptions { tolerance: 1e-10, max_iter: 1000 }).unwrap();
    assert!(rep.converged);
    assert_close(&mm::read_vector(&x_path, want.len()).unwrap(), &want, 1e-8);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cg_general_and_pattern_files() {
    let dir = scratch("cg-general");
    // The same SPD matrix written in full as `general`: default b = ones.
    let n = 60;
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n{n} {n} {}\n", 3 * n - 2);
    for i in 1..=n {
        s += &format!("{i} {i} 3\n");
        if i < n {
            s += &format!("{} {i} -1\n{i} {} -1\n", i + 1, i + 1);
        }
    }
    let a_path = write(&dir, "general.mtx", &s);
    let x_path = dir.join("x.mtx");
    let r = report(&skelaff(&["cg", a_path.to_str().unwrap(), "--out", x_path.to_str().unwrap(), "--json"]));
    assert_eq!(r["converged"], true);
    assert!(r["relative_residual"].as_f64().unwrap() <= 1e-10);
    let a = read(&a_path);
    let x = mm::read_vector(&x_path, n).unwrap();
    let mut ax = vec![0.0; n];
    a.mul_vec_seq(&x, &mut ax).unwrap();
    assert_close(&ax, &vec![1.0; n], 1e-9);

    // A pattern matrix is all ones: a diagonal pattern is the identity.
    let p_path =
        write(&dir, "pattern.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n1 1\n2 2\n3 3\n");
    let x_path = dir.join("xp.mtx");
    let r = report(&skelaff(&["cg", p_path.to_str().unwrap(), "--out", x_path.to_str().unwrap(), "--json"]));
    assert_eq!(r["iterations"], 1);
    assert_eq!(mm::read_vector(&x_path, 3).unwrap(), [1.0, 1.0, 1.0]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn spmv_general_pattern_and_symmetric_match_sequential_product() {
    let dir = scratch("spmv");
    let x = [1.0, -2.0, 0.5, 3.0, -1.25];
    let x_path = dir.join("x.mtx");
    mm::write_vector(std::fs::File::create(&x_path).unwrap(), &x).unwrap();
    let pattern = "%%MatrixMarket matrix coordinate pattern general\n5 5 6\n1 2\n2 3\n3 1\n4 5\n5 4\n5 5\n";
    let symmetric = laplacian_symmetric(5, 0.5);
    for (name, text) in [("general.mtx", GENERAL), ("pattern.mtx", pattern), ("symmetric.mtx", symmetric.as_str())] {
        let a_path = write(&dir, name, text);
        let y_path = dir.join(format!("y-{name}"));
        let r = report(&skelaff(&[
            "spmv",
            a_path.to_str().unwrap(),
            "--x",
            x_path.to_str().unwrap(),
            "--out",
            y_path.to_str().unwrap(),
            "--threads",
            "2",
            "--json",
        ]));
        assert_eq!(r["command"], "spmv");
        assert_eq!(r["converged"], true, "{name}: {r}");
        let mut want = vec![0.0; 5];
        read(&a_path).mul_vec_seq(&x, &mut want).unwrap();
        assert_close(&mm::read_vector(&y_path, want.len()).unwrap(), &want, 1e-15);
    }
    // x = ones by default; a rectangular matrix multiplies too (y has nrows entries).
    let rect = write(&dir, "rect.mtx", "%%MatrixMarket matrix coordinate real general\n2 3 3\n1 1 1\n1 3 2\n2 2 -4\n");
    let y_path = dir.join("y-rect.mtx");
    report(&skelaff(&["spmv", rect.to_str().unwrap(), "--out", y_path.to_str().unwrap(), "--json"]));
    assert_eq!(mm::read_vector(&y_path, 2).unwrap(), [3.0, -4.0]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_matrices_and_options_are_refused_with_the_reason() {
    let dir = scratch("errors");
    let path = |name: &str, text: &str| write(&dir, name, text).to_str().unwrap().to_owned();
    let rect = path("rect.mtx", "%%MatrixMarket matrix coordinate real general\n2 3 1\n1 1 1\n");
    let err = failure(&skelaff(&["cg", &rect]));
    assert!(err.contains("square") && err.contains("2x3"), "{err}");

    let general = path("general.mtx", GENERAL);
    let err = failure(&skelaff(&["cg", &general]));
    assert!(err.contains("not symmetric"), "{err}");

    let indefinite = path("indefinite.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 1\n2 2 -1\n");
    let err = failure(&skelaff(&["cg", &indefinite, "--rhs", "ones"]));
    assert!(err.contains("not positive definite"), "{err}");

    let out_of_range = path("range.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 7 1.0\n");
    for cmd in ["cg", "spmv"] {
        let err = failure(&skelaff(&[cmd, &out_of_range]));
        assert!(err.contains("line 3") && err.contains("column index 7 is outside 1..=2"), "{cmd}: {err}");
    }
    let bad_header = path("header.mtx", "%%MatrixMarket matrix coordinate complex-ish general\n1 1 1\n1 1 1\n");
    assert!(failure(&skelaff(&["spmv", &bad_header])).contains("line 1"));
    let short = path("short.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n");
    assert!(failure(&skelaff(&["spmv", &short])).contains("Matrix Market"));
    let not_a_number = path("nan.mtx", "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 abc\n");
    assert!(failure(&skelaff(&["spmv", &not_a_number])).contains("line 3"));

    let err = failure(&skelaff(&["spmv", dir.join("missing.mtx").to_str().unwrap()]));
    assert!(err.contains("cannot read") && err.contains("missing.mtx"), "{err}");

    let sym = path("sym.mtx", &laplacian_symmetric(4, 0.0));
    let b2 = path("b2.mtx", "%%MatrixMarket matrix array real general\n2 1\n1\n2\n");
    let err = failure(&skelaff(&["cg", &sym, "--rhs", &b2]));
    let want = "b2.mtx line 2: the size line says 2x1; a vector of 4 entries is expected (4x1 or 1x4)";
    assert!(err.contains(want), "{err}");
    let err = failure(&skelaff(&["spmv", &sym, "--x", &b2]));
    assert!(err.contains(want), "{err}");
    let err = failure(&skelaff(&["cg", &sym, "--threads", "0"]));
    assert!(err.contains("thread count"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under `mpirun` (feature `mpi`) the same commands split the rows over the
/// ranks and agree with the one-machine run.
/// `skelaff` under `mpirun` with `np` ranks, which yield while they wait
/// (`--bind-to none` and as many ranks as CPUs would otherwise spin).
#[cfg(feature = "mpi")]
fn mpirun_skelaff(np: &str) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"])
        .args(["-np", np])
        .arg(env!("CARGO_BIN_EXE_skelaff"));
    c
}

#[cfg(feature = "mpi")]
#[test]
fn under_mpirun_results_equal_one_machine() {
    let dir = scratch("mpi");
    let a_path = write(&dir, "a.mtx", &laplacian_symmetric(101, 0.05));
    let one = report(&skelaff(&["cg", a_path.to_str().unwrap(), "--json"]));
    for np in ["2", "3"] {
        let x_path = dir.join(format!("x{np}.mtx"));
        let out = mpirun_skelaff(np)
            .args(["cg", a_path.to_str().unwrap(), "--out", x_path.to_str().unwrap(), "--json"])
            .output()
            .expect("run mpirun");
        let r = report(&out);
        assert_eq!(r["ranks"].as_u64(), Some(np.parse().unwrap()));
        assert_eq!(r["iterations"], one["iterations"]);
        assert!(r["relative_residual"].as_f64().unwrap() <= 1e-10);
        let x = mm::read_vector(&x_path, 101).unwrap();
        let mut ax = vec![0.0; 101];
        read(&a_path).mul_vec_seq(&x, &mut ax).unwrap();
        assert_close(&ax, &[1.0; 101], 1e-9);
    }
    // A malformed file fails on every rank, each saying why, and nobody hangs.
    let bad = write(&dir, "bad.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 7 1.0\n");
    let out = mpirun_skelaff("2").args(["spmv", bad.to_str().unwrap()]).output().expect("run mpirun");
    let err = failure(&out);
    assert!(err.contains("column index 7 is outside 1..=2"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
