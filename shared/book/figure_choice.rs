//! The random sweep of a step that chooses its plan (`step10 --sweep random`): per shape, how far the
//! chosen plan was from the fastest plan timed beside it, and its ratio to cuBLAS, drawn with plotters
//! into `book/src/figures/choice-<gpu>.svg`, and summarised in words (`{{#ladder-choice stepNN}}`).
//!
//! Like the other figures it is a pure function of the results file. Only records of a random sweep
//! that carry a [`crate::run::results::ChoiceRecord`] are drawn; a file without any draws nothing.

use crate::error::Result;
use crate::run::results::{significant, ResultsFile, StepRecord};
use crate::run::sweep;
use crate::svg::{
    draw_error, figures_dir, write_if_changed, CUBLAS_BF16, FONT, GRID, GRID_BOLD, INK, SERIES, TRANSPARENT,
};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

/// The bars the choice is held to: within 2 % of the fastest plan at most shapes, never 5 % behind.
pub const NEAR: f64 = 1.02;
pub const NEVER_BEYOND: f64 = 1.05;

/// `book/src/figures/choice-<slug>.svg`.
pub fn choice_svg_path(book_dir: &Path, slug: &str) -> PathBuf {
    figures_dir(book_dir).join(format!("choice-{slug}.svg"))
}

/// Whether a record is a random sweep's, with the choice measured.
pub fn is_drawn(r: &StepRecord) -> bool {
    r.random_sweep.is_some() && !r.is_sm80_twin() && r.choice.is_some() && r.ratio_bf16 > 0.0
}

/// A file's random-sweep records of `step`, smallest work first.
fn records_of(file: &ResultsFile, step: Option<u8>) -> Vec<&StepRecord> {
    let mut rs: Vec<&StepRecord> = file
        .records
        .iter()
        .filter(|r| is_drawn(r) && step.is_none_or(|s| r.step == s))
        .collect();
    rs.sort_by(|a, b| a.shape.flops().total_cmp(&b.shape.flops()).then(a.shape.cmp(&b.shape)));
    rs
}

fn behind(r: &StepRecord) -> f64 {
    r.choice.as_ref().map_or(1.0, |c| c.time_over_fastest)
}

/// `{{#ladder-choice stepNN}}`: per GPU with a random sweep of the step, in words: the seed and the
/// number of shapes, at how many the chosen plan was within 2 % of the fastest and how far behind it
/// was at worst (where, and which plan won there), and the geometric mean of its ratio to cuBLAS with
/// the lowest one. Without such records, one line that says how to make them.
pub fn choice_text(files: &[ResultsFile], step: u8) -> String {
    let mut parts = Vec::new();
    for file in files {
        let rs = records_of(file, Some(step));
        if rs.is_empty() {
            continue;
        }
        let n = rs.len();
        let near = rs.iter().filter(|r| behind(r) <= NEAR).count();
        let worst = rs
            .iter()
            .max_by(|a, b| behind(a).total_cmp(&behind(b)))
            .expect("not empty");
        let geomean = (rs.iter().map(|r| r.headline().ratio.ln()).sum::<f64>() / n as f64).exp();
        let lowest = rs
            .iter()
            .min_by(|a, b| a.headline().ratio.total_cmp(&b.headline().ratio))
            .expect("not empty");
        let seeds: Vec<String> = {
            let mut s: Vec<u64> = rs.iter().filter_map(|r| r.random_sweep).collect();
            s.dedup();
            s.iter().map(u64::to_string).collect()
        };
        let fastest = worst.choice.as_ref().map_or("", |c| c.fastest.as_str());
        parts.push(format!(
            "on the {}, {n} shapes drawn from seed {}: the chosen plan within {:.0} % of the fastest plan at {near} of {n} ({:.0} %), at worst {:.1} % behind (at {}, where `{fastest}` was fastest); its ratio to {} {} in geometric mean, lowest {} (at {})",
            file.device.name,
            seeds.join(", "),
            (NEAR - 1.0) * 100.0,
            100.0 * near as f64 / n as f64,
            (behind(worst) - 1.0) * 100.0,
            sweep::label(worst.shape),
            worst.headline().baseline.label(),
            significant(geomean, 3),
            significant(lowest.headline().ratio, 3),
            sweep::label(lowest.shape),
        ));
    }
    if parts.is_empty() {
        return format!(
            "(no random sweep of step{step:02} is recorded yet: `cargo run --release --bin step{step:02} -- --sweep random` records one)"
        );
    }
    let mut text = parts.join("; ");
    text.push('.');
    text
}

/// Draws the random sweep of one GPU into `out` when its file has one (leaving an up-to-date SVG
/// untouched). Returns whether there was one to draw.
pub fn render_choice(file: &ResultsFile, out: &Path) -> Result<bool> {
    let rs = records_of(file, None);
    if rs.is_empty() {
        return Ok(false);
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1040, 620)).into_drawing_area();
        draw(&root, file, &rs).map_err(draw_error("the choice figure"))?;
        root.present().map_err(draw_error("the choice figure"))?;
    }
    if !svg.ends_with('\n') {
        svg.push('\n');
    }
    write_if_changed(out, &svg)?;
    Ok(true)
}

fn draw(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    file: &ResultsFile,
    rs: &[&StepRecord],
) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>> {
    root.fill(&WHITE)?;
    let (width, _) = root.dim_in_pixel();
    let centred = |size: u32| {
        TextStyle::from((FONT, size).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Top))
    };
    let seeds: Vec<String> = rs
        .iter()
        .filter_map(|r| r.random_sweep)
        .map(|s| s.to_string())
        .collect();
    root.draw(&Text::new(
        format!(
            "Random sweep on {}: the chosen plan against the fastest plan, and against cuBLAS",
            file.device.name
        ),
        (width as i32 / 2, 10),
        centred(20),
    ))?;
    root.draw(&Text::new(
        format!(
            "{} shapes drawn from seed {}, least work first · every plan timed in one loop, the order rotating from round to round",
            rs.len(),
            seeds.first().map_or("", String::as_str)
        ),
        (width as i32 / 2, 36),
        centred(14),
    ))?;
    let area = root.margin(58, 0, 0, 0);
    let (top, bottom) = area.split_vertically(250);
    let n = rs.len();
    let x_of = |i: usize| i as f64 + 0.5;

    // Top: the chosen plan's time over the fastest plan's, with the bars at 1.02 and 1.05.
    let worst = rs.iter().map(|r| behind(r)).fold(NEVER_BEYOND, f64::max);
    let hi = ((worst + 0.01) * 100.0).ceil() / 100.0;
    let mut chart = ChartBuilder::on(&top)
        .margin_left(8)
        .margin_right(16)
        .y_label_area_size(72)
        .x_label_area_size(4)
        .build_cartesian_2d(0f64..n as f64, 0.99f64..hi)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(6)
        .y_label_formatter(&|v: &f64| format!("{v:.2}"))
        .y_desc("chosen ÷ fastest (time)")
        .axis_desc_style((FONT, 15))
        .label_style((FONT, 13))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(INK)
        .draw()?;
    for (bar, text) in [(NEAR, "2 % behind"), (NEVER_BEYOND, "5 % behind")] {
        chart.draw_series(DashedLineSeries::new(
            [(0.0, bar), (n as f64, bar)],
            6,
            4,
            GRID_BOLD.stroke_width(1),
        ))?;
        let (px, py) = chart.backend_coord(&(n as f64, bar));
        top.draw(&Text::new(
            text.to_string(),
            (px - 4, py - 3),
            TextStyle::from((FONT, 12).into_font())
                .color(&INK)
                .pos(Pos::new(HPos::Right, VPos::Bottom)),
        ))?;
    }
    let colour = SERIES[0];
    chart.draw_series(rs.iter().enumerate().map(|(i, r)| {
        let x = x_of(i);
        let style = if behind(r) > NEAR {
            SERIES[1].filled()
        } else {
            colour.filled()
        };
        Rectangle::new([(x - 0.35, 1.0), (x + 0.35, behind(r).max(1.0005))], style)
    }))?;

    // Bottom: the step's ratio to cuBLAS per shape.
    let ratios: Vec<f64> = rs.iter().map(|r| r.headline().ratio).collect();
    let lo = ((ratios.iter().copied().fold(1.0, f64::min) - 0.05) * 10.0).floor() / 10.0;
    let hi = ((ratios.iter().copied().fold(1.0, f64::max) + 0.05) * 10.0).ceil() / 10.0;
    let mut chart = ChartBuilder::on(&bottom)
        .margin_left(8)
        .margin_right(16)
        .margin_top(8)
        .y_label_area_size(72)
        .x_label_area_size(110)
        .build_cartesian_2d(0f64..n as f64, lo..hi)?;
    let baseline = rs[0].headline().baseline.label();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(((hi - lo) * 20.0).round() as usize + 1)
        .y_label_formatter(&|v: &f64| format!("{v:.2}"))
        .y_desc(format!("× {baseline}"))
        .axis_desc_style((FONT, 15))
        .label_style((FONT, 13))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(INK)
        .draw()?;
    let style = CUBLAS_BF16.stroke_width(2);
    chart.draw_series(DashedLineSeries::new([(0.0, 1.0), (n as f64, 1.0)], 8, 5, style))?;
    chart.draw_series(
        ratios
            .iter()
            .enumerate()
            .map(|(i, &r)| Circle::new((x_of(i), r), 4, colour.filled())),
    )?;
    // Shape labels under the axis, turned upright.
    for (i, r) in rs.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(x_of(i), lo));
        bottom.draw(&Text::new(
            sweep::label(r.shape),
            (px - 6, py + 6),
            TextStyle::from((FONT, 11).into_font())
                .color(&INK)
                .transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::figure_sweep::tests::swept;
    use crate::check::problem::Shape;
    use crate::run::results::tests::device;
    use crate::run::results::ChoiceRecord;

    fn file() -> ResultsFile {
        let mut records = Vec::new();
        for (i, shape) in sweep::random_shapes(5, 12).into_iter().enumerate() {
            let mut r = swept(10, "persistent", shape, 0.95 + 0.01 * i as f64);
            r.random_sweep = Some(5);
            r.choice = Some(ChoiceRecord {
                fastest: if i == 3 {
                    "data-parallel".into()
                } else {
                    "chosen".into()
                },
                time_over_fastest: if i == 3 { 1.031 } else { 1.0 },
            });
            records.push(r);
        }
        // A fixed-sweep record is not drawn here.
        records.push(swept(10, "persistent", Shape::square(4096), 1.0));
        ResultsFile {
            device: device("NVIDIA H200"),
            records,
            superseded: Vec::new(),
        }
    }

    #[test]
    fn the_choice_is_summed_up_with_its_worst_case() {
        let file = file();
        let text = choice_text(std::slice::from_ref(&file), 10);
        assert!(text.contains("12 shapes drawn from seed 5"), "{text}");
        assert!(text.contains("at 11 of 12 (92 %)"), "{text}");
        assert!(
            text.contains("3.1 % behind") && text.contains("`data-parallel` was fastest"),
            "{text}"
        );
        assert!(choice_text(&[], 10).contains("--sweep random"));
        assert!(choice_text(std::slice::from_ref(&file), 9).contains("no random sweep of step09"));
    }

    #[test]
    fn the_choice_figure_is_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let file = file();
        let (a, b) = (dir.path().join("a.svg"), dir.path().join("b.svg"));
        assert!(render_choice(&file, &a).unwrap() && render_choice(&file, &b).unwrap());
        let svg = std::fs::read_to_string(&a).unwrap();
        assert_eq!(svg, std::fs::read_to_string(&b).unwrap());
        assert!(svg.contains("Random sweep on NVIDIA H200") && svg.contains("5 % behind"));
        let mut empty = file.clone();
        empty.records.retain(|r| r.random_sweep.is_none());
        assert!(!render_choice(&empty, &dir.path().join("c.svg")).unwrap());
    }
}
