//! The harness of the placement tests that run inside the emulated NUMA
//! machine (`cargo xtask numa-vm`): the guest's expected shape, and a small
//! runner that reports each check and exits non-zero on any failure.
//!
//! A test binary (a `harness = false` test target) builds a [`Suite`], runs
//! its checks, and returns [`Suite::finish`] from `main`. The guest's
//! kernel command line carries `skelaff.topology=NODESxCPUS[+MEMONLY]` and
//! `skelaff.node_mib=MIB,MIB,...` (each node's memory, node 0 first),
//! which [`GuestSpec::from_cmdline`] reads.

use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::str::FromStr;

use skelaff_numa_alloc::PageLocation;

/// A guest shape that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot parse guest shape `{given}`: expected NODESxCPUS or NODESxCPUS+MEMONLY (e.g. 2x2, 8x2 or 2x1+1), with at least one node, one CPU per node, at most 64 nodes and at most 255 CPUs"
)]
pub struct GuestSpecError {
    /// The text given.
    pub given: String,
}

/// The shape of an emulated machine: `nodes` nodes with `cpus_per_node`
/// CPUs each, then `memory_only` nodes with memory and no CPUs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct GuestSpec {
    /// Nodes with CPUs.
    pub nodes: usize,
    /// CPUs on each of them.
    pub cpus_per_node: usize,
    /// Nodes with memory only, numbered after the others.
    pub memory_only: usize,
    /// Memory of each node with CPUs, in MiB.
    pub node_mib: u64,
    /// Memory of each memory-only node, in MiB (`cargo xtask numa-vm` makes
    /// these small, so that tests can fill one).
    pub memory_only_mib: u64,
}

impl GuestSpec {
    /// All nodes.
    pub fn total_nodes(&self) -> usize {
        self.nodes + self.memory_only
    }

    /// All CPUs.
    pub fn total_cpus(&self) -> usize {
        self.nodes * self.cpus_per_node
    }

    /// The memory the machine gave `node`, in MiB.
    pub fn node_mib_of(&self, node: usize) -> u64 {
        if node < self.nodes { self.node_mib } else { self.memory_only_mib }
    }

    /// Reads the spec from `/proc/cmdline`, if this is a guest.
    pub fn from_cmdline() -> Option<GuestSpec> {
        let line = std::fs::read_to_string("/proc/cmdline").ok()?;
        Self::from_cmdline_text(&line)
    }

    /// Reads the spec from a kernel command line: `skelaff.topology=` and
    /// `skelaff.node_mib=` with one size for every node or one per node
    /// (nodes with CPUs alike, memory-only nodes alike). `None` if it has
    /// no shape or the sizes do not fit it.
    pub fn from_cmdline_text(line: &str) -> Option<GuestSpec> {
        let mut spec: GuestSpec =
            line.split_whitespace().find_map(|w| w.strip_prefix("skelaff.topology="))?.parse().ok()?;
        if let Some(list) = line.split_whitespace().find_map(|w| w.strip_prefix("skelaff.node_mib=")) {
            let sizes: Vec<u64> = list.split(',').map(|m| m.parse().ok()).collect::<Option<_>>()?;
            let (cpu, mem) = match sizes.len() {
                1 => (sizes[0], sizes[0]),
                n if n == spec.total_nodes() => {
                    let (cpu, mem) = sizes.split_at(spec.nodes);
                    if cpu.iter().any(|&m| m != cpu[0]) || mem.iter().any(|&m| Some(&m) != mem.first()) {
                        return None;
                    }
                    (cpu[0], mem.first().copied().unwrap_or(cpu[0]))
                }
                _ => return None,
            };
            (spec.node_mib, spec.memory_only_mib) = (cpu, mem);
        }
        Some(spec)
    }
}

impl std::fmt::Display for GuestSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.nodes, self.cpus_per_node)?;
        if self.memory_only > 0 {
            write!(f, "+{}", self.memory_only)?;
        }
        Ok(())
    }
}

/// Parses `NODESxCPUS` or `NODESxCPUS+MEMONLY` (e.g. `2x2`, `4x1`, `2x1+1`).
impl FromStr for GuestSpec {
    type Err = GuestSpecError;
    fn from_str(s: &str) -> Result<Self, GuestSpecError> {
        let err = || GuestSpecError { given: s.to_owned() };
        let (main, mem) = match s.trim().split_once('+') {
            Some((m, k)) => (m, k.parse().map_err(|_| err())?),
            None => (s.trim(), 0),
        };
        let (n, c) = main.split_once('x').ok_or_else(err)?;
        let (nodes, cpus_per_node): (usize, usize) = (n.parse().map_err(|_| err())?, c.parse().map_err(|_| err())?);
        if nodes == 0 || cpus_per_node == 0 || nodes + mem > 64 || nodes * cpus_per_node > 255 {
            return Err(err());
        }
        Ok(GuestSpec { nodes, cpus_per_node, memory_only: mem, node_mib: 256, memory_only_mib: 256 })
    }
}

/// Runs named checks, prints `ok NAME` or `FAIL NAME: why`, and turns the
/// outcome into an exit code. A check that panics counts as failed.
///
/// A check's error is the text of its `FAIL` line: this crate's errors
/// ([`MisplacedPages`], [`balancing::Error`](crate::balancing::Error))
/// convert to it with their causes, so a check can use `?` on them.
#[derive(Debug)]
pub struct Suite {
    name: String,
    passed: usize,
    failed: Vec<String>,
}

impl Suite {
    /// A suite named `name`.
    pub fn new(name: &str) -> Suite {
        println!("== {name}");
        Suite { name: name.to_owned(), passed: 0, failed: Vec::new() }
    }

    /// Runs one check.
    pub fn check(&mut self, name: &str, f: impl FnOnce() -> Result<(), String>) {
        match panic::catch_unwind(AssertUnwindSafe(f)) {
            Ok(Ok(())) => {
                println!("ok   {name}");
                self.passed += 1;
            }
            Ok(Err(why)) => {
                println!("FAIL {name}: {why}");
                self.failed.push(name.to_owned());
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                println!("FAIL {name}: panicked: {msg}");
                self.failed.push(name.to_owned());
            }
        }
    }

    /// Prints the summary; failure if any check failed or none ran.
    pub fn finish(self) -> ExitCode {
        println!("== {}: {} passed, {} failed {:?}", self.name, self.passed, self.failed.len(), self.failed);
        if self.failed.is_empty() && self.passed > 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
    }
}

/// Pages that are not on the node they should be on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MisplacedPages {
    /// What the pages hold.
    pub what: String,
    /// The pages checked.
    pub total: usize,
    /// Each misplaced page: its index, the node it should be on, where it is.
    pub pages: Vec<(usize, usize, PageLocation)>,
}

/// `WHAT: N of TOTAL pages misplaced:` and the first 16 pages in full.
impl std::fmt::Display for MisplacedPages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} of {} pages misplaced:", self.what, self.pages.len(), self.total)?;
        for (page, want, got) in self.pages.iter().take(16) {
            write!(f, " [page {page}: want node {want}, got {got:?}]")?;
        }
        Ok(())
    }
}

impl std::error::Error for MisplacedPages {}

/// The text of a [`Suite::check`]'s failure.
impl From<MisplacedPages> for String {
    fn from(e: MisplacedPages) -> String {
        e.to_string()
    }
}

/// Checks for misplaced pages (from [`Placement::mismatches`](skelaff_numa_alloc::Placement::mismatches)).
///
/// # Errors
///
/// [`MisplacedPages`], when some page is misplaced.
pub fn misplaced_pages(
    what: &str,
    total: usize,
    mismatches: &[(usize, usize, PageLocation)],
) -> Result<(), MisplacedPages> {
    if mismatches.is_empty() {
        return Ok(());
    }
    Err(MisplacedPages { what: what.to_owned(), total, pages: mismatches.to_vec() })
}

/// [`misplaced_pages`] as a [`Suite::check`]'s result: `Ok` when no page
/// is misplaced, else the text of the check's `FAIL` line.
///
/// # Errors
///
/// The description of the misplaced pages, the first 16 in full.
pub fn expect_no_mismatches(
    what: &str,
    total: usize,
    mismatches: &[(usize, usize, PageLocation)],
) -> Result<(), String> {
    Ok(misplaced_pages(what, total, mismatches)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_specs_parse() {
        let s: GuestSpec = "2x1+1".parse().unwrap();
        assert_eq!((s.nodes, s.cpus_per_node, s.memory_only, s.total_nodes(), s.total_cpus()), (2, 1, 1, 3, 2));
        assert_eq!(s.to_string(), "2x1+1");
        assert_eq!("8x2".parse::<GuestSpec>().unwrap().to_string(), "8x2");
        for bad in ["", "2", "0x2", "2x0", "ax2", "2x2+z", "100x1"] {
            let e = bad.parse::<GuestSpec>().unwrap_err();
            assert_eq!(e.given, bad);
            assert!(e.to_string().contains("expected NODESxCPUS"), "{e}");
        }
    }

    #[test]
    fn node_sizes_come_from_the_command_line() {
        let line = "console=ttyS0 skelaff.topology=2x1+1 skelaff.node_mib=512,512,96 quiet";
        let s = GuestSpec::from_cmdline_text(line).unwrap();
        assert_eq!((s.node_mib_of(0), s.node_mib_of(1), s.node_mib_of(2)), (512, 512, 96));
        let s = GuestSpec::from_cmdline_text("skelaff.topology=2x2 skelaff.node_mib=256").unwrap();
        assert_eq!((s.node_mib, s.memory_only_mib, s.node_mib_of(1)), (256, 256, 256));
        for bad in [
            "skelaff.node_mib=512",
            "skelaff.topology=2x1+1 skelaff.node_mib=512,96",
            "skelaff.topology=2x1+1 skelaff.node_mib=512,256,96",
            "skelaff.topology=2x2 skelaff.node_mib=x",
        ] {
            assert_eq!(GuestSpec::from_cmdline_text(bad), None, "{bad}");
        }
    }

    #[test]
    fn mismatch_reports_name_pages() {
        assert!(expect_no_mismatches("x", 3, &[]).is_ok());
        let e = expect_no_mismatches("bind", 3, &[(2, 1, PageLocation::Node(0))]).unwrap_err();
        assert!(e.contains("1 of 3 pages") && e.contains("page 2: want node 1"), "{e}");
        let e = misplaced_pages("bind", 3, &[(2, 1, PageLocation::Node(0))]).unwrap_err();
        assert_eq!((e.total, e.pages.len()), (3, 1));
    }

    #[test]
    fn suites_fail_on_failure_or_panic() {
        let mut s = Suite::new("t");
        s.check("good", || Ok(()));
        assert_eq!(format!("{:?}", s.finish()), format!("{:?}", ExitCode::SUCCESS));
        let mut s = Suite::new("t");
        s.check("bad", || Err("no".into()));
        assert_eq!(format!("{:?}", s.finish()), format!("{:?}", ExitCode::FAILURE));
        let mut s = Suite::new("t");
        s.check("boom", || panic!("boom"));
        assert_eq!(format!("{:?}", s.finish()), format!("{:?}", ExitCode::FAILURE));
        assert_eq!(format!("{:?}", Suite::new("empty").finish()), format!("{:?}", ExitCode::FAILURE));
    }
}
