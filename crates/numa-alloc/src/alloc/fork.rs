//! Fork safety: `pthread_atfork` handlers that take every lock of the
//! allocator before a `fork` and release them after it, in the parent and
//! in the child, as glibc's malloc, jemalloc and mimalloc do.
//!
//! Without them a `fork` while another thread holds an arena's lock (or the
//! large-block cache's, or the default policy's) copies the lock held into
//! a child where its holder does not exist: the child's first allocation
//! that needs it spins forever. With them, `prepare` runs on the forking
//! thread just before the fork and waits until it holds every lock, so no
//! other thread is inside a critical section when the address space is
//! copied; `parent` and `child` then release them on each side. In the
//! child that is all the reinitialising the locks need (a spin lock is one
//! flag, and the thread that took it is the child's only thread).
//!
//! No critical section of the allocator takes a second lock, so taking them
//! all in any fixed order cannot deadlock against the other threads.
//!
//! What the child inherits from the threads that did not fork: their caches
//! (spans they own, blocks they batched for other threads, medium blocks
//! they kept) stay theirs, so the child never reuses that memory; it leaks
//! in the child, and only there.
//!
//! The handlers are registered on the allocator's first use in the process
//! (a thread's first slow path, or the first call of the public API that
//! takes a lock); a `fork` racing with that very first use is not covered.

use core::sync::atomic::{AtomicBool, Ordering};

use super::{arena, key, large};
use crate::sys;

/// Whether the handlers are registered (or being registered).
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Registers the fork handlers once per process. Cheap after the first
/// call (one load). Never allocates through this allocator (glibc's
/// `pthread_atfork` may use its own `malloc`).
#[inline]
pub(crate) fn register() {
    if REGISTERED.load(Ordering::Relaxed) || REGISTERED.swap(true, Ordering::AcqRel) {
        return;
    }
    if sys::atfork(prepare, after_in_parent, after_in_child).is_err() {
        // Out of memory in libc: try again at the next call.
        REGISTERED.store(false, Ordering::Release);
    }
}

/// Before `fork`, on the forking thread: takes every lock.
///
/// # Safety
///
/// Called by libc's `fork` only.
unsafe extern "C" fn prepare() {
    key::lock_for_fork();
    large::lock_for_fork();
    arena::lock_for_fork();
}

/// After `fork`, in the parent: releases what `prepare` took.
///
/// # Safety
///
/// Called by libc's `fork` only, after `prepare` on the same thread.
unsafe extern "C" fn after_in_parent() {
    // SAFETY: `prepare` took these on this thread and nothing released them.
    unsafe { release_all() };
}

/// After `fork`, in the child: releases what `prepare` took before the
/// fork (the child's only thread is the copy of the one that took them).
///
/// # Safety
///
/// Called by libc's `fork` only, in the child of a fork whose `prepare`
/// ran.
unsafe extern "C" fn after_in_child() {
    // SAFETY: the forking thread took these in `prepare`; this thread is
    // its copy, and nothing released them since.
    unsafe { release_all() };
}

/// # Safety
///
/// The calling thread (or the thread it is the fork child's copy of) holds
/// every lock `prepare` takes.
unsafe fn release_all() {
    // SAFETY: per the contract.
    unsafe {
        arena::unlock_after_fork();
        large::unlock_after_fork();
        key::unlock_after_fork();
    }
}
