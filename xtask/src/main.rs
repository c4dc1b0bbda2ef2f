//! Development tasks for the skelaff workspace.
//!
//! `cargo xtask numa-vm [--topology NODESxCPUS[+MEMONLY]]... [--timeout SECS]`
//! builds every `numa_vm*` test target of the workspace, packs the binaries
//! (with their shared libraries and a busybox) into an initramfs, boots it
//! under `qemu-system-x86_64 -accel tcg` with emulated NUMA nodes, and
//! reports each guest's result. Without `--topology` it runs `2x2`, `4x1`
//! and `2x1+1` (two nodes with one CPU each and a third with memory only,
//! and only 96 MiB of it, so that tests can fill that node). The kernel
//! command line says each node's size (`skelaff.node_mib=512,512,96`).
//! `--topology numa16` and `--topology numa32` boot the SkelAff paper's
//! machines (8 nodes x 2 CPUs, 4 nodes x 8 CPUs) with their node distances.
//!
//! `--stamp-sweep` runs all six STAMP applications in the locality test on
//! every guest (`--stamp-sweep=labyrinth,yada`: those named); by default two run, and only on 4x1 (or on every guest
//! named with `--topology`), as does NAS CG's locality test; `--only TEST`
//! runs only the test targets whose name contains TEST (e.g. `--only
//! stamp_locality`, `--only cg_locality`); `--features LIST` builds the
//! test targets with those features (the test command passes its own, so
//! that the targets its test build made are used as they are).
//!
//! `cargo xtask stamp-vs-c [build|run|all|table] ...` measures every STAMP
//! application side by side with STAMP's own C programs, sequential and on
//! TinySTM (see the `stamp_vs_c` module).
//!
//! One clap parser reads every task's arguments and refuses a bad one
//! (naming it and what is allowed) before anything is built, exiting with
//! 2; a task that fails prints `xtask: ` and its error with its causes, and
//! exits with 1.

use std::collections::BTreeSet;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use clap::{Args, CommandFactory as _, Parser, Subcommand};
use skelaff_testkit::GuestSpec;

mod machines;

mod stamp_vs_c;

const DEFAULT_TOPOLOGIES: [&str; 3] = ["2x2", "4x1", "2x1+1"];
/// The memory of a memory-only node (the third node of `2x1+1`), in MiB:
/// small, so that numa-alloc's `numa_vm_full_node` can fill it in seconds
/// and check what each policy does then; the other nodes get 512 MiB (256
/// on guests of more than four nodes).
const MEMORY_ONLY_NODE_MIB: u64 = 96;
/// The one default guest that runs the STAMP locality test: it is the
/// slowest test under TCG, and its table is taken on 4x1. Guests named with
/// `--topology` run it too.
const STAMP_LOCALITY_TOPOLOGY: &str = "4x1";
/// The tasks, as an unknown task's error lists them.
const TASKS: &str = "numa-vm, stamp-vs-c";

/// Development tasks for the skelaff workspace.
#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    override_usage = "cargo xtask numa-vm [--topology SPEC]... [--timeout SECS] [--stamp-sweep[=APP,...]] \
                      [--only TEST]... [--features LIST]\n       \
                      cargo xtask stamp-vs-c build|run|all|table [--help for its options]"
)]
struct Cli {
    #[command(subcommand)]
    task: Option<Task>,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Boot emulated NUMA machines under qemu and run every `numa_vm*` test target in each.
    #[command(override_usage = "cargo xtask numa-vm [--topology SPEC]... [--timeout SECS] \
                                [--stamp-sweep[=APP,...]] [--only TEST]... [--features LIST]")]
    NumaVm(NumaVm),
    /// Measure every STAMP application side by side with STAMP's C programs.
    StampVsC(stamp_vs_c::StampVsC),
    /// Moved: `cargo import-cycles`.
    #[command(hide = true)]
    ImportCycles {
        /// Whatever was given; refused.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `cargo xtask numa-vm`'s options.
#[derive(Debug, Args)]
struct NumaVm {
    /// A guest: NODESxCPUS[+MEMONLY] (e.g. 2x2, 8x2, 2x1+1) or one of the
    /// paper's machines (numa16, numa32, or one with fewer CPUs per node such
    /// as numa32/4x2); repeatable [default: 2x2, 4x1 and 2x1+1].
    #[arg(long = "topology", value_name = "SPEC", value_parser = parse_topology)]
    topologies: Vec<Guest>,
    /// One time limit in seconds (at least 1) for every guest [default: 15
    /// minutes per four vCPUs of each guest].
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    timeout: Option<Duration>,
    /// Run all six STAMP applications in the locality test on every guest,
    /// or those named (`--stamp-sweep=labyrinth,yada`) [default: two, only
    /// on 4x1 or the guests named with --topology].
    #[arg(long, value_name = "APP,...", num_args = 0..=1, require_equals = true, value_parser = parse_sweep)]
    stamp_sweep: Option<Option<String>>,
    /// Run only the test targets whose name contains TEST (e.g.
    /// stamp_locality, cg_locality); repeatable.
    #[arg(long, value_name = "TEST")]
    only: Vec<String>,
    /// Build the test targets with these features (e.g. skelaff/mpi).
    #[arg(long, value_name = "LIST")]
    features: Option<String>,
}

/// One guest to boot: its shape, and the paper machine (with its
/// distances) when it is one.
#[derive(Debug, Clone)]
struct Guest {
    spec: GuestSpec,
    machine: Option<skelaff_locality::Machine>,
}

/// `--topology`: a guest shape, or a paper machine by its name.
fn parse_topology(v: &str) -> Result<Guest> {
    let (shape, machine) = match machines::paper_shape(v) {
        Some(Ok((shape, m))) => (shape, Some(m)),
        Some(Err(e)) => return Err(anyhow!("{e}")),
        None => (v.to_owned(), None),
    };
    // clap prints a value parser's error by its `Display` alone (not the
    // chain), so the message is whole here.
    let spec =
        shape.parse::<GuestSpec>().map_err(|e| anyhow!("{e}; or one of the paper's machines: numa16, numa32"))?;
    Ok(Guest { spec, machine })
}

/// `--timeout`: whole seconds, at least one.
fn parse_timeout(v: &str) -> Result<Duration> {
    let secs: u64 = v.parse().map_err(|_| anyhow!("`{v}` is not a number of seconds"))?;
    if secs == 0 {
        bail!("a guest needs at least 1 second");
    }
    Ok(Duration::from_secs(secs))
}

/// `--stamp-sweep=APP,...`: comma-separated lower-case application names.
fn parse_sweep(apps: &str) -> Result<String> {
    if apps.is_empty() || apps.split(',').any(|a| a.is_empty() || !a.bytes().all(|b| b.is_ascii_lowercase())) {
        bail!("expected --stamp-sweep=APP[,APP...] with STAMP application names such as labyrinth,yada");
    }
    Ok(apps.to_owned())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::InvalidSubcommand => {
            let _ = e.print();
            eprintln!("the tasks are: {TASKS}");
            return ExitCode::from(2);
        }
        // Usage errors exit with 2, --help with 0 (clap's convention).
        Err(e) => e.exit(),
    };
    let result = match cli.task {
        Some(Task::NumaVm(args)) => numa_vm(args),
        Some(Task::StampVsC(args)) => stamp_vs_c::main(args),
        Some(Task::ImportCycles { .. }) => {
            Err(anyhow!("import-cycles is its own package now: run `cargo import-cycles`"))
        }
        None => {
            let _ = Cli::command().print_help();
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn numa_vm(args: NumaVm) -> Result<()> {
    let NumaVm { mut topologies, timeout, stamp_sweep, only, features } = args;
    let default_run = topologies.is_empty();
    if default_run {
        topologies =
            DEFAULT_TOPOLOGIES.iter().map(|t| Ok(Guest { spec: t.parse()?, machine: None })).collect::<Result<_>>()?;
    }

    let root = workspace_root()?;
    let work = root.join("target/numa-vm");
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    for tool in ["qemu-system-x86_64", "cpio", "ldd"] {
        which(tool).ok_or_else(|| {
            anyhow!(
                "`{tool}` is not installed; run `scripts/setup` (as root) or `apt-get install qemu-system-x86 cpio`"
            )
        })?;
    }
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .context("busybox is not installed; run `scripts/setup` or `apt-get install busybox-static`")?;

    let kernel = kernel(&work)?;
    let mut tests = build_tests(&root, features.as_deref())?;
    if !only.is_empty() {
        let all: Vec<String> = tests.iter().map(|(n, _)| n.clone()).collect();
        tests.retain(|(name, _)| only.iter().any(|o| name.contains(o.as_str())));
        if tests.is_empty() {
            bail!("--only {}: no such test; the tests are: {}", only.join(", "), all.join(", "));
        }
    }
    let initramfs = make_initramfs(&work, &busybox, &tests)?;

    let mut failed = Vec::new();
    for Guest { spec, machine } in &topologies {
        let start = Instant::now();
        let mut locality = Vec::new();
        let stamp = if let Some(apps) = &stamp_sweep {
            match apps {
                None => StampLocality::All,
                Some(list) => StampLocality::Some(list.clone()),
            }
        } else if default_run && spec.to_string() != STAMP_LOCALITY_TOPOLOGY {
            StampLocality::Off
        } else {
            StampLocality::Default
        };
        let limit = timeout.unwrap_or_else(|| guest_limit(spec.total_cpus()));
        let outcome = boot(&kernel, &initramfs, spec, machine.as_ref(), stamp, limit, &mut locality);
        let name = machine.as_ref().map_or_else(|| spec.to_string(), |m| m.name().to_owned());
        if let Some(path) = machines::save_locality(&work, &name, &locality)? {
            println!("numa-vm {name}: {} locality runs in {}", locality.len(), path.display());
        }
        match outcome {
            Ok(()) => println!("numa-vm {spec}: PASSED in {:.0?}", start.elapsed()),
            Err(e) => {
                println!("numa-vm {spec}: FAILED in {:.0?}: {e:#}", start.elapsed());
                failed.push(spec.to_string());
            }
        }
    }
    if failed.is_empty() {
        println!("numa-vm: all {} topologies passed", topologies.len());
        Ok(())
    } else {
        Err(anyhow!("placement checks failed on {}", failed.join(", ")))
    }
}

/// The workspace's root: above xtask's manifest directory, which `cargo
/// xtask` sets at run time; a binary started directly (as the test command
/// starts the one its test build made) uses the directory it was built in.
fn workspace_root() -> Result<PathBuf> {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned());
    Path::new(&manifest)
        .parent()
        .map(Path::to_path_buf)
        .with_context(|| format!("{manifest}: xtask has no parent directory"))
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(tool)).find(|p| p.is_file()))
}

fn run(cmd: &mut Command) -> Result<String> {
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A Debian 6.1 kernel: `$SKELAFF_VM_KERNEL`, a cached one, or the newest
/// `linux-image-6.1.0-N-amd64` fetched with `apt-get download`.
fn kernel(work: &Path) -> Result<PathBuf> {
    if let Some(k) = std::env::var_os("SKELAFF_VM_KERNEL") {
        return Ok(PathBuf::from(k));
    }
    let dir = work.join("kernel");
    let find = |dir: &Path| -> Option<PathBuf> {
        fs::read_dir(dir.join("boot"))
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("vmlinuz-")))
    };
    if let Some(k) = find(&dir) {
        return Ok(k);
    }
    let list = run(Command::new("apt-cache").args(["search", "--names-only", r"^linux-image-6\.1\.0-[0-9]+-amd64$"]))?;
    let package = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .max_by_key(|p| {
            p.trim_start_matches("linux-image-6.1.0-").trim_end_matches("-amd64").parse::<u32>().unwrap_or(0)
        })
        .context("no linux-image-6.1.0-*-amd64 package found; run `apt-get update` (Debian 12 package lists)")?
        .to_owned();
    println!("numa-vm: fetching kernel package {package}");
    let dl = work.join("download");
    let _ = fs::remove_dir_all(&dl);
    fs::create_dir_all(&dl).with_context(|| format!("creating {}", dl.display()))?;
    run(Command::new("apt-get").arg("download").arg(&package).current_dir(&dl))?;
    let deb = fs::read_dir(&dl)
        .with_context(|| format!("reading {}", dl.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .context("apt-get download produced no .deb")?;
    let tmp = work.join("kernel.tmp");
    let _ = fs::remove_dir_all(&tmp);
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tmp))?;
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("boot")).with_context(|| format!("creating {}/boot", dir.display()))?;
    let k = find(&tmp).context("the kernel package holds no boot/vmlinuz-*")?;
    let dest = dir.join("boot").join(k.file_name().with_context(|| format!("{}: bad kernel name", k.display()))?);
    fs::copy(&k, &dest).with_context(|| format!("copying {} to {}", k.display(), dest.display()))?;
    let _ = fs::remove_dir_all(&tmp);
    let _ = fs::remove_dir_all(&dl);
    Ok(dest)
}

/// Builds every test target whose name starts with `numa_vm`; returns
/// `(package.target, executable)` pairs.
/// Builds every `numa_vm*` test target, with `features` (`--features`) when
/// given: the test command passes those of its own test build, whose
/// artifacts these then are, so nothing is compiled again.
fn build_tests(root: &Path, features: Option<&str>) -> Result<Vec<(String, PathBuf)>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    println!("numa-vm: building the numa_vm test targets");
    let mut cmd = Command::new(cargo);
    cmd.args(["test", "--workspace", "--test", "numa_vm*", "--no-run", "--message-format=json-render-diagnostics"]);
    if let Some(f) = features {
        cmd.args(["--features", f]);
    }
    let out = cmd.current_dir(root).stderr(Stdio::inherit()).output().context("running cargo")?;
    if !out.status.success() {
        bail!("building the numa_vm tests failed");
    }
    let mut tests = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let target = msg["target"]["name"].as_str().unwrap_or("");
        if msg["reason"] != "compiler-artifact" || !target.starts_with("numa_vm") {
            continue;
        }
        if let Some(exe) = msg["executable"].as_str() {
            let pkg = msg["package_id"].as_str().unwrap_or("pkg");
            // package_id looks like `path+file:///…/crates/spmv#skelaff-spmv@0.1.0`.
            let crate_name = pkg.rsplit('#').next().unwrap_or(pkg).split('@').next().unwrap_or(pkg);
            let name = format!("{crate_name}.{target}");
            tests.push((name, PathBuf::from(exe)));
        }
    }
    if tests.is_empty() {
        bail!("cargo built no numa_vm test");
    }
    tests.sort();
    Ok(tests)
}

/// Copies the files under `from` to `to`, directories included.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &dest)?;
        } else {
            fs::copy(entry.path(), dest)?;
        }
    }
    Ok(())
}

fn make_initramfs(work: &Path, busybox: &Path, tests: &[(String, PathBuf)]) -> Result<PathBuf> {
    let dir = work.join("initramfs");
    let _ = fs::remove_dir_all(&dir);
    for d in ["bin", "proc", "sys", "dev", "tmp", "tests"] {
        fs::create_dir_all(dir.join(d)).with_context(|| format!("creating {}/{d}", dir.display()))?;
    }
    fs::copy(busybox, dir.join("bin/busybox")).context("copying busybox")?;
    let mut libs = BTreeSet::new();
    for (name, exe) in tests {
        let dest = dir.join("tests").join(name);
        // Debug info is most of a test binary; the guest does not need it.
        if run(Command::new("objcopy").arg("--strip-debug").arg(exe).arg(&dest)).is_err() {
            fs::copy(exe, &dest).with_context(|| format!("copying {}", exe.display()))?;
        }
        for line in run(Command::new("ldd").arg(exe))?.lines() {
            // `libx.so => /lib/…/libx.so (0x…)` or `/lib64/ld-linux-x86-64.so.2 (0x…)`.
            let path = line.split("=>").last().unwrap_or("").split_whitespace().next().unwrap_or("");
            if path.starts_with('/') {
                libs.insert(PathBuf::from(path));
            }
        }
    }
    // The input files the crates ship (yada's meshes, kmeans's points),
    // at the absolute path the test binaries were built to read them from.
    let data = workspace_root()?.join("crates/stamp-core/data");
    let inside =
        dir.join(data.strip_prefix("/").with_context(|| format!("{} is not an absolute path", data.display()))?);
    copy_tree(&data, &inside).with_context(|| format!("copying {} into the guest", data.display()))?;
    for lib in &libs {
        let real = fs::canonicalize(lib).with_context(|| format!("resolving {}", lib.display()))?;
        let dest =
            dir.join(lib.strip_prefix("/").with_context(|| format!("{} is not an absolute path", lib.display()))?);
        let parent = dest.parent().with_context(|| format!("{}: a library without a directory", dest.display()))?;
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        fs::copy(&real, &dest).with_context(|| format!("copying {}", real.display()))?;
    }
    let init = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
status=0
for t in /tests/*; do
  echo "SKELAFF-VM-RUN $t"
  RUST_BACKTRACE=1 "$t"
  rc=$?
  echo "SKELAFF-VM-EXIT $t $rc"
  [ "$rc" -eq 0 ] || status=1
done
echo "SKELAFF-VM-DONE $status"
poweroff -f
"#;
    fs::write(dir.join("init"), init).with_context(|| format!("writing {}/init", dir.display()))?;
    run(Command::new("chmod").arg("+x").arg(dir.join("init")))?;
    let cpio = work.join("initramfs.cpio");
    let sh = format!("cd '{}' && find . | cpio -o -H newc --quiet > '{}'", dir.display(), cpio.display());
    run(Command::new("sh").arg("-c").arg(sh))?;
    Ok(cpio)
}

/// A guest's time limit when `--timeout` is not given: a guard against a
/// hung guest, sized from the guest's shape. Under TCG every vCPU is a host
/// thread, so on a two-core host a guest's tests take about as much longer
/// as it has more vCPUs (the four-vCPU default guests pass in 30 to 110 s;
/// `--topology numa16`, 16 vCPUs, ran past the old fixed limit of 15
/// minutes with every check it had run passing). So: 15 minutes per four
/// vCPUs, an hour for NUMA16, two for NUMA32.
fn guest_limit(cpus: usize) -> Duration {
    Duration::from_secs(900 * cpus.div_ceil(4).max(1) as u64)
}

/// Which STAMP applications a guest's locality test runs (`Off` also
/// skips NAS CG's locality test, `numa_vm_cg_locality`).
#[derive(Clone)]
enum StampLocality {
    /// None (a default guest other than [`STAMP_LOCALITY_TOPOLOGY`]).
    Off,
    /// The test's default pair.
    Default,
    /// All of them (`--stamp-sweep`).
    All,
    /// Those named, comma-separated (`--stamp-sweep=labyrinth,yada`).
    Some(String),
}

fn boot(
    kernel: &Path,
    initramfs: &Path,
    spec: &GuestSpec,
    machine: Option<&skelaff_locality::Machine>,
    stamp: StampLocality,
    timeout: Duration,
    locality: &mut Vec<String>,
) -> Result<()> {
    let node_mib: u64 = if spec.total_nodes() <= 4 { 512 } else { 256 };
    let sizes: Vec<u64> =
        (0..spec.total_nodes()).map(|n| if n < spec.nodes { node_mib } else { MEMORY_ONLY_NODE_MIB }).collect();
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(["-accel", "tcg", "-cpu", "max", "-nographic", "-no-reboot", "-nodefaults", "-serial", "stdio"]);
    cmd.args(["-m", &format!("{}M", sizes.iter().sum::<u64>())]);
    cmd.args(["-smp", &format!("{},sockets={},cores={},threads=1", spec.total_cpus(), spec.nodes, spec.cpus_per_node)]);
    for (n, mib) in sizes.iter().enumerate() {
        cmd.args(["-object", &format!("memory-backend-ram,id=m{n},size={mib}M")]);
        let cpus = if n < spec.nodes {
            format!(",cpus={}-{}", n * spec.cpus_per_node, (n + 1) * spec.cpus_per_node - 1)
        } else {
            String::new()
        };
        cmd.args(["-numa", &format!("node,nodeid={n}{cpus},memdev=m{n}")]);
    }
    // Automatic NUMA balancing (on by default in Debian's kernel) migrates
    // pages behind the placement checks' backs and makes `move_pages` report
    // pages it has just unmapped for hinting as not resident: off, and the
    // locality check that measures it switches it on for itself.
    // Transparent huge pages only where asked for (`madvise`, as on this
    // build host; Debian's kernel defaults to `always`): the profiles, the
    // NUCA study's schemes and the migrator place 4 KiB pages, and under
    // `always` a heap page moved to one node took its whole 2 MiB huge
    // page along, so the next sampled page of that huge page moved it
    // again (the applied oracle found 33-80% of its moved pages elsewhere
    // at the end of the run).
    let mut append = format!(
        "console=ttyS0 quiet panic=-1 numa_balancing=disable transparent_hugepage=madvise \
         skelaff.topology={spec} skelaff.node_mib={}",
        sizes.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
    );
    if let Some(m) = machine {
        cmd.args(machines::dist_args(m));
        append.push_str(&format!(" skelaff.machine={}", m.name()));
    }
    match stamp {
        StampLocality::All => append.push_str(" skelaff.locality_sweep=all"),
        StampLocality::Some(apps) => append.push_str(&format!(" skelaff.locality_sweep={apps}")),
        StampLocality::Off => append.push_str(" skelaff.locality_sweep=off"),
        StampLocality::Default => {}
    }
    cmd.arg("-kernel").arg(kernel).arg("-initrd").arg(initramfs);
    cmd.args(["-append", &append]);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let memory_only = if spec.memory_only > 0 {
        format!(" ({MEMORY_ONLY_NODE_MIB} MiB on each memory-only node)")
    } else {
        String::new()
    };
    println!(
        "numa-vm {spec}: booting {} nodes, {} CPUs, {node_mib} MiB per node{memory_only}",
        spec.total_nodes(),
        spec.total_cpus()
    );
    let mut child = cmd.spawn().context("starting qemu")?;
    let stdout = child.stdout.take().context("no qemu stdout")?;
    let mut stderr = child.stderr.take().context("no qemu stderr")?;
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).split(b'\n') {
            let Ok(line) = line else { break };
            let line = String::from_utf8_lossy(&line).replace(['\r', '\u{1b}'], "");
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + timeout;
    let mut done = None;
    let mut failures = Vec::new();
    // When the running test started, to print each test's time.
    let mut started: Option<(String, Instant)> = None;
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                if let Some(json) = line.trim().strip_prefix(machines::LOCALITY_LINE) {
                    locality.push(json.to_owned());
                    continue;
                }
                println!("  [{spec}] {line}");
                // The first line of the guest's output follows the
                // firmware's terminal escapes on the same line.
                if let Some((_, test)) = line.trim().split_once("SKELAFF-VM-RUN ") {
                    started = Some((test.to_owned(), Instant::now()));
                }
                if let Some(rest) = line.trim().strip_prefix("SKELAFF-VM-EXIT ") {
                    if let Some((test, at)) = started.take() {
                        println!("  [{spec}] {test} took {:.0?}", at.elapsed());
                    }
                    if !rest.ends_with(" 0") {
                        failures.push(rest.to_owned());
                    }
                }
                if let Some(s) = line.trim().strip_prefix("SKELAFF-VM-DONE ") {
                    done = Some(s.trim() == "0");
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("timed out after {timeout:?}");
            }
        }
    }
    let _ = reader.join();
    let status = child.wait().context("waiting for qemu")?;
    let mut err = String::new();
    let _ = stderr.read_to_string(&mut err);
    match done {
        Some(true) if failures.is_empty() => Ok(()),
        Some(_) => Err(anyhow!("test binaries failed: {}", failures.join("; "))),
        None => Err(anyhow!("the guest stopped before finishing (qemu {status}): {}", err.trim())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numa_vm(args: &[&str]) -> NumaVm {
        let cli = Cli::try_parse_from(["xtask", "numa-vm"].iter().chain(args)).unwrap();
        match cli.task {
            Some(Task::NumaVm(a)) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_parser_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn numa_vm_options_parse() {
        let a = numa_vm(&["--features", "skelaff/mpi"]);
        assert_eq!((a.features.as_deref(), a.stamp_sweep, a.timeout), (Some("skelaff/mpi"), None, None));
        assert!(a.topologies.is_empty() && a.only.is_empty());
        let a = numa_vm(&["--stamp-sweep", "--only", "stamp_locality", "--only", "cg_locality", "--timeout", "60"]);
        assert_eq!(a.stamp_sweep, Some(None));
        assert_eq!(a.only, ["stamp_locality", "cg_locality"]);
        assert_eq!(a.timeout, Some(Duration::from_secs(60)));
        let a = numa_vm(&["--topology", "numa32/4x2", "--topology", "2x1+1", "--stamp-sweep=labyrinth,yada"]);
        assert_eq!(a.stamp_sweep, Some(Some("labyrinth,yada".to_owned())));
        let shapes: Vec<String> = a.topologies.iter().map(|g| g.spec.to_string()).collect();
        assert_eq!(shapes, ["4x2", "2x1+1"]);
        assert_eq!(a.topologies[0].machine.as_ref().map(|m| m.name()), Some("numa32/4x2"));
        assert!(a.topologies[1].machine.is_none());
    }
}
