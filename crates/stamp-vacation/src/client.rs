//! The client's side: what each transaction does, written once over
//! [`Tables`] so that the transactional manager and the sequential one run
//! the very same requests.

use skelaff_stm::TxError;

/// The three reservation tables, in STAMP's order (`RESERVATION_CAR`,
/// `RESERVATION_FLIGHT`, `RESERVATION_ROOM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Cars.
    Car = 0,
    /// Flight seats.
    Flight = 1,
    /// Rooms.
    Room = 2,
}

impl Kind {
    /// The three kinds, in table order.
    pub const ALL: [Kind; 3] = [Kind::Car, Kind::Flight, Kind::Room];

    /// The kind with table index `i % 3`.
    pub(crate) fn from_index(i: u32) -> Kind {
        Kind::ALL[(i % 3) as usize]
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Car => "car",
            Kind::Flight => "flight",
            Kind::Room => "room",
        }
    }
}

/// A customer's reservation record key: the kind in the high half, the id
/// in the low half, so a customer's list is ordered by kind, then id (as
/// STAMP's `reservation_info_compare`).
#[inline]
pub(crate) fn info_key(kind: Kind, id: u32) -> u64 {
    ((kind as u64) << 32) | u64::from(id)
}

/// The kind and id of an [`info_key`].
#[inline]
pub(crate) fn info_parts(key: u64) -> (u32, u32) {
    ((key >> 32) as u32, key as u32)
}

/// What the manager offers a client (STAMP's `manager.c` interface, the
/// operations the client uses). Every method runs inside the client's
/// transaction; the sequential manager never fails.
///
/// Where STAMP's client looks the same entry or customer up again in one
/// transaction (a query, then a reservation of the same entry), the
/// lookup's result is passed back as a handle instead: the transaction
/// reads the same locations, once. A handle is valid only within the
/// transaction that found it.
pub(crate) trait Tables {
    /// A reservation entry found in this transaction.
    type Entry: Copy;
    /// A customer found in this transaction.
    type Customer: Copy;
    /// Entry `id` of table `kind`, if present.
    fn find(&mut self, kind: Kind, id: u32) -> Result<Option<Self::Entry>, TxError>;
    /// The entry's price.
    fn price(&mut self, e: Self::Entry) -> Result<i64, TxError>;
    /// Customer `id`, if present.
    fn find_customer(&mut self, id: u32) -> Result<Option<Self::Customer>, TxError>;
    /// Adds customer `id`, which is not present.
    fn insert_customer(&mut self, id: u32) -> Result<Self::Customer, TxError>;
    /// Reserves one unit of `e` (of table `kind`) for `c`; false if none is
    /// free or `c` already holds one.
    fn reserve(&mut self, c: Self::Customer, kind: Kind, e: Self::Entry) -> Result<bool, TxError>;
    /// The sum of the prices of `c`'s reservations.
    fn bill(&mut self, c: Self::Customer) -> Result<i64, TxError>;
    /// Cancels all of `c`'s reservations and removes customer `id` (`c`).
    fn delete_customer(&mut self, id: u32, c: Self::Customer) -> Result<(), TxError>;
    /// Adds `num` (may be negative) to the total of `kind` `id`, creating
    /// the entry if it is missing (only for `num > 0` and `price >= 0`) and
    /// removing it when its total reaches 0; sets the price when
    /// `price >= 0`. False if the entry is missing and cannot be created or
    /// the free count would go negative.
    fn add_reservation(&mut self, kind: Kind, id: u32, num: i64, price: i64) -> Result<bool, TxError>;
    /// Removes flight `id` entirely; false if missing or anyone holds a seat.
    fn delete_flight(&mut self, id: u32) -> Result<bool, TxError>;

    /// Adds customer `id`; false if it exists.
    fn add_customer(&mut self, id: u32) -> Result<bool, TxError> {
        if self.find_customer(id)?.is_some() {
            return Ok(false);
        }
        self.insert_customer(id)?;
        Ok(true)
    }
}

/// The workload parameters the clients draw from (STAMP's `client_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Workload {
    /// Seed of the whole run; transaction `i` draws from a generator seeded
    /// by `(seed, i)`.
    pub(crate) seed: u64,
    /// `-n`: at most this many queries (or updates) per transaction.
    pub(crate) per_transaction: u32,
    /// Ids are drawn from `1..=query_range` (`-q` percent of `-r`).
    pub(crate) query_range: u32,
    /// `-u`: percentage of transactions that make reservations.
    pub(crate) percent_user: u32,
}

/// The action of a transaction, chosen as STAMP's `selectAction`: below
/// `-u` a reservation, else odd numbers delete a customer and even ones
/// update the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    MakeReservation,
    DeleteCustomer,
    UpdateTables,
}

impl Workload {
    /// The generator of transaction `index`: the transaction's requests
    /// depend only on the seed and the index, not on which client (worker)
    /// runs it or when, so every run of the same flags issues the same
    /// requests.
    #[inline]
    fn rng(&self, index: u32) -> fastrand::Rng {
        let x = (self.seed ^ 0x5851_F42D_4C95_7F2D).wrapping_add(u64::from(index).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        fastrand::Rng::with_seed(splitmix(x))
    }

    /// The action of transaction `index`.
    pub(crate) fn action(&self, index: u32) -> Action {
        select(self.rng(index).u32(0..100), self.percent_user)
    }

    #[inline]
    fn id(&self, rng: &mut fastrand::Rng) -> u32 {
        rng.u32(1..=self.query_range)
    }

    /// Runs transaction `index` against `db` (STAMP's `client_run`, one
    /// iteration). Re-running it after an abort draws the same requests.
    pub(crate) fn run<D: Tables>(&self, db: &mut D, index: u32) -> Result<(), TxError> {
        let mut rng = self.rng(index);
        match select(rng.u32(0..100), self.percent_user) {
            Action::MakeReservation => {
                let queries = rng.u32(1..=self.per_transaction);
                let customer = self.id(&mut rng);
                let mut best: [Option<(i64, D::Entry)>; 3] = [None; 3];
                for _ in 0..queries {
                    let kind = Kind::from_index(rng.u32(0..3));
                    let id = self.id(&mut rng);
                    if let Some(e) = db.find(kind, id)? {
                        let price = db.price(e)?;
                        let slot = &mut best[kind as usize];
                        if slot.is_none_or(|(p, _)| price > p) {
                            *slot = Some((price, e));
                        }
                    }
                }
                if best.iter().all(Option::is_none) {
                    return Ok(());
                }
                let c = match db.find_customer(customer)? {
                    Some(c) => c,
                    None => db.insert_customer(customer)?,
                };
                for kind in Kind::ALL {
                    if let Some((_, e)) = best[kind as usize] {
                        db.reserve(c, kind, e)?;
                    }
                }
            }
            Action::DeleteCustomer => {
                let customer = self.id(&mut rng);
                if let Some(c) = db.find_customer(customer)? {
                    db.bill(c)?;
                    db.delete_customer(customer, c)?;
                }
            }
            Action::UpdateTables => {
                let updates = rng.u32(1..=self.per_transaction);
                for _ in 0..updates {
                    let kind = Kind::from_index(rng.u32(0..3));
                    let id = self.id(&mut rng);
                    if rng.bool() {
                        let price = i64::from(rng.u32(0..5)) * 10 + 50;
                        db.add_reservation(kind, id, 100, price)?;
                    } else if kind == Kind::Flight {
                        db.delete_flight(id)?;
                    } else {
                        db.add_reservation(kind, id, -100, -1)?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn select(r: u32, percent_user: u32) -> Action {
    if r < percent_user {
        Action::MakeReservation
    } else if r & 1 == 1 {
        Action::DeleteCustomer
    } else {
        Action::UpdateTables
    }
}

/// SplitMix64's finaliser: spreads nearby seeds apart.
#[inline]
pub(crate) fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One entry of the initial tables: `table` 0..3 are cars, flights and
/// rooms, 3 the customers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Initial {
    table: u32,
    id: u32,
    num: i64,
    price: i64,
}

/// The initial tables, exactly as STAMP's `initializeManager` makes them:
/// for each of cars, flights, rooms and customers, the ids `1..=relations`
/// shuffled further (`relations` swaps of two random positions, as STAMP
/// does, not a uniform shuffle), then each entry, in that order, gets
/// `100..=500` units (a multiple of 100) at a price of `50..=90` (a
/// multiple of 10). Every draw comes from STAMP's Mersenne Twister, seeded
/// with the low 32 bits of `seed` (STAMP's is seeded with 0, the default
/// of `--seed`), in STAMP's order.
pub(crate) fn initial_entries(seed: u64, relations: u32) -> Vec<Initial> {
    let mut rng = rand_mt::Mt::new(seed as u32);
    let n = relations as usize;
    let mut ids: Vec<u32> = (1..=relations).collect();
    let mut out = Vec::with_capacity(4 * n);
    for table in 0..4 {
        for _ in 0..n {
            let x = rng.next_u32() as usize % n;
            let y = rng.next_u32() as usize % n;
            ids.swap(x, y);
        }
        for &id in &ids {
            let num = i64::from(rng.next_u32() % 5 + 1) * 100;
            let price = i64::from(rng.next_u32() % 5) * 10 + 50;
            out.push(Initial { table, id, num, price });
        }
    }
    out
}

/// Adds `entries` to `db`.
pub(crate) fn populate<D: Tables>(db: &mut D, entries: &[Initial]) -> Result<(), TxError> {
    for e in entries {
        let added = match e.table {
            3 => db.add_customer(e.id)?,
            t => db.add_reservation(Kind::from_index(t), e.id, e.num, e.price)?,
        };
        debug_assert!(added, "initial ids are unique");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of STAMP's own tables for `-r16384` (its draw sequence
    /// with its `random.c` and `mt19937ar.c`, seeded as `random_alloc`
    /// seeds, compiled and run): per table, positions 0, 1 and the last,
    /// as `(table, position, id, units, price)`.
    #[test]
    fn initial_tables_are_stamps() {
        let expected = [
            (0, 0, 9955, 400, 70),
            (0, 1, 1158, 200, 80),
            (0, 16383, 14777, 500, 50),
            (1, 0, 4339, 500, 90),
            (1, 1, 1158, 200, 80),
            (1, 16383, 13971, 400, 90),
            (2, 0, 6127, 300, 90),
            (2, 1, 8446, 300, 70),
            (2, 16383, 12570, 200, 80),
            (3, 0, 9091, 300, 50),
            (3, 1, 164, 500, 90),
            (3, 16383, 2135, 400, 70),
        ];
        let entries = initial_entries(0, 16384);
        for (table, pos, id, num, price) in expected {
            let e = entries[table * 16384 + pos];
            assert_eq!((e.table, e.id, e.num, e.price), (table as u32, id, num, price), "table {table} position {pos}");
        }
    }

    #[test]
    fn actions_follow_the_percentages() {
        let w = Workload { seed: 3, per_transaction: 2, query_range: 100, percent_user: 90 };
        let mut counts = [0u32; 3];
        for i in 0..20_000 {
            counts[w.action(i) as usize] += 1;
        }
        // 90% reservations, 5% deletions, 5% updates, within sampling noise.
        assert!((17_600..18_400).contains(&counts[0]), "{counts:?}");
        assert!((800..1200).contains(&counts[1]), "{counts:?}");
        assert!((800..1200).contains(&counts[2]), "{counts:?}");
    }

    #[test]
    fn info_keys_order_by_kind_then_id() {
        assert!(info_key(Kind::Car, 9) < info_key(Kind::Flight, 1));
        assert_eq!(info_parts(info_key(Kind::Room, 77)), (2, 77));
    }
}
