//! In-kernel timelines of the warp-specialised Hopper steps: `stepNN --timeline` (steps 08, 09, 10,
//! 11).
//!
//! The kernel is compiled a second time with `-DTIMELINE=1` (`shared/cuda/timeline.cuh`): each
//! warpgroup's first thread then stamps `%globaltimer` at its events (producer: a K tile's copies
//! issued; consumers: stage full seen, MMAs issued, MMAs done, epilogue start and end; steps 10 and
//! 11: tile start; step 11: the next K tile's conversion started and ended, the consumers' barrier
//! passed) into a device buffer. The program checks that the instrumented kernel computes exactly what
//! the plain one does, times the two against each other in one alternating loop (the overhead), runs
//! the instrumented one once more, and draws what a few SMs did:
//! - `book/src/figures/timeline-stepNN-<gpu>.svg`: a Gantt chart, one row per warpgroup of each SM;
//! - `book/src/results/timelines/timeline-stepNN-<gpu>.json`: the same SMs as a Chrome/Perfetto trace
//!   (open it at ui.perfetto.dev or chrome://tracing), with the run's summary (overhead included) in
//!   its `otherData`, which the book's `{{#ladder-timeline stepNN}}` reads.
//!
//! Every time the book shows as a step's speed comes from the plain build: this one only explains.

use crate::book::svg::{draw_error, write_if_changed, FONT, GRID_BOLD, INK};
use crate::check::problem::Shape;
use crate::device::gpu::Gpu;
use crate::device::nvrtc::{self, Output};
use crate::error::{Error, Result};
use crate::run::registry::{Format, KernelFile, Step, Targets};
use crate::run::results::{self, significant};
use crate::run::session::Session;
use crate::run::timing::{self, Contender};
use cudarc::driver::sys::CUfunction_attribute_enum as FuncAttr;
use cudarc::driver::{CudaFunction, CudaModule, DevicePtr};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes of one record (`struct TimelineRecord` in timeline.cuh).
pub const RECORD_BYTES: usize = 32;
/// SMs drawn and written to the trace.
pub const SMS_SHOWN: usize = 4;
/// Warpgroups of a block (the producer, two consumers): what a Hopper warp-specialised step launches.
const WARPGROUP_THREADS: u32 = 128;

/// The steps that can be built with stamps.
pub fn supports(step: &Step) -> bool {
    step.kernels
        .iter()
        .any(|k| k.targets == Targets::Hopper && k.source.contains("TIMELINE_STAMP("))
}

/// The events of timeline.cuh, by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Event {
    TileStart,
    TmaIssued,
    StageFull,
    MmaIssued,
    MmaDone,
    EpilogueStart,
    EpilogueEnd,
    ConvertStart,
    ConvertEnd,
    Barrier,
}

impl Event {
    pub fn from_id(id: u32) -> Option<Event> {
        Some(match id {
            0 => Event::TileStart,
            1 => Event::TmaIssued,
            2 => Event::StageFull,
            3 => Event::MmaIssued,
            4 => Event::MmaDone,
            5 => Event::EpilogueStart,
            6 => Event::EpilogueEnd,
            7 => Event::ConvertStart,
            8 => Event::ConvertEnd,
            9 => Event::Barrier,
            _ => return None,
        })
    }
}

/// One stamp, as read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub time_ns: u64,
    pub sm: u32,
    pub block: u32,
    pub warpgroup: u32,
    pub event: Event,
    pub sequence: u32,
}

/// The stamps in a buffer read back from the GPU; unwritten records (time 0) and unknown events are
/// skipped.
pub fn parse_stamps(bytes: &[u8]) -> Vec<Stamp> {
    let word = |r: &[u8], at: usize| u32::from_le_bytes(r[at..at + 4].try_into().expect("4 bytes"));
    bytes
        .chunks_exact(RECORD_BYTES)
        .filter_map(|r| {
            let time_ns = u64::from_le_bytes(r[0..8].try_into().expect("8 bytes"));
            (time_ns != 0).then_some(())?;
            Some(Stamp {
                time_ns,
                sm: word(r, 8),
                block: word(r, 12),
                warpgroup: word(r, 16),
                event: Event::from_id(word(r, 20))?,
                sequence: word(r, 24),
            })
        })
        .collect()
}

/// What a stretch of a warpgroup's time was spent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// Consumer: from its stage's `full` barrier seen to the wait for the previous MMA group returning.
    Mma,
    /// Consumer: accumulators final to its stores issued.
    Epilogue,
    /// Producer: one K tile's copies issued (an instant, drawn as a tick).
    TmaIssue,
    /// Steps 10 and 11: a warpgroup begins a tile (an instant).
    TileStart,
    /// Step 11, consumer: converting the next K tile (its stage seen full → converted, stage released).
    Convert,
    /// Step 11, consumer: its conversion done (or nothing to convert), waiting for its MMAs.
    MmaWait,
    /// Step 11, consumer: waiting at the named barrier of both consumers.
    Barrier,
    /// Step 11, consumer: from its MMAs' commit to their wait returning (drawn as a thin band under the
    /// rest, which happens meanwhile).
    MmaInFlight,
    /// Step 11, consumer: from the previous MMAs' wait returning (or a tile's start) to the next
    /// stage's `full` barrier passing: waiting for the producer's operands.
    StageWait,
}

impl SpanKind {
    fn label(self) -> &'static str {
        match self {
            SpanKind::Mma => "consumer: stage full → MMAs issued → previous group done",
            SpanKind::Epilogue => "consumer: epilogue (accumulators → C)",
            SpanKind::TmaIssue => "producer: a K tile's TMA copies issued",
            SpanKind::TileStart => "tile start (persistent step)",
            SpanKind::Convert => "consumer: converting the next K tile (e4m3 → bf16)",
            SpanKind::MmaWait => "consumer: waiting for its MMAs (wgmma_wait)",
            SpanKind::Barrier => "consumer: waiting at the consumers' barrier",
            SpanKind::MmaInFlight => "consumer: MMAs in flight, committed → waited for (thin band)",
            SpanKind::StageWait => "consumer: waiting for the next stage (full)",
        }
    }

    fn name(self) -> &'static str {
        match self {
            SpanKind::Mma => "mma",
            SpanKind::Epilogue => "epilogue",
            SpanKind::TmaIssue => "tma issued",
            SpanKind::TileStart => "tile start",
            SpanKind::Convert => "convert",
            SpanKind::MmaWait => "mma wait",
            SpanKind::Barrier => "barrier",
            SpanKind::MmaInFlight => "mmas in flight",
            SpanKind::StageWait => "stage wait",
        }
    }

    fn colour(self) -> RGBColor {
        match self {
            SpanKind::Mma => RGBColor(31, 100, 180),
            SpanKind::Epilogue => RGBColor(230, 110, 0),
            SpanKind::TmaIssue => RGBColor(40, 150, 60),
            SpanKind::TileStart => RGBColor(20, 20, 20),
            SpanKind::Convert => RGBColor(140, 70, 170),
            SpanKind::MmaWait => RGBColor(120, 175, 230),
            SpanKind::Barrier => RGBColor(205, 40, 40),
            SpanKind::MmaInFlight => RGBColor(31, 100, 180),
            SpanKind::StageWait => RGBColor(20, 160, 150),
        }
    }
}

/// A stretch (or an instant: `end_ns == start_ns`) of one warpgroup's time on one SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub sm: u32,
    pub block: u32,
    pub warpgroup: u32,
    pub kind: SpanKind,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The spans of every warpgroup, from its stamps in order: `StageFull → MmaDone` is an MMA span,
/// `EpilogueStart →` the last `EpilogueEnd` before the next main-loop or tile event is an epilogue,
/// `TmaIssued` and `TileStart` are instants.
///
/// A warpgroup that converts (step 11: `ConvertStart` among its stamps) has no MMA spans but, per K
/// tile, `MmaIssued → MmaDone` (MMAs in flight), `ConvertStart → ConvertEnd` (converting the next K
/// tile), from the conversion's end (or, with nothing to convert, the MMAs' commit) to `MmaDone`
/// (waiting for the MMAs), and from `MmaDone` (or a `ConvertEnd` not followed by MMAs) to `Barrier`
/// (waiting at the consumers' barrier).
pub fn spans(stamps: &[Stamp]) -> Vec<Span> {
    let mut by_warpgroup: BTreeMap<(u32, u32), Vec<&Stamp>> = BTreeMap::new();
    for s in stamps {
        by_warpgroup.entry((s.block, s.warpgroup)).or_default().push(s);
    }
    let mut out = Vec::new();
    for ((block, warpgroup), mut list) in by_warpgroup {
        list.sort_by_key(|s| (s.sequence, s.time_ns));
        let sm = list[0].sm;
        let span = |kind, start_ns, end_ns| Span {
            sm,
            block,
            warpgroup,
            kind,
            start_ns,
            end_ns,
        };
        let converts = list.iter().any(|s| s.event == Event::ConvertStart);
        let mut full: Option<u64> = None;
        let mut issued: Option<u64> = None;
        let mut convert: Option<u64> = None;
        let mut converted: Option<u64> = None;
        let mut barrier_from: Option<u64> = None;
        let mut stage_wait_from: Option<u64> = None;
        let mut epilogue: Option<(u64, Option<u64>)> = None;
        let close_epilogue = |epilogue: &mut Option<(u64, Option<u64>)>, out: &mut Vec<Span>| {
            if let Some((start, Some(end))) = epilogue.take() {
                out.push(span(SpanKind::Epilogue, start, end));
            }
        };
        for s in list {
            match s.event {
                Event::TmaIssued => out.push(span(SpanKind::TmaIssue, s.time_ns, s.time_ns)),
                Event::TileStart => {
                    close_epilogue(&mut epilogue, &mut out);
                    out.push(span(SpanKind::TileStart, s.time_ns, s.time_ns));
                    stage_wait_from = Some(s.time_ns);
                }
                Event::StageFull => {
                    close_epilogue(&mut epilogue, &mut out);
                    full = Some(s.time_ns);
                }
                Event::MmaIssued => {
                    issued = Some(s.time_ns);
                    converted = None;
                }
                Event::MmaDone if converts => {
                    if let Some(start) = converted.take().or(issued) {
                        out.push(span(SpanKind::MmaWait, start, s.time_ns));
                    }
                    if let Some(start) = issued.take() {
                        out.push(span(SpanKind::MmaInFlight, start, s.time_ns));
                    }
                    barrier_from = Some(s.time_ns);
                    stage_wait_from = Some(s.time_ns);
                }
                Event::MmaDone => {
                    if let Some(start) = full.take() {
                        out.push(span(SpanKind::Mma, start, s.time_ns));
                    }
                }
                Event::ConvertStart => {
                    close_epilogue(&mut epilogue, &mut out);
                    // The wait for the stage it converts from: since the last MMA wait, barrier or
                    // tile start (step 11 stamps `ConvertStart` when `full` has passed).
                    if let Some(start) = stage_wait_from.take() {
                        out.push(span(SpanKind::StageWait, start, s.time_ns));
                    }
                    convert = Some(s.time_ns);
                }
                Event::ConvertEnd => {
                    if let Some(start) = convert.take() {
                        out.push(span(SpanKind::Convert, start, s.time_ns));
                    }
                    converted = Some(s.time_ns);
                    barrier_from = Some(s.time_ns);
                }
                Event::Barrier => {
                    if let Some(start) = barrier_from.take() {
                        out.push(span(SpanKind::Barrier, start, s.time_ns));
                    }
                    converted = None;
                    stage_wait_from = Some(s.time_ns);
                }
                Event::EpilogueStart => {
                    close_epilogue(&mut epilogue, &mut out);
                    epilogue = Some((s.time_ns, None));
                }
                Event::EpilogueEnd => {
                    if let Some((_, end)) = epilogue.as_mut() {
                        *end = Some(s.time_ns);
                    }
                }
            }
        }
        close_epilogue(&mut epilogue, &mut out);
    }
    out.sort_by_key(|s| (s.sm, s.warpgroup, s.start_ns, s.kind));
    out
}

/// The first `count` SMs (by id) that have stamps.
pub fn shown_sms(stamps: &[Stamp], count: usize) -> Vec<u32> {
    let sms: BTreeSet<u32> = stamps.iter().map(|s| s.sm).collect();
    sms.into_iter().take(count).collect()
}

/// What one `--timeline` run measured, written into the trace's `otherData` and read by the book.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub step: u8,
    pub gpu: String,
    pub shape: Shape,
    pub seed: u64,
    pub date: String,
    pub git: String,
    /// Medians of the plain and the instrumented kernel, timed in one alternating loop.
    pub plain_ms: f64,
    pub instrumented_ms: f64,
    /// `instrumented_ms / plain_ms − 1`.
    pub overhead: f64,
    pub runs: u32,
    /// Stamps read back, and stamps that did not fit the buffer.
    pub stamps: u64,
    pub dropped: u64,
    pub sms_shown: Vec<u32>,
    /// From the first to the last stamp of the whole grid, in microseconds.
    pub span_us: f64,
    /// Of the shown consumers' time between their first and last stamp: the share inside MMA spans
    /// and inside epilogues.
    pub consumer_mma_share: f64,
    pub consumer_epilogue_share: f64,
    /// Step 11 (0 for a step that converts nothing): the shares converting the next K tile, waiting
    /// for the MMAs and waiting at the consumers' barrier.
    #[serde(default)]
    pub consumer_convert_share: f64,
    #[serde(default)]
    pub consumer_mma_wait_share: f64,
    #[serde(default)]
    pub consumer_barrier_share: f64,
    /// Step 11: the share waiting for the next stage's operands (`full`).
    #[serde(default)]
    pub consumer_stage_wait_share: f64,
}

impl Summary {
    /// Where the shown consumers' time went, in words: "41% of their time in MMA spans and 9% in
    /// epilogues", or for a converting step the conversion, the two waits and the epilogues.
    pub fn consumer_time(&self) -> String {
        let pc = |share: f64| format!("{:.0}%", 100.0 * share);
        if self.consumer_convert_share > 0.0 {
            format!(
                "{} of their time converting the next K tile, {} waiting for their MMAs, {} for the next stage, {} at the consumers' barrier and {} in epilogues",
                pc(self.consumer_convert_share),
                pc(self.consumer_mma_wait_share),
                pc(self.consumer_stage_wait_share),
                pc(self.consumer_barrier_share),
                pc(self.consumer_epilogue_share),
            )
        } else {
            format!(
                "{} of their time in MMA spans and {} in epilogues",
                pc(self.consumer_mma_share),
                pc(self.consumer_epilogue_share)
            )
        }
    }
}

/// Summed length of the shown consumers' spans of `kind` over their active time (first to last stamp).
pub fn consumer_share(spans: &[Span], sms: &[u32], kind: SpanKind) -> f64 {
    let mut active: BTreeMap<(u32, u32), (u64, u64)> = BTreeMap::new();
    let mut busy = 0u64;
    for s in spans.iter().filter(|s| s.warpgroup > 0 && sms.contains(&s.sm)) {
        let e = active.entry((s.block, s.warpgroup)).or_insert((s.start_ns, s.end_ns));
        e.0 = e.0.min(s.start_ns);
        e.1 = e.1.max(s.end_ns);
        if s.kind == kind {
            busy += s.end_ns - s.start_ns;
        }
    }
    let total: u64 = active.values().map(|(a, b)| b - a).sum();
    if total == 0 {
        0.0
    } else {
        busy as f64 / total as f64
    }
}

// ---------------------------------------------------------------------------------------------
// The trace file

/// A Chrome/Perfetto trace of the shown SMs: one process per SM, one thread per warpgroup; spans are
/// complete events (`X`), instants `i`; times in microseconds from the first stamp.
pub fn trace_json(spans: &[Span], summary: &Summary, origin_ns: u64) -> serde_json::Value {
    use serde_json::json;
    let us = |ns: u64| ((ns - origin_ns) as f64 / 1e3 * 1e3).round() / 1e3;
    let mut events = Vec::new();
    for &sm in &summary.sms_shown {
        events.push(json!({"name": "process_name", "ph": "M", "pid": sm, "args": {"name": format!("SM {sm}")}}));
        for (wg, name) in [(0, "producer"), (1, "consumer 1"), (2, "consumer 2")] {
            events.push(json!({"name": "thread_name", "ph": "M", "pid": sm, "tid": wg, "args": {"name": name}}));
        }
    }
    for s in spans.iter().filter(|s| summary.sms_shown.contains(&s.sm)) {
        if s.end_ns > s.start_ns {
            events.push(json!({
                "name": s.kind.name(), "ph": "X", "pid": s.sm, "tid": s.warpgroup,
                "ts": us(s.start_ns), "dur": ((s.end_ns - s.start_ns) as f64).round() / 1e3,
                "args": {"block": s.block}
            }));
        } else {
            events.push(json!({
                "name": s.kind.name(), "ph": "i", "s": "t", "pid": s.sm, "tid": s.warpgroup,
                "ts": us(s.start_ns), "args": {"block": s.block}
            }));
        }
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": serde_json::to_value(summary).unwrap_or_default(),
    })
}

/// `book/src/results/timelines/timeline-stepNN-<slug>.json`.
pub fn trace_path(book_dir: &Path, step: u8, slug: &str) -> PathBuf {
    results::results_dir(book_dir)
        .join("timelines")
        .join(format!("timeline-step{step:02}-{slug}.json"))
}

/// `book/src/figures/timeline-stepNN-<slug>.svg`.
pub fn svg_path(book_dir: &Path, step: u8, slug: &str) -> PathBuf {
    crate::book::svg::figures_dir(book_dir).join(format!("timeline-step{step:02}-{slug}.svg"))
}

/// The summary stored in a trace file, if the file is there and holds one.
pub fn load_summary(path: &Path) -> Option<Summary> {
    let text = std::fs::read_to_string(path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    serde_json::from_value(value.get("otherData")?.clone()).ok()
}

// ---------------------------------------------------------------------------------------------
// The Gantt chart

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
        .light_line_style(crate::book::svg::TRANSPARENT)
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

// ---------------------------------------------------------------------------------------------
// On the GPU

/// The kernel file with `TIMELINE=1` added to its defines.
pub fn instrumented(file: &KernelFile) -> KernelFile {
    let mut defines = file.defines.to_vec();
    defines.push(("TIMELINE", 1));
    KernelFile {
        path: file.path,
        source: file.source,
        targets: file.targets,
        entry: file.entry,
        defines: Box::leak(defines.into_boxed_slice()),
        max_dynamic_smem: file.max_dynamic_smem,
        launch: file.launch,
    }
}

fn define(file: &KernelFile, name: &str) -> Option<u64> {
    file.defines.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

/// Blocks the launch may have at most (a tile per block, the grid rounded to whole clusters along M;
/// a persistent grid has fewer), and records per warpgroup that hold every stamp with room to spare.
pub fn buffer_plan(file: &KernelFile, shape: Shape, sms: u32) -> (u64, u64) {
    let bm = define(file, "BM").unwrap_or(128);
    let bn = define(file, "BN").unwrap_or(256);
    let bk = define(file, "BK").unwrap_or(64);
    let cluster = define(file, "CLUSTER_M").unwrap_or(1).max(1);
    let tiles_m = (shape.m as u64).div_ceil(bm).div_ceil(cluster) * cluster;
    let blocks = tiles_m * (shape.n as u64).div_ceil(bn);
    let k_tiles = (shape.k as u64).div_ceil(bk);
    // A consumer stamps three times a K tile (five where it converts the next one: step 11) and a few
    // times a tile; a persistent block has several tiles (at most blocks / (sms / 2) of them with one
    // block per SM and half the SMs in use).
    let per_k_tile = if file.source.contains("TIMELINE_STAMP(TL_CONVERT_START)") {
        5
    } else {
        3
    };
    let tiles_per_block = blocks.div_ceil((sms as u64 / 2).max(1)).max(1);
    let capacity = (per_k_tile * k_tiles + 16) * tiles_per_block * 2;
    (blocks, capacity)
}

struct Instrumented {
    module: Arc<CudaModule>,
    function: CudaFunction,
    file: KernelFile,
}

fn load_instrumented(gpu: &Gpu, file: &KernelFile) -> Result<Instrumented> {
    let file = instrumented(file);
    let arch = file.targets.arch_for_device(gpu.major, gpu.minor);
    let compiled = nvrtc::compile(&file, arch, Output::Cubin)?;
    if !compiled.log.is_empty() {
        eprintln!("{} ({arch}, TIMELINE=1): NVRTC says:\n{}", file.path, compiled.log);
    }
    let module = gpu
        .ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.bytes))
        .map_err(Error::cuda(format!("loading {} with timeline stamps", file.path)))?;
    let function = module
        .load_function(file.entry)
        .map_err(Error::cuda(format!("finding {}", file.entry)))?;
    if file.max_dynamic_smem > 48 * 1024 {
        function
            .set_attribute(
                FuncAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                file.max_dynamic_smem as i32,
            )
            .map_err(Error::cuda("raising the dynamic shared-memory limit"))?;
        function
            .set_attribute(FuncAttr::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100)
            .map_err(Error::cuda("asking for the shared-memory carveout"))?;
    }
    Ok(Instrumented { module, function, file })
}

fn set_global(module: &Arc<CudaModule>, gpu: &Gpu, name: &str, bytes: &[u8]) -> Result<()> {
    let mut view = module
        .get_global(name, &gpu.stream)
        .map_err(Error::cuda(format!("finding the kernel's {name}")))?;
    gpu.stream
        .memcpy_htod(bytes, &mut view)
        .map_err(Error::cuda(format!("setting {name}")))
}

fn read_global_u32(module: &Arc<CudaModule>, gpu: &Gpu, name: &str) -> Result<u32> {
    let view = module
        .get_global(name, &gpu.stream)
        .map_err(Error::cuda(format!("finding the kernel's {name}")))?;
    let mut out = [0u8; 4];
    gpu.stream
        .memcpy_dtoh(&view.slice(0..4), &mut out)
        .map_err(Error::cuda(format!("reading {name}")))?;
    Ok(u32::from_le_bytes(out))
}

/// `stepNN --timeline`: the instrumented build checked, timed against the plain one, run once more
/// and drawn; the figure and the trace written under `book_dir` (when there is one).
pub fn timeline_main(
    step: &'static Step,
    gpu: Gpu,
    shape: Shape,
    seed: u64,
    iters: Option<u32>,
    book_dir: Option<&Path>,
) -> Result<()> {
    let file = step
        .kernel_for_device(gpu.major, gpu.minor)
        .filter(|k| k.source.contains("TIMELINE_STAMP("))
        .ok_or_else(|| {
            Error::Usage(format!(
                "{} --timeline: this step's kernel for this GPU has no timeline stamps (steps 08, 09, 10 and 11 have them on Hopper)",
                step.binary()
            ))
        })?;
    let gpu_name = gpu.info.name.clone();
    let sms = gpu.info.sms;
    let mut session = Session::new(gpu, shape, seed)?;
    let id = step.id;
    session.kernel(id)?;
    let inst = load_instrumented(&session.gpu, file)?;

    // The buffer and the globals that point at it.
    let (blocks, capacity) = buffer_plan(file, shape, sms);
    let threads = inst
        .function
        .get_attribute(FuncAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        .map_err(Error::cuda("reading the block size"))? as u32;
    let warpgroups = threads.div_ceil(WARPGROUP_THREADS) as u64;
    let bytes = (blocks * warpgroups * capacity) as usize * RECORD_BYTES;
    let gpu = &session.gpu;
    let mut buffer = gpu
        .stream
        .alloc_zeros::<u8>(bytes)
        .map_err(Error::cuda(format!("allocating {} MiB for the stamps", bytes >> 20)))?;
    let (address, _sync) = buffer.device_ptr(&gpu.stream);
    set_global(&inst.module, gpu, "timeline_records", &address.to_le_bytes())?;
    drop(_sync);
    set_global(&inst.module, gpu, "timeline_capacity", &(capacity as u32).to_le_bytes())?;
    set_global(&inst.module, gpu, "timeline_blocks", &(blocks as u32).to_le_bytes())?;
    set_global(&inst.module, gpu, "timeline_dropped", &0u32.to_le_bytes())?;

    // Stamps must not change what the kernel computes: bit for bit, in the step's format.
    let what = format!("{} with stamps", step.binary());
    let same = match step.format {
        Format::Bf16 => {
            let plain = session.output_of(id)?.to_vec();
            let stamped = session.run_function(&inst.function, inst.file.launch, &what)?;
            plain
                .iter()
                .map(|v| v.to_bits())
                .eq(stamped.iter().map(|v| v.to_bits()))
        }
        Format::Mxfp8 => {
            let plain = session.mx_output_of(id)?.to_vec();
            let stamped = session.run_mx_function(&inst.function, inst.file.launch, &what)?;
            plain
                .iter()
                .map(|v| v.to_bits())
                .eq(stamped.iter().map(|v| v.to_bits()))
        }
    };
    if !same {
        return Err(Error::Verification(format!(
            "{} built with TIMELINE=1 computes a different C than the plain build",
            step.binary()
        )));
    }

    // The overhead: both builds in one alternating loop.
    let this = &session;
    let mut run_plain = |i: usize| this.launch(id, i);
    let mut run_stamped =
        |i: usize| (inst.file.launch)(&inst.function, &this.gpu.stream, &this.operands_in(step.format, i)?);
    let plain_name = format!("{} plain", step.binary());
    let stamped_name = format!("{} TIMELINE=1", step.binary());
    let mut contenders = vec![
        Contender {
            name: &plain_name,
            launch: &mut run_plain,
        },
        Contender {
            name: &stamped_name,
            launch: &mut run_stamped,
        },
    ];
    let measured = timing::measure(&this.gpu, shape, iters.or(Some(30)), &mut contenders)?;
    let (plain_t, stamped_t) = (&measured.timings[0], &measured.timings[1]);

    // One more instrumented run, on a zeroed buffer, for the record.
    let gpu = &session.gpu;
    gpu.stream
        .memset_zeros(&mut buffer)
        .map_err(Error::cuda("clearing the stamps"))?;
    set_global(&inst.module, gpu, "timeline_dropped", &0u32.to_le_bytes())?;
    (inst.file.launch)(&inst.function, &gpu.stream, &session.operands_in(step.format, 0)?)?;
    gpu.finish(&format!("{} with stamps", step.binary()))?;
    let host = gpu
        .stream
        .clone_dtoh(&buffer)
        .map_err(Error::cuda("reading the stamps back"))?;
    let dropped = read_global_u32(&inst.module, gpu, "timeline_dropped")?;
    let stamps = parse_stamps(&host);
    if stamps.is_empty() {
        return Err(Error::Other(format!(
            "{} --timeline: the kernel wrote no stamps",
            step.binary()
        )));
    }
    let origin = stamps.iter().map(|s| s.time_ns).min().unwrap_or(0);
    let end = stamps.iter().map(|s| s.time_ns).max().unwrap_or(origin);
    let all_spans = spans(&stamps);
    let sms_shown = shown_sms(&stamps, SMS_SHOWN);
    let summary = Summary {
        step: id,
        gpu: gpu_name.clone(),
        shape,
        seed,
        date: results::utc_now_rfc3339(),
        git: crate::GIT_REVISION.to_string(),
        plain_ms: plain_t.median_ms,
        instrumented_ms: stamped_t.median_ms,
        overhead: stamped_t.median_ms / plain_t.median_ms - 1.0,
        runs: plain_t.runs,
        stamps: stamps.len() as u64,
        dropped: dropped as u64,
        consumer_mma_share: consumer_share(&all_spans, &sms_shown, SpanKind::Mma),
        consumer_epilogue_share: consumer_share(&all_spans, &sms_shown, SpanKind::Epilogue),
        consumer_convert_share: consumer_share(&all_spans, &sms_shown, SpanKind::Convert),
        consumer_mma_wait_share: consumer_share(&all_spans, &sms_shown, SpanKind::MmaWait),
        consumer_barrier_share: consumer_share(&all_spans, &sms_shown, SpanKind::Barrier),
        consumer_stage_wait_share: consumer_share(&all_spans, &sms_shown, SpanKind::StageWait),
        sms_shown,
        span_us: (end - origin) as f64 / 1e3,
    };
    println!(
        "{} --timeline at {shape}: plain {} ms, with stamps {} ms ({:+.1}% overhead, {} rounds); {} stamps, {} dropped; \
         shown consumers spend {}",
        step.binary(),
        significant(summary.plain_ms, 4),
        significant(summary.instrumented_ms, 4),
        100.0 * summary.overhead,
        summary.runs,
        summary.stamps,
        summary.dropped,
        summary.consumer_time(),
    );
    let Some(book_dir) = book_dir else {
        println!("note: --no-record, or no book/ folder here: the timeline figure and trace are not written");
        return Ok(());
    };
    let slug = results::slug(&gpu_name);
    let svg = svg_path(book_dir, id, &slug);
    write_if_changed(&svg, &gantt_svg(&all_spans, &summary, origin, end)?)?;
    let trace = trace_path(book_dir, id, &slug);
    let mut text = serde_json::to_string(&trace_json(&all_spans, &summary, origin))
        .map_err(|e| Error::Other(format!("writing the trace: {e}")))?;
    text.push('\n');
    results::write_file_atomically(&trace, &text)?;
    println!(
        "wrote {} and {} (open it at ui.perfetto.dev)",
        svg.display(),
        trace.display()
    );
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn stamp(t: u64, sm: u32, block: u32, wg: u32, event: u32, seq: u32) -> Vec<u8> {
        let mut r = Vec::with_capacity(RECORD_BYTES);
        r.extend(t.to_le_bytes());
        for w in [sm, block, wg, event, seq, 0] {
            r.extend(w.to_le_bytes());
        }
        r
    }

    /// Two blocks on SMs 0 and 1 (three warpgroups each) and one on SM 5: a producer issuing four K
    /// tiles, consumers waiting, computing and storing; an unwritten record at the end.
    pub(crate) fn synthetic_buffer() -> Vec<u8> {
        let mut bytes = Vec::new();
        for (block, sm) in [(0u32, 0u32), (1, 1), (2, 5)] {
            let base = 1_000_000 + 500 * block as u64;
            for t in 0..4u32 {
                bytes.extend(stamp(base + 100 * t as u64, sm, block, 0, 1, t));
            }
            for wg in 1..3u32 {
                let mut seq = 0;
                for t in 0..4u64 {
                    for (event, dt) in [(2, 150), (3, 160), (4, 240)] {
                        bytes.extend(stamp(base + 100 * t + dt, sm, block, wg, event, seq));
                        seq += 1;
                    }
                }
                bytes.extend(stamp(base + 700, sm, block, wg, 5, seq));
                bytes.extend(stamp(base + 900, sm, block, wg, 6, seq + 1));
            }
        }
        bytes.extend([0u8; RECORD_BYTES]);
        bytes
    }

    pub(crate) fn summary(sms: Vec<u32>) -> Summary {
        Summary {
            step: 8,
            gpu: "NVIDIA H200".into(),
            shape: Shape::square(4096),
            seed: 1,
            date: "2026-01-02T03:04:05Z".into(),
            git: "abc".into(),
            plain_ms: 0.2,
            instrumented_ms: 0.21,
            overhead: 0.05,
            runs: 30,
            stamps: 90,
            dropped: 0,
            sms_shown: sms,
            span_us: 1.9,
            consumer_mma_share: 0.5,
            consumer_epilogue_share: 0.2,
            consumer_convert_share: 0.0,
            consumer_mma_wait_share: 0.0,
            consumer_barrier_share: 0.0,
            consumer_stage_wait_share: 0.0,
        }
    }

    /// Step 11's consumers on one block (SM 3): per tile, K tile 0 converted before the loop, then per
    /// K tile its MMAs issued, the next one converted, the MMAs waited for, the barrier passed.
    pub(crate) fn converting_buffer() -> Vec<u8> {
        let mut bytes = Vec::new();
        for t in 0..3u32 {
            bytes.extend(stamp(1_000 + 100 * t as u64, 3, 0, 0, 1, t));
        }
        for wg in 1..3u32 {
            let mut seq = 0;
            let mut push = |bytes: &mut Vec<u8>, time: u64, event: u32| {
                bytes.extend(stamp(time, 3, 0, wg, event, seq));
                seq += 1;
            };
            push(&mut bytes, 1_000, 0); // tile start
            push(&mut bytes, 1_100, 7); // K tile 0 converted ...
            push(&mut bytes, 1_200, 8);
            push(&mut bytes, 1_210, 9); // ... and both consumers there
            for k in 0..3u64 {
                let base = 1_210 + 400 * k;
                push(&mut bytes, base + 20, 3); // MMAs of K tile k issued
                if k + 1 < 3 {
                    push(&mut bytes, base + 50, 7); // K tile k + 1: stage full, conversion ...
                    push(&mut bytes, base + 250, 8); // ... done
                }
                push(&mut bytes, base + 350, 4); // MMAs done
                push(&mut bytes, base + 400, 9); // barrier
            }
            push(&mut bytes, 2_500, 5);
            push(&mut bytes, 2_700, 6);
        }
        bytes
    }

    #[test]
    fn stamps_parse_and_become_spans() {
        let stamps = parse_stamps(&synthetic_buffer());
        assert_eq!(stamps.len(), 3 * (4 + 2 * 14));
        assert_eq!(stamps[0].event, Event::TmaIssued);
        assert_eq!(shown_sms(&stamps, 2), [0, 1]);
        let all = spans(&stamps);
        let of = |kind| all.iter().filter(|s| s.kind == kind && s.block == 0).count();
        assert_eq!(
            (of(SpanKind::TmaIssue), of(SpanKind::Mma), of(SpanKind::Epilogue)),
            (4, 8, 2)
        );
        let mma = all.iter().find(|s| s.kind == SpanKind::Mma).unwrap();
        assert_eq!(mma.end_ns - mma.start_ns, 90);
        let epi = all.iter().find(|s| s.kind == SpanKind::Epilogue).unwrap();
        assert_eq!(epi.end_ns - epi.start_ns, 200);
        // Consumers: active 150 .. 900 (750 ns), 4 × 90 in MMAs, 200 in the epilogue.
        let share = consumer_share(&all, &[0], SpanKind::Mma);
        assert!((share - 360.0 / 750.0).abs() < 1e-12, "{share}");
        assert!((consumer_share(&all, &[0], SpanKind::Epilogue) - 200.0 / 750.0).abs() < 1e-12);
    }

    #[test]
    fn a_converting_consumer_has_conversions_waits_and_barriers_but_no_mma_spans() {
        let stamps = parse_stamps(&converting_buffer());
        assert_eq!(stamps.len(), 3 + 2 * (4 + 3 * 3 + 2 * 2 + 2));
        assert!(stamps.iter().any(|s| s.event == Event::ConvertStart));
        let all = spans(&stamps);
        let lengths = |kind| {
            all.iter()
                .filter(|s| s.kind == kind && s.warpgroup == 1)
                .map(|s| s.end_ns - s.start_ns)
                .collect::<Vec<_>>()
        };
        assert!(lengths(SpanKind::Mma).is_empty());
        assert_eq!(lengths(SpanKind::Convert), [100, 200, 200]);
        // After each conversion until the MMAs are done; the last K tile has nothing to convert.
        assert_eq!(lengths(SpanKind::MmaWait), [100, 100, 330]);
        assert_eq!(lengths(SpanKind::MmaInFlight), [330, 330, 330]);
        // The first barrier waits after K tile 0's conversion, the others after the MMAs.
        assert_eq!(lengths(SpanKind::Barrier), [10, 50, 50, 50]);
        assert_eq!(lengths(SpanKind::Epilogue), [200]);
        // Active 1000 .. 2700: 500 converting, 530 waiting for MMAs, 160 at the barrier, 200 storing.
        let share = |kind| consumer_share(&all, &[3], kind);
        assert!((share(SpanKind::Convert) - 500.0 / 1700.0).abs() < 1e-12);
        assert!((share(SpanKind::MmaWait) - 530.0 / 1700.0).abs() < 1e-12);
        assert!((share(SpanKind::Barrier) - 160.0 / 1700.0).abs() < 1e-12);
        let mut sum = summary(vec![3]);
        sum.step = 11;
        assert!(sum.consumer_time().contains("in MMA spans"));
        sum.consumer_convert_share = share(SpanKind::Convert);
        sum.consumer_mma_wait_share = share(SpanKind::MmaWait);
        sum.consumer_barrier_share = share(SpanKind::Barrier);
        assert_eq!(
            sum.consumer_time(),
            "29% of their time converting the next K tile, 31% waiting for their MMAs, 0% for the next stage, 9% at the consumers' barrier and 20% in epilogues"
        );
        let svg = gantt_svg(&all, &sum, 1_000, 2_700).unwrap();
        for kind in [
            SpanKind::Convert,
            SpanKind::MmaWait,
            SpanKind::Barrier,
            SpanKind::MmaInFlight,
            SpanKind::Epilogue,
        ] {
            let words = kind.label().split('\'').next().unwrap(); // SVG escapes the apostrophe
            assert!(svg.contains(words), "{kind:?}'s legend entry missing");
        }
        // Nested in the trace: the conversion and the wait inside the MMAs' flight.
        let trace = trace_json(&all, &sum, 1_000);
        let events = trace["traceEvents"].as_array().unwrap();
        for name in ["convert", "mma wait", "barrier", "mmas in flight"] {
            assert!(events.iter().any(|e| e["ph"] == "X" && e["name"] == name), "{name}");
        }
    }

    /// Traces written before step 11 had no conversion shares: they still load, with zeros.
    #[test]
    fn summaries_without_the_conversion_shares_still_load() {
        let mut value = serde_json::to_value(summary(vec![0])).unwrap();
        for key in [
            "consumer_convert_share",
            "consumer_mma_wait_share",
            "consumer_barrier_share",
        ] {
            assert!(value.as_object_mut().unwrap().remove(key).is_some(), "{key}");
        }
        let back: Summary = serde_json::from_value(value).unwrap();
        assert_eq!(back, summary(vec![0]));
    }

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

    #[test]
    fn the_hopper_warp_specialised_steps_have_stamps_and_the_others_do_not() {
        let with: Vec<u8> = crate::run::steps::ALL
            .iter()
            .filter(|s| supports(s))
            .map(|s| s.id)
            .collect();
        assert_eq!(with, [8, 9, 10, 11]);
        let file = &crate::run::steps::get(8).unwrap().kernels[0];
        let inst = instrumented(file);
        assert_eq!(inst.defines.last(), Some(&("TIMELINE", 1)));
        assert_eq!(inst.defines.len(), file.defines.len() + 1);
        let (blocks, capacity) = buffer_plan(file, Shape::square(4096), 132);
        assert_eq!(blocks, 32 * 16);
        assert!(capacity >= 3 * 64 + 8, "{capacity}");
        // Step 11's consumers stamp five times a K tile; a persistent block of its has up to 8 tiles
        // at 4096 on 132 SMs.
        let file = &crate::run::steps::get(11).unwrap().kernels[0];
        assert_eq!(file.targets, Targets::Hopper);
        let (blocks, capacity) = buffer_plan(file, Shape::square(4096), 132);
        assert_eq!(blocks, 32 * 16);
        assert!(capacity >= (5 * 64 + 16) * 8, "{capacity}");
    }

    /// The stamps are empty macros in the plain build: its PTX has no trace of them, while the
    /// instrumented build reads the timer and knows the buffer.
    #[test]
    fn the_plain_build_has_no_stamps_and_the_instrumented_one_compiles() {
        if crate::device::libs::require_nvrtc().is_err() {
            eprintln!("skipped: no NVRTC");
            return;
        }
        for id in [8u8, 9, 10, 11] {
            let file = crate::run::steps::get(id)
                .unwrap()
                .kernels
                .iter()
                .find(|k| k.targets == Targets::Hopper)
                .unwrap();
            let arch = crate::device::arch::Arch::SM90A;
            let plain = String::from_utf8(nvrtc::compile(file, arch, Output::Ptx).unwrap().bytes).unwrap();
            assert!(
                !plain.contains("globaltimer") && !plain.contains("timeline_"),
                "step{id:02}"
            );
            let inst = instrumented(file);
            let stamped = String::from_utf8(nvrtc::compile(&inst, arch, Output::Ptx).unwrap().bytes).unwrap();
            assert!(
                stamped.contains("globaltimer") && stamped.contains("timeline_records"),
                "step{id:02}"
            );
            // And it assembles (ptxas), the producer within its 48 registers after setmaxnreg.
            nvrtc::compile(&inst, arch, Output::Cubin).unwrap_or_else(|e| panic!("step{id:02}: {e}"));
        }
    }
}
