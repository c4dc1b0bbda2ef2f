//! `skelaff cg` and `skelaff spmv`: a user's Matrix Market matrix, on one
//! machine or, in a build with the `mpi` feature started by `mpirun`, with
//! its rows split over the ranks (each rank reads the file, keeps its rows
//! and runs them on its own team).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use serde::Serialize;
use skelaff::locality::atomic_file::AtomicFile;
use skelaff::spmv::cg::{self, CgOptions};
use skelaff::spmv::{Csr, Error, SpmvEngine, TeamSpmv, mm};
use skelaff::spmv_args::EngineArgs;

/// A vector given on the command line: `ones`, or a Matrix Market file
/// of one column.
#[derive(Clone, Debug)]
pub(crate) enum VectorSource {
    /// Every entry 1.
    Ones,
    /// Read from this file.
    File(PathBuf),
}

impl FromStr for VectorSource {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(if s == "ones" { VectorSource::Ones } else { VectorSource::File(PathBuf::from(s)) })
    }
}

impl VectorSource {
    /// The vector, `len` long (a file of another length is refused at its
    /// size line, naming the file).
    fn load(&self, len: usize) -> Result<Vec<f64>, Error> {
        match self {
            VectorSource::Ones => Ok(vec![1.0; len]),
            VectorSource::File(p) => mm::read_vector(p, len),
        }
    }
}

/// Options of `skelaff cg`.
#[derive(Debug, clap::Args)]
pub(crate) struct CgArgs {
    /// The matrix: square, symmetric positive definite, Matrix Market
    /// (coordinate or array; real, integer or pattern; general or symmetric).
    file: PathBuf,
    /// The right-hand side b: `ones` or a Matrix Market file of one column.
    #[arg(long, default_value = "ones")]
    rhs: VectorSource,
    /// Stop when ‖r‖ <= tol × ‖b‖ (r the recursively updated residual).
    #[arg(long, default_value_t = 1e-10)]
    tol: f64,
    /// Stop after this many iterations (default: 2n, at least 1000).
    #[arg(long)]
    max_iter: Option<usize>,
    /// Write the solution x here (a Matrix Market array).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

/// Options of `skelaff spmv`.
#[derive(Debug, clap::Args)]
pub(crate) struct SpmvArgs {
    /// The matrix (Matrix Market: coordinate or array; real, integer or
    /// pattern; general, symmetric or skew-symmetric).
    file: PathBuf,
    /// The input x: `ones` or a Matrix Market file of one column.
    #[arg(long, default_value = "ones")]
    x: VectorSource,
    /// Write y = A x here (a Matrix Market array).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

/// What a run of `skelaff cg` or `skelaff spmv` did.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct LinearReport {
    /// `cg` or `spmv`.
    command: &'static str,
    /// The matrix file.
    file: String,
    /// Rows, columns, stored entries.
    nrows: usize,
    ncols: usize,
    nnz: usize,
    /// MPI ranks (1 without MPI) and team threads per rank.
    ranks: usize,
    threads: usize,
    /// CG iterations (1 for spmv).
    iterations: usize,
    /// cg: ‖b − Ax‖/‖b‖ of the solution; spmv: ‖A x − y‖/‖A x‖ against a
    /// sequential product computed in the same process.
    relative_residual: f64,
    /// cg: the tolerance was met; spmv: the product matched the reference.
    converged: bool,
    /// Seconds of the solve (or of the multiply).
    seconds: f64,
}

impl LinearReport {
    fn print(&self, json: bool) {
        println!("matrix     {}: {} x {}, {} entries", self.file, self.nrows, self.ncols, self.nnz);
        println!("run        {} on {} rank(s) x {} thread(s)", self.command, self.ranks, self.threads);
        match self.command {
            "cg" => println!(
                "cg         {} after {} iterations",
                if self.converged { "converged" } else { "DID NOT CONVERGE" },
                self.iterations
            ),
            _ => println!(
                "spmv       y = A x {}",
                if self.converged { "matches the sequential product" } else { "is WRONG" }
            ),
        }
        println!("residual   {:.3e} (relative)", self.relative_residual);
        println!("time       {:.6} s", self.seconds);
        if json {
            println!("{}", serde_json::to_string(self).unwrap_or_default());
        }
    }
}

/// The matrix, checked: square (and, for CG, symmetric).
fn load_matrix(path: &Path, symmetric: bool) -> Result<Csr, Error> {
    let a = mm::read_path::<f64>(path)?.triplets.to_csr();
    if a.nrows() != a.ncols() && symmetric {
        return Err(Error::NotSquare { what: "CG", nrows: a.nrows(), ncols: a.ncols() });
    }
    if symmetric {
        a.check_symmetric()?;
    }
    Ok(a)
}

/// Writes `v` to `path` atomically (the previous file or this one, complete).
fn write_vector(path: &Path, v: &[f64]) -> Result<(), Error> {
    let mut f = AtomicFile::create(path).map_err(Error::Write)?;
    mm::write_vector(&mut f, v)?;
    f.commit().map_err(Error::Write)
}

fn relative(diff2: f64, base2: f64) -> f64 {
    if base2 > 0.0 { (diff2 / base2).sqrt() } else { diff2.sqrt() }
}

/// One machine: `skelaff cg`.
pub(crate) fn cg_local(args: &CgArgs) -> Result<LinearReport, Error> {
    let a = load_matrix(&args.file, true)?;
    let n = a.nrows();
    let b = args.rhs.load(n)?;
    let engine: SpmvEngine = args.engine.engine()?;
    let mut op = engine.csr(&a)?;
    let mut x = vec![0.0; n];
    let opts = CgOptions { tolerance: args.tol, max_iter: args.max_iter.unwrap_or((2 * n).max(1000)) };
    let r = cg::solve(engine.team(), &mut op, &b, &mut x, opts)?;
    if let Some(out) = &args.out {
        write_vector(out, &x)?;
    }
    Ok(LinearReport {
        command: "cg",
        file: args.file.display().to_string(),
        nrows: n,
        ncols: n,
        nnz: a.nnz(),
        ranks: 1,
        threads: engine.team().threads(),
        iterations: r.iterations,
        relative_residual: r.relative_residual,
        converged: r.converged,
        seconds: r.seconds,
    })
}

/// One machine: `skelaff spmv`.
pub(crate) fn spmv_local(args: &SpmvArgs) -> Result<LinearReport, Error> {
    let a = load_matrix(&args.file, false)?;
    let x = args.x.load(a.ncols())?;
    let engine: SpmvEngine = args.engine.engine()?;
    let mut op = engine.csr(&a)?;
    let mut y = vec![0.0; a.nrows()];
    let start = Instant::now();
    op.apply(engine.team(), &x, &mut y)?;
    let seconds = start.elapsed().as_secs_f64();
    let mut want = vec![0.0; a.nrows()];
    a.mul_vec_seq(&x, &mut want)?;
    let (d2, w2) = want.iter().zip(&y).fold((0.0, 0.0), |(d, w), (&r, &g)| (d + (r - g) * (r - g), w + r * r));
    if let Some(out) = &args.out {
        write_vector(out, &y)?;
    }
    let rel = relative(d2, w2);
    Ok(LinearReport {
        command: "spmv",
        file: args.file.display().to_string(),
        nrows: a.nrows(),
        ncols: a.ncols(),
        nnz: a.nnz(),
        ranks: 1,
        threads: engine.team().threads(),
        iterations: 1,
        relative_residual: rel,
        converged: rel <= 1e-12,
        seconds,
    })
}

/// Runs `skelaff cg` or `skelaff spmv` and prints the report (rank 0 only
/// under MPI); the exit code is 0 when the run converged (or matched).
pub(crate) fn main(command: Linear) -> std::process::ExitCode {
    let (name, json) = match &command {
        Linear::Cg(a) => ("cg", a.json),
        Linear::Spmv(a) => ("spmv", a.json),
    };
    match run(&command) {
        Ok(Some(report)) => {
            report.print(json);
            if report.converged { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE }
        }
        Ok(None) => std::process::ExitCode::SUCCESS,
        Err((rank, e)) => {
            match rank {
                Some(r) => eprintln!("skelaff {name}: rank {r}: {e}"),
                None => eprintln!("skelaff {name}: {e}"),
            }
            std::process::ExitCode::from(2)
        }
    }
}

/// `skelaff cg` or `skelaff spmv`.
#[derive(Debug)]
pub(crate) enum Linear {
    /// Solve A x = b.
    Cg(CgArgs),
    /// y = A x.
    Spmv(SpmvArgs),
}

/// The number of processes `mpirun` (OpenMPI's or a PMI launcher's)
/// started this one among, or `None` when it was not started by one.
fn launched_ranks() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"]
        .iter()
        .find_map(|var| std::env::var(var).ok().and_then(|v| v.parse::<usize>().ok()))
}

/// One machine: the command in this process.
fn run_local(command: &Linear) -> Result<Option<LinearReport>, (Option<usize>, Error)> {
    match command {
        Linear::Cg(a) => cg_local(a),
        Linear::Spmv(a) => spmv_local(a),
    }
    .map(Some)
    .map_err(|e| (None, e))
}

/// The report to print (`None` on ranks other than 0), or the error and
/// the rank it happened on.
#[cfg(not(feature = "mpi"))]
fn run(command: &Linear) -> Result<Option<LinearReport>, (Option<usize>, Error)> {
    if launched_ranks().is_some_and(|n| n > 1) {
        return Err((
            None,
            Error::Mpi("this skelaff was built without MPI, so every rank would solve alone; build it with `--features mpi` to run under mpirun".into()),
        ));
    }
    run_local(command)
}

/// The report to print (`None` on ranks other than 0), or the error and
/// the rank it happened on: over every rank when started by `mpirun`, in
/// this process alone otherwise.
#[cfg(feature = "mpi")]
fn run(command: &Linear) -> Result<Option<LinearReport>, (Option<usize>, Error)> {
    if launched_ranks().is_none() {
        return run_local(command);
    }
    let mpi = skelaff::spmv::dist::Mpi::init().map_err(|e| (None, e))?;
    let comm = mpi.world();
    let rank = comm.rank();
    let report = match command {
        Linear::Cg(a) => distributed::cg(&comm, a),
        Linear::Spmv(a) => distributed::spmv(&comm, a),
    }
    .map_err(|e| (Some(rank).filter(|_| comm.size() > 1), e))?;
    Ok((rank == 0).then_some(report))
}

#[cfg(feature = "mpi")]
mod distributed {
    //! The same commands with the rows split over the MPI ranks.

    use std::time::Instant;

    use skelaff::spmv::cg::CgOptions;
    use skelaff::spmv::dist::{self, DistCsr, RankComm};
    use skelaff::spmv::{Csr, Error};

    use super::{CgArgs, LinearReport, SpmvArgs, relative, write_vector};

    /// Every rank reads and checks the matrix, agreeing on the outcome.
    fn load(comm: &RankComm, args_file: &std::path::Path, symmetric: bool) -> Result<Csr, Error> {
        comm.agree(super::load_matrix(args_file, symmetric))
    }

    pub(super) fn cg(comm: &RankComm, args: &CgArgs) -> Result<LinearReport, Error> {
        let a = load(comm, &args.file, true)?;
        let n = a.nrows();
        let b = comm.agree(args.rhs.load(n))?;
        let engine = comm.agree(args.engine.engine())?;
        let mut op = DistCsr::from_global(comm, &engine, &a, engine.options().split)?;
        let rows = op.rows().range(comm.rank());
        let mut x = vec![0.0; rows.len()];
        let opts = CgOptions { tolerance: args.tol, max_iter: args.max_iter.unwrap_or((2 * n).max(1000)) };
        let r = dist::cg::solve(engine.team(), &mut op, &b[rows], &mut x, opts)?;
        let x = comm.all_gather_vec(&x);
        if comm.rank() == 0 {
            if let Some(out) = &args.out {
                write_vector(out, &x)?;
            }
        }
        Ok(LinearReport {
            command: "cg",
            file: args.file.display().to_string(),
            nrows: n,
            ncols: n,
            nnz: a.nnz(),
            ranks: comm.size(),
            threads: engine.team().threads(),
            iterations: r.iterations,
            relative_residual: r.relative_residual,
            converged: r.converged,
            seconds: comm.max(r.seconds),
        })
    }

    pub(super) fn spmv(comm: &RankComm, args: &SpmvArgs) -> Result<LinearReport, Error> {
        let a = load(comm, &args.file, false)?;
        let x = comm.agree(args.x.load(a.ncols()))?;
        let engine = comm.agree(args.engine.engine())?;
        let mut op = DistCsr::from_global(comm, &engine, &a, engine.options().split)?;
        let mut y = vec![0.0; op.local_rows()];
        comm.barrier();
        let start = Instant::now();
        op.apply(engine.team(), &x[op.cols().range(comm.rank())], &mut y)?;
        let seconds = comm.max(start.elapsed().as_secs_f64());
        // Each rank checks its rows against the sequential product.
        let rows = op.rows().range(comm.rank());
        let mut want = vec![0.0; rows.len()];
        a.row_block(rows).mul_vec_seq(&x, &mut want)?;
        let (d2, w2) = want.iter().zip(&y).fold((0.0, 0.0), |(d, w), (&r, &g)| (d + (r - g) * (r - g), w + r * r));
        let [d2, w2] = comm.sums([d2, w2]);
        let y = comm.all_gather_vec(&y);
        if comm.rank() == 0 {
            if let Some(out) = &args.out {
                write_vector(out, &y)?;
            }
        }
        let rel = relative(d2, w2);
        Ok(LinearReport {
            command: "spmv",
            file: args.file.display().to_string(),
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            ranks: comm.size(),
            threads: engine.team().threads(),
            iterations: 1,
            relative_residual: rel,
            converged: rel <= 1e-12,
            seconds,
        })
    }
}
