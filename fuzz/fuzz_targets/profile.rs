//! Page-access profile files: the text header, then binary records.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skelaff_locality::Profile;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = Profile::read_from(data, "fuzz.profile") {
        assert!(e.to_string().contains("fuzz.profile"), "{e}");
    }
});
