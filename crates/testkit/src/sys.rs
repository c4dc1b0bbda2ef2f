//! Raw system calls of the harness: the only module of this crate that
//! calls `libc`. Each returns an [`io::Error`] carrying the call's errno.

use std::io;

/// Which side of a `fork` the caller is on.
pub(crate) enum Forked {
    /// The new process.
    Child,
    /// The caller, with the child's process id.
    Parent(libc::pid_t),
}

/// How a child that ended did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Status {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signalled(i32),
}

/// `fork`.
///
/// # Safety
///
/// In the child of a multithreaded process only the calling thread exists:
/// the caller must make the child call only what is safe there
/// (async-signal-safe functions, and code meant to work after a `fork`),
/// and end it with [`exit_now`].
pub(crate) unsafe fn fork() -> io::Result<Forked> {
    // SAFETY: per the caller's contract.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// `waitpid(pid, WNOHANG)`: `Some` once the child ended, `None` while it runs.
pub(crate) fn try_wait(pid: libc::pid_t) -> io::Result<Option<Status>> {
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer; `pid` is our child.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    match r {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        _ if libc::WIFEXITED(status) => Ok(Some(Status::Exited(libc::WEXITSTATUS(status)))),
        _ if libc::WIFSIGNALED(status) => Ok(Some(Status::Signalled(libc::WTERMSIG(status)))),
        // Stopped or continued: still there.
        _ => Ok(None),
    }
}

/// `kill(pid, SIGKILL)`, then `waitpid` until it is gone (reaped).
pub(crate) fn kill_and_reap(pid: libc::pid_t) -> io::Result<()> {
    // SAFETY: sending a signal to our own child has no memory effects here.
    if unsafe { libc::kill(pid, libc::SIGKILL) } == -1 {
        return Err(io::Error::last_os_error());
    }
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer; `pid` is our child.
    if unsafe { libc::waitpid(pid, &mut status, 0) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `_exit`: ends the process at once, without running `atexit` handlers or
/// flushing stdio (which a forked child must not touch).
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` is async-signal-safe and never returns.
    unsafe { libc::_exit(code) }
}
