//! The names of this crate's enums, pinned: what each variant displays
//! (padded as a width asks), what parses to it (aliases too), its
//! `&'static str`, and the list of names an unknown one's error gives.
//! First run against strum 0.28's derives, then against
//! `skelaff_numa_alloc::enum_names!`, which replaced them (issue 40): the
//! strings must not change.

use crate::{AccessKind, Attribution, Error, PaperMachine, RowKind, Scheme};
use skelaff_numa_alloc::names::pinned::{parsed, shown, static_str};

#[test]
fn profile_names() {
    let kinds = [(AccessKind::Read, "read"), (AccessKind::Write, "write")];
    shown(&kinds);
    parsed(&kinds, &[]);
    static_str(&kinds);
    assert_eq!(AccessKind::VARIANTS, kinds.map(|(_, n)| n));
    let attributions = [(Attribution::None, "none"), (Attribution::AtEnd, "at-end"), (Attribution::Live, "live")];
    shown(&attributions);
    parsed(&attributions, &[]);
    assert_eq!(Attribution::VARIANTS, attributions.map(|(_, n)| n));
    let e = "at_end".parse::<Attribution>().unwrap_err();
    assert!(matches!(e, Error::UnknownName(_)));
    assert_eq!(e.to_string(), "unknown attribution `at_end`; expected one of: none, at-end, live");
}

#[test]
fn machine_report_and_scheme_names() {
    let machines = [(PaperMachine::Numa16, "numa16"), (PaperMachine::Numa32, "numa32")];
    shown(&machines);
    parsed(&machines, &[]);
    assert_eq!(PaperMachine::VARIANTS, machines.map(|(_, n)| n));
    let rows = [(RowKind::Measured, "measured"), (RowKind::Modelled, "modelled")];
    shown(&rows);
    parsed(&rows, &[]);
    assert_eq!(RowKind::VARIANTS, rows.map(|(_, n)| n));
    let schemes = [
        (Scheme::FirstTouch, "first-touch"),
        (Scheme::Migration, "migration"),
        (Scheme::OracleHigh, "oracle-high"),
        (Scheme::OracleCog, "oracle-cog"),
        (Scheme::Ideal, "ideal"),
    ];
    shown(&schemes);
    parsed(&schemes, &[]);
    static_str(&schemes);
    assert_eq!(Scheme::VARIANTS, schemes.map(|(_, n)| n));
    assert_eq!(Scheme::all().collect::<Vec<_>>(), schemes.map(|(s, _)| s));
}
