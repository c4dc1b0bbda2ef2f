//! Arenas: the chunks that share one placement key, the spans of those
//! chunks that no thread owns, and the operations that need the arena lock
//! (taking and giving back spans, frees into unowned spans, medium blocks,
//! keeping and retaining empty chunks). An arena owns its chunks (it is
//! their `owner`) and its lock; it knows nothing of thread caches, which
//! call it.
//!
//! Arenas live in a fixed static table, never freed: registering one writes
//! its key into a free slot under a global lock. A full table (more than
//! [`MAX_ARENAS`] distinct placements in one process) sends further keys to
//! arena 0 and counts a fallback.

use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::chunk::{
    self, ALL_UNITS_FREE, Block, Chunk, ChunkInfo, ChunkList, MEDIUM, OWNED, Span, SpanList, UNIT_SHIFT, UNIT_SIZE,
};
use super::class::{CLASS_CAPACITY, CLASS_SIZE, CLASS_UNITS, NCLASS};
use super::key::{Binding, Key, Kind};
use super::lock::{SpinGuard, SpinLock};
use super::stats::{Account, ArenaStats, Counters};
use crate::sets::NodeSet;
use crate::sys;

/// The most distinct placements one process can have arenas for.
pub(crate) const MAX_ARENAS: usize = 128;
/// Empty chunks an arena keeps as they are, pages and all (16 MiB).
pub(crate) const KEEP_EMPTY: usize = 8;
/// Further empty chunks kept over all arenas (64 MiB); beyond that, empty
/// chunks are unmapped. A retained chunk still empty [`ADVISE_DELAY_MS`]
/// later has its pages advised `MADV_FREE`.
pub(crate) const RETAIN_MAX: usize = 32;
/// How long a retained chunk stays empty before its pages are advised
/// `MADV_FREE` (checked whenever its arena's lock is taken).
pub(crate) const ADVISE_DELAY_MS: u64 = 100;
/// The most chunks one check advises (so one caller's delay is bounded).
const ADVISE_BATCH: usize = 8;
/// Unlocks of an arena between two looks at the clock while a retained
/// chunk awaits advice.
const ADVISE_CHECK_EVERY: u32 = 64;

/// Empty chunks retained (beyond their arena's `KEEP_EMPTY`) over all arenas.
static RETAINED: AtomicUsize = AtomicUsize::new(0);

/// Takes one chunk of the retention budget, if any is left.
fn reserve_retained() -> bool {
    RETAINED.fetch_update(Relaxed, Relaxed, |n| (n < RETAIN_MAX).then_some(n + 1)).is_ok()
}

/// The lock-protected part of an arena.
struct Inner {
    /// Per class, unowned spans with free blocks (or uncarved room).
    partial: [SpanList; NCLASS],
    /// All chunks of the arena, those with free units first.
    chunks: ChunkList,
    n_chunks: usize,
    /// Empty chunks of the arena, retained ones included.
    empty: usize,
    /// Of those, chunks with `retained` set.
    retained: usize,
    /// When (`sys::monotonic_ms`) the oldest retained chunk not yet advised
    /// is due for advice; 0 when there is none.
    advise_at: u64,
    /// Unlocks since the clock was last read for `advise_at`.
    advise_tick: u32,
    unbound: usize,
    next_seq: u64,
    medium_units: usize,
}

// SAFETY: the raw pointers point into chunks that the arena owns; they are
// only followed under the arena lock.
unsafe impl Send for Inner {}

/// One arena; see the module docs.
pub(crate) struct Arena {
    ready: AtomicBool,
    /// Written once, before `ready` is set; read-only after.
    key: UnsafeCell<Key>,
    inner: SpinLock<Inner>,
}

// SAFETY: `key` is written once before `ready` is published with Release
// and only read after `ready` is seen with Acquire; everything else is
// behind the lock.
unsafe impl Sync for Arena {}

impl Arena {
    /// An unused slot (a `const` so the static table can repeat it; each
    /// use is a fresh value).
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Arena = Arena {
        ready: AtomicBool::new(false),
        key: UnsafeCell::new(Key { kind: Kind::FirstTouch, nodes: NodeSet::new(), block: 0, node: 0 }),
        inner: SpinLock::new(Inner {
            partial: [const { SpanList::new() }; NCLASS],
            chunks: ChunkList::new(),
            n_chunks: 0,
            empty: 0,
            retained: 0,
            advise_at: 0,
            advise_tick: 0,
            unbound: 0,
            next_seq: 0,
            medium_units: 0,
        }),
    };

    /// The arena's key.
    pub(crate) fn key(&self) -> &Key {
        // SAFETY: only ready arenas are handed out, and their key is immutable.
        unsafe { &*self.key.get() }
    }
}

static ARENAS: [Arena; MAX_ARENAS] = [const { Arena::EMPTY }; MAX_ARENAS];
static COUNT: AtomicUsize = AtomicUsize::new(0);
static REGISTER: SpinLock<()> = SpinLock::new(());

fn ready_arenas() -> impl Iterator<Item = &'static Arena> {
    let n = COUNT.load(Ordering::Acquire).min(MAX_ARENAS);
    ARENAS[..n].iter().filter(|a| a.ready.load(Ordering::Acquire))
}

/// Takes the registration lock and every arena's lock for a `fork` (see
/// `fork.rs`). With the registration lock held no arena can be added, so
/// [`unlock_after_fork`] releases exactly these.
pub(crate) fn lock_for_fork() {
    REGISTER.lock_held();
    for a in ready_arenas() {
        a.inner.lock_held();
    }
}

/// Releases what [`lock_for_fork`] took.
///
/// # Safety
///
/// The calling thread took them with [`lock_for_fork`] (in a child: the
/// thread that forked did) and has not released them since.
pub(crate) unsafe fn unlock_after_fork() {
    for a in ready_arenas() {
        // SAFETY: per the contract; taken by `lock_for_fork`, no guard.
        unsafe { a.inner.unlock_held() };
    }
    // SAFETY: as above.
    unsafe { REGISTER.unlock_held() };
}

/// The arena for `key`, registered on first use. Never allocates.
pub(crate) fn arena_for(key: &Key, stats: &Counters) -> &'static Arena {
    if let Some(a) = ready_arenas().find(|a| a.key() == key) {
        return a;
    }
    let _g = REGISTER.lock();
    if let Some(a) = ready_arenas().find(|a| a.key() == key) {
        return a;
    }
    let n = COUNT.load(Ordering::Relaxed);
    if n >= MAX_ARENAS {
        stats.fallbacks.fetch_add(1, Ordering::Relaxed);
        return &ARENAS[0];
    }
    let a = &ARENAS[n];
    // SAFETY: slot `n` is not ready and only the holder of REGISTER writes
    // a slot's key; readers look at it only after `ready`.
    unsafe { *a.key.get() = *key };
    a.ready.store(true, Ordering::Release);
    COUNT.store(n + 1, Ordering::Release);
    a
}

/// The arena of a chunk.
///
/// # Safety
///
/// `c` must be a live chunk.
unsafe fn arena_of(c: *const Chunk) -> &'static Arena {
    // SAFETY: every chunk's `owner` is the `&'static Arena` that mapped it
    // (`new_span`), and the header field is read-only after mapping.
    unsafe { &*(*c).owner.cast::<Arena>() }
}

/// The arena a live small or medium block belongs to.
///
/// # Safety
///
/// `p` is a block of this allocator's chunks that is out (not freed).
pub(crate) unsafe fn arena_of_block(p: *const u8) -> &'static Arena {
    // SAFETY: a block that is out keeps its chunk live.
    unsafe { arena_of(chunk::chunk_of(p)) }
}

/// Takes a span of class `c` for the calling thread (which owns it from now
/// on) and the span's free list. A span with no free list has uncarved
/// room. `None` when the kernel has no memory.
pub(crate) fn acquire(arena: &'static Arena, c: usize, stats: &Counters) -> Option<(NonNull<Span>, *mut Block)> {
    let mut g = arena.inner.lock();
    let s = g.partial[c].first();
    if let Some(s) = NonNull::new(s) {
        let sp = s.as_ptr();
        // SAFETY: spans on the partial list are unowned and live; the lock
        // gives us their fields. Marking OWNED makes them ours.
        let list = unsafe {
            g.partial[c].unlink(sp);
            (*sp).in_partial = false;
            let list = (*sp).local;
            (*sp).used.store((*sp).used.load(Relaxed) + (*sp).local_count, Relaxed);
            (*sp).local = ptr::null_mut();
            (*sp).local_count = 0;
            (*sp).thread_free.store(OWNED, Ordering::Relaxed);
            list
        };
        unlock(arena, g);
        return Some((s, list));
    }
    let (s, _, g) = new_span(arena, g, CLASS_UNITS[c] as usize, c as u8, stats)?;
    unlock(arena, g);
    Some((s, ptr::null_mut()))
}

/// Carves a span of `units` units (class `class`, or [`MEDIUM`]) from a
/// chunk with room, mapping a new chunk if none has. Returns the span and
/// whether its units were never handed out before (so still zero), with the
/// lock still held.
fn new_span(
    arena: &'static Arena,
    mut g: SpinGuard<'static, Inner>,
    units: usize,
    class: u8,
    stats: &Counters,
) -> Option<(NonNull<Span>, bool, SpinGuard<'static, Inner>)> {
    loop {
        let mut c = g.chunks.first();
        while !c.is_null() {
            // SAFETY: chunks on the list are live chunks of this arena and
            // the lock (`g`) guards their unit bitmaps; `init_span` gets units
            // `find_units` found free.
            unsafe {
                if let Some(first) = chunk::find_units((*c).free_units, units) {
                    let (s, clean) = init_span(&mut g, c, first, units, class);
                    return Some((s, clean, g));
                }
                c = (*c).next;
            }
        }
        // No room: map a chunk without holding the lock (mmap and mbind are
        // slow), then link it.
        let seq = g.next_seq;
        g.next_seq += 1;
        drop(g);
        let key = *arena.key();
        let owner: *const Arena = arena;
        let Some(new) = chunk::map(owner.cast(), &key, seq) else {
            stats.out_of_memory.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let newp = new.as_ptr();
        // SAFETY: the chunk was just mapped and its header written.
        let binding = unsafe { (*newp).binding };
        stats.binding(binding);
        stats.account(Account::Chunk, &key, binding, seq, chunk::CHUNK_SIZE, true);
        stats.chunks_mapped.fetch_add(1, Ordering::Relaxed);
        g = arena.inner.lock();
        g.n_chunks += 1;
        g.empty += 1;
        if binding == Binding::Unbound {
            g.unbound += 1;
        }
        // SAFETY: the new chunk is ours and on no list; the lock guards the list.
        unsafe { g.chunks.push_front(newp) };
    }
}

/// # Safety
///
/// Lock held (through `g`); `c` a live chunk of this arena with units
/// `first..first + units` free.
unsafe fn init_span(g: &mut Inner, c: *mut Chunk, first: usize, units: usize, class: u8) -> (NonNull<Span>, bool) {
    let mask = chunk::unit_mask(first, units);
    // SAFETY: per the contract; the span descriptor at index `first` is not
    // in use (its units are free), so no one else reads or writes it.
    unsafe {
        if (*c).free_units == ALL_UNITS_FREE {
            g.empty -= 1;
            if (*c).retained {
                (*c).retained = false;
                (*c).advised = false;
                g.retained -= 1;
                RETAINED.fetch_sub(1, Relaxed);
            }
        }
        (*c).free_units &= !mask;
        let clean = (*c).dirty_units & mask == 0;
        (*c).dirty_units |= mask;
        for u in first..first + units {
            (*c).span_of_unit[u] = first as u8;
        }
        let s = ptr::addr_of_mut!((*c).spans[first]);
        let medium = class == MEDIUM;
        (*s).local = ptr::null_mut();
        (*s).next = ptr::null_mut();
        (*s).prev = ptr::null_mut();
        (*s).start = c.cast::<u8>().add(first << UNIT_SHIFT);
        (*s).local_count = 0;
        (*s).carved = if medium { 1 } else { 0 };
        (*s).used.store(if medium { 1 } else { 0 }, Relaxed);
        (*s).capacity = if medium { 1 } else { CLASS_CAPACITY[class as usize] };
        (*s).block_size = if medium { (units * UNIT_SIZE) as u32 } else { CLASS_SIZE[class as usize] };
        (*s).class = class;
        (*s).units = units as u8;
        (*s).in_partial = false;
        (*s).thread_free.store(if medium { 0 } else { OWNED }, Ordering::Relaxed);
        (NonNull::new_unchecked(s), clean)
    }
}

/// Gives back a span the calling thread owned, with the free blocks of its
/// cache (`head..=tail`, `count` blocks; `head` null when none).
///
/// # Safety
///
/// The caller owns `span` (its `thread_free` has `OWNED`) and stops using it
/// and the listed blocks.
pub(crate) unsafe fn release(span: *mut Span, head: *mut Block, tail: *mut Block, count: u32, stats: &Counters) {
    // SAFETY: the span is live while owned; its chunk's arena is static.
    let arena = unsafe { arena_of(chunk::chunk_of(span.cast())) };
    let mut g = arena.inner.lock();
    // SAFETY: we own the span until the swap below; after it the span is
    // unowned and the lock we hold guards its fields.
    let dead = unsafe {
        let pending = ((*span).thread_free.swap(0, Ordering::Acquire) & !OWNED) as *mut Block;
        let mut n = 0u32;
        if !pending.is_null() {
            let mut t = pending;
            n = 1;
            while !(*t).next.is_null() {
                t = (*t).next;
                n += 1;
            }
            (*t).next = (*span).local;
            (*span).local = pending;
        }
        if !head.is_null() {
            (*tail).next = (*span).local;
            (*span).local = head;
        }
        (*span).local_count += n + count;
        (*span).used.store((*span).used.load(Relaxed) - (n + count), Relaxed);
        settle(&mut g, span)
    };
    unlock(arena, g);
    if let Some(c) = dead {
        // SAFETY: `settle` unlinked the empty chunk; no span of it is in use.
        unsafe { unmap_chunk(c, stats) };
    }
}

/// Returns `count` blocks (`head..=tail`) to a span no thread owns.
/// Returns `false`, doing nothing, if some thread owns the span now (the
/// caller then pushes onto its `thread_free`).
///
/// # Safety
///
/// The blocks belong to `span` and are out (counted in `used`); the caller
/// gives them up if this returns `true`.
pub(crate) unsafe fn return_blocks(
    span: *mut Span,
    head: *mut Block,
    tail: *mut Block,
    count: u32,
    stats: &Counters,
) -> bool {
    // SAFETY: the span is live while it has blocks out.
    let arena = unsafe { arena_of(chunk::chunk_of(span.cast())) };
    let mut g = arena.inner.lock();
    // SAFETY: ownership changes only under this lock, so an unowned span
    // stays unowned while we hold it, and its fields are ours.
    let dead = unsafe {
        if (*span).thread_free.load(Ordering::Relaxed) & OWNED != 0 {
            return false;
        }
        (*tail).next = (*span).local;
        (*span).local = head;
        (*span).local_count += count;
        (*span).used.store((*span).used.load(Relaxed) - count, Relaxed);
        settle(&mut g, span)
    };
    unlock(arena, g);
    if let Some(c) = dead {
        // SAFETY: unlinked by `settle`, nothing in use.
        unsafe { unmap_chunk(c, stats) };
    }
    true
}

/// Puts an unowned span where it belongs after blocks came back: freed if
/// nothing is out, on the partial list if it has room. Returns a chunk to
/// unmap (already unlinked) when freeing the span emptied one the arena
/// does not keep.
///
/// # Safety
///
/// Lock held; `span` unowned and live.
unsafe fn settle(g: &mut Inner, span: *mut Span) -> Option<*mut Chunk> {
    // SAFETY: per the contract.
    unsafe {
        let c = (*span).class as usize;
        if (*span).used.load(Relaxed) == 0 {
            if (*span).in_partial {
                g.partial[c].unlink(span);
                (*span).in_partial = false;
            }
            return free_span(g, span);
        }
        if !(*span).in_partial && ((*span).local_count > 0 || (*span).carved < (*span).capacity) {
            g.partial[c].push_front(span);
            (*span).in_partial = true;
        }
        None
    }
}

/// Gives a span's units back to its chunk. When that empties the chunk,
/// the arena keeps it hot if it has fewer than [`KEEP_EMPTY`] hot empty
/// chunks, else retains it (last in the list, due for advice after
/// [`ADVISE_DELAY_MS`]) if the process-wide budget has room, else unlinks
/// and uncounts it and returns it for the caller to unmap.
///
/// # Safety
///
/// Lock held; span unowned, not on a list, nothing out.
unsafe fn free_span(g: &mut Inner, span: *mut Span) -> Option<*mut Chunk> {
    // SAFETY: per the contract; the chunk is live.
    unsafe {
        let c = chunk::chunk_of(span.cast());
        let first = ((*span).start as usize - c as usize) >> UNIT_SHIFT;
        let units = (*span).units as usize;
        (*c).free_units |= chunk::unit_mask(first, units);
        (*span).units = 0;
        // Chunks with room go first in the list.
        if g.chunks.first() != c {
            g.chunks.unlink(c);
            g.chunks.push_front(c);
        }
        if (*c).free_units != ALL_UNITS_FREE {
            return None;
        }
        if g.empty - g.retained < KEEP_EMPTY {
            g.empty += 1;
            return None;
        }
        g.chunks.unlink(c);
        if reserve_retained() {
            let now = sys::monotonic_ms();
            (*c).retained = true;
            (*c).advised = false;
            (*c).empty_since = now;
            g.chunks.push_back(c);
            g.empty += 1;
            g.retained += 1;
            if g.advise_at == 0 {
                g.advise_at = now.saturating_add(ADVISE_DELAY_MS).max(1);
            }
            return None;
        }
        forget_chunk(g, c);
        Some(c)
    }
}

/// Stops counting an unlinked chunk as the arena's.
///
/// # Safety
///
/// Lock held; `c` live, unlinked, about to be unmapped.
unsafe fn forget_chunk(g: &mut Inner, c: *mut Chunk) {
    g.n_chunks -= 1;
    // SAFETY: per the contract, the header is readable.
    if unsafe { (*c).binding } == Binding::Unbound {
        g.unbound -= 1;
    }
}

/// Releases the arena lock, first taking out the retained chunks that have
/// been empty for [`ADVISE_DELAY_MS`] (at most [`ADVISE_BATCH`]) when some
/// are due: they are advised `MADV_FREE` without the lock (unlinked, so no
/// thread can take units from them meanwhile) and linked back, last.
/// Reads the clock only while some retained chunk awaits advice, and then
/// once per [`ADVISE_CHECK_EVERY`] unlocks.
fn unlock(arena: &'static Arena, mut g: SpinGuard<'static, Inner>) {
    if g.advise_at == 0 {
        return;
    }
    g.advise_tick += 1;
    if g.advise_tick < ADVISE_CHECK_EVERY {
        return;
    }
    g.advise_tick = 0;
    let now = sys::monotonic_ms();
    if now < g.advise_at {
        return;
    }
    let mut due = [ptr::null_mut::<Chunk>(); ADVISE_BATCH];
    let mut n = 0;
    let mut next = 0u64;
    let mut c = g.chunks.first();
    while !c.is_null() {
        // SAFETY: chunks on the list are live; the lock guards the list and
        // the `retained`/`advised`/`empty_since` fields.
        unsafe {
            let after = (*c).next;
            if (*c).retained && !(*c).advised {
                let at = (*c).empty_since.saturating_add(ADVISE_DELAY_MS);
                if at <= now && n < ADVISE_BATCH {
                    g.chunks.unlink(c);
                    due[n] = c;
                    n += 1;
                } else {
                    // Still waiting, or left for the next check.
                    let at = at.max(now).max(1);
                    next = if next == 0 { at } else { next.min(at) };
                }
            }
            c = after;
        }
    }
    g.advise_at = next;
    drop(g);
    for &c in &due[..n] {
        // SAFETY: `c` is a retained chunk: every unit is free, and unlinked
        // it cannot be reached by any other thread until linked back below.
        // A refused advice leaves the pages in place (still bounded by the
        // retention budget).
        let _ = unsafe { chunk::advise_free(c) };
    }
    if n > 0 {
        let mut g = arena.inner.lock();
        for &c in &due[..n] {
            // SAFETY: our unlinked chunks; the lock guards the list.
            unsafe {
                (*c).advised = true;
                g.chunks.push_back(c);
            }
        }
    }
}

/// Unmaps a chunk `free_span` unlinked and uncounted.
///
/// # Safety
///
/// `c` is empty, unlinked, and no other thread can reach it.
unsafe fn unmap_chunk(c: *mut Chunk, stats: &Counters) {
    // SAFETY: per the contract; the header is read before unmapping.
    unsafe {
        stats.account(Account::Chunk, &(*c).key, (*c).binding, (*c).seq, chunk::CHUNK_SIZE, false);
        stats.chunks_unmapped.fetch_add(1, Ordering::Relaxed);
        chunk::unmap(c);
    }
}

/// A medium block of `units` units from `arena`, and whether it is known
/// to be zero. `None` when the kernel has no memory.
pub(crate) fn alloc_medium(arena: &'static Arena, units: usize, stats: &Counters) -> Option<(NonNull<u8>, bool)> {
    let g = arena.inner.lock();
    let (s, clean, mut g) = new_span(arena, g, units, MEDIUM, stats)?;
    g.medium_units += units;
    unlock(arena, g);
    // SAFETY: `s` was just initialised and is ours.
    let start = unsafe { (*s.as_ptr()).start };
    NonNull::new(start).map(|p| (p, clean))
}

/// Frees a medium block.
///
/// # Safety
///
/// `p` must be a live medium block from [`alloc_medium`].
pub(crate) unsafe fn free_medium(p: *mut u8, stats: &Counters) {
    // SAFETY: the block is live, so its chunk and span are.
    unsafe {
        let span = chunk::span_of(p);
        let arena = arena_of(chunk::chunk_of(p));
        let mut g = arena.inner.lock();
        g.medium_units -= (*span).units as usize;
        (*span).used.store(0, Relaxed);
        let dead = free_span(&mut g, span);
        unlock(arena, g);
        if let Some(c) = dead {
            unmap_chunk(c, stats);
        }
    }
}

/// Looks `p` up in every arena's chunk list.
pub(crate) fn find_chunk(p: *const u8) -> Option<ChunkInfo> {
    let want = chunk::chunk_of(p);
    for a in ready_arenas() {
        let g = a.inner.lock();
        let mut c = g.chunks.first();
        while !c.is_null() {
            if c == want {
                // SAFETY: a live chunk of this arena, lock held.
                return Some(unsafe { ChunkInfo::of(c) });
            }
            // SAFETY: live list member.
            c = unsafe { (*c).next };
        }
    }
    None
}

/// Retained chunks of `arena`, and how many of them are advised.
#[cfg(test)]
pub(crate) fn retained_and_advised(arena: &Arena) -> (usize, usize) {
    let g = arena.inner.lock();
    let mut advised = 0;
    let mut c = g.chunks.first();
    while !c.is_null() {
        // SAFETY: live chunks of the arena, lock held.
        unsafe {
            if (*c).retained && (*c).advised {
                advised += 1;
            }
            c = (*c).next;
        }
    }
    (g.retained, advised)
}

/// Per-arena figures (walks every chunk; allocates the result).
pub(crate) fn arena_stats() -> Vec<ArenaStats> {
    let mut out = Vec::new();
    for a in ready_arenas() {
        let (chunks, empty, retained, unbound, medium_units, small_out) = {
            let g = a.inner.lock();
            let mut small = 0usize;
            let mut c = g.chunks.first();
            while !c.is_null() {
                // SAFETY: live chunks of the arena, lock held.
                unsafe {
                    small += chunk::small_blocks_out(c);
                    c = (*c).next;
                }
            }
            (g.n_chunks, g.empty, g.retained, g.unbound, g.medium_units, small)
        };
        let key = a.key();
        out.push(ArenaStats {
            policy: key.policy(),
            home: key.home(),
            chunks,
            empty_chunks: empty,
            retained_chunks: retained,
            unbound_chunks: unbound,
            small_blocks_out: small_out,
            medium_units,
        });
    }
    out
}
