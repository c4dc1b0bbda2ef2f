//! xtask's command line refuses what it cannot run with an error that names
//! the argument and what is allowed, before it builds or boots anything.
//!
//! Besides, this test makes `cargo test --workspace` build xtask's binary
//! (`CARGO_BIN_EXE_xtask`) with the features of the workspace's test build,
//! which the test command then starts directly for the emulated machines:
//! `cargo xtask` resolves the features of xtask's dependencies for xtask
//! alone and would compile a third of the workspace again.

use std::process::{Command, Output};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).output().expect("xtask starts")
}

/// Runs xtask, which must fail, and returns what it printed on stderr.
fn fails(args: &[&str]) -> String {
    let out = xtask(args);
    assert!(!out.status.success(), "xtask {args:?} succeeded: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(1), "xtask {args:?} should exit with 1, not {:?}", out.status);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_unknown_task_lists_the_tasks() {
    let e = fails(&["numa-mv"]);
    assert!(e.contains("unknown task `numa-mv`") && e.contains("numa-vm, stamp-vs-c"), "{e}");
}

#[test]
fn numa_vm_arguments_are_checked_before_anything_is_built() {
    let e = fails(&["numa-vm", "--timeout", "0"]);
    assert!(e.contains("--timeout") && e.contains("at least 1 second"), "{e}");
    let e = fails(&["numa-vm", "--timeout", "ten"]);
    assert!(e.contains("`ten` is not a number of seconds"), "{e}");
    let e = fails(&["numa-vm", "--topology", "0x3"]);
    assert!(e.contains("--topology 0x3") && e.contains("numa16, numa32"), "{e}");
    let e = fails(&["numa-vm", "--features"]);
    assert!(e.contains("--features needs a list"), "{e}");
    let e = fails(&["numa-vm", "--stamp-sweep=Yada"]);
    assert!(e.contains("--stamp-sweep=APP"), "{e}");
    let e = fails(&["numa-vm", "--fast"]);
    assert!(e.contains("unknown argument `--fast`") && e.contains("--only TEST"), "{e}");
}

#[test]
fn import_cycles_moved_to_its_own_package() {
    let e = fails(&["import-cycles"]);
    assert!(e.contains("cargo import-cycles"), "{e}");
}

#[test]
fn help_names_every_task() {
    let out = xtask(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for task in ["numa-vm", "stamp-vs-c"] {
        assert!(text.contains(&format!("cargo xtask {task}")), "{text}");
    }
}
