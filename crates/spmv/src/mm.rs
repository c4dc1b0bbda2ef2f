//! Matrix Market files: reading coordinate and array matrices (real,
//! integer or pattern; general, symmetric or skew-symmetric; 1-based
//! indices) into [`Triplets`], and writing CSR matrices back.
//!
//! Symmetric files store one triangle; reading mirrors every off-diagonal
//! entry (skew-symmetric: with the sign flipped). Every problem is an
//! [`Error::MatrixMarket`] naming the 1-based line and what is wrong with
//! it; nothing in a file can make the reader panic.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use crate::error::{Error, MmErrorKind, Result};
use crate::matrix::{Csc, Csr, MAX_INDEX, Triplets};
use crate::scalar::Scalar;

/// `coordinate` (sparse, one entry per line) or `array` (dense, column-major).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    /// One `row col [value]` line per stored entry.
    Coordinate,
    /// Every value of the matrix (or of one triangle), column by column.
    Array,
}

/// The kind of values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Field {
    /// Floating-point values (`real` or `double`).
    Real,
    /// Integer values.
    Integer,
    /// No values: every stored entry is 1.
    Pattern,
}

/// Which entries the file stores.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Symmetry {
    /// Every entry.
    General,
    /// The lower triangle of `A = Aᵀ`.
    Symmetric,
    /// The strict lower triangle of `A = -Aᵀ`.
    SkewSymmetric,
}

impl Symmetry {
    fn name(self) -> &'static str {
        match self {
            Symmetry::General => "general",
            Symmetry::Symmetric => "symmetric",
            Symmetry::SkewSymmetric => "skew-symmetric",
        }
    }
}

/// What a file's banner says.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Header {
    /// Sparse or dense.
    pub format: Format,
    /// Value kind.
    pub field: Field,
    /// Stored triangle.
    pub symmetry: Symmetry,
}

/// A matrix read from a file: its banner and its entries (mirrored for
/// symmetric files).
#[derive(Clone, Debug, PartialEq)]
pub struct MmMatrix<T = f64> {
    /// The banner.
    pub header: Header,
    /// The entries, 0-based.
    pub triplets: Triplets<T>,
}

type Kind = MmErrorKind;

/// Why reading stopped: a line that breaks the format (reported with its
/// line number), or an error of its own (the input could not be read, or
/// the matrix outgrew the 32-bit indices).
enum Fail {
    Line(Kind),
    Other(Error),
}

impl From<Kind> for Fail {
    fn from(kind: Kind) -> Fail {
        Fail::Line(kind)
    }
}

fn parse_header(line: &str) -> Result<Header, Kind> {
    let bad = || Kind::BadHeader { found: line.trim_end().chars().take(120).collect() };
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    if words.len() != 5 || words[0] != "%%MatrixMarket" {
        return Err(bad());
    }
    let w: Vec<String> = words[1..].iter().map(|s| s.to_ascii_lowercase()).collect();
    if w[0] != "matrix" {
        return Err(Kind::Unsupported { what: "object", found: words[1].into(), allowed: "matrix" });
    }
    let format = match w[1].as_str() {
        "coordinate" => Format::Coordinate,
        "array" => Format::Array,
        _ => return Err(Kind::Unsupported { what: "format", found: words[2].into(), allowed: "coordinate, array" }),
    };
    let field = match w[2].as_str() {
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "pattern" if format == Format::Coordinate => Field::Pattern,
        _ => {
            return Err(Kind::Unsupported {
                what: "field",
                found: words[3].into(),
                allowed: "real, double, integer, and pattern for coordinate files",
            });
        }
    };
    let symmetry = match w[3].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::SkewSymmetric,
        _ => {
            return Err(Kind::Unsupported {
                what: "symmetry",
                found: words[4].into(),
                allowed: "general, symmetric, skew-symmetric",
            });
        }
    };
    Ok(Header { format, field, symmetry })
}

fn parse_uint(text: &str) -> Result<u64, Kind> {
    text.parse::<u64>()
        .map_err(|_| Kind::BadNumber { text: text.chars().take(60).collect(), expected: "a non-negative integer" })
}

fn parse_value<T: Scalar>(text: &str, field: Field) -> Result<T, Kind> {
    let bad = |expected| Kind::BadNumber { text: text.chars().take(60).collect(), expected };
    match field {
        Field::Real => T::parse_real(text).ok_or_else(|| bad("a real number")),
        Field::Integer => text.parse::<i64>().map(|v| T::from_f64(v as f64)).map_err(|_| bad("an integer")),
        Field::Pattern => Ok(T::ONE),
    }
}

fn index(text: &str, dim: usize, axis: &'static str) -> Result<usize, Kind> {
    let i = parse_uint(text)?;
    if i == 0 || i > dim as u64 {
        return Err(Kind::IndexOutOfRange { axis, index: i, dim });
    }
    Ok(i as usize - 1)
}

/// The reader's position: the lines of the input, numbered from 1, with
/// comments and blank lines skipped.
struct Lines<R> {
    reader: R,
    buf: String,
    line: usize,
}

impl<R: BufRead> Lines<R> {
    /// The next meaningful line, or `None` at the end.
    fn next(&mut self) -> Result<Option<&str>, Fail> {
        loop {
            self.buf.clear();
            match self.reader.read_line(&mut self.buf) {
                Ok(0) => return Ok(None),
                Ok(_) => self.line += 1,
                Err(source) => {
                    self.line += 1;
                    return Err(Fail::Other(Error::Read { path: None, line: self.line, source }));
                }
            }
            let t = self.buf.trim();
            if !t.is_empty() && !t.starts_with('%') {
                return Ok(Some(self.buf.trim()));
            }
        }
    }
}

/// Reads a Matrix Market matrix.
///
/// # Errors
///
/// [`Error::MatrixMarket`] with the line number for a bad or unsupported
/// banner, a size or entry line with the wrong number of fields, a field
/// that is not a number, an index outside the declared size, a diagonal
/// entry in a skew-symmetric file, or a number of entries different from
/// the size line's.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::mm;
///
/// let text = "%%MatrixMarket matrix coordinate real symmetric\n% a comment\n3 3 2\n1 1 4.0\n3 1 -1.5\n";
/// let m = mm::read::<f64, _>(text.as_bytes())?;
/// let a = m.triplets.to_csr();
/// assert_eq!(a.nnz(), 3); // (3,1) mirrored to (1,3)
/// assert_eq!(a.to_dense()[0], vec![4.0, 0.0, -1.5]);
///
/// let bad = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 3 1.0\n";
/// let e = mm::read::<f64, _>(bad.as_bytes()).unwrap_err();
/// assert_eq!(e.to_string(), "Matrix Market line 3: column index 3 is outside 1..=2");
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub fn read<T: Scalar, R: BufRead>(reader: R) -> Result<MmMatrix<T>> {
    read_checked(reader, |_, _| Ok(()))
}

/// As [`read`], with `check` given the size line's rows and columns before
/// any entry is read (its error is reported at the size line).
fn read_checked<T: Scalar, R: BufRead>(
    reader: R,
    check: impl FnOnce(usize, usize) -> Result<(), Kind>,
) -> Result<MmMatrix<T>> {
    let mut lines = Lines { reader, buf: String::new(), line: 0 };
    read_lines(&mut lines, check).map_err(|fail| match fail {
        Fail::Line(kind) => Error::MatrixMarket { path: None, line: lines.line.max(1), kind },
        Fail::Other(e) => e,
    })
}

/// Names `path` in a [`Error::MatrixMarket`] or [`Error::Read`] of a reader.
fn with_path(path: &Path) -> impl FnOnce(Error) -> Error + '_ {
    move |e| match e {
        Error::MatrixMarket { line, kind, .. } => Error::MatrixMarket { path: Some(path.to_owned()), line, kind },
        Error::Read { line, source, .. } => Error::Read { path: Some(path.to_owned()), line, source },
        other => other,
    }
}

/// Reads a Matrix Market file.
///
/// # Errors
///
/// [`Error::Io`] if the file cannot be opened; otherwise as [`read`], with
/// the path in the error.
pub fn read_path<T: Scalar>(path: impl AsRef<Path>) -> Result<MmMatrix<T>> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    read(BufReader::with_capacity(1 << 20, file)).map_err(with_path(path))
}

fn fields<'a>(line: &'a str, expected: usize, what: &'static str) -> Result<Vec<&'a str>, Kind> {
    let f: Vec<&str> = line.split_ascii_whitespace().collect();
    if f.len() != expected {
        return Err(Kind::FieldCount { expected, found: f.len(), what });
    }
    Ok(f)
}

/// The most entries reserved before they are read: a size line may declare
/// up to 2^32 - 1 rows, columns and entries in a file of a few bytes, so
/// the storage grows with the entries actually found beyond this.
const RESERVE_AT_MOST: usize = 1 << 16;

fn read_lines<T: Scalar, R: BufRead>(
    lines: &mut Lines<R>,
    check: impl FnOnce(usize, usize) -> Result<(), Kind>,
) -> Result<MmMatrix<T>, Fail> {
    // The banner is the very first line, comments may only follow it.
    lines.buf.clear();
    match lines.reader.read_line(&mut lines.buf) {
        Ok(0) => return Err(Kind::BadHeader { found: String::new() }.into()),
        Ok(_) => lines.line = 1,
        Err(source) => return Err(Fail::Other(Error::Read { path: None, line: 1, source })),
    }
    let header = parse_header(&lines.buf)?;
    let size = lines.next()?.ok_or(Kind::MissingSize)?;
    let (nrows, ncols, declared) = match header.format {
        Format::Coordinate => {
            let f = fields(size, 3, "rows, columns, entries")?;
            (parse_uint(f[0])?, parse_uint(f[1])?, parse_uint(f[2])?)
        }
        Format::Array => {
            let f = fields(size, 2, "rows, columns")?;
            (parse_uint(f[0])?, parse_uint(f[1])?, 0)
        }
    };
    for d in [nrows, ncols] {
        if d > MAX_INDEX as u64 {
            return Err(
                Kind::BadNumber { text: d.to_string(), expected: "a dimension that fits 32-bit indices" }.into()
            );
        }
    }
    let (nrows, ncols) = (nrows as usize, ncols as usize);
    if header.symmetry != Symmetry::General && nrows != ncols {
        return Err(Kind::NotSquare { symmetry: header.symmetry.name(), nrows, ncols }.into());
    }
    check(nrows, ncols)?;
    let n = nrows as u64;
    let declared = match (header.format, header.symmetry) {
        (Format::Coordinate, _) => {
            if declared > n.saturating_mul(ncols as u64) {
                return Err(Kind::TooManyForSize { entries: declared, nrows, ncols }.into());
            }
            declared
        }
        (Format::Array, Symmetry::General) => n * ncols as u64,
        (Format::Array, Symmetry::Symmetric) => n * (n + 1) / 2,
        (Format::Array, Symmetry::SkewSymmetric) => n * n.saturating_sub(1) / 2,
    };
    let declared = usize::try_from(declared).unwrap_or(usize::MAX);
    let mirrored = if header.symmetry == Symmetry::General { 1 } else { 2 };
    let cap = declared.saturating_mul(mirrored).min(RESERVE_AT_MOST);
    let mut t = Triplets::with_capacity(nrows, ncols, cap).map_err(Fail::Other)?;
    let push = |t: &mut Triplets<T>, i: usize, j: usize, v: T| -> Result<(), Fail> {
        if header.symmetry == Symmetry::SkewSymmetric && i == j {
            return Err(Kind::SkewDiagonal.into());
        }
        t.push(i, j, v).map_err(Fail::Other)?;
        if i != j {
            match header.symmetry {
                Symmetry::General => {}
                Symmetry::Symmetric => t.push(j, i, v).map_err(Fail::Other)?,
                Symmetry::SkewSymmetric => t.push(j, i, -v).map_err(Fail::Other)?,
            }
        }
        Ok(())
    };
    let mut found = 0usize;
    // For array files: the position of the next value, column-major.
    let (mut ai, mut aj) = (0usize, 0usize);
    let first_row = |j: usize| match header.symmetry {
        Symmetry::General => 0,
        Symmetry::Symmetric => j,
        Symmetry::SkewSymmetric => j + 1,
    };
    if header.format == Format::Array {
        ai = first_row(0);
        while aj < ncols && ai >= nrows {
            aj += 1;
            ai = first_row(aj);
        }
    }
    while let Some(line) = lines.next()? {
        if found == declared {
            return Err(Kind::TooManyEntries { declared }.into());
        }
        match header.format {
            Format::Coordinate => {
                let (want, what) = match header.field {
                    Field::Pattern => (2, "row, column"),
                    _ => (3, "row, column, value"),
                };
                let f = fields(line, want, what)?;
                let i = index(f[0], nrows, "row")?;
                let j = index(f[1], ncols, "column")?;
                let v = if want == 3 { parse_value(f[2], header.field)? } else { T::ONE };
                push(&mut t, i, j, v)?;
            }
            Format::Array => {
                let f = fields(line, 1, "one value")?;
                let v: T = parse_value(f[0], header.field)?;
                if v != T::ZERO {
                    push(&mut t, ai, aj, v)?;
                }
                ai += 1;
                while aj < ncols && ai >= nrows {
                    aj += 1;
                    ai = first_row(aj);
                }
            }
        }
        found += 1;
    }
    if found < declared {
        return Err(Kind::TooFewEntries { declared, found }.into());
    }
    Ok(MmMatrix { header, triplets: t })
}

fn io(e: std::io::Error) -> Error {
    Error::Write(e)
}

/// Writes `a` as a `coordinate real general` file, 1-based, values in
/// Rust's shortest round-trip form.
///
/// # Errors
///
/// [`Error::Write`] when the writer fails.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::{Triplets, mm};
///
/// let mut t = Triplets::new(2, 2)?;
/// t.push(1, 0, 0.1)?;
/// let a = t.to_csr();
/// let mut out = Vec::new();
/// mm::write_csr(&mut out, &a)?;
/// assert_eq!(String::from_utf8(out.clone()).unwrap(), "%%MatrixMarket matrix coordinate real general\n2 2 1\n2 1 0.1\n");
/// assert_eq!(mm::read::<f64, _>(&out[..])?.triplets.to_csr(), a);
/// # Ok::<(), skelaff_spmv::Error>(())
/// ```
pub fn write_csr<T: Scalar, W: Write>(mut w: W, a: &Csr<T>) -> Result<()> {
    writeln!(w, "%%MatrixMarket matrix coordinate real general").map_err(io)?;
    writeln!(w, "{} {} {}", a.nrows(), a.ncols(), a.nnz()).map_err(io)?;
    let mut res = Ok(());
    a.for_each(|i, j, v| {
        if res.is_ok() {
            res = writeln!(w, "{} {} {}", i + 1, j + 1, v);
        }
    });
    res.map_err(io)?;
    w.flush().map_err(io)
}

/// Writes the lower triangle `lower` (CSC, entries on or below the
/// diagonal) as a `coordinate real symmetric` file.
///
/// # Errors
///
/// [`Error::NotLowerTriangular`] for an entry above the diagonal;
/// [`Error::Write`] when the writer fails.
pub fn write_symmetric<T: Scalar, W: Write>(mut w: W, lower: &Csc<T>) -> Result<()> {
    lower.check_lower_triangular()?;
    writeln!(w, "%%MatrixMarket matrix coordinate real symmetric").map_err(io)?;
    writeln!(w, "{} {} {}", lower.nrows(), lower.ncols(), lower.nnz()).map_err(io)?;
    let mut res = Ok(());
    lower.for_each(|i, j, v| {
        if res.is_ok() {
            res = writeln!(w, "{} {} {}", i + 1, j + 1, v);
        }
    });
    res.map_err(io)?;
    w.flush().map_err(io)
}

/// Reads a vector of `len` entries: a Matrix Market file of one column (or
/// one row), in `array` or `coordinate` format (missing coordinate entries
/// are 0). The length is the caller's (the matrix's), not the file's: a
/// size line of another length is refused before anything is allocated for
/// it.
///
/// # Errors
///
/// As [`read_path`], and [`MmErrorKind::NotTheVector`] at the size line
/// when the file holds a matrix other than `len` x 1 or 1 x `len`.
///
/// # Examples
///
/// ```
/// use skelaff_spmv::mm;
///
/// let dir = std::env::temp_dir().join(format!("mm-vector-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("b.mtx");
/// mm::write_vector(std::fs::File::create(&path)?, &[1.5, -2.0, 0.0])?;
/// assert_eq!(mm::read_vector(&path, 3)?, [1.5, -2.0, 0.0]);
/// let e = mm::read_vector(&path, 4).unwrap_err().to_string();
/// assert!(e.ends_with("b.mtx line 2: the size line says 3x1; a vector of 4 entries is expected (4x1 or 1x4)"), "{e}");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_vector(path: impl AsRef<Path>, len: usize) -> Result<Vec<f64>> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    read_vector_from(BufReader::new(file), len).map_err(with_path(path))
}

/// As [`read_vector`], from a reader (errors name no file).
///
/// # Errors
///
/// As [`read_vector`].
pub fn read_vector_from<R: BufRead>(reader: R, len: usize) -> Result<Vec<f64>> {
    let m = read_checked::<f64, R>(reader, |nrows, ncols| match (nrows, ncols) {
        (n, 1) | (1, n) if n == len => Ok(()),
        _ => Err(Kind::NotTheVector { nrows, ncols, len }),
    })?;
    let t = &m.triplets;
    let along_rows = t.ncols() == 1;
    let mut v = vec![0.0; len];
    for (i, j, x) in t.iter() {
        v[if along_rows { i } else { j }] += x;
    }
    Ok(v)
}

/// Writes `v` as an `array real general` file of one column, values in
/// Rust's shortest round-trip form.
///
/// # Errors
///
/// [`Error::Write`] when the writer fails.
pub fn write_vector<W: Write>(mut w: W, v: &[f64]) -> Result<()> {
    writeln!(w, "%%MatrixMarket matrix array real general").map_err(io)?;
    writeln!(w, "{} 1", v.len()).map_err(io)?;
    for x in v {
        writeln!(w, "{x}").map_err(io)?;
    }
    w.flush().map_err(io)
}
