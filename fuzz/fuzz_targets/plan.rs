//! Placement-plan files: a first line, a JSON header, one `0xPAGE NODE`
//! line per page.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skelaff_locality::PlacementPlan;

fuzz_target!(|data: &[u8]| {
    // `PlacementPlan::load_for` reads the file with `read_to_string`.
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(e) = PlacementPlan::from_text(text, "fuzz.plan") {
        let s = e.to_string();
        // An unknown scheme names the scheme and the allowed ones, not the file.
        assert!(s.contains("fuzz.plan") || s.starts_with("unknown scheme"), "{s}");
    }
});
