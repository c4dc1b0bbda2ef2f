//! xtask's integration tests, as modules of one test binary: its command
//! line's refusals (`cli`; the reason `cargo test --workspace` builds
//! xtask's binary, which the test command runs for the emulated machines),
//! and the STAMP side-by-side harness end to end (`stamp_vs_c`, skipped
//! without STAMP's and TinySTM's sources). Both start xtask's binary as a
//! child and share nothing else.

mod cli;
mod stamp_vs_c;
