//! [`Bytes`], a byte count written for people: below every module that
//! words a size (the errors, the selection's reasons, the memory in use).

use core::fmt;

/// A byte count for people: `64 MiB`, `15.2 GiB`, `100 B`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if b >= 1 << shift {
                return if b % (1 << shift) == 0 {
                    write!(f, "{} {unit}", b >> shift)
                } else {
                    write!(f, "{:.1} {unit}", b as f64 / (1u64 << shift) as f64)
                };
            }
        }
        write!(f, "{b} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_print_in_the_largest_whole_or_tenth_unit() {
        assert_eq!(Bytes(100).to_string(), "100 B");
        assert_eq!(Bytes(64 << 20).to_string(), "64 MiB");
        assert_eq!(Bytes(3 << 29).to_string(), "1.5 GiB");
    }
}
