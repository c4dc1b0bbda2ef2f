//! Transaction configuration: the contention manager and its names, the
//! transaction's [`Mode`] and the assisted-execution settings (see
//! [`assist`](crate::assist)).

use core::fmt;
use core::marker::PhantomData;
use core::str::FromStr;

use crate::assist::{Assist, AuxPlacement, Throttle};
use crate::error::ConfigError;
use crate::mode::{Mode, Plain, ReadOnly};

/// What a transaction does after a conflict, before it runs again.
///
/// Named `suicide` and `backoff` on command lines: `FromStr` reads those
/// names (`backoff` with the default windows, [`ContentionManager::BACKOFF`])
/// and `Display` writes them.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{ConfigError, ContentionManager};
///
/// assert_eq!("backoff".parse(), Ok(ContentionManager::BACKOFF));
/// assert_eq!(ContentionManager::Suicide.to_string(), "suicide");
/// let e = "polite".parse::<ContentionManager>().unwrap_err();
/// assert!(matches!(e, ConfigError::UnknownName(skelaff_stm::UnknownName { given, .. }) if given == "polite"));
/// assert_eq!(
///     "polite".parse::<ContentionManager>().unwrap_err().to_string(),
///     "unknown contention manager `polite`; expected one of: suicide, backoff"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentionManager {
    /// Abort and restart at once (TinySTM's default "suicide"); after every
    /// 8 consecutive aborts of one transaction, yield the CPU once (the
    /// conflicting thread may be descheduled while it holds its locks).
    Suicide,
    /// Abort, then wait a random number of spins drawn from `0..min(max_spins,
    /// min_spins << attempt)` (randomized exponential backoff); after 16
    /// attempts also yield the CPU. The draw is random so that two
    /// transactions that conflicted do not restart in lockstep (why this is
    /// not `crossbeam_utils::Backoff`, a deterministic wait for a condition).
    Backoff {
        /// Spins of the first backoff window.
        min_spins: u32,
        /// The largest window.
        max_spins: u32,
    },
}

impl ContentionManager {
    /// Randomized exponential backoff with the default windows (16 to 16384 spins).
    pub const BACKOFF: ContentionManager = ContentionManager::Backoff { min_spins: 16, max_spins: 1 << 14 };

    /// The managers' names, as `Display` writes them and `FromStr` reads them.
    pub const VARIANTS: &'static [&'static str] = &["suicide", "backoff"];
}

/// The manager's name (`backoff` whatever its windows).
impl From<ContentionManager> for &'static str {
    fn from(cm: ContentionManager) -> &'static str {
        match cm {
            ContentionManager::Suicide => "suicide",
            ContentionManager::Backoff { .. } => "backoff",
        }
    }
}

/// The manager's name (`backoff` whatever its windows).
impl From<&ContentionManager> for &'static str {
    fn from(cm: &ContentionManager) -> &'static str {
        (*cm).into()
    }
}

/// The manager's name (`backoff` whatever its windows), padded as a width asks.
impl fmt::Display for ContentionManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.into())
    }
}

impl FromStr for ContentionManager {
    type Err = ConfigError;

    /// `suicide` or `backoff` (with the default windows). Hand-written
    /// because `Backoff` carries its windows; the error lists the names.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "suicide" => Ok(ContentionManager::Suicide),
            "backoff" => Ok(ContentionManager::BACKOFF),
            other => Err(ConfigError::UnknownName(crate::error::UnknownName {
                what: "contention manager",
                given: other.to_owned(),
                allowed: ContentionManager::VARIANTS,
            })),
        }
    }
}

/// How [`atomically_with`](crate::atomically_with) runs a transaction: the
/// contention manager, and the transaction's [`Mode`] as a type parameter
/// (plain by default; [`Config::sampled`] and [`Config::assisted`] switch
/// it on, with the assisted mode's throttling levers and auxiliary
/// placement here too).
///
/// # Examples
///
/// ```
/// use skelaff_stm::{atomically_with, Config, ContentionManager, TVar, TxOps};
///
/// let cfg = Config::new().contention("backoff".parse::<ContentionManager>()?);
/// let v = TVar::new(1u8);
/// assert_eq!(atomically_with(&cfg, |tx| tx.read(&v)), 1);
/// # Ok::<(), skelaff_stm::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config<M: Mode = Plain> {
    /// The contention manager (default [`ContentionManager::Suicide`]).
    pub contention: ContentionManager,
    /// The throttling levers of assisted mode (default: none).
    pub throttle: Throttle,
    /// Where the auxiliary thread of assisted mode runs (default
    /// [`AuxPlacement::SharedCache`]).
    pub placement: AuxPlacement,
    mode: PhantomData<M>,
}

impl Config<Plain> {
    /// The default: suicide, plain (no sampling, no auxiliary thread).
    pub const DEFAULT: Config = Config {
        contention: ContentionManager::Suicide,
        throttle: Throttle::NONE,
        placement: AuxPlacement::SharedCache,
        mode: PhantomData,
    };

    /// The default configuration.
    pub const fn new() -> Self {
        Self::DEFAULT
    }

    /// The same settings for transactions that only read (a lookup): mode
    /// [`ReadOnly`], which records no read set (see [`mode`](crate::mode)).
    /// A transaction that writes after all still commits correctly: its
    /// read-only attempt is rolled back and it runs again as a plain one.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically_with, Config, TMap};
    ///
    /// let m: TMap<u32, u32> = TMap::new();
    /// atomically_with(&Config::new(), |tx| m.insert(tx, 1, 10));
    /// let lookup = Config::new().read_only();
    /// assert_eq!(atomically_with(&lookup, |tx| m.get(tx, &1)), Some(10));
    /// ```
    pub const fn read_only(self) -> Config<ReadOnly> {
        self.mode()
    }
}

impl<M: Mode> Config<M> {
    /// With contention manager `cm`.
    pub const fn contention(mut self, cm: ContentionManager) -> Self {
        self.contention = cm;
        self
    }

    /// The same settings in mode `N` (for code that picks the mode at run
    /// time: see [`with_mode`](crate::with_mode)).
    pub const fn mode<N: Mode>(self) -> Config<N> {
        Config { contention: self.contention, throttle: self.throttle, placement: self.placement, mode: PhantomData }
    }

    /// With the access sampler on: every access of these transactions
    /// ticks the thread's [`sampler`](crate::sampler).
    pub const fn sampled(self) -> Config<M::WithSampling> {
        self.mode()
    }

    /// With assisted validation ([`Assist::Validation`]): an auxiliary
    /// thread validates the reads (STM²; see [`assist`](crate::assist)).
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stm::{atomically_with, AuxPlacement, Config, TVar, TxOps};
    ///
    /// // `Anywhere`: this example may run where no CPU is free for a pinned
    /// // auxiliary (with the default placement it would then run plain).
    /// let cfg = Config::new().assisted().placement(AuxPlacement::Anywhere);
    /// let v = TVar::new(0u64);
    /// for _ in 0..100 {
    ///     atomically_with(&cfg, |tx| tx.update(&v, |x| x + 1));
    /// }
    /// assert_eq!(v.load(), 100);
    /// ```
    pub const fn assisted(self) -> Config<M::WithAssist> {
        self.mode()
    }

    /// Whether these transactions are sampled (the mode's [`Mode::SAMPLED`]).
    pub const fn is_sampled(&self) -> bool {
        M::SAMPLED
    }

    /// Whether these transactions ask for an auxiliary thread: their
    /// [`Assist`] setting.
    pub const fn assist(&self) -> Assist {
        if M::ASSISTED { Assist::Validation } else { Assist::Off }
    }

    /// With throttling levers `throttle` (for assisted mode).
    pub const fn throttle(mut self, throttle: Throttle) -> Self {
        self.throttle = throttle;
        self
    }

    /// With auxiliary placement `placement` (for assisted mode).
    pub const fn placement(mut self, placement: AuxPlacement) -> Self {
        self.placement = placement;
        self
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::DEFAULT
    }
}
