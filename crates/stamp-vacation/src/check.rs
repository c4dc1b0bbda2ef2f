//! The tables after a run, and STAMP's `checkTables`-style consistency check.

use std::collections::HashMap;

use super::client::{Kind, info_parts};

/// A table whose red-black tree is broken (what reading the tables back
/// after a run found; the cause of [`BadTables::Broken`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {table} table's tree is broken")]
pub struct BrokenTable {
    /// The table's name (`car`, `flight`, `room` or `customer`).
    pub table: &'static str,
    /// The invariant that does not hold.
    #[source]
    pub invariant: skelaff_stm::collections::Broken,
}

/// What vacation's self-check found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadTables {
    /// The tables could not be read: a red-black tree is broken.
    #[error("the tables cannot be read back")]
    Broken(#[source] BrokenTable),
    /// Transactions met a state the client cannot be in: a reservation
    /// missing or not in use while cancelling.
    #[error(
        "{count} transactions met an impossible reservation state (a reservation missing or not in use while cancelling)"
    )]
    Anomalies {
        /// How many.
        count: u64,
    },
    /// A customer id out of order or out of range.
    #[error("customer id {customer} out of order (after {previous}) or outside 1..={relations}")]
    CustomerId {
        /// The id.
        customer: u32,
        /// The id before it (0 for the first).
        previous: u32,
        /// The most an id may be.
        relations: u32,
    },
    /// A customer's reservation list out of order, or naming a table that
    /// does not exist.
    #[error("customer {customer}: reservation list unordered at {id} or of unknown kind {kind}")]
    Reservations {
        /// The customer.
        customer: u32,
        /// The table index of the reservation (0 to 2 exist).
        kind: u32,
        /// The reservation's entry id.
        id: u32,
    },
    /// A customer paid a negative price.
    #[error("customer {customer} paid a negative price {price}")]
    NegativePrice {
        /// The customer.
        customer: u32,
        /// The price.
        price: i64,
    },
    /// An entry id out of order or out of range.
    #[error("{} {id}: id out of order (after {previous}) or outside 1..={relations}", kind.name())]
    EntryId {
        /// Its table.
        kind: Kind,
        /// The id.
        id: u32,
        /// The id before it in the table (0 for the first).
        previous: u32,
        /// The most an id may be.
        relations: u32,
    },
    /// An entry with a negative count or price, or an empty entry left in
    /// its table.
    #[error(
        "{} {}: negative count or price, or an empty entry left in the table (used {}, free {}, total {}, price {})",
        kind.name(), entry.id, entry.used, entry.free, entry.total, entry.price
    )]
    EntryValues {
        /// Its table.
        kind: Kind,
        /// The entry.
        entry: Entry,
    },
    /// An entry whose used and free counts do not add up to its total.
    #[error("{} {}: used {} + free {} != total {}", kind.name(), entry.id, entry.used, entry.free, entry.total)]
    EntrySum {
        /// Its table.
        kind: Kind,
        /// The entry.
        entry: Entry,
    },
    /// An entry whose used count is not the number of customers holding it.
    #[error("{} {id}: {holders} customers hold one but its used count is {used}", kind.name())]
    Holders {
        /// Its table.
        kind: Kind,
        /// Its id.
        id: u32,
        /// Customers holding it.
        holders: i64,
        /// Its used count.
        used: i64,
    },
    /// Customers hold an entry that is not in its table.
    #[error("{holders} customers hold a {} {id} that is not in its table", kind.name())]
    Missing {
        /// The table.
        kind: Kind,
        /// The entry id.
        id: u32,
        /// Customers holding it.
        holders: i64,
    },
}

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
        skelaff_stamp_core::phases::digest(self)
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
    /// The first violation found, as a [`BadTables`].
    pub fn check(&self, relations: u32) -> Result<String, BadTables> {
        let mut held: HashMap<(u32, u32), i64> = HashMap::new();
        let mut last = 0;
        for &(customer, ref list) in &self.customers {
            if customer == 0 || customer > relations || customer <= last {
                return Err(BadTables::CustomerId { customer, previous: last, relations });
            }
            last = customer;
            let mut prev = None;
            for &(key, price) in list {
                let (kind, id) = info_parts(key);
                if kind > 2 || prev.is_some_and(|p| p >= key) {
                    return Err(BadTables::Reservations { customer, kind, id });
                }
                prev = Some(key);
                if price < 0 {
                    return Err(BadTables::NegativePrice { customer, price });
                }
                *held.entry((kind, id)).or_default() += 1;
            }
        }
        let mut entries = 0;
        for kind in Kind::ALL {
            let mut last = 0;
            for e in &self.tables[kind as usize] {
                if e.id == 0 || e.id > relations || e.id <= last {
                    return Err(BadTables::EntryId { kind, id: e.id, previous: last, relations });
                }
                last = e.id;
                if e.used < 0 || e.free < 0 || e.total < 1 || e.price < 0 {
                    return Err(BadTables::EntryValues { kind, entry: *e });
                }
                if e.used + e.free != e.total {
                    return Err(BadTables::EntrySum { kind, entry: *e });
                }
                let holders = held.remove(&(kind as u32, e.id)).unwrap_or(0);
                if holders != e.used {
                    return Err(BadTables::Holders { kind, id: e.id, holders, used: e.used });
                }
                entries += 1;
            }
        }
        if let Some(((kind, id), holders)) = held.into_iter().next() {
            return Err(BadTables::Missing { kind: Kind::from_index(kind), id, holders });
        }
        Ok(format!(
            "{entries} entries consistent (used + free = total, no negative counts), \
             {} customers holding {} reservations that match the used counts",
            self.customers.len(),
            self.reservations_held()
        ))
    }
}
