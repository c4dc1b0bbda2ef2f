//! The command-line flags every SpMV binary shares (the `spmv`, `nas_cg`
//! and `nas_cg_mpi` examples and the `skelaff cg` / `skelaff spmv`
//! subcommands): how to set up the [`SpmvEngine`].

use skelaff_spmv::{ArrayPlacement, Simd, SplitKind, SpmvEngine, SpmvEngineOptions};

/// Threads, placement, split, kernels and pages of the SpMV engine.
#[derive(clap::Args, Clone, Debug)]
pub struct EngineArgs {
    /// Team threads (per MPI rank under mpirun), one pinned per CPU (scatter).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Array placement: first-touch (one thread writes everything), masa, interleave.
    #[arg(long, default_value = "masa")]
    pub placement: ArrayPlacement,
    /// Row split: rows (Algorithm 1) or nnz (balance entries).
    #[arg(long, default_value = "rows")]
    pub split: SplitKind,
    /// Kernels: portable or avx2 (default: the best this CPU has).
    #[arg(long)]
    pub simd: Option<Simd>,
    /// Use 4 KiB pages instead of transparent huge pages.
    #[arg(long)]
    pub no_huge_pages: bool,
}

impl EngineArgs {
    /// The engine options these flags ask for.
    pub fn options(&self) -> SpmvEngineOptions {
        SpmvEngineOptions {
            threads: self.threads,
            placement: self.placement,
            split: self.split,
            simd: self.simd,
            huge_pages: !self.no_huge_pages,
        }
    }

    /// Sets the engine up.
    ///
    /// # Errors
    ///
    /// As [`SpmvEngine::new`] (a thread count of zero, a non-static schedule
    /// in the environment, a CPU this process may not use).
    pub fn engine(&self) -> skelaff_spmv::Result<SpmvEngine> {
        SpmvEngine::new(self.options())
    }
}
