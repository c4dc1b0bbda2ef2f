//! Reading STAMP's kmeans input files: text (one point per line, an id
//! then its features, separated by blanks or commas) or binary (`-b`: two
//! native `i32`s, the number of points and of features, then the features
//! as native `f32`s, point after point), each plain or gzip-compressed.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::input::{MAX_DIMS, MAX_POINTS, Points};
use skelaff_stamp_core::app::AppError;

/// The path of an input shipped with skelaff-stamp-core (`data/kmeans/`: STAMP's
/// `random-n2048-d16-c16.txt.gz`), embedded in the binary: see [`skelaff_stamp_core::shipped`].
pub fn shipped_input(name: &str) -> PathBuf {
    PathBuf::from(format!("{}{name}", skelaff_stamp_core::shipped::PREFIX))
}

/// The file `path`, or `path.gz` when `path` does not exist; `None` when
/// neither does.
pub(crate) fn locate(path: &Path) -> Option<PathBuf> {
    if skelaff_stamp_core::shipped::gzip_bytes(path).is_some() {
        return Some(path.to_owned());
    }
    if path.is_file() {
        return Some(path.to_owned());
    }
    let mut gz = path.as_os_str().to_owned();
    gz.push(".gz");
    let gz = PathBuf::from(gz);
    gz.is_file().then_some(gz)
}

fn bytes(path: &Path) -> Result<Vec<u8>, AppError> {
    let io = |e: std::io::Error| AppError::Invalid(format!("{}: {e}", path.display()));
    if let Some(gz) = skelaff_stamp_core::shipped::gzip_bytes(path) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(gz).read_to_end(&mut out).map_err(io)?;
        return Ok(out);
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let mut out = Vec::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file)).read_to_end(&mut out).map_err(io)?;
    } else {
        std::io::BufReader::new(file).read_to_end(&mut out).map_err(io)?;
    }
    Ok(out)
}

impl Points {
    /// Reads STAMP's text format from `path` (decompressed when it ends in
    /// `.gz`): blank lines are skipped; every other line is an id (ignored)
    /// and the point's features, as many on every line as on the first.
    ///
    /// # Errors
    ///
    /// [`AppError::Invalid`] naming the file and line: a feature that is not
    /// a finite number, a line with another number of features than the
    /// first, no points, or sizes above [`MAX_POINTS`] / [`MAX_DIMS`].
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_kmeans::Points;
    ///
    /// let path = std::env::temp_dir().join(format!("kmeans-doc-{}.txt", std::process::id()));
    /// std::fs::write(&path, "1 0.5 2\n2 1.5,3\n")?;
    /// let p = Points::read_text(&path)?;
    /// assert_eq!((p.len(), p.dims, p.point(1)), (2, 2, &[1.5f32, 3.0][..]));
    /// std::fs::write(&path, "1 0.5 2\n2 1.5\n")?;
    /// let e = Points::read_text(&path).unwrap_err().to_string();
    /// assert!(e.ends_with("line 2: 1 feature(s), but the first point has 2"), "{e}");
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_text(path: &Path) -> Result<Points, AppError> {
        Points::parse_text(&bytes(path)?, &path.display().to_string())
    }

    /// Parses STAMP's text format from `raw` (already decompressed), as
    /// [`Points::read_text`] does; `origin` names the input in errors.
    ///
    /// # Errors
    ///
    /// As [`Points::read_text`].
    pub fn parse_text(raw: &[u8], origin: &str) -> Result<Points, AppError> {
        let text = std::str::from_utf8(raw).map_err(|e| {
            let line = raw[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
            AppError::Invalid(format!("{origin}, line {line}: not UTF-8 text (use -b for STAMP's binary format)"))
        })?;
        let at = |line: usize, what: String| AppError::Invalid(format!("{origin}, line {line}: {what}"));
        let mut features = Vec::new();
        let mut dims = 0;
        for (n, line) in text.lines().enumerate() {
            let mut fields = line.split([' ', '\t', ',']).filter(|f| !f.is_empty());
            if fields.next().is_none() {
                continue;
            }
            let before = features.len();
            for f in fields {
                let x: f32 = f
                    .parse()
                    .ok()
                    .filter(|x: &f32| x.is_finite())
                    .ok_or_else(|| at(n + 1, format!("feature `{f}` is not a finite number")))?;
                features.push(x);
            }
            let d = features.len() - before;
            if dims == 0 {
                if d == 0 || d > MAX_DIMS {
                    return Err(at(n + 1, format!("{d} features; a point has 1 to {MAX_DIMS}")));
                }
                dims = d;
            } else if d != dims {
                return Err(at(n + 1, format!("{d} feature(s), but the first point has {dims}")));
            }
            if features.len() / dims > MAX_POINTS {
                return Err(at(n + 1, format!("more than {MAX_POINTS} points")));
            }
        }
        if dims == 0 {
            return Err(AppError::Invalid(format!("{origin}: no points")));
        }
        Ok(Points { features, dims })
    }

    /// Reads STAMP's binary format (`-b`) from `path` (decompressed when it
    /// ends in `.gz`).
    ///
    /// # Errors
    ///
    /// [`AppError::Invalid`] naming the file: a header out of range, or a
    /// size that does not match it.
    pub fn read_binary(path: &Path) -> Result<Points, AppError> {
        Points::parse_binary(&bytes(path)?, &path.display().to_string())
    }

    /// Parses STAMP's binary format from `raw` (already decompressed), as
    /// [`Points::read_binary`] does; `origin` names the input in errors.
    ///
    /// # Errors
    ///
    /// As [`Points::read_binary`].
    pub fn parse_binary(raw: &[u8], origin: &str) -> Result<Points, AppError> {
        let bad = |what: String| AppError::Invalid(format!("{origin} (binary): {what}"));
        if raw.len() < 8 {
            return Err(bad(format!("{} bytes; the header alone is 8", raw.len())));
        }
        let word = |i: usize| i32::from_ne_bytes([raw[i], raw[i + 1], raw[i + 2], raw[i + 3]]);
        let (n, d) = (word(0), word(4));
        let (Ok(n), Ok(d)) = (usize::try_from(n), usize::try_from(d)) else {
            return Err(bad(format!("header says {n} points of {d} features")));
        };
        if !(1..=MAX_POINTS).contains(&n) || !(1..=MAX_DIMS).contains(&d) {
            return Err(bad(format!(
                "header says {n} points of {d} features; allowed 1 to {MAX_POINTS} points of 1 to {MAX_DIMS}"
            )));
        }
        if raw.len() != 8 + n * d * 4 {
            return Err(bad(format!(
                "{n} points of {d} features make {} bytes, the file has {}",
                8 + n * d * 4,
                raw.len()
            )));
        }
        let features: Vec<f32> =
            raw[8..].chunks_exact(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
        if let Some(i) = features.iter().position(|x| !x.is_finite()) {
            return Err(bad(format!("feature {} of point {} is not finite", i % d, i / d)));
        }
        Ok(Points { features, dims: d })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("kmeans-file-{}-{name}", std::process::id()))
    }

    #[test]
    fn text_errors_name_the_line() {
        let p = tmp("t.txt");
        for (text, want) in [
            ("1 1 2\n\n2 x 3\n", "line 3: feature `x` is not a finite number"),
            ("1\n", "line 1: 0 features"),
            ("\n\n", "no points"),
            ("1 1 2\n2 1 2 3\n", "line 2: 3 feature(s), but the first point has 2"),
        ] {
            std::fs::write(&p, text).unwrap();
            let e = Points::read_text(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn binary_round_trip_and_size_check() {
        let p = tmp("b.bin");
        let mut raw = Vec::new();
        raw.extend(2i32.to_ne_bytes());
        raw.extend(3i32.to_ne_bytes());
        for x in [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0] {
            raw.extend(x.to_ne_bytes());
        }
        std::fs::write(&p, &raw).unwrap();
        let pts = Points::read_binary(&p).unwrap();
        assert_eq!((pts.len(), pts.dims, pts.point(1)), (2, 3, &[4.0f32, 5.0, 6.0][..]));
        std::fs::write(&p, &raw[..raw.len() - 4]).unwrap();
        let e = Points::read_binary(&p).unwrap_err().to_string();
        assert!(e.contains("make 32 bytes, the file has 28"), "{e}");
        std::fs::remove_file(&p).unwrap();
    }
}
