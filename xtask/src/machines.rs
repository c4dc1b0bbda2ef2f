//! The SkelAff paper's machines as guest shapes: `--topology numa16` boots
//! 8 nodes of 2 CPUs, `--topology numa32` 4 nodes of 8 CPUs, each with the
//! node distances of `skelaff_locality::Machine` passed to qemu as `-numa
//! dist` (so the guest's ACPI SLIT, the kernel and hwloc report them), and
//! `skelaff.machine=NAME` on the kernel command line so the in-guest tests
//! know which distances to expect.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use skelaff_locality::{Machine, PaperMachine};

/// The prefix of the lines in which a guest reports one run's locality.
pub(crate) const LOCALITY_LINE: &str = "SKELAFF-LOCALITY ";

/// Writes the guest's locality lines (the JSON after [`LOCALITY_LINE`]) to
/// `target/numa-vm/locality-NAME.jsonl`, the input of `skelaff locality`.
pub(crate) fn save_locality(work: &Path, name: &str, lines: &[String]) -> Result<Option<PathBuf>> {
    if lines.is_empty() {
        return Ok(None);
    }
    let path = work.join(format!("locality-{}.jsonl", name.replace('/', "-")));
    let mut text = lines.join("\n");
    text.push('\n');
    fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(Some(path))
}

/// The guest shape (`NODESxCPUS`) and machine for a paper machine's name
/// (`numa16`, `numa32`, or one shrunk to fewer CPUs per node such as
/// `numa32/4x2`), or `None` when `name` is not one (it is then a plain shape).
pub(crate) fn paper_shape(name: &str) -> Option<Result<(String, Machine), skelaff_locality::Error>> {
    let base = name.trim().split('/').next().unwrap_or("");
    base.parse::<PaperMachine>().ok()?;
    Some(name.trim().parse::<Machine>().map(|m| {
        let cpus = m.cpus_per_node().first().copied().unwrap_or(1);
        (format!("{}x{cpus}", m.nodes()), m)
    }))
}

/// qemu's `-numa dist,src=I,dst=J,val=D` arguments for every remote pair
/// (qemu fills the symmetric entries and the local 10s itself).
pub(crate) fn dist_args(m: &Machine) -> Vec<String> {
    m.remote_pairs().flat_map(|(i, j, d)| ["-numa".to_owned(), format!("dist,src={i},dst={j},val={d}")]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_shapes_carry_their_distances() {
        let (spec, m) = paper_shape("numa16").unwrap().unwrap();
        assert_eq!(spec, "8x2");
        let args = dist_args(&m);
        assert_eq!(args.len(), 2 * 28);
        assert_eq!(args[1], "dist,src=0,dst=1,val=11");
        assert!(args.contains(&"dist,src=0,dst=7,val=15".to_owned()));
        let (spec, m) = paper_shape("numa32").unwrap().unwrap();
        assert_eq!((spec.as_str(), dist_args(&m)[3].as_str()), ("4x8", "dist,src=0,dst=2,val=36"));
        assert!(paper_shape("2x2").is_none());
        let (spec, m) = paper_shape("numa32/4x2").unwrap().unwrap();
        assert!(paper_shape("numa32/8x2").unwrap().unwrap_err().to_string().contains("keeps its 4 nodes"));
        assert_eq!((spec.as_str(), m.name(), m.distance(1, 3)), ("4x2", "numa32/4x2", Some(36)));
    }
}
