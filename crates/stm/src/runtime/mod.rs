//! The runtime around the protocol of [`raw`](crate::raw): one transaction
//! descriptor per thread on the global engine, the thread registry, epoch
//! reclamation, `retry` wake-ups, and the public entry points.
//!
//! One job per file; imports go one way, down this list:
//!
//! | file | job |
//! |---|---|
//! | `counters` | one thread's statistics counters |
//! | `sampling` | one thread's access sampler (the recorder) |
//! | `registry` | the thread records: announced starts, counters, owner ids |
//! | `reclaim` | epoch reclamation: stamping, collecting, orphans |
//! | `retry` | waiting for a change, and waking the waiters |
//! | `solo` | the solo gate: one thread's transactions alone, the others waiting |
//! | `contention` | what a transaction does after a conflict |
//! | `assist` | assisted execution: the auxiliary thread and its ring |
//! | `tx` | the descriptor: runs a closure as a transaction; `TxOps` |
//! | `thread` | the calling thread's state and its descriptor |
//! | `guard` | epoch guards for readers outside transactions |
//! | `api` | `atomically` and its variants, `startup` |
//! | `loom_hooks` | fault injection and thread exit for the loom models (loom builds only) |
//!
//! Above the runtime, [`Stats`](crate::Stats) and [`sampler`](crate::sampler)
//! read what it keeps; below it are the engine, `TVar` and `TxOps`, which
//! know nothing of it.

pub(crate) mod api;
pub(crate) mod assist;
pub(crate) mod clock;
mod contention;
pub(crate) mod counters;
pub(crate) mod guard;
#[cfg(loom)]
pub(crate) mod loom_hooks;
mod reclaim;
pub(crate) mod registry;
mod retry;
pub(crate) mod sampling;
pub(crate) mod solo;
pub(crate) mod thread;
pub(crate) mod tx;
