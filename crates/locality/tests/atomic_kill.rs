//! A writer killed at random points leaves its output file absent, or
//! holding one complete generation of content, never a truncated one.
//!
//! The test runs this binary again as a child (its `writer` test, told so by
//! `SKELAFF_ATOMIC_WRITER`), which writes a file of several MiB over and
//! over through `atomic_file::write`; the parent SIGKILLs it after a random
//! delay and checks the file. With `std::fs::write` in the writer instead,
//! the first kill or so finds a truncated file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use skelaff_locality::atomic_file;

const ENV: &str = "SKELAFF_ATOMIC_WRITER";
/// Bytes of one generation's body: large enough that a kill often lands
/// inside a write (with `std::fs::write`, most kills did).
const BODY: usize = 1 << 20;
const KILLS: usize = 12;

/// Generation `g`: a header line naming it and its length, a body that
/// depends on `g`, and an end line.
fn content(g: u64) -> Vec<u8> {
    let mut v = format!("generation {g} body {BODY}\n").into_bytes();
    v.resize(v.len() + BODY, g as u8);
    v.extend_from_slice(b"end\n");
    v
}

/// Checks that `bytes` is one complete generation; returns it.
fn check(bytes: &[u8]) -> Result<u64, String> {
    let nl = bytes.iter().position(|&b| b == b'\n').ok_or("no header line")?;
    let header = std::str::from_utf8(&bytes[..nl]).map_err(|e| e.to_string())?;
    let g: u64 = header
        .strip_prefix("generation ")
        .and_then(|r| r.split(' ').next())
        .and_then(|g| g.parse().ok())
        .ok_or_else(|| format!("bad header `{header}`"))?;
    if bytes != content(g) {
        return Err(format!("generation {g}: {} bytes, a complete one has {}", bytes.len(), content(g).len()));
    }
    Ok(g)
}

/// The child: writes generation after generation until killed.
#[test]
fn writer() {
    let Some(path) = std::env::var_os(ENV) else { return };
    let path = PathBuf::from(path);
    for g in 1.. {
        atomic_file::write(&path, content(g)).unwrap();
    }
}

fn spawn(path: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "writer", "--test-threads=1", "--quiet"])
        .env(ENV, path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_writer_leaves_a_complete_file() {
    let dir = std::env::temp_dir().join(format!("skelaff-atomic-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.bin");
    // A small xorshift seeded from the clock: different kill points each run.
    let mut x = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut seen = Vec::new();
    for kill in 0..KILLS {
        let mut child = spawn(&path);
        std::thread::sleep(Duration::from_millis(10 + rand() % 90));
        child.kill().unwrap();
        child.wait().unwrap();
        match std::fs::read(&path) {
            Ok(bytes) => {
                let g =
                    check(&bytes).unwrap_or_else(|e| panic!("kill {kill}: {} is not complete: {e}", path.display()));
                seen.push(g);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => seen.push(0),
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
    // Killed writers leave their temporary files; nothing else is in the directory.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(name == "out.bin" || name.starts_with(".out.bin.tmp-"), "unexpected file {name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    eprintln!("generations found after each kill: {seen:?}");
}
