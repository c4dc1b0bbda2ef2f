//! kmeans points: STAMP's text format and (`-b`) binary format, as read
//! after decompression.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skelaff_stamp::kmeans::Points;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = Points::parse_text(data, "fuzz.txt") {
        assert!(e.to_string().contains("fuzz.txt"), "{e}");
    }
    if let Err(e) = Points::parse_binary(data, "fuzz.bin") {
        assert!(e.to_string().contains("fuzz.bin"), "{e}");
    }
});
