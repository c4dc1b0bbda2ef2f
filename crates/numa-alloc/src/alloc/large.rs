//! Large blocks: one mapping each, bound under the placement the caller
//! resolved for the calling thread, and the cache of freed ones.
//!
//! ```text
//! base                 data = base + page (aligned as asked)
//! +--------------------+----------------------------------------+
//! | header (one page)  | the block, rounded up to whole pages   |
//! +--------------------+----------------------------------------+
//! ```
//!
//! The header records the mapping's length and placement, so `dealloc` and
//! the statistics need nothing else. The block's pages are never touched by
//! the allocator: fresh anonymous memory is zero, so `alloc_zeroed` costs
//! nothing extra, and first touch (or the policy) decides where pages go.
//! A cyclic block deals its blocks from `data`; its header page goes with
//! block 0. `realloc` moves the mapping with `mremap` (which keeps the
//! policy of the pages) where the mapping is one kernel mapping, and copies
//! otherwise.
//!
//! Freed mappings whose block area is at most [`CACHE_ENTRY_MAX`] bytes are
//! kept in a small cache (at most [`CACHE_MAX`] bytes in all, oldest evicted
//! first) and handed out again to a request of the same arena (so the same
//! placement) that fits them with at most a quarter to spare, the closest
//! fit first: a program that allocates and frees buffers of a few hundred
//! KiB over and over pays neither `mmap`/`munmap` (nor, with several
//! threads, the TLB shootdowns of `munmap`) nor page faults each time.
//! Reused memory is not zero, so `alloc_zeroed` clears it.
//!
//! So that freed mappings fit later requests, the block area of a cacheable
//! block is rounded up to one of four sizes per power of two (see
//! [`data_len`]): a 600 KiB and a 630 KiB request both map 640 KiB. The
//! rounding costs address space only; pages past the end of the block are
//! never touched, so they take no memory.

use core::ptr::{self, NonNull};
use core::sync::atomic::Ordering;

use super::arena::Arena;
use super::chunk::page_size;
use super::key::{self, Binding, Key, Kind};
use super::lock::SpinLock;
use super::stats::{Account, Counters};
use crate::sys;

const MAGIC: usize = 0x5e1a_ff00_1a26_e001;

#[repr(C)]
struct Header {
    magic: usize,
    /// The whole mapping, header page included.
    map_len: usize,
    /// The arena of the key (identifies the placement for the cache).
    arena: *const Arena,
    key: Key,
    binding: Binding,
    /// Mapping pieces its cyclic binding holds.
    pieces: u32,
}

/// The largest block area (mapping less its header page) the cache keeps.
pub(crate) const CACHE_ENTRY_MAX: usize = 4 << 20;
/// The most the cache holds.
pub(crate) const CACHE_MAX: usize = 64 << 20;
const CACHE_SLOTS: usize = 64;

/// Freed mappings kept for reuse: `(header, map_len)`, oldest first.
struct Cache {
    entries: [(usize, usize); CACHE_SLOTS],
    n: usize,
    bytes: usize,
}

static CACHE: SpinLock<Cache> = SpinLock::new(Cache { entries: [(0, 0); CACHE_SLOTS], n: 0, bytes: 0 });

/// Takes a cached mapping of `arena` whose data area holds `total - page`
/// bytes, wastes at most a quarter, and aligns its data to `align`.
fn cache_take(arena: *const Arena, total: usize, align: usize, page: usize) -> Option<*mut Header> {
    let mut c = CACHE.lock();
    let n = c.n;
    // The closest fit, the newest among equals.
    let mut best: Option<(usize, usize)> = None;
    for (i, &(h, len)) in c.entries[..n].iter().enumerate() {
        // SAFETY: cached entries are live mappings of ours with a header.
        let same = unsafe { (*(h as *const Header)).arena } == arena;
        let fits = same && len >= total && len - total <= total / 4 && (h + page) % align == 0;
        if fits && best.is_none_or(|(_, l)| len <= l) {
            best = Some((i, len));
        }
    }
    let (i, _) = best?;
    let (h, len) = c.entries[i];
    c.entries.copy_within(i + 1..n, i);
    c.n -= 1;
    c.bytes -= len;
    Some(h as *mut Header)
}

/// Offers a freed mapping to the cache; returns mappings to unmap (the
/// offered one if it does not fit, or evicted old ones), at most
/// `CACHE_SLOTS + 1`, in `out`; the count is returned.
fn cache_put(h: *mut Header, len: usize, page: usize, out: &mut [(usize, usize); CACHE_SLOTS + 1]) -> usize {
    if len - page > CACHE_ENTRY_MAX {
        out[0] = (h as usize, len);
        return 1;
    }
    let mut c = CACHE.lock();
    let mut k = 0;
    while c.n > 0 && (c.n == CACHE_SLOTS || c.bytes + len > CACHE_MAX) {
        let old = c.entries[0];
        let n = c.n;
        c.entries.copy_within(1..n, 0);
        c.n -= 1;
        c.bytes -= old.1;
        out[k] = old;
        k += 1;
    }
    let n = c.n;
    c.entries[n] = (h as usize, len);
    c.n += 1;
    c.bytes += len;
    k
}

/// Takes the cache's lock for a `fork` (see `fork.rs`).
pub(crate) fn lock_for_fork() {
    CACHE.lock_held();
}

/// Releases what [`lock_for_fork`] took.
///
/// # Safety
///
/// The calling thread took it with [`lock_for_fork`] (in a child: the thread
/// that forked did) and has not released it since.
pub(crate) unsafe fn unlock_after_fork() {
    // SAFETY: per the contract; `lock_for_fork` leaves no guard.
    unsafe { CACHE.unlock_held() };
}

/// Bytes the cache holds now.
pub(crate) fn cached_bytes() -> usize {
    CACHE.lock().bytes
}

/// The block area mapped for a block of `size` bytes: whole pages, and for
/// blocks the cache may keep, rounded up to the next of four sizes per power
/// of two (`2^b + j 2^(b-2)`, `j = 1..=4`, for `2^b < size <= 2^(b+1)`).
/// `None` on overflow.
pub(crate) fn data_len(size: usize, page: usize) -> Option<usize> {
    let pages = size.max(1).checked_next_multiple_of(page)?;
    if pages > CACHE_ENTRY_MAX {
        return Some(pages);
    }
    let b = usize::BITS - 1 - (pages - 1).leading_zeros();
    let step = ((1usize << b) / 4).max(page);
    // At most CACHE_ENTRY_MAX: no overflow.
    Some(pages.next_multiple_of(step))
}

/// Allocates a large block of `size` bytes aligned to `align` under `key`,
/// the placement of `arena` (which identifies it in the cache); null when
/// the kernel has no memory or the size overflows. With `zero`, its bytes
/// are zero.
pub(crate) fn alloc(
    size: usize,
    align: usize,
    zero: bool,
    arena: &'static Arena,
    key: &Key,
    stats: &Counters,
) -> *mut u8 {
    let page = page_size();
    let Some(data_len) = data_len(size, page) else { return oom(stats) };
    let Some(total) = data_len.checked_add(page) else { return oom(stats) };
    let key = *key;
    let arena: *const Arena = arena;
    if let Some(h) = cache_take(arena, total, align, page) {
        // SAFETY: a cached mapping is ours, with a valid header, at least
        // `total` bytes long; its data area is reused as a fresh block.
        unsafe {
            let data = h.cast::<u8>().add(page);
            let len = (*h).map_len;
            live(&(*h).key, (*h).binding, len, page, true, stats);
            if zero {
                ptr::write_bytes(data, 0, size);
            }
            return data;
        }
    }
    let Some(base) = map(total, align, page) else { return oom(stats) };
    // SAFETY: the mapping is fresh and `total >= 2 * page` long.
    let data = unsafe { base.as_ptr().add(page) };
    let (binding, pieces) = if key.kind == Kind::Cyclic {
        let (b, p) = key.bind(data, data_len, 0, false);
        if b == Binding::AsPolicy {
            if let Some(one) = key.cyclic_node(0, 0).and_then(key::single) {
                let _ = sys::mbind(base.as_ptr(), page, sys::MPOL_BIND, one.as_words(), 0);
            }
        }
        (b, p)
    } else {
        key.bind(base.as_ptr(), total, 0, false)
    };
    stats.binding(binding);
    let h = base.as_ptr().cast::<Header>();
    // SAFETY: the header page is ours and writable.
    unsafe { h.write(Header { magic: MAGIC, map_len: total, arena, key, binding, pieces }) };
    live(&key, binding, total, page, true, stats);
    data
}

/// Counts a mapping of `len` bytes as live (`add`) or no longer live.
fn live(key: &Key, binding: Binding, len: usize, page: usize, add: bool, stats: &Counters) {
    stats.account(Account::Large, key, binding, 0, len - page, add);
    if add {
        stats.large_live.fetch_add(1, Ordering::Relaxed);
        stats.large_bytes.fetch_add(len as u64, Ordering::Relaxed);
    } else {
        stats.large_live.fetch_sub(1, Ordering::Relaxed);
        stats.large_bytes.fetch_sub(len as u64, Ordering::Relaxed);
    }
}

#[cold]
fn oom(stats: &Counters) -> *mut u8 {
    stats.out_of_memory.fetch_add(1, Ordering::Relaxed);
    ptr::null_mut()
}

/// Maps `total` bytes such that `base + page` is aligned to `align`.
fn map(total: usize, align: usize, page: usize) -> Option<NonNull<u8>> {
    if align <= page {
        return sys::mmap_anonymous(total, 0).ok();
    }
    let over = total.checked_add(align)?;
    let p = sys::mmap_anonymous(over, 0).ok()?;
    let start = p.as_ptr() as usize;
    let data = (start + page + align - 1) & !(align - 1);
    let base = data - page;
    let head = base - start;
    let tail = over - head - total;
    // SAFETY: head and tail are the unused ends of the mapping just made.
    unsafe {
        if head > 0 {
            let _ = sys::munmap(p, head);
        }
        if let Some(t) = NonNull::new((base + total) as *mut u8).filter(|_| tail > 0) {
            let _ = sys::munmap(t, tail);
        }
    }
    NonNull::new(base as *mut u8)
}

/// # Safety
///
/// `p` is a live large block.
unsafe fn header(p: *mut u8) -> *mut Header {
    // SAFETY: the header page precedes every large block.
    unsafe { p.sub(page_size()).cast::<Header>() }
}

/// Frees a large block.
///
/// # Safety
///
/// `p` is a live large block; nothing uses it afterwards.
pub(crate) unsafe fn free(p: *mut u8, stats: &Counters) {
    // SAFETY: per the contract.
    unsafe {
        let h = header(p);
        debug_assert_eq!((*h).magic, MAGIC);
        let page = page_size();
        let len = (*h).map_len;
        live(&(*h).key, (*h).binding, len, page, false, stats);
        let mut out = [(0usize, 0usize); CACHE_SLOTS + 1];
        let k = cache_put(h, len, page, &mut out);
        for &(m, l) in &out[..k] {
            unmap(m as *mut Header, l);
        }
    }
}

/// Unmaps a large mapping that is no longer live or cached.
///
/// # Safety
///
/// `h` heads a mapping of `len` bytes of ours that nothing uses.
unsafe fn unmap(h: *mut Header, len: usize) {
    // SAFETY: per the contract.
    unsafe {
        key::release_pieces((*h).pieces);
        if let Some(base) = NonNull::new(h.cast::<u8>()) {
            let _ = sys::munmap(base, len);
        }
    }
}

/// Resizes a large block (alignment at most a page) with `mremap`. `None`
/// when that is not possible here (a cyclic block of several kernel
/// mappings, or the kernel refuses): the caller copies instead.
///
/// # Safety
///
/// `p` is a live large block; on `Some` the old pointer is dead.
pub(crate) unsafe fn realloc(p: *mut u8, new_size: usize, stats: &Counters) -> Option<*mut u8> {
    let page = page_size();
    let new_data = data_len(new_size, page)?;
    let new_total = new_data.checked_add(page)?;
    // SAFETY: per the contract.
    unsafe {
        let h = header(p);
        let old_total = (*h).map_len;
        if new_total == old_total {
            return Some(p);
        }
        let (key, binding) = ((*h).key, (*h).binding);
        if key.kind == Kind::Cyclic
            && binding == Binding::AsPolicy
            && (old_total - page > key.block || new_data > key.block)
        {
            return None;
        }
        let base = NonNull::new(h.cast::<u8>())?;
        let nb = sys::mremap(base, old_total, new_total).ok()?;
        let nh = nb.as_ptr().cast::<Header>();
        let data = nb.as_ptr().add(page);
        (*nh).map_len = new_total;
        stats.account(Account::Large, &key, binding, 0, old_total - page, false);
        stats.account(Account::Large, &key, binding, 0, new_data, true);
        stats.large_bytes.fetch_add(new_total as u64, Ordering::Relaxed);
        stats.large_bytes.fetch_sub(old_total as u64, Ordering::Relaxed);
        Some(data)
    }
}

const _: () = assert!(core::mem::size_of::<Header>() <= 4096);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cacheable_blocks_round_to_four_sizes_per_power_of_two() {
        let page = 4096;
        assert_eq!(data_len(512 << 10, page), Some(512 << 10));
        assert_eq!(data_len((512 << 10) + 1, page), Some(640 << 10));
        assert_eq!(data_len(600 << 10, page), Some(640 << 10));
        assert_eq!(data_len(1 << 20, page), Some(1 << 20));
        assert_eq!(data_len(CACHE_ENTRY_MAX, page), Some(CACHE_ENTRY_MAX));
        assert_eq!(data_len(CACHE_ENTRY_MAX + 1, page), Some(CACHE_ENTRY_MAX + page));
        assert_eq!(data_len(usize::MAX, page), None);
        for size in (1..(CACHE_ENTRY_MAX + 3 * page)).step_by(997) {
            let d = data_len(size, page).unwrap();
            assert!(d >= size && d % page == 0, "size {size}: {d}");
            assert!(d - size < page.max(size / 4 + 1), "size {size} rounds to {d}: at most a quarter more");
        }
    }
}
