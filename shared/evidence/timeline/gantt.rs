//! The Gantt chart of a timeline: one row per warpgroup of each SM shown, a rectangle per span.

use super::{Span, SpanKind, Summary};
use crate::error::Result;
use crate::run::results::significant;
use crate::svg::{draw_error, FONT, GRID_BOLD, INK};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::{BTreeMap, BTreeSet};

/// Spans of one row and kind merged where the gap between them is under `min_gap_ns` (a pixel or
/// so): the figure then holds a bounded number of rectangles however many K tiles there are. Spans of
/// other kinds in between (step 11's rows alternate kinds) do not stop a merge.
pub fn merge_for_drawing(spans: &[Span], min_gap_ns: u64) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut last: BTreeMap<(u32, u32, SpanKind), usize> = BTreeMap::new();
    for s in spans {
        let key = (s.sm, s.warpgroup, s.kind);
        if let Some(previous) = last.get(&key).map(|&i| &mut out[i]) {
            if s.start_ns <= previous.end_ns + min_gap_ns {
                previous.end_ns = previous.end_ns.max(s.end_ns);
                continue;
            }
        }
        last.insert(key, out.len());
        out.push(*s);
    }
    out
}

/// Rows of empty band under the SMs in the Gantt chart, where the legend goes: at least this many,
/// one per kind of span drawn where there are more (step 11).
const LEGEND_ROWS: usize = 4;

/// The kinds of span in the order they are drawn (later ones on top).
const DRAWN: [SpanKind; 9] = [
    SpanKind::Mma,
    SpanKind::MmaInFlight,
    SpanKind::Convert,
    SpanKind::MmaWait,
    SpanKind::StageWait,
    SpanKind::Barrier,
    SpanKind::Epilogue,
    SpanKind::TmaIssue,
    SpanKind::TileStart,
];

fn legend_rows(spans: &[Span], summary: &Summary) -> usize {
    let kinds: BTreeSet<SpanKind> = spans
        .iter()
        .filter(|s| summary.sms_shown.contains(&s.sm))
        .map(|s| s.kind)
        .collect();
    kinds.len().max(LEGEND_ROWS)
}

/// The Gantt chart of the shown SMs: SVG text, a pure function of its inputs.
pub fn gantt_svg(spans: &[Span], summary: &Summary, origin_ns: u64, end_ns: u64) -> Result<String> {
    const WIDTH: u32 = 1300;
    const ROW: u32 = 22;
    let rows = summary.sms_shown.len() * 3;
    let legend = legend_rows(spans, summary);
    let height = 150 + ROW * (rows as u32 + legend as u32) + 70;
    let duration_us = ((end_ns.saturating_sub(origin_ns)) as f64 / 1e3).max(1e-3);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        draw_gantt(&root, spans, summary, origin_ns, duration_us, legend).map_err(draw_error("the timeline figure"))?;
        root.present().map_err(draw_error("the timeline figure"))?;
    }
    if !svg.ends_with('\n') {
        svg.push('\n');
    }
    Ok(svg)
}

fn draw_gantt(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    spans: &[Span],
    summary: &Summary,
    origin_ns: u64,
    duration_us: f64,
    legend_rows: usize,
) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>> {
    root.fill(&WHITE)?;
    let (width, height) = root.dim_in_pixel();
    let centred = |size| {
        TextStyle::from((FONT, size).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Top))
    };
    root.draw(&Text::new(
        format!(
            "step{:02} timeline on {}, {}: {} of the GPU's SMs",
            summary.step,
            summary.gpu,
            summary.shape,
            summary.sms_shown.len()
        ),
        (width as i32 / 2, 12),
        centred(22),
    ))?;
    root.draw(&Text::new(
        format!(
            "instrumented build (-DTIMELINE=1): {} ms against the plain build's {} ms ({:+.1}%) · {} stamps{} · {}",
            significant(summary.instrumented_ms, 3),
            significant(summary.plain_ms, 3),
            100.0 * summary.overhead,
            summary.stamps,
            if summary.dropped > 0 {
                format!(", {} warpgroups ran out of room", summary.dropped)
            } else {
                String::new()
            },
            summary.date.get(..10).unwrap_or(&summary.date),
        ),
        (width as i32 / 2, 42),
        centred(14),
    ))?;

    let rows = (summary.sms_shown.len() * 3).max(1);
    let row_of = |sm: u32, wg: u32| {
        summary
            .sms_shown
            .iter()
            .position(|&s| s == sm)
            .map(|i| i * 3 + wg.min(2) as usize)
    };
    let mut chart = ChartBuilder::on(root)
        .margin_top(70)
        .margin_left(10)
        .margin_right(24)
        .margin_bottom(70)
        .x_label_area_size(40)
        .y_label_area_size(150)
        // An empty band of `legend_rows` rows under the SMs holds the legend.
        .build_cartesian_2d(0f64..duration_us, -(legend_rows as f64)..rows as f64)?;
    let names = ["producer", "consumer 1", "consumer 2"];
    // The y axis, its ticks and the row names are drawn below, over the rows only: the mesh's would
    // run on into the legend band under them.
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_labels(12)
        .x_label_formatter(&|x| significant(*x, 3))
        .x_desc("µs since the grid's first stamp")
        .axis_desc_style((FONT, 15))
        .label_style((FONT, 13))
        .bold_line_style(RGBColor(235, 235, 235))
        .light_line_style(crate::svg::TRANSPARENT)
        .axis_style(INK)
        .draw()?;
    let (axis_x, axis_top) = chart.backend_coord(&(0.0, rows as f64));
    let (_, axis_bottom) = chart.backend_coord(&(0.0, 0.0));
    root.draw(&PathElement::new(vec![(axis_x, axis_top), (axis_x, axis_bottom)], INK))?;
    for i in 0..rows {
        let sm = summary.sms_shown.get(i / 3).copied().unwrap_or(0);
        let (px, py) = chart.backend_coord(&(0.0, i as f64 + 0.5));
        root.draw(&PathElement::new(vec![(px - 5, py), (px, py)], INK))?;
        root.draw(&Text::new(
            format!("SM {sm} {}", names[i % 3]),
            (px - 8, py),
            TextStyle::from((FONT, 13).into_font())
                .color(&INK)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    // Rows: light background for waiting, separators between SMs.
    for i in 0..rows {
        let shade = if (i / 3) % 2 == 0 {
            RGBColor(246, 246, 246)
        } else {
            RGBColor(238, 238, 238)
        };
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, i as f64 + 0.08), (duration_us, i as f64 + 0.92)],
            shade.filled(),
        )))?;
    }
    let px_ns = (duration_us * 1e3 / width as f64).max(1.0) as u64;
    let x = |ns: u64| (ns.saturating_sub(origin_ns)) as f64 / 1e3;
    let min_width_us = duration_us / width as f64;
    let drawn = merge_for_drawing(spans, px_ns);
    for kind in DRAWN {
        let colour = kind.colour();
        let rects: Vec<Rectangle<(f64, f64)>> = drawn
            .iter()
            .filter(|s| s.kind == kind)
            .filter_map(|s| {
                let row = row_of(s.sm, s.warpgroup)? as f64;
                let (lo, hi) = match kind {
                    SpanKind::TileStart => (row + 0.02, row + 0.98),
                    SpanKind::TmaIssue => (row + 0.2, row + 0.8),
                    // Step 11: the MMAs in flight in a thin band, what the threads do meanwhile above.
                    SpanKind::MmaInFlight => (row + 0.12, row + 0.3),
                    SpanKind::Convert | SpanKind::MmaWait | SpanKind::StageWait | SpanKind::Barrier => {
                        (row + 0.36, row + 0.88)
                    }
                    SpanKind::Mma | SpanKind::Epilogue => (row + 0.15, row + 0.85),
                };
                let x0 = x(s.start_ns);
                let x1 = x(s.end_ns).max(x0 + min_width_us);
                Some(Rectangle::new([(x0, lo), (x1, hi)], colour.filled()))
            })
            .collect();
        if rects.is_empty() {
            continue;
        }
        chart
            .draw_series(rects)?
            .label(kind.label())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .margin(6)
        .label_font((FONT, 13))
        .background_style(WHITE.mix(0.95))
        .border_style(GRID_BOLD)
        .draw()?;
    let _ = height;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::super::*;
    use super::*;

    #[test]
    fn merging_joins_spans_closer_than_a_pixel() {
        let s = |a, b| Span {
            sm: 0,
            block: 0,
            warpgroup: 1,
            kind: SpanKind::Mma,
            start_ns: a,
            end_ns: b,
        };
        let merged = merge_for_drawing(&[s(0, 10), s(12, 20), s(40, 50)], 5);
        assert_eq!(merged, [s(0, 20), s(40, 50)]);
        // A span of another kind in between (step 11's rows) does not stop the merge.
        let other = Span {
            kind: SpanKind::Barrier,
            ..s(10, 12)
        };
        assert_eq!(merge_for_drawing(&[s(0, 10), other, s(12, 20)], 5), [s(0, 20), other]);
    }

    #[test]
    fn the_gantt_chart_and_the_trace_are_deterministic_and_labelled() {
        let stamps = parse_stamps(&synthetic_buffer());
        let all = spans(&stamps);
        let sum = summary(shown_sms(&stamps, SMS_SHOWN));
        let origin = stamps.iter().map(|s| s.time_ns).min().unwrap();
        let end = stamps.iter().map(|s| s.time_ns).max().unwrap();
        let a = gantt_svg(&all, &sum, origin, end).unwrap();
        assert_eq!(a, gantt_svg(&all, &sum, origin, end).unwrap());
        for text in [
            "step08 timeline on NVIDIA H200",
            "SM 5 consumer 2",
            "SM 0 producer",
            "epilogue",
            "TMA copies issued",
            "+5.0%",
        ] {
            assert!(a.contains(text), "{text} missing");
        }
        if let Ok(out) = std::env::var("GEMM_LADDER_TIMELINE_OUT") {
            std::fs::write(out, &a).unwrap();
        }
        let trace = trace_json(&all, &sum, origin);
        let events = trace["traceEvents"].as_array().unwrap();
        assert!(events
            .iter()
            .any(|e| e["ph"] == "X" && e["name"] == "mma" && e["dur"] == 0.09));
        assert!(events.iter().any(|e| e["ph"] == "M" && e["args"]["name"] == "SM 5"));
        let back: Summary = serde_json::from_value(trace["otherData"].clone()).unwrap();
        assert_eq!(back, sum);
        let dir = tempfile::tempdir().unwrap();
        let path = trace_path(dir.path(), 8, "nvidia-h200");
        assert!(load_summary(&path).is_none());
        results::write_file_atomically(&path, &trace.to_string()).unwrap();
        assert_eq!(load_summary(&path), Some(sum));
        // The results loader does not see the trace (it is one folder down).
        assert!(results::load_all(dir.path()).unwrap().is_empty());
    }
}
