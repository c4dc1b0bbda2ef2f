//! `#[derive(Word)]`: every variant and newtype round-trips through a
//! `TVar` in a transaction, and decoding is total.

use std::num::NonZeroU16;

use skelaff_stm::{TPtr, TVar, TxOps, Word, atomically};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
enum Implicit {
    A,
    B,
    C,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
#[repr(i64)]
enum Explicit {
    Low = -3,
    Zero = 0,
    Mid = 40,
    Next,
    High = i64::MAX,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
#[repr(u8)]
enum Small {
    X = 1,
    Y = 200,
    Z = 255,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
#[repr(i8)]
enum Signed {
    Neg = -128,
    Pos = 127,
}

/// `repr` with an argument beside the integer type (`align(8)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
#[repr(u16, align(8))]
enum Aligned {
    First = 7,
    Second = 60_000,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
enum One {
    Only,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
#[repr(transparent)]
struct Id(u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
struct Named {
    raw: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
struct Nested(Id);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
struct OfEnum(Explicit);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
struct Generic<T>(T);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
struct Link(Option<TPtr<u64>>);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Word)]
struct Nz(NonZeroU16);

/// Writes each value to a fresh `TVar` in one transaction, reads it back in
/// another, and checks the direct round trip.
fn through_tvar<T: Word + PartialEq + std::fmt::Debug>(values: &[T]) {
    let vars: Vec<TVar<T>> = values.iter().map(|&v| TVar::new(v)).collect();
    // Rotate the values by one inside a transaction, then back: every
    // variant is written and read transactionally.
    let n = values.len();
    atomically(|tx| {
        let read: Vec<T> = vars.iter().map(|v| tx.read(v)).collect::<Result<_, _>>()?;
        for (i, v) in vars.iter().enumerate() {
            tx.write(v, read[(i + 1) % n])?;
        }
        Ok(())
    });
    for (i, v) in vars.iter().enumerate() {
        assert_eq!(v.load(), values[(i + 1) % n]);
    }
    let back: Vec<T> = atomically(|tx| vars.iter().map(|v| tx.read(v)).collect());
    let want: Vec<T> = (0..n).map(|i| values[(i + 1) % n]).collect();
    assert_eq!(back, want);
    for &x in values {
        assert_eq!(T::from_word(x.to_word()), x);
    }
}

#[test]
fn field_less_enums_round_trip_every_variant() {
    through_tvar(&[Implicit::A, Implicit::B, Implicit::C]);
    through_tvar(&[Explicit::Low, Explicit::Zero, Explicit::Mid, Explicit::Next, Explicit::High]);
    through_tvar(&[Small::X, Small::Y, Small::Z]);
    through_tvar(&[Signed::Neg, Signed::Pos]);
    through_tvar(&[One::Only]);
    through_tvar(&[Aligned::First, Aligned::Second]);
    assert_eq!(Aligned::Second.to_word(), 60_000);
    assert_eq!(Explicit::Next.to_word(), 41);
    assert_eq!(Explicit::Low.to_word(), (-3i64) as u64);
    assert_eq!(Small::Y.to_word(), 200);
}

#[test]
fn newtypes_round_trip() {
    through_tvar(&[Id(0), Id(7), Id(u32::MAX)]);
    through_tvar(&[Named { raw: -1 }, Named { raw: i64::MIN }, Named { raw: 5 }]);
    through_tvar(&[Nested(Id(3)), Nested(Id(4))]);
    through_tvar(&[OfEnum(Explicit::Low), OfEnum(Explicit::High)]);
    through_tvar(&[Generic(1.5f64), Generic(-0.0)]);
    through_tvar(&[Generic('x'), Generic('é')]);
    through_tvar(&[Nz(NonZeroU16::MIN), Nz(NonZeroU16::MAX)]);
    let p = TPtr::from_box(Box::new(9u64));
    through_tvar(&[Link(None), Link(Some(p))]);
    // SAFETY: `p` came from `from_box`, no TVar above outlives this line,
    // and it is not used again.
    drop(unsafe { p.into_box() });
}

#[test]
fn unknown_words_decode_to_the_first_variant() {
    for w in [2, 3, 39, 42, u64::MAX, 1 << 40] {
        assert_eq!(Explicit::from_word(w), Explicit::Low, "word {w}");
    }
    for w in [0, 2, 199, 256, 1 << 8 | 200] {
        assert_eq!(Small::from_word(w), Small::X, "word {w}");
    }
    // A repr(i8) discriminant is sign-extended: -128 is not 128.
    assert_eq!(Signed::from_word(128), Signed::Neg);
    assert_eq!(Signed::from_word((-128i64) as u64), Signed::Neg);
    assert_eq!(Signed::from_word(127), Signed::Pos);
    assert_eq!(Implicit::from_word(u64::MAX), Implicit::A);
    assert_eq!(One::from_word(12345), One::Only);
}

#[test]
fn a_local_type_derives_too() {
    #[derive(Clone, Copy, Debug, PartialEq, Word)]
    enum Local {
        P,
        Q = 9,
    }
    through_tvar(&[Local::P, Local::Q]);
}

#[test]
fn the_path_can_be_renamed() {
    mod elsewhere {
        pub(crate) use skelaff_stm as renamed;
    }
    #[derive(Clone, Copy, Debug, PartialEq, Word)]
    #[word(crate = elsewhere::renamed)]
    struct Via(u16);
    through_tvar(&[Via(1), Via(2)]);
}
