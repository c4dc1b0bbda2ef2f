//! The side-by-side harness end to end, on STAMP's simulator inputs: it
//! builds STAMP's C programs (sequential and on TinySTM), runs both sides
//! once at 1 and 2 threads, and every self-check passes.
//!
//! It needs STAMP's and TinySTM's sources ($STAMP_SRC and $TINYSTM_SRC, or
//! `peers/stamp` and `peers/tinystm` beside an ancestor of the workspace)
//! and skelaff's debug examples (built by `cargo test --workspace`); it is
//! skipped, saying so, when either is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

fn sources_present() -> bool {
    if std::env::var_os("STAMP_SRC").is_some() && std::env::var_os("TINYSTM_SRC").is_some() {
        return true;
    }
    root()
        .ancestors()
        .any(|a| a.join("peers/stamp/lib/tm.h").is_file() && a.join("peers/tinystm/include/stm.h").is_file())
}

#[test]
fn simulator_inputs_side_by_side() {
    if !sources_present() {
        eprintln!("skipped: no STAMP and TinySTM sources (set STAMP_SRC and TINYSTM_SRC to run the comparison)");
        return;
    }
    let bin = root().join("target/debug/examples");
    let apps = ["vacation", "kmeans", "intruder", "genome", "labyrinth", "yada"];
    if let Some(missing) = apps.iter().find(|a| !bin.join(a).is_file()) {
        eprintln!(
            "skipped: {} is not built (`cargo test --workspace` builds the examples)",
            bin.join(missing).display()
        );
        return;
    }
    let xtask = env!("CARGO_BIN_EXE_xtask");
    let build = Command::new(xtask).args(["stamp-vs-c", "build", "--skelaff-bin"]).arg(&bin).output().unwrap();
    assert!(build.status.success(), "{}", String::from_utf8_lossy(&build.stderr));
    let out = Command::new(xtask)
        .args(["stamp-vs-c", "run", "--small", "--rounds", "1", "--threads", "2", "--json", "--skelaff-bin"])
        .arg(&bin)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let samples = json["samples"].as_array().unwrap();
    // 8 workloads x 2 sides x (sequential + 2 thread counts).
    assert_eq!(samples.len(), 8 * 2 * 3, "{stdout}");
    assert!(samples.iter().all(|s| s["check_passed"] == true && s["seconds"].as_f64().unwrap() >= 0.0));
    assert!(stdout.contains("| yada | 1 |"), "{stdout}");
}
