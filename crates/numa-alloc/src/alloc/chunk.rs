//! Chunks: 2 MiB-aligned mappings of 32 units of 64 KiB, the spans carved
//! from them, and the lists that link them. This module maps, binds and
//! unmaps chunks and keeps their unit bitmaps; it knows nothing of arenas
//! (a chunk records its owner as an opaque pointer the arena layer gives).
//!
//! ```text
//! chunk (2 MiB, 2 MiB-aligned, bound as its arena's key says)
//! +--------+--------+--------+--------+-- ... --+--------+
//! | unit 0 | unit 1 | unit 2 | unit 3 |         | unit 31|
//! | header | span a | span b (2 units)|         | medium |
//! +--------+--------+--------+--------+-- ... --+--------+
//! ```
//!
//! Unit 0 holds the [`Chunk`] header (only its first page or two are ever
//! touched). Every other unit belongs to at most one span: a small span
//! (blocks of one size class, 1, 2 or 4 units) or a medium block (1 to 8
//! units holding one block). A block's span is found from its address alone:
//! mask to the chunk, shift to the unit, look the span up in the header.
//!
//! # Who may touch what
//!
//! | field | protected by |
//! |---|---|
//! | `Chunk::{magic, arena, seq, key, binding, pieces}` | written once before the chunk is published, read-only after |
//! | `Chunk::{free_units, dirty_units, retained, advised, empty_since, next, prev}`, `span_of_unit` writes | the arena lock |
//! | `Span::thread_free` | atomic; see its state table |
//! | other `Span` fields | the owning thread while `thread_free` has `OWNED`, else the arena lock |
//!
//! `Span::thread_free` states (the word is a block pointer or-ed with one
//! flag bit; blocks are 16-byte aligned, so bit 0 is free):
//!
//! | value | meaning | who changes it |
//! |---|---|---|
//! | `0` | not owned, no pending frees | owner gives up the span (swap under the arena lock) |
//! | `OWNED` | a thread allocates from it; no pending remote frees | a thread takes the span (under the arena lock) |
//! | `p \| OWNED` | owned; `p` heads a chain of blocks other threads freed | other threads push chains (CAS); the owner takes the chain (swap to `OWNED`) |
//!
//! An unowned span never holds a chain: frees into it go under the arena
//! lock straight to its `local` list.

use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use super::key::{self, Binding, Key};
use crate::policy::{Policy, interleave_node};
use crate::sys;

/// log2 of the chunk size.
pub(crate) const CHUNK_SHIFT: usize = 21;
/// Size and alignment of a chunk: 2 MiB.
pub const CHUNK_SIZE: usize = 1 << CHUNK_SHIFT;
pub(crate) const UNIT_SHIFT: usize = 16;
/// A unit: 64 KiB.
pub(crate) const UNIT_SIZE: usize = 1 << UNIT_SHIFT;
/// Units per chunk (unit 0 is the header).
pub(crate) const UNITS: usize = CHUNK_SIZE / UNIT_SIZE;
/// `free_units` of an empty chunk: every unit but the header.
pub(crate) const ALL_UNITS_FREE: u32 = !1;

const MAGIC: usize = 0x5e1a_ff00_c4c4_0001;

static PAGE_SIZE: AtomicUsize = AtomicUsize::new(0);

/// The base page size, read once.
pub(crate) fn page_size() -> usize {
    let p = PAGE_SIZE.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    let p = sys::page_size();
    PAGE_SIZE.store(p, Ordering::Relaxed);
    p
}

/// A free block: its first word links to the next free block.
#[repr(C)]
pub(crate) struct Block {
    pub(crate) next: *mut Block,
}

/// `Span::thread_free` flag: a thread allocates from this span.
pub(crate) const OWNED: usize = 1;
/// `Span::class` of a medium block.
pub(crate) const MEDIUM: u8 = u8::MAX;

/// The descriptor of a span, in its chunk's header.
#[repr(C, align(64))]
pub(crate) struct Span {
    /// Remote-free chain head or-ed with [`OWNED`] (see the module's table).
    pub(crate) thread_free: AtomicUsize,
    /// Free blocks held by the span itself (not by a thread's cache).
    pub(crate) local: *mut Block,
    /// Links in the arena's list of spans with free blocks.
    pub(crate) next: *mut Span,
    pub(crate) prev: *mut Span,
    /// First byte of the span.
    pub(crate) start: *mut u8,
    /// Blocks in `local`.
    pub(crate) local_count: u32,
    /// Blocks out: in use, in a thread's cache, or in a pending chain or
    /// batch. Atomic only so that statistics may read it while its owner
    /// writes; updates are plain loads and stores by whoever holds the span.
    pub(crate) used: AtomicU32,
    /// Blocks carved so far (the rest of the span was never handed out).
    pub(crate) carved: u32,
    /// Blocks the span holds.
    pub(crate) capacity: u32,
    /// Block size in bytes.
    pub(crate) block_size: u32,
    /// Size class, or [`MEDIUM`].
    pub(crate) class: u8,
    /// Units the span covers.
    pub(crate) units: u8,
    /// Whether the span is on its arena's partial list.
    pub(crate) in_partial: bool,
}

/// The header at the start of every chunk.
#[repr(C)]
pub(crate) struct Chunk {
    pub(crate) magic: usize,
    /// Who owns the chunk, as given to [`map`]: the arena layer's pointer
    /// to its arena, opaque here.
    pub(crate) owner: *const (),
    /// The arena's chunk sequence number: cyclic chunks rotate by it.
    pub(crate) seq: u64,
    /// The placement its pages follow.
    pub(crate) key: Key,
    /// How the kernel took the binding.
    pub(crate) binding: Binding,
    /// Mapping pieces (VMAs) its cyclic binding created.
    pub(crate) pieces: u32,
    /// Bit `u` set: unit `u` is free. Bit 0 (the header) is never set.
    pub(crate) free_units: u32,
    /// Bit `u` set: unit `u` was handed out before and may hold old bytes.
    pub(crate) dirty_units: u32,
    /// An empty chunk kept beyond the arena's hot ones, counted against the
    /// process-wide retention budget.
    pub(crate) retained: bool,
    /// A retained chunk whose units were given `MADV_FREE`.
    pub(crate) advised: bool,
    /// When a retained chunk went empty (`sys::monotonic_ms`).
    pub(crate) empty_since: u64,
    /// Links in the arena's chunk list.
    pub(crate) next: *mut Chunk,
    pub(crate) prev: *mut Chunk,
    /// The index in `spans` of the span covering each unit.
    pub(crate) span_of_unit: [u8; UNITS],
    /// Span descriptors, indexed by the span's first unit.
    pub(crate) spans: [Span; UNITS],
}

const _: () = assert!(core::mem::size_of::<Chunk>() <= UNIT_SIZE);

/// The chunk holding `p`, if `p` is inside one (computed, not checked).
#[inline(always)]
pub(crate) fn chunk_of(p: *const u8) -> *mut Chunk {
    ((p as usize) & !(CHUNK_SIZE - 1)) as *mut Chunk
}

/// The span holding block `p`.
///
/// # Safety
///
/// `p` must point into a unit of a live chunk that belongs to a span (a
/// block this allocator handed out and that was not freed).
#[inline(always)]
pub(crate) unsafe fn span_of(p: *const u8) -> *mut Span {
    let chunk = chunk_of(p);
    let unit = ((p as usize) >> UNIT_SHIFT) & (UNITS - 1);
    // SAFETY: the chunk is live (caller); `unit < UNITS`, and the span that
    // covers the unit was recorded before the block was handed out.
    unsafe {
        let idx = (*chunk).span_of_unit[unit] as usize & (UNITS - 1);
        ptr::addr_of_mut!((*chunk).spans[idx])
    }
}

/// Maps a fresh chunk for `owner`, binds it as `key` says (rotated by `seq`
/// for cyclic keys) and writes its header. Returns `None` when the kernel
/// has no memory. Never allocates.
pub(crate) fn map(owner: *const (), key: &Key, seq: u64) -> Option<NonNull<Chunk>> {
    let base = map_aligned(CHUNK_SIZE, CHUNK_SIZE)?;
    let (binding, pieces) = key.bind(base.as_ptr(), CHUNK_SIZE, seq, true);
    let c = base.as_ptr().cast::<Chunk>();
    // SAFETY: `c` is the start of a fresh, writable, CHUNK_SIZE-aligned
    // mapping of CHUNK_SIZE bytes that no one else knows about; the header
    // fits in unit 0. Fresh anonymous memory is zero, which is a valid
    // bit pattern for every field written field by field below and for the
    // span array (null pointers, zero counters, unowned).
    unsafe {
        ptr::addr_of_mut!((*c).magic).write(MAGIC);
        ptr::addr_of_mut!((*c).owner).write(owner);
        ptr::addr_of_mut!((*c).seq).write(seq);
        ptr::addr_of_mut!((*c).key).write(*key);
        ptr::addr_of_mut!((*c).binding).write(binding);
        ptr::addr_of_mut!((*c).pieces).write(pieces);
        ptr::addr_of_mut!((*c).free_units).write(ALL_UNITS_FREE);
        ptr::addr_of_mut!((*c).dirty_units).write(0);
        ptr::addr_of_mut!((*c).retained).write(false);
        ptr::addr_of_mut!((*c).advised).write(false);
        ptr::addr_of_mut!((*c).empty_since).write(0);
        ptr::addr_of_mut!((*c).next).write(ptr::null_mut());
        ptr::addr_of_mut!((*c).prev).write(ptr::null_mut());
    }
    NonNull::new(c)
}

/// Unmaps a chunk.
///
/// # Safety
///
/// The chunk must be unlinked from its arena, hold no span in use, and no
/// thread may touch it again.
pub(crate) unsafe fn unmap(c: *mut Chunk) {
    // SAFETY: the chunk is a CHUNK_SIZE mapping the caller gives up; the
    // header is read before the mapping goes.
    unsafe {
        key::release_pieces((*c).pieces);
        if let Some(p) = NonNull::new(c.cast::<u8>()) {
            let _ = sys::munmap(p, CHUNK_SIZE);
        }
    }
}

/// Lets the kernel take back the pages of a chunk's units (not its header)
/// when it needs memory, keeping the mapping: `MADV_FREE`. A bind or cyclic
/// chunk's units are preferred to its nodes from then on instead of bound
/// ([`Key::soften`]).
/// Until the kernel does, the pages stay mapped and reusing them costs no
/// page fault; once it has, they read as zero and fault in again under the
/// chunk's policy. Returns whether the kernel took the advice.
///
/// # Safety
///
/// Every unit of the chunk must be free (no block in use, in a cache or in
/// a pending chain), and no thread may write to them until this returns.
pub(crate) unsafe fn advise_free(c: *mut Chunk) -> bool {
    let units = c.cast::<u8>().wrapping_add(UNIT_SIZE);
    // SAFETY: the units are part of the chunk's mapping (ours); per the
    // contract nothing in them is needed or touched meanwhile. The header
    // (unit 0), which stays in use, is not advised.
    let advised = unsafe { sys::madvise(units, CHUNK_SIZE - UNIT_SIZE, sys::MADV_FREE).is_ok() };
    // SAFETY: the header is readable (the chunk is live, per the contract).
    let (key, seq, binding) = unsafe { ((*c).key, (*c).seq, (*c).binding) };
    if advised && binding == Binding::AsPolicy {
        // Pages the kernel takes back fault in again when the chunk is
        // reused, perhaps with its node full: prefer it from now on rather
        // than bind (a fault on a full bound node calls the OOM killer).
        key.soften(c.cast::<u8>(), UNIT_SIZE, CHUNK_SIZE, seq);
    }
    advised
}

/// Whether `c` looks like a chunk header (used only on chunks found in an
/// arena's list, as a consistency check).
///
/// # Safety
///
/// `c` must point to readable memory of at least a `Chunk`.
unsafe fn is_chunk(c: *const Chunk) -> bool {
    // SAFETY: readable per the caller.
    unsafe { (*c).magic == MAGIC }
}

/// Maps `len` bytes aligned to `align` (a power of two at least the page
/// size): tries a plain mapping first (the kernel often aligns large ones),
/// else maps `len + align` and trims both ends.
pub(crate) fn map_aligned(len: usize, align: usize) -> Option<NonNull<u8>> {
    let p = sys::mmap_anonymous(len, 0).ok()?;
    if (p.as_ptr() as usize) & (align - 1) == 0 {
        return Some(p);
    }
    // SAFETY: `p` is the mapping of `len` bytes just made.
    let _ = unsafe { sys::munmap(p, len) };
    let total = len.checked_add(align)?;
    let p = sys::mmap_anonymous(total, 0).ok()?;
    let start = p.as_ptr() as usize;
    let aligned = (start + align - 1) & !(align - 1);
    let head = aligned - start;
    let tail = total - head - len;
    // SAFETY: the head `[start, aligned)` and tail `[aligned + len, start +
    // total)` are parts of the mapping just made, which nothing else uses.
    unsafe {
        if head > 0 {
            let _ = sys::munmap(p, head);
        }
        if tail > 0 {
            if let Some(t) = NonNull::new((aligned + len) as *mut u8) {
                let _ = sys::munmap(t, tail);
            }
        }
    }
    NonNull::new(aligned as *mut u8)
}

/// Finds `n` consecutive free units in `free` (bit set = free); returns the
/// first unit. Runs of several units start at a multiple of their size when
/// `n` is a power of two, which keeps small spans from splintering the chunk.
pub(crate) fn find_units(free: u32, n: usize) -> Option<usize> {
    if n == 0 || n >= UNITS {
        return None;
    }
    let run = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
    let step = if n.is_power_of_two() { n } else { 1 };
    let mut u = step.max(1);
    while u + n <= UNITS {
        let mask = run << u;
        if free & mask == mask {
            return Some(u);
        }
        u += step;
    }
    None
}

/// The unit mask of `n` units from `first`.
pub(crate) fn unit_mask(first: usize, n: usize) -> u32 {
    (((1u64 << n) - 1) << first) as u32
}

/// The blocks handed out of a chunk's small spans and not yet returned to
/// them (in use, cached by threads, or in remote-free batches).
///
/// # Safety
///
/// `c` is a live chunk and the caller holds what guards its unit bitmap
/// (its arena's lock).
pub(crate) unsafe fn small_blocks_out(c: *const Chunk) -> usize {
    let mut out = 0;
    let mut u = 1;
    while u < UNITS {
        // SAFETY: per the contract; only the descriptors of spans that
        // units map to are read (those of free units are skipped).
        unsafe {
            if (*c).free_units & (1 << u) != 0 {
                u += 1;
                continue;
            }
            let s = ptr::addr_of!((*c).spans[u]);
            if (*s).class != MEDIUM {
                out += (*s).used.load(Ordering::Relaxed) as usize;
            }
            u += ((*s).units as usize).max(1);
        }
    }
    out
}

/// A member of an intrusive doubly linked [`List`]: its links are two of
/// its own fields.
///
/// # Safety
///
/// For a live `this`, `next` and `prev` return pointers to two distinct
/// fields of `*this` (and nothing else).
pub(crate) unsafe trait Linked: Sized {
    /// The link to the next member.
    fn next(this: *mut Self) -> *mut *mut Self;
    /// The link to the previous member.
    fn prev(this: *mut Self) -> *mut *mut Self;
}

// SAFETY: `next` and `prev` are distinct fields of the header.
unsafe impl Linked for Chunk {
    fn next(this: *mut Self) -> *mut *mut Self {
        this.wrapping_byte_add(core::mem::offset_of!(Chunk, next)).cast()
    }
    fn prev(this: *mut Self) -> *mut *mut Self {
        this.wrapping_byte_add(core::mem::offset_of!(Chunk, prev)).cast()
    }
}

// SAFETY: `next` and `prev` are distinct fields of the descriptor.
unsafe impl Linked for Span {
    fn next(this: *mut Self) -> *mut *mut Self {
        this.wrapping_byte_add(core::mem::offset_of!(Span, next)).cast()
    }
    fn prev(this: *mut Self) -> *mut *mut Self {
        this.wrapping_byte_add(core::mem::offset_of!(Span, prev)).cast()
    }
}

/// An intrusive doubly linked list: an arena's chunks, or its spans of one
/// class that no thread owns and that have free blocks.
///
/// Invariant: every member is live and on no other list; whoever owns the
/// list (an arena, under its lock) alone follows and changes the links.
pub(crate) struct List<T> {
    head: *mut T,
}

/// An arena's chunks.
pub(crate) type ChunkList = List<Chunk>;
/// An arena's unowned spans of one class with free blocks.
pub(crate) type SpanList = List<Span>;

impl<T: Linked> List<T> {
    pub(crate) const fn new() -> Self {
        Self { head: ptr::null_mut() }
    }

    /// The first member, or null.
    pub(crate) fn first(&self) -> *mut T {
        self.head
    }

    /// Links `m` first.
    ///
    /// # Safety
    ///
    /// `m` is live and on no list.
    pub(crate) unsafe fn push_front(&mut self, m: *mut T) {
        // SAFETY: per the contract and the list's invariant, the links are
        // fields of live members (`Linked`).
        unsafe {
            *T::prev(m) = ptr::null_mut();
            *T::next(m) = self.head;
            if !self.head.is_null() {
                *T::prev(self.head) = m;
            }
        }
        self.head = m;
    }

    /// Links `m` last.
    ///
    /// # Safety
    ///
    /// `m` is live and on no list.
    pub(crate) unsafe fn push_back(&mut self, m: *mut T) {
        // SAFETY: as in `push_front`.
        unsafe {
            *T::next(m) = ptr::null_mut();
            let mut last = self.head;
            if last.is_null() {
                *T::prev(m) = ptr::null_mut();
                self.head = m;
                return;
            }
            while !(*T::next(last)).is_null() {
                last = *T::next(last);
            }
            *T::next(last) = m;
            *T::prev(m) = last;
        }
    }

    /// Unlinks `m`.
    ///
    /// # Safety
    ///
    /// `m` is on this list.
    pub(crate) unsafe fn unlink(&mut self, m: *mut T) {
        // SAFETY: as in `push_front`; `m`'s neighbours are live members.
        unsafe {
            let (p, n) = (*T::prev(m), *T::next(m));
            if p.is_null() {
                self.head = n;
            } else {
                *T::next(p) = n;
            }
            if !n.is_null() {
                *T::prev(n) = p;
            }
            *T::next(m) = ptr::null_mut();
            *T::prev(m) = ptr::null_mut();
        }
    }
}

/// What [`chunk_info`](super::chunk_info) reports.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ChunkInfo {
    /// The chunk's first byte (its header).
    pub start: usize,
    /// Its length: [`CHUNK_SIZE`].
    pub len: usize,
    /// The policy its pages follow.
    pub policy: Policy,
    /// For first-touch and local chunks, the node they were mapped for.
    pub home: Option<usize>,
    /// Its arena's sequence number; a cyclic chunk deals its blocks
    /// starting at node number `seq mod n` of the set.
    pub seq: u64,
    /// How the kernel took the binding.
    pub binding: Binding,
}

impl ChunkInfo {
    /// What the header of the live chunk `c` says.
    ///
    /// # Safety
    ///
    /// `c` is a live chunk.
    pub(crate) unsafe fn of(c: *const Chunk) -> ChunkInfo {
        // SAFETY: per the contract; these header fields are read-only once
        // the chunk is published.
        unsafe {
            debug_assert!(is_chunk(c));
            ChunkInfo {
                start: c as usize,
                len: CHUNK_SIZE,
                policy: (*c).key.policy(),
                home: (*c).key.home(),
                seq: (*c).seq,
                binding: (*c).binding,
            }
        }
    }

    /// The node the policy means the page at `offset` (from the chunk start)
    /// for, when it names one: the node of a single-node bind or preferred,
    /// the cyclic node of the block, the kernel's interleave node by virtual
    /// page number; `None` for first-touch, local, bind to several nodes,
    /// and unbound chunks.
    pub fn intended_node(&self, offset: usize) -> Option<usize> {
        match (self.binding, self.policy) {
            (Binding::Unbound | Binding::NodeFull, _) => None,
            (_, Policy::Preferred(n)) => Some(n),
            (_, Policy::Bind(n)) if n.len() == 1 => n.first(),
            (Binding::Interleaved, Policy::Cyclic { nodes, .. }) | (_, Policy::Interleave(nodes)) => {
                Some(interleave_node(&nodes, self.start + offset, page_size()))
            }
            (_, Policy::Cyclic { nodes, block }) => {
                let n = nodes.len() as u64;
                nodes.nth((((offset / block) as u64 + self.seq % n) % n) as usize)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_runs() {
        assert_eq!(find_units(ALL_UNITS_FREE, 1), Some(1));
        assert_eq!(find_units(ALL_UNITS_FREE, 2), Some(2));
        assert_eq!(find_units(ALL_UNITS_FREE, 4), Some(4));
        assert_eq!(find_units(ALL_UNITS_FREE, 3), Some(1));
        assert_eq!(find_units(ALL_UNITS_FREE, 31), Some(1));
        assert_eq!(find_units(ALL_UNITS_FREE & !(1 << 5), 4), Some(8));
        assert_eq!(find_units(0, 1), None);
        assert_eq!(find_units(ALL_UNITS_FREE, 32), None);
        assert_eq!(unit_mask(4, 4), 0xf0);
        assert_eq!(unit_mask(1, 31), ALL_UNITS_FREE);
    }

    #[test]
    fn aligned_mappings() {
        let p = map_aligned(CHUNK_SIZE, CHUNK_SIZE).unwrap();
        assert_eq!(p.as_ptr() as usize % CHUNK_SIZE, 0);
        // SAFETY: mapped just above, writable, CHUNK_SIZE long.
        unsafe {
            p.as_ptr().add(CHUNK_SIZE - 1).write(7);
            sys::munmap(p, CHUNK_SIZE).unwrap();
        }
    }
}
