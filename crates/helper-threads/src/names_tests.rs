//! The names of this crate's enums, pinned: what each variant displays
//! (padded as a width asks), what parses to it (aliases too), its
//! `&'static str`, and the list of names an unknown one's error gives.
//! First run against strum 0.28's derives, then against
//! `skelaff_numa_alloc::enum_names!`, which replaced them (issue 40): the
//! strings must not change.

use crate::{ConfigError, Prefetch, StopReason};
use skelaff_numa_alloc::names::pinned::{parsed, shown, static_str};

#[test]
fn stop_reason() {
    let table = [
        (StopReason::LifespanExhausted, "lifespan exhausted"),
        (StopReason::WriteLogFull, "write log full"),
        (StopReason::Cancelled, "cancelled"),
        (StopReason::Unsupported, "operation not supported in a shadow"),
    ];
    shown(&table);
    static_str(&table);
}

#[test]
fn prefetch() {
    let table = [(Prefetch::Load, "load"), (Prefetch::Hint, "hint"), (Prefetch::HintLocks, "hint-locks")];
    shown(&table);
    parsed(&table, &[]);
    static_str(&table);
    assert_eq!(Prefetch::VARIANTS, table.map(|(_, n)| n));
    let e = "hint_locks".parse::<Prefetch>().unwrap_err();
    assert!(matches!(e, ConfigError::UnknownName(_)));
    assert_eq!(e.to_string(), "unknown prefetch mode `hint_locks`; expected one of: load, hint, hint-locks");
}
