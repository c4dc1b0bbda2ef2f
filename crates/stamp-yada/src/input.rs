//! Reading Triangle's `.node`, `.ele` and `.poly` files (the formats of
//! Shewchuk's Triangle, which made STAMP's yada inputs), each plain or
//! gzip-compressed.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::geometry::Point;

/// A malformed or unreadable input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// Neither `FILE` nor `FILE.gz` could be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A line that is not what the format allows.
    #[error("{path}, line {line}: {what}")]
    Line {
        /// The file.
        path: PathBuf,
        /// Its 1-based line number (one past the last line when the file ends early).
        line: usize,
        /// What is wrong and what is allowed.
        what: String,
    },
}

/// A planar straight-line graph and its triangulation, as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Triangulation {
    /// The vertices.
    pub points: Vec<Point>,
    /// Boundary segments: indices into `points`.
    pub segments: Vec<[u32; 2]>,
    /// Triangles: indices into `points`.
    pub triangles: Vec<[u32; 3]>,
}

/// The most vertices, segments or triangles a file may declare.
pub const MAX_ENTRIES: usize = 1 << 26;

/// One data line of a file: its number and its fields.
struct Lines {
    path: PathBuf,
    items: std::vec::IntoIter<(usize, Vec<String>)>,
    /// The number of lines of the file.
    total: usize,
}

impl Lines {
    /// Reads `path`, or `path.gz` when `path` does not exist, splitting it
    /// into non-empty lines without their `#` comments.
    fn open(path: PathBuf) -> Result<Lines, InputError> {
        let text = read_text(&path)?;
        Ok(Lines::new(path, &text))
    }

    /// Splits `text` (the contents of `path`) as [`Lines::open`] does.
    fn new(path: PathBuf, text: &str) -> Lines {
        let total = text.lines().count();
        let items = text
            .lines()
            .enumerate()
            .filter_map(|(n, l)| {
                let l = l.split('#').next().unwrap_or("");
                let fields: Vec<String> = l.split_whitespace().map(str::to_owned).collect();
                (!fields.is_empty()).then_some((n + 1, fields))
            })
            .collect::<Vec<_>>()
            .into_iter();
        Lines { path, items, total }
    }

    /// Room to reserve for `count` entries of one line each: never more than
    /// the lines left, whatever a (damaged) header declares.
    fn room(&self, count: usize) -> usize {
        count.min(self.items.len())
    }

    fn err(&self, line: usize, what: String) -> InputError {
        InputError::Line { path: self.path.clone(), line, what }
    }

    /// The next data line, which must hold at least `min` fields (`form`
    /// names them for the error).
    fn next(&mut self, min: usize, form: &str) -> Result<(usize, Vec<String>), InputError> {
        match self.items.next() {
            Some((n, f)) if f.len() >= min => Ok((n, f)),
            Some((n, f)) => Err(self.err(n, format!("{} field(s); expected `{form}`", f.len()))),
            None => Err(self.err(self.total + 1, format!("the file ends early; expected a line `{form}`"))),
        }
    }

    fn int(&self, line: usize, field: &str, what: &str) -> Result<i64, InputError> {
        field.parse().map_err(|_| self.err(line, format!("{what} `{field}` is not an integer")))
    }

    fn count(&self, line: usize, field: &str, what: &str) -> Result<usize, InputError> {
        let v = self.int(line, field, what)?;
        usize::try_from(v)
            .ok()
            .filter(|&n| n <= MAX_ENTRIES)
            .ok_or_else(|| self.err(line, format!("{what} {v}: allowed 0 to {MAX_ENTRIES}")))
    }
}

/// The text of `path`, or of `path.gz` (decompressed) when `path` does
/// not exist; a path ending in `.gz` is decompressed too. A path that
/// starts with `builtin:` names a file embedded in the binary (see
/// [`skelaff_stamp_core::shipped`]).
///
/// # Errors
///
/// [`InputError::Io`] naming the file tried.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    if skelaff_stamp_core::shipped::is_builtin(path) {
        let io = |source| InputError::Io { path: path.to_owned(), source };
        let missing = || {
            let names: Vec<_> = skelaff_stamp_core::shipped::names().collect();
            let what = format!("no such embedded input; the embedded ones are: {}", names.join(", "));
            io(std::io::Error::new(std::io::ErrorKind::NotFound, what))
        };
        let gz = skelaff_stamp_core::shipped::gzip_bytes(path).ok_or_else(missing)?;
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(gz).read_to_string(&mut text).map_err(io)?;
        return Ok(text);
    }
    let gz = path.extension().is_some_and(|e| e == "gz");
    let (path, gz) = if !gz && !path.exists() {
        let mut p = path.as_os_str().to_owned();
        p.push(".gz");
        let p = PathBuf::from(p);
        if p.exists() { (p, true) } else { (path.to_owned(), false) }
    } else {
        (path.to_owned(), gz)
    };
    let io = |source| InputError::Io { path: path.clone(), source };
    let file = std::fs::File::open(&path).map_err(io)?;
    let mut text = String::new();
    if gz {
        flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file)).read_to_string(&mut text).map_err(io)?;
    } else {
        std::io::BufReader::new(file).read_to_string(&mut text).map_err(io)?;
    }
    Ok(text)
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut p = prefix.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

impl Triangulation {
    /// Reads `PREFIX.node`, `PREFIX.poly` and `PREFIX.ele` (each plain or
    /// with `.gz` appended), as STAMP's `mesh_read` does: vertices from
    /// the `.node` file (numbered from 0 or 1), boundary segments from the
    /// `.poly` file (which must list no vertices of its own; holes and
    /// regional attributes after the segments are ignored), triangles from
    /// the `.ele` file (the first three corners of each).
    ///
    /// # Errors
    ///
    /// [`InputError`] naming the file and line of the first problem: a
    /// missing file, a header of the wrong dimension, a field that is not a
    /// number, a vertex number used twice or not defined, a coordinate
    /// that is not finite, fewer entries than the header declares.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_yada::Triangulation;
    ///
    /// let dir = std::env::temp_dir().join(format!("yada-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let prefix = dir.join("square");
    /// std::fs::write(dir.join("square.node"), "4 2 0 0\n1 0 0\n2 1 0\n3 1 1\n4 0 1\n")?;
    /// std::fs::write(dir.join("square.poly"), "0 2 0 0\n4 0\n1 1 2\n2 2 3\n3 3 4\n4 4 1\n0\n")?;
    /// std::fs::write(dir.join("square.ele"), "2 3 0\n1 1 2 3\n2 1 3 4\n")?;
    /// let t = Triangulation::read(&prefix)?;
    /// assert_eq!((t.points.len(), t.segments.len(), t.triangles.len()), (4, 4, 2));
    /// std::fs::write(dir.join("square.ele"), "2 3 0\n1 1 2 3\n2 1 3 x\n")?;
    /// let e = Triangulation::read(&prefix).unwrap_err().to_string();
    /// assert!(e.ends_with("square.ele, line 3: corner `x` is not an integer"), "{e}");
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(prefix: &Path) -> Result<Triangulation, InputError> {
        let (points, ids) = read_nodes(Lines::open(with_suffix(prefix, ".node"))?)?;
        let segments = read_segments(Lines::open(with_suffix(prefix, ".poly"))?, &ids)?;
        let triangles = read_triangles(Lines::open(with_suffix(prefix, ".ele"))?, &ids)?;
        Ok(Triangulation { points, segments, triangles })
    }

    /// Parses the texts of the three files, as [`Triangulation::read`]
    /// does; errors name them `PREFIX.node`, `PREFIX.poly` and `PREFIX.ele`.
    ///
    /// # Errors
    ///
    /// As [`Triangulation::read`], [`InputError::Line`] only.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_yada::Triangulation;
    ///
    /// let (node, poly) = ("3 2 0 0\n1 0 0\n2 1 0\n3 0 1\n", "0 2 0 0\n0 0\n");
    /// let t = Triangulation::parse("t".as_ref(), node, poly, "1 3 0\n1 1 2 3\n")?;
    /// assert_eq!(t.triangles, [[0, 1, 2]]);
    /// let e = Triangulation::parse("t".as_ref(), node, poly, "9 3 0\n1 1 2 3\n").unwrap_err();
    /// assert_eq!(e.to_string(), "t.ele, line 3: the file ends early; expected a line `<triangle #> <corner> <corner> <corner> ...`");
    /// # Ok::<(), skelaff_stamp_yada::InputError>(())
    /// ```
    pub fn parse(prefix: &Path, node: &str, poly: &str, ele: &str) -> Result<Triangulation, InputError> {
        let (points, ids) = read_nodes(Lines::new(with_suffix(prefix, ".node"), node))?;
        let segments = read_segments(Lines::new(with_suffix(prefix, ".poly"), poly), &ids)?;
        let triangles = read_triangles(Lines::new(with_suffix(prefix, ".ele"), ele), &ids)?;
        Ok(Triangulation { points, segments, triangles })
    }
}

/// Vertex numbers as the files give them, to indices into the points.
type Ids = HashMap<i64, u32>;

fn read_nodes(mut f: Lines) -> Result<(Vec<Point>, Ids), InputError> {
    let form = "<vertices> 2 <attributes> <boundary markers>";
    let (n, h) = f.next(2, form)?;
    let count = f.count(n, &h[0], "vertex count")?;
    if h[1] != "2" {
        return Err(f.err(n, format!("dimension `{}`; yada's meshes are 2-dimensional", h[1])));
    }
    let mut points = Vec::with_capacity(f.room(count));
    let mut ids = Ids::with_capacity(f.room(count));
    for _ in 0..count {
        let (n, v) = f.next(3, "<vertex #> <x> <y> [attributes] [marker]")?;
        let id = f.int(n, &v[0], "vertex number")?;
        let coord = |s: &str, axis: &str| {
            s.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| f.err(n, format!("{axis} `{s}` is not a finite number")))
        };
        let p = Point { x: coord(&v[1], "x")?, y: coord(&v[2], "y")? };
        if ids.insert(id, points.len() as u32).is_some() {
            return Err(f.err(n, format!("vertex {id} is defined a second time")));
        }
        points.push(p);
    }
    Ok((points, ids))
}

fn corner(f: &Lines, n: usize, field: &str, ids: &Ids) -> Result<u32, InputError> {
    let id = f.int(n, field, "corner")?;
    ids.get(&id).copied().ok_or_else(|| f.err(n, format!("vertex {id} is not in the .node file")))
}

fn read_segments(mut f: Lines, ids: &Ids) -> Result<Vec<[u32; 2]>, InputError> {
    let (n, h) = f.next(2, "0 2 <attributes> <boundary markers>")?;
    let listed = f.count(n, &h[0], "vertex count")?;
    if listed != 0 {
        return Err(
            f.err(n, format!("the .poly file lists {listed} vertices; yada takes them from the .node file (0)"))
        );
    }
    if h[1] != "2" {
        return Err(f.err(n, format!("dimension `{}`; yada's meshes are 2-dimensional", h[1])));
    }
    let (n, h) = f.next(1, "<segments> <boundary markers>")?;
    let count = f.count(n, &h[0], "segment count")?;
    let mut segments = Vec::with_capacity(f.room(count));
    for _ in 0..count {
        let (n, v) = f.next(3, "<segment #> <endpoint> <endpoint> [marker]")?;
        let s = [corner(&f, n, &v[1], ids)?, corner(&f, n, &v[2], ids)?];
        if s[0] == s[1] {
            return Err(f.err(n, format!("segment from vertex {} to itself", v[1])));
        }
        segments.push(s);
    }
    Ok(segments)
}

fn read_triangles(mut f: Lines, ids: &Ids) -> Result<Vec<[u32; 3]>, InputError> {
    let (n, h) = f.next(2, "<triangles> <corners per triangle> <attributes>")?;
    let count = f.count(n, &h[0], "triangle count")?;
    if h[1] != "3" && h[1] != "6" {
        return Err(f.err(n, format!("`{}` corners per triangle; expected 3 (or 6, of which 3 are read)", h[1])));
    }
    let mut triangles = Vec::with_capacity(f.room(count));
    for _ in 0..count {
        let (n, v) = f.next(4, "<triangle #> <corner> <corner> <corner> ...")?;
        let t = [corner(&f, n, &v[1], ids)?, corner(&f, n, &v[2], ids)?, corner(&f, n, &v[3], ids)?];
        if t[0] == t[1] || t[1] == t[2] || t[0] == t[2] {
            return Err(f.err(n, "a triangle with a repeated corner".into()));
        }
        triangles.push(t);
    }
    Ok(triangles)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("yada-input-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn good(d: &Path) {
        write(d, "m.node", "# a square\n4 2 0 1\n0 0 0 1\n1 1 0 1\n\n2 1 1 1\n3 0 1 1\n");
        write(d, "m.poly", "0 2 0 1\n4 1\n1 0 1 1\n2 1 2 1\n3 2 3 1\n4 3 0 1\n0\n");
        write(d, "m.ele", "2 3 0\n1 0 1 2\n2 0 2 3\n");
    }

    #[test]
    fn reads_and_reports_lines() {
        let d = dir("lines");
        good(&d);
        let t = Triangulation::read(&d.join("m")).unwrap();
        assert_eq!(t.triangles, vec![[0, 1, 2], [0, 2, 3]]);
        assert_eq!(t.points[2], Point { x: 1.0, y: 1.0 });
        let cases = [
            ("m.node", "4 3 0 0\n", "m.node, line 1: dimension `3`"),
            ("m.node", "4 2 0 0\n0 0 0\n0 1 0\n", "m.node, line 3: vertex 0 is defined a second time"),
            ("m.node", "2 2\n0 0 nan\n1 1 0\n", "m.node, line 2: y `nan` is not a finite number"),
            ("m.node", "3 2\n0 0 0\n1 1 0\n", "m.node, line 4: the file ends early"),
            ("m.poly", "0 2 0 1\n1 1\n1 0 9 1\n", "m.poly, line 3: vertex 9 is not in the .node file"),
            ("m.poly", "3 2 0 1\n", "m.poly, line 1: the .poly file lists 3 vertices"),
            ("m.ele", "1 3 0\n1 0 1\n", "m.ele, line 2: 3 field(s)"),
            ("m.ele", "-1 3 0\n", "m.ele, line 1: triangle count -1"),
        ];
        for (file, text, want) in cases {
            good(&d);
            write(&d, file, text);
            let e = Triangulation::read(&d.join("m")).unwrap_err().to_string();
            assert!(e.contains(want), "{file}: {e}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn reads_gzip_in_place_of_a_missing_file() {
        use std::io::Write as _;
        let d = dir("gz");
        good(&d);
        let text = std::fs::read(d.join("m.ele")).unwrap();
        std::fs::remove_file(d.join("m.ele")).unwrap();
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&text).unwrap();
        std::fs::write(d.join("m.ele.gz"), enc.finish().unwrap()).unwrap();
        assert_eq!(Triangulation::read(&d.join("m")).unwrap().triangles.len(), 2);
        std::fs::remove_file(d.join("m.node")).unwrap();
        let e = Triangulation::read(&d.join("m")).unwrap_err().to_string();
        assert!(e.contains("m.node") && e.contains("No such file"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
