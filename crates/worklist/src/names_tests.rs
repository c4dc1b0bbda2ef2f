//! The names of this crate's enums, pinned: what each variant displays
//! (padded as a width asks), what parses to it (aliases too), its
//! `&'static str`, and the list of names an unknown one's error gives.
//! First run against strum 0.28's derives, then against
//! `skelaff_numa_alloc::enum_names!`, which replaced them (issue 40): the
//! strings must not change.

use crate::{Distribution, Error, HelperSite, Helpers, NoHelper, PagePolicy, ThreadMapping, TxAssist};
use skelaff_numa_alloc::names::pinned::{parsed, shown, static_str};

#[test]
fn distribution() {
    let table = [(Distribution::Shared, "shared"), (Distribution::PerNode, "per-node")];
    shown(&table);
    parsed(&table, &[(Distribution::PerNode, "pernode")]);
    static_str(&table);
    assert_eq!(Distribution::VARIANTS, table.map(|(_, n)| n));
    let e = "Shared".parse::<Distribution>().unwrap_err();
    assert!(matches!(e, Error::UnknownName(_)));
    assert_eq!(e.to_string(), "unknown distribution `Shared`; expected one of: shared, per-node");
}

#[test]
fn no_helper() {
    let table = [
        (NoHelper::Off, "helpers off"),
        (NoHelper::NoImplementation, "no helper implementation given (Worklist::run_with)"),
        (NoHelper::NotPinned, "the workers are not pinned, so no cache is known to be shared"),
        (NoHelper::NoIdleSharedCpu, "no idle CPU shares its last-level cache"),
        (NoHelper::NoPlace, "the placement gave it no helper place"),
    ];
    shown(&table);
    static_str(&table);
}

#[test]
fn placement_names() {
    let table =
        [(ThreadMapping::Scatter, "scatter"), (ThreadMapping::Compact, "compact"), (ThreadMapping::None, "none")];
    shown(&table);
    parsed(&table, &[]);
    static_str(&table);
    assert_eq!(ThreadMapping::VARIANTS, table.map(|(_, n)| n));
    let sites = [
        (HelperSite::Dedicated, "dedicated"),
        (HelperSite::SharedCpu, "shared-cpu"),
        (HelperSite::OtherCache, "other-cache"),
        (HelperSite::WorkerCpu, "worker-cpu"),
        (HelperSite::Unpinned, "unpinned"),
    ];
    shown(&sites);
    static_str(&sites);
}

#[test]
fn config_names() {
    let policies = [
        (PagePolicy::Auto, "auto"),
        (PagePolicy::FirstTouch, "first-touch"),
        (PagePolicy::Bind, "bind"),
        (PagePolicy::Cyclic, "cyclic"),
        (PagePolicy::Interleave, "interleave"),
    ];
    shown(&policies);
    parsed(&policies, &[]);
    static_str(&policies);
    assert_eq!(PagePolicy::VARIANTS, policies.map(|(_, n)| n));
    let helpers = [(Helpers::Auto, "auto"), (Helpers::On, "on"), (Helpers::Off, "off")];
    shown(&helpers);
    parsed(&helpers, &[]);
    static_str(&helpers);
    assert_eq!(Helpers::VARIANTS, helpers.map(|(_, n)| n));
    let assist = [(TxAssist::Off, "off"), (TxAssist::On, "on"), (TxAssist::OnThrottle, "on+throttle")];
    shown(&assist);
    parsed(&assist, &[]);
    static_str(&assist);
    assert_eq!(TxAssist::VARIANTS, assist.map(|(_, n)| n));
    assert_eq!(
        "firsttouch".parse::<PagePolicy>().unwrap_err().to_string(),
        "unknown page policy `firsttouch`; expected one of: auto, first-touch, bind, cyclic, interleave"
    );
}
