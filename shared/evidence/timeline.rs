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
//!
//! This file reads the stamps (events, spans, the summary) and writes the trace; `timeline/gantt.rs` draws
//! the figure; `timeline/instrument.rs` builds the stamped kernel and runs `--timeline`.

use crate::check::problem::Shape;
use crate::run::results;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bytes of one record (`struct TimelineRecord` in timeline.cuh).
pub const RECORD_BYTES: usize = 32;
/// SMs drawn and written to the trace.
pub const SMS_SHOWN: usize = 4;

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
            // A kernel whose consumers never meet at a barrier (step 11's now) has no such share to
            // report: the clause is left out rather than printed as 0%.
            let barrier = if self.consumer_barrier_share > 0.0 {
                format!(", {} at the consumers' barrier", pc(self.consumer_barrier_share))
            } else {
                String::new()
            };
            format!(
                "{} of their time converting the next K tile, {} waiting for their MMAs, {} for the next stage{barrier} and {} in epilogues",
                pc(self.consumer_convert_share),
                pc(self.consumer_mma_wait_share),
                pc(self.consumer_stage_wait_share),
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
    crate::svg::figures_dir(book_dir).join(format!("timeline-step{step:02}-{slug}.svg"))
}

/// The summary stored in a trace file, if the file is there and holds one.
pub fn load_summary(path: &Path) -> Option<Summary> {
    let text = std::fs::read_to_string(path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    serde_json::from_value(value.get("otherData")?.clone()).ok()
}

mod gantt;
mod instrument;

pub use gantt::{gantt_svg, merge_for_drawing};
pub use instrument::{buffer_plan, instrumented, supports, timeline_main};

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
}
