//! What a failed self-check says: [`CheckFailed`] over each application's
//! typed failure (`vacation::BadTables`, `kmeans::BadClustering`,
//! `intruder::BadDetection`, `genome::BadSequence`, `labyrinth::BadRouting`,
//! `yada::BadMesh`, in the applications' crates, re-exported by
//! `skelaff-stamp`): what [`Outcome::check`](crate::Outcome::check) holds;
//! and [`Problems`], the first few of many problems a check found.
//!
//! A check that passes returns its report line (a `String`: what was
//! verified, printed after `check PASSED`); a failed one returns the
//! numbers that disagree, so a caller can match on them and a user reads
//! them in the message.

use std::error::Error;
use std::fmt;

/// A failed self-check: which application's, and its typed failure.
///
/// A boxed failure with the application's name rather than an enum over
/// the six applications' failures: every application builds an
/// [`Outcome`](crate::Outcome), so an enum naming all their failure types
/// beside it would make each application's module and the outcome's
/// depend on each other (`cargo import-cycles`). A caller that expects a
/// failure gets it back typed with [`CheckFailed::failure`] (a test, or the
/// CLI matching on one kind of failure); its `Display` and `source` are
/// the failure's own (the application's name is printed beside it by
/// [`Outcome`](crate::Outcome) and the CLI), and
/// [`CheckFailed::with_causes`] is the line to print.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::check::CheckFailed;
///
/// // An application's failure (genome's is `genome::BadSequence`).
/// #[derive(Debug, PartialEq)]
/// struct Differs { from: usize }
/// impl std::fmt::Display for Differs {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         write!(f, "the sequence differs from the gene from position {} on", self.from)
///     }
/// }
/// impl std::error::Error for Differs {}
///
/// let e = CheckFailed::new("genome", Differs { from: 2 });
/// assert_eq!(e.failure::<Differs>(), Some(&Differs { from: 2 }));
/// assert!(e.failure::<std::fmt::Error>().is_none());
/// assert_eq!((e.app(), e.to_string().as_str()),
///     ("genome", "the sequence differs from the gene from position 2 on"));
/// ```
#[derive(Debug)]
pub struct CheckFailed {
    app: &'static str,
    failure: Box<dyn Error + Send + Sync + 'static>,
}

impl CheckFailed {
    /// `app`'s check found `failure`.
    pub fn new(app: &'static str, failure: impl Error + Send + Sync + 'static) -> Self {
        CheckFailed { app, failure: Box::new(failure) }
    }

    /// The application whose check failed.
    pub fn app(&self) -> &'static str {
        self.app
    }

    /// The failure, if it is an `E` (each application's is its own enum:
    /// `vacation::BadTables`, `kmeans::BadClustering`, …).
    pub fn failure<E: Error + 'static>(&self) -> Option<&E> {
        self.failure.downcast_ref()
    }

    /// The failure and its causes, as one line (`what: why: …`): what the
    /// CLI prints after `check FAILED:` and the `--json` line's `check`.
    pub fn with_causes(&self) -> String {
        with_causes(self)
    }
}

impl fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.failure.fmt(f)
    }
}

impl Error for CheckFailed {
    /// The failure's cause (the failure itself is what `Display` shows).
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.failure.source()
    }
}

/// `e` and its causes, as one line.
pub(crate) fn with_causes(e: &dyn Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// The first few problems a check found (at most [`Problems::SHOWN`]), and
/// how many there were in all. Displays as `N problems: first; second; …`.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_core::check::Problems;
///
/// let mut p = Problems::default();
/// assert!(p.is_empty());
/// for flow in 0..7 {
///     p.note(format!("flow {flow} lost"));
/// }
/// assert_eq!((p.count, p.first.len()), (7, Problems::<String>::SHOWN));
/// assert!(p.to_string().starts_with("7 problems: flow 0 lost; flow 1 lost; "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problems<P> {
    /// How many problems were found.
    pub count: usize,
    /// The first of them, in the order found.
    pub first: Vec<P>,
}

impl<P> Default for Problems<P> {
    fn default() -> Self {
        Problems { count: 0, first: Vec::new() }
    }
}

impl<P> Problems<P> {
    /// How many problems are kept to show.
    pub const SHOWN: usize = 5;

    /// Counts `p`, and keeps it if fewer than [`Problems::SHOWN`] are kept.
    pub fn note(&mut self, p: P) {
        self.count += 1;
        if self.first.len() < Self::SHOWN {
            self.first.push(p);
        }
    }

    /// Whether no problem was found.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// `Ok(ok)` when no problem was found, else `Err(self)`.
    ///
    /// # Errors
    ///
    /// `self`, when a problem was found.
    pub fn into_result<T>(self, ok: T) -> Result<T, Self> {
        if self.is_empty() { Ok(ok) } else { Err(self) }
    }
}

impl<P: fmt::Display> fmt::Display for Problems<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} problems: ", self.count)?;
        for (i, p) in self.first.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}
