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
//! Each application is a crate of its own (`skelaff-stamp-vacation`, …,
//! over `skelaff-stamp-core`, what they share), so that a build compiles
//! the six side by side; this crate puts them back under one path.
//!
//! [`Skeleton`]: skelaff_worklist::Skeleton

pub use skelaff_stamp_core::{app, check, figures, peer, phases, plain, shipped};
pub use skelaff_stamp_genome as genome;
pub use skelaff_stamp_intruder as intruder;
pub use skelaff_stamp_kmeans as kmeans;
pub use skelaff_stamp_labyrinth as labyrinth;
pub use skelaff_stamp_vacation as vacation;
pub use skelaff_stamp_yada as yada;

pub use skelaff_stamp_core::{App, AppError, CheckFailed, CommonArgs, Entry, Figures, Outcome};

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
