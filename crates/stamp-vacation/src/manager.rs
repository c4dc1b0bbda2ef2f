//! The transactional manager: STAMP's four red-black-tree tables as
//! [`TBTreeMap`]s, reservations and customers as transactional objects.

use skelaff_stm::{TBTreeMap, TList, TPtr, TVar, TxError, TxOps, atomically};

use super::check::{BrokenTable, Entry, Snapshot};
use super::client::{Kind, Tables, info_key, info_parts};

/// One reservation entry (STAMP's `reservation_t`): how many units exist,
/// how many are free and used, and the price.
#[derive(Debug)]
pub(crate) struct Reservation {
    used: TVar<i64>,
    free: TVar<i64>,
    total: TVar<i64>,
    price: TVar<i64>,
}

/// A customer (STAMP's `customer_t`): its reservations, ordered by kind
/// and id, each with the price paid.
#[derive(Debug, Default)]
pub(crate) struct Customer {
    reservations: TList<u64, i64>,
}

/// The travel agency's tables, shared by every client.
#[derive(Debug, Default)]
pub(crate) struct Manager {
    tables: [TBTreeMap<u32, TPtr<Reservation>>; 3],
    customers: TBTreeMap<u32, TPtr<Customer>>,
}

/// An object behind a pointer read in the running transaction.
///
/// # Safety
///
/// `p` was read from a table (or allocated) by the transaction that is
/// running now, and the reference does not outlive that transaction: an
/// object is freed only after the transaction that unlinked it commits and
/// every transaction that could have read the pointer has ended.
#[inline(always)]
unsafe fn obj<'a, T>(p: TPtr<T>) -> &'a T {
    // SAFETY: forwarded to the caller.
    unsafe { p.get() }
}

/// The manager as seen from one transaction.
pub(crate) struct TxTables<'a, 'm, X> {
    pub(crate) tx: &'a mut X,
    pub(crate) m: &'m Manager,
    /// Impossible states met (a customer holding a reservation that is not
    /// in its table, or one whose used count is already 0). STAMP restarts
    /// the transaction there, which would loop forever on a real
    /// inconsistency; we count them and the self-check fails if any.
    pub(crate) anomalies: &'a mut u64,
}

impl<'m, X: TxOps<'m>> TxTables<'_, 'm, X> {
    fn entry(&mut self, kind: Kind, id: u32) -> Result<Option<&'m Reservation>, TxError> {
        // SAFETY: the pointer is read in this transaction (see `obj`).
        Ok(self.m.tables[kind as usize].get(self.tx, &id)?.map(|p| unsafe { obj(p) }))
    }

    /// One more used, one less free; false if none is free.
    fn make(&mut self, r: &'m Reservation) -> Result<bool, TxError> {
        let free = self.tx.read(&r.free)?;
        if free < 1 {
            return Ok(false);
        }
        self.tx.write(&r.free, free - 1)?;
        self.tx.update(&r.used, |u| u + 1)?;
        Ok(true)
    }

    /// One less used, one more free; false if none is used.
    fn cancel(&mut self, r: &'m Reservation) -> Result<bool, TxError> {
        let used = self.tx.read(&r.used)?;
        if used < 1 {
            return Ok(false);
        }
        self.tx.write(&r.used, used - 1)?;
        self.tx.update(&r.free, |f| f + 1)?;
        Ok(true)
    }
}

impl<'m, X: TxOps<'m>> Tables for TxTables<'_, 'm, X> {
    type Entry = (u32, &'m Reservation);
    type Customer = &'m Customer;

    fn find(&mut self, kind: Kind, id: u32) -> Result<Option<Self::Entry>, TxError> {
        Ok(self.entry(kind, id)?.map(|r| (id, r)))
    }

    fn price(&mut self, (_, r): Self::Entry) -> Result<i64, TxError> {
        self.tx.read(&r.price)
    }

    fn find_customer(&mut self, id: u32) -> Result<Option<&'m Customer>, TxError> {
        // SAFETY: the pointer is read in this transaction (see `obj`).
        Ok(self.m.customers.get(self.tx, &id)?.map(|p| unsafe { obj(p) }))
    }

    fn insert_customer(&mut self, id: u32) -> Result<&'m Customer, TxError> {
        let p = self.tx.alloc(Customer::default())?;
        self.m.customers.insert(self.tx, id, p)?;
        // SAFETY: allocated in this transaction (see `obj`).
        Ok(unsafe { obj(p) })
    }

    fn reserve(&mut self, c: &'m Customer, kind: Kind, (id, r): Self::Entry) -> Result<bool, TxError> {
        if !self.make(r)? {
            return Ok(false);
        }
        // As STAMP: reserve, then record it with the customer, and undo the
        // reservation if the customer already held one.
        let key = info_key(kind, id);
        let price = self.tx.read(&r.price)?;
        if let Some(before) = c.reservations.insert(self.tx, key, price)? {
            c.reservations.insert(self.tx, key, before)?;
            if !self.cancel(r)? {
                *self.anomalies += 1;
            }
            return Ok(false);
        }
        Ok(true)
    }

    fn bill(&mut self, c: &'m Customer) -> Result<i64, TxError> {
        Ok(c.reservations.to_vec(self.tx)?.iter().map(|&(_, p)| p).sum())
    }

    fn delete_customer(&mut self, id: u32, c: &'m Customer) -> Result<(), TxError> {
        for (key, _) in c.reservations.to_vec(self.tx)? {
            let (kind, rid) = info_parts(key);
            let ok = match self.entry(Kind::from_index(kind), rid)? {
                Some(r) => self.cancel(r)?,
                None => false,
            };
            if !ok {
                *self.anomalies += 1;
            }
        }
        if let Some(p) = self.m.customers.remove(self.tx, &id)? {
            // SAFETY: `p` came from `alloc` in a committed transaction, this
            // transaction unlinked it from the only table that held it, and
            // it is freed once (the next attempt to find the customer misses).
            unsafe { self.tx.free(p)? };
        }
        Ok(())
    }

    fn add_reservation(&mut self, kind: Kind, id: u32, num: i64, price: i64) -> Result<bool, TxError> {
        let table = &self.m.tables[kind as usize];
        let Some(p) = table.get(self.tx, &id)? else {
            if num < 1 || price < 0 {
                return Ok(false);
            }
            let fresh = self.tx.alloc(Reservation {
                used: TVar::new(0),
                free: TVar::new(num),
                total: TVar::new(num),
                price: TVar::new(price),
            })?;
            table.insert(self.tx, id, fresh)?;
            return Ok(true);
        };
        // SAFETY: read in this transaction.
        let r = unsafe { obj(p) };
        let free = self.tx.read(&r.free)?;
        if free + num < 0 {
            return Ok(false);
        }
        self.tx.write(&r.free, free + num)?;
        let total = self.tx.update(&r.total, |t| t + num)?;
        if total == 0 {
            table.remove(self.tx, &id)?;
            // SAFETY: allocated by a committed transaction, unlinked here
            // from its only table, freed once.
            unsafe { self.tx.free(p)? };
        } else if price >= 0 {
            self.tx.write(&r.price, price)?;
        }
        Ok(true)
    }

    fn delete_flight(&mut self, id: u32) -> Result<bool, TxError> {
        let Some(r) = self.entry(Kind::Flight, id)? else { return Ok(false) };
        if self.tx.read(&r.used)? > 0 {
            return Ok(false);
        }
        let total = self.tx.read(&r.total)?;
        self.add_reservation(Kind::Flight, id, -total, -1)
    }
}

impl Manager {
    /// Every entry and customer, read in one transaction, with the trees'
    /// invariants checked.
    ///
    /// # Errors
    ///
    /// A broken red-black tree: which table's, and which invariant.
    pub(crate) fn snapshot(&self) -> Result<Snapshot, BrokenTable> {
        atomically(|tx| {
            let mut snap = Snapshot::default();
            for (kind, table) in Kind::ALL.into_iter().zip(&self.tables) {
                if let Err(e) = table.verify(tx)? {
                    return Ok(Err(BrokenTable { table: kind.name(), invariant: e }));
                }
                for (id, p) in table.to_vec(tx)? {
                    // SAFETY: read in this transaction.
                    let r = unsafe { obj(p) };
                    snap.tables[kind as usize].push(Entry {
                        id,
                        used: tx.read(&r.used)?,
                        free: tx.read(&r.free)?,
                        total: tx.read(&r.total)?,
                        price: tx.read(&r.price)?,
                    });
                }
            }
            if let Err(e) = self.customers.verify(tx)? {
                return Ok(Err(BrokenTable { table: "customer", invariant: e }));
            }
            for (id, p) in self.customers.to_vec(tx)? {
                // SAFETY: read in this transaction.
                let c = unsafe { obj(p) };
                snap.customers.push((id, c.reservations.to_vec(tx)?));
            }
            Ok(Ok(snap))
        })
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        // The trees free their own nodes; the objects their values point
        // at are freed here.
        let (tables, customers) = atomically(|tx| {
            let mut t = Vec::new();
            for table in &self.tables {
                t.extend(table.to_vec(tx)?.into_iter().map(|(_, p)| p));
            }
            Ok::<_, TxError>((t, self.customers.to_vec(tx)?.into_iter().map(|(_, p)| p).collect::<Vec<_>>()))
        });
        for p in tables {
            // SAFETY: `&mut self`: no transaction can reach the tables any
            // more; every pointer is in exactly one table and freed once.
            drop(unsafe { p.into_box() });
        }
        for p in customers {
            // SAFETY: as above.
            drop(unsafe { p.into_box() });
        }
    }
}
