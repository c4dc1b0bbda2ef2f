//! Records the compiler's version: instruction counts belong to the code a
//! compiler made, so the baseline file says which one, and `check` says
//! when the running binary was built by another.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown".to_owned(), |v| v.trim().to_owned());
    println!("cargo:rustc-env=COSTS_RUSTC={version}");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
