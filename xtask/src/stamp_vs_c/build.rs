//! Building both sides: TinySTM, STAMP's sequential and STM programs
//! (on TinySTM, through this harness's binding `c/stm.h`), and skelaff's
//! example binaries. Everything is built in copies under the work
//! directory; the source trees are only read.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use super::workloads::APPS;

/// The binding of STAMP's STM macros to TinySTM (installed as `<stm.h>`).
const BINDING: &str = include_str!("../../c/stm.h");

/// The two source trees.
#[derive(Debug, Clone)]
pub(crate) struct Sources {
    pub(crate) stamp: PathBuf,
    pub(crate) tinystm: PathBuf,
}

impl Sources {
    /// Checks that the trees look like STAMP's and TinySTM's.
    pub(crate) fn validate(&self) -> Result<()> {
        if !self.stamp.join("lib/tm.h").is_file() || !self.stamp.join("common/Makefile.stm").is_file() {
            bail!(
                "{}: not a STAMP source tree (expected lib/tm.h and common/Makefile.stm; e.g. github.com/kozyraki/stamp)",
                self.stamp.display()
            );
        }
        if !self.tinystm.join("include/stm.h").is_file() || !self.tinystm.join("Makefile").is_file() {
            bail!(
                "{}: not a TinySTM source tree (expected include/stm.h and a Makefile; e.g. \
                 github.com/patrickmarlier/tinystm 1.0.6)",
                self.tinystm.display()
            );
        }
        Ok(())
    }

    /// The trees named by `STAMP_SRC` and `TINYSTM_SRC`, else `peers/stamp`
    /// and `peers/tinystm` in the nearest ancestor of `root` that has them.
    pub(crate) fn find(root: &Path) -> Option<Sources> {
        if let (Some(s), Some(t)) = (std::env::var_os("STAMP_SRC"), std::env::var_os("TINYSTM_SRC")) {
            return Some(Sources { stamp: s.into(), tinystm: t.into() });
        }
        root.ancestors().find_map(|a| {
            let s = Sources { stamp: a.join("peers/stamp"), tinystm: a.join("peers/tinystm") };
            s.validate().is_ok().then_some(s)
        })
    }
}

/// Runs `cmd`, failing with its output's tail.
pub(crate) fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd.output().with_context(|| format!("{what}: cannot start {:?}", cmd.get_program()))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr) + String::from_utf8_lossy(&out.stdout);
    let tail: Vec<&str> = text.lines().filter(|l| !l.contains("warning")).rev().take(15).collect();
    bail!("{what} failed ({}):\n{}", out.status, tail.into_iter().rev().collect::<Vec<_>>().join("\n"))
}

/// Copies the tree `from` to `to` unless `to` exists.
fn copy_once(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        return Ok(());
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    run(Command::new("cp").arg("-a").arg(from).arg(to), &format!("copying {}", from.display()))
}

/// The C programs built: `<dir>/<app>/<app>/<app>` for each variant (each
/// application in a copy of its own: STAMP builds its library objects in
/// `../lib` with each application's own defines, e.g. `LIST_NO_DUPLICATES`,
/// so applications cannot share one).
#[derive(Debug, Clone)]
pub(crate) struct CPrograms {
    pub(crate) seq: PathBuf,
    pub(crate) stm: PathBuf,
}

impl CPrograms {
    /// Where [`build_c`] puts them under `work`.
    pub(crate) fn at(work: &Path) -> CPrograms {
        CPrograms { seq: work.join("stamp-seq"), stm: work.join("stamp-stm") }
    }

    /// The binary of `app` (`stm`: the TinySTM build).
    pub(crate) fn binary(&self, app: &str, stm: bool) -> PathBuf {
        (if stm { &self.stm } else { &self.seq }).join(app).join(app).join(app)
    }
}

/// TinySTM's Makefile line that leaves epoch-based reclamation out, and
/// the one that puts it in.
const NO_EPOCH_GC: &str = "DEFINES += -UEPOCH_GC";
const EPOCH_GC: &str = "DEFINES += -DEPOCH_GC";

/// Turns on TinySTM's epoch-based reclamation (`EPOCH_GC`) in the copy's
/// Makefile. Without it, `stm_free` hands memory back to `free` when the
/// freeing transaction commits, while a concurrent transaction may still
/// be reading it: STAMP's yada, which frees mesh elements in transactions,
/// crashed with a segmentation fault in one of three 2-thread runs on its
/// standard input. Returns whether the Makefile changed (then everything
/// built against the old library must be rebuilt).
fn enable_epoch_gc(tinystm: &Path) -> Result<bool> {
    let makefile = tinystm.join("Makefile");
    let text = std::fs::read_to_string(&makefile).with_context(|| format!("reading {}", makefile.display()))?;
    if text.lines().any(|l| l.trim() == EPOCH_GC) {
        return Ok(false);
    }
    if !text.lines().any(|l| l.trim() == NO_EPOCH_GC) {
        bail!("{}: no `{NO_EPOCH_GC}` line to turn into `{EPOCH_GC}` (is this TinySTM 1.0.x?)", makefile.display());
    }
    let patched: Vec<&str> = text.lines().map(|l| if l.trim() == NO_EPOCH_GC { EPOCH_GC } else { l }).collect();
    std::fs::write(&makefile, patched.join("\n") + "\n").with_context(|| format!("writing {}", makefile.display()))?;
    Ok(true)
}

/// Builds TinySTM (its default design, as the SkelAff paper configured it:
/// encounter-time locking, write-back, suicide contention manager; with
/// its epoch-based reclamation on, see [`enable_epoch_gc`]) and STAMP's
/// sequential and STM programs of [`APPS`] under `work`.
pub(crate) fn build_c(src: &Sources, work: &Path) -> Result<CPrograms> {
    src.validate()?;
    let tinystm = work.join("tinystm");
    copy_once(&src.tinystm, &tinystm)?;
    let progs = CPrograms::at(work);
    if enable_epoch_gc(&tinystm)? {
        run(Command::new("make").arg("clean").current_dir(&tinystm), "cleaning TinySTM")?;
        // STAMP's Makefiles do not relink a program when the library changes.
        for app in APPS {
            let _ = std::fs::remove_file(progs.binary(app, true));
        }
    }
    run(Command::new("make").arg("-j2").current_dir(&tinystm), "building TinySTM")?;
    if !tinystm.join("lib/libstm.a").is_file() {
        bail!("building TinySTM made no {}", tinystm.join("lib/libstm.a").display());
    }
    let binding = work.join("binding");
    std::fs::create_dir_all(&binding).with_context(|| format!("creating {}", binding.display()))?;
    std::fs::write(binding.join("stm.h"), BINDING).context("writing the binding")?;
    let link = binding.join("tinystm");
    if !link.exists() {
        std::os::unix::fs::symlink(tinystm.join("include"), &link)
            .with_context(|| format!("linking {}", link.display()))?;
    }
    for (dir, stm) in [(&progs.seq, false), (&progs.stm, true)] {
        for app in APPS {
            for part in ["lib", "common", app] {
                copy_once(&src.stamp.join(part), &dir.join(app).join(part))?;
            }
            let mut make = Command::new("make");
            make.arg("-j2").current_dir(dir.join(app).join(app));
            // GCC 10 and later default to -fno-common; STAMP defines some
            // globals in headers. The Makefiles append to CFLAGS from the
            // environment.
            make.env("CFLAGS", "-fcommon");
            if stm {
                make.arg("-f").arg("Makefile.stm").arg(format!("STM={}", binding.display()));
                make.arg(format!("LDFLAGS=-L{}", tinystm.join("lib").display()));
                make.arg("LIBS=-lstm -lpthread -lm");
            } else {
                make.arg("-f").arg("Makefile.seq").arg("LIBS=-lpthread -lm");
            }
            let what = format!("building STAMP's {app} ({})", if stm { "STM on TinySTM" } else { "sequential" });
            run(&mut make, &what)?;
            if !progs.binary(app, stm).is_file() {
                bail!("{what} made no {}", progs.binary(app, stm).display());
            }
        }
    }
    Ok(progs)
}

/// Builds skelaff's example binaries of [`APPS`] in release mode (from the
/// workspace at `root`), with the umbrella's feature `stamp` they require.
pub(crate) fn build_skelaff(root: &Path) -> Result<PathBuf> {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.current_dir(root).args(["build", "--release", "--quiet", "--features", "stamp"]);
    for app in APPS {
        cargo.args(["--example", app]);
    }
    run(&mut cargo, "building skelaff's examples")?;
    Ok(root.join("target/release/examples"))
}
