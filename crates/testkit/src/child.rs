//! Runs a closure in a forked child and waits for it within a time bound,
//! so that a test of fork safety fails (rather than hangs) when the child
//! deadlocks.

use std::fmt;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::sys::{self, Forked, Status};

/// How a child run by [`run_in_child`] ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ChildExit {
    /// It exited with this code (101 when the closure panicked).
    Exited(i32),
    /// A signal killed it.
    Signalled(i32),
    /// It was still running when the bound passed; it was killed.
    Hung {
        /// The bound it exceeded.
        bound: Duration,
    },
}

impl fmt::Display for ChildExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChildExit::Exited(code) => write!(f, "exited with code {code}"),
            ChildExit::Signalled(sig) => write!(f, "was killed by signal {sig}"),
            ChildExit::Hung { bound } => write!(f, "was still running after {bound:?} (hung) and was killed"),
        }
    }
}

/// Forks; the child runs `f` and exits with the code it returns (101 if it
/// panics), without running exit handlers. The parent waits until the child
/// ends or `bound` passes, kills it in that case, and reports which.
///
/// # Errors
///
/// A `fork`, `waitpid` or `kill` the kernel refused.
///
/// # Safety
///
/// The child is a copy of this process with only the calling thread in
/// it: `f` may call only what is safe there — async-signal-safe functions,
/// and the code whose fork safety the test checks. In particular it must
/// not print (another thread may have held the stdout lock at the fork).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use skelaff_testkit::{ChildExit, run_in_child};
///
/// // SAFETY: the child only computes and returns.
/// let exit = unsafe { run_in_child(Duration::from_secs(10), || 6 * 7) }?;
/// assert_eq!(exit, ChildExit::Exited(42));
/// # Ok::<(), std::io::Error>(())
/// ```
pub unsafe fn run_in_child(bound: Duration, f: impl FnOnce() -> i32) -> io::Result<ChildExit> {
    // SAFETY: the child runs only `f` (the caller's contract) and `_exit`.
    let pid = match unsafe { sys::fork() }? {
        Forked::Child => {
            let code = panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or(101);
            sys::exit_now(code)
        }
        Forked::Parent(pid) => pid,
    };
    let start = Instant::now();
    loop {
        match sys::try_wait(pid)? {
            Some(Status::Exited(code)) => return Ok(ChildExit::Exited(code)),
            Some(Status::Signalled(sig)) => return Ok(ChildExit::Signalled(sig)),
            None if start.elapsed() >= bound => {
                sys::kill_and_reap(pid)?;
                return Ok(ChildExit::Hung { bound });
            }
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_that_spins_is_reported_hung_within_the_bound() {
        let bound = Duration::from_millis(200);
        let start = Instant::now();
        // SAFETY: the child only spins.
        let exit = unsafe {
            run_in_child(bound, || {
                loop {
                    std::hint::spin_loop();
                }
            })
        }
        .unwrap();
        assert_eq!(exit, ChildExit::Hung { bound });
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn exit_codes_and_panics_come_back() {
        let bound = Duration::from_secs(30);
        // SAFETY: the children only return.
        unsafe {
            assert_eq!(run_in_child(bound, || 0).unwrap(), ChildExit::Exited(0));
            assert_eq!(run_in_child(bound, || 3).unwrap(), ChildExit::Exited(3));
        }
        assert!(ChildExit::Hung { bound }.to_string().contains("hung"));
    }
}
