//! Matrix Market: every format, field and symmetry (the banner is part of
//! the input), read as `f64` and `f32` matrices, and as the CLI's vector
//! files (`--rhs`, `--x`) of a length taken from the first byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skelaff_spmv::{Error, mm};

fn check<T>(r: Result<T, Error>) {
    if let Err(e) = r {
        assert!(matches!(e, Error::MatrixMarket { line, .. } if line >= 1), "{e}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&len, text)) = data.split_first() else { return };
    check(mm::read::<f64, _>(text));
    check(mm::read::<f32, _>(text));
    check(mm::read_vector_from(text, usize::from(len)));
});
