//! Output files written atomically: into a temporary file beside the
//! destination, flushed to disk, then renamed over it. A run killed at any
//! point leaves the destination as it was (absent, or the last complete
//! result) or holding the new content complete, never a truncated file.
//!
//! Every output file of skelaff goes through here: profiles and placement
//! plans (this crate), and the CLI's `experiment` and `locality` results.
//! It lives in this crate because it is the lowest one that every writer
//! depends on.
//!
//! A kill leaves the temporary file behind (`.NAME.tmp-PID-N` beside
//! `NAME`); a write that fails or is dropped without [`AtomicFile::commit`]
//! removes it.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file being written to take the place of `path` in one step.
///
/// Write to it (it is buffered), then [`commit`](AtomicFile::commit). Dropped
/// without a commit, it removes its temporary file and leaves `path` alone.
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// use skelaff_locality::atomic_file::AtomicFile;
///
/// let dir = std::env::temp_dir().join(format!("atomic-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("out.csv");
/// std::fs::write(&path, "old\n")?;
/// let mut f = AtomicFile::create(&path)?;
/// writeln!(f, "new")?;
/// assert_eq!(std::fs::read_to_string(&path)?, "old\n"); // not yet
/// f.commit()?;
/// assert_eq!(std::fs::read_to_string(&path)?, "new\n");
/// assert_eq!(std::fs::read_dir(&dir)?.count(), 1); // no temporary file left
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    tmp: PathBuf,
    /// `None` once committed.
    file: Option<BufWriter<File>>,
}

/// Tells the temporary files of one process apart.
static NEXT: AtomicU64 = AtomicU64::new(0);

impl AtomicFile {
    /// Creates the temporary file beside `path` (same directory, so the
    /// rename cannot cross file systems).
    ///
    /// # Errors
    ///
    /// The I/O error of creating it (e.g. the directory does not exist or
    /// is not writable), with the temporary file's path in the message.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("{}: not a file name", path.display()))
        })?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".tmp-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        let tmp = path.with_file_name(tmp_name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", tmp.display())))?;
        Ok(AtomicFile { path: path.to_owned(), tmp, file: Some(BufWriter::new(file)) })
    }

    /// Flushes the content to disk (`fsync`), renames the temporary file
    /// over the destination, and flushes the directory so that the rename
    /// itself survives a crash.
    ///
    /// # Errors
    ///
    /// The I/O error of the flush, the sync or the rename; the destination
    /// is then unchanged and the temporary file removed.
    pub fn commit(mut self) -> io::Result<()> {
        let Some(w) = self.file.take() else { return Ok(()) };
        let done = (|| {
            let file = w.into_inner().map_err(io::IntoInnerError::into_error)?;
            file.sync_all()?;
            drop(file);
            std::fs::rename(&self.tmp, &self.path)
        })();
        if let Err(e) = done {
            let _ = std::fs::remove_file(&self.tmp);
            return Err(io::Error::new(e.kind(), format!("writing {}: {e}", self.path.display())));
        }
        // The rename is done; a directory that cannot be synced (some file
        // systems refuse) leaves a complete file either way.
        if let Some(dir) = self.path.parent() {
            let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }

    /// The destination.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // `file` is `None` only inside `commit` and `drop`, which own `self`.
        self.file.as_mut().map_or_else(|| Err(io::Error::other("write after commit")), |f| f.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), BufWriter::flush)
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `contents` to `path` atomically: [`std::fs::write`], but a reader
/// (or a later run) sees the old file or the new one, never part of it.
///
/// # Errors
///
/// As [`AtomicFile::create`] and [`AtomicFile::commit`].
pub fn write(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(contents.as_ref())?;
    f.commit()
}
