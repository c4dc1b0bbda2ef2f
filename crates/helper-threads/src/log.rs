//! The shadow's private write log: a bounded open-addressing map from a
//! `TVar`'s address to the word the shadow wrote there.
//!
//! Layout: `2^k` slots with `2^k >= 2 * capacity` (load factor at most ½,
//! so a probe sequence stays short), linear probing, no deletion. A slot is
//! live when its `stamp` equals the log's current stamp, so clearing the
//! log between shadows is one increment (every slot is zeroed only when the
//! 32-bit stamp wraps, once per four billion shadows). A 64-bit filter (one
//! bit per address hash) lets most reads of words the shadow never wrote
//! skip the table. Nothing allocates after construction.

use crate::error::ConfigError;

/// The largest write-log capacity accepted (2^24 entries, 384 MiB of slots).
pub const MAX_LOG_CAPACITY: usize = 1 << 24;

#[derive(Clone, Copy, Default)]
struct LogEntry {
    key: usize,
    value: u64,
    stamp: u32,
}

/// The write log was full: the entry was not added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// A bounded map from word address to word, cleared in O(1).
///
/// # Examples
///
/// ```
/// use skelaff_helper_threads::WriteLog;
///
/// let mut log = WriteLog::with_capacity(2)?;
/// log.insert(0x1000, 7).unwrap();
/// log.insert(0x1008, 8).unwrap();
/// log.insert(0x1000, 9).unwrap(); // overwriting needs no new entry
/// assert!(log.insert(0x1010, 1).is_err()); // a third address does not fit
/// assert_eq!(log.get(0x1000), Some(9));
/// log.clear();
/// assert_eq!(log.get(0x1000), None);
/// # Ok::<(), skelaff_helper_threads::ConfigError>(())
/// ```
pub struct WriteLog {
    slots: Box<[LogEntry]>,
    shift: u32,
    mask: usize,
    capacity: usize,
    len: usize,
    stamp: u32,
    filter: u64,
}

impl std::fmt::Debug for WriteLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteLog").field("len", &self.len).field("capacity", &self.capacity).finish()
    }
}

#[inline(always)]
fn hash(addr: usize) -> u64 {
    // Words are 8-byte aligned: drop the low bits, then Fibonacci hashing.
    ((addr >> 3) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl WriteLog {
    /// A log that holds up to `capacity` distinct addresses.
    ///
    /// # Errors
    ///
    /// [`ConfigError::LogCapacity`] unless `1 <= capacity <= MAX_LOG_CAPACITY`.
    pub fn with_capacity(capacity: usize) -> Result<Self, ConfigError> {
        if capacity == 0 || capacity > MAX_LOG_CAPACITY {
            return Err(ConfigError::LogCapacity { got: capacity, max: MAX_LOG_CAPACITY });
        }
        let size = (2 * capacity).next_power_of_two().max(8);
        Ok(WriteLog {
            slots: vec![LogEntry::default(); size].into_boxed_slice(),
            shift: 64 - size.trailing_zeros(),
            mask: size - 1,
            capacity,
            len: 0,
            stamp: 1,
            filter: 0,
        })
    }

    /// How many distinct addresses it holds at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many it holds now.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The word logged for `addr`.
    #[inline(always)]
    pub fn get(&self, addr: usize) -> Option<u64> {
        let h = hash(addr);
        if self.filter & (1 << (h & 63)) == 0 {
            return None;
        }
        let mut i = (h >> self.shift) as usize;
        loop {
            let s = &self.slots[i];
            if s.stamp != self.stamp {
                return None;
            }
            if s.key == addr {
                return Some(s.value);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Logs `value` for `addr` (replacing an earlier value).
    ///
    /// # Errors
    ///
    /// [`Full`] if `addr` is new and the log already holds `capacity` addresses.
    #[inline]
    pub fn insert(&mut self, addr: usize, value: u64) -> Result<(), Full> {
        let h = hash(addr);
        let mut i = (h >> self.shift) as usize;
        loop {
            let stamp = self.stamp;
            let s = &mut self.slots[i];
            if s.stamp != stamp {
                if self.len == self.capacity {
                    return Err(Full);
                }
                *s = LogEntry { key: addr, value, stamp };
                self.len += 1;
                self.filter |= 1 << (h & 63);
                return Ok(());
            }
            if s.key == addr {
                s.value = value;
                return Ok(());
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Forgets every entry (O(1) but once every 2^32 calls).
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
        self.filter = 0;
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.slots.fill(LogEntry::default());
            self.stamp = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn bound_and_clear() {
        let mut log = WriteLog::with_capacity(3).unwrap();
        for a in 0..3 {
            log.insert(8 * a, a as u64).unwrap();
        }
        assert_eq!(log.insert(800, 1), Err(Full));
        assert_eq!(log.len(), 3);
        log.insert(16, 99).unwrap();
        assert_eq!(log.get(16), Some(99));
        log.clear();
        assert!(log.is_empty());
        assert_eq!(log.get(16), None);
        log.insert(800, 1).unwrap();
        assert_eq!(log.get(800), Some(1));
        assert!(WriteLog::with_capacity(0).is_err());
        assert!(WriteLog::with_capacity(MAX_LOG_CAPACITY + 1).is_err());
    }

    #[test]
    fn stamp_wrap_forgets_everything() {
        let mut log = WriteLog::with_capacity(4).unwrap();
        log.stamp = u32::MAX;
        log.insert(64, 5).unwrap();
        log.clear();
        assert_eq!(log.stamp, 1);
        assert_eq!(log.get(64), None);
        // A slot written under the old stamp 1 (four billion clears ago) is not live.
        assert!(log.slots.iter().all(|s| s.stamp == 0));
    }

    proptest! {
        /// Against a HashMap with the same bound, over several clears.
        #[test]
        fn behaves_like_a_bounded_map(
            cap in 1usize..40,
            ops in prop::collection::vec((0u8..3, 0usize..64, any::<u64>()), 1..400),
        ) {
            let mut log = WriteLog::with_capacity(cap).unwrap();
            let mut model: HashMap<usize, u64> = HashMap::new();
            for (op, k, v) in ops {
                let addr = 0x10_0000 + 8 * k;
                match op {
                    0 => {
                        let fits = model.contains_key(&addr) || model.len() < cap;
                        prop_assert_eq!(log.insert(addr, v).is_ok(), fits);
                        if fits { model.insert(addr, v); }
                    }
                    1 => prop_assert_eq!(log.get(addr), model.get(&addr).copied()),
                    _ => if v % 8 == 0 { log.clear(); model.clear(); },
                }
                prop_assert_eq!(log.len(), model.len());
                prop_assert!(log.len() <= cap);
            }
        }
    }
}
