//! How a transaction is instrumented, as a type: the [`Mode`] of a
//! [`Tx`](crate::Tx) and of the [`Config`](crate::Config) that runs it.
//!
//! A transaction's reads and writes are the hot path of every program on
//! the STM. Two features may watch them: the access sampler (every n-th
//! access recorded, for page-access footprints) and assisted validation
//! (every read streamed to an auxiliary thread, STM²). Checking at every
//! access whether either is on cost a plain transaction about 7
//! instructions per read (a red-black-tree lookup of 4096 keys went from
//! 461 to 552 instructions). So the choice is made once, in the type:
//! `Tx<'tcell, Plain>` has no sampler or assist code in its accesses at
//! all, and code that wants sampling or assistance runs its transactions
//! with a configuration of that mode, which monomorphizes the accesses
//! with the extra work in them.
//!
//! | mode | accesses tick the sampler | reads go to an auxiliary |
//! |---|---|---|
//! | [`Plain`] | no | no |
//! | [`Sampled`] | yes, while [`sampler::enable`](crate::sampler::enable)d | no |
//! | [`Assisted`] | no | yes |
//! | [`SampledAssisted`] | yes | yes |
//! | [`ReadOnly`] | no | no; and no read set (see below) |
//! | [`Solo`] | no | no; and, while the thread holds the solo gate, no lock checks, locks or validation |
//!
//! [`ReadOnly`] is a hint for transactions that only read (a lookup): they
//! run TL2's read-only protocol, which records no read set and never
//! validates — each read is checked against the snapshot as always, and a
//! word newer than the snapshot restarts the transaction with a new one
//! instead of extending it. If such a transaction writes after all, the
//! attempt is rolled back ([`AbortReason::ReadOnlyUpgrade`](crate::AbortReason::ReadOnlyUpgrade))
//! and the transaction runs again as a plain one, recording its reads.
//!
//! [`Solo`] is for a thread that runs transactions alone: a worklist run
//! with one worker. While the thread holds the [solo gate](crate::solo)
//! (which keeps every other transaction of the process out), its attempts
//! read words directly without recording them, write in place with an
//! undo log, and commit without locking, advancing the clock or
//! validating; without the gate (never taken, or given back because
//! another thread wanted to run a transaction) they are plain.
//!
//! Code generic over [`TxOps`](crate::TxOps) (the collections, a
//! worklist's `process`) runs in every mode unchanged; a caller that picks
//! the mode at run time (a command-line flag) dispatches once, to a
//! function generic over `M: Mode`.
//!
//! # Examples
//!
//! ```
//! use skelaff_stm::{atomically_with, sampler, Config, Mode, Plain, Sampled, TVar, TxOps};
//!
//! fn bump<M: Mode>(cfg: &skelaff_stm::Config<M>, v: &TVar<u64>) -> u64 {
//!     atomically_with(cfg, |tx| tx.update(v, |x| x + 1))
//! }
//!
//! let v = TVar::new(0);
//! sampler::enable(1, 16)?;
//! bump(&Config::new(), &v); // Plain: not sampled
//! bump(&Config::new().sampled(), &v); // Sampled: a read and a write recorded
//! let s = sampler::take()?;
//! sampler::disable()?;
//! assert_eq!(s.accesses.len(), 2);
//! assert_eq!((<Plain as Mode>::SAMPLED, <Sampled as Mode>::SAMPLED), (false, true));
//! # Ok::<(), skelaff_stm::SamplerError>(())
//! ```

use core::fmt::Debug;

mod sealed {
    pub trait Sealed {}
}

/// A transaction's instrumentation, fixed for the whole transaction (see
/// the [module docs](self)). Implemented by [`Plain`], [`Sampled`],
/// [`Assisted`], [`SampledAssisted`], [`ReadOnly`] and [`Solo`] only.
pub trait Mode: sealed::Sealed + Debug + Default + Copy + Eq + Send + Sync + 'static {
    /// Accesses tick this thread's access sampler (which records only
    /// while [enabled](crate::sampler::enable)).
    const SAMPLED: bool;
    /// Reads are streamed to an auxiliary thread that validates them.
    const ASSISTED: bool;
    /// Attempts run read-only (no read set) until one writes.
    const READ_ONLY: bool;
    /// Attempts run the solo protocol while this thread holds the
    /// [solo gate](crate::solo) (reads check no lock; commits lock nothing and skip validation).
    const SOLO: bool;
    /// This mode with sampling on.
    type WithSampling: Mode;
    /// This mode with assisted validation on.
    type WithAssist: Mode;
}

macro_rules! modes {
    ($($(#[$doc:meta])* $name:ident: sampled $s:literal, assisted $a:literal, read_only $r:literal,
       solo $solo:literal, with_s $ws:ident, with_a $wa:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name;
        impl sealed::Sealed for $name {}
        impl Mode for $name {
            const SAMPLED: bool = $s;
            const ASSISTED: bool = $a;
            const READ_ONLY: bool = $r;
            const SOLO: bool = $solo;
            type WithSampling = $ws;
            type WithAssist = $wa;
        }
    )*};
}

modes! {
    /// No instrumentation: the accesses are the protocol's and nothing else.
    Plain: sampled false, assisted false, read_only false, solo false,
        with_s Sampled, with_a Assisted;
    /// Every access ticks the thread's access sampler.
    Sampled: sampled true, assisted false, read_only false, solo false,
        with_s Sampled, with_a SampledAssisted;
    /// Reads are validated by an auxiliary thread as well (STM²; see
    /// [`Assist`](crate::Assist)).
    Assisted: sampled false, assisted true, read_only false, solo false,
        with_s SampledAssisted, with_a Assisted;
    /// Sampled and assisted.
    SampledAssisted: sampled true, assisted true, read_only false, solo false,
        with_s SampledAssisted, with_a SampledAssisted;
    /// Read-only first: no read set, no validation (see the module docs);
    /// sampling or assistance turn the hint off.
    ReadOnly: sampled false, assisted false, read_only true, solo false,
        with_s Sampled, with_a Assisted;
    /// Solo when the thread holds the [solo gate](crate::solo), plain
    /// otherwise (see the module docs); sampling or assistance turn it off.
    Solo: sampled false, assisted false, read_only false, solo true,
        with_s Sampled, with_a Assisted;
}

/// The name of mode `M`, for reports: `plain`, `sampled`, `assisted` or
/// `sampled+assisted`.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{mode_name, Assisted, Plain};
///
/// assert_eq!(mode_name::<Plain>(), "plain");
/// assert_eq!(mode_name::<Assisted>(), "assisted");
/// ```
pub const fn mode_name<M: Mode>() -> &'static str {
    if M::READ_ONLY {
        return "read-only";
    }
    if M::SOLO {
        return "solo";
    }
    match (M::SAMPLED, M::ASSISTED) {
        (false, false) => "plain",
        (true, false) => "sampled",
        (false, true) => "assisted",
        (true, true) => "sampled+assisted",
    }
}

/// Code generic over the mode, for a caller that picks the mode at run time:
/// [`with_mode`] calls [`ModeFn::call`] with the chosen type.
pub trait ModeFn {
    /// What the call returns.
    type Output;
    /// Runs with mode `M`.
    fn call<M: Mode>(self) -> Self::Output;
}

/// Calls `f` with the mode that has sampling `sampled` and assistance
/// `assisted`: one branch, then code monomorphized for that mode.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically_with, with_mode, Config, Mode, ModeFn, TVar, TxOps};
///
/// struct Bump<'a>(&'a TVar<u64>);
/// impl ModeFn for Bump<'_> {
///     type Output = u64;
///     fn call<M: Mode>(self) -> u64 {
///         let cfg = Config::new().mode::<M>();
///         atomically_with(&cfg, |tx| tx.update(self.0, |x| x + 1))
///     }
/// }
///
/// let v = TVar::new(0);
/// let sampled = std::env::var_os("SAMPLE").is_some();
/// assert_eq!(with_mode(sampled, false, Bump(&v)), 1);
/// ```
pub fn with_mode<F: ModeFn>(sampled: bool, assisted: bool, f: F) -> F::Output {
    match (sampled, assisted) {
        (false, false) => f.call::<Plain>(),
        (true, false) => f.call::<Sampled>(),
        (false, true) => f.call::<Assisted>(),
        (true, true) => f.call::<SampledAssisted>(),
    }
}
