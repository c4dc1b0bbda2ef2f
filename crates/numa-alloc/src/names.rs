//! `enum_names!`: the names of a fieldless enum (a thread mapping, a page
//! policy's mode, a scheme) written once: `Display`, the list of names,
//! `&'static str` from a value and, where a parse error is given, `FromStr`
//! and `TryFrom<&str>`. The skelaff crates name their enums with it rather
//! than with strum's derives, whose proc-macro crates (and the syn 2 they
//! needed) made a default build of `skelaff` larger (issue 40).

/// Implements the names of a fieldless enum, one name per variant.
///
/// ```text
/// enum_names! {
///     Mapping {
///         Scatter => "scatter",
///         Compact => "compact" | "packed",   // aliases: parsed, never written
///     }
///     parse: Error = unknown_mapping;       // optional; `ascii_case_insensitive` may follow
/// }
/// ```
///
/// Generates `Mapping::VARIANTS` (the names in the order listed, no
/// aliases), `Display` (the name, padded as `{:>10}` asks), `From<Mapping>`
/// and `From<&Mapping>` for `&'static str` (the name) and, with `parse`,
/// `TryFrom<&str>` and `FromStr` that accept a name or an alias (exactly,
/// or ignoring ASCII case with `ascii_case_insensitive`) and give
/// `unknown_mapping(given)` for anything else. The `match` over the
/// variants makes a variant left out, or listed twice, a compile error
/// (an unreachable pattern is one under `-D warnings`).
///
/// An implementation detail of the skelaff crates, not an API.
#[doc(hidden)]
#[macro_export]
macro_rules! enum_names {
    (
        $ty:ident { $($variant:ident => $name:literal $(| $alias:literal)*),+ $(,)? }
        parse: $err:ty = $unknown:path; ascii_case_insensitive
    ) => {
        $crate::enum_names! { $ty { $($variant => $name $(| $alias)*),+ } }

        impl ::core::convert::TryFrom<&str> for $ty {
            type Error = $err;

            fn try_from(s: &str) -> ::core::result::Result<$ty, $err> {
                $(
                    if s.eq_ignore_ascii_case($name) $(|| s.eq_ignore_ascii_case($alias))* {
                        return Ok($ty::$variant);
                    }
                )+
                Err($unknown(s))
            }
        }

        impl ::core::str::FromStr for $ty {
            type Err = $err;

            fn from_str(s: &str) -> ::core::result::Result<$ty, $err> {
                <$ty as ::core::convert::TryFrom<&str>>::try_from(s)
            }
        }
    };
    (
        $ty:ident { $($variant:ident => $name:literal $(| $alias:literal)*),+ $(,)? }
        parse: $err:ty = $unknown:path;
    ) => {
        $crate::enum_names! { $ty { $($variant => $name $(| $alias)*),+ } }

        impl ::core::convert::TryFrom<&str> for $ty {
            type Error = $err;

            fn try_from(s: &str) -> ::core::result::Result<$ty, $err> {
                match s {
                    $($name $(| $alias)* => Ok($ty::$variant),)+
                    _ => Err($unknown(s)),
                }
            }
        }

        impl ::core::str::FromStr for $ty {
            type Err = $err;

            fn from_str(s: &str) -> ::core::result::Result<$ty, $err> {
                <$ty as ::core::convert::TryFrom<&str>>::try_from(s)
            }
        }
    };
    (
        $ty:ident { $($variant:ident => $name:literal $(| $alias:literal)*),+ $(,)? }
    ) => {
        impl $ty {
            /// Every variant's name, in declaration order: what `Display`
            /// writes and what parsing accepts (with the aliases, if any).
            pub const VARIANTS: &'static [&'static str] = &[$($name),+];
        }

        impl ::core::convert::From<&$ty> for &'static str {
            fn from(value: &$ty) -> &'static str {
                match value {
                    $($ty::$variant => $name,)+
                }
            }
        }

        impl ::core::convert::From<$ty> for &'static str {
            fn from(value: $ty) -> &'static str {
                <&'static str>::from(&value)
            }
        }

        impl ::core::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.pad(<&'static str>::from(self))
            }
        }
    };
}

/// What the crates' tests of their names check, for every variant (the
/// `names_tests` module of each crate that names enums with
/// [`enum_names!`](crate::enum_names)). Not an API.
#[doc(hidden)]
pub mod pinned {
    use core::fmt::{Debug, Display};
    use core::str::FromStr;

    /// Each value displays as its name, also when padded.
    pub fn shown<T: Display>(table: &[(T, &str)]) {
        for (value, name) in table {
            assert_eq!(value.to_string(), *name);
            assert_eq!(format!("[{value:>40}]"), format!("[{name:>40}]"));
            assert_eq!(format!("[{value:<40}]"), format!("[{name:<40}]"));
        }
    }

    /// Each name (and each alias) parses to its value, by `FromStr` and by `TryFrom<&str>`.
    pub fn parsed<T>(table: &[(T, &str)], aliases: &[(T, &str)])
    where
        T: FromStr + for<'a> TryFrom<&'a str> + PartialEq + Debug + Copy,
    {
        for (value, name) in table.iter().chain(aliases) {
            assert_eq!(name.parse::<T>().ok(), Some(*value), "{name:?}");
            assert_eq!(T::try_from(name).ok(), Some(*value), "{name:?}");
        }
    }

    /// Each value's `&'static str` is its name.
    pub fn static_str<T: Copy>(table: &[(T, &str)])
    where
        &'static str: From<T>,
    {
        for (value, name) in table {
            assert_eq!(<&'static str>::from(*value), *name);
        }
    }
}
