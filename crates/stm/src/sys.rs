//! The crate's system calls (one): `membarrier(2)`, wrapped to return a
//! typed error naming the call and its errno.
//!
//! `MEMBARRIER_CMD_PRIVATE_EXPEDITED` makes every running thread of this
//! process execute a full memory barrier before the call returns. That is
//! the heavy half of an asymmetric fence: threads that pair with it need
//! only a compiler fence (see the registry's docs).

use std::fmt;

/// A system call that failed: its name and errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SysError {
    /// The call.
    pub(crate) call: &'static str,
    /// Its errno.
    pub(crate) errno: i32,
}

impl fmt::Display for SysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.call, std::io::Error::from_raw_os_error(self.errno))
    }
}

/// `membarrier` commands (linux/membarrier.h).
const CMD_QUERY: libc::c_int = 0;
const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier(cmd: libc::c_int, call: &'static str) -> Result<libc::c_long, SysError> {
    // SAFETY: membarrier takes two integers (a command and flags, 0) and
    // touches no memory of ours; any command is safe to ask for.
    let r = unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_int) };
    if r < 0 {
        Err(SysError { call, errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0) })
    } else {
        Ok(r)
    }
}

/// Registers this process for expedited private barriers, if the kernel
/// offers them (Linux 4.14 and later).
pub(crate) fn membarrier_register() -> Result<(), SysError> {
    let offered = membarrier(CMD_QUERY, "membarrier(QUERY)")?;
    if offered & libc::c_long::from(CMD_PRIVATE_EXPEDITED) == 0 {
        return Err(SysError { call: "membarrier(QUERY): no PRIVATE_EXPEDITED", errno: libc::ENOSYS });
    }
    membarrier(CMD_REGISTER_PRIVATE_EXPEDITED, "membarrier(REGISTER_PRIVATE_EXPEDITED)").map(drop)
}

/// A full memory barrier on every running thread of this process
/// (registered with [`membarrier_register`] first).
pub(crate) fn membarrier_all() -> Result<(), SysError> {
    membarrier(CMD_PRIVATE_EXPEDITED, "membarrier(PRIVATE_EXPEDITED)").map(drop)
}
