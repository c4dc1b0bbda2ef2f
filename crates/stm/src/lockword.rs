//! The versioned write-lock word and the global clock.
//!
//! Every word's versioned lock (beside its value in its `TVar`) is one `u64`:
//!
//! | bits   | unlocked                    | locked (during a commit)                  |
//! |--------|-----------------------------|-------------------------------------------|
//! | 0      | `0`                         | `1` ([`LOCKED`])                          |
//! | 1..=10 | `0`                         | owner: the committing thread's id, 1..=1023 |
//! | 11..=63| version: clock value of the last commit that wrote the word | the version before locking (kept, so validation can still read it) |
//!
//! States and transitions:
//!
//! | from                | to                    | by                                    |
//! |---------------------|-----------------------|---------------------------------------|
//! | unlocked, version v | locked by o, version v | CAS by committer `o` (commit step 1) |
//! | locked by o, v      | unlocked, version wv  | store by `o` after write-back (step 4)|
//! | locked by o, v      | unlocked, version v   | store by `o` when its commit fails    |
//!
//! The global clock is a plain counter of commits (53 bits are enough for
//! 2.8 years at 100 million commits a second). It is advanced GV4-style: a
//! committer loads it *after* taking its locks and tries one CAS from `c` to
//! `c + 1`; if the CAS loses, it adopts the winner's value as its write
//! version instead of retrying. Loading after locking is what makes adoption
//! safe: any transaction whose snapshot includes that clock value started
//! after the locks were taken, so it sees them.

/// Bit 0: the word is locked by a committing transaction.
pub const LOCKED: u64 = 1;
/// Position of the owner field (bits 1..=10).
pub const OWNER_SHIFT: u32 = 1;
/// Width of the owner field.
pub const OWNER_BITS: u32 = 10;
/// Mask of the owner field, in place.
pub const OWNER_MASK: u64 = ((1 << OWNER_BITS) - 1) << OWNER_SHIFT;
/// Position of the version field (bits 11..=63).
pub const VERSION_SHIFT: u32 = OWNER_SHIFT + OWNER_BITS;
/// The largest owner id (a thread's registry record number + 1); 0 means "no owner".
pub const MAX_OWNER: u64 = (1 << OWNER_BITS) - 1;
/// The largest clock value a lock word can hold.
pub const MAX_VERSION: u64 = u64::MAX >> VERSION_SHIFT;

/// Whether the word is locked.
#[inline(always)]
pub const fn is_locked(w: u64) -> bool {
    w & LOCKED != 0
}

/// The version field (meaningful both locked and unlocked).
#[inline(always)]
pub const fn version(w: u64) -> u64 {
    w >> VERSION_SHIFT
}

/// The owner field of a locked word.
#[inline(always)]
pub const fn owner(w: u64) -> u64 {
    (w & OWNER_MASK) >> OWNER_SHIFT
}

/// The unlocked word for version `v`.
#[inline(always)]
pub const fn unlocked(v: u64) -> u64 {
    v << VERSION_SHIFT
}

/// The bits a committer with owner id `owner` ORs into an unlocked word to lock it.
#[inline(always)]
pub const fn lock_bits(owner: u64) -> u64 {
    (owner << OWNER_SHIFT) | LOCKED
}

/// The snapshot bound for version `rv`, in the form [`current_at`]
/// compares with: the unlocked word of `rv` rotated right by one bit
/// (`rv << 10`, below 2^63 for every `rv <= MAX_VERSION`).
#[inline(always)]
pub const fn snapshot_bound(rv: u64) -> u64 {
    unlocked(rv).rotate_right(1)
}

/// The version a [`snapshot_bound`] was made from.
#[inline(always)]
pub const fn bound_version(bound: u64) -> u64 {
    bound.rotate_left(1) >> VERSION_SHIFT
}

/// Whether `w` is unlocked at a version within the snapshot `bound` (of
/// [`snapshot_bound`]): `!is_locked(w) && version(w) <= rv` in one rotate
/// and one compare, the check of every transactional read. Rotating moves
/// [`LOCKED`] to bit 63, so a locked word is above every bound; an unlocked
/// word has its owner bits clear, so what remains compares as its version.
#[inline(always)]
pub const fn current_at(w: u64, bound: u64) -> bool {
    w.rotate_right(1) <= bound
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// `current_at` is the two checks it replaces, for every word a
        /// lock can hold (unlocked, or locked by any owner at any version).
        #[test]
        fn current_at_is_unlocked_and_within(
            v in 0..=MAX_VERSION, rv in 0..=MAX_VERSION, owner in 0..=MAX_OWNER, locked: bool,
        ) {
            let w = if locked { unlocked(v) | lock_bits(owner) } else { unlocked(v) };
            let bound = snapshot_bound(rv);
            proptest::prop_assert_eq!(bound_version(bound), rv);
            proptest::prop_assert_eq!(current_at(w, bound), !is_locked(w) && version(w) <= rv);
        }
    }

    #[test]
    fn current_at_at_the_edges() {
        let b = snapshot_bound(7);
        assert!(current_at(unlocked(7), b));
        assert!(current_at(unlocked(0), b));
        assert!(!current_at(unlocked(8), b));
        assert!(!current_at(unlocked(7) | lock_bits(1), b));
        assert!(!current_at(unlocked(0) | lock_bits(MAX_OWNER), b));
        let top = snapshot_bound(MAX_VERSION);
        assert!(current_at(unlocked(MAX_VERSION), top));
        assert!(!current_at(unlocked(MAX_VERSION) | LOCKED, top));
    }

    #[test]
    fn fields_do_not_overlap() {
        assert_eq!(LOCKED & OWNER_MASK, 0);
        assert_eq!(unlocked(MAX_VERSION) & (OWNER_MASK | LOCKED), 0);
        let w = unlocked(12345) | lock_bits(MAX_OWNER);
        assert!(is_locked(w));
        assert_eq!(owner(w), MAX_OWNER);
        assert_eq!(version(w), 12345);
        assert!(!is_locked(unlocked(7)));
        assert_eq!(owner(unlocked(7)), 0);
    }
}
