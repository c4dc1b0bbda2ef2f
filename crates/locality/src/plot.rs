//! The footprint as an SVG picture: accesses over time per thread (the
//! SkelAff paper's Fig. 1) above the pages-by-sharers bars.

use std::path::Path;

use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::footprint::Footprint;

/// The most points the scatter draws; more cells are thinned evenly.
const MAX_POINTS: usize = 40_000;

/// Reads one count of a sharing row.
type SharingValue = fn(&crate::footprint::SharingRow) -> u64;

const COLOURS: [RGBColor; 8] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
];

impl Footprint {
    /// Draws the footprint into an SVG file at `path` (written atomically:
    /// the file is the previous one or this one, complete).
    ///
    /// # Errors
    ///
    /// [`Error::Plot`] when drawing or writing fails.
    pub fn plot_svg(&self, path: &Path) -> Result<()> {
        let what = path.display().to_string();
        let err = |e: &dyn std::fmt::Display| Error::Plot { what: what.clone(), reason: e.to_string() };
        let mut svg = String::new();
        self.draw_svg(&mut svg, &err)?;
        crate::atomic_file::write(path, svg).map_err(|e| err(&e))
    }

    /// Draws the footprint as SVG text into `svg`.
    fn draw_svg(&self, svg: &mut String, err: &dyn Fn(&dyn std::fmt::Display) -> Error) -> Result<()> {
        let root = SVGBackend::with_string(svg, (900, 720)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (top, bottom) = root.split_vertically(480);

        let max_ms = self.cells.last().map_or(1.0, |c| (c.time_ns + self.bin_ns) as f64 / 1e6);
        let pages = self.pages.max(1) as f64;
        let mut chart = ChartBuilder::on(&top)
            .caption(
                format!("{} ({}): sampled page accesses, {} threads", self.app, self.placement, self.threads),
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..max_ms, 0.0..pages)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("time (ms)")
            .y_desc("page (rank by address)")
            .disable_mesh()
            .draw()
            .map_err(|e| err(&e))?;
        let step = self.cells.len().div_ceil(MAX_POINTS).max(1);
        for thread in 0..self.threads {
            let c = COLOURS[usize::from(thread) % COLOURS.len()];
            let points =
                self.cells.iter().step_by(step).filter(|cell| cell.thread == thread).map(move |cell| {
                    Circle::new((cell.time_ns as f64 / 1e6, f64::from(cell.page_rank)), 1, c.filled())
                });
            chart
                .draw_series(points)
                .map_err(|e| err(&e))?
                .label(format!("thread {thread}"))
                .legend(move |(x, y)| Circle::new((x + 6, y), 3, c.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;

        let most =
            self.sharing.iter().map(|r| r.pages.max(r.read_pages).max(r.written_pages)).max().unwrap_or(1).max(1);
        let n = self.sharing.len() as f64;
        let mut bars = ChartBuilder::on(&bottom)
            .caption("pages by the number of threads touching them", ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(56)
            .build_cartesian_2d(0.5..n + 0.5, 0.0..most as f64 * 1.1)
            .map_err(|e| err(&e))?;
        bars.configure_mesh().x_desc("threads sharing the page").y_desc("pages").draw().map_err(|e| err(&e))?;
        let kinds: [(&str, RGBColor, SharingValue); 3] = [
            ("touched", RGBColor(0x60, 0x60, 0x60), |r| r.pages),
            ("read", COLOURS[0], |r| r.read_pages),
            ("written", COLOURS[1], |r| r.written_pages),
        ];
        for (k, (name, colour, value)) in kinds.into_iter().enumerate() {
            let x0 = -0.4 + 0.27 * k as f64;
            let rects = self.sharing.iter().map(move |r| {
                let x = f64::from(r.sharers) + x0;
                Rectangle::new([(x, 0.0), (x + 0.25, value(r) as f64)], colour.filled())
            });
            bars.draw_series(rects)
                .map_err(|e| err(&e))?
                .label(name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 10, y + 4)], colour.filled()));
        }
        bars.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))
    }
}

#[cfg(test)]
mod tests {
    use crate::Footprint;
    use crate::profile::{PageAccess, Profile, ProfileHeader};

    #[test]
    fn draws_an_svg_with_every_thread() {
        let h = ProfileHeader::new("2x2".parse().unwrap(), "t", "bind", 4);
        let accesses =
            (0..400u64).map(|i| PageAccess::read(i % 37, (i % 4) as u16, (i % 2) as u16, i * 1000)).collect();
        let f = Footprint::new(&Profile::new(h, accesses).unwrap(), 20);
        let dir = std::env::temp_dir().join(format!("skelaff-locality-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.svg");
        f.plot_svg(&path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("thread 3") && svg.contains("written"), "{}", &svg[..200]);
        assert!(svg.matches("<circle").count() >= f.cells.len(), "every cell is a point");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
