//! The access sampler's switch: per thread, record every n-th
//! transactional access, for page-access footprints.
//!
//! When enabled on a thread, every `period`-th read or write of that
//! thread's *sampled* transactions (those run with a [`Sampled`] mode
//! configuration, `Config::new().sampled()`) is recorded as (address of
//! the `TVar`, read or write), up to `capacity` records; later samples are
//! counted as dropped until the records are taken. Plain transactions
//! have no sampler code in their accesses (see [`mode`](crate::mode));
//! in a sampled one, a disabled sampler costs one predictable branch per
//! access.
//!
//! [`Sampled`]: crate::Sampled
//!
//! # Examples
//!
//! ```
//! use skelaff_stm::{atomically_with, sampler, Config, TVar, TxOps};
//!
//! let v = TVar::new(0u64);
//! let sampled = Config::new().sampled();
//! sampler::enable(1, 16)?;
//! atomically_with(&sampled, |tx| tx.update(&v, |x| x + 1));
//! let s = sampler::take()?;
//! sampler::disable()?;
//! assert!(s.accesses.iter().any(|a| a.addr == v.addr() && a.kind == sampler::AccessKind::Write));
//! # Ok::<(), skelaff_stm::SamplerError>(())
//! ```

pub use crate::runtime::sampling::{Access, AccessKind, Samples};

use crate::error::SamplerError;
use crate::runtime::sampling::Sampler;
use crate::runtime::thread::{in_transaction, with_tx};

/// Runs `f` on this thread's recorder, between transactions.
fn between_transactions<R>(f: impl FnOnce(&mut Sampler) -> R) -> Result<R, SamplerError> {
    if in_transaction() {
        return Err(SamplerError::InTransaction);
    }
    Ok(with_tx(|tx| f(tx.sampler_mut())))
}

/// Starts sampling this thread's transactional accesses: every `period`-th
/// access is recorded, up to `capacity` records.
///
/// # Errors
///
/// [`SamplerError::Zero`] for a zero period or capacity;
/// [`SamplerError::InTransaction`] inside a transaction.
pub fn enable(period: u32, capacity: usize) -> Result<(), SamplerError> {
    if period == 0 {
        return Err(SamplerError::Zero { what: "period" });
    }
    if capacity == 0 {
        return Err(SamplerError::Zero { what: "capacity" });
    }
    between_transactions(|s| s.configure(period, capacity))
}

/// Stops sampling on this thread (records already taken stay until [`take`]).
///
/// # Errors
///
/// [`SamplerError::InTransaction`] inside a transaction.
pub fn disable() -> Result<(), SamplerError> {
    between_transactions(Sampler::disable)
}

/// Takes this thread's records and counters.
///
/// # Errors
///
/// [`SamplerError::InTransaction`] inside a transaction.
pub fn take() -> Result<Samples, SamplerError> {
    between_transactions(Sampler::take)
}

/// Takes this thread's records and counters into `into`, whose old records
/// are cleared; the two buffers are swapped, so a caller that drains often
/// (after every work-unit, say) allocates nothing once both have grown.
///
/// # Errors
///
/// [`SamplerError::InTransaction`] inside a transaction.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically_with, sampler, Config, TVar, TxOps};
///
/// let v = TVar::new(0u64);
/// let sampled = Config::new().sampled();
/// let mut samples = sampler::Samples::default();
/// sampler::enable(2, 16)?;
/// for _ in 0..3 {
///     atomically_with(&sampled, |tx| tx.update(&v, |x| x + 1)); // a read and a write
///     sampler::take_into(&mut samples)?;
///     assert_eq!(samples.seen, 2);
/// }
/// sampler::disable()?;
/// # Ok::<(), skelaff_stm::SamplerError>(())
/// ```
pub fn take_into(into: &mut Samples) -> Result<(), SamplerError> {
    between_transactions(|s| s.take_into(into))
}
