//! The profile data model: sampled page accesses of one run, and the header
//! that says where and how they were recorded.
//!
//! A profile holds, for each sampled access, the page, the thread and the
//! node it ran on, read or write, when (nanoseconds since the run began),
//! and — once the kernel has been asked — the node that held the page. What
//! it misses is said by its [`Sampling`]: only every `period`-th access of
//! the instrumented kind is sampled (the STM samples transactional accesses;
//! non-transactional ones, such as initialisation before the workers start,
//! are not seen), and a full buffer thins its samples (see
//! [`Recorder`](crate::Recorder)).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::machine::Machine;

/// Whether an access read or wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    /// A read.
    Read,
    /// A write.
    Write,
}

skelaff_numa_alloc::enum_names! {
    AccessKind {
        Read => "read",
        Write => "write",
    }
    parse: Error = unknown_kind;
}

fn unknown_kind(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "access kind",
        given: given.to_owned(),
        allowed: AccessKind::VARIANTS,
    })
}

/// One sampled access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PageAccess {
    /// The virtual page number (address / page size).
    pub page: u64,
    /// Nanoseconds since the run began.
    pub time_ns: u64,
    /// The thread's index in the run (0-based).
    pub thread: u16,
    /// The node the thread ran on.
    pub node: u16,
    /// The node that held the page, when the kernel was asked (see
    /// [`Attribution`]).
    pub home: Option<u16>,
    /// Read or write.
    pub kind: AccessKind,
}

impl PageAccess {
    /// A read of `page` by `thread` on `node` at `time_ns`, not yet attributed.
    pub fn read(page: u64, thread: u16, node: u16, time_ns: u64) -> PageAccess {
        PageAccess { page, time_ns, thread, node, home: None, kind: AccessKind::Read }
    }

    /// A write of `page` by `thread` on `node` at `time_ns`, not yet attributed.
    pub fn write(page: u64, thread: u16, node: u16, time_ns: u64) -> PageAccess {
        PageAccess { kind: AccessKind::Write, ..PageAccess::read(page, thread, node, time_ns) }
    }

    /// The same access with its page's node set.
    pub fn at_home(self, home: u16) -> PageAccess {
        PageAccess { home: Some(home), ..self }
    }
}

/// How the profile was sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampling {
    /// Every `period`-th access of a thread is kept (after any thinning: the
    /// period the kept samples represent).
    pub period: u32,
    /// The most samples a thread keeps.
    pub capacity: usize,
}

impl Sampling {
    /// The default: one access in 64, at most 65 536 samples per thread.
    pub const DEFAULT: Sampling = Sampling { period: 64, capacity: 1 << 16 };

    /// Checks that neither number is zero.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroSampling`] naming the zero field.
    pub fn new(period: u32, capacity: usize) -> Result<Sampling> {
        if period == 0 {
            return Err(Error::ZeroSampling { what: "period" });
        }
        if capacity == 0 {
            return Err(Error::ZeroSampling { what: "capacity" });
        }
        Ok(Sampling { period, capacity })
    }
}

impl Default for Sampling {
    fn default() -> Sampling {
        Sampling::DEFAULT
    }
}

/// When the kernel was asked which node held each sampled page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attribution {
    /// Not asked: accesses carry no home.
    #[default]
    None,
    /// Once, at the end of the run (the kernel asked where every sampled
    /// page is):
    /// right for static placements, where a page never moves.
    AtEnd,
    /// As the run went: the node at the end walked back through a log of
    /// the pages moved during the run (see
    /// [`Profile::attribute_with_moves`]); needed when pages migrate.
    Live,
}

skelaff_numa_alloc::enum_names! {
    Attribution {
        None => "none",
        AtEnd => "at-end",
        Live => "live",
    }
    parse: Error = unknown_attribution;
}

fn unknown_attribution(given: &str) -> Error {
    Error::UnknownName(skelaff_numa_alloc::UnknownName {
        what: "attribution",
        given: given.to_owned(),
        allowed: Attribution::VARIANTS,
    })
}

/// What a profile says about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileHeader {
    /// The machine it was recorded on.
    pub machine: Machine,
    /// The page size in bytes.
    pub page_size: u64,
    /// The application (e.g. `kmeans`).
    pub app: String,
    /// The page policy or placement of the run (e.g. `bind`, `oracle-high`).
    pub placement: String,
    /// The number of threads that recorded (thread indices are below it).
    pub threads: u16,
    /// How accesses were sampled.
    pub sampling: Sampling,
    /// Accesses the samplers saw (sampled or not).
    pub seen: u64,
    /// Samples discarded when a buffer overflowed (thinned or dropped).
    pub discarded: u64,
    /// When homes were asked for.
    pub attribution: Attribution,
}

impl ProfileHeader {
    /// A header for `app` under `placement` on `machine` with `threads`
    /// threads, 4 KiB pages, default sampling and no counts yet.
    pub fn new(machine: Machine, app: impl Into<String>, placement: impl Into<String>, threads: u16) -> ProfileHeader {
        ProfileHeader {
            machine,
            page_size: 4096,
            app: app.into(),
            placement: placement.into(),
            threads,
            sampling: Sampling::DEFAULT,
            seen: 0,
            discarded: 0,
            attribution: Attribution::None,
        }
    }
}

/// A run's sampled accesses, in time order, with their header.
///
/// Invariant (checked by [`Profile::new`]): every access's thread is below
/// `header.threads`, its node and home are nodes of `header.machine`, and
/// the accesses are sorted by time (stable, so equal times keep their order).
///
/// # Examples
///
/// ```
/// use skelaff_locality::{PageAccess, Machine, Profile, ProfileHeader};
///
/// let header = ProfileHeader::new("2x1".parse()?, "demo", "first-touch", 2);
/// let p = Profile::new(header, vec![PageAccess::write(7, 1, 1, 20), PageAccess::read(7, 0, 0, 10)])?;
/// assert_eq!(p.accesses()[0].thread, 0); // sorted by time
/// assert_eq!(p.pages().len(), 1);
/// # Ok::<(), skelaff_locality::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    header: ProfileHeader,
    accesses: Vec<PageAccess>,
}

impl Profile {
    /// A profile of `accesses` (sorted by time here).
    ///
    /// # Errors
    ///
    /// [`Error::BadAccess`] for an access whose thread, node or home the
    /// header does not have.
    pub fn new(header: ProfileHeader, mut accesses: Vec<PageAccess>) -> Result<Profile> {
        let nodes = header.machine.nodes();
        for (index, a) in accesses.iter().enumerate() {
            if a.thread >= header.threads {
                return Err(Error::BadAccess {
                    index,
                    reason: format!(
                        "thread {} but the run had {} threads (0-{})",
                        a.thread,
                        header.threads,
                        header.threads.saturating_sub(1)
                    ),
                });
            }
            for (what, node) in [("thread's node", Some(a.node)), ("page's node", a.home)] {
                if let Some(node) = node.filter(|&n| usize::from(n) >= nodes) {
                    return Err(Error::BadAccess {
                        index,
                        reason: format!(
                            "{what} {node} does not exist on {} (nodes 0-{})",
                            header.machine.name(),
                            nodes - 1
                        ),
                    });
                }
            }
        }
        // A stable sort allocates scratch as large as the samples (fresh
        // pages, each a fault): not for samples in order already.
        if !accesses.is_sorted_by_key(|a| a.time_ns) {
            accesses.sort_by_key(|a| a.time_ns);
        }
        Ok(Profile { header, accesses })
    }

    /// Restates the header's sampling period and its counts of accesses
    /// seen and samples discarded (figures no access is checked against),
    /// without taking the profile apart: e.g. when the recorders' period
    /// stacks on a sampler's own.
    pub fn restate_counts(&mut self, period: u32, seen: u64, discarded: u64) {
        self.header.sampling.period = period;
        self.header.seen = seen;
        self.header.discarded = discarded;
    }

    /// The header.
    pub fn header(&self) -> &ProfileHeader {
        &self.header
    }

    /// The machine it was recorded on.
    pub fn machine(&self) -> &Machine {
        &self.header.machine
    }

    /// The accesses, in time order.
    pub fn accesses(&self) -> &[PageAccess] {
        &self.accesses
    }

    /// The distinct pages sampled, ascending.
    pub fn pages(&self) -> Vec<u64> {
        let mut pages: Vec<u64> = self.accesses.iter().map(|a| a.page).collect();
        pages.sort_unstable();
        pages.dedup();
        pages
    }

    /// The same profile with every access's home set from `home_of(page)`
    /// (e.g. the kernel's answer at the end of the run), recording
    /// `attribution`. Pages for which `home_of` says `None` stay unattributed.
    ///
    /// # Errors
    ///
    /// [`Error::BadAccess`] when `home_of` names a node the machine lacks.
    pub fn attributed(mut self, attribution: Attribution, home_of: impl FnMut(u64) -> Option<u16>) -> Result<Profile> {
        self.attribute(attribution, home_of)?;
        Ok(self)
    }

    /// [`attributed`](Profile::attributed) in place: on an error the
    /// profile is left as it was, so a caller that cannot attribute keeps
    /// its samples without having copied them first.
    ///
    /// # Errors
    ///
    /// [`Error::BadAccess`] when `home_of` names a node the machine lacks.
    pub fn attribute(&mut self, attribution: Attribution, mut home_of: impl FnMut(u64) -> Option<u16>) -> Result<()> {
        let nodes = self.machine().nodes();
        // Asked once per access and kept, then written only when all are valid.
        let homes: Vec<Option<u16>> = self.accesses.iter().map(|a| home_of(a.page)).collect();
        if let Some((index, h)) =
            homes.iter().enumerate().find_map(|(i, h)| h.filter(|&h| usize::from(h) >= nodes).map(|h| (i, h)))
        {
            return Err(Error::BadAccess {
                index,
                reason: format!(
                    "page {:#x} is said to be on node {h}, which {} lacks",
                    self.accesses[index].page,
                    self.header.machine.name()
                ),
            });
        }
        for (a, h) in self.accesses.iter_mut().zip(homes) {
            a.home = h;
        }
        self.header.attribution = attribution;
        Ok(())
    }

    /// Sets access `i`'s home to `home_of(i)`, already checked to be a node
    /// of the machine, and records `attribution`.
    pub(crate) fn set_homes(&mut self, attribution: Attribution, mut home_of: impl FnMut(usize) -> Option<u16>) {
        for (i, a) in self.accesses.iter_mut().enumerate() {
            a.home = home_of(i);
        }
        self.header.attribution = attribution;
    }

    /// Splits into header and accesses.
    pub fn into_parts(self) -> (ProfileHeader, Vec<PageAccess>) {
        (self.header, self.accesses)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(threads: u16) -> ProfileHeader {
        ProfileHeader::new("2x1".parse().unwrap(), "t", "first-touch", threads)
    }

    #[test]
    fn accesses_are_validated_and_sorted() {
        let e = Profile::new(header(1), vec![PageAccess::read(1, 1, 0, 0)]).unwrap_err().to_string();
        assert_eq!(e, "access 0: thread 1 but the run had 1 threads (0-0)");
        let e = Profile::new(header(2), vec![PageAccess::read(1, 1, 0, 0), PageAccess::read(1, 1, 2, 0)]).unwrap_err();
        assert_eq!(e.to_string(), "access 1: thread's node 2 does not exist on 2x1 (nodes 0-1)");
        let e = Profile::new(header(2), vec![PageAccess::read(1, 1, 0, 0).at_home(5)]).unwrap_err();
        assert!(e.to_string().contains("page's node 5"), "{e}");
        let p = Profile::new(
            header(2),
            vec![PageAccess::read(1, 1, 1, 9), PageAccess::read(2, 0, 0, 3), PageAccess::write(1, 0, 0, 9)],
        )
        .unwrap();
        let order: Vec<(u64, u16)> = p.accesses().iter().map(|a| (a.time_ns, a.thread)).collect();
        assert_eq!(order, [(3, 0), (9, 1), (9, 0)]);
    }

    #[test]
    fn counts_are_restated_and_the_accesses_kept() {
        let mut p = Profile::new(header(2), vec![PageAccess::read(2, 1, 1, 9), PageAccess::read(1, 0, 0, 3)]).unwrap();
        let before = p.accesses().to_vec();
        p.restate_counts(64, 1000, 7);
        let h = p.header();
        assert_eq!((h.sampling.period, h.seen, h.discarded), (64, 1000, 7));
        assert_eq!(p.accesses(), &before[..]);
        assert_eq!(p.accesses()[0].time_ns, 3, "still in time order");
    }

    #[test]
    fn attribution_sets_homes_and_checks_them() {
        let p = Profile::new(header(2), vec![PageAccess::read(1, 0, 0, 0), PageAccess::read(2, 1, 1, 1)]).unwrap();
        let q = p.clone().attributed(Attribution::AtEnd, |page| (page == 2).then_some(0)).unwrap();
        assert_eq!(q.accesses().iter().map(|a| a.home).collect::<Vec<_>>(), [None, Some(0)]);
        assert_eq!(q.header().attribution, Attribution::AtEnd);
        assert!(p.attributed(Attribution::AtEnd, |_| Some(3)).is_err());
    }

    #[test]
    fn a_refused_attribution_in_place_leaves_the_profile_as_it_was() {
        let mut p = Profile::new(header(2), vec![PageAccess::read(1, 0, 0, 0), PageAccess::read(2, 1, 1, 1)]).unwrap();
        let before = p.clone();
        // The first page's node is valid, the second's is not: nothing is written.
        let e = p.attribute(Attribution::AtEnd, |page| Some(if page == 1 { 0 } else { 5 })).unwrap_err().to_string();
        assert!(e.contains("access 1") && e.contains("node 5"), "{e}");
        assert_eq!(p, before);
        p.attribute(Attribution::AtEnd, |_| Some(1)).unwrap();
        assert!(p.accesses().iter().all(|a| a.home == Some(1)));
    }

    #[test]
    fn names_parse_with_the_allowed_list() {
        assert_eq!("write".parse::<AccessKind>().unwrap(), AccessKind::Write);
        assert_eq!("at-end".parse::<Attribution>().unwrap(), Attribution::AtEnd);
        let e = "sometimes".parse::<Attribution>().unwrap_err().to_string();
        assert_eq!(e, "unknown attribution `sometimes`; expected one of: none, at-end, live");
        assert!(Sampling::new(0, 1).is_err() && Sampling::new(1, 0).is_err() && Sampling::new(1, 1).is_ok());
    }
}
