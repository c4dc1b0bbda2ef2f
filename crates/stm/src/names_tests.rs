//! The names of this crate's enums, pinned: what each variant displays
//! (padded as a width asks), what parses to it (aliases too), its
//! `&'static str`, and the list of names an unknown one's error gives.
//! First run against strum 0.28's derives, then against
//! `skelaff_numa_alloc::enum_names!`, which replaced them (issue 40): the
//! strings must not change.

use core::fmt::{Debug, Display};
use core::str::FromStr;

/// Each value displays as its name, also when padded.
fn shown<T: Display>(table: &[(T, &str)]) {
    for (value, name) in table {
        assert_eq!(value.to_string(), *name);
        assert_eq!(format!("[{value:>40}]"), format!("[{name:>40}]"));
        assert_eq!(format!("[{value:<40}]"), format!("[{name:<40}]"));
    }
}

/// Each name (and each alias) parses to its value, by `FromStr` and by `TryFrom<&str>`.
fn parsed<T>(table: &[(T, &str)], aliases: &[(T, &str)])
where
    T: FromStr + for<'a> TryFrom<&'a str> + PartialEq + Debug + Copy,
{
    for (value, name) in table.iter().chain(aliases) {
        assert_eq!(name.parse::<T>().ok(), Some(*value), "{name:?}");
        assert_eq!(T::try_from(name).ok(), Some(*value), "{name:?}");
    }
}

/// Each value's `&'static str` is its name.
fn static_str<T: Copy>(table: &[(T, &str)])
where
    &'static str: From<T>,
{
    for (value, name) in table {
        assert_eq!(<&'static str>::from(*value), *name);
    }
}

use crate::{Assist, AuxPlacement, ConfigError, ContentionManager};

#[test]
fn assist() {
    let table = [(Assist::Off, "off"), (Assist::Validation, "validation")];
    shown(&table);
    parsed(&table, &[]);
    static_str(&table);
    assert_eq!(Assist::VARIANTS, table.map(|(_, n)| n));
    let e = "on".parse::<Assist>().unwrap_err();
    assert!(matches!(e, ConfigError::UnknownName(_)));
    assert_eq!(e.to_string(), "unknown assist mode `on`; expected one of: off, validation");
}

#[test]
fn aux_placement() {
    let table = [(AuxPlacement::SharedCache, "shared-cache"), (AuxPlacement::Anywhere, "anywhere")];
    shown(&table);
    parsed(&table, &[]);
    static_str(&table);
    assert_eq!(AuxPlacement::VARIANTS, table.map(|(_, n)| n));
    assert_eq!(
        "shared_cache".parse::<AuxPlacement>().unwrap_err().to_string(),
        "unknown auxiliary placement `shared_cache`; expected one of: shared-cache, anywhere"
    );
}

#[test]
fn contention_manager() {
    let other = ContentionManager::Backoff { min_spins: 1, max_spins: 2 };
    let table = [(ContentionManager::Suicide, "suicide"), (ContentionManager::BACKOFF, "backoff"), (other, "backoff")];
    shown(&table);
    static_str(&table);
    assert_eq!(ContentionManager::VARIANTS, ["suicide", "backoff"]);
    // Its `FromStr` is hand-written (`Backoff` carries its windows); it has no `TryFrom<&str>`.
    for (value, name) in &table[..2] {
        assert_eq!(name.parse::<ContentionManager>().ok(), Some(*value));
    }
}
