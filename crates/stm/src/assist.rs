//! Assisted execution (STM², Rico et al.): the names a user picks on
//! [`Config`](crate::Config) — the [`Assist`] mode, its [`Throttle`]
//! levers and where the auxiliary thread runs ([`AuxPlacement`]) — and
//! what the runtime reports back ([`AssistPairing`], [`AssistUnavailable`]).
//!
//! With [`Assist::Validation`] each application thread gets an auxiliary
//! thread that validates its transactional reads as they happen; the
//! runtime's `assist` module says exactly which checks move there and why
//! the transactions stay opaque.

use crate::error::ConfigError;

/// Whether transactions get an auxiliary thread.
///
/// Named `off` and `validation` on command lines.
///
/// # Examples
///
/// ```
/// use skelaff_stm::{Assist, ConfigError};
///
/// assert_eq!("validation".parse::<Assist>()?, Assist::Validation);
/// assert_eq!(Assist::default(), Assist::Off);
/// assert_eq!(
///     "both".parse::<Assist>().unwrap_err().to_string(),
///     "unknown assist mode `both`; expected one of: off, validation"
/// );
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Assist {
    /// Plain: the application thread validates its own reads.
    #[default]
    Off,
    /// An auxiliary thread validates the reads (STM²): the application
    /// thread aborts early when it finds a stale one, and a writing commit
    /// waits for its verdict instead of validating the read set itself.
    Validation,
}

skelaff_numa_alloc::enum_names! {
    Assist {
        Off => "off",
        Validation => "validation",
    }
    parse: ConfigError = unknown_assist;
}

fn unknown_assist(given: &str) -> ConfigError {
    ConfigError::UnknownName(crate::error::UnknownName {
        what: "assist mode",
        given: given.to_owned(),
        allowed: Assist::VARIANTS,
    })
}

/// The throttling levers of assisted execution, each on its own switch
/// (what Linux offers instead of POWER7's hardware thread priorities).
///
/// # Examples
///
/// ```
/// use skelaff_stm::Throttle;
///
/// assert_eq!(Throttle::ALL, Throttle { park_idle: true, pause_at_commit: true, help_when_full: true });
/// assert!(!Throttle::NONE.park_idle);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Throttle {
    /// (a) An auxiliary whose application thread is outside transactions
    /// spins briefly, then parks until the next transaction begins
    /// (instead of spinning on the ring the whole time).
    pub park_idle: bool,
    /// (b) An application thread waiting at commit for its auxiliary spins
    /// with the `pause` hint and yields its CPU now and then (so an
    /// auxiliary sharing that CPU can run), instead of a bare busy loop.
    pub pause_at_commit: bool,
    /// (c) An application thread whose ring is half full stops sending
    /// and validates the rest of its reads itself at commit (instead of
    /// sending until the ring is full).
    pub help_when_full: bool,
}

impl Throttle {
    /// No lever: the auxiliary spins on its ring all the time.
    pub const NONE: Throttle = Throttle { park_idle: false, pause_at_commit: false, help_when_full: false };
    /// Every lever.
    pub const ALL: Throttle = Throttle { park_idle: true, pause_at_commit: true, help_when_full: true };
}

/// Where an auxiliary thread may run.
///
/// # Examples
///
/// ```
/// use skelaff_stm::AuxPlacement;
///
/// assert_eq!(AuxPlacement::default(), AuxPlacement::SharedCache);
/// assert_eq!("anywhere".parse::<AuxPlacement>()?, AuxPlacement::Anywhere);
/// # Ok::<(), skelaff_stm::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuxPlacement {
    /// Pinned to a CPU that shares the application thread's last-level
    /// cache and that no other auxiliary and not the application thread
    /// itself uses; without one, assisted mode is unavailable and
    /// transactions run plain ([`AssistUnavailable::NoFreeCpu`]).
    #[default]
    SharedCache,
    /// Not pinned: the scheduler places it, possibly on the application
    /// thread's own CPU (for tests, and to measure oversubscription).
    Anywhere,
}

skelaff_numa_alloc::enum_names! {
    AuxPlacement {
        SharedCache => "shared-cache",
        Anywhere => "anywhere",
    }
    parse: ConfigError = unknown_placement;
}

fn unknown_placement(given: &str) -> ConfigError {
    ConfigError::UnknownName(crate::error::UnknownName {
        what: "auxiliary placement",
        given: given.to_owned(),
        allowed: AuxPlacement::VARIANTS,
    })
}

/// Where the calling thread's auxiliary runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssistPairing {
    /// The application thread's CPU when the pairing was made (`None`
    /// with [`AuxPlacement::Anywhere`]).
    pub app_cpu: Option<usize>,
    /// The auxiliary's CPU (`None` with [`AuxPlacement::Anywhere`]).
    pub aux_cpu: Option<usize>,
}

/// Why a thread's transactions run plain although [`Assist::Validation`]
/// was asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssistUnavailable {
    /// Every CPU sharing the application thread's last-level cache is the
    /// application thread's own or taken by another auxiliary.
    #[error(
        "no free CPU shares the last-level cache of CPU {app_cpu} (the application thread's); {taken} CPU(s) of that cache are taken; transactions run without assistance"
    )]
    NoFreeCpu {
        /// The application thread's CPU.
        app_cpu: usize,
        /// The CPUs of its cache that are taken (itself included).
        taken: usize,
    },
    /// The machine's topology or the thread's CPU could not be read.
    #[error("cannot place an auxiliary thread: {message}")]
    Topology {
        /// What numa-alloc reported.
        message: String,
    },
    /// The operating system refused to start the auxiliary thread.
    #[error("cannot start an auxiliary thread: {message}")]
    Spawn {
        /// What the OS reported.
        message: String,
    },
    /// Loom builds model the ring; they start no auxiliary threads.
    #[error("loom builds start no auxiliary threads")]
    Loom,
}
