//! skelaff-spmv's integration tests that can share a process, as modules
//! of one test binary (one link instead of two): every operator against
//! the sequential reference, and NAS CG's verification. Each builds its own
//! MASA state, teams and matrices. Apart: `matrix_market` (a peak-counting
//! global allocator), `mpi` (its own harness, under mpirun) and
//! `numa_vm_spmv` (run inside the emulated machine by `cargo xtask
//! numa-vm`, which finds it by name).

mod kernels;
mod nas_verify;
