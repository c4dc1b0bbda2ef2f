//! The bucket array of a [`THashMap`](super::THashMap) and its doubling.
//!
//! # The protocol
//!
//! The map's root is a `TVar` holding a pointer to the current [`Table`].
//! Operations load it with a plain atomic load (no read-set entry), then
//! read their bucket's head transactionally. A resize is one transaction
//! (the one whose insert found a chain at least [`Table::bound`] long):
//!
//! 1. it reads every head and every node of the old table, and relinks each
//!    chain into the two chains it splits into (bucket `i` of `n` goes to
//!    `i` and `i + n`, order kept, so only the links that change are
//!    written);
//! 2. it writes the [`MOVED`] marker into every old head;
//! 3. it allocates the new table, writes *every* one of its heads (empty
//!    ones too), points the root at it and frees the old table.
//!
//! Why it is correct under TL2:
//!
//! - A transaction that read an old head before the resize committed has
//!   that head in its read set; the resize wrote it, so the transaction
//!   fails validation (or extension) if it commits, or reads anything,
//!   later. A transaction that reads an old head after the commit sees
//!   [`MOVED`] and reads the root transactionally (consistent with that
//!   head) to find the new table.
//! - A transaction whose snapshot predates the resize may still load the
//!   *new* root with its plain load (the root is written back before it
//!   ends). Every head of the new table carries the resize's write
//!   version, newer than that snapshot, so its first read there extends
//!   the snapshot (revalidating everything it read) or aborts: it never
//!   sees the new table's contents next to older values. That is why the
//!   empty heads are written too.
//! - The old table is freed through the epoch reclaimer: a transaction that
//!   loaded the old root started before the commit's stamp, so the table
//!   outlives it. Nodes are relinked, never copied or freed, so every
//!   `TVar` of a value stays where it was.

use super::super::{Link, node};
use crate::error::TxError;
use crate::tvar::TVar;
use crate::txops::TxOps;
use crate::word::{TPtr, Word};

/// One entry: an immutable key, the link to the next entry of its chain,
/// and the value's variable.
pub(super) struct HNode<K, V> {
    pub(super) key: K,
    pub(super) next: Link<HNode<K, V>>,
    pub(super) value: TVar<V>,
}

/// The chain length at which an insert doubles the table, if the table
/// is also fuller than [`GROW_LOAD`] (and a doubling splits chains as it
/// should; see [`Table::bound`]). With a uniform hash, a chain of 8
/// appears among a million buckets once the load is near 1, and among 16
/// buckets near 3.
pub(super) const CHAIN_BOUND: usize = 8;

/// The bound of a table that never grows.
pub(super) const FIXED: usize = usize::MAX;

/// The head a resize leaves in every bucket of the table it replaced: an
/// address no node can have (nodes are aligned to 16).
const MOVED: usize = 1;

/// The head of a bucket whose table was replaced.
#[inline(always)]
pub(super) fn moved<N>() -> Option<TPtr<N>> {
    TPtr::from_addr(MOVED)
}

/// Whether `head` is the [`MOVED`] marker.
#[inline(always)]
pub(super) fn is_moved<N>(head: Option<TPtr<N>>) -> bool {
    matches!(head, Some(p) if p.addr() == MOVED)
}

/// A power-of-two array of chains.
///
/// Invariant: `buckets.len()` is a power of two (at least 1). A table that
/// the root points at holds no [`MOVED`] head; a replaced one holds
/// nothing else.
pub(super) struct Table<K, V> {
    pub(super) buckets: Box<[Link<HNode<K, V>>]>,
    /// An insert that walks a chain this long doubles the table
    /// ([`FIXED`]: never). Normally [`CHAIN_BOUND`]; a doubling whose
    /// longest chain is as long as the old table's longest (keys whose
    /// hashes collide in every bit: a split cannot shorten their chain)
    /// sets the new table's to twice that chain, so colliding keys cost
    /// one doubling each time their number doubles rather than one per
    /// insert. (A few such keys among many good ones raise the bound for
    /// the whole table until a doubling shortens the longest chain again.)
    pub(super) bound: usize,
}

impl<K, V> Table<K, V> {
    /// `n` empty buckets (`n` a power of two).
    pub(super) fn new(n: usize, bound: usize) -> Self
    where
        K: Send + Sync + 'static,
        V: 'static,
    {
        debug_assert!(n.is_power_of_two());
        Table { buckets: (0..n).map(|_| TVar::new(None)).collect(), bound }
    }

    /// The bucket of hash `h`.
    #[inline(always)]
    pub(super) fn bucket(&self, h: u64) -> &Link<HNode<K, V>> {
        let mask = self.buckets.len() - 1;
        // SAFETY: `h & mask < len`, `len` being a power of two (the type's
        // invariant).
        unsafe { self.buckets.get_unchecked(h as usize & mask) }
    }
}

/// How many buckets [`overfull`] counts.
const SAMPLE: usize = 64;

/// The load (entries per bucket) at which a table with a long chain
/// doubles. A map sized for its entries (`with_buckets(n)` for about `n`)
/// stays below it, so the occasional chain of 8 at load 1 (a few per
/// million buckets) does not double a table its user sized right.
pub(super) const GROW_LOAD: usize = 2;

/// Whether the table looks fuller than [`GROW_LOAD`]: the entries in
/// [`SAMPLE`] buckets from the one of hash `h` on (all of a smaller
/// table), read in the running transaction.
///
/// # Safety
///
/// `t` was loaded from the map's root in the running transaction.
#[cold]
#[inline(never)]
pub(super) unsafe fn overfull<'t, K, V, X>(tx: &mut X, t: TPtr<Table<K, V>>, h: u64) -> Result<bool, TxError>
where
    K: Send + Sync + 'static,
    V: Word + Send + Sync,
    X: TxOps<'t> + ?Sized,
{
    // SAFETY: the caller's contract.
    let t: &'t Table<K, V> = unsafe { t.get() };
    let n = t.buckets.len();
    let sample = n.min(SAMPLE);
    let want = sample * GROW_LOAD;
    let mut count = 0;
    for i in 0..sample {
        let b = &t.buckets[(h as usize).wrapping_add(i) & (n - 1)];
        let mut cur = tx.read(b)?;
        if is_moved(cur) {
            // Replaced in this snapshot: `grow` sees it too and stops.
            return Ok(true);
        }
        while let Some(p) = cur {
            count += 1;
            if count >= want {
                return Ok(true);
            }
            // SAFETY: read in the running transaction.
            cur = tx.read(unsafe { &node(p).next })?;
        }
    }
    Ok(false)
}

/// The last node of a half-chain being built, and its successor in the
/// old chain.
type Tail<K, V> = Option<(TPtr<HNode<K, V>>, Option<TPtr<HNode<K, V>>>)>;

/// Doubles the table `old`, that the transaction reached from `root` (see
/// the module docs). Returns `Ok(false)` without doing anything when `old`
/// was already replaced in this transaction's snapshot or cannot double.
///
/// # Safety
///
/// `old` was loaded from `root` in the running transaction (or the caller
/// has the map to itself), and `hash` is the map's hash of a key.
#[cold]
#[inline(never)]
pub(super) unsafe fn grow<'t, K, V, X>(
    tx: &mut X,
    root: &'t TVar<TPtr<Table<K, V>>>,
    old: TPtr<Table<K, V>>,
    hash: impl Fn(&K) -> u64,
) -> Result<bool, TxError>
where
    K: Copy + Send + Sync + 'static,
    V: Word + Send + Sync,
    X: TxOps<'t> + ?Sized,
{
    // SAFETY: the caller's contract: loaded in the running transaction,
    // which the reclaimer waits for before freeing it.
    let old_t: &'t Table<K, V> = unsafe { old.get() };
    let n = old_t.buckets.len();
    let Some(n2) = n.checked_mul(2).filter(|&n2| n2 <= isize::MAX as usize / 64) else { return Ok(false) };
    let mut heads: Vec<Option<TPtr<HNode<K, V>>>> = vec![None; n2];
    // The longest chain before and after the split.
    let (mut longest_old, mut longest) = (0, 0);
    for (i, b) in old_t.buckets.iter().enumerate() {
        let head = tx.read(b)?;
        if is_moved(head) {
            // Replaced in this snapshot (then every head is): the caller
            // looks again from the root.
            return Ok(false);
        }
        // Split the chain into bucket `i` (bit `n` of the hash clear) and
        // `i + n` (set), in order. Per half: its last node so far, and
        // that node's old successor.
        let mut tails: [Tail<K, V>; 2] = [None, None];
        let mut lens = [0usize; 2];
        let mut cur = head;
        while let Some(p) = cur {
            // SAFETY: read in the running transaction.
            let nd = unsafe { node(p) };
            let next = tx.read(&nd.next)?;
            let half = usize::from(hash(&nd.key) as usize & n != 0);
            match tails[half] {
                None => heads[i + half * n] = Some(p),
                Some((t, t_next)) if t_next != Some(p) => {
                    // SAFETY: read in the running transaction.
                    tx.write(unsafe { &node(t).next }, Some(p))?;
                }
                Some(_) => {}
            }
            tails[half] = Some((p, next));
            lens[half] += 1;
            cur = next;
        }
        for (t, t_next) in tails.into_iter().flatten() {
            if t_next.is_some() {
                // SAFETY: read in the running transaction.
                tx.write(unsafe { &node(t).next }, None)?;
            }
        }
        longest_old = longest_old.max(lens[0] + lens[1]);
        longest = longest.max(lens[0]).max(lens[1]);
        tx.write(b, moved())?;
    }
    // A split that shortened no chain (keys whose hashes collide in every
    // bit) backs off; one that did brings the bound back to normal.
    let bound = if longest >= longest_old { longest.saturating_mul(2).max(CHAIN_BOUND) } else { CHAIN_BOUND };
    let new = tx.alloc(Table::new(n2, bound))?;
    // SAFETY: allocated by the running transaction: alive until it ends
    // (dropped at once if it aborts, after which nothing uses it).
    let new_t: &'t Table<K, V> = unsafe { new.get() };
    // Every head, empty ones included: see the module docs.
    for (b, h) in new_t.buckets.iter().zip(heads) {
        tx.write(b, h)?;
    }
    tx.write(root, new)?;
    // SAFETY: `old` came from `TPtr::from_box` (the map's first table) or
    // from `alloc` in a committed resize; when this transaction commits the
    // root, its only link, points elsewhere (written above); and it is not
    // freed again: a table is freed only by the transaction that moves the
    // root off it, and once that one commits, every other resize of it
    // either read a head this one wrote (and fails validation) or reads
    // `MOVED` and stops above.
    unsafe { tx.free(old)? };
    Ok(true)
}
