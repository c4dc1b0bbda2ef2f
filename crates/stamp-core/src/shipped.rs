//! The inputs shipped with this crate, embedded in every binary that links
//! it, so that an installed `skelaff run yada` or `skelaff run kmeans`
//! finds its default input wherever it runs (a path into this crate's
//! source tree would name the build machine's checkout).
//!
//! Such an input is named by a path that starts with [`PREFIX`]:
//! `builtin:633.2` is the mesh `633.2` (its `.node`, `.ele` and `.poly`
//! files), `builtin:random-n2048-d16-c16.txt` the kmeans points. The
//! files are the gzip-compressed ones under `data/` (see its README);
//! naming one with or without `.gz` reads the same bytes.

use std::path::Path;

/// How a path names an embedded input.
pub const PREFIX: &str = "builtin:";

/// Every embedded file: its name under `data/<app>/` and its gzip bytes.
const FILES: &[(&str, &[u8])] = &[
    ("random-n2048-d16-c16.txt.gz", include_bytes!("../data/kmeans/random-n2048-d16-c16.txt.gz")),
    ("633.2.ele.gz", include_bytes!("../data/yada/633.2.ele.gz")),
    ("633.2.node.gz", include_bytes!("../data/yada/633.2.node.gz")),
    ("633.2.poly.gz", include_bytes!("../data/yada/633.2.poly.gz")),
    ("ttimeu10000.2.ele.gz", include_bytes!("../data/yada/ttimeu10000.2.ele.gz")),
    ("ttimeu10000.2.node.gz", include_bytes!("../data/yada/ttimeu10000.2.node.gz")),
    ("ttimeu10000.2.poly.gz", include_bytes!("../data/yada/ttimeu10000.2.poly.gz")),
];

/// The names of the embedded files, without `.gz` (for error messages).
pub fn names() -> impl Iterator<Item = &'static str> {
    FILES.iter().map(|(n, _)| n.strip_suffix(".gz").unwrap_or(n))
}

/// Whether `path` names an embedded input (starts with [`PREFIX`]), present or not.
pub fn is_builtin(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.starts_with(PREFIX))
}

/// The gzip bytes of the embedded file `path` names (`builtin:NAME` or
/// `builtin:NAME.gz`); `None` when `path` names no embedded file.
pub fn gzip_bytes(path: &Path) -> Option<&'static [u8]> {
    let name = path.to_str()?.strip_prefix(PREFIX)?;
    let name = name.strip_suffix(".gz").unwrap_or(name);
    FILES.iter().find(|(n, _)| n.strip_suffix(".gz") == Some(name)).map(|(_, b)| *b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_under_data_is_embedded_and_found_by_both_names() {
        let mut on_disk = Vec::new();
        for app in ["kmeans", "yada"] {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join(app);
            for e in std::fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                let name = e.file_name().into_string().unwrap();
                let bytes = std::fs::read(e.path()).unwrap();
                let plain = name.strip_suffix(".gz").unwrap();
                for given in [plain.to_owned(), name.clone()] {
                    let got = gzip_bytes(Path::new(&format!("{PREFIX}{given}")));
                    assert_eq!(got, Some(&bytes[..]), "{given}");
                }
                on_disk.push(plain.to_owned());
            }
        }
        on_disk.sort();
        let mut embedded: Vec<_> = names().collect();
        embedded.sort();
        assert_eq!(on_disk, embedded);
        assert_eq!(gzip_bytes(Path::new("builtin:633.3.node")), None);
        assert_eq!(gzip_bytes(Path::new("data/yada/633.2.node.gz")), None);
    }
}
