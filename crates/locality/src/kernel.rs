//! Asking the kernel: which node holds each sampled page (attribution), and
//! moving pages where a placement plan says.
//!
//! Attribution is done once, at the end of a run, for every distinct sampled
//! page ([`Profile::attribute_at_end`], through
//! [`Placement::locate_pages`]: by physical frame where the process may read
//! frame numbers, `move_pages` otherwise). That is exact for static
//! placements (first touch, bind, cyclic, interleave, an applied plan): a
//! page's node is fixed once it is faulted in, so asking at the end gives
//! the node every earlier access saw, at a few system calls per thousand
//! pages instead of one per sample. It is wrong for runs whose pages move
//! (migration, automatic NUMA balancing): those are attributed through the
//! migrator's log of moves ([`Attribution::Live`]).

use crate::error::{Error, Result};
use crate::page_index::PageIndex;
use crate::plan::PlacementPlan;
use crate::profile::{Attribution, Profile};
use skelaff_numa_alloc::{Apply, NodeSet, PageLocation, Placement, Policy, Topology};

/// Where the kernel has each of `pages` (sorted, distinct): `Some(node)` for
/// resident pages, `None` for pages not resident or unknown.
///
/// # Errors
///
/// [`Error::Numa`] when the kernel cannot be asked (`move_pages` fails as a
/// whole).
pub fn page_nodes(pages: &[u64], page_size: u64) -> Result<Vec<Option<u16>>> {
    // One query for all: `locate_pages` reads runs of nearby pages' frames
    // at once and asks `move_pages` 4096 pages per call for the rest (a
    // call per run of consecutive pages cost a system call per few pages).
    // A page number past the address space (a profile from elsewhere) maps
    // to the last address, which the kernel reports as not mapped.
    let addrs: Vec<*const u8> = pages
        .iter()
        .map(|&p| usize::try_from(p.saturating_mul(page_size)).unwrap_or(usize::MAX) as *const u8)
        .collect();
    let found = Placement::locate_pages(&addrs).map_err(|source| Error::Numa {
        what: format!(
            "asking where {} sampled pages are (the first {:#x})",
            pages.len(),
            pages.first().copied().unwrap_or(0)
        ),
        source,
    })?;
    Ok(found
        .into_iter()
        .map(|l| match l {
            PageLocation::Node(n) => u16::try_from(n).ok(),
            PageLocation::NotResident | PageLocation::Unknown(_) => None,
        })
        .collect())
}

impl Profile {
    /// Sets every access's home to the node the kernel has its page on now
    /// (see the module docs for why once at the end is right for static
    /// placements).
    ///
    /// # Errors
    ///
    /// [`Error::Numa`] when the kernel cannot be asked, and
    /// [`Error::BadAccess`] when it names a node the profile's machine lacks
    /// (the profile was recorded for another machine than this one).
    pub fn attribute_at_end(mut self) -> Result<Profile> {
        self.attribute_now()?;
        Ok(self)
    }

    /// [`attribute_at_end`](Profile::attribute_at_end) in place: on an
    /// error the profile is left as it was, samples and homes.
    ///
    /// # Errors
    ///
    /// As [`attribute_at_end`](Profile::attribute_at_end).
    pub fn attribute_now(&mut self) -> Result<()> {
        match self.page_index() {
            Some(index) => self.attribute_indexed(&index),
            None => {
                let pages = self.pages();
                self.attribute_pages_now(&pages)
            }
        }
    }

    /// [`attribute_now`](Profile::attribute_now) with this profile's
    /// [`page_index`](Profile::page_index) at hand (a caller that also
    /// needs the distinct pages builds it once): the kernel is asked about
    /// the index's pages, and each access takes its page's answer without
    /// a search.
    ///
    /// # Errors
    ///
    /// As [`attribute_at_end`](Profile::attribute_at_end), and
    /// [`Error::BadAccess`] when `index` is not this profile's (an access's
    /// page is not the one the index gives it); the profile is then left
    /// as it was.
    pub fn attribute_indexed(&mut self, index: &PageIndex) -> Result<()> {
        if let Some(at) = index.first_mismatch(self.accesses()) {
            return Err(Error::BadAccess {
                index: at,
                reason: format!(
                    "the page index given is not this profile's ({} accesses indexed, the profile has {})",
                    index.accesses(),
                    self.accesses().len()
                ),
            });
        }
        let nodes = page_nodes(index.pages(), self.header().page_size)?;
        // Checked once per page, so each access only takes its page's answer.
        let count = self.machine().nodes();
        if let Some((page, node)) =
            index.pages().iter().zip(&nodes).find_map(|(&p, n)| n.filter(|&n| usize::from(n) >= count).map(|n| (p, n)))
        {
            let at = self.accesses().iter().position(|a| a.page == page).unwrap_or(0);
            return Err(Error::BadAccess {
                index: at,
                reason: format!("page {page:#x} is said to be on node {node}, which {} lacks", self.machine().name()),
            });
        }
        // Every access is indexed (checked above), so each has a position.
        self.set_homes(Attribution::AtEnd, |i| index.page_of(i).and_then(|at| nodes[at]));
        Ok(())
    }

    /// [`attribute_now`](Profile::attribute_now) for a caller that has the
    /// profile's [`pages`](Profile::pages) at hand already (sorting a
    /// run's samples by page is a good part of the cost on small runs).
    /// `pages` is expected sorted (an unsorted list is sorted into a copy
    /// first, never misread); accesses to pages it leaves out stay
    /// unattributed.
    ///
    /// # Errors
    ///
    /// As [`attribute_at_end`](Profile::attribute_at_end).
    pub fn attribute_pages_now(&mut self, pages: &[u64]) -> Result<()> {
        if !pages.is_sorted() {
            let mut sorted = pages.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            return self.attribute_pages_now(&sorted);
        }
        let nodes = page_nodes(pages, self.header().page_size)?;
        // `pages` is sorted: a binary search finds each access's page.
        self.attribute(Attribution::AtEnd, |p| pages.binary_search(&p).ok().and_then(|i| nodes[i]))
    }
}

/// What applying a plan did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Applied {
    /// Pages the plan names.
    pub pages: u64,
    /// Contiguous same-node ranges bound and migrated (one `mbind` each).
    pub ranges: u64,
}

impl PlacementPlan {
    /// Binds every planned page of this process to its node and migrates
    /// it there (`mbind` with `MPOL_MF_MOVE` on each run of consecutive
    /// pages planned for one node). The pages must be mapped by this
    /// process; later faults in those ranges also follow the plan.
    ///
    /// # Errors
    ///
    /// [`Error::Numa`] when the kernel refuses (e.g. a page is not mapped, a
    /// node is not allowed, or some page could not be moved).
    pub fn apply(&self) -> Result<Applied> {
        let topo = Topology::get().map_err(|source| Error::Numa { what: "reading the topology".into(), source })?;
        let mut ranges = 0;
        let mut i = 0;
        while i < self.pages.len() {
            let (start, node) = self.pages[i];
            let mut len = 1;
            while i + (len as usize) < self.pages.len() && self.pages[i + len as usize] == (start + len, node) {
                len += 1;
            }
            let addr = (start * self.page_size) as usize as *mut u8;
            Policy::Bind(NodeSet::single(usize::from(node)))
                .apply(topo, addr, (len * self.page_size) as usize, Apply::Migrate)
                .map_err(|source| Error::Numa {
                    what: format!("moving pages {start:#x}+{len} to node {node} as the {} plan says", self.scheme),
                    source,
                })?;
            ranges += 1;
            i += len as usize;
        }
        Ok(Applied { pages: self.pages.len() as u64, ranges })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_past_the_address_space_are_not_resident_rather_than_a_panic() {
        assert_eq!(page_nodes(&[u64::MAX / 2, u64::MAX], 4096).unwrap(), [None, None]);
    }

    #[test]
    fn pages_of_this_process_are_found_on_a_node() {
        // On any machine: a touched heap page is resident on some node the machine has.
        let v = vec![1u8; 1 << 16];
        let page = v.as_ptr() as u64 / 4096 + 1;
        let nodes = page_nodes(&[page, page + 1], 4096).unwrap();
        let have = skelaff_numa_alloc::Topology::get().unwrap().nodes().len();
        assert!(nodes.iter().all(|n| n.is_some_and(|n| usize::from(n) < have)), "{nodes:?}");
        drop(v);
    }

    #[test]
    fn attributing_given_pages_leaves_the_others_unattributed() {
        let v = vec![1u8; 1 << 16];
        let (a, b) = (v.as_ptr() as u64 / 4096 + 1, v.as_ptr() as u64 / 4096 + 2);
        let machine = crate::Machine::from_topology("this machine", Topology::get().unwrap()).unwrap();
        let header = crate::ProfileHeader::new(machine, "t", "first-touch", 1);
        let mut p =
            Profile::new(header, vec![crate::PageAccess::read(a, 0, 0, 1), crate::PageAccess::write(b, 0, 0, 2)])
                .unwrap();
        let mut all = p.clone();
        p.attribute_pages_now(&[a]).unwrap();
        all.attribute_now().unwrap();
        assert!(p.accesses()[0].home.is_some() && p.accesses()[1].home.is_none(), "{:?}", p.accesses());
        assert_eq!(p.accesses()[0].home, all.accesses()[0].home);
        assert!(all.accesses()[1].home.is_some());
        assert_eq!(p.header().attribution, Attribution::AtEnd);
        // Pages out of order are sorted first, not misread by the binary search.
        let mut unsorted = all.clone();
        unsorted.attribute_pages_now(&[b, a]).unwrap();
        assert_eq!(unsorted.accesses(), all.accesses());
        drop(v);
    }

    #[test]
    fn an_index_hands_out_the_kernel_s_answers_only_to_its_own_profile() {
        let v = vec![1u8; 1 << 16];
        let first = v.as_ptr() as u64 / 4096 + 1;
        let machine = crate::Machine::from_topology("this machine", Topology::get().unwrap()).unwrap();
        let header = crate::ProfileHeader::new(machine, "t", "first-touch", 1);
        // Pages visited out of order and revisited.
        let order = [3, 1, 3, 2, 1, 1, 4];
        let accesses =
            order.iter().enumerate().map(|(t, &k)| crate::PageAccess::read(first + k, 0, 0, t as u64)).collect();
        let p = Profile::new(header, accesses).unwrap();
        let index = p.page_index().unwrap();
        let (mut by_index, mut by_search) = (p.clone(), p.clone());
        by_index.attribute_indexed(&index).unwrap();
        by_search.attribute_pages_now(&p.pages()).unwrap();
        assert_eq!(by_index, by_search);
        assert!(by_index.accesses().iter().all(|a| a.home.is_some()), "{:?}", by_index.accesses());
        // Another profile (one access's page differs) is refused and left as it was.
        let (h, mut other) = p.clone().into_parts();
        other[5].page = first + 4;
        let mut other = Profile::new(h, other).unwrap();
        let before = other.clone();
        let e = other.attribute_indexed(&index).unwrap_err().to_string();
        assert!(e.starts_with("access 5: the page index given is not this profile's"), "{e}");
        assert_eq!(other, before);
        // So is a profile with fewer accesses than the index.
        let (h, mut shorter) = p.clone().into_parts();
        shorter.truncate(4);
        let mut shorter = Profile::new(h, shorter).unwrap();
        let e = shorter.attribute_indexed(&index).unwrap_err().to_string();
        assert!(e.contains("7 accesses indexed, the profile has 4"), "{e}");
        assert_eq!(shorter.header().attribution, Attribution::None);
        drop(v);
    }
}
