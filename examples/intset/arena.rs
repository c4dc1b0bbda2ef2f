//! Integer sets written once over any word STM, for the peers that have no
//! transactional collections of their own (stm-core, fast-stm; skelaff runs
//! its own, `TSkipMap` among them): nodes live in an append-only arena and
//! link to each other by index, each link a transactional variable of the
//! STM under test.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the sets need from an STM: word variables, read, write, run.
pub(crate) trait WordStm: Send + Sync + 'static {
    /// The transaction handle.
    type Tx;
    /// The error that makes the STM re-run the transaction.
    type Err;
    /// A transactional `u64`.
    type Var: Send + Sync;
    fn var(x: u64) -> Self::Var;
    fn read(tx: &mut Self::Tx, v: &Self::Var) -> Result<u64, Self::Err>;
    fn write(tx: &mut Self::Tx, v: &Self::Var, x: u64) -> Result<(), Self::Err>;
    /// An error that re-runs the transaction: the sets use it when a peer
    /// without opacity shows them an impossible state (a loop that runs
    /// past the structure's size, a missing node).
    fn restart() -> Self::Err;
    fn atomically<R>(&self, f: impl Fn(&mut Self::Tx) -> Result<R, Self::Err>) -> R;
}

/// Index 0 is "no node".
const NIL: u64 = 0;
const CHUNK_BITS: usize = 14;
const CHUNKS: usize = 1 << 12;

pub(crate) struct Node<S: WordStm> {
    pub(crate) key: u64,
    pub(crate) vars: Box<[S::Var]>,
}

/// A chunk of node slots, each filled once.
type Chunk<S> = Box<[OnceLock<Node<S>>]>;

/// Append-only node storage (nodes are never reused: no reclamation is
/// needed, so no peer is handicapped by one). Up to 2^26 nodes.
pub(crate) struct Arena<S: WordStm> {
    chunks: Box<[OnceLock<Chunk<S>>]>,
    next: AtomicUsize,
}

impl<S: WordStm> Arena<S> {
    pub(crate) fn new() -> Self {
        Arena { chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(), next: AtomicUsize::new(1) }
    }

    /// A new node; its index is not visible to anyone until written to a link.
    pub(crate) fn alloc(&self, key: u64, vars: Box<[S::Var]>) -> u64 {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        assert!(i < CHUNKS << CHUNK_BITS, "intset arena full: run shorter (-d) or with a smaller range");
        let chunk =
            self.chunks[i >> CHUNK_BITS].get_or_init(|| (0..1 << CHUNK_BITS).map(|_| OnceLock::new()).collect());
        if chunk[i & ((1 << CHUNK_BITS) - 1)].set(Node { key, vars }).is_err() {
            unreachable!("arena index handed out twice");
        }
        i as u64
    }

    /// The node at `i`, or `None` for NIL or an index not (yet) filled (seen
    /// only by a transaction without opacity, which must restart).
    #[inline]
    pub(crate) fn get(&self, i: u64) -> Option<&Node<S>> {
        let i = i as usize;
        self.chunks.get(i >> CHUNK_BITS)?.get()?[i & ((1 << CHUNK_BITS) - 1)].get()
    }
}

fn vars<S: WordStm>(init: &[u64]) -> Box<[S::Var]> {
    init.iter().map(|&x| S::var(x)).collect()
}

macro_rules! node {
    ($arena:expr, $i:expr) => {
        match $arena.get($i) {
            Some(n) => n,
            None => return Err(S::restart()),
        }
    };
}

/// The set operations the benchmark runs, inside a transaction.
pub(crate) trait TxSet<S: WordStm>: Send + Sync {
    fn contains(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err>;
    fn add(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err>;
    fn remove(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err>;
    fn size(&self, tx: &mut S::Tx) -> Result<usize, S::Err>;
}

/// Sorted linked list with head and tail sentinels (keys 0 and u64::MAX).
pub(crate) struct List<S: WordStm> {
    arena: Arena<S>,
    head: u64,
    max_steps: usize,
}

impl<S: WordStm> List<S> {
    pub(crate) fn new(range: u64) -> Self {
        let arena = Arena::new();
        let tail = arena.alloc(u64::MAX, vars::<S>(&[NIL]));
        let head = arena.alloc(0, vars::<S>(&[tail]));
        List { arena, head, max_steps: 2 * range as usize + 16 }
    }

    /// (prev, next) with prev.key < k <= next.key.
    fn seek(&self, tx: &mut S::Tx, k: u64) -> Result<(u64, u64), S::Err> {
        let mut prev = self.head;
        let mut next = S::read(tx, &node!(self.arena, prev).vars[0])?;
        for _ in 0..self.max_steps {
            if node!(self.arena, next).key >= k {
                return Ok((prev, next));
            }
            prev = next;
            next = S::read(tx, &node!(self.arena, prev).vars[0])?;
        }
        Err(S::restart())
    }
}

impl<S: WordStm> TxSet<S> for List<S> {
    fn contains(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        let (_, next) = self.seek(tx, k)?;
        Ok(node!(self.arena, next).key == k)
    }

    fn add(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        let (prev, next) = self.seek(tx, k)?;
        if node!(self.arena, next).key == k {
            return Ok(false);
        }
        let n = self.arena.alloc(k, vars::<S>(&[next]));
        S::write(tx, &node!(self.arena, prev).vars[0], n)?;
        Ok(true)
    }

    fn remove(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        let (prev, next) = self.seek(tx, k)?;
        let n = node!(self.arena, next);
        if n.key != k {
            return Ok(false);
        }
        let after = S::read(tx, &n.vars[0])?;
        S::write(tx, &node!(self.arena, prev).vars[0], after)?;
        Ok(true)
    }

    fn size(&self, tx: &mut S::Tx) -> Result<usize, S::Err> {
        let mut n = 0;
        let mut cur = S::read(tx, &node!(self.arena, self.head).vars[0])?;
        while node!(self.arena, cur).key != u64::MAX {
            n += 1;
            cur = S::read(tx, &node!(self.arena, cur).vars[0])?;
        }
        Ok(n)
    }
}

/// Hash set: a fixed array of bucket heads, each an unsorted chain
/// (TinySTM's `hs`: 2^17 buckets, Knuth's multiplicative hash).
pub(crate) struct Hash<S: WordStm> {
    arena: Arena<S>,
    buckets: Box<[S::Var]>,
    max_steps: usize,
}

pub(crate) use skelaff_costs::intset::HASH_BUCKETS;

#[inline]
pub(crate) fn knuth_bucket(k: u64) -> usize {
    ((k as u32).wrapping_mul(2_654_435_761) as usize) & (HASH_BUCKETS - 1)
}

impl<S: WordStm> Hash<S> {
    pub(crate) fn new(range: u64) -> Self {
        Hash {
            arena: Arena::new(),
            buckets: (0..HASH_BUCKETS).map(|_| S::var(NIL)).collect(),
            max_steps: range as usize + 16,
        }
    }

    /// (the link pointing at k's node or the chain's end, that node).
    fn seek<'a>(&'a self, tx: &mut S::Tx, k: u64) -> Result<(&'a S::Var, u64), S::Err> {
        let mut link = &self.buckets[knuth_bucket(k)];
        for _ in 0..self.max_steps {
            let cur = S::read(tx, link)?;
            if cur == NIL {
                return Ok((link, NIL));
            }
            let n = node!(self.arena, cur);
            if n.key == k {
                return Ok((link, cur));
            }
            link = &n.vars[0];
        }
        Err(S::restart())
    }
}

impl<S: WordStm> TxSet<S> for Hash<S> {
    fn contains(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        Ok(self.seek(tx, k)?.1 != NIL)
    }

    fn add(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        if self.seek(tx, k)?.1 != NIL {
            return Ok(false);
        }
        let b = &self.buckets[knuth_bucket(k)];
        let first = S::read(tx, b)?;
        let n = self.arena.alloc(k, vars::<S>(&[first]));
        S::write(tx, b, n)?;
        Ok(true)
    }

    fn remove(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        let (link, cur) = self.seek(tx, k)?;
        if cur == NIL {
            return Ok(false);
        }
        let after = S::read(tx, &node!(self.arena, cur).vars[0])?;
        S::write(tx, link, after)?;
        Ok(true)
    }

    fn size(&self, tx: &mut S::Tx) -> Result<usize, S::Err> {
        let mut n = 0;
        for b in self.buckets.iter() {
            let mut cur = S::read(tx, b)?;
            while cur != NIL {
                n += 1;
                cur = S::read(tx, &node!(self.arena, cur).vars[0])?;
            }
        }
        Ok(n)
    }
}

/// Skip list (TinySTM's `sl`: levels 0..=32, probability 50%), with head and
/// tail sentinels; the current top level is a transactional variable.
pub(crate) struct SkipList<S: WordStm> {
    arena: Arena<S>,
    head: u64,
    level: S::Var,
    seed: AtomicUsize,
    max_steps: usize,
}

pub(crate) const SL_MAX_LEVEL: usize = 32;

impl<S: WordStm> SkipList<S> {
    pub(crate) fn new(range: u64) -> Self {
        let arena = Arena::new();
        let tail = arena.alloc(u64::MAX, vars::<S>(&[NIL; SL_MAX_LEVEL + 1]));
        let head = arena.alloc(0, vars::<S>(&[tail; SL_MAX_LEVEL + 1]));
        SkipList {
            arena,
            head,
            level: S::var(0),
            seed: AtomicUsize::new(0x2545_f491),
            max_steps: 4 * range as usize + 64,
        }
    }

    fn random_level(&self) -> usize {
        // A shared xorshift is enough to draw levels; races only mix it more.
        let mut x = self.seed.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.seed.store(x, Ordering::Relaxed);
        ((x as u64).trailing_ones() as usize).min(SL_MAX_LEVEL)
    }

    /// Fills `update[0..=top]` with the last node before k on each level;
    /// returns (top, the level-0 successor).
    fn seek(&self, tx: &mut S::Tx, k: u64, update: &mut [u64; SL_MAX_LEVEL + 1]) -> Result<(usize, u64), S::Err> {
        let top = (S::read(tx, &self.level)? as usize).min(SL_MAX_LEVEL);
        let mut x = self.head;
        let mut steps = 0;
        let mut next = NIL;
        for l in (0..=top).rev() {
            next = S::read(tx, &node!(self.arena, x).vars[l])?;
            loop {
                steps += 1;
                if steps > self.max_steps {
                    return Err(S::restart());
                }
                let n = node!(self.arena, next);
                if n.key >= k {
                    break;
                }
                x = next;
                next = S::read(tx, n.vars.get(l).ok_or_else(S::restart)?)?;
            }
            update[l] = x;
        }
        Ok((top, next))
    }
}

impl<S: WordStm> TxSet<S> for SkipList<S> {
    fn contains(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        let mut update = [NIL; SL_MAX_LEVEL + 1];
        let (_, next) = self.seek(tx, k, &mut update)?;
        Ok(node!(self.arena, next).key == k)
    }

    fn add(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        let mut update = [NIL; SL_MAX_LEVEL + 1];
        let (top, next) = self.seek(tx, k, &mut update)?;
        if node!(self.arena, next).key == k {
            return Ok(false);
        }
        let l = self.random_level();
        if l > top {
            for u in &mut update[top + 1..=l] {
                *u = self.head;
            }
            S::write(tx, &self.level, l as u64)?;
        }
        let mut succ = [NIL; SL_MAX_LEVEL + 1];
        for i in 0..=l {
            succ[i] = S::read(tx, &node!(self.arena, update[i]).vars[i])?;
        }
        let n = self.arena.alloc(k, vars::<S>(&succ[..=l]));
        for (i, &u) in update.iter().enumerate().take(l + 1) {
            S::write(tx, &node!(self.arena, u).vars[i], n)?;
        }
        Ok(true)
    }

    fn remove(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        let mut update = [NIL; SL_MAX_LEVEL + 1];
        let (top, next) = self.seek(tx, k, &mut update)?;
        let n = node!(self.arena, next);
        if n.key != k {
            return Ok(false);
        }
        for (i, &u) in update.iter().enumerate().take(top + 1) {
            let link = &node!(self.arena, u).vars[i];
            if S::read(tx, link)? == next {
                let after = S::read(tx, n.vars.get(i).ok_or_else(S::restart)?)?;
                S::write(tx, link, after)?;
            }
        }
        let mut l = top;
        let tail_key = u64::MAX;
        while l > 0 && node!(self.arena, S::read(tx, &node!(self.arena, self.head).vars[l])?).key == tail_key {
            l -= 1;
        }
        if l != top {
            S::write(tx, &self.level, l as u64)?;
        }
        Ok(true)
    }

    fn size(&self, tx: &mut S::Tx) -> Result<usize, S::Err> {
        let mut n = 0;
        let mut cur = S::read(tx, &node!(self.arena, self.head).vars[0])?;
        while node!(self.arena, cur).key != u64::MAX {
            n += 1;
            cur = S::read(tx, &node!(self.arena, cur).vars[0])?;
        }
        Ok(n)
    }
}

/// Red-black tree with parent links (STAMP's shape; a node with two
/// children is deleted by relinking its successor, keys never change).
/// vars: 0 left, 1 right, 2 parent, 3 red.
pub(crate) struct RbTree<S: WordStm> {
    arena: Arena<S>,
    root: S::Var,
    max_steps: usize,
}

const L: usize = 0;
const R: usize = 1;
const PAR: usize = 2;
const RED: usize = 3;

impl<S: WordStm> RbTree<S> {
    pub(crate) fn new() -> Self {
        RbTree { arena: Arena::new(), root: S::var(NIL), max_steps: 200 }
    }

    fn get(&self, tx: &mut S::Tx, n: u64, f: usize) -> Result<u64, S::Err> {
        if n == NIL {
            return Ok(NIL);
        }
        S::read(tx, &node!(self.arena, n).vars[f])
    }

    fn set(&self, tx: &mut S::Tx, n: u64, f: usize, x: u64) -> Result<(), S::Err> {
        if n == NIL {
            return Ok(());
        }
        S::write(tx, &node!(self.arena, n).vars[f], x)
    }

    fn red(&self, tx: &mut S::Tx, n: u64) -> Result<bool, S::Err> {
        Ok(self.get(tx, n, RED)? != 0)
    }

    fn replace_in_parent(&self, tx: &mut S::Tx, pp: u64, old: u64, new: u64) -> Result<(), S::Err> {
        if pp == NIL {
            return S::write(tx, &self.root, new);
        }
        let side = if self.get(tx, pp, L)? == old { L } else { R };
        self.set(tx, pp, side, new)
    }

    /// Rotate `p` down towards side `d` (d = L: rotate left).
    fn rotate(&self, tx: &mut S::Tx, p: u64, d: usize) -> Result<(), S::Err> {
        let o = 1 - d;
        let r = self.get(tx, p, o)?;
        if p == NIL || r == NIL {
            return Err(S::restart());
        }
        let inner = self.get(tx, r, d)?;
        self.set(tx, p, o, inner)?;
        self.set(tx, inner, PAR, p)?;
        let pp = self.get(tx, p, PAR)?;
        self.set(tx, r, PAR, pp)?;
        self.replace_in_parent(tx, pp, p, r)?;
        self.set(tx, r, d, p)?;
        self.set(tx, p, PAR, r)
    }

    fn find(&self, tx: &mut S::Tx, k: u64) -> Result<u64, S::Err> {
        let mut t = S::read(tx, &self.root)?;
        for _ in 0..self.max_steps {
            if t == NIL {
                return Ok(NIL);
            }
            let n = node!(self.arena, t);
            if k == n.key {
                return Ok(t);
            }
            t = S::read(tx, &n.vars[if k < n.key { L } else { R }])?;
        }
        Err(S::restart())
    }

    fn fix_insert(&self, tx: &mut S::Tx, mut x: u64) -> Result<(), S::Err> {
        for _ in 0..self.max_steps {
            if x == NIL || x == S::read(tx, &self.root)? {
                break;
            }
            let px = self.get(tx, x, PAR)?;
            if !self.red(tx, px)? {
                break;
            }
            let gx = self.get(tx, px, PAR)?;
            let d = if px == self.get(tx, gx, L)? { L } else { R };
            let y = self.get(tx, gx, 1 - d)?;
            if self.red(tx, y)? {
                self.set(tx, px, RED, 0)?;
                self.set(tx, y, RED, 0)?;
                self.set(tx, gx, RED, 1)?;
                x = gx;
            } else {
                if x == self.get(tx, px, 1 - d)? {
                    x = px;
                    self.rotate(tx, x, d)?;
                }
                let px = self.get(tx, x, PAR)?;
                let gx = self.get(tx, px, PAR)?;
                self.set(tx, px, RED, 0)?;
                self.set(tx, gx, RED, 1)?;
                self.rotate(tx, gx, 1 - d)?;
            }
        }
        let r = S::read(tx, &self.root)?;
        if self.red(tx, r)? {
            self.set(tx, r, RED, 0)?;
        }
        Ok(())
    }

    fn swap_with_successor(&self, tx: &mut S::Tx, p: u64) -> Result<(), S::Err> {
        let pl = self.get(tx, p, L)?;
        let pr = self.get(tx, p, R)?;
        let mut s = pr;
        for _ in 0..self.max_steps {
            let l = self.get(tx, s, L)?;
            if l == NIL {
                break;
            }
            s = l;
        }
        let (pp, pc) = (self.get(tx, p, PAR)?, self.get(tx, p, RED)?);
        let (sp, sr, sc) = (self.get(tx, s, PAR)?, self.get(tx, s, R)?, self.get(tx, s, RED)?);
        self.replace_in_parent(tx, pp, p, s)?;
        self.set(tx, s, PAR, pp)?;
        self.set(tx, s, L, pl)?;
        self.set(tx, pl, PAR, s)?;
        if s == pr {
            self.set(tx, s, R, p)?;
            self.set(tx, p, PAR, s)?;
        } else {
            self.set(tx, s, R, pr)?;
            self.set(tx, pr, PAR, s)?;
            self.set(tx, sp, L, p)?;
            self.set(tx, p, PAR, sp)?;
        }
        self.set(tx, p, L, NIL)?;
        self.set(tx, p, R, sr)?;
        self.set(tx, sr, PAR, p)?;
        self.set(tx, s, RED, pc)?;
        self.set(tx, p, RED, sc)
    }

    fn fix_delete(&self, tx: &mut S::Tx, mut x: u64) -> Result<(), S::Err> {
        for _ in 0..self.max_steps {
            if x == S::read(tx, &self.root)? || self.red(tx, x)? {
                break;
            }
            let px = self.get(tx, x, PAR)?;
            let d = if x == self.get(tx, px, L)? { L } else { R };
            let o = 1 - d;
            let mut sib = self.get(tx, px, o)?;
            if self.red(tx, sib)? {
                self.set(tx, sib, RED, 0)?;
                self.set(tx, px, RED, 1)?;
                self.rotate(tx, px, d)?;
                let px = self.get(tx, x, PAR)?;
                sib = self.get(tx, px, o)?;
            }
            let (sd, so) = (self.get(tx, sib, d)?, self.get(tx, sib, o)?);
            if !self.red(tx, sd)? && !self.red(tx, so)? {
                self.set(tx, sib, RED, 1)?;
                x = self.get(tx, x, PAR)?;
            } else {
                if !self.red(tx, so)? {
                    self.set(tx, sd, RED, 0)?;
                    self.set(tx, sib, RED, 1)?;
                    self.rotate(tx, sib, o)?;
                    let px = self.get(tx, x, PAR)?;
                    sib = self.get(tx, px, o)?;
                }
                let px = self.get(tx, x, PAR)?;
                let pc = self.get(tx, px, RED)?;
                self.set(tx, sib, RED, pc)?;
                self.set(tx, px, RED, 0)?;
                let so = self.get(tx, sib, o)?;
                self.set(tx, so, RED, 0)?;
                self.rotate(tx, px, d)?;
                x = S::read(tx, &self.root)?;
            }
        }
        if self.red(tx, x)? {
            self.set(tx, x, RED, 0)?;
        }
        Ok(())
    }
}

impl<S: WordStm> TxSet<S> for RbTree<S> {
    fn contains(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        Ok(self.find(tx, k)? != NIL)
    }

    fn add(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        let mut t = S::read(tx, &self.root)?;
        if t == NIL {
            let n = self.arena.alloc(k, vars::<S>(&[NIL, NIL, NIL, 0]));
            S::write(tx, &self.root, n)?;
            return Ok(true);
        }
        for _ in 0..self.max_steps {
            let nt = node!(self.arena, t);
            if k == nt.key {
                return Ok(false);
            }
            let d = if k < nt.key { L } else { R };
            let c = S::read(tx, &nt.vars[d])?;
            if c == NIL {
                let n = self.arena.alloc(k, vars::<S>(&[NIL, NIL, t, 1]));
                S::write(tx, &nt.vars[d], n)?;
                self.fix_insert(tx, n)?;
                return Ok(true);
            }
            t = c;
        }
        Err(S::restart())
    }

    fn remove(&self, tx: &mut S::Tx, k: u64) -> Result<bool, S::Err> {
        let p = self.find(tx, k)?;
        if p == NIL {
            return Ok(false);
        }
        if self.get(tx, p, L)? != NIL && self.get(tx, p, R)? != NIL {
            self.swap_with_successor(tx, p)?;
        }
        let l = self.get(tx, p, L)?;
        let repl = if l != NIL { l } else { self.get(tx, p, R)? };
        let black = !self.red(tx, p)?;
        let pp = self.get(tx, p, PAR)?;
        if repl != NIL {
            self.set(tx, repl, PAR, pp)?;
            self.replace_in_parent(tx, pp, p, repl)?;
            if black {
                self.fix_delete(tx, repl)?;
            }
        } else if pp == NIL {
            S::write(tx, &self.root, NIL)?;
        } else {
            if black {
                self.fix_delete(tx, p)?;
            }
            let pp = self.get(tx, p, PAR)?;
            if pp != NIL {
                if self.get(tx, pp, L)? == p {
                    self.set(tx, pp, L, NIL)?;
                } else if self.get(tx, pp, R)? == p {
                    self.set(tx, pp, R, NIL)?;
                }
            }
        }
        Ok(true)
    }

    fn size(&self, tx: &mut S::Tx) -> Result<usize, S::Err> {
        let mut n = 0;
        let mut stack = vec![S::read(tx, &self.root)?];
        while let Some(t) = stack.pop() {
            if t != NIL {
                n += 1;
                stack.push(self.get(tx, t, L)?);
                stack.push(self.get(tx, t, R)?);
            }
        }
        Ok(n)
    }
}
