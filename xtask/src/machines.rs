//! The SkelAff paper's machines as guest shapes: `--topology numa16` boots
//! 8 nodes of 2 CPUs, `--topology numa32` 4 nodes of 8 CPUs, each with the
//! node distances of `skelaff_locality::Machine` passed to qemu as `-numa
//! dist` (so the guest's ACPI SLIT, the kernel and hwloc report them), and
//! `skelaff.machine=NAME` on the kernel command line so the in-guest tests
//! know which distances to expect.

use skelaff_locality::{Machine, PaperMachine};

/// The guest shape (`NODESxCPUS`) and machine for a paper machine's name,
/// or `None` when `name` is not one (it is then a plain shape).
pub(crate) fn paper_shape(name: &str) -> Option<(String, Machine)> {
    let which: PaperMachine = name.trim().parse().ok()?;
    let m = Machine::paper(which);
    let cpus = m.cpus_per_node().first().copied().unwrap_or(1);
    Some((format!("{}x{cpus}", m.nodes()), m))
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
        let (spec, m) = paper_shape("numa16").unwrap();
        assert_eq!(spec, "8x2");
        let args = dist_args(&m);
        assert_eq!(args.len(), 2 * 28);
        assert_eq!(args[1], "dist,src=0,dst=1,val=11");
        assert!(args.contains(&"dist,src=0,dst=7,val=15".to_owned()));
        let (spec, m) = paper_shape("numa32").unwrap();
        assert_eq!((spec.as_str(), dist_args(&m)[3].as_str()), ("4x8", "dist,src=0,dst=2,val=36"));
        assert!(paper_shape("2x2").is_none());
    }
}
