//! `skelaff inspect`: the topology, and where each policy puts pages.

use serde_json::{Value, json};
use skelaff::numa::{NodeSet, NumaRegion, PageLocation, Policy, RegionOptions, Source, Topology, policy::ByteSize};

/// Options of `skelaff inspect`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Also allocate a region under each page policy and print its placement.
    #[arg(long)]
    demo: bool,
    /// Pages per demo region.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pages: u64,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &Args) -> Result<(), skelaff::numa::Error> {
    let topo = Topology::get()?;
    print_topology(topo);
    let mut demo = Vec::new();
    if args.demo {
        println!();
        println!(
            "Placement demo: {} pages of {} bytes per policy, prefaulted by the main thread",
            args.pages,
            topo.page_size()
        );
        for policy in demo_policies(topo) {
            let len = args.pages as usize * topo.page_size();
            let region = NumaRegion::new(len, RegionOptions::new(policy).prefault(true))?;
            let placement = region.placement()?;
            let strip: String = placement
                .pages()
                .iter()
                .take(64)
                .map(|p| match p {
                    PageLocation::Node(n) => char::from_digit((*n % 36) as u32, 36).unwrap_or('?'),
                    PageLocation::NotResident => '.',
                    PageLocation::Unknown(_) => '?',
                })
                .collect();
            println!("  {:<24} {:<40} {}", policy.to_string(), placement.to_string(), strip);
            demo.push(json!({
                "policy": policy.to_string(),
                "pages": placement.pages().len(),
                "per_node": placement.histogram().iter().map(|(n, c)| json!({"node": n, "pages": c})).collect::<Vec<_>>(),
                "not_resident": placement.not_resident(),
            }));
        }
        println!("  (strip: the node of each of the first 64 pages; '.' = not resident)");
    }
    if args.json {
        println!("{}", json!({ "topology": topology_json(topo), "demo": demo }));
    }
    Ok(())
}

fn demo_policies(topo: &Topology) -> Vec<Policy> {
    let allowed = topo.allowed_nodes();
    let first = allowed.first().unwrap_or(0);
    let last = allowed.iter().last().unwrap_or(0);
    let mut v = vec![Policy::FirstTouch, Policy::Local, Policy::Bind(NodeSet::single(first))];
    if last != first {
        v.push(Policy::Bind(NodeSet::single(last)));
    }
    v.push(Policy::Preferred(last));
    v.push(Policy::Interleave(allowed));
    v.push(Policy::Cyclic { nodes: allowed, block: 4 * topo.page_size() });
    v
}

fn print_topology(topo: &Topology) {
    println!(
        "Machine ({}): {} NUMA node(s), {} core(s), {} hardware thread(s), {} last-level cache group(s)",
        match topo.source() {
            Source::Hwloc => "from hwloc",
            Source::Sysfs => "from sysfs",
            _ => "synthetic",
        },
        topo.nodes().len(),
        topo.cores().len(),
        topo.pus().len(),
        topo.cache_groups().len()
    );
    println!("Allowed: CPUs {} | nodes {}", topo.allowed_cpus(), topo.allowed_nodes());
    let huge: Vec<String> = topo.huge_page_sizes().iter().map(|s| ByteSize(*s).to_string()).collect();
    println!(
        "Pages: base {} | explicit huge [{}] | transparent huge {}",
        ByteSize(topo.page_size()),
        huge.join(", "),
        topo.thp_size().map_or("unavailable".to_owned(), |s| ByteSize(s).to_string())
    );
    println!();
    println!("  {:<6} {:<16} {:>12}  huge pages (size: free/total)", "node", "CPUs", "memory");
    for n in topo.nodes() {
        let cpus = if n.cpus.is_empty() { "(memory only)".to_owned() } else { n.cpus.to_string() };
        let pools: Vec<String> =
            n.huge_pages.iter().map(|p| format!("{}: {}/{}", ByteSize(p.size), p.free, p.total)).collect();
        println!("  {:<6} {:<16} {:>9} MiB  {}", n.os_index, cpus, n.memory >> 20, pools.join(", "));
    }
    if topo.has_distances() {
        println!();
        print!("  distances");
        for b in topo.nodes() {
            print!(" {:>5}", b.os_index);
        }
        println!();
        for a in topo.nodes() {
            print!("  {:>9}", a.os_index);
            for b in topo.nodes() {
                print!(" {:>5}", topo.distance(a.os_index, b.os_index).unwrap_or(0));
            }
            println!();
        }
    } else {
        println!("  (no node distances: one node, or none reported)");
    }
    println!();
    for (i, g) in topo.cache_groups().iter().enumerate() {
        let what = if g.level == 0 { "no shared cache".to_owned() } else { format!("L{}", g.level) };
        let size = g.size.map_or(String::new(), |s| format!(" {}", ByteSize(s as usize)));
        println!("  cache group {i}: {what}{size}, CPUs {}", g.cpus);
    }
}

fn topology_json(topo: &Topology) -> Value {
    json!({
        "source": format!("{:?}", topo.source()).to_lowercase(),
        "nodes": topo.nodes().iter().map(|n| json!({
            "os_index": n.os_index,
            "cpus": n.cpus.to_string(),
            "memory_bytes": n.memory,
            "huge_pages": n.huge_pages.iter().map(|p| json!({"size": p.size, "free": p.free, "total": p.total})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "distances": topo.has_distances().then(|| topo.nodes().iter().map(|a| topo.nodes().iter().map(|b| topo.distance(a.os_index, b.os_index)).collect::<Vec<_>>()).collect::<Vec<_>>()),
        "cores": topo.cores().len(),
        "pus": topo.pus().len(),
        "cache_groups": topo.cache_groups().iter().map(|g| json!({"level": g.level, "size": g.size, "cpus": g.cpus.to_string()})).collect::<Vec<_>>(),
        "page_size": topo.page_size(),
        "huge_page_sizes": topo.huge_page_sizes(),
        "thp_size": topo.thp_size(),
        "allowed_cpus": topo.allowed_cpus().to_string(),
        "allowed_nodes": topo.allowed_nodes().to_string(),
    })
}
