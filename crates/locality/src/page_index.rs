//! The distinct pages of a profile, and each access's page among them: what
//! the end of a run needs twice (which pages to ask the kernel about, then
//! which answer each access takes) without sorting every sample by page.

use rustc_hash::FxHashMap;

use crate::profile::{PageAccess, Profile};

/// The distinct pages of a profile's accesses, ascending, and for each
/// access the position of its page among them.
///
/// Built with one hash look-up per access (none for an access to the same
/// page as the one before it) and a sort of the distinct pages only. A
/// run's samples are tens of thousands on a few thousand pages, so this
/// replaces a sort of every sample's page and a binary search per access
/// when the kernel's answers are handed out.
///
/// # Examples
///
/// ```
/// use skelaff_locality::{PageAccess, Profile, ProfileHeader};
///
/// let header = ProfileHeader::new("2x1".parse()?, "demo", "first-touch", 1);
/// let times = [(9, 0), (3, 1), (9, 2), (5, 3)];
/// let p = Profile::new(header, times.iter().map(|&(page, t)| PageAccess::read(page, 0, 0, t)).collect())?;
/// let index = p.page_index().expect("a few pages");
/// assert_eq!(index.pages(), [3, 5, 9]);
/// assert_eq!((0..4).map(|i| index.page_of(i)).collect::<Vec<_>>(), [Some(2), Some(0), Some(2), Some(1)]);
/// assert_eq!(index.page_of(4), None);
/// # Ok::<(), skelaff_locality::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageIndex {
    pages: Vec<u64>,
    /// Per access, its page's position in `pages`.
    of_access: Vec<u32>,
}

impl PageIndex {
    /// The index of `accesses`' pages, or `None` when there are more
    /// distinct pages than a `u32` counts (a profile of some 128 GiB).
    pub(crate) fn new(accesses: &[PageAccess]) -> Option<PageIndex> {
        // Sized for a few samples per page (a run's usual share), so that
        // it rarely grows: growing rehashes every page seen so far.
        let mut ids: FxHashMap<u64, u32> =
            FxHashMap::with_capacity_and_hasher((accesses.len() / 4).min(1 << 20), Default::default());
        // Pages in the order first seen; their ids are positions here.
        let mut seen: Vec<u64> = Vec::new();
        let mut of_access = Vec::with_capacity(accesses.len());
        let mut last: Option<(u64, u32)> = None;
        for a in accesses {
            let id = match last {
                Some((page, id)) if page == a.page => id,
                _ => {
                    let next = u32::try_from(seen.len()).ok()?;
                    let id = *ids.entry(a.page).or_insert_with(|| {
                        seen.push(a.page);
                        next
                    });
                    last = Some((a.page, id));
                    id
                }
            };
            of_access.push(id);
        }
        // Renumber by page: `order` lists the ids by ascending page and
        // `rank` is its inverse.
        let mut order: Vec<u32> = (0..seen.len() as u32).collect();
        order.sort_unstable_by_key(|&id| seen[id as usize]);
        let mut rank = vec![0u32; order.len()];
        for (position, &id) in order.iter().enumerate() {
            rank[id as usize] = position as u32;
        }
        for id in &mut of_access {
            *id = rank[*id as usize];
        }
        let pages = order.iter().map(|&id| seen[id as usize]).collect();
        Some(PageIndex { pages, of_access })
    }

    /// The distinct pages, ascending.
    pub fn pages(&self) -> &[u64] {
        &self.pages
    }

    /// The position in [`pages`](Self::pages) of the page of the profile's
    /// access number `access`; `None` past the accesses indexed.
    pub fn page_of(&self, access: usize) -> Option<usize> {
        self.of_access.get(access).map(|&i| i as usize)
    }

    /// How many accesses it indexes.
    pub fn accesses(&self) -> usize {
        self.of_access.len()
    }

    /// The first of `accesses` whose page is not the one this index gives
    /// it (`accesses.len()` when there are more or fewer accesses than
    /// indexed but the common ones agree), or `None` when this is the
    /// index of `accesses`: one read per access, so an index can never
    /// hand another profile's answers out.
    pub(crate) fn first_mismatch(&self, accesses: &[PageAccess]) -> Option<usize> {
        let differs =
            accesses.iter().zip(&self.of_access).position(|(a, &i)| self.pages.get(i as usize) != Some(&a.page));
        match differs {
            Some(at) => Some(at),
            None if accesses.len() != self.of_access.len() => Some(accesses.len().min(self.of_access.len())),
            None => None,
        }
    }
}

impl Profile {
    /// The distinct pages of the accesses and each access's page among them
    /// (see [`PageIndex`]); its pages are [`pages`](Profile::pages). `None`
    /// only past 2^32 distinct pages (a profile of over 128 GiB), which
    /// [`pages`](Profile::pages) still lists.
    pub fn page_index(&self) -> Option<PageIndex> {
        PageIndex::new(self.accesses())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ProfileHeader;
    use proptest::prelude::*;

    fn profile(pages: &[u64]) -> Profile {
        let header = ProfileHeader::new("2x1".parse().unwrap(), "t", "x", 1);
        Profile::new(header, pages.iter().enumerate().map(|(t, &p)| PageAccess::read(p, 0, 0, t as u64)).collect())
            .unwrap()
    }

    #[test]
    fn an_empty_profile_has_no_pages() {
        let index = profile(&[]).page_index().unwrap();
        assert!(index.pages().is_empty());
        assert_eq!(index.accesses(), 0);
    }

    #[test]
    fn runs_of_one_page_and_returns_to_it_share_its_position() {
        let p = profile(&[7, 7, 7, 2, 7, 2, 2, 11]);
        let index = p.page_index().unwrap();
        assert_eq!(index.pages(), [2, 7, 11]);
        let of: Vec<usize> = (0..8).filter_map(|i| index.page_of(i)).collect();
        assert_eq!(of, [1, 1, 1, 0, 1, 0, 0, 2]);
        assert_eq!(index.page_of(8), None);
        assert_eq!(index.first_mismatch(p.accesses()), None);
        // Another profile's accesses are not what it indexes: the first
        // that differs is named, or the end of the shorter list.
        assert_eq!(index.first_mismatch(profile(&[7, 7, 7, 2, 7, 2, 11, 11]).accesses()), Some(6));
        assert_eq!(index.first_mismatch(profile(&[7]).accesses()), Some(1));
        assert_eq!(index.first_mismatch(profile(&[7, 7, 7, 2, 7, 2, 2, 11, 11]).accesses()), Some(8));
    }

    proptest! {
        /// The same pages as sorting every access's page, and each
        /// access's position is its page's.
        #[test]
        fn agrees_with_sorting_every_page(pages in proptest::collection::vec(0u64..50, 0..300)) {
            let p = profile(&pages);
            let index = p.page_index().unwrap();
            prop_assert_eq!(index.pages(), &p.pages()[..]);
            for (i, a) in p.accesses().iter().enumerate() {
                prop_assert_eq!(index.page_of(i).map(|at| index.pages()[at]), Some(a.page));
            }
        }
    }
}
