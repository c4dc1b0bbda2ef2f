//! Raw system calls: the only module of this crate that calls `libc`.
//!
//! Every wrapper returns a [`SysError`] naming the call and its `errno`,
//! through one of four checks that read a call's outcome the way its family
//! reports it: [`checked`] (a negative result and `errno`: raw system calls
//! and most of libc), [`checked_zero`] (the same, for calls whose success
//! is 0), [`checked_pthread`] (the error number as the result) and
//! [`checked_map`] (`MAP_FAILED` and `errno`). Nothing here allocates,
//! takes a lock or panics, so the global allocator may use any of it.
//!
//! # Node masks
//!
//! `mbind` and `set_mempolicy` describe node sets as arrays of `u64` words.
//! Their `maxnode` argument is one more than the number of bits the kernel
//! reads: the kernel decrements it before use (`get_nodes` in
//! `mm/mempolicy.c`). [`maxnode_for`] does that arithmetic in one place.

use core::ffi::{c_int, c_long, c_uint, c_ulong, c_void};
use core::fmt;
use core::ptr::{self, NonNull};

/// `MPOL_DEFAULT`: the thread's (or the system's) default policy; pages go
/// to the node of the CPU that first touches them.
pub(crate) const MPOL_DEFAULT: c_int = 0;
/// `MPOL_PREFERRED`: allocate on one node, fall back to others when it is full.
pub(crate) const MPOL_PREFERRED: c_int = 1;
/// `MPOL_BIND`: allocate only on the given nodes.
pub(crate) const MPOL_BIND: c_int = 2;
/// `MPOL_INTERLEAVE`: spread pages round-robin over the given nodes.
pub(crate) const MPOL_INTERLEAVE: c_int = 3;
/// `MPOL_LOCAL`: allocate on the node of the CPU that touches the page.
pub(crate) const MPOL_LOCAL: c_int = 4;
/// `MPOL_PREFERRED_MANY` (Linux 5.15): allocate on the given nodes while
/// they have free memory (trying them without direct reclaim, and never
/// with the OOM killer), on the others after.
pub(crate) const MPOL_PREFERRED_MANY: c_int = 5;

/// `get_mempolicy` flag: return the nodes this thread may allocate on (its
/// cpuset's `mems_allowed`) instead of a policy.
const MPOL_F_MEMS_ALLOWED: c_ulong = 1 << 2;

/// `mbind` flag: fail with `EIO` if existing pages do not follow the policy
/// (with [`MPOL_MF_MOVE`]: if some could not be moved).
pub(crate) const MPOL_MF_STRICT: c_uint = 1;
/// `mbind`/`move_pages` flag: migrate pages used only by this process.
pub(crate) const MPOL_MF_MOVE: c_uint = 1 << 1;

/// `madvise` advice: no transparent huge pages for the range (an
/// interleaved range must be dealt page by page, not 2 MiB at a time).
pub(crate) const MADV_NOHUGEPAGE: c_int = libc::MADV_NOHUGEPAGE;
/// `madvise` advice: the contents are no longer needed; the kernel may take
/// the pages back when it needs memory (they then read as zero), and until
/// then they stay mapped and writing them costs no page fault (Linux 4.5).
pub(crate) const MADV_FREE: c_int = libc::MADV_FREE;
/// `madvise` advice: populate (prefault) pages writable (Linux 5.14).
pub(crate) const MADV_POPULATE_WRITE: c_int = 23;

/// A system call that failed: which one, and the `errno` it set.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SysError {
    call: &'static str,
    errno: i32,
}

impl SysError {
    /// An error for `call` with an explicit `errno`.
    pub const fn new(call: &'static str, errno: i32) -> Self {
        Self { call, errno }
    }

    /// An error for `call` carrying the calling thread's current `errno`.
    #[cold]
    pub fn last(call: &'static str) -> Self {
        // SAFETY: `__errno_location` returns a valid pointer to this thread's errno.
        let errno = unsafe { *libc::__errno_location() };
        Self { call, errno }
    }

    /// The name of the system call.
    pub const fn call(&self) -> &'static str {
        self.call
    }

    /// The `errno` value.
    pub const fn errno(&self) -> i32 {
        self.errno
    }

    /// The symbolic name of the errno (`"EINVAL"`), when it is a common one.
    pub const fn errno_name(&self) -> &'static str {
        match self.errno {
            libc::EPERM => "EPERM",
            libc::ENOENT => "ENOENT",
            libc::ESRCH => "ESRCH",
            libc::EINTR => "EINTR",
            libc::EIO => "EIO",
            libc::E2BIG => "E2BIG",
            libc::EBADF => "EBADF",
            libc::EAGAIN => "EAGAIN",
            libc::ENOMEM => "ENOMEM",
            libc::EACCES => "EACCES",
            libc::EFAULT => "EFAULT",
            libc::EBUSY => "EBUSY",
            libc::EEXIST => "EEXIST",
            libc::ENODEV => "ENODEV",
            libc::EINVAL => "EINVAL",
            libc::ENOSPC => "ENOSPC",
            libc::ENOSYS => "ENOSYS",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            _ => "errno",
        }
    }
}

impl fmt::Debug for SysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SysError({} -> {} {})", self.call, self.errno_name(), self.errno)
    }
}

impl fmt::Display for SysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed: {} ({} {})",
            self.call,
            std::io::Error::from_raw_os_error(self.errno),
            self.errno_name(),
            self.errno
        )
    }
}

impl std::error::Error for SysError {}

/// The result of a wrapped system call.
pub(crate) type SysResult<T> = Result<T, SysError>;

/// Runs `f`, a raw system call or a libc function that fails by returning
/// a negative value and setting `errno`: its result, or the error naming
/// `call` with that `errno` (read at once, before anything else can change
/// it).
#[inline]
fn checked(call: &'static str, f: impl FnOnce() -> c_long) -> SysResult<c_long> {
    let r = f();
    if r >= 0 { Ok(r) } else { Err(SysError::last(call)) }
}

/// [`checked`] for calls that return 0 on success.
#[inline]
fn checked_zero(call: &'static str, f: impl FnOnce() -> c_long) -> SysResult<()> {
    checked(call, f).map(|_| ())
}

/// Runs `f`, a pthread function: it returns 0 or the error number itself
/// (and leaves `errno` alone).
#[inline]
fn checked_pthread(call: &'static str, f: impl FnOnce() -> c_int) -> SysResult<()> {
    match f() {
        0 => Ok(()),
        errno => Err(SysError::new(call, errno)),
    }
}

/// Runs `f`, `mmap` or `mremap`: the mapping, or the error naming `call`
/// with `errno` when it returns `MAP_FAILED` (a null mapping, which the
/// kernel never gives without `MAP_FIXED`, counts as `ENOMEM`).
#[inline]
fn checked_map(call: &'static str, f: impl FnOnce() -> *mut c_void) -> SysResult<NonNull<u8>> {
    let p = f();
    if p == libc::MAP_FAILED {
        return Err(SysError::last(call));
    }
    NonNull::new(p.cast()).ok_or(SysError::new(call, libc::ENOMEM))
}

/// The `maxnode` argument for a mask of `words` 64-bit words: the kernel
/// reads `maxnode - 1` bits, so this is one more than the number of bits.
pub(crate) const fn maxnode_for(words: usize) -> c_ulong {
    (words * 64 + 1) as c_ulong
}

/// The base page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 { v as usize } else { 4096 }
}

/// `mmap` of anonymous private memory, readable and writable.
///
/// `extra_flags` are or-ed into `MAP_PRIVATE | MAP_ANONYMOUS` (e.g.
/// `MAP_HUGETLB`, `MAP_NORESERVE`).
pub(crate) fn mmap_anonymous(len: usize, extra_flags: c_int) -> SysResult<NonNull<u8>> {
    checked_map("mmap", || {
        // SAFETY: an anonymous mapping at a kernel-chosen address touches no
        // existing memory; the arguments are plain values.
        unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra_flags,
                -1,
                0,
            )
        }
    })
}

/// `munmap`.
///
/// # Safety
///
/// - `[addr, addr + len)` must be a range this process mapped and still owns;
/// - nothing may access that range afterwards.
pub(crate) unsafe fn munmap(addr: NonNull<u8>, len: usize) -> SysResult<()> {
    // SAFETY: the caller owns the mapping and will not use it again.
    checked_zero("munmap", || c_long::from(unsafe { libc::munmap(addr.as_ptr().cast(), len) }))
}

/// `mremap` with `MREMAP_MAYMOVE`: grow or shrink a private anonymous mapping.
///
/// # Safety
///
/// - `[addr, addr + old_len)` must be a mapping this process owns;
/// - on success the old range must no longer be used (the mapping may move).
pub(crate) unsafe fn mremap(addr: NonNull<u8>, old_len: usize, new_len: usize) -> SysResult<NonNull<u8>> {
    // SAFETY: the caller owns the mapping; MAYMOVE lets the kernel choose.
    checked_map("mremap", || unsafe { libc::mremap(addr.as_ptr().cast(), old_len, new_len, libc::MREMAP_MAYMOVE) })
}

/// `madvise`.
///
/// # Safety
///
/// `[addr, addr + len)` must be memory this process mapped. Advice that
/// discards contents (`MADV_DONTNEED`, `MADV_FREE`) must only be given for
/// memory whose contents the caller no longer needs and that no live
/// reference points into.
pub(crate) unsafe fn madvise(addr: *mut u8, len: usize, advice: c_int) -> SysResult<()> {
    // SAFETY: forwarded to the caller's contract.
    checked_zero("madvise", || c_long::from(unsafe { libc::madvise(addr.cast(), len, advice) }))
}

/// `mbind`: set the memory policy of `[addr, addr + len)`.
///
/// `addr` must be page-aligned. `nodes` is a node mask (bit `n` of word
/// `n / 64` is node `n`); an empty slice passes a null mask.
///
/// This cannot break memory safety: the policy decides where pages live, and
/// migration (`MPOL_MF_MOVE`) preserves their contents.
pub(crate) fn mbind(addr: *mut u8, len: usize, mode: c_int, nodes: &[u64], flags: c_uint) -> SysResult<()> {
    let (mask, maxnode) = mask_args(nodes);
    checked_zero("mbind", || {
        // SAFETY: the kernel validates the range; the mask pointer is valid
        // for `nodes.len()` words, which is what `maxnode` covers.
        unsafe {
            libc::syscall(
                libc::SYS_mbind,
                addr as c_ulong,
                len as c_ulong,
                mode as c_ulong,
                mask,
                maxnode,
                flags as c_ulong,
            )
        }
    })
}

/// `set_mempolicy`: the calling thread's default policy for new pages.
pub(crate) fn set_mempolicy(mode: c_int, nodes: &[u64]) -> SysResult<()> {
    let (mask, maxnode) = mask_args(nodes);
    // SAFETY: the mask pointer is valid for `nodes.len()` words.
    checked_zero("set_mempolicy", || unsafe { libc::syscall(libc::SYS_set_mempolicy, mode as c_long, mask, maxnode) })
}

/// `move_pages` for the calling process.
///
/// With `nodes == None` it only asks where each page is: `status[i]` becomes
/// the node of `pages[i]`, or a negative errno (`-ENOENT`: not resident;
/// `-EFAULT`: not mapped or the zero page, depending on the kernel).
/// With `Some(nodes)` it moves each page to `nodes[i]`.
///
/// Returns the number of pages that could not be moved (0 when querying).
/// `pages`, `nodes` and `status` must have the same length; a mismatch is
/// reported as `EINVAL` without calling the kernel.
pub(crate) fn move_pages(
    pages: &[*const u8],
    nodes: Option<&[c_int]>,
    status: &mut [c_int],
    flags: c_uint,
) -> SysResult<usize> {
    if status.len() != pages.len() || nodes.is_some_and(|n| n.len() != pages.len()) {
        return Err(SysError::new("move_pages", libc::EINVAL));
    }
    let nodes_ptr = nodes.map_or(ptr::null(), |n| n.as_ptr());
    let not_moved = checked("move_pages", || {
        // SAFETY: all three arrays hold `pages.len()` elements; pid 0 is
        // this process.
        unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                0 as c_long,
                pages.len() as c_ulong,
                pages.as_ptr(),
                nodes_ptr,
                status.as_mut_ptr(),
                flags as c_long,
            )
        }
    })?;
    Ok(not_moved as usize)
}

/// `get_mempolicy(.., MPOL_F_MEMS_ALLOWED)`: the nodes the calling thread
/// may allocate on now (its cpuset's `mems_allowed`, which a move to
/// another cgroup changes at any time), into `mask` (bit `n` of word
/// `n / 64` is node `n`). Fails with `EINVAL` when `mask` has fewer bits
/// than the kernel has possible nodes.
pub(crate) fn mems_allowed(mask: &mut [u64]) -> SysResult<()> {
    get_mempolicy(mask, MPOL_F_MEMS_ALLOWED).map(|_| ())
}

/// `get_mempolicy(&mode, mask, .., NULL, 0)`: the calling thread's own
/// policy: its mode (with the mode flags the kernel keeps, such as
/// `MPOL_F_STATIC_NODES`, in the high bits) and its nodes into `mask`
/// (empty for the default and local policies). Fails with `EINVAL` when
/// `mask` has fewer bits than the kernel has possible nodes.
pub(crate) fn thread_mempolicy(mask: &mut [u64]) -> SysResult<c_int> {
    get_mempolicy(mask, 0)
}

/// `get_mempolicy` without an address, with `flags`: the mode it returns.
fn get_mempolicy(mask: &mut [u64], flags: c_ulong) -> SysResult<c_int> {
    let mut mode: c_int = 0;
    checked_zero("get_mempolicy", || {
        // SAFETY: `mode` is a valid out-pointer; the mask is valid for
        // writes of `mask.len()` words, which is what `maxnode` covers;
        // with no address flag (`MPOL_F_ADDR`) the address argument is
        // unused.
        unsafe {
            libc::syscall(
                libc::SYS_get_mempolicy,
                &mut mode as *mut c_int,
                mask.as_mut_ptr(),
                maxnode_for(mask.len()),
                0 as c_ulong,
                flags,
            )
        }
    })?;
    Ok(mode)
}

/// Reads the start of the file at `path` (a NUL-terminated path) into
/// `buf`: the number of bytes read, at most `buf.len()`. Without
/// allocating, so the global allocator may read a node's `meminfo` with it.
pub(crate) fn read_file(path: &core::ffi::CStr, buf: &mut [u8]) -> SysResult<usize> {
    // SAFETY: `path` is a valid NUL-terminated string; the flags open
    // nothing but a read-only descriptor this function closes.
    let fd = checked("open", || c_long::from(unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) }))?
        as c_int;
    let mut filled = 0;
    let mut result = Ok(());
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: `rest` is valid for writes of `rest.len()` bytes; `fd` is
        // the descriptor opened above.
        match checked("read", || unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) } as c_long) {
            Ok(0) => break,
            Ok(n) => filled += n as usize,
            Err(e) if e.errno() == libc::EINTR => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    // SAFETY: `fd` is ours and not used again. A failed close of a
    // read-only descriptor loses nothing.
    let _ = unsafe { libc::close(fd) };
    result.map(|()| filled)
}

/// `sched_setaffinity` for the calling thread. `mask` is a CPU bitmask.
pub(crate) fn sched_setaffinity(mask: &[u64]) -> SysResult<()> {
    checked_zero("sched_setaffinity", || {
        // SAFETY: the mask is valid for `size_of_val(mask)` bytes; tid 0 is
        // the calling thread.
        unsafe {
            libc::syscall(
                libc::SYS_sched_setaffinity,
                0 as c_long,
                core::mem::size_of_val(mask) as c_ulong,
                mask.as_ptr(),
            )
        }
    })
}

/// `sched_getaffinity` for the calling thread into `mask`. Fails with
/// `EINVAL` when `mask` is smaller than the kernel's CPU mask; callers retry
/// with a larger buffer.
pub(crate) fn sched_getaffinity(mask: &mut [u64]) -> SysResult<()> {
    // The raw syscall returns the number of bytes written.
    checked("sched_getaffinity", || {
        // SAFETY: the mask is valid for writes of `size_of_val(mask)` bytes.
        unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                0 as c_long,
                core::mem::size_of_val(mask) as c_ulong,
                mask.as_mut_ptr(),
            )
        }
    })
    .map(|_| ())
}

/// `getcpu`: the CPU and NUMA node the calling thread runs on right now.
pub(crate) fn getcpu() -> SysResult<(usize, usize)> {
    let mut cpu: c_uint = 0;
    let mut node: c_uint = 0;
    checked_zero("getcpu", || {
        // SAFETY: both out-pointers are valid; the third argument is unused.
        unsafe {
            libc::syscall(
                libc::SYS_getcpu,
                &mut cpu as *mut c_uint,
                &mut node as *mut c_uint,
                ptr::null_mut::<c_void>(),
            )
        }
    })?;
    Ok((cpu as usize, node as usize))
}

/// A thread-specific data key (`pthread_key_t`) whose destructor runs when a
/// thread that stored a non-null value exits. The global allocator uses one
/// to hand a thread's cache back: unlike `std::thread_local!` destructors,
/// registering it never allocates (glibc keeps the first 32 keys' values in
/// the thread descriptor).
pub(crate) type ThreadKey = libc::pthread_key_t;

/// `pthread_key_create` with a destructor.
pub(crate) fn thread_key_create(destructor: unsafe extern "C" fn(*mut c_void)) -> SysResult<ThreadKey> {
    let mut key: ThreadKey = 0;
    // SAFETY: `key` is a valid out-pointer; the destructor has the C ABI
    // signature pthread expects.
    checked_pthread("pthread_key_create", || unsafe { libc::pthread_key_create(&mut key, Some(destructor)) })?;
    Ok(key)
}

/// `pthread_key_delete`: frees a key no thread has stored a value under.
pub(crate) fn thread_key_delete(key: ThreadKey) -> SysResult<()> {
    // SAFETY: `key` came from `thread_key_create`; deleting it runs no
    // destructor.
    checked_pthread("pthread_key_delete", || unsafe { libc::pthread_key_delete(key) })
}

/// A fork handler: runs on the forking thread (`prepare`, `parent`) or on
/// the child's only thread (`child`), with no argument.
pub(crate) type ForkHandler = unsafe extern "C" fn();

/// `pthread_atfork`: `prepare` runs in the forking thread just before
/// `fork`, `parent` in it just after, `child` in the child's only thread.
/// Handlers registered later run their `prepare` earlier and their
/// `parent` and `child` later.
pub(crate) fn atfork(prepare: ForkHandler, parent: ForkHandler, child: ForkHandler) -> SysResult<()> {
    // SAFETY: the three are `extern "C"` functions without arguments, as
    // pthread expects, and live as long as the program.
    checked_pthread("pthread_atfork", || unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) })
}

/// `pthread_setspecific`: a non-null `value` arms the key's destructor for
/// the calling thread; null disarms it. pthread never dereferences the
/// value; it only hands it to the destructor.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub(crate) fn thread_key_set(key: ThreadKey, value: *const c_void) -> SysResult<()> {
    // SAFETY: `key` came from `thread_key_create`; the value is an opaque
    // word that pthread only hands back to the destructor.
    checked_pthread("pthread_setspecific", || unsafe { libc::pthread_setspecific(key, value) })
}

/// `sched_getcpu`: the CPU the calling thread runs on, cheaply (glibc reads
/// it from the thread's rseq area or the vDSO, without a system call).
/// `None` if it fails.
pub(crate) fn sched_getcpu() -> Option<usize> {
    // SAFETY: no arguments, no preconditions.
    let r = unsafe { libc::sched_getcpu() };
    usize::try_from(r).ok()
}

/// Milliseconds on the monotonic clock (`clock_gettime(CLOCK_MONOTONIC)`,
/// read from the vDSO without a system call); 0 if the clock cannot be read.
pub(crate) fn monotonic_ms() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer for one timespec.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if r != 0 {
        return 0;
    }
    (ts.tv_sec as u64).wrapping_mul(1000).wrapping_add(ts.tv_nsec as u64 / 1_000_000)
}

/// Nanoseconds on the monotonic clock (`clock_gettime(CLOCK_MONOTONIC)`,
/// the clock `std::time::Instant` reads, from the vDSO without a system
/// call); 0 if the clock cannot be read.
#[inline]
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer for one timespec.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if r != 0 {
        return 0;
    }
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

fn mask_args(nodes: &[u64]) -> (*const u64, c_ulong) {
    // Trim trailing zero words: a shorter mask keeps `maxnode` under the
    // kernel's MAX_NUMNODES on kernels built with fewer nodes.
    let used = nodes.iter().rposition(|&w| w != 0).map_or(0, |i| i + 1);
    if used == 0 { (ptr::null(), 0) } else { (nodes.as_ptr(), maxnode_for(used)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maxnode_is_one_more_than_the_bits() {
        assert_eq!(maxnode_for(1), 65);
        assert_eq!(maxnode_for(16), 1025);
        assert_eq!(mask_args(&[0, 0]).1, 0);
        assert_eq!(mask_args(&[1, 0]).1, 65);
        assert_eq!(mask_args(&[0, 2, 0]).1, 129);
    }

    #[test]
    fn errors_name_the_call_and_errno() {
        let e = SysError::new("mbind", libc::EINVAL);
        let s = e.to_string();
        assert!(s.starts_with("mbind failed"), "{s}");
        assert!(s.contains("EINVAL"), "{s}");
        assert_eq!(e.errno(), libc::EINVAL);
    }

    #[test]
    fn getcpu_reports_an_online_cpu() {
        let (cpu, node) = getcpu().unwrap();
        let online = std::thread::available_parallelism().map_or(1, |n| n.get());
        // A CPU number may exceed the count of usable CPUs under a cpuset, but
        // node 0 exists on every machine this runs on.
        assert!(cpu < 4096 && node < 1024, "cpu {cpu} node {node} online {online}");
    }

    #[test]
    fn mems_allowed_holds_the_node_this_thread_runs_on() {
        let mut mask = [0u64; crate::MAX_NODES / 64];
        mems_allowed(&mut mask).unwrap();
        let (_, node) = getcpu().unwrap();
        assert!(mask[node / 64] & (1 << (node % 64)) != 0, "node {node} not in {mask:x?}");
    }

    #[test]
    fn read_file_reads_without_allocating_and_names_a_missing_file() {
        let mut buf = [0u8; 64];
        let n = read_file(c"/proc/self/status", &mut buf).unwrap();
        assert_eq!(n, 64);
        assert!(buf.starts_with(b"Name:"), "{:?}", &buf[..n]);
        let e = read_file(c"/nonexistent/skelaff", &mut buf).unwrap_err();
        assert_eq!((e.call(), e.errno()), ("open", libc::ENOENT));
    }

    #[test]
    fn move_pages_rejects_mismatched_lengths() {
        let mut status = [0; 1];
        let e = move_pages(&[], None, &mut status, 0).unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL);
    }

    #[test]
    fn mapping_round_trip_and_query() {
        let ps = page_size();
        let p = mmap_anonymous(4 * ps, 0).unwrap();
        // SAFETY: p is a fresh 4-page mapping owned here.
        unsafe { p.as_ptr().write(1) };
        let pages: Vec<*const u8> = (0..4).map(|i| p.as_ptr().wrapping_add(i * ps) as *const u8).collect();
        let mut status = [0; 4];
        move_pages(&pages, None, &mut status, 0).unwrap();
        assert!(status[0] >= 0, "touched page must be resident: {status:?}");
        for s in &status[1..] {
            assert!(*s == -libc::ENOENT || *s == -libc::EFAULT, "untouched page: {status:?}");
        }
        // SAFETY: we own the mapping and drop the pointer afterwards.
        unsafe { munmap(p, 4 * ps).unwrap() };
    }
}
