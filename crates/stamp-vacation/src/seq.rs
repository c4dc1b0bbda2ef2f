//! The sequential manager: the same tables in the standard library's
//! ordered maps, no transactions (the speed baseline).

use std::collections::BTreeMap;

use skelaff_stm::TxError;

use super::check::{Entry, Snapshot};
use super::client::{Kind, Tables, info_key, info_parts};

#[derive(Debug, Clone, Copy)]
struct Reservation {
    used: i64,
    free: i64,
    total: i64,
    price: i64,
}

/// The manager for one thread.
#[derive(Debug, Default)]
pub(crate) struct SeqManager {
    tables: [BTreeMap<u32, Reservation>; 3],
    /// Each customer's reservations, kept sorted by key (a short list, as
    /// STAMP's).
    customers: BTreeMap<u32, Vec<(u64, i64)>>,
    /// Impossible states met (see the transactional manager).
    pub(crate) anomalies: u64,
}

impl Tables for SeqManager {
    /// The entry's id and price (a plain program cannot keep a reference
    /// into the table while it changes other entries: it looks it up again).
    type Entry = (u32, i64);
    /// The customer's id.
    type Customer = u32;

    fn find(&mut self, kind: Kind, id: u32) -> Result<Option<(u32, i64)>, TxError> {
        Ok(self.tables[kind as usize].get(&id).map(|r| (id, r.price)))
    }

    fn price(&mut self, (_, price): (u32, i64)) -> Result<i64, TxError> {
        Ok(price)
    }

    fn find_customer(&mut self, id: u32) -> Result<Option<u32>, TxError> {
        Ok(self.customers.contains_key(&id).then_some(id))
    }

    fn insert_customer(&mut self, id: u32) -> Result<u32, TxError> {
        self.customers.insert(id, Vec::new());
        Ok(id)
    }

    fn reserve(&mut self, customer: u32, kind: Kind, (id, _): (u32, i64)) -> Result<bool, TxError> {
        let Some(list) = self.customers.get_mut(&customer) else { return Ok(false) };
        let Some(r) = self.tables[kind as usize].get_mut(&id) else { return Ok(false) };
        let key = info_key(kind, id);
        let Err(at) = list.binary_search_by_key(&key, |&(k, _)| k) else { return Ok(false) };
        if r.free < 1 {
            return Ok(false);
        }
        r.free -= 1;
        r.used += 1;
        list.insert(at, (key, r.price));
        Ok(true)
    }

    fn bill(&mut self, customer: u32) -> Result<i64, TxError> {
        Ok(self.customers.get(&customer).map_or(0, |l| l.iter().map(|&(_, p)| p).sum()))
    }

    fn delete_customer(&mut self, customer: u32, _: u32) -> Result<(), TxError> {
        let Some(list) = self.customers.remove(&customer) else { return Ok(()) };
        for (key, _) in list {
            let (kind, id) = info_parts(key);
            match self.tables[kind as usize].get_mut(&id) {
                Some(r) if r.used >= 1 => {
                    r.used -= 1;
                    r.free += 1;
                }
                _ => self.anomalies += 1,
            }
        }
        Ok(())
    }

    fn add_reservation(&mut self, kind: Kind, id: u32, num: i64, price: i64) -> Result<bool, TxError> {
        let table = &mut self.tables[kind as usize];
        let Some(r) = table.get_mut(&id) else {
            if num < 1 || price < 0 {
                return Ok(false);
            }
            table.insert(id, Reservation { used: 0, free: num, total: num, price });
            return Ok(true);
        };
        if r.free + num < 0 {
            return Ok(false);
        }
        r.free += num;
        r.total += num;
        if r.total == 0 {
            table.remove(&id);
        } else if price >= 0 {
            r.price = price;
        }
        Ok(true)
    }

    fn delete_flight(&mut self, id: u32) -> Result<bool, TxError> {
        let Some(r) = self.tables[Kind::Flight as usize].get(&id) else { return Ok(false) };
        if r.used > 0 {
            return Ok(false);
        }
        let total = r.total;
        self.add_reservation(Kind::Flight, id, -total, -1)
    }
}

impl SeqManager {
    /// The tables as a [`Snapshot`].
    pub(crate) fn snapshot(&self) -> Snapshot {
        let mut snap = Snapshot::default();
        for (t, table) in self.tables.iter().enumerate() {
            snap.tables[t] = table
                .iter()
                .map(|(&id, r)| Entry { id, used: r.used, free: r.free, total: r.total, price: r.price })
                .collect();
        }
        snap.customers = self.customers.iter().map(|(&id, l)| (id, l.clone())).collect();
        snap
    }
}
