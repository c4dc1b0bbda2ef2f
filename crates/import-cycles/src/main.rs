//! `cargo import-cycles [CRATE_ROOT.rs]...` (an alias of `cargo run -p
//! skelaff-import-cycles --`): every circle of imports
//! between the modules of each crate of the workspace (every target:
//! libraries, binaries, tests, examples, benches, build scripts; or the
//! crates whose root files are named), with the files and lines that close
//! it; fails when there is one.
//!
//! Modules are the nodes (a file module, or an inline `mod x { .. }`). A
//! module depends on another when its code names it: a path starting with
//! `crate`, `self`, `super` or one of its child modules, in a `use` or
//! anywhere else (see [`tree`] for how a path is resolved; a name that a
//! module only re-exports counts as a use of the module it comes from).
//!
//! Ancestors. A child may use its ancestors' own items and an ancestor may
//! use its children (a `mod.rs` with the shared types, a crate root with
//! `pub use`): a cycle whose modules all lie on one line of descent (each
//! an ancestor or a descendant of every other) is nesting, not a circle,
//! and is not reported. So a child's use of its parent counts only where
//! the parent, in turn, depends on one of the child's siblings (or
//! cousins) that leads back to the child: a cycle is reported when it
//! holds two modules neither of which contains the other.

mod cycles;
mod lex;
mod tree;

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context as _, Result, anyhow, bail};

use tree::{Crate, Evidence};

/// Cycles listed per circle; the rest are counted.
const SHOWN_CYCLES: usize = 5;
/// Steps of the cycle search per circle (the graphs are a few dozen modules).
const SEARCH_BUDGET: usize = 2_000_000;

/// A set of modules that depend on each other in a circle.
#[derive(Debug)]
pub(crate) struct Circle {
    /// Its modules (`crate::a::b`) and their files.
    modules: Vec<(String, Vec<PathBuf>)>,
    /// The references on its cycles: importer, imported, where.
    edges: Vec<(String, String, Evidence)>,
    /// Its elementary cycles, shortest first (module names).
    cycles: Vec<Vec<String>>,
    /// The search for cycles stopped before it had seen them all.
    truncated: bool,
}

/// The circles of one crate.
#[derive(Debug)]
pub(crate) struct CrateReport {
    pub(crate) circles: Vec<Circle>,
    /// `mod` declarations whose file was not found: declaring file, expected path.
    pub(crate) missing: Vec<(PathBuf, PathBuf)>,
}

/// The circles of the crate whose root file is `root`, its files read with `read`.
///
/// # Errors
///
/// When the root file cannot be read.
pub(crate) fn check_crate(root: &Path, read: &dyn Fn(&Path) -> io::Result<String>) -> Result<CrateReport> {
    let krate = Crate::read(root, read)?;
    let evidence = krate.edges();
    let edges: BTreeSet<(usize, usize)> = evidence.keys().copied().collect();
    // Not nesting: some module of the cycle is neither above nor below the deepest one.
    let crosses = |cycle: &[usize]| {
        let deepest = cycle.iter().copied().max_by_key(|&m| krate.modules[m].path.len()).unwrap_or(0);
        !cycle.iter().all(|&m| krate.is_ancestor_or_self(m, deepest))
    };
    let mut circles = Vec::new();
    for comp in cycles::components(krate.modules.len(), &edges) {
        let (found, truncated) = cycles::cycles(&comp, &edges, &crosses, SEARCH_BUDGET);
        if found.is_empty() && !truncated {
            continue;
        }
        let on_cycles: BTreeSet<(usize, usize)> =
            found.iter().flat_map(|c| c.iter().zip(c.iter().cycle().skip(1)).map(|(&a, &b)| (a, b))).collect();
        let members: BTreeSet<usize> =
            if found.is_empty() { comp.into_iter().collect() } else { found.iter().flatten().copied().collect() };
        circles.push(Circle {
            modules: members.iter().map(|&m| (krate.name(m), krate.modules[m].files.clone())).collect(),
            edges: on_cycles.iter().map(|&(a, b)| (krate.name(a), krate.name(b), evidence[&(a, b)].clone())).collect(),
            cycles: found.iter().map(|c| c.iter().map(|&m| krate.name(m)).collect()).collect(),
            truncated,
        });
    }
    Ok(CrateReport { circles, missing: krate.missing })
}

/// Runs the check over the crates whose root files `args` name, or, with
/// none, over every target of every workspace package.
fn check(args: &[String]) -> Result<()> {
    if let Some(a) = args.iter().find(|a| a.starts_with('-')) {
        bail!("unknown option `{a}`; usage: cargo import-cycles [CRATE_ROOT.rs]...");
    }
    let root = workspace_root();
    let targets =
        if args.is_empty() { targets(&root)? } else { args.iter().map(|a| (a.clone(), PathBuf::from(a))).collect() };
    let read = |p: &Path| std::fs::read_to_string(p);
    let rel = |p: &Path| p.strip_prefix(&root).unwrap_or(p).display().to_string();
    let (mut total, mut crates_with) = (0, 0);
    for (label, src) in &targets {
        let report = check_crate(src, &read)?;
        for (from, want) in &report.missing {
            println!("import-cycles: warning: {} declares a module whose file {} was not found", rel(from), rel(want));
        }
        if report.circles.is_empty() {
            continue;
        }
        crates_with += 1;
        total += report.circles.len();
        println!("{label} ({}): {} circle(s)", rel(src), report.circles.len());
        for (k, c) in report.circles.iter().enumerate() {
            let files: BTreeSet<String> = c.modules.iter().flat_map(|(_, f)| f.iter().map(|f| rel(f))).collect();
            println!(
                "  circle {}: {} modules, {}{} cycle(s), files: {}",
                k + 1,
                c.modules.len(),
                c.cycles.len(),
                if c.truncated { "+" } else { "" },
                files.into_iter().collect::<Vec<_>>().join(", ")
            );
            for (a, b, e) in &c.edges {
                println!("    {a} -> {b}  at {}:{} `{}`", rel(&e.file), e.line, e.path);
            }
            for cycle in c.cycles.iter().take(SHOWN_CYCLES) {
                println!("    cycle: {} -> {}", cycle.join(" -> "), cycle[0]);
            }
            if c.cycles.len() > SHOWN_CYCLES {
                println!("    ... and {} more cycle(s)", c.cycles.len() - SHOWN_CYCLES);
            }
        }
    }
    println!("import-cycles: {total} circle(s) in {crates_with} of {} crate targets", targets.len());
    if total == 0 { Ok(()) } else { Err(anyhow!("{total} import circle(s) between modules; see above")) }
}

/// The workspace's root: two levels above this package's manifest.
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.ancestors().nth(2).unwrap_or(manifest).to_path_buf()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("usage: cargo import-cycles [CRATE_ROOT.rs]...");
        println!("Lists every circle of imports between the modules of each crate target of the workspace");
        println!("(or of the crates whose root files are named) and fails if there is one.");
        return ExitCode::SUCCESS;
    }
    match check(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("import-cycles: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Every target of the workspace's packages: a label and its root file,
/// from `cargo metadata`.
fn targets(root: &Path) -> Result<Vec<(String, PathBuf)>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(root)
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).context("reading cargo metadata's output")?;
    let mut seen = BTreeSet::new();
    let mut targets = Vec::new();
    for pkg in meta["packages"].as_array().context("cargo metadata: no packages")? {
        for t in pkg["targets"].as_array().into_iter().flatten() {
            let (Some(src), Some(name)) = (t["src_path"].as_str(), t["name"].as_str()) else { continue };
            let kind = t["kind"].as_array().and_then(|k| k.first()).and_then(|k| k.as_str()).unwrap_or("?");
            if seen.insert(src.to_owned()) {
                let pkg_name = pkg["name"].as_str().unwrap_or("?");
                targets.push((format!("{pkg_name} {kind} `{name}`"), PathBuf::from(src)));
            }
        }
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Checks the crate made of `files` (path, source), rooted at `src/lib.rs`.
    fn check(files: &[(&str, &str)]) -> CrateReport {
        let files: BTreeMap<PathBuf, String> = files.iter().map(|(p, s)| (PathBuf::from(p), (*s).to_owned())).collect();
        check_crate(Path::new("src/lib.rs"), &|p| files.get(p).cloned().ok_or_else(|| io::ErrorKind::NotFound.into()))
            .unwrap()
    }

    fn cycles(r: &CrateReport) -> Vec<Vec<String>> {
        r.circles.iter().flat_map(|c| c.cycles.clone()).collect()
    }

    /// A facade root, a `mod.rs` with shared types, children using both.
    const TREE: &[(&str, &str)] = &[
        ("src/lib.rs", "mod a;\nmod b;\npub mod net;\npub use a::A;\npub use b::B;\npub struct Root;\n"),
        ("src/a.rs", "use crate::Root;\npub struct A;\nfn f() -> crate::b::B { crate::b::B }\n"),
        ("src/b.rs", "/// Unlike [`crate::a::A`], a comment.\npub struct B;\nconst S: &str = \"crate::a::A\";\n"),
        ("src/net/mod.rs", "mod wire;\npub struct Frame;\nfn g() { wire::send() }\n"),
        ("src/net/wire.rs", "use super::Frame;\npub fn send() {}\n#[cfg(test)]\nmod tests { use super::*; }\n"),
    ];

    #[test]
    fn nesting_is_not_a_circle() {
        let r = check(TREE);
        assert!(r.circles.is_empty(), "{r:#?}");
        assert!(r.missing.is_empty(), "{r:#?}");
    }

    #[test]
    fn a_circle_between_siblings_is_found_with_its_lines() {
        let mut files = TREE.to_vec();
        // b names A through the root's re-export: a dependency on `a`, not on the root.
        files[2] = ("src/b.rs", "use crate::A;\npub struct B;\n");
        let r = check(&files);
        assert_eq!(cycles(&r), vec![vec!["crate::a".to_owned(), "crate::b".to_owned()]]);
        let c = &r.circles[0];
        assert_eq!(c.modules.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>(), ["crate::a", "crate::b"]);
        let at: Vec<(String, usize)> = c.edges.iter().map(|(_, _, e)| (e.file.display().to_string(), e.line)).collect();
        assert_eq!(at, [("src/a.rs".to_owned(), 3), ("src/b.rs".to_owned(), 1)]);
    }

    #[test]
    fn a_re_export_counts_only_where_the_module_s_own_code_uses_it() {
        // a uses the root's own Root; b uses a; the root re-exports B.
        let mut files = TREE.to_vec();
        files[1] = ("src/a.rs", "use crate::Root;\npub struct A;\n");
        files[2] = ("src/b.rs", "pub struct B;\nfn g() -> crate::A { crate::A }\n");
        assert!(check(&files).circles.is_empty());
        // Now the root's own code makes a B: root -> b -> a -> root.
        files[0] = (
            "src/lib.rs",
            "mod a;\nmod b;\npub use a::A;\npub use b::B;\npub struct Root;\npub fn make() -> B { B }\n",
        );
        assert_eq!(cycles(&check(&files)), vec![vec!["crate".to_owned(), "crate::b".into(), "crate::a".into()]]);
    }

    #[test]
    fn a_parent_that_leads_back_through_a_sibling_is_a_circle() {
        // wire uses its parent's own Frame (nesting), but the parent's Frame
        // needs `codec`, which needs `wire`.
        let mut files = TREE.to_vec();
        files[3] = ("src/net/mod.rs", "mod wire;\nmod codec;\npub struct Frame(codec::Codec);\n");
        files.push(("src/net/codec.rs", "pub struct Codec;\nfn h() { super::wire::send() }\n"));
        let r = check(&files);
        assert_eq!(
            cycles(&r),
            vec![vec!["crate::net".to_owned(), "crate::net::codec".into(), "crate::net::wire".into()]]
        );
    }

    #[test]
    fn inline_modules_paths_in_expressions_and_path_attributes_count() {
        let r = check(&[
            (
                "src/lib.rs",
                "mod outer {\n    pub mod x { pub fn f() { crate::y::g() } }\n}\n#[path = \"why.rs\"]\nmod y;\n",
            ),
            ("src/why.rs", "pub fn g() {}\nfn h() { let _ = crate::outer::x::f; }\n"),
        ]);
        assert_eq!(cycles(&r), vec![vec!["crate::outer::x".to_owned(), "crate::y".into()]]);
        assert_eq!(r.circles[0].modules[0].1, [PathBuf::from("src/lib.rs")]);
    }

    /// A file included with `#[path]` finds its own `mod x;` children
    /// beside it, as rustc does.
    #[test]
    fn a_file_named_by_path_has_its_children_beside_it() {
        let r = check(&[
            ("src/lib.rs", "#[path = \"other.rs\"]\nmod other;\n"),
            ("src/other.rs", "mod common;\n"),
            ("src/common/mod.rs", "pub fn f() {}\n"),
        ]);
        assert!(r.missing.is_empty(), "{r:#?}");
    }

    #[test]
    fn missing_module_files_are_reported() {
        let r = check(&[("src/lib.rs", "mod gone;\n")]);
        assert_eq!(r.missing, [(PathBuf::from("src/lib.rs"), PathBuf::from("src/gone.rs"))]);
    }
}
