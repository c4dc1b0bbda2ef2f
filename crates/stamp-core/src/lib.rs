//! What the STAMP applications of [`skelaff-stamp`] share: the [`App`]
//! trait each application implements, the [`CommonArgs`] flags every
//! binary takes, a run's [`Outcome`] and [`Figures`], the self-check's
//! failure types ([`check`]), the timed phases ([`phases`]), the
//! uninstrumented transactions of the sequential versions ([`plain`]), the
//! inputs embedded in the binary ([`shipped`]), and the comparison with
//! STAMP's C programs ([`peer`]).
//!
//! Each application is a crate of its own (`skelaff-stamp-vacation`, …)
//! over this one, so that the six compile side by side; `skelaff-stamp`
//! re-exports this crate's modules and the six applications under one
//! path (`skelaff_stamp::vacation`, `skelaff_stamp::CommonArgs`, …), the
//! path to use.
//!
//! [`skelaff-stamp`]: https://docs.rs/skelaff-stamp

pub mod app;
pub mod check;
pub mod figures;
pub mod peer;
pub mod phases;
pub mod plain;
pub mod shipped;

pub use app::{App, AppError, CommonArgs, Entry, Outcome};
pub use check::CheckFailed;
pub use figures::Figures;
