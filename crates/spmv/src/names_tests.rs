//! The names of this crate's enums, pinned: what each variant displays
//! (padded as a width asks), what parses to it (aliases too), its
//! `&'static str`, and the list of names an unknown one's error gives.
//! First run against strum 0.28's derives, then against
//! `skelaff_numa_alloc::enum_names!`, which replaced them (issue 40): the
//! strings must not change.

use crate::nas::Class;
use crate::trace::{TouchKind, TracedArray};
use crate::{ArrayPlacement, Error, Simd, SplitKind, SymVariant};
use skelaff_numa_alloc::names::pinned::{parsed, shown};

#[test]
fn traced_arrays() {
    let table = [
        (TracedArray::RowPtr, "ptrA"),
        (TracedArray::ColIdx, "jA"),
        (TracedArray::Values, "A"),
        (TracedArray::X, "x"),
        (TracedArray::Y, "y"),
        (TracedArray::P, "p"),
        (TracedArray::Q, "q"),
        (TracedArray::R, "r"),
        (TracedArray::Z, "z"),
    ];
    shown(&table);
    parsed(&table, &[]);
    assert_eq!(TracedArray::VARIANTS, table.map(|(_, n)| n));
    assert_eq!(TracedArray::ALL, table.map(|(a, _)| a));
    assert!("X".parse::<TracedArray>().is_err());
    shown(&[(TouchKind::Read, "read"), (TouchKind::Write, "write")]);
}

#[test]
fn operator_names() {
    let sym = [(SymVariant::Duplicated, "duplicated"), (SymVariant::Single, "single")];
    shown(&sym);
    parsed(&sym, &[(SymVariant::Duplicated, "csc+csr")]);
    assert_eq!(SymVariant::VARIANTS, sym.map(|(_, n)| n));
    let split = [(SplitKind::Rows, "rows"), (SplitKind::Nnz, "nnz")];
    shown(&split);
    parsed(&split, &[]);
    assert_eq!(SplitKind::VARIANTS, split.map(|(_, n)| n));
    let placement = [
        (ArrayPlacement::FirstTouch, "first-touch"),
        (ArrayPlacement::Masa, "masa"),
        (ArrayPlacement::Interleave, "interleave"),
    ];
    shown(&placement);
    parsed(&placement, &[(ArrayPlacement::FirstTouch, "firsttouch")]);
    assert_eq!(ArrayPlacement::VARIANTS, placement.map(|(_, n)| n));
    let simd = [(Simd::Portable, "portable"), (Simd::Avx2, "avx2")];
    shown(&simd);
    parsed(&simd, &[]);
    assert_eq!(Simd::VARIANTS, simd.map(|(_, n)| n));
    let e = "AVX2".parse::<Simd>().unwrap_err();
    assert!(matches!(e, Error::UnknownName(_)));
    assert_eq!(e.to_string(), "unknown kernel level `AVX2`; expected one of: portable, avx2");
}

#[test]
fn nas_classes_ignore_ascii_case() {
    let table = [(Class::S, "S"), (Class::W, "W"), (Class::A, "A"), (Class::B, "B"), (Class::C, "C")];
    shown(&table);
    parsed(&table, &[(Class::S, "s"), (Class::W, "w"), (Class::A, "a"), (Class::B, "b"), (Class::C, "c")]);
    assert_eq!(Class::VARIANTS, table.map(|(_, n)| n));
    assert_eq!(
        "D".parse::<Class>().unwrap_err().to_string(),
        "unknown NAS CG class `D`; expected one of: S, W, A, B, C"
    );
}
