//! The tables after a run, and STAMP's `checkTables`-style consistency check.

use std::collections::HashMap;

use super::client::{Kind, info_parts};

/// One reservation entry as it stands after a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Entry {
    /// Its id (`1..=relations`).
    pub id: u32,
    /// Units held by customers.
    pub used: i64,
    /// Units free.
    pub free: i64,
    /// Units in all.
    pub total: i64,
    /// The current price.
    pub price: i64,
}

/// The manager's tables after a run, in key order: what the self-check
/// looks at, and what runs are compared by.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Snapshot {
    /// Cars, flights and rooms (index [`Kind`] `as usize`), each by id.
    pub tables: [Vec<Entry>; 3],
    /// Every customer by id, with its reservations: `(kind << 32 | id,
    /// price paid)`, ordered.
    pub customers: Vec<(u32, Vec<(u64, i64)>)>,
}

impl Snapshot {
    /// A 64-bit digest of the whole state (equal snapshots have equal digests).
    pub fn digest(&self) -> u64 {
        crate::phases::digest(self)
    }

    /// Reservations held by customers, in all.
    pub fn reservations_held(&self) -> usize {
        self.customers.iter().map(|(_, r)| r.len()).sum()
    }

    /// The consistency check, after STAMP's `checkTables` and
    /// `checkReservation`, made complete:
    ///
    /// - every entry has `used, free >= 0`, `used + free == total`,
    ///   `total >= 1` (an entry whose total reaches 0 is removed), a price
    ///   `>= 0`, and an id in `1..=relations`; ids are unique and ordered;
    /// - every customer id is in `1..=relations`, unique; its reservations
    ///   name existing entries, at most once each;
    /// - for every entry, the number of customers holding it equals its
    ///   `used` count.
    ///
    /// # Errors
    ///
    /// The first violation found, described.
    pub fn check(&self, relations: u32) -> Result<String, String> {
        let mut held: HashMap<(u32, u32), i64> = HashMap::new();
        let mut last = 0;
        for &(cid, ref list) in &self.customers {
            if cid == 0 || cid > relations || cid <= last {
                return Err(format!("customer id {cid} out of order or outside 1..={relations}"));
            }
            last = cid;
            let mut prev = None;
            for &(key, price) in list {
                let (kind, id) = info_parts(key);
                if kind > 2 || prev.is_some_and(|p| p >= key) {
                    return Err(format!("customer {cid}: reservation list unordered or of unknown kind {kind}"));
                }
                prev = Some(key);
                if price < 0 {
                    return Err(format!("customer {cid} paid a negative price {price}"));
                }
                *held.entry((kind, id)).or_default() += 1;
            }
        }
        let mut entries = 0;
        for kind in Kind::ALL {
            let mut last = 0;
            for e in &self.tables[kind as usize] {
                let what = format!("{} {}", kind.name(), e.id);
                if e.id == 0 || e.id > relations || e.id <= last {
                    return Err(format!("{what}: id out of order or outside 1..={relations}"));
                }
                last = e.id;
                if e.used < 0 || e.free < 0 || e.total < 1 || e.price < 0 {
                    return Err(format!(
                        "{what}: negative count or price, or an empty entry left in the table \
                         (used {}, free {}, total {}, price {})",
                        e.used, e.free, e.total, e.price
                    ));
                }
                if e.used + e.free != e.total {
                    return Err(format!("{what}: used {} + free {} != total {}", e.used, e.free, e.total));
                }
                let h = held.remove(&(kind as u32, e.id)).unwrap_or(0);
                if h != e.used {
                    return Err(format!("{what}: {h} customers hold one but its used count is {}", e.used));
                }
                entries += 1;
            }
        }
        if let Some(((kind, id), n)) = held.into_iter().next() {
            return Err(format!(
                "{n} customers hold a {} {id} that is not in its table",
                Kind::from_index(kind).name()
            ));
        }
        Ok(format!(
            "{entries} entries consistent (used + free = total, no negative counts), \
             {} customers holding {} reservations that match the used counts",
            self.customers.len(),
            self.reservations_held()
        ))
    }
}
