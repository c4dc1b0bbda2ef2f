//! The memory footprint of a profile (the SkelAff paper's Fig. 1): which
//! thread touched which page when, and how many threads share each page.
//!
//! Two views:
//!
//! - [`Footprint::cells`]: sampled accesses per (time bin, thread, page),
//!   reads and writes apart; pages are also given a dense rank (0 for the
//!   lowest address sampled) so a plot's page axis has no gaps.
//! - [`Footprint::sharing`]: pages by the number of threads that touch them
//!   (1 = private, up to all threads), counted three ways — touched at all,
//!   read, written — with the sampled reads and writes those pages received.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::profile::{AccessKind, Profile};

/// Sampled accesses of one thread to one page in one time bin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FootprintCell {
    /// The time bin (0-based).
    pub bin: u32,
    /// The bin's start, in nanoseconds since the profile's first access.
    pub time_ns: u64,
    /// The thread.
    pub thread: u16,
    /// The virtual page number.
    pub page: u64,
    /// The page's rank among the sampled pages (ascending addresses).
    pub page_rank: u32,
    /// Sampled reads.
    pub reads: u64,
    /// Sampled writes.
    pub writes: u64,
}

/// Pages shared by exactly `sharers` threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharingRow {
    /// The number of threads (1 = private).
    pub sharers: u16,
    /// Pages touched (read or written) by exactly `sharers` threads.
    pub pages: u64,
    /// Pages read by exactly `sharers` threads.
    pub read_pages: u64,
    /// Pages written by exactly `sharers` threads.
    pub written_pages: u64,
    /// Sampled reads of the `pages`.
    pub reads: u64,
    /// Sampled writes of the `pages`.
    pub writes: u64,
}

/// A profile's footprint.
///
/// # Examples
///
/// ```
/// use skelaff_locality::{PageAccess, Footprint, Profile, ProfileHeader};
///
/// let h = ProfileHeader::new("2x1".parse()?, "demo", "bind", 2);
/// let p = Profile::new(h, vec![
///     PageAccess::write(10, 0, 0, 0), // page 10: private to thread 0
///     PageAccess::read(11, 0, 0, 1),  // page 11: read by both threads
///     PageAccess::read(11, 1, 1, 2),
/// ])?;
/// let f = Footprint::new(&p, 4);
/// assert_eq!((f.sharing[0].sharers, f.sharing[0].pages, f.sharing[0].written_pages), (1, 1, 1));
/// assert_eq!((f.sharing[1].sharers, f.sharing[1].pages, f.sharing[1].read_pages), (2, 1, 1));
/// assert_eq!(f.cells.len(), 3);
/// # Ok::<(), skelaff_locality::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    /// The application.
    pub app: String,
    /// The run's placement.
    pub placement: String,
    /// Threads in the run.
    pub threads: u16,
    /// Distinct pages sampled.
    pub pages: u64,
    /// Sampled accesses.
    pub accesses: u64,
    /// Each sample stands for this many accesses.
    pub period: u32,
    /// The length of a time bin in nanoseconds.
    pub bin_ns: u64,
    /// Pages by sharers, for 1..=threads.
    pub sharing: Vec<SharingRow>,
    /// Accesses per (bin, thread, page), sorted that way.
    pub cells: Vec<FootprintCell>,
}

#[derive(Default)]
struct PageUse {
    readers: BTreeSet<u16>,
    writers: BTreeSet<u16>,
    reads: u64,
    writes: u64,
}

impl Footprint {
    /// The footprint of `profile` with its duration cut into `bins` time bins
    /// (at least 1).
    pub fn new(profile: &Profile, bins: u32) -> Footprint {
        let bins = bins.max(1);
        let h = profile.header();
        let acc = profile.accesses();
        let t0 = acc.first().map_or(0, |a| a.time_ns);
        let span = acc.last().map_or(0, |a| a.time_ns) - t0;
        let bin_ns = span / u64::from(bins) + 1;
        let ranks: HashMap<u64, u32> = profile.pages().into_iter().enumerate().map(|(i, p)| (p, i as u32)).collect();

        let mut uses: HashMap<u64, PageUse> = HashMap::new();
        let mut cells: BTreeMap<(u32, u16, u64), (u64, u64)> = BTreeMap::new();
        for a in acc {
            let u = uses.entry(a.page).or_default();
            let bin = ((a.time_ns - t0) / bin_ns) as u32;
            let cell = cells.entry((bin, a.thread, a.page)).or_default();
            match a.kind {
                AccessKind::Read => {
                    u.readers.insert(a.thread);
                    u.reads += 1;
                    cell.0 += 1;
                }
                AccessKind::Write => {
                    u.writers.insert(a.thread);
                    u.writes += 1;
                    cell.1 += 1;
                }
            }
        }
        let mut sharing: Vec<SharingRow> = (1..=h.threads.max(1))
            .map(|sharers| SharingRow { sharers, pages: 0, read_pages: 0, written_pages: 0, reads: 0, writes: 0 })
            .collect();
        for u in uses.values() {
            let touched = u.readers.union(&u.writers).count();
            let row = &mut sharing[touched - 1];
            row.pages += 1;
            row.reads += u.reads;
            row.writes += u.writes;
            if !u.readers.is_empty() {
                sharing[u.readers.len() - 1].read_pages += 1;
            }
            if !u.writers.is_empty() {
                sharing[u.writers.len() - 1].written_pages += 1;
            }
        }
        let cells = cells
            .into_iter()
            .map(|((bin, thread, page), (reads, writes))| FootprintCell {
                bin,
                time_ns: u64::from(bin) * bin_ns,
                thread,
                page,
                page_rank: ranks[&page],
                reads,
                writes,
            })
            .collect();
        Footprint {
            app: h.app.clone(),
            placement: h.placement.clone(),
            threads: h.threads,
            pages: uses.len() as u64,
            accesses: acc.len() as u64,
            period: h.sampling.period,
            bin_ns,
            sharing,
            cells,
        }
    }

    /// The share of pages touched by one thread only.
    pub fn private_fraction(&self) -> f64 {
        self.sharing.first().map_or(0.0, |r| r.pages as f64 / self.pages.max(1) as f64)
    }

    /// Writes `bin,time_ns,thread,page,page_rank,reads,writes` rows.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when writing fails.
    pub fn write_cells_csv(&self, mut w: impl Write) -> Result<()> {
        let what = "writing footprint cells";
        writeln!(w, "bin,time_ns,thread,page,page_rank,reads,writes").map_err(Error::io(what))?;
        for c in &self.cells {
            writeln!(w, "{},{},{},{:#x},{},{},{}", c.bin, c.time_ns, c.thread, c.page, c.page_rank, c.reads, c.writes)
                .map_err(Error::io(what))?;
        }
        Ok(())
    }

    /// Writes `sharers,pages,read_pages,written_pages,reads,writes` rows.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when writing fails.
    pub fn write_sharing_csv(&self, mut w: impl Write) -> Result<()> {
        let what = "writing footprint sharing";
        writeln!(w, "sharers,pages,read_pages,written_pages,reads,writes").map_err(Error::io(what))?;
        for r in &self.sharing {
            writeln!(w, "{},{},{},{},{},{}", r.sharers, r.pages, r.read_pages, r.written_pages, r.reads, r.writes)
                .map_err(Error::io(what))?;
        }
        Ok(())
    }
}

impl fmt::Display for Footprint {
    /// A table of pages by sharers.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} ({}, {} threads): {} pages, {} sampled accesses (1 in {})",
            self.app, self.placement, self.threads, self.pages, self.accesses, self.period
        )?;
        writeln!(f, "| threads sharing | pages | read by | written by | reads | writes |")?;
        writeln!(f, "|---:|---:|---:|---:|---:|---:|")?;
        for r in &self.sharing {
            writeln!(
                f,
                "| {} | {} | {} | {} | {} | {} |",
                r.sharers, r.pages, r.read_pages, r.written_pages, r.reads, r.writes
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{PageAccess, ProfileHeader};

    fn three_threads() -> Profile {
        let h = ProfileHeader::new("4x1".parse().unwrap(), "t", "bind", 3);
        Profile::new(
            h,
            vec![
                // Page 100: written by 0, read by 1 and 2 (touched by 3, read by 2, written by 1).
                PageAccess::write(100, 0, 0, 0),
                PageAccess::read(100, 1, 1, 10),
                PageAccess::read(100, 2, 2, 20),
                // Page 200: read and written by thread 1 only.
                PageAccess::read(200, 1, 1, 30),
                PageAccess::write(200, 1, 1, 40),
                PageAccess::write(200, 1, 1, 41),
                // Page 300: written by 0 and 2, read by nobody.
                PageAccess::write(300, 0, 0, 50),
                PageAccess::write(300, 2, 2, 99),
            ],
        )
        .unwrap()
    }

    #[test]
    fn sharing_counts_by_hand() {
        let f = Footprint::new(&three_threads(), 10);
        assert_eq!((f.pages, f.accesses, f.threads), (3, 8, 3));
        let rows: Vec<(u64, u64, u64, u64, u64)> =
            f.sharing.iter().map(|r| (r.pages, r.read_pages, r.written_pages, r.reads, r.writes)).collect();
        // Touched by: 200 -> 1 thread, 300 -> 2, 100 -> 3. Read by: 200 -> 1, 100 -> 2.
        // written_pages by writer count: 100 -> 1 writer, 200 -> 1 writer, 300 -> 2 writers.
        assert_eq!(rows, [(1, 1, 2, 1, 2), (1, 1, 1, 0, 2), (1, 0, 0, 2, 1)]);
        assert!((f.private_fraction() - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn cells_bin_time_and_rank_pages() {
        let f = Footprint::new(&three_threads(), 10);
        // Span 99 ns in 10 bins: 10 ns each.
        assert_eq!(f.bin_ns, 10);
        let c: Vec<(u32, u16, u32, u64, u64)> =
            f.cells.iter().map(|c| (c.bin, c.thread, c.page_rank, c.reads, c.writes)).collect();
        assert_eq!(
            c,
            [
                (0, 0, 0, 0, 1),
                (1, 1, 0, 1, 0),
                (2, 2, 0, 1, 0),
                (3, 1, 1, 1, 0),
                (4, 1, 1, 0, 2),
                (5, 0, 2, 0, 1),
                (9, 2, 2, 0, 1)
            ]
        );
        let mut csv = Vec::new();
        f.write_cells_csv(&mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        assert_eq!(csv.lines().nth(5), Some("4,40,1,0xc8,1,0,2"));
        let mut csv = Vec::new();
        f.write_sharing_csv(&mut csv).unwrap();
        assert_eq!(String::from_utf8(csv).unwrap().lines().nth(3), Some("3,1,0,0,2,1"));
        assert!(f.to_string().contains("| 2 | 1 | 1 | 1 | 0 | 2 |"), "{f}");
    }
}
