//! The kernel's automatic NUMA balancing inside the emulated machine: a
//! guard that switches it on with a fast scanner (so it acts within
//! seconds under TCG) and restores every setting when dropped, and its
//! counters in `/proc/vmstat` (hinting faults, local or not: the kernel's
//! own sample of all of a process's accesses, transactional or not).

use std::path::Path;

/// The switch of automatic NUMA balancing.
pub const SWITCH: &str = "/proc/sys/kernel/numa_balancing";

/// What failed while reading the counters or switching balancing on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `/proc/vmstat` could not be read.
    #[error("cannot read /proc/vmstat")]
    Vmstat(#[source] std::io::Error),
    /// The switch exists but could not be written (balancing needs root).
    #[error("enabling NUMA balancing (writing 1 to {SWITCH}; this needs root)")]
    Enable(#[source] std::io::Error),
}

/// The text of a [`Suite::check`](crate::Suite::check)'s failure: the error and its cause.
impl From<Error> for String {
    fn from(e: Error) -> String {
        match std::error::Error::source(&e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        }
    }
}

/// The kernel's NUMA-balancing counters (system-wide).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Vmstat {
    /// `numa_hint_faults`: hinting faults taken.
    pub hint_faults: u64,
    /// `numa_hint_faults_local`: of those, on a page of the faulting CPU's node.
    pub hint_faults_local: u64,
    /// `numa_pages_migrated`: pages balancing moved.
    pub pages_migrated: u64,
    /// `numa_pte_updates`: page entries the scanner made inaccessible (to
    /// take a hinting fault at the next access).
    pub pte_updates: u64,
}

impl Vmstat {
    /// The counters now.
    ///
    /// # Errors
    ///
    /// When `/proc/vmstat` cannot be read.
    pub fn read() -> Result<Vmstat, Error> {
        let text = std::fs::read_to_string("/proc/vmstat").map_err(Error::Vmstat)?;
        Ok(Vmstat::parse(&text))
    }

    /// The counters in a `/proc/vmstat` text (absent ones are zero).
    pub fn parse(text: &str) -> Vmstat {
        let get = |k: &str| {
            text.lines().find_map(|l| l.strip_prefix(k)?.strip_prefix(' ')?.trim().parse::<u64>().ok()).unwrap_or(0)
        };
        Vmstat {
            hint_faults: get("numa_hint_faults"),
            hint_faults_local: get("numa_hint_faults_local"),
            pages_migrated: get("numa_pages_migrated"),
            pte_updates: get("numa_pte_updates"),
        }
    }

    /// What happened between `before` and these counters.
    pub fn since(self, before: Vmstat) -> Vmstat {
        Vmstat {
            hint_faults: self.hint_faults.saturating_sub(before.hint_faults),
            hint_faults_local: self.hint_faults_local.saturating_sub(before.hint_faults_local),
            pages_migrated: self.pages_migrated.saturating_sub(before.pages_migrated),
            pte_updates: self.pte_updates.saturating_sub(before.pte_updates),
        }
    }

    /// The share of hinting faults that were local (`None` without any).
    pub fn local_share(&self) -> Option<f64> {
        (self.hint_faults > 0).then(|| self.hint_faults_local as f64 / self.hint_faults as f64)
    }
}

/// Automatic NUMA balancing switched on, with its scan delay and periods
/// shortened through debugfs; dropping it switches balancing off again and
/// restores the scanner's settings.
#[derive(Debug)]
pub struct Balancing {
    saved: Vec<(&'static str, String)>,
}

/// Where the scanner's settings live (debugfs).
fn knob(k: &str) -> String {
    format!("/sys/kernel/debug/sched/numa_balancing/{k}")
}

impl Balancing {
    /// Switches balancing on; `Ok(None)` on a kernel without it.
    ///
    /// # Errors
    ///
    /// When the switch exists but cannot be written.
    pub fn enable_fast() -> Result<Option<Balancing>, Error> {
        if !Path::new(SWITCH).exists() {
            return Ok(None);
        }
        if !Path::new(&knob("scan_delay_ms")).exists() {
            let _ = std::process::Command::new("mount")
                .args(["-t", "debugfs", "debugfs", "/sys/kernel/debug"])
                .stderr(std::process::Stdio::null())
                .status();
        }
        let mut saved = Vec::new();
        for (k, value) in [("scan_delay_ms", "20"), ("scan_period_min_ms", "20"), ("scan_period_max_ms", "200")] {
            if let Ok(old) = std::fs::read_to_string(knob(k)) {
                saved.push((k, old.trim().to_owned()));
                let _ = std::fs::write(knob(k), value);
            }
        }
        let on = Balancing { saved };
        std::fs::write(SWITCH, "1").map_err(Error::Enable)?;
        Ok(Some(on))
    }
}

impl Drop for Balancing {
    fn drop(&mut self) {
        let _ = std::fs::write(SWITCH, "0");
        for (k, old) in &self.saved {
            let _ = std::fs::write(knob(k), old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_parse_and_subtract() {
        let before =
            Vmstat::parse("numa_hint_faults 10\nnuma_hint_faults_local 4\nnuma_pages_migrated 1\npgfault 99\n");
        let after = Vmstat::parse("numa_hint_faults 30\nnuma_hint_faults_local 19\nnuma_pages_migrated 3\n");
        let d = after.since(before);
        assert_eq!(d, Vmstat { hint_faults: 20, hint_faults_local: 15, pages_migrated: 2, pte_updates: 0 });
        assert_eq!(d.local_share(), Some(0.75));
        assert_eq!(Vmstat::parse("nr_free_pages 5\n").local_share(), None, "no balancing counters: no share");
    }

    #[test]
    fn a_checks_failure_text_has_the_cause() {
        let e = Error::Enable(std::io::Error::from_raw_os_error(libc::EACCES));
        let text = String::from(e);
        assert!(text.starts_with("enabling NUMA balancing") && text.contains("Permission denied"), "{text}");
    }
}
