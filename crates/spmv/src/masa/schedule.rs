//! Loop work-sharing schedules as OpenMP's `OMP_SCHEDULE` names them, read
//! from the environment: MASA's preprocessing refuses any but `static`.

use core::fmt;
use core::str::FromStr;

use crate::error::{Error, Result};

/// A loop work-sharing schedule, as OpenMP's `OMP_SCHEDULE` names them.
///
/// It carries a chunk size, so it keeps a hand-written [`FromStr`]; an
/// unknown name is [`Error::UnknownName`] listing [`Schedule::NAMES`].
///
/// # Examples
///
/// ```
/// use skelaff_spmv::Schedule;
///
/// assert_eq!("dynamic,4".parse::<Schedule>()?, Schedule::Dynamic(Some(4)));
/// assert_eq!(Schedule::Guided(None).to_string(), "guided");
/// let e = "fastest".parse::<Schedule>().unwrap_err();
/// assert_eq!(e.to_string(), "unknown schedule `fastest`; expected one of: static, dynamic, guided, auto, runtime");
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Schedule {
    /// Contiguous, (almost) equal chunks, one per thread, fixed before the
    /// loop runs. With a chunk size, chunks of that size are dealt round
    /// robin instead.
    #[default]
    Static,
    /// `static,N`: chunks of `N` iterations dealt round robin.
    StaticChunk(usize),
    /// Chunks handed out at run time to whichever thread asks.
    Dynamic(Option<usize>),
    /// Shrinking chunks handed out at run time.
    Guided(Option<usize>),
    /// The runtime decides.
    Auto,
    /// Whatever the environment says at run time.
    Runtime,
}

impl Schedule {
    /// The schedule names, as OpenMP spells them.
    pub const NAMES: &'static [&'static str] = &["static", "dynamic", "guided", "auto", "runtime"];

    /// The schedule the environment asks for: `SKELAFF_SCHEDULE`, else
    /// `OMP_SCHEDULE`, else static. Like OpenMP, the name is case-insensitive.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownName`] or [`Error::BadSchedule`] when the variable
    /// does not parse.
    pub fn from_env() -> Result<Schedule> {
        for var in ["SKELAFF_SCHEDULE", "OMP_SCHEDULE"] {
            if let Ok(v) = std::env::var(var) {
                if !v.trim().is_empty() {
                    return v.parse();
                }
            }
        }
        Ok(Schedule::Static)
    }

    /// Whether each thread always gets the same contiguous chunk, which
    /// MASA needs.
    pub fn is_static(&self) -> bool {
        *self == Schedule::Static
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let chunk = |f: &mut fmt::Formatter<'_>, name: &str, c: Option<usize>| match c {
            Some(c) => write!(f, "{name},{c}"),
            None => f.write_str(name),
        };
        match *self {
            Schedule::Static => f.write_str("static"),
            Schedule::StaticChunk(c) => chunk(f, "static", Some(c)),
            Schedule::Dynamic(c) => chunk(f, "dynamic", c),
            Schedule::Guided(c) => chunk(f, "guided", c),
            Schedule::Auto => f.write_str("auto"),
            Schedule::Runtime => f.write_str("runtime"),
        }
    }
}

/// Parses OpenMP's forms: `static`, `static,4`, `dynamic`, `dynamic,2`,
/// `guided[,N]`, `auto`, `runtime`, optionally with a `monotonic:` or
/// `nonmonotonic:` modifier.
impl FromStr for Schedule {
    type Err = Error;
    fn from_str(s: &str) -> Result<Schedule> {
        let bad = || Error::BadSchedule { input: s.to_owned() };
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix("monotonic:").or_else(|| t.strip_prefix("nonmonotonic:")).unwrap_or(&t);
        let (kind, chunk) = match t.split_once(',') {
            Some((k, c)) => {
                let c: usize = c.trim().parse().map_err(|_| bad())?;
                if c == 0 {
                    return Err(bad());
                }
                (k.trim(), Some(c))
            }
            None => (t.trim(), None),
        };
        match (kind, chunk) {
            ("static", None) => Ok(Schedule::Static),
            ("static", Some(c)) => Ok(Schedule::StaticChunk(c)),
            ("dynamic", c) => Ok(Schedule::Dynamic(c)),
            ("guided", c) => Ok(Schedule::Guided(c)),
            ("auto", None) => Ok(Schedule::Auto),
            ("runtime", None) => Ok(Schedule::Runtime),
            ("auto" | "runtime", Some(_)) => Err(bad()),
            _ => Err(Error::unknown_name("schedule", s.trim(), Schedule::NAMES)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse() {
        for (s, want) in [
            ("static", Schedule::Static),
            ("STATIC", Schedule::Static),
            (" static,4", Schedule::StaticChunk(4)),
            ("dynamic", Schedule::Dynamic(None)),
            ("dynamic,2", Schedule::Dynamic(Some(2))),
            ("nonmonotonic:guided,8", Schedule::Guided(Some(8))),
            ("auto", Schedule::Auto),
            ("runtime", Schedule::Runtime),
        ] {
            assert_eq!(s.parse::<Schedule>().unwrap(), want, "{s}");
            assert_eq!(want.to_string().parse::<Schedule>().unwrap(), want);
        }
        for bad in ["dynamic,", "dynamic,x", "static,0", "auto,3"] {
            assert!(matches!(bad.parse::<Schedule>(), Err(Error::BadSchedule { .. })), "{bad}");
        }
        for unknown in ["", "stat", "fastest,2"] {
            let e = unknown.parse::<Schedule>().unwrap_err();
            assert!(
                matches!(e, Error::UnknownName(skelaff_numa_alloc::UnknownName { what: "schedule", .. })),
                "{unknown}: {e}"
            );
        }
    }
}
