//! Matrix Market: round trips, symmetric and skew-symmetric expansion, the
//! array format, and every malformed case, each named by its line.

use proptest::prelude::*;
use skelaff_spmv::mm::{self, Field, Format, Symmetry};
use skelaff_spmv::{Csr, Error, MmErrorKind, Triplets};

use skelaff_testkit::peak;

#[global_allocator]
static PEAK: peak::Peak = peak::Peak;

/// The most a reader may allocate at once for a file of a few hundred bytes.
const SMALL: usize = 4 << 20;

fn read(text: &str) -> Result<mm::MmMatrix<f64>, Error> {
    mm::read(text.as_bytes())
}

fn dense(text: &str) -> Vec<Vec<f64>> {
    read(text).unwrap().triplets.to_csr().to_dense()
}

/// The error's line and kind.
fn fails(text: &str) -> (usize, MmErrorKind) {
    match read(text) {
        Err(Error::MatrixMarket { line, kind, path: None }) => (line, kind),
        other => panic!("expected a Matrix Market error for {text:?}, got {other:?}"),
    }
}

#[test]
fn coordinate_general_real_integer_pattern() {
    let d = dense("%%MatrixMarket matrix coordinate real general\n%c\n\n2 3 3\n1 1 1.5\n2 3 -2e1\n1 1 0.5\n");
    assert_eq!(d, vec![vec![2.0, 0.0, 0.0], vec![0.0, 0.0, -20.0]]);
    let d = dense("%%MatrixMarket matrix coordinate integer general\n2 2 1\n2 1 -7\n");
    assert_eq!(d, vec![vec![0.0, 0.0], vec![-7.0, 0.0]]);
    let m = read("%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n2 2\n").unwrap();
    assert_eq!(m.header.field, Field::Pattern);
    assert_eq!(m.triplets.to_csr().to_dense(), vec![vec![0.0, 1.0], vec![0.0, 1.0]]);
    // Banner words are case-insensitive; `double` means real.
    let m = read("%%MatrixMarket MATRIX Coordinate DOUBLE General\n1 1 1\n1 1 3\n").unwrap();
    assert_eq!(
        (m.header.format, m.header.field, m.header.symmetry),
        (Format::Coordinate, Field::Real, Symmetry::General)
    );
}

#[test]
fn symmetric_and_skew_symmetric_expand() {
    let d = dense("%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 2\n3 1 5\n3 2 -1\n");
    assert_eq!(d, vec![vec![2.0, 0.0, 5.0], vec![0.0, 0.0, -1.0], vec![5.0, -1.0, 0.0]]);
    let d = dense("%%MatrixMarket matrix coordinate pattern symmetric\n2 2 1\n2 1\n");
    assert_eq!(d, vec![vec![0.0, 1.0], vec![1.0, 0.0]]);
    let d = dense("%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 4\n3 2 1\n");
    assert_eq!(d, vec![vec![0.0, -4.0, 0.0], vec![4.0, 0.0, -1.0], vec![0.0, 1.0, 0.0]]);
}

#[test]
fn array_format() {
    // Column-major: (1,1)=1 (2,1)=2 (1,2)=3 (2,2)=0 (1,3)=5 (2,3)=6.
    let d = dense("%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n0\n5\n6\n");
    assert_eq!(d, vec![vec![1.0, 3.0, 5.0], vec![2.0, 0.0, 6.0]]);
    // Symmetric: the lower triangle by columns.
    let d = dense("%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n");
    assert_eq!(d, vec![vec![1.0, 2.0, 3.0], vec![2.0, 4.0, 5.0], vec![3.0, 5.0, 6.0]]);
    // Skew-symmetric: the strict lower triangle by columns.
    let d = dense("%%MatrixMarket matrix array integer skew-symmetric\n3 3\n1\n2\n3\n");
    assert_eq!(d, vec![vec![0.0, -1.0, -2.0], vec![1.0, 0.0, -3.0], vec![2.0, 3.0, 0.0]]);
    assert_eq!(dense("%%MatrixMarket matrix array real general\n0 0\n"), Vec::<Vec<f64>>::new());
}

#[test]
fn malformed_headers() {
    for (text, line) in [
        ("", 1),
        ("hello\n1 1 1\n", 1),
        ("%%MatrixMarket matrix coordinate real\n", 1),
        ("%%MatrixMarket matrix coordinate real general extra\n", 1),
        ("% comment first\n%%MatrixMarket matrix coordinate real general\n", 1),
    ] {
        let (l, k) = fails(text);
        assert_eq!(l, line, "{text:?}");
        assert!(matches!(k, MmErrorKind::BadHeader { .. }), "{text:?}: {k}");
    }
    for text in [
        "%%MatrixMarket vector coordinate real general\n",
        "%%MatrixMarket matrix sparse real general\n",
        "%%MatrixMarket matrix coordinate complex general\n",
        "%%MatrixMarket matrix coordinate real hermitian\n",
        "%%MatrixMarket matrix array pattern general\n",
    ] {
        let (l, k) = fails(text);
        assert_eq!(l, 1);
        assert!(matches!(k, MmErrorKind::Unsupported { .. }), "{text:?}: {k}");
        assert!(k.to_string().contains("allowed are"), "{k}");
    }
}

#[test]
fn malformed_size_lines() {
    let h = "%%MatrixMarket matrix coordinate real general\n";
    assert_eq!(fails(&format!("{h}% only comments\n")), (2, MmErrorKind::MissingSize));
    let (l, k) = fails(&format!("{h}%c\n2 2\n"));
    assert_eq!((l, k), (3, MmErrorKind::FieldCount { expected: 3, found: 2, what: "rows, columns, entries" }));
    let (l, k) = fails(&format!("{h}2 x 1\n"));
    assert_eq!(l, 2);
    assert!(matches!(k, MmErrorKind::BadNumber { .. }), "{k}");
    let (l, k) = fails(&format!("{h}2 -2 1\n"));
    assert_eq!(l, 2);
    assert!(matches!(k, MmErrorKind::BadNumber { .. }), "{k}");
    assert_eq!(fails(&format!("{h}2 2 5\n")).1, MmErrorKind::TooManyForSize { entries: 5, nrows: 2, ncols: 2 });
    let (l, k) = fails("%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n");
    assert_eq!((l, k), (2, MmErrorKind::NotSquare { symmetry: "symmetric", nrows: 2, ncols: 3 }));
    let (l, k) = fails("%%MatrixMarket matrix array real general\n2 2 4\n");
    assert_eq!((l, k), (2, MmErrorKind::FieldCount { expected: 2, found: 3, what: "rows, columns" }));
}

#[test]
fn malformed_entries() {
    let h = "%%MatrixMarket matrix coordinate real general\n3 2 2\n";
    // Wrong number of fields.
    let (l, k) = fails(&format!("{h}1 1 1.0\n2 2\n"));
    assert_eq!((l, k), (4, MmErrorKind::FieldCount { expected: 3, found: 2, what: "row, column, value" }));
    let (l, k) = fails(&format!("{h}1 1 1.0 9\n"));
    assert_eq!((l, k), (3, MmErrorKind::FieldCount { expected: 3, found: 4, what: "row, column, value" }));
    let (l, k) = fails("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1.0\n");
    assert_eq!((l, k), (3, MmErrorKind::FieldCount { expected: 2, found: 3, what: "row, column" }));
    // Out of range, both ends and both axes.
    for (entry, axis, index, dim) in
        [("0 1 1", "row", 0, 3), ("4 1 1", "row", 4, 3), ("1 0 1", "column", 0, 2), ("1 3 1", "column", 3, 2)]
    {
        let (l, k) = fails(&format!("{h}%c\n{entry}\n"));
        assert_eq!((l, k), (4, MmErrorKind::IndexOutOfRange { axis, index, dim }), "{entry}");
    }
    // Not numbers.
    for entry in ["a 1 1", "1 1.5 1", "1 1 x", "1 1 1.0.0"] {
        let (l, k) = fails(&format!("{h}{entry}\n"));
        assert_eq!(l, 3, "{entry}");
        assert!(matches!(k, MmErrorKind::BadNumber { .. }), "{entry}: {k}");
    }
    let (l, k) = fails("%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 2.5\n");
    assert_eq!(l, 3);
    assert!(matches!(k, MmErrorKind::BadNumber { expected: "an integer", .. }), "{k}");
    // Too few: the error names the last line read.
    let (l, k) = fails(&format!("{h}1 1 1\n% trailing comment\n"));
    assert_eq!((l, k), (4, MmErrorKind::TooFewEntries { declared: 2, found: 1 }));
    // Too many: the error names the first extra line.
    let (l, k) = fails(&format!("{h}1 1 1\n2 2 2\n\n3 1 3\n"));
    assert_eq!((l, k), (6, MmErrorKind::TooManyEntries { declared: 2 }));
    // Array: too few and too many values.
    let (l, k) = fails("%%MatrixMarket matrix array real general\n2 1\n1\n");
    assert_eq!((l, k), (3, MmErrorKind::TooFewEntries { declared: 2, found: 1 }));
    let (l, k) = fails("%%MatrixMarket matrix array real general\n1 1\n1\n2\n");
    assert_eq!((l, k), (4, MmErrorKind::TooManyEntries { declared: 1 }));
    let (l, k) = fails("%%MatrixMarket matrix array real general\n1 1\n1 2\n");
    assert_eq!((l, k), (3, MmErrorKind::FieldCount { expected: 1, found: 2, what: "one value" }));
    // A skew-symmetric diagonal.
    let (l, k) = fails("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 2 1.0\n");
    assert_eq!((l, k), (3, MmErrorKind::SkewDiagonal));
}

#[test]
fn file_errors_name_the_path() {
    let dir = std::env::temp_dir().join(format!("skelaff-mm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.mtx");
    std::fs::write(&p, "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 2 1\n").unwrap();
    let e = mm::read_path::<f64>(&p).unwrap_err();
    assert!(e.to_string().contains("bad.mtx") && e.to_string().contains("line 3"), "{e}");
    let e = mm::read_path::<f64>(dir.join("missing.mtx")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    // A line that cannot be read (not UTF-8): a read error at that line,
    // naming the file, with the reader's error as its source.
    std::fs::write(&p, b"%%MatrixMarket matrix coordinate real general\n1 1 1\n\xff 1 1\n").unwrap();
    let e = mm::read_path::<f64>(&p).unwrap_err();
    assert!(matches!(&e, Error::Read { line: 3, path: Some(_), .. }), "{e:?}");
    assert!(e.to_string().contains("bad.mtx") && e.to_string().contains("line 3"), "{e}");
    let source = std::error::Error::source(&e).expect("the reader's error");
    assert!(source.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::InvalidData));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn triplets() -> impl Strategy<Value = Triplets<f64>> {
    (1usize..30, 1usize..30).prop_flat_map(|(r, c)| {
        prop::collection::vec((0..r, 0..c, -1e6f64..1e6), 0..80).prop_map(move |es| {
            let mut t = Triplets::new(r, c).unwrap();
            for (i, j, v) in es {
                t.push(i, j, v).unwrap();
            }
            t
        })
    })
}

proptest! {
    #[test]
    fn general_files_round_trip_exactly(t in triplets()) {
        let a: Csr = t.to_csr();
        let mut out = Vec::new();
        mm::write_csr(&mut out, &a).unwrap();
        let back = mm::read::<f64, _>(&out[..]).unwrap();
        prop_assert_eq!(back.triplets.to_csr(), a);
    }

    #[test]
    fn symmetric_files_round_trip_to_the_full_matrix(t in triplets()) {
        // Symmetrise: A + Aᵀ on the square part.
        let n = t.nrows().min(t.ncols());
        let mut s = Triplets::new(n, n).unwrap();
        for (i, j, v) in t.iter().filter(|&(i, j, _)| i < n && j < n) {
            s.push(i, j, v).unwrap();
            s.push(j, i, v).unwrap();
        }
        let full = s.to_csr();
        let mut out = Vec::new();
        mm::write_symmetric(&mut out, &full.lower_triangle()).unwrap();
        let back = mm::read::<f64, _>(&out[..]).unwrap();
        prop_assert_eq!(back.header.symmetry, Symmetry::Symmetric);
        prop_assert_eq!(back.triplets.to_csr(), full);
    }

    #[test]
    fn garbage_never_panics(lines in prop::collection::vec("[ 0-9a-z.%eE+-]{0,12}", 0..8), header in 0usize..3) {
        let banner = ["%%MatrixMarket matrix coordinate real general", "%%MatrixMarket matrix array integer symmetric", "junk"][header];
        let text = format!("{banner}\n{}\n", lines.join("\n"));
        match read(&text) {
            Ok(m) => { let _ = m.triplets.to_csr(); }
            Err(Error::MatrixMarket { line, .. }) => prop_assert!(line >= 1 && line <= lines.len() + 2),
            Err(e) => prop_assert!(false, "unexpected error kind {}", e),
        }
    }
}

/// Headers that promise up to 2^32 - 1 rows, columns or entries in a file of
/// a few bytes: the reader reserves room for the entries it finds, not the
/// ones promised (it reserved up to 2^24 entries, 256 MiB, before).
#[test]
fn short_files_with_huge_headers_allocate_little() {
    let cases = [
        ("%%MatrixMarket matrix coordinate real general\n65536 65536 4294967295\n1 1 1\n", 3),
        ("%%MatrixMarket matrix coordinate real symmetric\n4294967295 4294967295 4294967295\n", 2),
        ("%%MatrixMarket matrix array real general\n4294967295 4294967295\n1\n", 3),
        ("%%MatrixMarket matrix array real skew-symmetric\n4294967295 4294967295\n1\n2\n", 4),
    ];
    for (text, line) in cases {
        let (r, bytes) = peak::largest(|| read(text));
        assert!(bytes <= SMALL, "{text:?}: one allocation of {bytes} bytes");
        match r {
            Err(Error::MatrixMarket { line: l, kind: MmErrorKind::TooFewEntries { .. }, .. }) => assert_eq!(l, line),
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

/// The CLI's vector files: a size line of another length than the matrix's
/// is refused at that line, before a dense vector of its length is made (a
/// 4-billion-row coordinate file of 50 bytes made a 32 GiB vector before).
#[test]
fn vector_files_are_read_at_the_callers_length() {
    let text = "%%MatrixMarket matrix coordinate real general\n4000000000 1 1\n7 1 2.5\n";
    let (r, bytes) = peak::largest(|| mm::read_vector_from(text.as_bytes(), 10));
    assert!(bytes <= SMALL, "one allocation of {bytes} bytes");
    let e = r.unwrap_err().to_string();
    assert_eq!(
        e,
        "Matrix Market line 2: the size line says 4000000000x1; a vector of 10 entries is expected (10x1 or 1x10)"
    );
    let row = "%%MatrixMarket matrix coordinate real general\n1 10 1\n1 7 2.5\n";
    let v = mm::read_vector_from(row.as_bytes(), 10).unwrap();
    assert_eq!(v.iter().position(|&x| x == 2.5), Some(6));
    let e = mm::read_vector_from(row.as_bytes(), 9).unwrap_err().to_string();
    assert!(e.contains("line 2: the size line says 1x10"), "{e}");
    let square = "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n";
    assert!(mm::read_vector_from(square.as_bytes(), 2).unwrap_err().to_string().contains("says 2x2"));
}
