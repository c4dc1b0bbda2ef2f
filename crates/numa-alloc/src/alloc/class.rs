//! Size classes, and which path (small, medium, large) serves a layout.
//!
//! | class index | sizes | step |
//! |---|---|---|
//! | 0..=7 | 16, 32, …, 128 | 16 |
//! | 8 + 4·(b−7) + (j−1) | 2^b + j·2^(b−2), j = 1..=4, b = 7..=14 | 2^(b−2) |
//!
//! so 160, 192, 224, 256, 320, …, 28 KiB, 32 KiB: 40 classes, at most 25%
//! rounding waste above 128 bytes. Every class of the band (2^b, 2^(b+1)]
//! is a multiple of 2^(b−2), and the band's first and third classes are
//! 2^b·5/4 and 2^b·3/2. It follows that the smallest class at or above
//! `round_up(size, align)` is a multiple of `align` for every power of two
//! `align` up to the page size (checked exhaustively in the tests). Blocks of
//! a span start at a 64 KiB-aligned address and are `class size` apart, so
//! every block of such a class is aligned as asked.

use super::chunk::{UNIT_SHIFT, UNIT_SIZE, UNITS};

/// Number of small size classes.
pub(crate) const NCLASS: usize = 40;
/// The largest small block.
pub(crate) const SMALL_MAX: usize = 32 << 10;
/// The largest alignment the small path serves (the base page size on every
/// Linux target this crate supports is at least 4 KiB).
pub(crate) const SMALL_MAX_ALIGN: usize = 4096;
/// The largest medium block: 8 units, so that three fit in a chunk.
pub(crate) const MEDIUM_MAX: usize = 8 * UNIT_SIZE;
/// The largest alignment the medium path serves: units are unit-aligned.
pub(crate) const MEDIUM_MAX_ALIGN: usize = UNIT_SIZE;

/// Which allocator path a layout takes. Deterministic in `(size, align)`, so
/// `dealloc` and `realloc` recompute it from the layout they are given.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Route {
    /// A block of small class `c`, carved from a span of a chunk.
    Small(usize),
    /// A run of this many units of a chunk.
    Medium(usize),
    /// Its own mapping.
    Large,
}

const fn class_size_of(c: usize) -> usize {
    if c < 8 {
        (c + 1) * 16
    } else {
        let b = (c - 8) / 4 + 7;
        let j = (c - 8) % 4 + 1;
        (1 << b) + j * (1 << (b - 2))
    }
}

/// Block size of each class.
pub(crate) static CLASS_SIZE: [u32; NCLASS] = {
    let mut t = [0u32; NCLASS];
    let mut c = 0;
    while c < NCLASS {
        t[c] = class_size_of(c) as u32;
        c += 1;
    }
    t
};

/// Units of a span of each class: one for blocks up to 8 KiB, then enough
/// for at least 8 blocks (2 units for 16 KiB, 4 for 32 KiB).
pub(crate) static CLASS_UNITS: [u8; NCLASS] = {
    let mut t = [0u8; NCLASS];
    let mut c = 0;
    while c < NCLASS {
        let need = (class_size_of(c) * 8).div_ceil(UNIT_SIZE);
        t[c] = need.next_power_of_two() as u8;
        c += 1;
    }
    t
};

/// Blocks in a span of each class.
pub(crate) static CLASS_CAPACITY: [u32; NCLASS] = {
    let mut t = [0u32; NCLASS];
    let mut c = 0;
    while c < NCLASS {
        t[c] = ((CLASS_UNITS[c] as usize * UNIT_SIZE) / class_size_of(c)) as u32;
        c += 1;
    }
    t
};

/// Class of sizes up to 1 KiB with alignment up to 16, by `(size + 15) / 16`.
static LUT: [u8; 65] = {
    let mut t = [0u8; 65];
    let mut i = 0;
    while i < 65 {
        t[i] = class_of_slow(if i == 0 { 1 } else { i * 16 }) as u8;
        i += 1;
    }
    t
};

/// The class of a size in `1..=SMALL_MAX` (0 is treated as 1).
const fn class_of_slow(size: usize) -> usize {
    if size <= 128 {
        return if size == 0 { 0 } else { (size - 1) / 16 };
    }
    let s = size - 1;
    let b = (usize::BITS - 1 - s.leading_zeros()) as usize; // 2^b <= s < 2^(b+1), so size is in (2^b, 2^(b+1)]
    let step = 1usize << (b - 2);
    let j = (size - (1 << b)).div_ceil(step); // 1..=4
    8 + (b - 7) * 4 + (j - 1)
}

/// The route of a layout: the small class, the medium unit count, or large.
#[inline(always)]
pub(crate) fn route(size: usize, align: usize) -> Route {
    if align <= 16 && size <= 1024 {
        // `(size + 15) >> 4` is at most 64 here.
        return Route::Small(LUT[(size + 15) >> 4] as usize);
    }
    route_slow(size, align)
}

#[inline]
fn route_slow(size: usize, align: usize) -> Route {
    if align <= SMALL_MAX_ALIGN {
        // align is a power of two no larger than 4096, so this cannot overflow
        // for sizes a Layout accepts (at most isize::MAX rounded to align).
        let rounded = (size + align - 1) & !(align - 1);
        if rounded <= SMALL_MAX {
            return Route::Small(class_of_slow(rounded));
        }
    }
    if align <= MEDIUM_MAX_ALIGN && size <= MEDIUM_MAX {
        return Route::Medium(size.max(1).div_ceil(UNIT_SIZE));
    }
    Route::Large
}

const _: () = {
    assert!(CLASS_SIZE[NCLASS - 1] as usize == SMALL_MAX);
    assert!(MEDIUM_MAX / UNIT_SIZE < UNITS);
    assert!(UNIT_SIZE == 1 << UNIT_SHIFT);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_ascend_and_end_at_small_max() {
        for c in 1..NCLASS {
            assert!(CLASS_SIZE[c] > CLASS_SIZE[c - 1]);
            assert!(CLASS_CAPACITY[c] >= 8, "class {c}");
            assert!(CLASS_UNITS[c].is_power_of_two() && (CLASS_UNITS[c] as usize) < UNITS);
        }
        assert_eq!(&CLASS_SIZE[..12], &[16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256]);
        assert_eq!(CLASS_SIZE[NCLASS - 1] as usize, SMALL_MAX);
    }

    #[test]
    fn every_size_and_alignment_gets_a_fitting_aligned_class() {
        let mut align = 1;
        while align <= 1 << 20 {
            for size in 0..=(MEDIUM_MAX + 3 * UNIT_SIZE) {
                match route(size, align) {
                    Route::Small(c) => {
                        let cs = CLASS_SIZE[c] as usize;
                        assert!(cs >= size, "size {size} align {align} class {cs}");
                        assert_eq!(cs % align.min(cs), 0, "size {size} align {align} class {cs}");
                        assert!(align <= SMALL_MAX_ALIGN);
                        // the smallest fitting class
                        let rounded = size.next_multiple_of(align).max(1);
                        assert!(c == 0 || (CLASS_SIZE[c - 1] as usize) < rounded, "size {size} align {align}");
                    }
                    Route::Medium(units) => {
                        assert!(units * UNIT_SIZE >= size && (units - 1) * UNIT_SIZE < size.max(1));
                        assert!(align <= MEDIUM_MAX_ALIGN && size <= MEDIUM_MAX);
                    }
                    Route::Large => assert!(size > MEDIUM_MAX || align > MEDIUM_MAX_ALIGN),
                }
            }
            align *= 2;
        }
    }

    #[test]
    fn lookup_table_matches_the_formula() {
        for size in 0..=1024 {
            assert_eq!(route(size, 8), Route::Small(class_of_slow(size)), "size {size}");
        }
        assert_eq!(route(1025, 8), Route::Small(class_of_slow(1025)));
        assert_eq!(route(SMALL_MAX + 1, 8), Route::Medium(1));
        assert_eq!(route(MEDIUM_MAX + 1, 8), Route::Large);
        assert_eq!(route(8, 1 << 17), Route::Large);
    }
}
