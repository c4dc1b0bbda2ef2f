//! The placement plan: the node each sampled page should live on under a
//! static scheme (the oracle's second pass applies it for real), and its
//! text file.
//!
//! ```text
//! SKELAFF-PLAN 1
//! {"machine":{...},"app":"kmeans","scheme":"oracle-high","page_size":4096,"pages":N}
//! N lines: PAGE NODE   (PAGE: the virtual page number in hex, 0x...; NODE: decimal)
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::machine::Machine;
use crate::profile::Profile;
use crate::schemes::{Scheme, static_homes};

const FIRST_LINE: &str = "SKELAFF-PLAN 1";

/// Where each page should live.
///
/// # Examples
///
/// ```
/// use skelaff_locality::{PageAccess, PlacementPlan, Profile, ProfileHeader, Scheme};
///
/// let h = ProfileHeader::new("2x1".parse()?, "demo", "first-touch", 2);
/// let p = Profile::new(h, vec![PageAccess::write(9, 0, 0, 0), PageAccess::read(9, 1, 1, 1), PageAccess::read(9, 1, 1, 2)])?;
/// let plan = PlacementPlan::from_profile(&p, Scheme::OracleHigh)?;
/// assert_eq!(plan.node_of(9), Some(1));
/// let text = plan.to_text();
/// assert_eq!(PlacementPlan::from_text(&text, "mem")?, plan);
/// assert!(PlacementPlan::from_profile(&p, Scheme::Ideal).is_err());
/// # Ok::<(), skelaff_locality::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacementPlan {
    /// The machine the plan is for.
    pub machine: Machine,
    /// The application profiled.
    pub app: String,
    /// The scheme that made it.
    pub scheme: Scheme,
    /// The page size in bytes.
    pub page_size: u64,
    /// `(page, node)`, ascending by page.
    pub pages: Vec<(u64, u16)>,
}

#[derive(Serialize, Deserialize)]
struct PlanHeader {
    machine: Machine,
    app: String,
    scheme: String,
    page_size: u64,
    pages: u64,
}

impl PlacementPlan {
    /// The plan of a static `scheme` (first-touch, oracle-high, oracle-cog)
    /// for every page of `profile`.
    ///
    /// # Errors
    ///
    /// [`Error::NoPlan`] for migration and ideal.
    pub fn from_profile(profile: &Profile, scheme: Scheme) -> Result<PlacementPlan> {
        let mut pages: Vec<(u64, u16)> = static_homes(profile, scheme)?.into_iter().collect();
        pages.sort_unstable();
        let h = profile.header();
        Ok(PlacementPlan { machine: h.machine.clone(), app: h.app.clone(), scheme, page_size: h.page_size, pages })
    }

    /// The node planned for `page`.
    pub fn node_of(&self, page: u64) -> Option<u16> {
        self.pages.binary_search_by_key(&page, |p| p.0).ok().map(|i| self.pages[i].1)
    }

    /// Pages planned on each node.
    pub fn pages_per_node(&self) -> Vec<u64> {
        let mut n = vec![0; self.machine.nodes()];
        for &(_, node) in &self.pages {
            n[usize::from(node)] += 1;
        }
        n
    }

    /// The plan as a page → node map.
    pub fn homes(&self) -> HashMap<u64, u16> {
        self.pages.iter().copied().collect()
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let header = PlanHeader {
            machine: self.machine.clone(),
            app: self.app.clone(),
            scheme: self.scheme.to_string(),
            page_size: self.page_size,
            pages: self.pages.len() as u64,
        };
        // A plan header of plain strings and numbers always serialises.
        let json = serde_json::to_string(&header).unwrap_or_default();
        let mut s = format!("{FIRST_LINE}\n{json}\n");
        for (page, node) in &self.pages {
            let _ = writeln!(s, "{page:#x} {node}");
        }
        s
    }

    /// Parses a plan; `what` names the source in errors.
    ///
    /// # Errors
    ///
    /// [`Error::NotAFile`], [`Error::BadHeader`], [`Error::UnknownName`] for
    /// an unknown scheme, [`Error::Truncated`], [`Error::TrailingData`] or
    /// [`Error::BadRecord`] (a bad line, a node the machine lacks, pages out
    /// of order).
    pub fn from_text(text: &str, what: &str) -> Result<PlacementPlan> {
        let mut lines = text.lines();
        let first = lines.next().unwrap_or("");
        if first != FIRST_LINE {
            if let Some(v) = first.strip_prefix("SKELAFF-PLAN ") {
                return Err(Error::UnsupportedVersion { what: what.into(), found: v.into(), supported: 1 });
            }
            let found = first.chars().take(24).collect();
            return Err(Error::NotAFile { what: what.into(), kind: "placement plan", found, expected: FIRST_LINE });
        }
        // Errors name the file and the line: the header is line 2, record i line i + 3.
        let at = |line: u64| format!("{what}, line {line}");
        let header: PlanHeader = serde_json::from_str(lines.next().unwrap_or(""))
            .map_err(|e| Error::BadHeader { what: at(2), reason: e.to_string() })?;
        let scheme: Scheme =
            header.scheme.parse().map_err(|e: Error| Error::BadHeader { what: at(2), reason: e.to_string() })?;
        let nodes = header.machine.nodes();
        let mut pages = Vec::with_capacity(header.pages.min(crate::format::RESERVE_AT_MOST) as usize);
        for index in 0..header.pages {
            let Some(line) = lines.next() else {
                return Err(Error::Truncated { what: what.into(), expected: header.pages, found: index, partial: 0 });
            };
            let bad = |reason: String| Error::BadRecord { what: at(index + 3), index, reason };
            let (page, node) = line.split_once(' ').ok_or_else(|| bad(format!("`{line}` is not `0xPAGE NODE`")))?;
            let page = page
                .strip_prefix("0x")
                .and_then(|p| u64::from_str_radix(p, 16).ok())
                .ok_or_else(|| bad(format!("page `{page}` is not a hex number 0x...")))?;
            let node: u16 = node.trim().parse().map_err(|_| bad(format!("node `{node}` is not a number")))?;
            if usize::from(node) >= nodes {
                return Err(bad(format!("node {node} but {} has nodes 0-{}", header.machine.name(), nodes - 1)));
            }
            if pages.last().is_some_and(|&(p, _)| p >= page) {
                return Err(bad(format!(
                    "page {page:#x} is not above the previous one; pages are listed once, ascending"
                )));
            }
            pages.push((page, node));
        }
        let extra: u64 = lines.map(|l| l.len() as u64 + 1).sum();
        if extra > 0 {
            return Err(Error::TrailingData { what: what.into(), records: header.pages, extra });
        }
        Ok(PlacementPlan { machine: header.machine, app: header.app, scheme, page_size: header.page_size, pages })
    }

    /// Writes the plan to `path`, atomically.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] naming the path.
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::atomic_file::write(path, self.to_text()).map_err(Error::io(path.display()))
    }

    /// Reads the plan at `path`, for `machine`.
    ///
    /// # Errors
    ///
    /// As [`PlacementPlan::from_text`], [`Error::Io`], and
    /// [`Error::MachineMismatch`] when it was made for another machine.
    pub fn load_for(path: &Path, machine: &Machine) -> Result<PlacementPlan> {
        let what = path.display().to_string();
        let text = fs::read_to_string(path).map_err(Error::io(&what))?;
        let plan = PlacementPlan::from_text(&text, &what)?;
        if &plan.machine != machine {
            return Err(Error::MachineMismatch {
                what,
                found: plan.machine.to_string(),
                expected: machine.to_string(),
            });
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{PageAccess, ProfileHeader};

    fn plan() -> PlacementPlan {
        let h = ProfileHeader::new("4x1".parse().unwrap(), "t", "first-touch", 4);
        let p = Profile::new(
            h,
            vec![
                PageAccess::read(0x20, 3, 3, 0),
                PageAccess::read(0x10, 1, 1, 1),
                PageAccess::read(0x10, 2, 2, 2),
                PageAccess::read(0x10, 2, 2, 3),
            ],
        )
        .unwrap();
        PlacementPlan::from_profile(&p, Scheme::OracleCog).unwrap()
    }

    #[test]
    fn text_round_trip_and_counts() {
        let p = plan();
        assert_eq!(p.pages, [(0x10, 2), (0x20, 3)]);
        assert_eq!(p.pages_per_node(), [0, 0, 1, 1]);
        let t = p.to_text();
        assert!(t.ends_with("\n0x10 2\n0x20 3\n"), "{t}");
        assert_eq!(PlacementPlan::from_text(&t, "x").unwrap(), p);
    }

    #[test]
    fn bad_plans_are_refused_clearly() {
        let t = plan().to_text();
        let e = PlacementPlan::from_text(&t.replace("oracle-cog", "oracle-best"), "p").unwrap_err().to_string();
        assert_eq!(
            e,
            "p, line 2: bad header: unknown scheme `oracle-best`; expected one of: first-touch, migration, \
             oracle-high, oracle-cog, ideal"
        );
        let cut = &t[..t.len() - "0x20 3\n".len()];
        let e = PlacementPlan::from_text(cut, "p").unwrap_err().to_string();
        assert!(e.starts_with("p is truncated: its header promises 2 records, the file holds 1"), "{e}");
        let e = PlacementPlan::from_text(&t.replace("0x20 3", "0x20 4"), "p").unwrap_err().to_string();
        assert_eq!(e, "p, line 4: record 1: node 4 but 4x1 has nodes 0-3");
        let e = PlacementPlan::from_text(&t.replace("0x20 3", "0x08 3"), "p").unwrap_err().to_string();
        assert!(e.contains("record 1: page 0x8 is not above"), "{e}");
        let e = PlacementPlan::from_text(&format!("{t}0x30 1\n"), "p").unwrap_err().to_string();
        assert_eq!(e, "p: 7 unexpected bytes after the 2 records its header announces");
        let e = PlacementPlan::from_text("SKELAFF-PROFILE 1\n", "p").unwrap_err().to_string();
        assert!(e.starts_with("p: not a skelaff placement plan file"), "{e}");
    }
}
