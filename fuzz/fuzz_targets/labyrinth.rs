//! labyrinth mazes (`d`, `p`, `w` lines): every cell a parsed maze names is
//! inside its grid, and the grid is built for the smaller mazes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skelaff_stamp::labyrinth::Maze;

fuzz_target!(|data: &[u8]| {
    // `Maze::load` reads the file with `read_to_string`: invalid UTF-8 is an
    // I/O error naming the path before the parser sees it.
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Maze::parse(text, "fuzz.txt") {
        Ok(m) => {
            let cells = m.dims.cells();
            assert!(m.walls.iter().chain(m.pairs.iter().flat_map(|(s, d)| [s, d])).all(|&c| (c as usize) < cells));
            // The grid is the maze's size, up to MAX_CELLS (2^28 cells, 1 GiB)
            // whatever the file's length: a 14-byte `d 4 4777770 9` asks for
            // 688 MB. Built here only where that stays within the fuzzer's
            // 512 MiB limit on one allocation.
            if cells <= 1 << 24 {
                assert_eq!(m.initial_grid().len(), cells);
            }
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz.txt"), "{e}"),
    }
});
