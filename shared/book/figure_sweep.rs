//! The size-sweep figure: for every step swept on one GPU (`stepNN --sweep`), its TFLOPS over cuBLAS
//! bf16's at each shape of the sweep, drawn with plotters into `book/src/figures/sweep-<gpu>.svg`.
//!
//! Like the ladder ([`crate::book::figure`]) it is a pure function of the results file: the same records give
//! a byte-identical SVG, so the committed figure is checked against the committed results in the tests.
//! Only records marked `sweep` are drawn; a file without any draws no sweep figure.

use crate::check::problem::Shape;
use crate::error::Result;
use crate::run::results::{significant, ResultsFile, StepRecord};
use crate::run::sweep;
use crate::svg::{
    draw_error, figures_dir, write_if_changed, CUBLAS_BF16, FONT, GRID, GRID_BOLD, INK, SERIES, TRANSPARENT,
};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `book/src/figures/sweep-<slug>.svg`.
pub fn sweep_svg_path(book_dir: &Path, slug: &str) -> PathBuf {
    figures_dir(book_dir).join(format!("sweep-{slug}.svg"))
}

/// Draws the size sweep of one GPU into `out` when its results file has sweep records (leaving an
/// up-to-date SVG untouched). Returns whether the file has a sweep to draw; without one nothing is
/// written.
pub fn render_sweep(file: &ResultsFile, out: &Path) -> Result<bool> {
    match sweep_svg(file)? {
        Some(svg) => {
            write_if_changed(out, &svg)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Whether a record belongs on the sweep figure: made by the fixed sweep, of the GPU's own kernel (not an sm80
/// twin), with a usable ratio.
pub fn is_drawn(r: &StepRecord) -> bool {
    r.is_fixed_sweep() && !r.is_sm80_twin() && r.ratio_bf16.is_finite() && r.ratio_bf16 > 0.0
}

/// `8192x8192x1024` (the way a shape prints) back into a shape.
fn parse_shape(word: &str) -> Option<Shape> {
    let mut dims = word.split('x').map(|d| d.parse::<usize>().ok());
    match (dims.next()??, dims.next()??, dims.next()??, dims.next()) {
        (m, n, k, None) => Some(Shape::new(m, n, k)),
        _ => None,
    }
}

/// `{{#ladder-sweep-compare stepNN SHAPE OTHER}}`: per GPU, the step's swept ratio to cuBLAS at `SHAPE`
/// against `OTHER`, with the clocks of both loops, and whether it came out lower, as a chapter that
/// predicted a dip at `SHAPE` needs to say. `None` for a malformed shape.
pub fn sweep_compare(files: &[ResultsFile], step: u8, shape: &str, other: &str) -> Option<String> {
    let (at, against) = (parse_shape(shape)?, parse_shape(other)?);
    let find = |file: &'_ ResultsFile, s: Shape| {
        file.records
            .iter()
            .find(|r| is_drawn(r) && r.step == step && r.shape == s)
            .map(|r| (r.ratio_bf16, r.clocks.as_ref().map(|c| c.sm_mhz_median)))
    };
    let name = |s: Shape| {
        if s.m == s.n && s.n == s.k {
            format!("{}³", s.m)
        } else {
            format!("{}×{}×{}", s.m, s.n, s.k)
        }
    };
    let clock = |mhz: Option<u32>| mhz.map_or(String::new(), |m| format!(" (SM clock {m} MHz)"));
    let mut parts = Vec::new();
    for file in files {
        let (Some((a, a_mhz)), Some((b, b_mhz))) = (find(file, at), find(file, against)) else {
            continue;
        };
        let verdict = if a < b {
            format!("lower at {}, by {:.1} %", name(at), 100.0 * (1.0 - a / b))
        } else {
            format!("not lower at {}", name(at))
        };
        parts.push(format!(
            "on the {}, {:.3} × cuBLAS at {}{} against {:.3} × at {}{}: {verdict}",
            file.device.name,
            a,
            name(at),
            clock(a_mhz),
            b,
            name(against),
            clock(b_mhz)
        ));
    }
    Some(if parts.is_empty() {
        format!(
            "(no sweep of step{step:02} at both {} and {} is recorded yet: `cargo run --release --bin step{step:02} -- --sweep` records one)",
            name(at),
            name(against)
        )
    } else {
        parts.join("; ")
    })
}

/// What the sweep figure shows, pulled out of a results file.
struct SweepData {
    /// The x axis: every swept shape, in [`sweep::axis_order`].
    shapes: Vec<Shape>,
    /// One series per swept step, in step order: (`10 persistent`, (x index, ratio) by x).
    series: Vec<(String, Vec<(usize, f64)>)>,
    /// The latest date of a drawn record (`2025-11-21`).
    last_date: String,
}

impl SweepData {
    fn of(file: &ResultsFile) -> Option<SweepData> {
        let swept: Vec<&StepRecord> = file.records.iter().filter(|r| is_drawn(r)).collect();
        if swept.is_empty() {
            return None;
        }
        let shapes = sweep::axis_order(swept.iter().map(|r| r.shape));
        let mut by_step: BTreeMap<u8, (String, Vec<(usize, f64)>)> = BTreeMap::new();
        for r in &swept {
            let x = shapes
                .iter()
                .position(|s| *s == r.shape)
                .expect("every swept shape is on the axis");
            by_step
                .entry(r.step)
                .or_insert_with(|| (r.label(), Vec::new()))
                .1
                .push((x, r.ratio_bf16));
        }
        let series = by_step
            .into_values()
            .map(|(label, mut points)| {
                points.sort_by_key(|p| p.0);
                (label, points)
            })
            .collect();
        let last_date = swept
            .iter()
            .map(|r| r.date.get(..10).unwrap_or(&r.date))
            .max()
            .unwrap_or("")
            .to_string();
        Some(SweepData {
            shapes,
            series,
            last_date,
        })
    }

    /// The y range on tenths: every ratio and the line at 1, with room above for the value labels and
    /// below for the legend.
    fn y_range(&self) -> (f64, f64) {
        let (lo, hi) = self
            .series
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.1))
            .fold((1f64, 1f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let legend_room = 0.06 * (self.series.len() + 1) as f64;
        let lo = (((lo - 0.05 - legend_room) * 10.0).floor() / 10.0).max(0.0);
        let hi = ((hi + 0.1) * 10.0).ceil() / 10.0;
        (lo, hi)
    }

    /// Where the square sizes end and the other shapes begin on the axis, when all squares come first.
    fn squares_end(&self) -> Option<usize> {
        let cube = |s: &Shape| s.m == s.n && s.n == s.k;
        let end = self.shapes.iter().position(|s| !cube(s))?;
        (end > 0 && self.shapes[end..].iter().all(|s| !cube(s))).then_some(end)
    }
}

/// `0.9`, `1.0`, `0.85`: a tick of the ratio axis.
fn ratio_tick(v: &f64) -> String {
    let text = format!("{v:.2}");
    match text.strip_suffix('0') {
        Some(short) => short.to_string(),
        None => text,
    }
}

fn sweep_svg(file: &ResultsFile) -> Result<Option<String>> {
    let Some(data) = SweepData::of(file) else {
        return Ok(None);
    };
    // The book's text column (`book/theme/ladder.css`), so that the browser draws it at its own size.
    let width = 1040;
    let height = 540;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        draw_sweep(&root, file, &data).map_err(draw_error("the sweep figure"))?;
        root.present().map_err(draw_error("the sweep figure"))?;
    }
    if !svg.ends_with('\n') {
        svg.push('\n');
    }
    Ok(Some(svg))
}

fn draw_sweep(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    file: &ResultsFile,
    data: &SweepData,
) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>> {
    root.fill(&WHITE)?;
    let (width, _) = root.dim_in_pixel();
    let centred = |size: u32| {
        TextStyle::from((FONT, size).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Top))
    };
    root.draw(&Text::new(
        format!("Size sweep on {}: TFLOPS over cuBLAS bf16's", file.device.name),
        (width as i32 / 2, 12),
        centred(22),
    ))?;
    root.draw(&Text::new(
        format!(
            "C = A·Bᵀ, bf16 in, fp32 accumulate · each shape timed in one loop with cuBLAS, launched in turn · {}",
            data.last_date
        ),
        (width as i32 / 2, 40),
        centred(14),
    ))?;

    let n = data.shapes.len();
    let (y_lo, y_hi) = data.y_range();
    let ticks = ((y_hi - y_lo) * 10.0).round() as usize + 1;
    let mut chart = ChartBuilder::on(root)
        .margin_top(66)
        .margin_left(8)
        .margin_right(16)
        .margin_bottom(8)
        .x_label_area_size(56)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..n as f64, y_lo..y_hi)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(ticks)
        .y_label_formatter(&ratio_tick)
        .y_desc("× cuBLAS bf16 (TFLOPS ÷ TFLOPS)")
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 14))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(INK)
        .draw()?;

    // Shape labels under the axis, staggered over two rows when there are many.
    let stagger = n > 6;
    for (i, shape) in data.shapes.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, y_lo));
        let row = if stagger && i % 2 == 1 { 20 } else { 0 };
        root.draw(&PathElement::new(vec![(px, py), (px, py + 5 + row)], INK))?;
        root.draw(&Text::new(sweep::label(*shape), (px, py + 8 + row), centred(14)))?;
    }

    // A thin rule between the square sizes and the LLM-like shapes.
    if let Some(end) = data.squares_end() {
        chart.draw_series(DashedLineSeries::new(
            [(end as f64, y_lo), (end as f64, y_hi)],
            4,
            4,
            GRID_BOLD.stroke_width(1),
        ))?;
        let caption = |x: f64, text: &str| {
            let (px, py) = chart.backend_coord(&(x, y_hi));
            Text::new(
                text.to_string(),
                (px, py + 6),
                TextStyle::from((FONT, 14).into_font())
                    .color(&INK)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            )
        };
        root.draw(&caption(end as f64 / 2.0, "square"))?;
        root.draw(&caption((end + n) as f64 / 2.0, "LLM-like M×N×K"))?;
    }

    // cuBLAS: the line at 1.
    let style = CUBLAS_BF16.stroke_width(2);
    chart
        .draw_series(DashedLineSeries::new([(0.0, 1.0), (n as f64, 1.0)], 8, 5, style))?
        .label("cuBLAS bf16 (= 1)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));

    // One series per swept step: markers joined by a thin line, each ratio written above its marker.
    let count = data.series.len();
    for (j, (label, points)) in data.series.iter().enumerate() {
        let colour = SERIES[j % SERIES.len()];
        let offset = if count == 1 {
            0.0
        } else {
            -0.18 + 0.36 * j as f64 / (count - 1) as f64
        };
        let xy: Vec<(f64, f64)> = points.iter().map(|&(x, r)| (x as f64 + 0.5 + offset, r)).collect();
        // The line joins neighbouring shapes of one kind: none crosses from the squares to the others.
        let split = data
            .squares_end()
            .map_or(n, |end| points.iter().take_while(|p| p.0 < end).count());
        for part in [&xy[..split], &xy[split..]] {
            chart.draw_series(LineSeries::new(part.to_vec(), colour.mix(0.5).stroke_width(1)))?;
        }
        let style = colour.filled();
        let markers = xy.iter().copied();
        let entry = match j % 3 {
            0 => chart.draw_series(markers.map(|p| Circle::new(p, 5, style)))?,
            1 => chart.draw_series(markers.map(|p| TriangleMarker::new(p, 7, style)))?,
            _ => chart.draw_series(markers.map(|p| EmptyElement::at(p) + Rectangle::new([(-5, -5), (5, 5)], style)))?,
        };
        let entry = entry.label(format!("step {label}"));
        match j % 3 {
            0 => entry.legend(move |(x, y)| Circle::new((x + 10, y), 5, style)),
            1 => entry.legend(move |(x, y)| TriangleMarker::new((x + 10, y), 7, style)),
            _ => entry.legend(move |(x, y)| Rectangle::new([(x + 5, y - 5), (x + 15, y + 5)], style)),
        };
        // Each ratio above its marker, or below it where the text would sit on cuBLAS's line.
        let (_, line_py) = chart.backend_coord(&(0.0, 1.0));
        for &(x, r) in &xy {
            let (px, py) = chart.backend_coord(&(x, r));
            let above = (py - 9 - 16..=py - 9 + 2).contains(&line_py);
            let (dy, v) = if above { (9, VPos::Top) } else { (-9, VPos::Bottom) };
            root.draw(&Text::new(
                significant(r, 3),
                (px, py + dy),
                TextStyle::from((FONT, 13).into_font())
                    .color(&colour)
                    .pos(Pos::new(HPos::Center, v)),
            ))?;
        }
    }

    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .margin(12)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.9))
        .border_style(GRID_BOLD)
        .draw()?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::run::results::tests::{device, record_of};

    /// A record of `step` made by a sweep at `shape`, `ratio` times as fast as cuBLAS bf16.
    pub(crate) fn swept(step: u8, name: &str, shape: Shape, ratio: f64) -> StepRecord {
        let mut r = record_of(step, name, 1024, 1.0);
        let cublas_ms = shape.flops() / 700e12 * 1e3;
        r.shape = shape;
        r.sweep = true;
        r.cublas_bf16.median_ms = cublas_ms;
        r.cublas_bf16.tflops = crate::run::results::tflops(&shape, cublas_ms);
        r.time.median_ms = cublas_ms / ratio;
        r.time.tflops = crate::run::results::tflops(&shape, r.time.median_ms);
        r.ratio_bf16 = r.time.tflops / r.cublas_bf16.tflops;
        r.ratio_sgemm = None;
        r.cublas_sgemm = None;
        r
    }

    /// Steps 08 and 10 swept over every shape (10 losing at the small and the short-K shapes), plus a
    /// plain run of step 10 at 4096³ that the sweep figure must leave out.
    #[test]
    fn a_predicted_dip_is_confronted_with_the_measurement() {
        let file = synthetic();
        let (a, b) = (sweep::SHAPES[0], sweep::SHAPES[1]);
        let text = sweep_compare(std::slice::from_ref(&file), 10, &a.to_string(), &b.to_string()).unwrap();
        let ratio = |s: Shape| {
            file.records
                .iter()
                .find(|r| r.sweep && r.step == 10 && r.shape == s)
                .unwrap()
                .ratio_bf16
        };
        let (ra, rb) = (ratio(a), ratio(b));
        assert!(
            text.contains(if ra < rb { "lower at" } else { "not lower at" }),
            "{text}"
        );
        assert!(sweep_compare(&[], 10, "1x2", "3x4x5").is_none());
        assert!(sweep_compare(&[], 10, "1x2x3", "3x4x5").unwrap().contains("no sweep"));
    }

    pub(crate) fn synthetic() -> ResultsFile {
        let ratios10 = [0.62, 0.9, 1.02, 1.03, 1.04, 1.03, 1.01, 0.93, 1.04, 0.91, 0.9];
        let ratios08 = [0.55, 0.8, 0.91, 0.92, 0.93, 0.92, 0.9, 0.85, 0.92, 0.6, 0.6];
        let mut records = vec![record_of(10, "persistent", 4096, 0.2)];
        for (i, &shape) in sweep::SHAPES.iter().enumerate() {
            records.push(swept(10, "persistent", shape, ratios10[i]));
            records.push(swept(8, "pipeline", shape, ratios08[i]));
        }
        ResultsFile {
            device: device("NVIDIA H200"),
            records,
            superseded: Vec::new(),
        }
    }

    #[test]
    fn sweep_figure_is_deterministic_and_labelled() {
        let dir = tempfile::tempdir().unwrap();
        let file = synthetic();
        let (first, second) = (dir.path().join("a/sweep.svg"), dir.path().join("b/sweep.svg"));
        assert!(render_sweep(&file, &first).unwrap());
        assert!(render_sweep(&file, &second).unwrap());
        let svg = std::fs::read_to_string(&first).unwrap();
        assert_eq!(svg, std::fs::read_to_string(&second).unwrap());
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        for shape in sweep::SHAPES {
            assert!(svg.contains(&sweep::label(shape)), "{shape} not on the axis");
        }
        for text in [
            "Size sweep on NVIDIA H200",
            "step 10 persistent",
            "step 08 pipeline",
            "cuBLAS bf16 (= 1)",
            "square",
            "LLM-like",
            // Ratios, as written beside the markers.
            "0.62",
            "1.04",
            "0.55",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        if let Ok(out) = std::env::var("GEMM_LADDER_SWEEP_FIGURE_OUT") {
            std::fs::write(out, &svg).unwrap();
        }
        // The plain run at 4096³ (ratio 1 against the 0.2 ms cuBLAS of record_of) is not a sweep point:
        // step 10's 4096³ point is the sweep's 1.02.
        assert!(!svg.contains(">1.00<"));
    }

    #[test]
    fn no_sweep_records_draw_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = synthetic();
        file.records.retain(|r| !r.sweep);
        let out = dir.path().join("sweep.svg");
        assert!(!render_sweep(&file, &out).unwrap());
        assert!(!out.exists());
    }

    #[test]
    fn axis_and_range() {
        let mut file = synthetic();
        let data = SweepData::of(&file).unwrap();
        assert_eq!(data.shapes, sweep::SHAPES);
        assert_eq!(data.squares_end(), Some(6));
        assert_eq!(data.series.len(), 2);
        assert_eq!(data.series[0].0, "08 pipeline");
        let (lo, hi) = data.y_range();
        assert!(
            (0.0..=0.55 - 0.1).contains(&lo) && (1.04 + 0.05..=1.3).contains(&hi),
            "{lo}..{hi}"
        );
        let on_tenths = |v: f64| (v * 10.0 - (v * 10.0).round()).abs() < 1e-9;
        assert!(on_tenths(lo) && on_tenths(hi), "{lo}..{hi}");
        // Only square sizes swept: no rule, and the line at 1 stays inside the range.
        file.records
            .retain(|r| r.shape.m == r.shape.k && r.shape.n == r.shape.k && r.step == 10);
        let data = SweepData::of(&file).unwrap();
        assert_eq!(data.squares_end(), None);
        let (lo, hi) = data.y_range();
        assert!(lo < 1.0 && hi > 1.0);
        assert_eq!(ratio_tick(&0.9), "0.9");
        assert_eq!(ratio_tick(&1.0), "1.0");
        assert_eq!(ratio_tick(&0.85), "0.85");
    }
}
