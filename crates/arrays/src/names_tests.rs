//! The names of this crate's enums, pinned: what each variant displays
//! (padded as a width asks), what parses to it (aliases too), its
//! `&'static str`, and the list of names an unknown one's error gives.
//! First run against strum 0.28's derives, then against
//! `skelaff_numa_alloc::enum_names!`, which replaced them (issue 40): the
//! strings must not change.

use crate::error::Error;
use crate::hints::{AccessPattern, Choice, Implementation, LargePages};
use skelaff_numa_alloc::names::pinned::{parsed, shown, static_str};

#[test]
fn hint_names() {
    let patterns = [(AccessPattern::Sequential, "sequential"), (AccessPattern::Random, "random")];
    shown(&patterns);
    parsed(&patterns, &[]);
    static_str(&patterns);
    assert_eq!(AccessPattern::VARIANTS, patterns.map(|(_, n)| n));
    let implementations = [
        (Implementation::Single, "single"),
        (Implementation::Distributed, "distributed"),
        (Implementation::Replicated, "replicated"),
        (Implementation::Partitioned, "partitioned"),
    ];
    shown(&implementations);
    parsed(&implementations, &[]);
    static_str(&implementations);
    assert_eq!(Implementation::VARIANTS, implementations.map(|(_, n)| n));
    let choices = [
        (Choice::Auto, "auto"),
        (Choice::Single, "single"),
        (Choice::Distributed, "distributed"),
        (Choice::Replicated, "replicated"),
        (Choice::Partitioned, "partitioned"),
    ];
    shown(&choices);
    parsed(&choices, &[]);
    static_str(&choices);
    assert_eq!(Choice::VARIANTS, choices.map(|(_, n)| n));
    let large = [
        (LargePages::Auto, "auto"),
        (LargePages::Off, "off"),
        (LargePages::Transparent, "transparent"),
        (LargePages::Explicit, "explicit"),
    ];
    shown(&large);
    parsed(&large, &[]);
    static_str(&large);
    assert_eq!(LargePages::VARIANTS, large.map(|(_, n)| n));
    let e = "huge".parse::<LargePages>().unwrap_err();
    assert!(matches!(e, Error::UnknownName(_)));
    assert_eq!(e.to_string(), "unknown large-page setting `huge`; expected one of: auto, off, transparent, explicit");
}
