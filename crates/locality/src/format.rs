//! The profile file: a text header naming the machine, then fixed-size
//! binary records.
//!
//! ```text
//! SKELAFF-PROFILE 1\n
//! {"machine":{...},"app":"kmeans",...,"records":N}\n
//! N records of 24 bytes, little-endian:
//!   page u64 | time_ns u64 | thread u16 | node u16 | home u16 (0xffff: none) | kind u8 (0 read, 1 write) | 0u8
//! ```
//!
//! Reading checks everything a damaged or foreign file could get wrong: the
//! first line, the version, the header's JSON and machine, the record count
//! against the bytes present (truncated, or bytes left over), and each
//! record's fields. [`Profile::load_for`] also refuses a profile from another
//! machine than the one asked for.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::atomic_file::AtomicFile;
use crate::error::{Error, RecordError, Result};
use crate::machine::Machine;
use crate::profile::{AccessKind, PageAccess, Profile, ProfileHeader};

/// The first line's word.
const MAGIC: &str = "SKELAFF-PROFILE";
/// The format version this build writes and reads.
const VERSION: u32 = 1;
/// Bytes per record.
pub const RECORD_BYTES: usize = 24;
/// `home` of an access whose page's node is unknown.
const NO_HOME: u16 = u16::MAX;
/// The most records reserved before they are read (2 MiB); beyond, the
/// vector grows with the records actually found.
pub(crate) const RESERVE_AT_MOST: u64 = 1 << 16;
/// The longest header line read (a 64-node matrix is about 12 KiB).
const MAX_HEADER: u64 = 1 << 20;

#[derive(Serialize, Deserialize)]
struct FileHeader {
    #[serde(flatten)]
    header: ProfileHeader,
    records: u64,
}

fn encode(a: &PageAccess) -> [u8; RECORD_BYTES] {
    let mut r = [0u8; RECORD_BYTES];
    r[0..8].copy_from_slice(&a.page.to_le_bytes());
    r[8..16].copy_from_slice(&a.time_ns.to_le_bytes());
    r[16..18].copy_from_slice(&a.thread.to_le_bytes());
    r[18..20].copy_from_slice(&a.node.to_le_bytes());
    r[20..22].copy_from_slice(&a.home.unwrap_or(NO_HOME).to_le_bytes());
    r[22] = match a.kind {
        AccessKind::Read => 0,
        AccessKind::Write => 1,
    };
    r
}

fn decode(r: &[u8; RECORD_BYTES]) -> std::result::Result<PageAccess, RecordError> {
    let u64_at =
        |i: usize| u64::from_le_bytes([r[i], r[i + 1], r[i + 2], r[i + 3], r[i + 4], r[i + 5], r[i + 6], r[i + 7]]);
    let u16_at = |i: usize| u16::from_le_bytes([r[i], r[i + 1]]);
    let kind = match r[22] {
        0 => AccessKind::Read,
        1 => AccessKind::Write,
        k => return Err(RecordError::Kind(k)),
    };
    if r[23] != 0 {
        return Err(RecordError::Reserved(r[23]));
    }
    let home = u16_at(20);
    Ok(PageAccess {
        page: u64_at(0),
        time_ns: u64_at(8),
        thread: u16_at(16),
        node: u16_at(18),
        home: (home != NO_HOME).then_some(home),
        kind,
    })
}

/// Reads up to `limit` bytes through the next newline (without it).
fn read_line(r: &mut impl BufRead, limit: u64, what: &str) -> Result<Vec<u8>> {
    let mut line = Vec::new();
    r.by_ref().take(limit).read_until(b'\n', &mut line).map_err(Error::io(what))?;
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    Ok(line)
}

/// Reads into `buf` until it is full or the input ends; returns the bytes read.
fn fill(r: &mut impl Read, buf: &mut [u8], what: &str) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(what)(e)),
        }
    }
    Ok(got)
}

impl Profile {
    /// Writes the profile in the file format above.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when writing fails.
    pub fn write_to(&self, w: impl Write) -> Result<()> {
        let mut w = BufWriter::new(w);
        let what = "writing a profile";
        let file = FileHeader { header: self.header().clone(), records: self.accesses().len() as u64 };
        let json =
            serde_json::to_string(&file).map_err(|e| Error::BadHeader { what: what.into(), reason: e.to_string() })?;
        writeln!(w, "{MAGIC} {VERSION}\n{json}").map_err(Error::io(what))?;
        for a in self.accesses() {
            w.write_all(&encode(a)).map_err(Error::io(what))?;
        }
        w.flush().map_err(Error::io(what))
    }

    /// Reads a profile; `what` names the source in errors (e.g. its path).
    ///
    /// # Errors
    ///
    /// [`Error::NotAFile`], [`Error::UnsupportedVersion`],
    /// [`Error::BadHeader`], [`Error::Truncated`], [`Error::TrailingData`],
    /// [`Error::BadRecord`], [`Error::BadRecordField`] or [`Error::Io`], each
    /// saying what was found.
    pub fn read_from(r: impl Read, what: &str) -> Result<Profile> {
        let mut r = BufReader::new(r);
        let first = read_line(&mut r, 64, what)?;
        let first = String::from_utf8_lossy(&first);
        let Some(version) = first.strip_prefix(MAGIC).and_then(|v| v.strip_prefix(' ')) else {
            let found: String = first.chars().take(24).collect();
            return Err(Error::NotAFile { what: what.into(), kind: "profile", found, expected: "SKELAFF-PROFILE 1" });
        };
        if version.trim() != VERSION.to_string() {
            return Err(Error::UnsupportedVersion {
                what: what.into(),
                found: version.trim().into(),
                supported: VERSION,
            });
        }
        let line = read_line(&mut r, MAX_HEADER, what)?;
        let file: FileHeader = serde_json::from_slice(&line).map_err(|e| Error::BadHeader {
            what: what.into(),
            reason: if line.is_empty() { "the file ends after its first line".to_owned() } else { e.to_string() },
        })?;
        let (header, expected) = (file.header, file.records);
        let nodes = header.machine.nodes();
        // Never trust the count for an allocation: a damaged header could say anything.
        let mut accesses = Vec::with_capacity(expected.min(RESERVE_AT_MOST) as usize);
        let mut buf = [0u8; RECORD_BYTES];
        for index in 0..expected {
            let got = fill(&mut r, &mut buf, what)?;
            if got < RECORD_BYTES {
                return Err(Error::Truncated { what: what.into(), expected, found: index, partial: got });
            }
            let a = decode(&buf).map_err(|field| Error::BadRecordField { what: what.into(), index, field })?;
            let bad = |reason: String| Error::BadRecord { what: what.into(), index, reason };
            if a.thread >= header.threads {
                return Err(bad(format!("thread {} but the header says {} threads", a.thread, header.threads)));
            }
            if usize::from(a.node) >= nodes || a.home.is_some_and(|h| usize::from(h) >= nodes) {
                return Err(bad(format!(
                    "node {} / home {:?} but {} has nodes 0-{}",
                    a.node,
                    a.home,
                    header.machine.name(),
                    nodes - 1
                )));
            }
            accesses.push(a);
        }
        let extra = io::copy(&mut r, &mut io::sink()).map_err(Error::io(what))?;
        if extra > 0 {
            return Err(Error::TrailingData { what: what.into(), records: expected, extra });
        }
        Profile::new(header, accesses)
    }

    /// Writes the profile to `path`, atomically (a run killed while saving
    /// leaves the previous file, not part of this one).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] naming the path.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut f = AtomicFile::create(path).map_err(Error::io(path.display()))?;
        self.write_to(&mut f).map_err(|e| match e {
            Error::Io { source, .. } => Error::Io { what: path.display().to_string(), source },
            e => e,
        })?;
        f.commit().map_err(Error::io(path.display()))
    }

    /// Reads the profile at `path`.
    ///
    /// # Errors
    ///
    /// As [`Profile::read_from`], naming the path.
    pub fn load(path: &Path) -> Result<Profile> {
        let f = File::open(path).map_err(Error::io(path.display()))?;
        Profile::read_from(f, &path.display().to_string())
    }

    /// Reads the profile at `path` and checks it was recorded on `machine`.
    ///
    /// # Errors
    ///
    /// As [`Profile::load`], and [`Error::MachineMismatch`] when the file
    /// names another machine (or the same name with other distances).
    pub fn load_for(path: &Path, machine: &Machine) -> Result<Profile> {
        let p = Profile::load(path)?;
        if p.machine() != machine {
            return Err(Error::MachineMismatch {
                what: path.display().to_string(),
                found: p.machine().to_string(),
                expected: machine.to_string(),
            });
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Attribution;

    fn sample() -> Profile {
        let mut h = ProfileHeader::new("numa16".parse().unwrap(), "kmeans", "bind", 3);
        h.seen = 640;
        h.attribution = Attribution::AtEnd;
        let accesses = vec![
            PageAccess::read(0x7f00_0000_1234, 0, 0, 5).at_home(0),
            PageAccess::write(0x10, 2, 7, 6).at_home(3),
            PageAccess::read(u64::MAX, 1, 1, u64::MAX),
        ];
        Profile::new(h, accesses).unwrap()
    }

    fn bytes(p: &Profile) -> Vec<u8> {
        let mut v = Vec::new();
        p.write_to(&mut v).unwrap();
        v
    }

    #[test]
    fn round_trips() {
        let p = sample();
        let v = bytes(&p);
        assert!(v.starts_with(b"SKELAFF-PROFILE 1\n{"));
        assert_eq!(Profile::read_from(&v[..], "mem").unwrap(), p);
    }

    #[test]
    fn truncation_is_reported_with_counts() {
        let v = bytes(&sample());
        let e = Profile::read_from(&v[..v.len() - 30], "p.prof").unwrap_err().to_string();
        assert_eq!(
            e,
            "p.prof is truncated: its header promises 3 records, the file holds 1 (and 18 bytes of a partial record)"
        );
        let header_end = v.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(1).unwrap().0;
        let e = Profile::read_from(&v[..header_end - 3], "p.prof").unwrap_err().to_string();
        assert!(e.starts_with("p.prof: bad header:"), "{e}");
        let e = Profile::read_from(&v[..18], "p.prof").unwrap_err().to_string();
        assert_eq!(e, "p.prof: bad header: the file ends after its first line");
        let mut w = v.clone();
        w.extend_from_slice(b"xyz");
        let e = Profile::read_from(&w[..], "p.prof").unwrap_err().to_string();
        assert_eq!(e, "p.prof: 3 unexpected bytes after the 3 records its header announces");
    }

    #[test]
    fn foreign_and_damaged_files_are_refused() {
        let e = Profile::read_from(&b"PK\x03\x04 zipfile"[..], "a.zip").unwrap_err().to_string();
        assert!(e.starts_with("a.zip: not a skelaff profile file"), "{e}");
        let e = Profile::read_from(&b"SKELAFF-PROFILE 2\n{}\n"[..], "new").unwrap_err().to_string();
        assert_eq!(e, "new: format version 2 is not supported; this build reads version 1");
        let mut v = bytes(&sample());
        let n = v.len();
        v[n - 2] = 9; // the last record's kind
        let e = Profile::read_from(&v[..], "k").unwrap_err().to_string();
        assert_eq!(e, "k: record 2: access kind 9; 0 (read) and 1 (write) are allowed");
        let mut v = bytes(&sample());
        v[n - 24 + 18] = 8; // the last record's node: numa16 has 0-7
        let e = Profile::read_from(&v[..], "k").unwrap_err().to_string();
        assert!(e.contains("record 2: node 8") && e.contains("nodes 0-7"), "{e}");
    }

    #[test]
    fn another_machine_is_refused() {
        let dir = std::env::temp_dir().join(format!("skelaff-locality-fmt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.prof");
        sample().save(&path).unwrap();
        assert_eq!(Profile::load_for(&path, &"numa16".parse().unwrap()).unwrap(), sample());
        let e = Profile::load_for(&path, &"numa32".parse().unwrap()).unwrap_err().to_string();
        assert!(e.contains("was recorded on machine numa16 (8 nodes") && e.contains("not on numa32 (4 nodes"), "{e}");
        let e = Profile::load(&dir.join("missing.prof")).unwrap_err().to_string();
        assert!(e.contains("missing.prof: No such file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
