//! xtask's command line refuses what it cannot run with an error that names
//! the argument and what is allowed, before it builds or boots anything:
//! clap's usage errors, exit status 2, with nothing on standard output (a
//! task that started would have printed `numa-vm: building ...` there).
//! A task that fails exits with 1 and prints its error with its causes.
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

/// Runs xtask, which must exit with `code` having printed nothing on
/// stdout, and returns what it printed on stderr.
fn fails_with(code: i32, args: &[&str]) -> String {
    let out = xtask(args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(code), "xtask {args:?} should exit with {code}, not {:?}: {stdout}", out.status);
    assert!(stdout.is_empty(), "xtask {args:?} started its work: {stdout}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A usage error: refused by the parser (exit status 2) before anything ran.
fn refused(args: &[&str]) -> String {
    fails_with(2, args)
}

#[test]
fn an_unknown_task_lists_the_tasks() {
    let e = refused(&["numa-mv"]);
    assert!(e.contains("'numa-mv'") && e.contains("the tasks are: numa-vm, stamp-vs-c"), "{e}");
}

#[test]
fn numa_vm_arguments_are_checked_before_anything_is_built() {
    let e = refused(&["numa-vm", "--timeout", "0"]);
    assert!(e.contains("--timeout") && e.contains("at least 1 second"), "{e}");
    let e = refused(&["numa-vm", "--timeout", "ten"]);
    assert!(e.contains("--timeout") && e.contains("`ten` is not a number of seconds"), "{e}");
    let e = refused(&["numa-vm", "--topology", "0x3"]);
    assert!(e.contains("'0x3' for '--topology") && e.contains("NODESxCPUS") && e.contains("numa16, numa32"), "{e}");
    let e = refused(&["numa-vm", "--topology", "numa32/8x2"]);
    assert!(e.contains("--topology") && e.contains("keeps its 4 nodes"), "{e}");
    let e = refused(&["numa-vm", "--features"]);
    assert!(e.contains("--features <LIST>") && e.contains("a value is required"), "{e}");
    let e = refused(&["numa-vm", "--only"]);
    assert!(e.contains("--only <TEST>") && e.contains("a value is required"), "{e}");
    let e = refused(&["numa-vm", "--stamp-sweep=Yada"]);
    assert!(e.contains("'Yada' for '--stamp-sweep") && e.contains("--stamp-sweep=APP"), "{e}");
    // The list needs `=`: a separate word is not taken as its value.
    let e = refused(&["numa-vm", "--stamp-sweep", "yada"]);
    assert!(e.contains("'yada'"), "{e}");
    // An unknown argument: the usage shows every option allowed.
    let e = refused(&["numa-vm", "--fast"]);
    assert!(e.contains("'--fast'") && e.contains("--topology SPEC") && e.contains("--only TEST"), "{e}");
}

#[test]
fn stamp_vs_c_arguments_are_checked_before_anything_is_built() {
    let e = refused(&["stamp-vs-c", "run", "--threads", "0"]);
    assert!(e.contains("--threads") && e.contains("1..=1024"), "{e}");
    let e = refused(&["stamp-vs-c", "compile"]);
    assert!(e.contains("'compile'"), "{e}");
}

#[test]
fn a_failing_task_exits_with_1_and_prints_its_error() {
    let e = fails_with(1, &["import-cycles"]);
    assert!(e.starts_with("xtask: ") && e.contains("run `cargo import-cycles`"), "{e}");
    let e = fails_with(1, &["stamp-vs-c", "table", "/nonexistent/stamp-vs-c.json"]);
    // The step, then its cause (the chain).
    assert!(e.contains("reading /nonexistent/stamp-vs-c.json: ") && e.contains("No such file"), "{e}");
}

#[test]
fn help_names_every_task() {
    for args in [&["--help"][..], &[]] {
        let out = xtask(args);
        assert!(out.status.success(), "xtask {args:?}: {:?}", out.status);
        let text = String::from_utf8_lossy(&out.stdout);
        for task in ["numa-vm", "stamp-vs-c"] {
            assert!(text.contains(&format!("cargo xtask {task}")), "{text}");
        }
    }
    // `all` takes the options of `build` and `run` (it panicked in debug
    // builds when both declared `--stamp`).
    let out = xtask(&["stamp-vs-c", "all", "--help"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for option in ["--stamp <STAMP>", "--tinystm <TINYSTM>", "--skelaff-bin", "--rounds", "--workloads"] {
        assert!(text.contains(option), "{option}: {text}");
    }
    let out = xtask(&["numa-vm", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for option in ["--topology <SPEC>", "--timeout <SECS>", "--stamp-sweep[=<APP,...>]", "--only <TEST>", "--features"]
    {
        assert!(text.contains(option), "{option}: {text}");
    }
}
