//! The names of this crate's enums, pinned: what each variant displays
//! (padded as a width asks), what parses to it (aliases too), its
//! `&'static str`, and the list of names an unknown one's error gives.
//! First run against strum 0.28's derives, then against
//! `skelaff_numa_alloc::enum_names!`, which replaced them (issue 40): the
//! strings must not change.

use crate::{Assist, AuxPlacement, ConfigError, ContentionManager};
use skelaff_numa_alloc::names::pinned::{parsed, shown, static_str};

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
