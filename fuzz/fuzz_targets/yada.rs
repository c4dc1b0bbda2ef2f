//! Triangle's `.node`, `.poly` and `.ele` files: the input is the three
//! texts separated by NUL bytes (missing ones are empty).
#![no_main]

use libfuzzer_sys::fuzz_target;
use skelaff_stamp::yada::{InputError, Triangulation};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut parts = text.split('\0');
    let (node, poly, ele) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    match Triangulation::parse("fuzz".as_ref(), node, poly, ele) {
        Ok(t) => {
            let n = t.points.len();
            assert!(t.segments.iter().flatten().chain(t.triangles.iter().flatten()).all(|&i| (i as usize) < n));
        }
        Err(InputError::Line { path, line, .. }) => {
            assert!(path.to_string_lossy().starts_with("fuzz.") && line >= 1);
        }
        Err(e) => panic!("not a line error: {e}"),
    }
});
