//! The STAMP applications on the skelaff worklist skeleton.
//!
//! Each application lives in its own module with its STAMP flags (as
//! `clap` arguments, with STAMP's letters and meanings), an in-process
//! generator of its input, a sequential version, its [`Skeleton`] and the
//! STAMP self-check. [`app::main_for`] is the `main` of the example binaries
//! (`examples/vacation.rs`, …) and of `skelaff run APP`; every binary also
//! takes the [`CommonArgs`] flags (`--policy`,
//! `--helpers`, `--distribution`, `--mapping`, `--shuffle`,
//! `--sequential`, `--json`) and exits non-zero when its self-check fails.
//!
//! [`Skeleton`]: skelaff_worklist::Skeleton

pub mod app;
pub mod check;
pub mod figures;
pub mod genome;
pub mod intruder;
pub mod kmeans;
pub mod labyrinth;
pub mod peer;
pub mod phases;
pub mod plain;
pub mod shipped;
pub mod vacation;
pub mod yada;

pub use app::{App, AppError, CommonArgs, Entry, Outcome};
pub use check::CheckFailed;
pub use figures::Figures;

/// Every application, for `skelaff run` and `skelaff experiment`.
pub fn registry() -> Vec<Entry> {
    vec![
        Entry::of::<vacation::Vacation>(),
        Entry::of::<kmeans::Kmeans>(),
        Entry::of::<intruder::Intruder>(),
        Entry::of::<genome::Genome>(),
        Entry::of::<labyrinth::Labyrinth>(),
        Entry::of::<yada::Yada>(),
    ]
}

/// The application called `name`.
pub fn find(name: &str) -> Option<Entry> {
    registry().into_iter().find(|e| e.name == name)
}
