//! The allocator's counters, and the snapshot [`AllocStats`] that
//! [`stats`](fn@super::stats) returns.
//!
//! One [`Counters`] value, owned by the top of the allocator (`mod.rs`), is
//! passed down to the layers that count (arenas, large blocks, remote
//! frees, thread caches); none of them reaches for a global. Counters are
//! relaxed atomics updated on slow paths only (a chunk mapped, a large
//! block mapped, a batch of remote frees flushed); the fast paths count
//! nothing.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::chunk::page_size;
use super::key::{Binding, Key, Kind};
use crate::policy::{Policy, interleave_node};
use crate::sets::MAX_NODES;

/// Per node: chunk bytes, whole chunks, large-block bytes meant for it.
struct NodeCounters {
    chunk_bytes: AtomicUsize,
    chunks: AtomicUsize,
    large_bytes: AtomicUsize,
}

/// What a mapping is counted as.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Account {
    Chunk,
    Large,
}

/// Everything the allocator counts (see [`AllocStats`] for what each
/// figure means).
pub(crate) struct Counters {
    pub(crate) fallbacks: AtomicU64,
    pub(crate) node_full: AtomicU64,
    pub(crate) cyclic_interleaved: AtomicU64,
    pub(crate) remote_frees: AtomicU64,
    pub(crate) remote_flushes: AtomicU64,
    pub(crate) deferred_frees: AtomicU64,
    pub(crate) chunks_mapped: AtomicU64,
    pub(crate) chunks_unmapped: AtomicU64,
    pub(crate) large_live: AtomicU64,
    pub(crate) large_bytes: AtomicU64,
    pub(crate) unbound_bytes: AtomicU64,
    pub(crate) unplaced_bytes: AtomicU64,
    pub(crate) no_thread_exit_hook: AtomicU64,
    pub(crate) out_of_memory: AtomicU64,
    nodes: [NodeCounters; MAX_NODES],
}

impl Counters {
    pub(crate) const fn new() -> Self {
        Counters {
            fallbacks: AtomicU64::new(0),
            node_full: AtomicU64::new(0),
            cyclic_interleaved: AtomicU64::new(0),
            remote_frees: AtomicU64::new(0),
            remote_flushes: AtomicU64::new(0),
            deferred_frees: AtomicU64::new(0),
            chunks_mapped: AtomicU64::new(0),
            chunks_unmapped: AtomicU64::new(0),
            large_live: AtomicU64::new(0),
            large_bytes: AtomicU64::new(0),
            unbound_bytes: AtomicU64::new(0),
            unplaced_bytes: AtomicU64::new(0),
            no_thread_exit_hook: AtomicU64::new(0),
            out_of_memory: AtomicU64::new(0),
            nodes: [const {
                NodeCounters {
                    chunk_bytes: AtomicUsize::new(0),
                    chunks: AtomicUsize::new(0),
                    large_bytes: AtomicUsize::new(0),
                }
            }; MAX_NODES],
        }
    }

    /// Counts how the kernel took a fresh mapping's binding: a refusal is a
    /// fallback, a cyclic mapping interleaved instead is counted as such.
    pub(crate) fn binding(&self, binding: Binding) {
        let counter = match binding {
            Binding::AsPolicy => return,
            Binding::Interleaved => &self.cyclic_interleaved,
            Binding::Unbound => &self.fallbacks,
            Binding::NodeFull => &self.node_full,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds (`add = true`) or removes the bytes of a mapping to the per-node
    /// counters by intended placement: first-touch and local on the node the
    /// key was made for, bind and preferred to a single node on it, interleave
    /// page by page (page `i` of the mapping on node `i mod n` of the set: the
    /// kernel's dealing, up to where it starts), cyclic block by block. Bytes
    /// whose node the kernel chooses (bind to several nodes, a mapping
    /// preferred instead of bound because its node was full) count as
    /// unplaced; an unbound mapping counts as unbound.
    pub(crate) fn account(&self, what: Account, key: &Key, binding: Binding, rotation: u64, len: usize, add: bool) {
        let upd = |c: &AtomicUsize, v: usize| {
            if add {
                c.fetch_add(v, Ordering::Relaxed);
            } else {
                c.fetch_sub(v, Ordering::Relaxed);
            }
        };
        let upd64 = |c: &AtomicU64, v: usize| {
            if add {
                c.fetch_add(v as u64, Ordering::Relaxed);
            } else {
                c.fetch_sub(v as u64, Ordering::Relaxed);
            }
        };
        let bytes = |n: usize| match what {
            Account::Chunk => &self.nodes[n].chunk_bytes,
            Account::Large => &self.nodes[n].large_bytes,
        };
        let whole_chunk = |n: usize| {
            if what == Account::Chunk {
                upd(&self.nodes[n].chunks, 1);
            }
        };
        if binding == Binding::Unbound {
            upd64(&self.unbound_bytes, len);
            return;
        }
        if binding == Binding::NodeFull {
            upd64(&self.unplaced_bytes, len);
            return;
        }
        let single = match key.kind {
            Kind::FirstTouch | Kind::Local | Kind::Preferred => Some(key.node),
            Kind::Bind if key.nodes.len() == 1 => key.nodes.first(),
            Kind::Bind => None,
            Kind::Interleave | Kind::Cyclic => None,
        };
        if let Some(n) = single.filter(|&n| n < MAX_NODES) {
            upd(bytes(n), len);
            whole_chunk(n);
            return;
        }
        let page = page_size();
        match (key.kind, binding) {
            (Kind::Interleave, _) | (Kind::Cyclic, Binding::Interleaved) => {
                let mut off = 0;
                while off < len {
                    upd(bytes(interleave_node(&key.nodes, off, page)), page.min(len - off));
                    off += page;
                }
            }
            (Kind::Cyclic, _) => {
                let mut off = 0;
                while off < len {
                    let l = key.block.min(len - off);
                    upd(bytes(key.cyclic_node(rotation, off).unwrap_or(0)), l);
                    off += l;
                }
            }
            _ => upd64(&self.unplaced_bytes, len),
        }
    }

    /// The snapshot of these counters, with what the layers above report
    /// themselves: each arena's figures, the bytes the large-block cache
    /// holds, the mapping pieces cyclic bindings hold.
    pub(crate) fn snapshot(
        &self,
        arenas: Vec<ArenaStats>,
        large_cached_bytes: usize,
        cyclic_pieces: usize,
    ) -> AllocStats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let nodes = self
            .nodes
            .iter()
            .enumerate()
            .map(|(node, c)| NodeStats {
                node,
                chunk_bytes: c.chunk_bytes.load(Ordering::Relaxed),
                chunks: c.chunks.load(Ordering::Relaxed),
                large_bytes: c.large_bytes.load(Ordering::Relaxed),
            })
            .filter(|n| n.chunk_bytes != 0 || n.chunks != 0 || n.large_bytes != 0)
            .collect();
        AllocStats {
            nodes,
            arenas,
            chunks_mapped: r(&self.chunks_mapped),
            chunks_unmapped: r(&self.chunks_unmapped),
            large_blocks: r(&self.large_live),
            large_bytes: r(&self.large_bytes),
            large_cached_bytes,
            fallbacks: r(&self.fallbacks),
            node_full: r(&self.node_full),
            cyclic_interleaved: r(&self.cyclic_interleaved),
            cyclic_pieces,
            unbound_bytes: r(&self.unbound_bytes),
            unplaced_bytes: r(&self.unplaced_bytes),
            remote_frees: r(&self.remote_frees),
            remote_flushes: r(&self.remote_flushes),
            deferred_frees: r(&self.deferred_frees),
            uncached_threads: r(&self.no_thread_exit_hook),
            out_of_memory: r(&self.out_of_memory),
        }
    }
}

/// What one NUMA node holds of this allocator's memory, by intended
/// placement (see [`AllocStats`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct NodeStats {
    /// The node.
    pub node: usize,
    /// Bytes of chunks (small and medium blocks) meant for this node.
    pub chunk_bytes: usize,
    /// Chunks all of whose pages are meant for this node.
    pub chunks: usize,
    /// Bytes of large blocks (each its own mapping) meant for this node.
    pub large_bytes: usize,
}

/// One arena: the chunks that share a placement.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ArenaStats {
    /// The policy its chunks follow.
    pub policy: Policy,
    /// For first-touch and local arenas, the node whose threads use it.
    pub home: Option<usize>,
    /// Chunks mapped now.
    pub chunks: usize,
    /// Of those, chunks with nothing allocated (kept for reuse).
    pub empty_chunks: usize,
    /// Of the empty ones, those kept beyond the arena's
    /// [`HOT_EMPTY_CHUNKS`](super::HOT_EMPTY_CHUNKS), their pages given back
    /// to the kernel to take when it needs memory (`MADV_FREE`); at most
    /// [`RETAINED_CHUNKS_MAX`](super::RETAINED_CHUNKS_MAX) over all arenas.
    pub retained_chunks: usize,
    /// Chunks whose binding the kernel refused.
    pub unbound_chunks: usize,
    /// Small blocks handed out and not yet returned to their spans: blocks
    /// in use plus blocks cached by threads or waiting in remote-free batches.
    pub small_blocks_out: usize,
    /// Units (64 KiB) of medium blocks in use or kept by threads for reuse.
    pub medium_units: usize,
}

/// A snapshot of the allocator's counters.
///
/// Node figures are by *intended* placement: what the policy asked the
/// kernel for (first-touch chunks count on the node of the thread that
/// mapped them). Where pages really are is the kernel's answer to
/// `move_pages`, which [`Placement::query`](crate::Placement::query) asks.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct AllocStats {
    /// Per node, nodes with nothing omitted, ascending.
    pub nodes: Vec<NodeStats>,
    /// Per arena, in creation order.
    pub arenas: Vec<ArenaStats>,
    /// Chunks mapped since start.
    pub chunks_mapped: u64,
    /// Chunks returned to the OS since start.
    pub chunks_unmapped: u64,
    /// Large blocks live now.
    pub large_blocks: u64,
    /// Bytes of large blocks live now (including their header page).
    pub large_bytes: u64,
    /// Bytes of freed large blocks kept mapped for reuse.
    pub large_cached_bytes: usize,
    /// Mappings (chunks or large blocks) the kernel refused to bind, left to
    /// its default policy instead.
    pub fallbacks: u64,
    /// Bind and cyclic mappings (chunks or large blocks) whose nodes lacked
    /// the memory when they were mapped, preferred to those nodes instead
    /// of bound: their pages go elsewhere once the nodes are full
    /// ([`Binding::NodeFull`]).
    pub node_full: u64,
    /// Cyclic mappings interleaved instead, to stay within `vm.max_map_count`.
    pub cyclic_interleaved: u64,
    /// Mapping pieces (VMAs) this allocator's cyclic bindings hold now.
    pub cyclic_pieces: usize,
    /// Bytes mapped now that are unbound after a fallback.
    pub unbound_bytes: u64,
    /// Bytes mapped now under bind to several nodes, or preferred instead of
    /// bound because their nodes were full (the kernel picks).
    pub unplaced_bytes: u64,
    /// Small blocks freed by a thread onto a span another thread allocates
    /// from (handed over lock-free, in batches).
    pub remote_frees: u64,
    /// Batches those remote frees travelled in.
    pub remote_flushes: u64,
    /// Small blocks freed onto spans no thread was allocating from (returned
    /// to their arena under its lock, in batches).
    pub deferred_frees: u64,
    /// Threads whose cache could not get an exit hook (`pthread_key_create`
    /// failed) and so run uncached.
    pub uncached_threads: u64,
    /// Requests refused for lack of memory (null returned).
    pub out_of_memory: u64,
}

impl AllocStats {
    /// The entry of `node`, if it holds anything.
    pub fn node(&self, node: usize) -> Option<&NodeStats> {
        self.nodes.iter().find(|n| n.node == node)
    }

    /// Small blocks out over all arenas.
    pub fn small_blocks_out(&self) -> usize {
        self.arenas.iter().map(|a| a.small_blocks_out).sum()
    }

    /// Chunks mapped now over all arenas.
    pub fn chunks(&self) -> usize {
        self.arenas.iter().map(|a| a.chunks).sum()
    }

    /// Empty chunks retained (pages advised `MADV_FREE`) over all arenas.
    pub fn retained_chunks(&self) -> usize {
        self.arenas.iter().map(|a| a.retained_chunks).sum()
    }
}
