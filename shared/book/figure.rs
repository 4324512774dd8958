//! Figures for the book, drawn with plotters into SVG from the results files.
//!
//! Everything here is a pure function of its input: the same JSON gives a byte-identical SVG, so the
//! committed figures can be checked against the committed results in the tests. Text is laid out with
//! plotters' built-in size estimate (no font files are read), and the browser draws the real glyphs.

use super::svg::{
    draw_error, figures_dir, write_if_changed, CUBLAS_BF16, FONT, GRID, GRID_BOLD, INK, SERIES, TRANSPARENT,
};
use crate::error::Result;
use crate::run::registry::Format;
use crate::run::results::{significant, ResultsFile, StepRecord};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `book/src/figures/ladder-<slug>.svg`.
pub fn ladder_svg_path(book_dir: &Path, slug: &str) -> PathBuf {
    figures_dir(book_dir).join(format!("ladder-{slug}.svg"))
}

const CUBLAS_SGEMM: RGBColor = RGBColor(90, 90, 90);
/// The quoted B200 series (hollow markers): colours no measured series uses.
const QUOTED: [RGBColor; 2] = [RGBColor(0, 130, 130), RGBColor(170, 50, 130)];

/// Draws the TFLOPS ladder of one GPU into `out` (an SVG file).
pub fn render_ladder(file: &ResultsFile, out: &Path) -> Result<()> {
    write_if_changed(out, &ladder_svg(file)?)
}

/// The smallest of 1, 2, 5 × 10^k that is at least `x` (`up`), or the largest at most `x`.
fn one_two_five(x: f64, up: bool) -> f64 {
    let decade = 10f64.powf(x.log10().floor());
    let steps = [1.0, 2.0, 5.0, 10.0];
    if up {
        steps
            .iter()
            .map(|m| m * decade)
            .find(|v| *v >= x * (1.0 - 1e-12))
            .unwrap_or(10.0 * decade)
    } else {
        steps
            .iter()
            .rev()
            .map(|m| m * decade)
            .find(|v| *v <= x * (1.0 + 1e-12))
            .unwrap_or(decade)
    }
}

/// Axis label of a log-scale tick: only 1, 2 and 5 × 10^k are written, the other grid lines stay bare.
fn log_tick_label(v: f64) -> String {
    if v <= 0.0 {
        return String::new();
    }
    let mantissa = v / 10f64.powf(v.log10().floor());
    let keep = [1.0, 2.0, 5.0, 10.0].iter().any(|m| (mantissa - m).abs() < 1e-6);
    if keep {
        significant(v, 1)
    } else {
        String::new()
    }
}

// ---------------------------------------------------------------------------------------------
// The TFLOPS ladder

/// A quoted series as the figure draws it: (source key, legend label, [(x slot, TFLOPS)]).
type QuotedSeries = (&'static str, String, Vec<(usize, f64)>);

/// What the ladder figure shows, pulled out of a results file.
struct LadderData {
    /// (step, `01 naive`), in step order: the x axis.
    steps: Vec<(u8, String)>,
    /// Square size → (step, TFLOPS) for every record of that size.
    series: BTreeMap<usize, Vec<(u8, f64)>>,
    /// The size whose cuBLAS timings are drawn as references, when there is one.
    reference_size: Option<usize>,
    cublas_bf16: Option<f64>,
    cublas_sgemm: Option<f64>,
    /// The latest date of a plotted record (`2025-11-21`).
    last_date: String,
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        0.5 * (values[n / 2 - 1] + values[n / 2])
    })
}

impl LadderData {
    fn of(file: &ResultsFile) -> LadderData {
        let square: Vec<&StepRecord> = file
            .records
            .iter()
            .filter(|r| !r.sweep && r.shape.m == r.shape.n && r.shape.n == r.shape.k && r.time.tflops > 0.0)
            .collect();
        let mut steps: BTreeMap<u8, String> = BTreeMap::new();
        let mut series: BTreeMap<usize, Vec<(u8, f64)>> = BTreeMap::new();
        for r in &square {
            steps.entry(r.step).or_insert_with(|| r.label());
            series.entry(r.shape.m).or_default().push((r.step, r.time.tflops));
        }
        for points in series.values_mut() {
            points.sort_by_key(|p| p.0);
        }
        // The ladder's own size is 4096 (every step's default); otherwise the largest one measured.
        let reference_size = if series.contains_key(&4096) {
            Some(4096)
        } else {
            series.keys().next_back().copied()
        };
        let at_size = |r: &&&StepRecord| Some(r.shape.m) == reference_size;
        let cublas_bf16 = median(
            square
                .iter()
                .filter(at_size)
                .map(|r| r.cublas_bf16.tflops)
                .filter(|t| *t > 0.0)
                .collect(),
        );
        let cublas_sgemm = median(
            square
                .iter()
                .filter(at_size)
                .filter_map(|r| r.cublas_sgemm.as_ref().map(|t| t.tflops))
                .filter(|t| *t > 0.0)
                .collect(),
        );
        let last_date = square
            .iter()
            .map(|r| r.date.get(..10).unwrap_or(&r.date))
            .max()
            .unwrap_or("")
            .to_string();
        LadderData {
            steps: steps.into_iter().collect(),
            series,
            reference_size,
            cublas_bf16,
            cublas_sgemm,
            last_date,
        }
    }

    /// The y range, padded so that value labels fit, on 1-2-5 boundaries.
    fn y_range(&self) -> (f64, f64) {
        let values = self
            .series
            .values()
            .flatten()
            .map(|p| p.1)
            .chain(self.cublas_bf16)
            .chain(self.cublas_sgemm)
            .chain(
                self.quoted()
                    .into_iter()
                    .flat_map(|(_, _, p)| p.into_iter().map(|q| q.1)),
            );
        let (lo, hi) = values.fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if !lo.is_finite() {
            return (1.0, 1000.0);
        }
        (one_two_five(lo / 1.6, false), one_two_five(hi * 1.6, true))
    }

    fn x_of(&self, step: u8) -> Option<usize> {
        self.steps.iter().position(|s| s.0 == step)
    }

    /// The quoted B200 series ([`crate::book::quoted::figure_series`]) at the rungs this figure shows:
    /// (key, legend label, [(x slot, TFLOPS)]).
    fn quoted(&self) -> Vec<QuotedSeries> {
        crate::book::quoted::figure_series()
            .into_iter()
            .map(|(key, label, points)| {
                let xy = points
                    .iter()
                    .filter_map(|q| q.step.and_then(|s| self.x_of(s)).map(|x| (x, q.tflops)))
                    .collect::<Vec<_>>();
                (key, label, xy)
            })
            .filter(|(_, _, xy)| !xy.is_empty())
            .collect()
    }
}

/// `4096³`, the way the figure names a square size.
fn cube(size: usize) -> String {
    format!("{size}³")
}

fn ladder_svg(file: &ResultsFile) -> Result<String> {
    let data = LadderData::of(file);
    let n = data.steps.len().max(1);
    let width = (180 + 115 * n as u32).max(900);
    let height = 600;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        draw_ladder(&root, file, &data).map_err(draw_error("the ladder figure"))?;
        root.present().map_err(draw_error("the ladder figure"))?;
    }
    if !svg.ends_with('\n') {
        svg.push('\n');
    }
    Ok(svg)
}

fn draw_ladder(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    file: &ResultsFile,
    data: &LadderData,
) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>> {
    root.fill(&WHITE)?;
    let (width, _) = root.dim_in_pixel();
    let title = format!("TFLOPS ladder on {}", file.device.name);
    root.draw(&Text::new(
        title,
        (width as i32 / 2, 14),
        TextStyle::from((FONT, 24).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    let subtitle = format!(
        "C = A·Bᵀ, bf16 in, fp32 accumulate · median of timed runs · compute capability {} · CUDA driver {} · {}",
        file.device.compute_capability,
        file.device.driver,
        if data.last_date.is_empty() {
            "no square runs yet"
        } else {
            &data.last_date
        },
    );
    root.draw(&Text::new(
        subtitle,
        (width as i32 / 2, 42),
        TextStyle::from((FONT, 15).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;

    let n = data.steps.len().max(1);
    let (y_lo, y_hi) = data.y_range();
    let mut chart = ChartBuilder::on(root)
        .margin_top(66)
        .margin_left(16)
        .margin_right(24)
        .margin_bottom(8)
        .x_label_area_size(56)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..n as f64, (y_lo..y_hi).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(40)
        .y_label_formatter(&|_| String::new())
        .y_desc("TFLOPS")
        .axis_desc_style((FONT, 17))
        .label_style((FONT, 15))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(INK)
        .draw()?;

    // Y labels at 1, 2 and 5 × 10^k only. Drawn here rather than by the mesh, whose log-scale key
    // points repeat each power of ten (the text would be written twice, on top of itself).
    let mut tick = one_two_five(y_lo, true);
    while tick <= y_hi * (1.0 + 1e-9) {
        let (px, py) = chart.backend_coord(&(0.0, tick));
        root.draw(&Text::new(
            log_tick_label(tick),
            (px - 10, py),
            TextStyle::from((FONT, 15).into_font())
                .color(&INK)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
        tick = one_two_five(tick * 1.5, true);
    }

    // Step labels under the axis, staggered over two rows when the names would collide.
    let stagger = n > 6;
    for (i, (_, label)) in data.steps.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, y_lo));
        let row = if stagger && i % 2 == 1 { 20 } else { 0 };
        root.draw(&PathElement::new(vec![(px, py), (px, py + 5 + row)], INK))?;
        root.draw(&Text::new(
            label.clone(),
            (px, py + 8 + row),
            TextStyle::from((FONT, 16).into_font())
                .color(&INK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }

    // cuBLAS references: dashed lines across the plot, named in the legend and at their left end.
    let references = [
        ("cuBLAS bf16", data.cublas_bf16, CUBLAS_BF16),
        ("cuBLAS SGEMM (fp32)", data.cublas_sgemm, CUBLAS_SGEMM),
    ];
    for (name, value, colour) in references {
        let (Some(value), Some(size)) = (value, data.reference_size) else {
            continue;
        };
        let style = colour.stroke_width(2);
        chart
            .draw_series(DashedLineSeries::new([(0.0, value), (n as f64, value)], 8, 5, style))?
            .label(format!("{name} at {}: {} TFLOPS", cube(size), significant(value, 3)))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        let (px, py) = chart.backend_coord(&(0.0, value));
        root.draw(&Text::new(
            format!("{name}, {}", cube(size)),
            (px + 6, py - 3),
            TextStyle::from((FONT, 14).into_font())
                .color(&colour)
                .pos(Pos::new(HPos::Left, VPos::Bottom)),
        ))?;
    }

    // The source texts' B200 numbers, quoted: hollow markers on a dashed line, named "quoted" in the
    // legend, so that they cannot be read as this crate's measurements.
    for (j, (_, label, xy)) in data.quoted().into_iter().enumerate() {
        let colour = QUOTED[j % QUOTED.len()];
        let style = colour.stroke_width(2);
        let points: Vec<(f64, f64)> = xy.iter().map(|&(x, t)| (x as f64 + 0.5, t)).collect();
        chart.draw_series(DashedLineSeries::new(
            points.clone(),
            5,
            4,
            colour.mix(0.7).stroke_width(1),
        ))?;
        let entry = if j % 2 == 0 {
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 6, style)))?
        } else {
            chart.draw_series(
                points
                    .iter()
                    .map(|&p| EmptyElement::at(p) + Rectangle::new([(-5, -5), (5, 5)], style)),
            )?
        };
        let entry = entry.label(label);
        if j % 2 == 0 {
            entry.legend(move |(x, y)| Circle::new((x + 10, y), 6, style));
        } else {
            entry.legend(move |(x, y)| Rectangle::new([(x + 5, y - 5), (x + 15, y + 5)], style));
        }
    }

    // One series per square size: markers joined by a thin line, each value written beside it.
    let count = data.series.len().max(1);
    for (j, (size, points)) in data.series.iter().enumerate() {
        let colour = SERIES[j % SERIES.len()];
        // Sizes sit side by side within a step's slot.
        let offset = if count == 1 {
            0.0
        } else {
            -0.18 + 0.36 * j as f64 / (count - 1) as f64
        };
        let xy: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|(step, t)| data.x_of(*step).map(|i| (i as f64 + 0.5 + offset, *t)))
            .collect();
        // An MXFP8 step solves another problem (e4m3 in, fp32 out): hollow markers, not joined to the
        // bf16 rungs.
        let is_mx = |step: u8| crate::run::steps::get(step).is_ok_and(|s| s.format == Format::Mxfp8);
        let (bf16_xy, mx_xy): (Vec<_>, Vec<_>) = points.iter().zip(&xy).partition(|((step, _), _)| !is_mx(*step));
        let bf16_xy: Vec<(f64, f64)> = bf16_xy.into_iter().map(|(_, p)| *p).collect();
        let mx_xy: Vec<(f64, f64)> = mx_xy.into_iter().map(|(_, p)| *p).collect();
        chart.draw_series(LineSeries::new(bf16_xy.clone(), colour.mix(0.5).stroke_width(1)))?;
        let hollow = colour.stroke_width(2);
        match j % 3 {
            0 => chart.draw_series(mx_xy.iter().map(|&p| Circle::new(p, 6, hollow)))?,
            1 => chart.draw_series(mx_xy.iter().map(|&p| TriangleMarker::new(p, 8, hollow)))?,
            _ => chart.draw_series(
                mx_xy
                    .iter()
                    .map(|&p| EmptyElement::at(p) + Rectangle::new([(-6, -6), (6, 6)], hollow)),
            )?,
        };
        let style = colour.filled();
        let points = bf16_xy.iter().copied();
        let entry = match j % 3 {
            0 => chart.draw_series(points.map(|p| Circle::new(p, 5, style)))?,
            1 => chart.draw_series(points.map(|p| TriangleMarker::new(p, 7, style)))?,
            _ => chart.draw_series(points.map(|p| EmptyElement::at(p) + Rectangle::new([(-5, -5), (5, 5)], style)))?,
        };
        let entry = entry.label(format!(
            "this crate, {} (hollow: MXFP8, e4m3 in, fp32 out)",
            cube(*size)
        ));
        match j % 3 {
            0 => entry.legend(move |(x, y)| Circle::new((x + 10, y), 5, style)),
            1 => entry.legend(move |(x, y)| TriangleMarker::new((x + 10, y), 7, style)),
            _ => entry.legend(move |(x, y)| Rectangle::new([(x + 5, y - 5), (x + 15, y + 5)], style)),
        };
        // Labels point away from the neighbouring size: left of the left series, right of the others.
        let (h, dx) = if count > 1 && j == 0 {
            (HPos::Right, -9)
        } else {
            (HPos::Left, 9)
        };
        for &(x, t) in &xy {
            let (px, py) = chart.backend_coord(&(x, t));
            root.draw(&Text::new(
                significant(t, 3),
                (px + dx, py),
                TextStyle::from((FONT, 14).into_font())
                    .color(&colour)
                    .pos(Pos::new(h, VPos::Center)),
            ))?;
        }
    }

    if data.series.is_empty() {
        let (px, py) = chart.backend_coord(&(n as f64 / 2.0, (y_lo * y_hi).sqrt()));
        root.draw(&Text::new(
            "no square-size runs recorded on this GPU yet",
            (px, py),
            TextStyle::from((FONT, 16).into_font())
                .color(&INK)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        ))?;
    } else {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .margin(12)
            .label_font((FONT, 15))
            .background_style(WHITE.mix(0.9))
            .border_style(GRID_BOLD)
            .draw()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::results::tests::{device, record_of};

    /// Eleven steps at 4096³ (times falling from 100 ms to 0.2 ms), the first three also at 8192³.
    pub(crate) fn synthetic() -> ResultsFile {
        let names = [
            "naive",
            "smem_tiling",
            "register_tiling",
            "tma_mma",
            "swizzle128",
            "tma_store",
            "multicast",
            "pipeline",
            "epilogue_double_buffer",
            "persistent",
            "mxfp8",
        ];
        let ms = [100.0, 20.0, 4.0, 1.5, 0.9, 0.6, 0.45, 0.3, 0.25, 0.21, 0.18];
        let mut records = Vec::new();
        for (i, (name, t)) in names.iter().zip(ms).enumerate() {
            records.push(record_of(i as u8 + 1, name, 4096, t));
            if i < 3 {
                records.push(record_of(i as u8 + 1, name, 8192, t * 8.5));
            }
        }
        ResultsFile {
            device: device("NVIDIA H100 80GB HBM3"),
            records,
        }
    }

    #[test]
    fn one_two_five_rounding() {
        assert_eq!(one_two_five(0.7, false), 0.5);
        assert_eq!(one_two_five(1.0, false), 1.0);
        assert_eq!(one_two_five(1300.0, true), 2000.0);
        assert_eq!(one_two_five(600.0, true), 1000.0);
        assert_eq!(one_two_five(20.0, true), 20.0);
        assert_eq!(log_tick_label(200.0), "200");
        assert_eq!(log_tick_label(0.5), "0.5");
        assert_eq!(log_tick_label(300.0), "");
    }

    #[test]
    fn ladder_is_deterministic_and_labelled() {
        let dir = tempfile::tempdir().unwrap();
        let file = synthetic();
        let first = dir.path().join("a/ladder.svg");
        let second = dir.path().join("b/ladder.svg");
        render_ladder(&file, &first).unwrap();
        render_ladder(&file, &second).unwrap();
        let a = std::fs::read(&first).unwrap();
        assert_eq!(a, std::fs::read(&second).unwrap());
        let svg = String::from_utf8(a).unwrap();
        for label in [
            "01 naive",
            "02 smem_tiling",
            "03 register_tiling",
            "09 epilogue_double_buffer",
            "11 mxfp8",
        ] {
            assert!(svg.contains(label), "{label} missing");
        }
        assert!(svg.contains("NVIDIA H100 80GB HBM3"));
        assert!(svg.contains("4096³") && svg.contains("8192³"));
        assert!(svg.contains("cuBLAS bf16") && svg.contains("cuBLAS SGEMM"));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn regenerate_all_draws_one_figure_per_results_file() {
        let dir = tempfile::tempdir().unwrap();
        let book = dir.path();
        assert!(crate::book::regenerate_all(book).unwrap().is_empty());
        let file = synthetic();
        crate::run::results::record(book, &file.device, &file.records[..3]).unwrap();
        let paths = crate::book::regenerate_all(book).unwrap();
        assert_eq!(paths, vec![book.join("src/figures/ladder-nvidia-h100-80gb-hbm3.svg")]);
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        assert!(svg.contains("02 smem_tiling") && !svg.contains("04 tma_mma"));
        if let Ok(out) = std::env::var("GEMM_LADDER_FIGURE_OUT") {
            render_ladder(&file, Path::new(&out)).unwrap();
        }
    }

    #[test]
    fn a_file_with_sweep_records_gets_a_sweep_figure_and_its_ladder_leaves_them_out() {
        let dir = tempfile::tempdir().unwrap();
        let book = dir.path();
        let file = crate::book::figure_sweep::tests::synthetic();
        crate::run::results::record(book, &file.device, &file.records).unwrap();
        let paths = crate::book::regenerate_all(book).unwrap();
        assert_eq!(
            paths,
            [
                book.join("src/figures/ladder-nvidia-h200.svg"),
                book.join("src/figures/sweep-nvidia-h200.svg")
            ]
        );
        // The ladder holds the one plain run (step 10 at 4096³), not the sixteen sweep records.
        let data = LadderData::of(&crate::run::results::load_all(book).unwrap()[0]);
        assert_eq!(data.steps, [(10, "10 persistent".to_string())]);
        assert_eq!(data.series.keys().copied().collect::<Vec<_>>(), [4096]);
        assert_eq!(data.series[&4096].len(), 1);
    }
}
