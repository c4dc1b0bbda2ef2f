//! The experiment's plots: speedup over the sequential version per page
//! policy (medians, the spread of the runs, a line at speedup 1), and, with
//! a peer comparison, skelaff beside STAMP's C program on TinySTM.

use std::path::Path;

use anyhow::{Context as _, Result};

use plotters::prelude::*;
use skelaff::stamp::peer::{Comparison, Side, median};
use skelaff::worklist::PagePolicy;

use crate::results::{Row, Summaries};

const COLORS: [RGBColor; 6] = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];

/// One line of a plot: its points `(threads, value)` and, per point, the
/// spread `(low, high)` of the runs behind it.
struct Series {
    name: String,
    points: Vec<(u32, f64)>,
    spread: Vec<(u32, f64, f64)>,
}

/// Draws `series` against integer thread counts `1..=max_threads`, with a
/// dashed grey line at 1, into the SVG file at `path` (written atomically).
fn draw(path: &Path, caption: &str, y_desc: &str, max_threads: u32, series: &[Series]) -> Result<()> {
    let mut svg = String::new();
    draw_svg(&mut svg, caption, y_desc, max_threads, series)?;
    skelaff::locality::atomic_file::write(path, svg).with_context(|| format!("writing {}", path.display()))
}

/// The SVG text of [`draw`]'s plot.
fn draw_svg(svg: &mut String, caption: &str, y_desc: &str, max_threads: u32, series: &[Series]) -> Result<()> {
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1).chain(s.spread.iter().map(|p| p.2)))
        .fold(1.0f64, f64::max)
        * 1.15;
    let root = SVGBackend::with_string(svg, (640, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(0u32..max_threads + 1, 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("threads")
        .y_desc(y_desc)
        .x_labels(max_threads as usize + 2)
        .x_label_formatter(&|x| if (1..=max_threads).contains(x) { x.to_string() } else { String::new() })
        .draw()?;
    let grey = RGBColor(128, 128, 128);
    chart
        .draw_series(DashedLineSeries::new([(0, 1.0), (max_threads + 1, 1.0)], 6, 4, grey.stroke_width(1)))?
        .label("1 (no faster than sequential)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], grey.stroke_width(1)));
    for (i, s) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        chart.draw_series(
            s.spread.iter().map(|&(t, lo, hi)| PathElement::new(vec![(t, lo), (t, hi)], c.stroke_width(1))),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// `app`'s speedup over its sequential version per policy: medians, and
/// the spread of the runs (each run's time against the median sequential
/// time).
pub(crate) fn speedup(
    path: &Path,
    app: &'static str,
    threads: &[usize],
    policies: &[PagePolicy],
    sums: &Summaries,
    rows: &[Row],
) -> Result<()> {
    let seq = sums.get(&(app, "sequential".to_owned(), 1)).context("no sequential run")?.median_seconds;
    let series: Vec<Series> = policies
        .iter()
        .map(|p| {
            let name = p.to_string();
            let mut s = Series { name: name.clone(), points: Vec::new(), spread: Vec::new() };
            for &t in threads {
                let runs: Vec<f64> = rows
                    .iter()
                    .filter(|r| r.app == app && r.policy == name && r.threads == t)
                    .map(|r| r.seconds)
                    .collect();
                if let Some(m) = median(&runs).filter(|m| *m > 0.0) {
                    s.points.push((t as u32, seq / m));
                    let lo = runs.iter().copied().fold(0.0, f64::max);
                    let hi = runs.iter().copied().fold(f64::INFINITY, f64::min);
                    s.spread.push((t as u32, seq / lo, seq / hi.max(f64::MIN_POSITIVE)));
                }
            }
            s
        })
        .collect();
    let max_threads = threads.iter().copied().max().unwrap_or(1) as u32;
    draw(
        path,
        &format!("{app}: speedup over its sequential version"),
        "speedup (median, runs' spread)",
        max_threads,
        &series,
    )
}

/// Workload `w` of a peer comparison: skelaff's and STAMP's C program's
/// speedup over STAMP's sequential C program (so both lines share one
/// baseline: above 1, faster than the C program without threads).
pub(crate) fn against_peer(path: &Path, w: &str, peer: &Comparison) -> Result<()> {
    let c_seq = median(&peer.times(w, Side::C, None)).context("the peer has no C sequential run")?;
    let threads = peer.thread_counts();
    let series: Vec<Series> = [(Side::C, "STAMP C on TinySTM"), (Side::Skelaff, "skelaff")]
        .into_iter()
        .map(|(side, name)| {
            let mut s = Series { name: name.to_owned(), points: Vec::new(), spread: Vec::new() };
            for &t in &threads {
                let runs = peer.times(w, side, Some(t));
                if let Some(m) = median(&runs).filter(|m| *m > 0.0) {
                    s.points.push((t, c_seq / m));
                    let slow = runs.iter().copied().fold(0.0, f64::max);
                    let fast = runs.iter().copied().fold(f64::INFINITY, f64::min);
                    s.spread.push((t, c_seq / slow, c_seq / fast.max(f64::MIN_POSITIVE)));
                }
            }
            s
        })
        .collect();
    let max_threads = threads.iter().copied().max().unwrap_or(1);
    draw(
        path,
        &format!("{w} ({} inputs): speedup over STAMP's sequential C", peer.inputs),
        "STAMP seq C time / time",
        max_threads,
        &series,
    )
}
