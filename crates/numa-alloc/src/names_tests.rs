//! The names of this crate's enums, pinned: what each variant displays
//! (padded as a width asks), what parses to it (aliases too), its
//! `&'static str`, and the list of names an unknown one's error gives.
//! First run against strum 0.28's derives, then against
//! `skelaff_numa_alloc::enum_names!`, which replaced them (issue 40): the
//! strings must not change.

use crate::names::pinned::{parsed, shown, static_str};
use crate::{Error, Mapping};

#[test]
fn mapping() {
    let table = [(Mapping::Scatter, "scatter"), (Mapping::Compact, "compact")];
    shown(&table);
    parsed(&table, &[]);
    static_str(&table);
    assert_eq!(Mapping::VARIANTS, table.map(|(_, n)| n));
    let e = "Scatter".parse::<Mapping>().unwrap_err();
    assert!(matches!(e, Error::UnknownName(_)));
    assert_eq!(e.to_string(), "unknown thread mapping `Scatter`; expected one of: scatter, compact");
}
