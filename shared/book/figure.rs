//! Figures for the book, drawn with plotters into SVG from the results files.
//!
//! Everything here is a pure function of its input: the same JSON gives a byte-identical SVG, so the
//! committed figures can be checked against the committed results in the tests. Text is laid out with
//! plotters' built-in size estimate (no font files are read), and the browser draws the real glyphs.

use super::svg::{
    draw_error, figures_dir, write_if_changed, CUBLAS_BF16, FONT, GRID, GRID_BOLD, INK, SERIES, TRANSPARENT,
};
use crate::error::Result;
use crate::run::registry::Baseline;
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
/// cuBLAS writing fp32 C on the dequantized operands: an MXFP8 run's like-for-like baseline.
const CUBLAS_F32_C: RGBColor = RGBColor(200, 110, 0);
/// The quoted B200 series (hollow markers): colours no measured series uses.
const QUOTED: [RGBColor; 3] = [RGBColor(0, 130, 130), RGBColor(170, 50, 130), RGBColor(150, 120, 0)];

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

/// One recorded run as the figure draws it: the step's TFLOPS and, from the same alternating loop,
/// the cuBLAS it is judged against (runs at different clocks are never compared through one shared
/// cuBLAS value): bf16 C for the bf16 steps, fp32 C for an MXFP8 step that recorded it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    step: u8,
    tflops: f64,
    /// The record's headline cuBLAS ([`StepRecord::headline`]) and the step's ratio to it.
    cublas: f64,
    baseline: Baseline,
    cublas_sgemm: Option<f64>,
    ratio: f64,
}

/// What the ladder figure shows, pulled out of a results file.
struct LadderData {
    /// (step, `01 naive`), in step order: the x axis.
    steps: Vec<(u8, String)>,
    /// Square size → every record of that size, in step order.
    series: BTreeMap<usize, Vec<Point>>,
    /// The latest date of a plotted record (`2025-11-21`).
    last_date: String,
}

impl LadderData {
    fn of(file: &ResultsFile) -> LadderData {
        let square: Vec<&StepRecord> = file
            .records
            .iter()
            // The GPU's own kernels' ladder: the sm80 twins have their chapters' tables.
            .filter(|r| !r.sweep && !r.is_sm80_twin())
            .filter(|r| r.shape.m == r.shape.n && r.shape.n == r.shape.k && r.time.tflops > 0.0)
            .collect();
        let mut steps: BTreeMap<u8, String> = BTreeMap::new();
        let mut series: BTreeMap<usize, Vec<Point>> = BTreeMap::new();
        for r in &square {
            steps.entry(r.step).or_insert_with(|| r.label());
            let headline = r.headline();
            series.entry(r.shape.m).or_default().push(Point {
                step: r.step,
                tflops: r.time.tflops,
                cublas: headline.cublas.tflops,
                baseline: headline.baseline,
                cublas_sgemm: r.cublas_sgemm.as_ref().map(|t| t.tflops).filter(|t| *t > 0.0),
                ratio: headline.ratio,
            });
        }
        for points in series.values_mut() {
            points.sort_by_key(|p| p.step);
        }
        let last_date = square
            .iter()
            .map(|r| r.date.get(..10).unwrap_or(&r.date))
            .max()
            .unwrap_or("")
            .to_string();
        LadderData {
            steps: steps.into_iter().collect(),
            series,
            last_date,
        }
    }

    /// The y range of the TFLOPS panel, padded, on 1-2-5 boundaries.
    fn y_range(&self) -> (f64, f64) {
        let values = self
            .series
            .values()
            .flatten()
            .flat_map(|p| [Some(p.tflops), Some(p.cublas), p.cublas_sgemm])
            .flatten()
            .filter(|t| *t > 0.0)
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

    /// The top of the ratio panel: at least a little above 1 (the line where a step is as fast as
    /// cuBLAS), and above the largest ratio.
    fn ratio_top(&self) -> f64 {
        let most = self.series.values().flatten().map(|p| p.ratio).fold(1.0f64, f64::max);
        (most * 1.15 / 0.2).ceil() * 0.2
    }

    fn x_of(&self, step: u8) -> Option<usize> {
        self.steps.iter().position(|s| s.0 == step)
    }

    /// Where size number `j` of the figure's sizes sits within a step's slot (0 is the slot's left
    /// edge, 1 its right): the measured sizes share the left two thirds, the quoted points the right.
    fn size_offset(&self, j: usize) -> f64 {
        let count = self.series.len().max(1);
        if count == 1 {
            0.4
        } else {
            0.2 + 0.4 * j as f64 / (count - 1) as f64
        }
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

/// The figure's width: the book's text column (`--content-max-width` in `book/theme/ladder.css`), so
/// that a browser draws it at its own size and its labels at the size they were set in.
const LADDER_WIDTH: u32 = 1040;
/// Where the quoted B200 points sit within a step's slot (see [`LadderData::size_offset`]).
const QUOTED_OFFSET: f64 = 0.82;

fn ladder_svg(file: &ResultsFile) -> Result<String> {
    let data = LadderData::of(file);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (LADDER_WIDTH, 800)).into_drawing_area();
        draw_ladder(&root, file, &data).map_err(draw_error("the ladder figure"))?;
        root.present().map_err(draw_error("the ladder figure"))?;
    }
    if !svg.ends_with('\n') {
        svg.push('\n');
    }
    Ok(svg)
}

/// The marker shapes of the figure's series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Circle,
    Triangle,
    Square,
    Diamond,
}

/// The shape of measured size number `j`.
fn size_shape(j: usize) -> Shape {
    [Shape::Circle, Shape::Triangle, Shape::Square][j % 3]
}

/// Draws `points` as markers of `shape` (hollow or filled) and, with a `label`, gives them a legend
/// entry. One function for both panels, whichever their y scale.
fn draw_markers<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    points: &[(f64, f64)],
    shape: Shape,
    style: ShapeStyle,
    label: Option<String>,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let diamond = |(x, y): (i32, i32)| vec![(x, y - 7), (x + 7, y), (x, y + 7), (x - 7, y)];
    let anno = match shape {
        Shape::Circle => chart.draw_series(points.iter().map(|&p| Circle::new(p, 5, style)))?,
        Shape::Triangle => chart.draw_series(points.iter().map(|&p| TriangleMarker::new(p, 7, style)))?,
        Shape::Square => chart.draw_series(
            points
                .iter()
                .map(|&p| EmptyElement::at(p) + Rectangle::new([(-5, -5), (5, 5)], style)),
        )?,
        Shape::Diamond => chart.draw_series(
            points
                .iter()
                .map(move |&p| EmptyElement::at(p) + Polygon::new(diamond((0, 0)), style)),
        )?,
    };
    if let Some(label) = label {
        let anno = anno.label(label);
        match shape {
            Shape::Circle => anno.legend(move |(x, y)| Circle::new((x + 9, y), 5, style)),
            Shape::Triangle => anno.legend(move |(x, y)| TriangleMarker::new((x + 9, y), 7, style)),
            Shape::Square => anno.legend(move |(x, y)| Rectangle::new([(x + 4, y - 5), (x + 14, y + 5)], style)),
            Shape::Diamond => anno.legend(move |(x, y)| Polygon::new(diamond((x + 9, y)), style)),
        };
    }
    Ok(())
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
        (width as i32 / 2, 12),
        TextStyle::from((FONT, 22).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    let subtitle = format!(
        "C = A·Bᵀ, bf16 in (MXFP8 in for step 11), fp32 accumulate · median of timed runs · each step beside cuBLAS from its own loop · {}",
        if data.last_date.is_empty() {
            "no square runs yet"
        } else {
            &data.last_date
        },
    );
    root.draw(&Text::new(
        subtitle,
        (width as i32 / 2, 40),
        TextStyle::from((FONT, 14).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;

    let n = data.steps.len().max(1);
    let (upper, lower) = root.split_vertically(560);
    let (y_lo, y_hi) = data.y_range();
    let mut chart = ChartBuilder::on(&upper)
        .margin_top(64)
        .margin_left(8)
        .margin_right(16)
        .margin_bottom(4)
        .x_label_area_size(0)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..n as f64, (y_lo..y_hi).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(40)
        .y_label_formatter(&|_| String::new())
        .y_desc("TFLOPS (log scale)")
        .axis_desc_style((FONT, 16))
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
        upper.draw(&Text::new(
            log_tick_label(tick),
            (px - 8, py),
            TextStyle::from((FONT, 15).into_font())
                .color(&INK)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
        tick = one_two_five(tick * 1.5, true);
    }
    // Slot boundaries, so that a step's markers and ticks read as one group.
    for i in 1..n {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(i as f64, y_lo), (i as f64, y_hi)],
            GRID,
        )))?;
    }

    let is_mx = |step: u8| crate::run::steps::get(step).is_ok_and(|s| s.format == Format::Mxfp8);
    let x_at = |step: u8, j: usize| data.x_of(step).map(|i| i as f64 + data.size_offset(j));
    // A tick's half-width, in slots.
    let half = 0.09;

    // cuBLAS, timed in each step's own loop: a short bar at each run, never one line for runs that
    // ran at different clocks.
    let bf16_style = CUBLAS_BF16.stroke_width(3);
    let f32_style = CUBLAS_F32_C.stroke_width(3);
    let sgemm_style = CUBLAS_SGEMM.stroke_width(3);
    let mut legend_bf16 = false;
    let mut legend_f32 = false;
    let mut legend_sgemm = false;
    for (j, points) in data.series.values().enumerate() {
        for p in points {
            let Some(x) = x_at(p.step, j) else { continue };
            let bar = |value: f64| vec![(x - half, value), (x + half, value)];
            if p.cublas > 0.0 {
                let (style, label, told) = match p.baseline {
                    Baseline::CublasBf16C => (
                        bf16_style,
                        "cuBLAS (bf16 C), timed in the same loop as the run beside it",
                        &mut legend_bf16,
                    ),
                    Baseline::CublasF32C => (
                        f32_style,
                        "cuBLAS (fp32 C) on the dequantized operands, likewise: an MXFP8 run's baseline",
                        &mut legend_f32,
                    ),
                };
                let drawn = chart.draw_series(std::iter::once(PathElement::new(bar(p.cublas), style)))?;
                if !*told {
                    *told = true;
                    drawn
                        .label(label)
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
                }
            }
            if let Some(sgemm) = p.cublas_sgemm {
                let drawn = chart.draw_series(std::iter::once(PathElement::new(bar(sgemm), sgemm_style)))?;
                if !legend_sgemm {
                    legend_sgemm = true;
                    drawn
                        .label("cuBLAS SGEMM (fp32), likewise")
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], sgemm_style));
                }
            }
        }
    }

    // The source texts' B200 numbers, quoted: hollow markers of their own shape and colour on a
    // dashed line, at the right of each slot, named "quoted" in the legend, so that they cannot be
    // read as this crate's measurements.
    for (j, (_, label, xy)) in data.quoted().into_iter().enumerate() {
        let colour = QUOTED[j % QUOTED.len()];
        let style = colour.stroke_width(2);
        let points: Vec<(f64, f64)> = xy.iter().map(|&(x, t)| (x as f64 + QUOTED_OFFSET, t)).collect();
        chart.draw_series(DashedLineSeries::new(
            points.clone(),
            5,
            4,
            colour.mix(0.7).stroke_width(1),
        ))?;
        let shape = [Shape::Circle, Shape::Square, Shape::Diamond][j % 3];
        draw_markers(&mut chart, &points, shape, style, Some(label))?;
    }

    // One series per square size: markers joined by a thin line (not across to an MXFP8 step, which
    // solves another problem: e4m3 in, fp32 out, hollow markers). Their values are in the table
    // under the figure; the ratios, which compare like with like, are written in the lower panel.
    for (j, (size, points)) in data.series.iter().enumerate() {
        let colour = SERIES[j % SERIES.len()];
        let bf16: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| !is_mx(p.step))
            .filter_map(|p| x_at(p.step, j).map(|x| (x, p.tflops)))
            .collect();
        chart.draw_series(LineSeries::new(bf16, colour.mix(0.45).stroke_width(1)))?;
        let at = |mx: bool| -> Vec<(f64, f64)> {
            points
                .iter()
                .filter(|p| is_mx(p.step) == mx)
                .filter_map(|p| x_at(p.step, j).map(|x| (x, p.tflops)))
                .collect()
        };
        let label = format!("this crate, {} (hollow: MXFP8)", cube(*size));
        draw_markers(&mut chart, &at(false), size_shape(j), colour.filled(), Some(label))?;
        draw_markers(&mut chart, &at(true), size_shape(j), colour.stroke_width(2), None)?;
    }

    if data.series.is_empty() {
        let (px, py) = chart.backend_coord(&(n as f64 / 2.0, (y_lo * y_hi).sqrt()));
        upper.draw(&Text::new(
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
            .margin(10)
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.92))
            .border_style(GRID_BOLD)
            .draw()?;
    }

    draw_ratio_panel(&lower, data)
}

/// The lower panel: each run's TFLOPS over its headline cuBLAS's from the same loop (bf16 C; an MXFP8
/// run's: fp32 C), the number the chapters judge a step by, written above its marker for the ladder's
/// own size (the first drawn).
fn draw_ratio_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    data: &LadderData,
) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let n = data.steps.len().max(1);
    let top = data.ratio_top();
    // `backend_coord` answers in the whole figure's pixels; text drawn on this area is placed in its own.
    let (base_x, base_y) = area.get_base_pixel();
    let local = |(x, y): (i32, i32)| (x - base_x, y - base_y);
    let mut chart = ChartBuilder::on(area)
        .margin_top(6)
        .margin_left(8)
        .margin_right(16)
        .margin_bottom(8)
        .x_label_area_size(52)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..n as f64, 0f64..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(((top / 0.2).round() as usize + 1).min(12))
        .y_label_formatter(&|v| format!("{v:.1}"))
        .y_desc("× cuBLAS (same C)")
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 14))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(INK)
        .draw()?;
    for i in 1..n {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(i as f64, 0.0), (i as f64, top)],
            GRID,
        )))?;
    }
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, 1.0), (n as f64, 1.0)],
        CUBLAS_BF16.mix(0.6).stroke_width(1),
    )))?;
    let is_mx = |step: u8| crate::run::steps::get(step).is_ok_and(|s| s.format == Format::Mxfp8);
    for (j, points) in data.series.values().enumerate() {
        let colour = SERIES[j % SERIES.len()];
        let xy: Vec<(f64, f64, bool)> = points
            .iter()
            .filter_map(|p| {
                data.x_of(p.step)
                    .map(|i| (i as f64 + data.size_offset(j), p.ratio, is_mx(p.step)))
            })
            .collect();
        for (mx, style) in [(false, colour.filled()), (true, colour.stroke_width(2))] {
            let at: Vec<(f64, f64)> = xy.iter().filter(|p| p.2 == mx).map(|p| (p.0, p.1)).collect();
            draw_markers(&mut chart, &at, size_shape(j), style, None)?;
        }
        if j == 0 {
            for &(x, r, _) in &xy {
                let (px, py) = local(chart.backend_coord(&(x, r)));
                area.draw(&Text::new(
                    format!("{r:.2}"),
                    (px, py - 9),
                    TextStyle::from((FONT, 13).into_font())
                        .color(&colour)
                        .pos(Pos::new(HPos::Center, VPos::Bottom)),
                ))?;
            }
        }
    }
    if let Some((&size, _)) = data.series.iter().next() {
        let (px, py) = local(chart.backend_coord(&(0.0, top)));
        area.draw(&Text::new(
            format!(
                "ratio to cuBLAS from the same loop, writing the same C: {}; {} written",
                if data
                    .series
                    .values()
                    .flatten()
                    .any(|p| p.baseline == Baseline::CublasF32C)
                {
                    "bf16 C; MXFP8 (hollow): fp32 C, on the dequantized operands"
                } else {
                    "bf16 C"
                },
                cube(size)
            ),
            (px + 8, py + 6),
            TextStyle::from((FONT, 13).into_font())
                .color(&INK)
                .pos(Pos::new(HPos::Left, VPos::Top)),
        ))?;
    }

    // Step labels under the axis: the number, and the name staggered over two rows.
    for (i, (step, label)) in data.steps.iter().enumerate() {
        let (px, py) = local(chart.backend_coord(&(i as f64 + 0.5, 0.0)));
        let row = if i % 2 == 1 { 18 } else { 0 };
        area.draw(&PathElement::new(vec![(px, py), (px, py + 4 + row)], INK))?;
        let name = label.strip_prefix(&format!("{step:02} ")).unwrap_or(label);
        area.draw(&Text::new(
            format!("{step:02} {name}"),
            (px, py + 6 + row),
            TextStyle::from((FONT, 14).into_font())
                .color(&INK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
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
            superseded: Vec::new(),
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
        assert!(svg.contains("cuBLAS (bf16 C)") && svg.contains("cuBLAS SGEMM"));
        // No MXFP8 record names fp32 C here: no fp32-C legend.
        assert!(!svg.contains("cuBLAS (fp32 C)"));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }

    /// Runs at different clocks are never drawn against one cuBLAS value: each point keeps the cuBLAS
    /// of its own loop, and the figure draws one tick per run.
    #[test]
    fn each_run_keeps_the_cublas_of_its_own_loop() {
        let mut file = synthetic();
        for (i, r) in file.records.iter_mut().enumerate() {
            r.cublas_bf16.tflops = 600.0 + i as f64;
        }
        let data = LadderData::of(&file);
        let ticks: Vec<f64> = data.series[&4096].iter().map(|p| p.cublas).collect();
        assert_eq!(ticks.len(), 11);
        assert!(ticks.windows(2).all(|w| w[0] < w[1]), "{ticks:?}");
        let svg = ladder_svg(&file).unwrap();
        assert!(svg.contains("timed in the same loop"));
        assert!(svg.contains("× cuBLAS (same C)"));
    }

    /// An MXFP8 record that timed cuBLAS with fp32 C is drawn against it, bar and ratio, and the legend
    /// and the ratio panel say so; the other steps keep cuBLAS with bf16 C.
    #[test]
    fn an_mxfp8_run_is_drawn_against_its_own_baseline() {
        let mut file = synthetic();
        let r = file
            .records
            .iter_mut()
            .find(|r| r.step == 11 && r.shape.m == 4096)
            .unwrap();
        let mut f32_c = r.cublas_bf16.clone();
        f32_c.tflops *= 0.95;
        r.baseline = crate::run::registry::Baseline::CublasF32C;
        r.mx = Some(crate::run::results::MxBaselines {
            quantizer: crate::run::results::MxBaselines::QUANTIZER.into(),
            ratio_cublas_f32_c: Some(r.time.tflops / f32_c.tflops),
            cublas_f32_c: Some(f32_c.clone()),
            dequantize_then_cublas: f32_c.clone(),
            ratio_dequantize_then_cublas: 1.0,
            dequantize_then_cublas_output: "fp32".into(),
            cublaslt_fp8_tensorwise: None,
            ratio_cublaslt_fp8_tensorwise: None,
            cublaslt_fp8_output: "none".into(),
            cublaslt_fp8_unavailable: None,
        });
        let want = r.time.tflops / f32_c.tflops;
        let data = LadderData::of(&file);
        let p = data.series[&4096].iter().find(|p| p.step == 11).unwrap();
        assert_eq!(
            (p.baseline, p.cublas, p.ratio),
            (Baseline::CublasF32C, f32_c.tflops, want)
        );
        let others = data.series[&4096].iter().filter(|p| p.step != 11);
        assert!(others.into_iter().all(|p| p.baseline == Baseline::CublasBf16C));
        let svg = ladder_svg(&file).unwrap();
        assert!(
            svg.contains("cuBLAS (fp32 C) on the dequantized operands") && svg.contains("cuBLAS (bf16 C)"),
            "{svg}"
        );
        assert!(svg.contains("MXFP8 (hollow): fp32 C"));
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
