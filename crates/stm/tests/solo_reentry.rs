//! A global allocator that calls `solo::give_back` while the STM grows a
//! solo attempt's undo log: the STM aborts the process with a message
//! instead of making a second `&mut` to the log (see `UndoHandle` in
//! `runtime/solo.rs`). The allocator misbehaves only in a child process of
//! this test binary, where the test `child` runs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use skelaff_stm::solo;
use skelaff_stm::{Config, Solo, TVar, TxOps, atomically_with};

/// The system allocator, which calls `solo::give_back` on every
/// allocation of the calling thread while `MEDDLE` is set.
struct Meddling;

thread_local! {
    static MEDDLE: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: every call is forwarded to `System`; the meddling only calls a
// safe function of the STM (and does not allocate: the flag is cleared
// first, and `give_back` allocates nothing).
unsafe impl GlobalAlloc for Meddling {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if MEDDLE.with(|m| m.replace(false)) {
            solo::give_back();
        }
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Meddling = Meddling;

const CHILD_ENV: &str = "SKELAFF_STM_SOLO_REENTRY_CHILD";

/// In the child: a solo transaction writes words until its undo log must
/// grow, with the meddling switched on just before a write.
#[test]
fn child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let words: Vec<TVar<u64>> = (0..64).map(TVar::new).collect();
    let _gate = solo::enter().expect("the only thread that enters");
    atomically_with(&Config::new().mode::<Solo>(), |tx| {
        for w in &words {
            // The log's first growth, or a later one, allocates here.
            MEDDLE.with(|m| m.set(true));
            tx.write(w, 1)?;
        }
        MEDDLE.with(|m| m.set(false));
        Ok(())
    });
    println!("the child finished without aborting");
}

#[test]
fn give_back_from_an_allocator_inside_an_undo_log_write_aborts_with_a_message() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args(["--exact", "child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, "1")
        .output()
        .expect("running the test binary again");
    let text = String::from_utf8_lossy(&out.stderr) + String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "the child did not abort:\n{text}");
    assert!(
        text.contains("solo::give_back was called while the STM was growing its undo log"),
        "the child failed for another reason:\n{text}"
    );
}
