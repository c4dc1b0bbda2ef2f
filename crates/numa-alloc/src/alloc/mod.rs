#![doc = include_str!("README.md")]

// The layers, lowest first; each module imports only from the rows above
// its own, and this file (the `GlobalAlloc` and the public API) from all:
//
//   lock            the spin lock
//   key             placement keys, the default policy, the mbind calls
//   chunk           mappings, span bitmaps, chunk and span lists (no arenas)
//   class           size classes and the route of a layout
//   stats           the counters (one value, `STATS`, passed down from here)
//   arena           arenas: they own chunks and the lock
//   large, remote   large blocks and their cache; remote-free batches
//   fork            the fork handlers, which take every lock below
//   heap            the per-thread cache
mod arena;
mod chunk;
mod class;
mod fork;
mod heap;
mod key;
mod large;
mod lock;
mod remote;
mod stats;

use core::alloc::{GlobalAlloc, Layout};
use core::ptr;
use core::sync::atomic::{AtomicU8, Ordering};

pub use chunk::{CHUNK_SIZE, ChunkInfo};
pub use key::Binding;
pub use stats::{AllocStats, ArenaStats, NodeStats};

use chunk::page_size;
use class::Route;
use stats::Counters;

use crate::error::Result;
use crate::policy::Policy;
use crate::topology::Topology;

/// The largest block served from size classes (bigger ones take whole
/// 64 KiB units of a chunk, or above [`MEDIUM_MAX`] their own mapping).
pub const SMALL_MAX: usize = class::SMALL_MAX;
/// The largest block served from a chunk's units; larger blocks are mapped
/// on their own.
pub const MEDIUM_MAX: usize = class::MEDIUM_MAX;
/// Memory a bind or cyclic mapping's node must have available beyond the
/// mapping for the allocator to bind it; below that it prefers the node
/// instead ([`Binding::NodeFull`]): see the crate docs' "When a node is full or not allowed".
pub const ROOM_MARGIN: u64 = key::ROOM_MARGIN;
/// Empty chunks each arena keeps as they are (pages mapped and faulted in)
/// for its next spans and medium blocks.
pub const HOT_EMPTY_CHUNKS: usize = arena::KEEP_EMPTY;
/// Empty chunks kept beyond those, over all arenas, with their pages
/// advised `MADV_FREE` (the kernel takes them back when it needs memory;
/// until then reusing them costs no page fault). Further empty chunks are
/// unmapped.
pub const RETAINED_CHUNKS_MAX: usize = arena::RETAIN_MAX;

/// A global allocator whose pages follow the calling thread's NUMA policy.
///
/// Install it with `#[global_allocator]`; set policies with
/// [`set_thread_policy`], [`with_policy`] and [`set_default_policy`]. The
/// module documentation explains where a block's pages go and what a
/// policy switch costs.
///
/// All instances share one process-wide state (arenas, thread caches,
/// statistics), so calling the [`GlobalAlloc`] methods on a `NumaAlloc`
/// that is not the global allocator works too, as the tests do.
///
/// # Examples
///
/// ```standalone_crate
/// use skelaff_numa_alloc::alloc::NumaAlloc;
///
/// #[global_allocator]
/// static GLOBAL: NumaAlloc = NumaAlloc::new();
///
/// let v: Vec<u64> = (0..1000).collect();
/// assert_eq!(v.iter().sum::<u64>(), 999 * 1000 / 2);
/// assert!(NumaAlloc::is_global());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NumaAlloc {
    _private: (),
}

impl NumaAlloc {
    /// The allocator (a unit value; `const` so it can be a `static`).
    pub const fn new() -> Self {
        Self { _private: () }
    }

    /// Whether `NumaAlloc` is this process's global allocator: allocates a
    /// small `Box` through the global allocator and checks whether it came
    /// from one of this allocator's chunks.
    ///
    /// # Examples
    ///
    /// ```
    /// // Doctests use the system allocator.
    /// assert!(!skelaff_numa_alloc::alloc::NumaAlloc::is_global());
    /// ```
    pub fn is_global() -> bool {
        // A process's global allocator is fixed when it is linked, so the
        // answer, found once by allocating a block and asking whether it
        // is ours, holds for the rest of the process. 0: not asked yet.
        static ANSWER: AtomicU8 = AtomicU8::new(0);
        match ANSWER.load(Ordering::Relaxed) {
            1 => false,
            2 => true,
            _ => {
                let b = std::hint::black_box(Box::new(0u64));
                let ours = owns(&*b as *const u64 as *const u8);
                ANSWER.store(if ours { 2 } else { 1 }, Ordering::Relaxed);
                ours
            }
        }
    }
}

/// The allocator's counters, passed down to every layer that counts.
static STATS: Counters = Counters::new();

fn alloc_medium(units: usize, size: usize, zero: bool) -> *mut u8 {
    match heap::alloc_medium(units, &STATS) {
        Some((p, clean)) => {
            if zero && !clean {
                // SAFETY: the block is ours and at least `size` bytes long.
                unsafe { ptr::write_bytes(p.as_ptr(), 0, size) };
            }
            p.as_ptr()
        }
        None => ptr::null_mut(),
    }
}

/// A large block under the calling thread's placement.
fn alloc_large(size: usize, align: usize, zero: bool) -> *mut u8 {
    let (arena, key) = heap::current_placement(&STATS);
    large::alloc(size, align, zero, arena, &key, &STATS)
}

// SAFETY: every method returns either null or a block of at least
// `layout.size()` bytes aligned to `layout.align()` that no other live
// allocation overlaps (small blocks come from size classes whose every
// block is aligned to the request's alignment, medium blocks are 64 KiB
// aligned runs of units, large blocks are their own mappings aligned as
// asked); `dealloc` and `realloc` recompute the path from the layout the
// caller must pass unchanged. Nothing here allocates through the global
// allocator or panics.
unsafe impl GlobalAlloc for NumaAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match class::route(layout.size(), layout.align()) {
            Route::Small(c) => heap::alloc_small(c, &STATS),
            Route::Medium(units) => alloc_medium(units, layout.size(), false),
            Route::Large => alloc_large(layout.size(), layout.align(), false),
        }
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if p.is_null() {
            return;
        }
        match class::route(layout.size(), layout.align()) {
            // SAFETY: the caller passes a live block with the layout it was
            // allocated with, so the route is the one it came from.
            Route::Small(c) => unsafe { heap::free_small(p, c, &STATS) },
            // SAFETY: as above.
            Route::Medium(_) => unsafe { heap::free_medium(p, &STATS) },
            // SAFETY: as above.
            Route::Large => unsafe { large::free(p, &STATS) },
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match class::route(layout.size(), layout.align()) {
            Route::Small(c) => {
                let p = heap::alloc_small(c, &STATS);
                if !p.is_null() {
                    // SAFETY: the block holds at least `layout.size()` bytes.
                    unsafe { ptr::write_bytes(p, 0, layout.size()) };
                }
                p
            }
            Route::Medium(units) => alloc_medium(units, layout.size(), true),
            // Fresh from mmap (already zero) or from the cache (cleared).
            Route::Large => alloc_large(layout.size(), layout.align(), true),
        }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = class::route(layout.size(), layout.align());
        let new = class::route(new_size, layout.align());
        match (old, new) {
            (Route::Small(a), Route::Small(b)) if a == b => return p,
            (Route::Medium(a), Route::Medium(b)) if a == b => return p,
            (Route::Large, Route::Large) if layout.align() <= page_size() => {
                // SAFETY: `p` is a live large block (its layout routes there);
                // on `Some` it is not used again: `q` is returned at once.
                if let Some(q) = unsafe { large::realloc(p, new_size, &STATS) } {
                    return q;
                }
            }
            _ => {}
        }
        // SAFETY: the alignment comes from a valid `Layout` (a power of two),
        // and the caller guarantees `new_size`, rounded up to it, does not
        // overflow `isize`.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a valid non-zero layout (new_size > 0 per the contract).
        let q = unsafe { self.alloc(new_layout) };
        if !q.is_null() {
            // SAFETY: `p` (live, per the caller) and `q` (just allocated) are
            // distinct blocks, each at least `min(old, new)` bytes, so the
            // copy reads and writes inside them without overlap; `p` was
            // allocated by this allocator with `layout` (caller) and is not
            // used after the `dealloc`.
            unsafe {
                ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                self.dealloc(p, layout);
            }
        }
        q
    }
}

/// Sets the calling thread's policy: blocks it allocates from now on follow
/// `policy` (see the module docs for what that means for small, medium and
/// large blocks). Blocks allocated before stay where they are.
///
/// Cheap: no system call; the thread hands its current spans back to their
/// arenas (a lock each) so that its next small block comes from a chunk of
/// the new policy. Harmless when `NumaAlloc` is not the global allocator.
///
/// # Errors
///
/// The policy is checked against the machine ([`Policy::validate`]):
/// [`Error::NoSuchNode`](crate::Error::NoSuchNode),
/// [`Error::NodeNotAllowed`](crate::Error::NodeNotAllowed),
/// [`Error::EmptyNodeSet`](crate::Error::EmptyNodeSet),
/// [`Error::BadBlockSize`](crate::Error::BadBlockSize); or
/// [`Error::TopologyUnreadable`](crate::Error::TopologyUnreadable) or
/// [`Error::TopologyFormat`](crate::Error::TopologyFormat) if the machine
/// cannot be read (or, with the feature `hwloc`, `Error::Topology`).
/// [`Error::NodeNotAllowed`](crate::Error::NodeNotAllowed) also for a node
/// this process's cpuset no longer allows (asked of the kernel now, not at
/// start-up).
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{alloc, NodeSet, Policy, Topology};
///
/// let node = Topology::get()?.nodes_with_cpus().first().unwrap();
/// alloc::set_thread_policy(Policy::Bind(NodeSet::single(node)))?;
/// assert_eq!(alloc::thread_policy(), Some(Policy::Bind(NodeSet::single(node))));
/// assert!(alloc::set_thread_policy(Policy::Bind(NodeSet::single(1000))).is_err());
/// alloc::clear_thread_policy();
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub fn set_thread_policy(policy: Policy) -> Result<()> {
    validate(&policy)?;
    heap::set_thread_policy(Some(policy), &STATS);
    Ok(())
}

/// Drops the calling thread's own policy: it follows the process default
/// again.
pub fn clear_thread_policy() {
    heap::set_thread_policy(None, &STATS);
}

/// The calling thread's own policy, if it set one.
pub fn thread_policy() -> Option<Policy> {
    heap::thread_policy()
}

/// Runs `f` with the calling thread's policy set to `policy`, then restores
/// the previous one (also when `f` panics).
///
/// # Errors
///
/// As [`set_thread_policy`]; `f` does not run then.
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{alloc, Policy, Topology};
///
/// let all = Topology::get()?.allowed_nodes();
/// let v = alloc::with_policy(Policy::Interleave(all), || vec![0u8; 1 << 20])?;
/// assert_eq!(v.len(), 1 << 20);
/// assert_eq!(alloc::thread_policy(), None);
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub fn with_policy<R>(policy: Policy, f: impl FnOnce() -> R) -> Result<R> {
    struct Restore(Option<Policy>);
    impl Drop for Restore {
        fn drop(&mut self) {
            heap::set_thread_policy(self.0, &STATS);
        }
    }
    let previous = thread_policy();
    set_thread_policy(policy)?;
    let _restore = Restore(previous);
    Ok(f())
}

/// Sets the process-wide default policy, followed by threads that set none.
/// Each such thread adopts it at its next refill: at the latest when the
/// span it allocates a size class from runs out, and at once for medium and
/// large blocks.
///
/// # Errors
///
/// As [`set_thread_policy`].
///
/// # Examples
///
/// ```
/// use skelaff_numa_alloc::{alloc, Policy, Topology};
///
/// let all = Topology::get()?.allowed_nodes();
/// alloc::set_default_policy(Policy::Interleave(all))?;
/// assert_eq!(alloc::default_policy(), Policy::Interleave(all));
/// alloc::set_default_policy(Policy::FirstTouch)?;
/// # Ok::<(), skelaff_numa_alloc::Error>(())
/// ```
pub fn set_default_policy(policy: Policy) -> Result<()> {
    validate(&policy)?;
    fork::register();
    key::set_default_policy(policy);
    Ok(())
}

/// The process-wide default policy (first-touch until set).
pub fn default_policy() -> Policy {
    fork::register();
    key::default_policy()
}

/// The policy the calling thread's next new chunk or large block follows
/// (its own, else the default; single-node interleave and cyclic read as
/// bind), and for first-touch and local the node it is meant for.
pub fn effective_policy() -> (Policy, Option<usize>) {
    heap::effective(&STATS)
}

/// Hands the calling thread's cached blocks and pending remote frees back
/// to their arenas now rather than at thread exit (for accounting, or
/// before a thread idles for long).
pub fn flush_thread_cache() {
    heap::flush_thread_cache(&STATS);
}

/// A snapshot of the allocator's statistics: bytes and chunks per node,
/// per arena, fallbacks, remote frees. Walks every chunk (a lock per
/// arena); meant for reports, not hot loops.
///
/// # Examples
///
/// ```
/// let s = skelaff_numa_alloc::alloc::stats();
/// assert_eq!(s.fallbacks, 0);
/// ```
pub fn stats() -> AllocStats {
    fork::register();
    STATS.snapshot(arena::arena_stats(), large::cached_bytes(), key::pieces_held())
}

/// The chunk holding `p`, if `p` is inside one of this allocator's chunks
/// (small and medium blocks; large blocks have their own mappings).
pub fn chunk_info(p: *const u8) -> Option<ChunkInfo> {
    fork::register();
    arena::find_chunk(p)
}

/// Whether `p` points into one of this allocator's chunks.
pub fn owns(p: *const u8) -> bool {
    chunk_info(p).is_some()
}

fn validate(policy: &Policy) -> Result<()> {
    policy.validate(Topology::get()?)?;
    // The topology's allowed nodes are those at start-up: ask the kernel
    // about the cpuset as it is now.
    crate::node_memory::check_allowed_now(&policy.nodes())?;
    if matches!(policy, Policy::Cyclic { nodes, .. } if nodes.len() > 1) {
        key::refresh_piece_limit();
    }
    Ok(())
}

#[cfg(test)]
mod tests;
