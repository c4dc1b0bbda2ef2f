//! The harness of skelaff's tests that need more than `cargo test` gives
//! them: the placement tests that run inside the emulated NUMA machine
//! ([`guest`]: the guest's expected shape and a small check runner), and
//! tests that must run code in a forked child and catch it hanging
//! ([`child`]); and the kernel's automatic NUMA balancing for the guest
//! tests that cross-check against its hinting faults ([`balancing`]). Not published: the `numa_vm*` test targets, the fork test
//! and `xtask` use it as a (dev-)dependency.

pub mod balancing;
pub mod child;
pub mod guest;
pub mod peak;
mod sys;

pub use child::{ChildExit, run_in_child};
pub use guest::{GuestSpec, GuestSpecError, MisplacedPages, Suite, expect_no_mismatches, misplaced_pages};
