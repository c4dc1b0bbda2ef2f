//! A crate's module tree, read from its root file by following `mod`
//! declarations, and the references between its modules.
//!
//! A reference is a path in a module's code that starts with `crate`,
//! `self`, `super` or the name of one of the module's own child modules, in
//! a `use` declaration or anywhere else (`crate::home::home_node()` in an
//! expression counts). It points at the deepest module the path names
//! (`crate::run::Worklist` points at `run`), with one exception: when the
//! item it names is not defined in that module but imported into it (a
//! re-export, `pub use run::Worklist;`, or any `use`, which descendants may
//! name), the reference points where the import resolves, so a child that
//! imports `crate::Worklist` depends on `run`, not on the crate root. A
//! re-export of another crate's item is no reference at all.
//!
//! A `pub` (or `pub(..)`) `use` at a module's top level is a re-export: it
//! makes the module depend on what it names only when the module's own
//! code (outside `use` declarations) mentions the name it binds; a glob
//! re-export (`pub use a::*`) never does. A crate root that re-exports its
//! modules' items therefore depends on none of them by doing so, while a
//! private `use` always counts (the compiler has checked it is used).
//!
//! Comments (doc comments too) are not read: an intra-doc link is no
//! dependency. Attributes are read as code (`#[strum(parse_err_ty =
//! crate::error::Error)]` is a use). Every `mod` counts, whatever its
//! `#[cfg]`; `#[path]` is followed.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::lex::{Kind, Token, tokens};

/// One module of a crate.
#[derive(Debug, Default)]
pub(super) struct Module {
    /// Its path from the crate root (empty for the root).
    pub(super) path: Vec<String>,
    pub(super) parent: Option<usize>,
    children: BTreeMap<String, usize>,
    /// The files its items are in (an inline module's file holds its parent
    /// too; a module declared under two `#[cfg]`s may have two).
    pub(super) files: Vec<PathBuf>,
    /// Items defined at its top level.
    defined: BTreeSet<String>,
    /// Its top-level `use` bindings: name -> path as written.
    uses: BTreeMap<String, Vec<String>>,
    /// Its top-level glob imports (`use a::b::*`): the paths before `*`.
    globs: Vec<Vec<String>>,
    /// Every path in its code that may name a module of this crate.
    refs: Vec<Ref>,
    /// Its re-exports (top-level `pub use`): the name bound and the path.
    reexports: Vec<(Binding, Ref)>,
    /// The identifiers its code mentions outside `use` declarations (not
    /// after `::` or `.`).
    mentioned: BTreeSet<String>,
}

/// A path written in a module's code.
#[derive(Debug, Clone)]
struct Ref {
    path: Vec<String>,
    file: PathBuf,
    line: usize,
}

/// Where a reference from one module to another was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Evidence {
    pub(super) file: PathBuf,
    pub(super) line: usize,
    /// The path as written, `::`-joined.
    pub(super) path: String,
}

/// A crate's modules; index 0 is the root.
#[derive(Debug)]
pub(super) struct Crate {
    pub(super) modules: Vec<Module>,
    /// Modules declared whose file was not found: (declaring file, expected path).
    pub(super) missing: Vec<(PathBuf, PathBuf)>,
}

impl Crate {
    /// Reads the crate whose root file is `root`, reading files with `read`.
    pub(super) fn read(root: &Path, read: &dyn Fn(&Path) -> io::Result<String>) -> anyhow::Result<Crate> {
        let src = read(root).with_context(|| format!("cannot read {}", root.display()))?;
        let mut krate = Crate { modules: vec![Module::default()], missing: Vec::new() };
        let dir = root.parent().unwrap_or(Path::new("")).to_path_buf();
        krate.parse_file(0, root, &src, dir, read);
        Ok(krate)
    }

    /// `m`'s child `name`, created if new.
    fn child(&mut self, m: usize, name: &str) -> usize {
        if let Some(&c) = self.modules[m].children.get(name) {
            return c;
        }
        let mut path = self.modules[m].path.clone();
        path.push(name.to_owned());
        let c = self.modules.len();
        self.modules.push(Module { path, parent: Some(m), ..Module::default() });
        self.modules[m].children.insert(name.to_owned(), c);
        c
    }

    /// Reads the items of `module` in `file` (`src`); its `mod x;`
    /// children are looked for in `child_dir`.
    fn parse_file(
        &mut self,
        module: usize,
        file: &Path,
        src: &str,
        child_dir: PathBuf,
        read: &dyn Fn(&Path) -> io::Result<String>,
    ) {
        let toks = tokens(src);
        let file_dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
        self.modules[module].files.push(file.to_path_buf());
        // Open inline modules: (module, brace depth of its items, directory of its `mod x;` children).
        let mut frames: Vec<(usize, usize, PathBuf)> = vec![(module, 0, child_dir)];
        let mut depth = 0usize;
        let mut path_attr: Option<String> = None;
        // The token before is a visibility (`pub`, `pub(crate)`, ...).
        let mut public = false;
        let mut i = 0;
        while i < toks.len() {
            let (m, base, dir) = frames.last().cloned().expect("the file's own frame is never popped");
            let top = depth == base;
            let after_pub = std::mem::take(&mut public);
            match &toks[i].kind {
                Kind::Punct('#') => {
                    // An attribute: `#[path = "..."]` is kept for the next
                    // `mod`; the paths in any other are read as code (a
                    // derive's `parse_err_ty = crate::error::Error` is a use).
                    let mut j = i + 1;
                    if toks.get(j).map(|t| &t.kind) == Some(&Kind::Punct('!')) {
                        j += 1;
                    }
                    if toks.get(j).map(|t| &t.kind) == Some(&Kind::Punct('[')) {
                        let end = matching(&toks, j, '[', ']');
                        if let [
                            Token { kind: Kind::Ident(p), .. },
                            Token { kind: Kind::Punct('='), .. },
                            Token { kind: Kind::Str(s), .. },
                        ] = &toks[j + 1..end]
                        {
                            if p == "path" {
                                path_attr = Some(s.clone());
                                i = end + 1;
                                continue;
                            }
                        }
                    }
                    i += 1;
                }
                Kind::Punct('{') => {
                    depth += 1;
                    i += 1;
                }
                Kind::Punct('}') => {
                    depth = depth.saturating_sub(1);
                    if frames.len() > 1 && depth + 1 == base {
                        frames.pop();
                    }
                    i += 1;
                }
                Kind::Ident(kw) if kw == "pub" => {
                    public = true;
                    i += 1;
                    if toks.get(i).map(|t| &t.kind) == Some(&Kind::Punct('(')) {
                        // `pub(crate)`, `pub(in crate::a)`: a visibility names no dependency.
                        i = matching(&toks, i, '(', ')') + 1;
                    }
                }
                Kind::Ident(kw) if kw == "mod" => {
                    let Some(Kind::Ident(name)) = toks.get(i + 1).map(|t| &t.kind) else {
                        i += 1;
                        continue;
                    };
                    let c = self.child(m, name);
                    if top {
                        self.modules[m].defined.insert(name.clone());
                    }
                    match toks.get(i + 2).map(|t| &t.kind) {
                        Some(Kind::Punct(';')) => {
                            let by_path = path_attr.is_some();
                            let candidates = match path_attr.take() {
                                Some(p) if frames.len() == 1 => vec![file_dir.join(p)],
                                Some(p) => vec![dir.join(p)],
                                None => vec![dir.join(format!("{name}.rs")), dir.join(name).join("mod.rs")],
                            };
                            match candidates.iter().find_map(|p| read(p).ok().map(|s| (p, s))) {
                                Some((p, s)) => {
                                    // A file named by `#[path]` is read as rustc
                                    // reads it: as a `mod.rs`, its own `mod x;`
                                    // children beside it (a test target that
                                    // includes another's root, `#[path =
                                    // "bank.rs"] mod bank;`, finds that root's
                                    // `mod common;` where the other does).
                                    let sub = if by_path || p.file_name().is_some_and(|f| f == "mod.rs") {
                                        p.parent().unwrap_or(Path::new("")).to_path_buf()
                                    } else {
                                        p.with_extension("")
                                    };
                                    self.parse_file(c, p, &s, sub, read);
                                }
                                None => self.missing.push((file.to_path_buf(), candidates[0].clone())),
                            }
                            i += 3;
                        }
                        Some(Kind::Punct('{')) => {
                            path_attr = None;
                            self.modules[c].files.push(file.to_path_buf());
                            depth += 1;
                            frames.push((c, depth, dir.join(name)));
                            i += 3;
                        }
                        _ => i += 2,
                    }
                }
                Kind::Ident(kw) if kw == "use" => {
                    let end = (i..toks.len()).find(|&j| toks[j].kind == Kind::Punct(';')).unwrap_or(toks.len());
                    let mut leaves = Vec::new();
                    let mut at = i + 1;
                    use_tree(&toks[..end], &mut at, Vec::new(), &mut leaves);
                    for leaf in leaves {
                        if top {
                            match &leaf.binding {
                                Binding::Name(n) => {
                                    self.modules[m].uses.insert(n.clone(), leaf.path.clone());
                                }
                                Binding::Glob => self.modules[m].globs.push(leaf.path.clone()),
                                Binding::None => {}
                            }
                        }
                        let r = Ref { path: leaf.path, file: file.to_path_buf(), line: toks[i].line };
                        if top && after_pub {
                            self.modules[m].reexports.push((leaf.binding, r));
                        } else {
                            self.modules[m].refs.push(r);
                        }
                    }
                    i = end + 1;
                }
                Kind::Ident(kw) if top && is_item_keyword(kw) => {
                    if let Some(name) = item_name(&toks[i..]) {
                        self.modules[m].defined.insert(name);
                    }
                    i += 1;
                }
                Kind::Ident(first) if toks.get(i + 1).map(|t| &t.kind) == Some(&Kind::PathSep) => {
                    let after_sep_or_dot =
                        i > 0 && matches!(toks[i - 1].kind, Kind::PathSep | Kind::Punct('.') | Kind::Punct('$'));
                    let mut path = vec![first.clone()];
                    let mut j = i + 1;
                    while toks.get(j).map(|t| &t.kind) == Some(&Kind::PathSep) {
                        match toks.get(j + 1).map(|t| &t.kind) {
                            Some(Kind::Ident(s)) => path.push(s.clone()),
                            _ => break,
                        }
                        j += 2;
                    }
                    if !after_sep_or_dot {
                        self.modules[m].mentioned.insert(first.clone());
                        self.modules[m].refs.push(Ref { path, file: file.to_path_buf(), line: toks[i].line });
                    }
                    i = j;
                }
                Kind::Ident(word) => {
                    if i == 0 || !matches!(toks[i - 1].kind, Kind::PathSep | Kind::Punct('.')) {
                        self.modules[m].mentioned.insert(word.clone());
                    }
                    i += 1;
                }
                _ => i += 1,
            }
        }
    }

    /// The module that `path`, written in module `from`, names, and whether
    /// the item it names was found there (`None`: not this crate's).
    fn resolve(&self, from: usize, path: &[String], hops: usize) -> Option<(usize, bool)> {
        let first = path.first()?;
        let (mut node, mut rest) = match first.as_str() {
            "crate" => (0, &path[1..]),
            "self" => (from, &path[1..]),
            "super" => {
                let mut node = from;
                let mut k = 0;
                while path.get(k).is_some_and(|s| s == "super") {
                    node = self.modules[node].parent?;
                    k += 1;
                }
                (node, &path[k..])
            }
            s if self.modules[from].children.contains_key(s) => (from, path),
            _ => return None,
        };
        while let Some(&c) = rest.first().and_then(|s| self.modules[node].children.get(s)) {
            node = c;
            rest = &rest[1..];
        }
        let Some(name) = rest.first() else { return Some((node, true)) };
        let module = &self.modules[node];
        if module.defined.contains(name) || hops > 16 {
            return Some((node, true));
        }
        if let Some(to) = module.uses.get(name) {
            // Re-exported: where it comes from, or (another crate's) nowhere.
            return self.resolve(node, &[to.as_slice(), &rest[1..]].concat(), hops + 1);
        }
        for g in &module.globs {
            if let Some(found @ (_, true)) = self.resolve(node, &[g.as_slice(), rest].concat(), hops + 1) {
                return Some(found);
            }
        }
        Some((node, false))
    }

    /// The references between distinct modules: `(from, to)` with where
    /// each was first written.
    pub(super) fn edges(&self) -> BTreeMap<(usize, usize), Evidence> {
        let mut edges = BTreeMap::new();
        for (from, m) in self.modules.iter().enumerate() {
            let used_reexports = m
                .reexports
                .iter()
                .filter(|(b, _)| matches!(b, Binding::Name(n) if m.mentioned.contains(n)))
                .map(|(_, r)| r);
            for r in m.refs.iter().chain(used_reexports) {
                if let Some((to, _)) = self.resolve(from, &r.path, 0) {
                    if to != from {
                        edges.entry((from, to)).or_insert_with(|| Evidence {
                            file: r.file.clone(),
                            line: r.line,
                            path: r.path.join("::"),
                        });
                    }
                }
            }
        }
        edges
    }

    /// `a` is `b` or one of its ancestors.
    pub(super) fn is_ancestor_or_self(&self, a: usize, b: usize) -> bool {
        let mut n = Some(b);
        while let Some(x) = n {
            if x == a {
                return true;
            }
            n = self.modules[x].parent;
        }
        false
    }

    /// `crate::a::b`-style name of module `m`.
    pub(super) fn name(&self, m: usize) -> String {
        std::iter::once("crate").chain(self.modules[m].path.iter().map(String::as_str)).collect::<Vec<_>>().join("::")
    }
}

/// The index of the token that closes the `open` at `at`.
fn matching(toks: &[Token], at: usize, open: char, close: char) -> usize {
    let mut d = 0usize;
    for (j, t) in toks.iter().enumerate().skip(at) {
        if t.kind == Kind::Punct(open) {
            d += 1;
        } else if t.kind == Kind::Punct(close) {
            d -= 1;
            if d == 0 {
                return j;
            }
        }
    }
    toks.len().saturating_sub(1)
}

fn is_item_keyword(kw: &str) -> bool {
    matches!(kw, "fn" | "struct" | "enum" | "union" | "trait" | "type" | "const" | "static" | "macro_rules")
}

/// The name an item starting at `toks[0]` (its keyword) defines.
fn item_name(toks: &[Token]) -> Option<String> {
    let ident = |k: usize| match toks.get(k).map(|t| &t.kind) {
        Some(Kind::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let name = match ident(0)? {
        "macro_rules" => ident(2)?,
        "static" if ident(1) == Some("mut") => ident(2)?,
        // `const fn f`, `const unsafe fn f`: the `fn` is read next.
        "const" if matches!(ident(1), Some("fn" | "unsafe" | "extern" | "async")) => return None,
        // `union` is a keyword only before a name.
        _ => ident(1)?,
    };
    (name != "_").then(|| name.to_owned())
}

/// What a `use` leaf binds.
#[derive(Debug, PartialEq, Eq)]
enum Binding {
    Name(String),
    Glob,
    /// `as _`.
    None,
}

/// One leaf of a `use` tree: its full path (to a glob's module for `*`).
#[derive(Debug)]
struct Leaf {
    path: Vec<String>,
    binding: Binding,
}

/// The leaves of the `use` tree at `toks[*at..]` under `prefix`.
fn use_tree(toks: &[Token], at: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Leaf>) {
    if toks.get(*at).map(|t| &t.kind) == Some(&Kind::PathSep) {
        // `use ::other_crate::x`: never this crate.
        prefix.push(String::new());
        *at += 1;
    }
    while let Some(t) = toks.get(*at) {
        match &t.kind {
            Kind::Ident(s) if toks.get(*at + 1).map(|t| &t.kind) == Some(&Kind::PathSep) => {
                prefix.push(s.clone());
                *at += 2;
            }
            Kind::Ident(s) => {
                *at += 1;
                let mut path = prefix.clone();
                if s != "self" {
                    path.push(s.clone());
                }
                let mut binding = Binding::Name(path.last().cloned().unwrap_or_default());
                if matches!(toks.get(*at).map(|t| &t.kind), Some(Kind::Ident(a)) if a == "as") {
                    binding = match toks.get(*at + 1).map(|t| &t.kind) {
                        Some(Kind::Ident(n)) if n != "_" => Binding::Name(n.clone()),
                        _ => Binding::None,
                    };
                    *at += 2;
                }
                out.push(Leaf { path, binding });
                return;
            }
            Kind::Punct('*') => {
                *at += 1;
                out.push(Leaf { path: prefix, binding: Binding::Glob });
                return;
            }
            Kind::Punct('{') => {
                *at += 1;
                while let Some(t) = toks.get(*at) {
                    match t.kind {
                        Kind::Punct('}') => {
                            *at += 1;
                            return;
                        }
                        Kind::Punct(',') => *at += 1,
                        _ => {
                            let before = *at;
                            use_tree(toks, at, prefix.clone(), out);
                            if *at == before {
                                *at += 1;
                            }
                        }
                    }
                }
                return;
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(src: &str) -> Vec<(String, Binding)> {
        let toks = tokens(src);
        let mut out = Vec::new();
        use_tree(&toks, &mut 0, Vec::new(), &mut out);
        out.into_iter().map(|l| (l.path.join("::"), l.binding)).collect()
    }

    #[test]
    fn use_trees_flatten_to_their_leaves() {
        assert_eq!(
            leaves("crate::a::{self, b::C as D, e::*, f as _, {g}}"),
            vec![
                ("crate::a".into(), Binding::Name("a".into())),
                ("crate::a::b::C".into(), Binding::Name("D".into())),
                ("crate::a::e".into(), Binding::Glob),
                ("crate::a::f".into(), Binding::None),
                ("crate::a::g".into(), Binding::Name("g".into())),
            ]
        );
        assert_eq!(leaves("::std::io"), vec![("::std::io".into(), Binding::Name("io".into()))]);
    }

    #[test]
    fn item_names_skip_const_fn_and_underscores() {
        let name = |s: &str| item_name(&tokens(s));
        assert_eq!(name("static mut X: u8 = 0;").as_deref(), Some("X"));
        assert_eq!(name("macro_rules! m { () => {} }").as_deref(), Some("m"));
        assert_eq!(name("const fn f() {}"), None);
        assert_eq!(name("const _: () = ();"), None);
    }
}
