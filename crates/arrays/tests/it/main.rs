//! skelaff-arrays' integration tests, as modules of one test binary (one
//! link instead of two): bad input, and the arrays against a `Vec` model.
//! Each builds its own arrays. Apart: `numa_vm_arrays` (run inside the
//! emulated machine by `cargo xtask numa-vm`, which finds it by name).

mod bad_input;
mod props;
