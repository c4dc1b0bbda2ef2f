//! Placement keys: what a chunk's or a large block's pages follow, and the
//! `mbind` calls that make them follow it.
//!
//! A [`Key`] is a [`Policy`] made concrete for one thread: first-touch and
//! local carry the node the thread ran on when it took the chunk, and
//! single-node interleave or cyclic become bind (they mean the same). Chunks
//! with equal keys share an arena. The policy is the thread's own or the
//! process-wide default kept here; the node is the one the thread runs on.

use core::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};

use super::lock::SpinLock;
use crate::policy::Policy;
use crate::sets::{MAX_NODES, NodeSet};
use crate::sys;

/// The policy kinds, as a key stores them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    FirstTouch,
    Local,
    Bind,
    Preferred,
    Interleave,
    Cyclic,
}

/// A concrete placement: kind, nodes, cyclic block, and for first-touch and
/// local the node the chunk is meant for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Key {
    pub(crate) kind: Kind,
    pub(crate) nodes: NodeSet,
    pub(crate) block: usize,
    pub(crate) node: usize,
}

/// How a mapping actually got bound.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Binding {
    /// As its policy says.
    AsPolicy,
    /// A cyclic mapping that would have pushed this allocator's mappings past
    /// its share of `vm.max_map_count`, interleaved by the kernel instead over
    /// the same nodes.
    Interleaved,
    /// The kernel refused the binding; the pages go where the kernel's
    /// default policy puts them (counted in [`AllocStats::fallbacks`](super::AllocStats::fallbacks)).
    Unbound,
    /// A bind mapping whose nodes, or a cyclic mapping some of whose nodes,
    /// had less memory available than the mapping's share plus
    /// [`ROOM_MARGIN`](super::ROOM_MARGIN) when it was mapped: those nodes
    /// are preferred instead of bound (`MPOL_PREFERRED_MANY`, or
    /// `MPOL_PREFERRED` before Linux 5.15), so that pages they cannot hold
    /// go to other nodes rather than end in the OOM killer (counted in
    /// [`AllocStats::node_full`](super::AllocStats::node_full)).
    NodeFull,
}

/// Memory a bound node must keep available beyond a new mapping for the
/// mapping to be bound rather than preferred: room for the chunks other
/// threads have mapped but not yet touched.
pub(crate) const ROOM_MARGIN: u64 = 16 << 20;

/// Whether `nodes` have `bytes` plus [`ROOM_MARGIN`] available now (free
/// plus reclaimable, from their `meminfo`, read without allocating). A node
/// whose memory cannot be read counts as having room: the kernel decides.
fn has_room(nodes: &NodeSet, bytes: usize) -> bool {
    let mut available = 0u64;
    for n in nodes.iter() {
        match crate::node_memory::available_now(n) {
            Some(a) => available = available.saturating_add(a),
            None => return true,
        }
    }
    available >= (bytes as u64).saturating_add(ROOM_MARGIN)
}

/// Prefers `nodes` for `[addr, addr + len)`: their pages go there while
/// the nodes have memory, elsewhere after. Returns whether the kernel took it.
fn prefer(addr: *mut u8, len: usize, nodes: &NodeSet) -> bool {
    match sys::mbind(addr, len, sys::MPOL_PREFERRED_MANY, nodes.as_words(), 0) {
        Ok(()) => true,
        // Before Linux 5.15: the first node alone.
        Err(e) if e.errno() == libc::EINVAL => match nodes.first().and_then(single) {
            Some(one) => sys::mbind(addr, len, sys::MPOL_PREFERRED, one.as_words(), 0).is_ok(),
            None => false,
        },
        Err(_) => false,
    }
}

impl Key {
    /// The key of `policy` for a thread running on `node`.
    pub(crate) fn new(policy: &Policy, node: usize) -> Key {
        let k = |kind, nodes, block, node| Key { kind, nodes, block, node };
        match *policy {
            Policy::FirstTouch => k(Kind::FirstTouch, NodeSet::new(), 0, node),
            Policy::Local => k(Kind::Local, NodeSet::new(), 0, node),
            Policy::Preferred(n) => k(Kind::Preferred, NodeSet::new(), 0, n),
            Policy::Bind(nodes) => k(Kind::Bind, nodes, 0, 0),
            Policy::Interleave(nodes) | Policy::Cyclic { nodes, .. } if nodes.len() == 1 => k(Kind::Bind, nodes, 0, 0),
            Policy::Interleave(nodes) => k(Kind::Interleave, nodes, 0, 0),
            Policy::Cyclic { nodes, block } => k(Kind::Cyclic, nodes, block.max(1), 0),
        }
    }

    /// The policy this key stands for.
    pub(crate) fn policy(&self) -> Policy {
        match self.kind {
            Kind::FirstTouch => Policy::FirstTouch,
            Kind::Local => Policy::Local,
            Kind::Preferred => Policy::Preferred(self.node),
            Kind::Bind => Policy::Bind(self.nodes),
            Kind::Interleave => Policy::Interleave(self.nodes),
            Kind::Cyclic => Policy::Cyclic { nodes: self.nodes, block: self.block },
        }
    }

    /// The node a first-touch or local key was made for (`None` otherwise).
    pub(crate) fn home(&self) -> Option<usize> {
        matches!(self.kind, Kind::FirstTouch | Kind::Local).then_some(self.node)
    }

    /// Whether a thread running on `node` should use a different arena for
    /// this policy: only first-touch and local keys depend on the node.
    pub(crate) fn follows_thread_node(&self) -> bool {
        matches!(self.kind, Kind::FirstTouch | Kind::Local)
    }

    /// The node of byte `offset` of a cyclic mapping whose block 0 goes to
    /// the `rotation`-th node of the set: block `i` goes to node number
    /// `(rotation + i) mod n` of the set in ascending order.
    pub(crate) fn cyclic_node(&self, rotation: u64, offset: usize) -> Option<usize> {
        if self.kind != Kind::Cyclic {
            return None;
        }
        let n = self.nodes.len() as u64;
        let i = ((offset / self.block) as u64 + rotation % n) % n;
        self.nodes.nth(i as usize)
    }

    /// Binds the fresh mapping `[addr, addr + len)` (page-aligned, nothing
    /// touched yet); returns how the kernel took it (the caller counts a
    /// fallback or an interleaved cyclic mapping) and the mapping pieces a
    /// cyclic binding holds. Never allocates.
    ///
    /// A bind or cyclic mapping is first checked against its nodes' memory
    /// ([`has_room`]): without room it is preferred to them instead
    /// ([`Binding::NodeFull`]). With room and `prefault` (a chunk, whose
    /// blocks are handed out and touched over a long time, perhaps after
    /// the node has filled up), its pages are faulted in now under the
    /// preferred form and then bound with a move, so that no later fault
    /// of the chunk can meet a full bound node; a move that finds the node
    /// full leaves the mapping preferred ([`Binding::NodeFull`]) instead.
    pub(crate) fn bind(&self, addr: *mut u8, len: usize, rotation: u64, prefault: bool) -> (Binding, u32) {
        let call = |mode, nodes: &NodeSet| sys::mbind(addr, len, mode, nodes.as_words(), 0).is_ok();
        let ok = match self.kind {
            Kind::FirstTouch => true,
            Kind::Local => call(sys::MPOL_LOCAL, &NodeSet::new()),
            Kind::Bind if !has_room(&self.nodes, len) => {
                return (if prefer(addr, len, &self.nodes) { Binding::NodeFull } else { Binding::Unbound }, 0);
            }
            Kind::Bind if prefault => {
                if !prefer(addr, len, &self.nodes) {
                    return (Binding::Unbound, 0);
                }
                populate(addr, len);
                let moved = sys::mbind(addr, len, sys::MPOL_BIND, self.nodes.as_words(), MOVE_STRICT).is_ok();
                if !moved {
                    // Some pages could not be moved onto the nodes: keep them preferred.
                    return (if prefer(addr, len, &self.nodes) { Binding::NodeFull } else { Binding::Unbound }, 0);
                }
                true
            }
            Kind::Bind => call(sys::MPOL_BIND, &self.nodes),
            Kind::Preferred => match single(self.node) {
                Some(one) => call(sys::MPOL_PREFERRED, &one),
                None => false,
            },
            Kind::Interleave => {
                no_huge_pages(addr, len);
                call(sys::MPOL_INTERLEAVE, &self.nodes)
            }
            Kind::Cyclic => return self.bind_cyclic(addr, len, rotation, prefault),
        };
        if ok { (Binding::AsPolicy, 0) } else { (Binding::Unbound, 0) }
    }

    fn bind_cyclic(&self, addr: *mut u8, len: usize, rotation: u64, prefault: bool) -> (Binding, u32) {
        let pieces = len.div_ceil(self.block);
        if !reserve_pieces(pieces) {
            no_huge_pages(addr, len);
            let ok = sys::mbind(addr, len, sys::MPOL_INTERLEAVE, self.nodes.as_words(), 0).is_ok();
            return (if ok { Binding::Interleaved } else { Binding::Unbound }, 0);
        }
        // Each node's share of the mapping, rounded up to a block.
        let share = len.div_ceil(self.nodes.len().max(1)).next_multiple_of(self.block);
        let short: NodeSet =
            self.nodes.iter().filter(|&n| single(n).is_some_and(|one| !has_room(&one, share))).collect();
        let mut bound = if prefault {
            // Every block preferred, faulted in, then bound with a move.
            self.bind_blocks(addr, 0, len, rotation, &self.nodes, 0) && {
                populate(addr, len);
                self.bind_blocks(addr, 0, len, rotation, &short, MOVE_STRICT)
            }
        } else {
            self.bind_blocks(addr, 0, len, rotation, &short, 0)
        };
        let mut full = !short.is_empty();
        if !bound && prefault {
            // A move found a node full: every block preferred, as it was.
            bound = self.bind_blocks(addr, 0, len, rotation, &self.nodes, 0);
            full = true;
        }
        if !bound {
            // Undo the part that was bound: the whole mapping goes unbound.
            let _ = sys::mbind(addr, len, sys::MPOL_DEFAULT, &[], 0);
            release_pieces(pieces as u32);
            return (Binding::Unbound, 0);
        }
        (if full { Binding::NodeFull } else { Binding::AsPolicy }, pieces as u32)
    }

    /// Binds the cyclic blocks covering `[base + from, base + to)`, blocks
    /// counted from `base`, with `flags`; the blocks of the nodes in `soft`
    /// are preferred to their node instead of bound. Returns whether every
    /// `mbind` succeeded.
    fn bind_blocks(&self, base: *mut u8, from: usize, to: usize, rotation: u64, soft: &NodeSet, flags: u32) -> bool {
        let mut off = from;
        while off < to {
            let end = (off / self.block + 1).saturating_mul(self.block).min(to);
            let node = self.cyclic_node(rotation, off).unwrap_or(0);
            let Some(one) = single(node) else { return false };
            let block = base.wrapping_add(off);
            let bound = if soft.contains(node) {
                prefer(block, end - off, &one)
            } else {
                sys::mbind(block, end - off, sys::MPOL_BIND, one.as_words(), flags).is_ok()
            };
            if !bound {
                return false;
            }
            off = end;
        }
        true
    }

    /// Turns the bind or cyclic binding of `[base + from, base + to)`, part
    /// of a mapping bound by [`bind`](Key::bind) with `rotation`, into
    /// preferences for the same nodes: for a chunk whose pages the kernel
    /// may take back (`MADV_FREE`) and fault in again later, when its node
    /// may be full. Other keys are left as they are.
    pub(crate) fn soften(&self, base: *mut u8, from: usize, to: usize, rotation: u64) {
        match self.kind {
            Kind::Bind => {
                let _ = prefer(base.wrapping_add(from), to - from, &self.nodes);
            }
            Kind::Cyclic => {
                let _ = self.bind_blocks(base, from, to, rotation, &self.nodes, 0);
            }
            _ => {}
        }
    }
}

/// `mbind` flags that move the range's pages onto the policy's nodes and
/// fail (`EIO`) when some cannot be moved; a move never calls the OOM killer.
const MOVE_STRICT: u32 = sys::MPOL_MF_MOVE | sys::MPOL_MF_STRICT;

/// Faults in every page of a fresh mapping of ours under its current
/// (preferred) policy; a kernel without `MADV_POPULATE_WRITE` (before
/// 5.14) leaves them to be faulted in on first touch.
fn populate(addr: *mut u8, len: usize) {
    // SAFETY: MADV_POPULATE_WRITE changes the contents of no page,
    // whatever the range: mapped pages are faulted in as they are (a
    // missing one as the zero-filled page a first write would get), and a
    // range that is not mapped writable is refused with an error.
    let _ = unsafe { sys::madvise(addr, len, sys::MADV_POPULATE_WRITE) };
}

/// Keeps transparent huge pages out of an interleaved range: with them the
/// kernel would interleave 2 MiB at a time.
fn no_huge_pages(addr: *mut u8, len: usize) {
    // SAFETY: callers pass a mapping of ours (a chunk or a large block being
    // set up by `chunk::map` or `large::alloc`); `MADV_NOHUGEPAGE` changes
    // no contents, so it cannot affect a live reference into the range.
    let _ = unsafe { sys::madvise(addr, len, sys::MADV_NOHUGEPAGE) };
}

/// The set of one node, without the allocating error of `NodeSet::try_single`.
pub(crate) fn single(node: usize) -> Option<NodeSet> {
    (node < MAX_NODES).then(|| NodeSet::single(node))
}

/// The process-wide default policy, followed by threads that set none.
static DEFAULT: SpinLock<Policy> = SpinLock::new(Policy::FirstTouch);
/// Bumped on every change of [`DEFAULT`], so that a thread notices one with
/// a single load.
static DEFAULT_EPOCH: AtomicU64 = AtomicU64::new(0);

/// The process-wide default policy (first-touch until set).
pub(crate) fn default_policy() -> Policy {
    *DEFAULT.lock()
}

/// Sets the process-wide default (already validated) and bumps the epoch.
pub(crate) fn set_default_policy(policy: Policy) {
    let mut g = DEFAULT.lock();
    *g = policy;
    DEFAULT_EPOCH.fetch_add(1, Ordering::AcqRel);
}

/// The epoch of the default policy: it changes whenever the default does.
pub(crate) fn default_epoch() -> u64 {
    DEFAULT_EPOCH.load(Ordering::Acquire)
}

/// Takes the default policy's lock for a `fork` (see `fork.rs`).
pub(crate) fn lock_for_fork() {
    DEFAULT.lock_held();
}

/// Releases what [`lock_for_fork`] took.
///
/// # Safety
///
/// The calling thread took it with [`lock_for_fork`] (in a child: the thread
/// that forked did) and has not released it since.
pub(crate) unsafe fn unlock_after_fork() {
    // SAFETY: per the contract; `lock_for_fork` leaves no guard.
    unsafe { DEFAULT.unlock_held() };
}

/// Node of each CPU, learnt from `getcpu` as threads run there (0 = not
/// known yet, else node + 1).
static CPU_NODE: [AtomicU16; crate::sets::MAX_CPUS] = [const { AtomicU16::new(0) }; crate::sets::MAX_CPUS];

/// The node the calling thread runs on: `sched_getcpu` (no system call) and
/// the CPU's node, asking the kernel the first time a CPU is seen.
pub(crate) fn thread_node() -> usize {
    let cpu = sys::sched_getcpu();
    if let Some(known) = cpu.and_then(|c| CPU_NODE.get(c)) {
        let v = known.load(Ordering::Relaxed);
        if v != 0 {
            return v as usize - 1;
        }
    }
    let Ok((cpu, node)) = sys::getcpu() else { return 0 };
    let node = node.min(crate::MAX_NODES - 1);
    if let Some(slot) = CPU_NODE.get(cpu) {
        slot.store(node as u16 + 1, Ordering::Relaxed);
    }
    node
}

/// Kernel mappings (VMAs) this allocator's cyclic bindings hold.
static PIECES: AtomicUsize = AtomicUsize::new(0);
/// The most it may hold: set from `vm.max_map_count` when a cyclic policy is
/// installed (half of what the process has left), 16384 until then.
static PIECE_LIMIT: AtomicUsize = AtomicUsize::new(16384);

fn reserve_pieces(n: usize) -> bool {
    let limit = PIECE_LIMIT.load(Ordering::Relaxed);
    let before = PIECES.fetch_add(n, Ordering::Relaxed);
    if before + n > limit {
        PIECES.fetch_sub(n, Ordering::Relaxed);
        return false;
    }
    true
}

/// Gives back `n` pieces of a mapping that was unmapped.
pub(crate) fn release_pieces(n: u32) {
    if n > 0 {
        PIECES.fetch_sub(n as usize, Ordering::Relaxed);
    }
}

/// Recomputes the cyclic mapping budget (reads `/proc`, so it allocates: call
/// it only from the public API, never from inside the allocator).
pub(crate) fn refresh_piece_limit() {
    let held = PIECES.load(Ordering::Relaxed);
    let budget = crate::policy::map_budget();
    PIECE_LIMIT.store(held + budget / 2, Ordering::Relaxed);
}

/// How many mapping pieces the allocator's cyclic chunks hold.
pub(crate) fn pieces_held() -> usize {
    PIECES.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_normalise_single_node_spreads_to_bind() {
        let one = NodeSet::single(2);
        let bind = Key::new(&Policy::Bind(one), 0);
        assert_eq!(Key::new(&Policy::Interleave(one), 5), bind);
        assert_eq!(Key::new(&Policy::Cyclic { nodes: one, block: 4096 }, 1), bind);
        assert_eq!(Key::new(&Policy::FirstTouch, 3).home(), Some(3));
        assert_eq!(Key::new(&Policy::Bind(one), 3).home(), None);
        let p = Policy::Cyclic { nodes: "0-1".parse().unwrap(), block: 8192 };
        assert_eq!(Key::new(&p, 0).policy(), p);
    }

    #[test]
    fn cyclic_rotation_counts_blocks_from_the_start() {
        let k = Key::new(&Policy::Cyclic { nodes: "1,3,5".parse().unwrap(), block: 8192 }, 0);
        let nodes: Vec<_> = (0..6).map(|b| k.cyclic_node(0, b * 8192 + 1).unwrap()).collect();
        assert_eq!(nodes, [1, 3, 5, 1, 3, 5]);
        let rotated: Vec<_> = (0..4).map(|b| k.cyclic_node(4, b * 8192).unwrap()).collect();
        assert_eq!(rotated, [3, 5, 1, 3]);
    }
}
