//! labyrinth mazes (`d`, `p`, `w` lines), then the grid a parsed maze gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skelaff_stamp::labyrinth::Maze;

fuzz_target!(|data: &[u8]| {
    // `Maze::load` reads the file with `read_to_string`: invalid UTF-8 is an
    // I/O error naming the path before the parser sees it.
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Maze::parse(text, "fuzz.txt") {
        Ok(m) => assert_eq!(m.initial_grid().len(), m.dims.cells()),
        Err(e) => assert!(e.to_string().starts_with("fuzz.txt"), "{e}"),
    }
});
