//! The helper threads' integration tests, as modules of one test binary
//! (one link instead of two): misbehaving shadows contained, and helpers
//! under the worklist. Each builds its own workers and helpers. Apart: the
//! loom model of the worker-helper link (`loom_link`, built with `--cfg
//! loom`).

mod common;
mod containment;
mod worklist;
