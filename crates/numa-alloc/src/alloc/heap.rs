//! The per-thread cache: the fast paths, the slow paths behind them (spans
//! taken from and given back to arenas), medium blocks kept for reuse, the
//! thread's policy and the arena it resolves to, and handing everything
//! back when the thread exits.
//!
//! A thread allocates each size class from one span it owns (its *current*
//! span) and keeps that span's free blocks in `free[class]`, a list only it
//! touches: the fast paths are a pop from or a push onto that list. When the
//! current span runs out, the thread keeps owning it (up to
//! [`KEPT_PER_CLASS`] such *kept* spans per class, the oldest handed back
//! beyond that): its own frees into a kept span go onto the span's `local`
//! list without a lock, and a kept span with free blocks becomes current
//! again before the thread asks its arena for another. A kept span whose
//! blocks are all free goes back to its arena at once.
//!
//! A block freed by a thread that does not own its span goes into the
//! thread's remote-free batches (`remote.rs`).
//!
//! # Medium blocks
//!
//! A thread keeps up to [`MEDIUM_BIN_MAX`] freed medium blocks per unit
//! count, at most [`MEDIUM_CACHE_UNITS`] units (2 MiB) in all, and hands
//! them out again before asking its arena (which takes the arena lock).
//! Only blocks of the thread's current arena are kept, so a reused block
//! still has the placement it was made with; every other medium block goes
//! straight back to its own arena. The cache goes back to the arena
//! whenever the thread's arena changes (policy switch, default change,
//! another node) and when the thread exits or flushes.
//!
//! # Thread exit
//!
//! The cache is a `thread_local!` with a `const` initialiser and no `Drop`,
//! so touching it never registers anything. On its first slow path a thread
//! stores a non-null value under a pthread key whose destructor hands the
//! cache back (current spans with their free blocks, pending batches).
//! glibc runs key destructors after Rust's own thread-local destructors, so
//! blocks those free still reach the cache in time; anything a thread
//! allocates or frees after its destructor ran goes through uncached (each
//! operation returns everything at once).

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicUsize, Ordering};

use super::arena::{self, Arena};
use super::chunk::{Block, OWNED, Span, UNIT_SIZE, span_of};
use super::class::{CLASS_SIZE, MEDIUM_MAX, NCLASS};
use super::fork;
use super::key::{self, Key};
use super::remote::{self, RemoteFrees};
use super::stats::Counters;
use crate::policy::Policy;
use crate::sys;

/// Exhausted spans a thread keeps owning per size class.
pub(crate) const KEPT_PER_CLASS: usize = 4;
/// Bytes carved from a fresh span per refill.
const CARVE_BYTES: usize = 8 << 10;
/// Medium block sizes, in units (1 to 8): one cache bin each.
const MEDIUM_BINS: usize = MEDIUM_MAX / UNIT_SIZE;
/// The most medium blocks a thread keeps of one unit count.
pub(crate) const MEDIUM_BIN_MAX: u8 = 4;
/// The most units (64 KiB) of medium blocks a thread keeps in all: 2 MiB.
pub(crate) const MEDIUM_CACHE_UNITS: u32 = 32;

/// Heap states.
const FRESH: u8 = 0;
const CACHED: u8 = 1;
const UNCACHED: u8 = 2;

pub(crate) struct Heap {
    /// Free blocks of the current span of each class.
    free: [*mut Block; NCLASS],
    /// The current span of each class (owned by this thread), or null.
    cur: [*mut Span; NCLASS],
    /// Kept spans of each class (owned by this thread, not current), oldest
    /// first; `kept_n[c]` of them are valid.
    kept: [[*mut Span; KEPT_PER_CLASS]; NCLASS],
    kept_n: [u8; NCLASS],
    /// Blocks freed into spans of other threads (or of none), on their way back.
    remote: RemoteFrees,
    /// Freed medium blocks of `arena` kept for reuse, by unit count - 1,
    /// linked through their first word.
    medium: [*mut Block; MEDIUM_BINS],
    medium_count: [u8; MEDIUM_BINS],
    /// Units the medium bins hold in all.
    medium_units: u32,
    /// The arena new spans and medium blocks come from, for `key`; null
    /// until resolved.
    arena: *const Arena,
    key: Key,
    /// The thread's own policy, when it set one.
    policy: Policy,
    has_policy: bool,
    /// The default-policy epoch `key` was resolved against.
    default_epoch: u64,
    state: u8,
}

impl Heap {
    const NEW: Heap = Heap {
        free: [ptr::null_mut(); NCLASS],
        cur: [ptr::null_mut(); NCLASS],
        kept: [[ptr::null_mut(); KEPT_PER_CLASS]; NCLASS],
        kept_n: [0; NCLASS],
        remote: RemoteFrees::NEW,
        medium: [ptr::null_mut(); MEDIUM_BINS],
        medium_count: [0; MEDIUM_BINS],
        medium_units: 0,
        arena: ptr::null(),
        key: Key { kind: super::key::Kind::FirstTouch, nodes: crate::NodeSet::new(), block: 0, node: 0 },
        policy: Policy::FirstTouch,
        has_policy: false,
        default_epoch: 0,
        state: FRESH,
    };
}

thread_local! {
    static HEAP: UnsafeCell<Heap> = const { UnsafeCell::new(Heap::NEW) };
}

/// Runs `f` on the calling thread's heap.
///
/// The `&mut Heap` is unique: the heap is thread-local, nothing in this
/// allocator allocates or re-enters while it holds the reference, and a
/// signal handler that allocates while an allocation is in progress is not
/// supported (as with glibc's malloc).
#[inline(always)]
fn with_heap<R>(f: impl FnOnce(&mut Heap) -> R) -> R {
    HEAP.with(|h| {
        // SAFETY: see above; the cell lives as long as the thread.
        f(unsafe { &mut *h.get() })
    })
}

/// Allocates a block of class `c` (`c < NCLASS`).
#[inline(always)]
pub(crate) fn alloc_small(c: usize, stats: &'static Counters) -> *mut u8 {
    with_heap(|h| {
        let b = h.free[c];
        if !b.is_null() {
            // SAFETY: blocks on a heap list are free blocks of the thread's
            // current span; their first word is the link.
            h.free[c] = unsafe { (*b).next };
            return b.cast();
        }
        alloc_slow(h, c, stats)
    })
}

/// Frees a block of class `c`.
///
/// # Safety
///
/// `p` is a live block of class `c` from this allocator.
#[inline(always)]
pub(crate) unsafe fn free_small(p: *mut u8, c: usize, stats: &'static Counters) {
    // SAFETY: a live block's span is live.
    let span = unsafe { span_of(p) };
    let b = p.cast::<Block>();
    with_heap(|h| {
        if h.cur[c] == span {
            // SAFETY: the block is ours again (contract), at least 16 bytes
            // and 16-aligned (every class is); its first word becomes the link.
            unsafe { (*b).next = h.free[c] };
            h.free[c] = b;
        } else {
            // SAFETY: per the contract, and `span` is not current.
            unsafe { free_slow(h, c, span, b, stats) }
        }
    })
}

#[cold]
#[inline(never)]
fn alloc_slow(h: &mut Heap, c: usize, stats: &'static Counters) -> *mut u8 {
    refresh(h, stats);
    let span = h.cur[c];
    if !span.is_null() {
        // SAFETY: the current span is owned by this thread (its
        // `thread_free` has OWNED): its fields are ours and `thread_free` is
        // touched atomically. `carve` is called only with uncarved room. The
        // exhausted span, no longer current, is neither kept nor current when
        // `keep` gets it, and `release` gets it only when the thread stops
        // using it (its free list is empty: the span is exhausted).
        unsafe {
            // Blocks other threads freed meanwhile.
            if (*span).thread_free.load(Ordering::Relaxed) != OWNED {
                let chain = ((*span).thread_free.swap(OWNED, Ordering::Acquire) & !OWNED) as *mut Block;
                if !chain.is_null() {
                    h.free[c] = chain;
                    return pop(h, c);
                }
            }
            if (*span).carved < (*span).capacity {
                carve(h, c, span);
                return pop(h, c);
            }
            // Exhausted: keep it, and go on with a kept span that has free
            // blocks if there is one.
            h.cur[c] = ptr::null_mut();
            if let Some(next) = take_kept_with_free(h, c) {
                keep(h, c, span, stats);
                h.cur[c] = next;
                if !h.free[c].is_null() {
                    return pop(h, c);
                }
                // Only remote frees: they wait on its `thread_free`.
                let chain = ((*next).thread_free.swap(OWNED, Ordering::Acquire) & !OWNED) as *mut Block;
                h.free[c] = chain;
                return pop(h, c);
            }
            if h.state == CACHED {
                keep(h, c, span, stats);
            } else {
                arena::release(span, ptr::null_mut(), ptr::null_mut(), 0, stats);
            }
        }
    }
    let arena = arena_for_new_span(h, stats);
    let Some((span, list)) = arena::acquire(arena, c, stats) else {
        return ptr::null_mut();
    };
    let span = span.as_ptr();
    h.cur[c] = span;
    h.free[c] = list;
    if list.is_null() {
        // SAFETY: the span is ours and has uncarved room (fresh or partial).
        unsafe { carve(h, c, span) };
    }
    let p = pop(h, c);
    if h.state == UNCACHED {
        release_all(h, stats);
    }
    p
}

/// Adds the exhausted former current span of class `c` to the kept ones,
/// handing the oldest back to its arena if there are too many.
///
/// # Safety
///
/// The thread owns `span` (class `c`), which is neither current nor kept.
unsafe fn keep(h: &mut Heap, c: usize, span: *mut Span, stats: &Counters) {
    let n = h.kept_n[c] as usize;
    if n == KEPT_PER_CLASS {
        let oldest = h.kept[c][0];
        h.kept[c].copy_within(1.., 0);
        h.kept[c][KEPT_PER_CLASS - 1] = span;
        // SAFETY: a kept span is owned by this thread, and its free blocks
        // are on its own `local` list, which `release` takes over.
        unsafe { arena::release(oldest, ptr::null_mut(), ptr::null_mut(), 0, stats) };
    } else {
        h.kept[c][n] = span;
        h.kept_n[c] += 1;
    }
}

/// Takes out of the kept spans of class `c` one with free blocks (freed by
/// this thread onto its `local` list, or by others onto its `thread_free`
/// chain) and makes its `local` blocks the thread's list of class `c`.
fn take_kept_with_free(h: &mut Heap, c: usize) -> Option<*mut Span> {
    let n = h.kept_n[c] as usize;
    for i in 0..n {
        let s = h.kept[c][i];
        // SAFETY: kept spans are owned by this thread: their `local` and
        // counters are ours; `thread_free` is read atomically.
        unsafe {
            if (*s).local_count == 0 && (*s).thread_free.load(Ordering::Relaxed) == OWNED {
                continue;
            }
            h.kept[c].copy_within(i + 1..n, i);
            h.kept_n[c] -= 1;
            h.free[c] = (*s).local;
            (*s).used.store((*s).used.load(Ordering::Relaxed) + (*s).local_count, Ordering::Relaxed);
            (*s).local = ptr::null_mut();
            (*s).local_count = 0;
            return Some(s);
        }
    }
    None
}

/// The index of `span` among the kept spans of class `c`.
#[inline]
fn kept_index(h: &Heap, c: usize, span: *mut Span) -> Option<usize> {
    h.kept[c][..h.kept_n[c] as usize].iter().position(|&s| s == span)
}

#[inline(always)]
fn pop(h: &mut Heap, c: usize) -> *mut u8 {
    let b = h.free[c];
    if !b.is_null() {
        // SAFETY: a free block of our current span.
        h.free[c] = unsafe { (*b).next };
    }
    b.cast()
}

/// Carves up to `CARVE_BYTES` of never-used blocks from the current span
/// into the heap's list.
///
/// # Safety
///
/// `span` is this thread's current span of class `c` and has uncarved room.
unsafe fn carve(h: &mut Heap, c: usize, span: *mut Span) {
    // SAFETY: the span is ours, its uncarved blocks are inside it.
    unsafe {
        let size = CLASS_SIZE[c] as usize;
        let left = ((*span).capacity - (*span).carved) as usize;
        let n = left.min((CARVE_BYTES / size).max(1));
        let first = (*span).start.add((*span).carved as usize * size);
        let mut b = first;
        for _ in 1..n {
            let next = b.add(size);
            (*b.cast::<Block>()).next = next.cast();
            b = next;
        }
        (*b.cast::<Block>()).next = h.free[c];
        h.free[c] = first.cast();
        (*span).carved += n as u32;
        (*span).used.store((*span).used.load(Ordering::Relaxed) + n as u32, Ordering::Relaxed);
    }
}

/// # Safety
///
/// `b` is a live block of `span`, of class `c`, and `span` is not the
/// thread's current span of class `c`.
#[cold]
#[inline(never)]
unsafe fn free_slow(h: &mut Heap, c: usize, span: *mut Span, b: *mut Block, stats: &Counters) {
    if let Some(i) = kept_index(h, c, span) {
        // SAFETY: a kept span is ours: its `local` list and counters are
        // touched by this thread only; the block is ours to link.
        unsafe {
            (*b).next = (*span).local;
            (*span).local = b;
            (*span).local_count += 1;
            let used = (*span).used.load(Ordering::Relaxed) - 1;
            (*span).used.store(used, Ordering::Relaxed);
            if used == 0 {
                // Every block is free: the span goes back to its chunk. It
                // leaves the kept ones first, so the thread stops using it
                // as `release` requires.
                let n = h.kept_n[c] as usize;
                h.kept[c].copy_within(i + 1..n, i);
                h.kept_n[c] -= 1;
                arena::release(span, ptr::null_mut(), ptr::null_mut(), 0, stats);
            }
        }
        return;
    }
    // SAFETY: per the contract, the block is ours to give up.
    unsafe {
        if h.state == UNCACHED {
            (*b).next = ptr::null_mut();
            remote::hand_back(span, b, b, 1, stats);
        } else {
            h.remote.push(span, b, stats);
        }
    }
}

/// Hands every current span (with its cached blocks) and every pending
/// batch back.
fn release_all(h: &mut Heap, stats: &Counters) {
    for c in 0..NCLASS {
        let kept = core::mem::replace(&mut h.kept_n[c], 0) as usize;
        for i in 0..kept {
            // SAFETY: a kept span is owned by this thread; its free blocks
            // are on its `local` list, which `release` takes over.
            unsafe { arena::release(h.kept[c][i], ptr::null_mut(), ptr::null_mut(), 0, stats) };
        }
        let span = core::mem::replace(&mut h.cur[c], ptr::null_mut());
        let head = core::mem::replace(&mut h.free[c], ptr::null_mut());
        if span.is_null() {
            continue;
        }
        let mut n = 0;
        let mut tail = head;
        // SAFETY: the list holds free blocks of `span`, which we own.
        unsafe {
            if !tail.is_null() {
                n = 1;
                while !(*tail).next.is_null() {
                    tail = (*tail).next;
                    n += 1;
                }
            }
            arena::release(span, head, tail, n, stats);
        }
    }
    h.remote.flush(stats);
    release_medium(h, stats);
}

/// Hands every medium block the thread keeps back to its arena.
fn release_medium(h: &mut Heap, stats: &Counters) {
    for bin in 0..MEDIUM_BINS {
        let mut b = core::mem::replace(&mut h.medium[bin], ptr::null_mut());
        h.medium_count[bin] = 0;
        while !b.is_null() {
            // SAFETY: the bins hold medium blocks of this allocator that the
            // program freed; their arena still counts them out, so they are
            // live medium blocks as `arena::free_medium` requires, and
            // nothing else uses them. The link is read before the block goes
            // back.
            unsafe {
                let next = (*b).next;
                arena::free_medium(b.cast(), stats);
                b = next;
            }
        }
    }
    h.medium_units = 0;
}

/// Brings the heap up to date: arms the exit hook on first use, follows a
/// change of the default policy, resolves the arena.
#[inline]
fn refresh(h: &mut Heap, stats: &'static Counters) {
    if h.state == FRESH {
        fork::register();
        h.state = if arm_exit_hook(stats) { CACHED } else { UNCACHED };
    }
    if !h.has_policy {
        let epoch = key::default_epoch();
        if epoch != h.default_epoch {
            release_all(h, stats);
            h.default_epoch = epoch;
            h.arena = ptr::null();
        }
    }
    if h.arena.is_null() {
        resolve(h, stats);
    } else if h.key.follows_thread_node() && key::thread_node() != h.key.node {
        // The thread moved to another node: first-touch and local blocks
        // come from that node's arena from now on.
        release_all(h, stats);
        resolve(h, stats);
    }
}

fn resolve(h: &mut Heap, stats: &Counters) {
    let policy = if h.has_policy { h.policy } else { key::default_policy() };
    let node = key::thread_node();
    h.key = Key::new(&policy, node);
    h.arena = arena::arena_for(&h.key, stats);
}

/// The arena a new span or medium block comes from (resolved here if
/// `refresh` has not).
fn arena_for_new_span(h: &mut Heap, stats: &Counters) -> &'static Arena {
    if h.arena.is_null() {
        resolve(h, stats);
    }
    // SAFETY: non-null `arena` pointers come from `arena::arena_for`, which
    // returns `&'static` arenas of the static table.
    unsafe { &*h.arena }
}

/// A medium block of `units` units (`1..=MEDIUM_BINS`), and whether it is
/// known to be zero: from the thread's bin if it holds one, else from the
/// thread's arena. `None` when the kernel has no memory.
#[inline]
pub(crate) fn alloc_medium(units: usize, stats: &'static Counters) -> Option<(NonNull<u8>, bool)> {
    with_heap(|h| {
        refresh(h, stats);
        let bin = units - 1;
        let b = h.medium[bin];
        if let Some(p) = NonNull::new(b) {
            // SAFETY: a block in the bin is a free medium block of the
            // thread's current arena (`refresh` empties the bins when the
            // arena changes); its first word is the link.
            h.medium[bin] = unsafe { (*b).next };
            h.medium_count[bin] -= 1;
            h.medium_units -= units as u32;
            return Some((p.cast(), false));
        }
        arena::alloc_medium(arena_for_new_span(h, stats), units, stats)
    })
}

/// Frees a medium block: into the thread's bin when it belongs to the
/// thread's current arena and the bins have room, else to its arena.
///
/// # Safety
///
/// `p` is a live medium block from this allocator; nothing uses it after.
#[inline]
pub(crate) unsafe fn free_medium(p: *mut u8, stats: &Counters) {
    // SAFETY: a live block's chunk and span are live, and the span's unit
    // count and the chunk's arena do not change while the block is out.
    let (units, arena) = unsafe { ((*span_of(p)).units as u32, arena::arena_of_block(p)) };
    let kept = with_heap(|h| {
        let bin = (units as usize).wrapping_sub(1);
        let fits = h.state == CACHED
            && ptr::eq(arena, h.arena)
            && bin < MEDIUM_BINS
            && h.medium_count[bin] < MEDIUM_BIN_MAX
            && h.medium_units + units <= MEDIUM_CACHE_UNITS;
        if fits {
            let b = p.cast::<Block>();
            // SAFETY: the block is ours (per the contract); its first word
            // becomes the link.
            unsafe { (*b).next = h.medium[bin] };
            h.medium[bin] = b;
            h.medium_count[bin] += 1;
            h.medium_units += units;
        }
        fits
    });
    if !kept {
        // SAFETY: per the contract.
        unsafe { arena::free_medium(p, stats) };
    }
}

/// The calling thread's arena and key, resolved (for large blocks).
pub(crate) fn current_placement(stats: &'static Counters) -> (&'static Arena, Key) {
    with_heap(|h| {
        refresh(h, stats);
        let a = arena_for_new_span(h, stats);
        (a, h.key)
    })
}

// ---------------------------------------------------------------- exit hook

/// 0: not created; `usize::MAX`: creation failed; else key + 1.
static EXIT_KEY: AtomicUsize = AtomicUsize::new(0);

/// The pthread key whose destructor hands a thread's cache back, created by
/// the first thread that needs it. Threads that race to create it each make
/// one; the first to publish wins and the others delete theirs (no lock, so
/// there is nothing a `fork` could catch half-held).
fn exit_key() -> Option<sys::ThreadKey> {
    let mut k = EXIT_KEY.load(Ordering::Acquire);
    if k == 0 {
        let mine = match sys::thread_key_create(on_thread_exit) {
            Ok(key) => key as usize + 1,
            Err(_) => usize::MAX,
        };
        k = match EXIT_KEY.compare_exchange(0, mine, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => mine,
            Err(theirs) => {
                if mine != usize::MAX {
                    // No thread stored a value under it: nothing to run.
                    let _ = sys::thread_key_delete((mine - 1) as sys::ThreadKey);
                }
                theirs
            }
        };
    }
    (k != usize::MAX).then(|| (k - 1) as sys::ThreadKey)
}

/// Arms the calling thread's exit hook; the value stored under the key,
/// which pthread hands to the hook, is the counters the hook passes down.
fn arm_exit_hook(stats: &'static Counters) -> bool {
    let value: *const Counters = stats;
    let armed = exit_key().is_some_and(|k| sys::thread_key_set(k, value.cast::<c_void>()).is_ok());
    if !armed {
        stats.no_thread_exit_hook.fetch_add(1, Ordering::Relaxed);
    }
    armed
}

/// The exit hook: hands the exiting thread's cache back.
///
/// # Safety
///
/// Only pthread calls it, once per exiting thread that armed the key, on
/// that thread, outside any allocator call, with the value
/// [`arm_exit_hook`] stored: a `&'static Counters`.
unsafe extern "C" fn on_thread_exit(value: *mut c_void) {
    // SAFETY: per the contract, `value` is the `&'static Counters` stored.
    let stats = unsafe { &*value.cast_const().cast::<Counters>() };
    with_heap(|h| {
        release_all(h, stats);
        h.state = UNCACHED;
    });
}

// ------------------------------------------------------------- public API

/// Sets the calling thread's policy (already validated).
pub(crate) fn set_thread_policy(policy: Option<Policy>, stats: &Counters) {
    with_heap(|h| {
        release_all(h, stats);
        match policy {
            Some(p) => {
                h.policy = p;
                h.has_policy = true;
            }
            None => h.has_policy = false,
        }
        h.arena = ptr::null();
        h.default_epoch = key::default_epoch();
    })
}

/// The calling thread's own policy, if it set one.
pub(crate) fn thread_policy() -> Option<Policy> {
    with_heap(|h| h.has_policy.then_some(h.policy))
}

/// Hands the calling thread's cache back.
pub(crate) fn flush_thread_cache(stats: &Counters) {
    with_heap(|h| release_all(h, stats));
}

/// The policy the calling thread's next new chunk follows, and for
/// first-touch and local the node it is for.
pub(crate) fn effective(stats: &'static Counters) -> (Policy, Option<usize>) {
    with_heap(|h| {
        refresh(h, stats);
        (h.key.policy(), h.key.home())
    })
}
