#![doc = include_str!("../README.md")]

pub mod assist;
pub mod collections;
mod config;
mod engine;
mod erased;
pub mod error;
pub mod lockword;
pub mod mode;
mod primitive;
// The protocol without the runtime: public in loom builds only, for the
// models in tests/loom.rs (see the module docs).
#[cfg(loom)]
pub mod raw;
#[cfg(not(loom))]
#[allow(unreachable_pub)]
mod raw;
mod runtime;
pub mod sampler;
pub mod solo;
mod stats;
#[cfg(not(loom))]
mod sys;
mod tvar;
mod txops;
mod word;

pub use assist::{Assist, AssistPairing, AssistUnavailable, AuxPlacement, Throttle};
pub use collections::{TBTreeMap, THashMap, TList, TMap, TQueue, TSkipMap};
pub use config::{Config, ContentionManager};
pub use engine::clock;
pub use erased::ErasedBox;
pub use error::{AbortReason, ConfigError, SamplerError, Stop, TxError, UnknownName};
pub use mode::{Assisted, Mode, ModeFn, Plain, ReadOnly, Sampled, SampledAssisted, Solo, mode_name, with_mode};
pub use raw::{AUTO_HOLD, ClockPolicy};
#[cfg(feature = "fault-injection")]
pub use runtime::api::inject_aux_fault;
pub use runtime::api::{assist_pairing, atomically, atomically_with, startup, try_atomically, try_atomically_with};
pub use runtime::guard::{EpochGuard, epoch_guard};
pub use runtime::registry::{MAX_THREADS, asymmetric_fences};
/// The assisted-execution channel, for the loom model of its handshake
/// (`tests/loom_assist.rs`; loom builds only).
#[cfg(loom)]
pub mod assist_ring {
    pub use crate::runtime::assist::ring::*;
}
/// Hooks for the loom models (loom builds only).
#[cfg(loom)]
pub mod loom_hooks {
    pub use crate::runtime::loom_hooks::{
        collect_garbage, exit_thread, solo_allocs_dropped_at_once, without_solo_gate, without_start_fence,
    };
}
pub use runtime::clock::{set_thread_clock, thread_clock};
pub use runtime::thread::in_transaction;
pub use runtime::tx::Tx;
/// `#[derive(Word)]`: a field-less enum or a single-field newtype over a
/// `Word` as one transactional word (see the [`Word`](trait@Word) trait).
#[cfg(feature = "derive")]
pub use skelaff_derive::Word;
pub use stats::{AbortsByReason, Stats};
pub use tvar::{TVar, lock_addr};
pub use txops::TxOps;
pub use word::{TPtr, Word};

#[cfg(all(test, not(loom)))]
mod names_tests;
