//! The book's evidence directives (the `ladder-results` pass of [`crate::book`] calls these):
//!
//! | directive                      | becomes                                                          |
//! |--------------------------------|------------------------------------------------------------------|
//! | `{{#ladder-evidence step05}}`  | the step's recorded `profile` beside its predecessor's and cuBLAS's, per GPU |
//! | `{{#ladder-evidence step05 sm80}}` | the same for the sm80 twin (and `-value`/`-delta … KEY sm80`) |
//! | `{{#ladder-timeline step08}}`  | the step's timeline figure, overhead and trace link, per GPU     |
//! | `{{#ladder-l2}}`               | the L2 level of the roofline: bytes L2→SM per flop, per step     |
//! | `{{#ladder-evidence-value step06 KEY}}` | inline: one quantity of the step's evidence, per GPU |
//! | `{{#ladder-evidence-delta step07 KEY}}` | inline: the quantity of the predecessor → of the step (change) |
//! | `{{#ladder-timeline-share step08 epilogue}}` | inline: the consumers' share of time in a part, from the timeline |
//! | `{{#ladder-clusters step10}}`  | inline: how many clusters fit, as the driver answered (per GPU)  |
//! | `{{#ladder-quoted}}`           | every number quoted from another text ([`crate::book::quoted`])        |
//! | `{{#ladder-quote gau-v6}}`     | one quoted number, inline: `1476 TFLOPS`                         |
//! | `{{#ladder-sources}}`          | the list of source texts                                         |
//!
//! Each says plainly when there is nothing recorded yet.

use crate::book::quoted::{self, QUOTED, SOURCES};
use crate::evidence::timeline;
use crate::evidence::{Profile, ProfileSource};
use crate::run::results::{significant, Baseline, ResultsFile, StepRecord};
use std::fmt::Write as _;
use std::path::Path;

/// The plain (not sweep) record of `step` at the shape the chapter shows: 4096³ when there is one,
/// else the largest square one, else any.
fn chapter_record(file: &ResultsFile, step: u8) -> Option<&StepRecord> {
    let mut plain: Vec<&StepRecord> = file.records.iter().filter(|r| r.step == step && !r.sweep).collect();
    plain.sort_by_key(|r| {
        (
            r.shape.m == 4096 && r.shape.n == 4096 && r.shape.k == 4096,
            r.shape.m * r.shape.n,
        )
    });
    plain.last().copied()
}

fn mb(bytes: f64) -> String {
    if bytes >= 1e9 {
        format!("{} GB", significant(bytes / 1e9, 3))
    } else {
        format!("{} MB", significant(bytes / 1e6, 3))
    }
}

fn count(x: f64) -> String {
    if x >= 1e9 {
        format!("{} G", significant(x / 1e9, 3))
    } else if x >= 1e6 {
        format!("{} M", significant(x / 1e6, 3))
    } else {
        significant(x, 3)
    }
}

fn pct(x: f64) -> String {
    format!("{}%", significant(x, 3))
}

/// Cycles, in millions with four significant digits, so that two kernels' compare at a glance.
fn cycles(x: f64) -> String {
    format!("{} M", significant(x / 1e6, 4))
}

/// What ncu's `--clock-control` meant for the counters.
fn clocks(clock_control: &str) -> String {
    match clock_control {
        "none" => "not locked (the GPU's own clocks)".into(),
        "base" => "locked to base".into(),
        other => format!("`--clock-control {other}`"),
    }
}

/// The rows of the evidence table: label, and how to read a value out of a record.
type Row = (&'static str, fn(&StepRecord, &Profile) -> Option<String>);

/// How many (block tile, K tile) pairs a step's Hopper kernel works through at the record's shape:
/// the unit the chapters count shared-memory traffic in. Steps 08–11 share one tile, 128 × 256 with
/// K tiles of 64; other steps have no such count here.
fn block_k_tiles(r: &StepRecord) -> Option<f64> {
    let (bm, bn, bk) = match r.step {
        8..=11 => (128usize, 256usize, 64usize),
        _ => return None,
    };
    let s = r.shape;
    Some((s.m.div_ceil(bm) * s.n.div_ceil(bn) * s.k.div_ceil(bk)) as f64)
}

fn ncu_value(p: &Profile, key: &str) -> Option<f64> {
    p.ncu.as_ref().and_then(|n| n.get(key))
}

const ROWS: &[Row] = &[
    ("evidence from", |_, p| {
        Some(match (&p.source, &p.ncu) {
            (ProfileSource::Ncu, Some(n)) => format!("Nsight Compute ({})", n.tool.replace("Version ", "")),
            _ => match &p.note {
                Some(note) => format!("computed only ({note})"),
                None => "computed only (not profiled)".into(),
            },
        })
    }),
    ("bytes A, B and C must move at least", |_, p| {
        Some(mb(p.computed.compulsory_bytes() as f64))
    }),
    ("DRAM bytes read + written", |_, p| {
        let (r, w) = (ncu_value(p, "dram_read_bytes")?, ncu_value(p, "dram_write_bytes")?);
        Some(format!(
            "{} ({}× the least)",
            mb(r + w),
            significant((r + w) / p.computed.compulsory_bytes().max(1) as f64, 3)
        ))
    }),
    ("DRAM throughput (% of peak)", |_, p| {
        ncu_value(p, "dram_throughput_pct").map(pct)
    }),
    ("L2 hit rate", |_, p| ncu_value(p, "l2_hit_rate_pct").map(pct)),
    ("L2 ↔ SM traffic (sectors × 32 B)", |_, p| {
        ncu_value(p, "l2_sectors").map(|s| format!("{} ({} sectors)", mb(32.0 * s), count(s)))
    }),
    ("flops per byte of L2 ↔ SM traffic", |_, p| {
        ncu_value(p, "l2_sectors").map(|s| significant(p.computed.flops / (32.0 * s), 3))
    }),
    ("L2 requests from the SMs", |_, p| {
        ncu_value(p, "l2_requests").map(count)
    }),
    ("L2 throughput (% of peak)", |_, p| {
        ncu_value(p, "l2_throughput_pct").map(pct)
    }),
    ("shared loads: wavefronts (of them bank conflicts)", |_, p| {
        let w = ncu_value(p, "smem_ld_wavefronts")?;
        Some(match ncu_value(p, "smem_ld_conflicts") {
            Some(c) => format!("{} ({})", count(w), count(c)),
            None => count(w),
        })
    }),
    ("shared stores: wavefronts (of them bank conflicts)", |_, p| {
        let w = ncu_value(p, "smem_st_wavefronts")?;
        Some(match ncu_value(p, "smem_st_conflicts") {
            Some(c) => format!("{} ({})", count(w), count(c)),
            None => count(w),
        })
    }),
    ("shared wavefronts per block and K tile (loads + stores)", |r, p| {
        let (ld, st) = (ncu_value(p, "smem_ld_wavefronts")?, ncu_value(p, "smem_st_wavefronts")?);
        Some(significant((ld + st) / block_k_tiles(r)?, 3))
    }),
    ("tensor pipe busy", |_, p| ncu_value(p, "tensor_pipe_pct").map(pct)),
    ("tensor pipe busy (% of elapsed cycles)", |_, p| {
        ncu_value(p, "tensor_pipe_elapsed_pct").map(pct)
    }),
    ("cycles elapsed (the slowest GPC's)", |_, p| {
        ncu_value(p, "cycles_elapsed").map(cycles)
    }),
    ("FMA pipe busy", |_, p| ncu_value(p, "fma_pipe_pct").map(pct)),
    ("issue slots busy", |_, p| ncu_value(p, "issue_busy_pct").map(pct)),
    ("occupancy: achieved (theoretical)", |_, p| {
        let theory = p.computed.theoretical_occupancy.map(|t| pct(100.0 * t));
        match (ncu_value(p, "achieved_occupancy_pct"), theory) {
            (Some(a), Some(t)) => Some(format!("{} ({t})", pct(a))),
            (Some(a), None) => Some(pct(a)),
            (None, Some(t)) => Some(format!("— ({t})")),
            (None, None) => None,
        }
    }),
    ("threads a block, blocks an SM", |_, p| {
        let c = &p.computed;
        if c.block_threads.is_none() && c.blocks_per_sm.is_none() {
            return None;
        }
        Some(format!(
            "{}, {}",
            c.block_threads.map_or("—".into(), |t| t.to_string()),
            c.blocks_per_sm.map_or("—".into(), |b| b.to_string())
        ))
    }),
    ("clusters that fit on the GPU (the driver's answer)", |_, p| {
        p.computed
            .clusters_fit
            .map(|f| format!("{} of {} blocks", f.clusters, f.cluster_blocks))
    }),
    ("registers a thread", |r, _| r.registers.map(|v| v.to_string())),
    ("local memory a thread (spills; 0 B: none)", |r, _| {
        r.local_bytes.map(|b| format!("{b} B"))
    }),
    ("top stall reasons (warps per issue)", |_, p| {
        let stalls = &p.ncu.as_ref()?.stalls;
        (!stalls.is_empty()).then(|| {
            stalls
                .iter()
                .take(3)
                .map(|s| format!("{} {}", s.reason.replace('_', " "), significant(s.per_issue, 2)))
                .collect::<Vec<_>>()
                .join(", ")
        })
    }),
    ("kernel time under ncu", |_, p| {
        ncu_value(p, "duration_ns").map(|ns| format!("{} ms", significant(ns / 1e6, 3)))
    }),
    ("clocks under ncu", |_, p| {
        p.ncu.as_ref().map(|n| clocks(n.clock_control()))
    }),
];

/// The cuBLAS column's header: the baseline its counters are of.
fn cublas_label(this: &StepRecord) -> &'static str {
    this.profile
        .as_ref()
        .map_or(Baseline::CublasBf16C, |p| p.cublas_baseline)
        .label()
}

/// What the cuBLAS column's GEMM ran on.
fn cublas_inputs(this: &StepRecord) -> &'static str {
    match this
        .profile
        .as_ref()
        .map_or(Baseline::CublasBf16C, |p| p.cublas_baseline)
    {
        Baseline::CublasBf16C => "bf16 inputs, bf16 C",
        Baseline::CublasF32C => "the exactly dequantized MXFP8 inputs, fp32 C, as the step writes",
    }
}

/// The cuBLAS column of a step's evidence table: the step's cuBLAS baseline's kernel as profiled beside the step's
/// (same shape, same ncu settings), as a record whose figures are only what ncu measured (the
/// step's registers, block size and clusters are not cuBLAS's).
fn cublas_column(this: &StepRecord) -> Option<StepRecord> {
    let counters = this.profile.as_ref()?.cublas_ncu.clone()?;
    let mut cublas = this.clone();
    cublas.step = 0;
    cublas.registers = None;
    cublas.local_bytes = None;
    cublas.profile = Some(Profile {
        source: ProfileSource::Ncu,
        note: None,
        // cuBLAS runs on bf16 operands (step 11's dequantized ones) and writes its baseline's C.
        computed: crate::evidence::computed_for_shape(
            this.shape,
            crate::run::registry::Format::Bf16,
            this.profile.as_ref()?.cublas_baseline.c_element_bytes(),
        ),
        ncu: Some(counters),
        cublas_ncu: None,
        cublas_baseline: crate::run::results::Baseline::CublasBf16C,
    });
    Some(cublas)
}

/// The command that records step `step`'s profile, of the sm80 twin when `sm80`.
fn profile_command(step: u8, sm80: bool) -> String {
    let twin = if sm80 { " --twin sm80" } else { "" };
    format!("`cargo run --release --bin step{step:02} --{twin} --profile`")
}

/// `{{#ladder-evidence stepNN}}` (`files`: the GPU's own kernels' records) and
/// `{{#ladder-evidence stepNN sm80}}` (`files`: the sm80 twins' view, `sm80`): per GPU, the step's
/// evidence beside its predecessor's.
pub fn evidence_table(files: &[ResultsFile], step: u8, sm80: bool) -> String {
    let hint = format!(
        "{} on a GPU records them (Nsight Compute's counters where `ncu` is installed)",
        profile_command(step, sm80)
    );
    let mut out = String::new();
    let previous = crate::run::steps::get(step).ok().and_then(|s| s.predecessor);
    let mut any = false;
    for file in files {
        let Some(this) = chapter_record(file, step) else {
            continue;
        };
        let before = previous.and_then(|p| chapter_record(file, p));
        // The step as it was before its kernel last changed, where that record was profiled.
        let earlier = file.superseded_by(this);
        let steps: Vec<&StepRecord> = before.into_iter().chain(earlier).chain(std::iter::once(this)).collect();
        if steps.iter().all(|r| r.profile.is_none()) {
            let _ = writeln!(out, "Not profiled yet on {}: {hint}.\n", file.device.name);
            continue;
        }
        any = true;
        let _ = writeln!(out, "Evidence on {}, {}:\n", file.device.name, this.shape);
        let mut header = String::from("| |");
        let mut rule = String::from("|---|");
        let mut marks = crate::book::Marks::default();
        for r in &steps {
            let name = match earlier {
                Some(e) if std::ptr::eq(e, *r) => format!("{} before (at {})", r.label(), r.git),
                _ => r.label(),
            };
            let label = marks.on(name, crate::run::provenance::of_record(r));
            let _ = write!(header, " {label} |");
            rule.push_str("---|");
        }
        let cublas = cublas_column(this);
        if cublas.is_some() {
            let _ = write!(header, " {} |", cublas_label(this));
            rule.push_str("---|");
        }
        let columns: Vec<&StepRecord> = steps.iter().copied().chain(cublas.as_ref()).collect();
        let _ = writeln!(out, "{header}\n{rule}");
        for (label, value) in ROWS {
            let cells: Vec<String> = columns
                .iter()
                .map(|r| match &r.profile {
                    Some(p) => value(r, p).unwrap_or_else(|| "—".into()),
                    None => "not profiled".into(),
                })
                .collect();
            if cells.iter().all(|c| c == "—" || c == "not profiled") {
                continue;
            }
            let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
        }
        out.push('\n');
        out.push_str(&marks.note());
        if let Some(counters) = cublas.as_ref().and_then(|r| r.profile.as_ref()?.ncu.as_ref()) {
            let _ = writeln!(
                out,
                "The {} column is {} at the same shape ({}), profiled with the same settings right after the step's kernel.\n",
                cublas_label(this),
                counters
                    .kernel
                    .as_deref()
                    .map_or("cuBLAS's kernel".to_string(), |k| format!("its kernel `{k}`")),
                cublas_inputs(this)
            );
        }
        if steps.iter().any(|r| r.profile.as_ref().is_none_or(|p| p.ncu.is_none())) {
            let _ = writeln!(
                out,
                "A column without counters has not been profiled under Nsight Compute: {hint}.\n"
            );
        }
    }
    if !any && out.is_empty() {
        let _ = writeln!(out, "Not profiled yet: nothing is recorded for step{step:02}; {hint}.");
    }
    out
}

/// `{{#ladder-timeline stepNN}}`: every recorded timeline of the step (one per GPU), or one sentence.
pub fn timeline_section(book_dir: Option<&Path>, step: u8, chapter: &Path) -> String {
    let not_yet = format!(
        "No timeline recorded yet: `cargo run --release --bin step{step:02} -- --timeline` on a Hopper GPU records one (the kernel built with timeline stamps, run once, drawn here).\n"
    );
    let Some(book_dir) = book_dir else {
        return not_yet;
    };
    let dir = crate::run::results::results_dir(book_dir).join("timelines");
    let prefix = format!("timeline-step{step:02}-");
    let mut traces: Vec<_> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".json"))
        })
        .collect();
    traces.sort();
    let up = "../".repeat(chapter.parent().map_or(0, |p| p.components().count()));
    let mut out = String::new();
    for trace in traces {
        let Some(s) = timeline::load_summary(&trace) else {
            continue;
        };
        let slug = crate::run::results::slug(&s.gpu);
        let name = trace.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if timeline::svg_path(book_dir, step, &slug).is_file() {
            let _ = writeln!(
                out,
                "![Timeline of step{step:02} on {}]({up}figures/timeline-step{step:02}-{slug}.svg)\n",
                s.gpu
            );
        }
        let consumer_time = if s.consumer_convert_share > 0.0 {
            s.consumer_time()
        } else {
            format!(
                "{:.0}% of their time between a stage's arrival and their MMAs' completion and {:.0}% in epilogues",
                100.0 * s.consumer_mma_share,
                100.0 * s.consumer_epilogue_share
            )
        };
        let _ = writeln!(
            out,
            "Recorded on {} at {}, {}: the stamped build took {} ms against the plain build's {} ms \
             ({:+.1}%, medians of {} alternating rounds), so {}; every time in \
             the tables comes from the plain build. {} stamps{}; the consumers drawn spend {}. The whole \
             trace of the drawn SMs is [{name}]({up}results/timelines/{name}) (open it at \
             [ui.perfetto.dev](https://ui.perfetto.dev)).\n",
            s.gpu,
            s.shape,
            s.date.get(..10).unwrap_or(&s.date),
            significant(s.instrumented_ms, 3),
            significant(s.plain_ms, 3),
            100.0 * s.overhead,
            s.runs,
            if s.overhead.abs() < 0.05 {
                "the stamps barely move what they show"
            } else {
                "the stamps move what they show: read the figure for its shape more than its lengths"
            },
            s.stamps,
            if s.dropped > 0 {
                format!(" ({} warpgroups ran out of room)", s.dropped)
            } else {
                String::new()
            },
            consumer_time,
        );
    }
    if out.is_empty() {
        not_yet
    } else {
        out
    }
}

/// `{{#ladder-l2}}`: the L2 level of the roofline, from the profiled records: flops per byte that
/// crossed between L2 and the SMs, and the rate it crossed at.
pub fn l2_roofline(files: &[ResultsFile]) -> String {
    let mut out = String::new();
    for file in files {
        let rows: Vec<(&StepRecord, f64, f64)> = file
            .records
            .iter()
            .filter(|r| !r.sweep)
            .filter_map(|r| {
                let p = r.profile.as_ref()?;
                let sectors = ncu_value(p, "l2_sectors")?;
                let ns = ncu_value(p, "duration_ns")?;
                Some((r, p.computed.flops / (32.0 * sectors), 32.0 * sectors / ns / 1e3))
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let mut settings: Vec<&str> = rows
            .iter()
            .filter_map(|(r, _, _)| Some(r.profile.as_ref()?.ncu.as_ref()?.clock_control()))
            .collect();
        settings.sort_unstable();
        settings.dedup();
        let clocks_were = match settings.as_slice() {
            ["base"] => "clocks locked to base",
            ["none"] | [] => "clocks not locked",
            _ => "some rows' clocks locked to base",
        };
        let _ = writeln!(
            out,
            "On {} (Nsight Compute, {clocks_were}):\n\n| step | shape | flops per byte L2 ↔ SM | L2 ↔ SM rate |\n|---|---|---|---|",
            file.device.name
        );
        for (r, intensity, tbs) in rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} TB/s |",
                r.label(),
                r.shape,
                significant(intensity, 3),
                significant(tbs, 3)
            );
        }
        out.push('\n');
    }
    if out.is_empty() {
        "No step has been profiled yet, so the L2 line has no measured points: `cargo run --release --bin ladder -- --profile` records them.\n".into()
    } else {
        out
    }
}

/// One quantity of a record's evidence, for the inline directives: its value and how it prints.
/// `l2_bytes` (L2 ↔ SM traffic), `flops_per_l2_byte`, `dram_bytes` (read + written), or any key of
/// Nsight Compute's values ([`crate::evidence::QUANTITIES`]; `…_pct` print as percentages).
fn evidence_quantity(r: &StepRecord, key: &str) -> Option<(f64, String)> {
    let p = r.profile.as_ref()?;
    let value = match key {
        "l2_bytes" => return ncu_value(p, "l2_sectors").map(|s| (32.0 * s, mb(32.0 * s))),
        "flops_per_l2_byte" => {
            let f = p.computed.flops / (32.0 * ncu_value(p, "l2_sectors")?);
            return Some((f, significant(f, 3)));
        }
        "dram_bytes" => {
            let b = ncu_value(p, "dram_read_bytes")? + ncu_value(p, "dram_write_bytes")?;
            return Some((b, mb(b)));
        }
        _ => ncu_value(p, key)?,
    };
    Some((
        value,
        if key.ends_with("_pct") {
            pct(value)
        } else {
            count(value)
        },
    ))
}

/// Whether `key` names a quantity [`evidence_quantity`] knows.
fn is_evidence_key(key: &str) -> bool {
    matches!(key, "l2_bytes" | "flops_per_l2_byte" | "dram_bytes")
        || crate::evidence::QUANTITIES.iter().any(|q| q.key == key)
}

/// `{{#ladder-evidence-value stepNN KEY [sm80]}}`: one quantity of the chapter's record (of the sm80
/// twin's view when `sm80`), inline, per GPU. `None` for an unknown key.
pub fn evidence_value(files: &[ResultsFile], step: u8, key: &str, sm80: bool) -> Option<String> {
    if !is_evidence_key(key) {
        return None;
    }
    let parts: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let (_, text) = evidence_quantity(chapter_record(file, step)?, key)?;
            Some(if files.len() > 1 {
                format!("{text} on the {}", file.device.name)
            } else {
                text
            })
        })
        .collect();
    Some(if parts.is_empty() {
        format!("(not profiled yet: {} records it)", profile_command(step, sm80))
    } else {
        parts.join(", ")
    })
}

/// `{{#ladder-evidence-delta stepNN KEY [sm80]}}`: one quantity of the step's predecessor and of the
/// step (of the sm80 twin's view when `sm80`), and the change, inline, per GPU:
/// `1.83 GB → 1.61 GB (−12 %)`. `None` for an unknown key.
pub fn evidence_delta(files: &[ResultsFile], step: u8, key: &str, sm80: bool) -> Option<String> {
    if !is_evidence_key(key) {
        return None;
    }
    let previous = crate::run::steps::get(step).ok().and_then(|s| s.predecessor)?;
    let parts: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let (a, a_text) = evidence_quantity(chapter_record(file, previous)?, key)?;
            let (b, b_text) = evidence_quantity(chapter_record(file, step)?, key)?;
            // A share (a percentage) reads better as its two values than as a change of a change.
            let change = if a != 0.0 && !key.ends_with("_pct") {
                format!(" ({:+.0} %)", 100.0 * (b / a - 1.0)).replace('-', "−")
            } else {
                String::new()
            };
            let on = if files.len() > 1 {
                format!(" on the {}", file.device.name)
            } else {
                String::new()
            };
            Some(format!("{a_text} → {b_text}{change}{on}"))
        })
        .collect();
    Some(if parts.is_empty() {
        let twin = if sm80 { "--twin sm80 --profile" } else { "--profile" };
        format!("(not profiled yet for step{previous:02} and step{step:02}: `{twin}` records it)")
    } else {
        parts.join(", ")
    })
}

/// `{{#ladder-timeline-share stepNN PART}}`: the share of their time the drawn consumers of the
/// step's recorded timeline spent in `PART` (`epilogue`, `mma`, `convert`, `mma_wait`, `stage_wait`,
/// `barrier`), per GPU, inline. `None` for an unknown part.
pub fn timeline_share(book_dir: Option<&Path>, step: u8, part: &str) -> Option<String> {
    let pick = |s: &timeline::Summary| match part {
        "epilogue" => s.consumer_epilogue_share,
        "mma" => s.consumer_mma_share,
        "convert" => s.consumer_convert_share,
        "mma_wait" => s.consumer_mma_wait_share,
        "stage_wait" => s.consumer_stage_wait_share,
        _ => s.consumer_barrier_share,
    };
    if !["epilogue", "mma", "convert", "mma_wait", "stage_wait", "barrier"].contains(&part) {
        return None;
    }
    let dir = book_dir.map(|b| crate::run::results::results_dir(b).join("timelines"));
    let mut traces: Vec<_> = dir
        .iter()
        .flat_map(std::fs::read_dir)
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("timeline-step{step:02}-")) && n.ends_with(".json"))
        })
        .collect();
    traces.sort();
    let summaries: Vec<timeline::Summary> = traces.iter().filter_map(|t| timeline::load_summary(t)).collect();
    let mut parts = Vec::new();
    for s in &summaries {
        let share = pick(s);
        parts.push(if summaries.len() > 1 {
            format!("{:.1} % on the {}", 100.0 * share, s.gpu)
        } else {
            format!("{:.1} %", 100.0 * share)
        });
    }
    if parts.is_empty() {
        return Some(format!(
            "(no timeline of step{step:02} recorded yet: `cargo run --release --bin step{step:02} -- --timeline` records one)"
        ));
    }
    Some(parts.join(", "))
}

/// `{{#ladder-clusters stepNN}}`: how many clusters of the step's kernel fit on each GPU at once, as
/// the driver answered with the chapter's run; for a record without the answer (made before it was
/// kept), the count an SM per block and two blocks a cluster would give, said to be that.
pub fn clusters_text(files: &[ResultsFile], step: u8) -> String {
    let parts: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let r = chapter_record(file, step)?;
            let fit = r.profile.as_ref().and_then(|p| p.computed.clusters_fit);
            Some(match fit {
                Some(f) => format!(
                    "{} clusters on the {} (the driver's answer, recorded with the run)",
                    f.clusters, file.device.name
                ),
                None => format!(
                    "{} clusters on the {} if every group of SMs has an even count ({} SMs, two to a cluster; this record predates keeping the driver's answer)",
                    file.device.sms / 2,
                    file.device.name,
                    file.device.sms
                ),
            })
        })
        .collect();
    if parts.is_empty() {
        format!("as many clusters as the driver answers (nothing is recorded for step{step:02} yet)")
    } else {
        parts.join("; ")
    }
}

/// `{{#ladder-quoted}}`: every quoted number, with its source.
pub fn quoted_table() -> String {
    let mut out = String::from(
        "| figure | what | measures | GPU, shape | TFLOPS | our rung | source |\n|---|---|---|---|---|---|---|\n",
    );
    for q in QUOTED {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {}, {} | {}{} | {} | {} |",
            q.id,
            q.what,
            q.measures,
            q.gpu,
            q.shape,
            q.tflops,
            q.derived.map_or(String::new(), |d| format!(" (derived: {d})")),
            q.step.map_or("—".into(), |s| format!("step{s:02}")),
            q.source.title
        );
    }
    out
}

/// `{{#ladder-quote ID}}`: `1476 TFLOPS`.
pub fn quote(id: &str) -> Option<String> {
    quoted::get(id).map(|q| format!("{} TFLOPS", q.tflops))
}

/// `{{#ladder-sources}}`: the texts the ladder follows, with their authors, addresses and steps.
pub fn sources_list() -> String {
    let mut out = String::new();
    let mut seen: Vec<&str> = Vec::new();
    for s in SOURCES {
        if seen.contains(&s.title) {
            continue;
        }
        seen.push(s.title);
        let several = s.steps.contains(',') || s.steps.contains(" to ");
        let _ = writeln!(
            out,
            "- **{}** — {}. <{}> {} {}.",
            s.title,
            s.authors,
            s.address,
            if several { "Steps" } else { "Step" },
            s.steps
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{computed_for_shape, NcuCounters, Stall};
    use crate::run::results::tests::{device, record_of};
    use std::collections::BTreeMap;

    fn profiled(step: u8, name: &str, ncu: bool) -> StepRecord {
        let mut r = record_of(step, name, 4096, 0.3);
        let computed = computed_for_shape(r.shape, r.format(), r.format().c_element_bytes());
        let counters = ncu.then(|| NcuCounters {
            stalls: vec![Stall {
                reason: "long_scoreboard".into(),
                per_issue: 3.5,
            }],
            ..counters_of(&[
                ("dram_read_bytes", 150e6),
                ("dram_write_bytes", 33.5e6),
                ("l2_hit_rate_pct", 86.25),
                ("l2_sectors", 67_108_864.0),
                ("duration_ns", 230_000.0),
                ("tensor_pipe_pct", 62.5),
                ("smem_ld_wavefronts", 2.0e6),
                ("smem_ld_conflicts", 0.0),
            ])
        });
        r.profile = Some(Profile {
            source: if ncu {
                ProfileSource::Ncu
            } else {
                ProfileSource::Computed
            },
            note: (!ncu).then(|| "ncu not found".into()),
            computed,
            ncu: counters,
            cublas_ncu: None,
            cublas_baseline: Baseline::CublasBf16C,
        });
        r
    }

    /// A step whose kernel changed keeps its last profiled record: merging the new record moves the
    /// old one aside, and the evidence table shows it between the predecessor and the step now.
    #[test]
    fn evidence_tables_show_the_step_before_its_kernel_changed() {
        let mut file = ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![profiled(10, "persistent", true)],
            superseded: Vec::new(),
        };
        let mut old = profiled(11, "mxfp8", true);
        old.git = "e47ae65cb4".into();
        old.source_hash = Some("fnv1a64:old".into());
        file.merge(std::slice::from_ref(&old));
        // The same kernel again replaces it without keeping it.
        file.merge(std::slice::from_ref(&old));
        assert!(file.superseded.is_empty());
        let mut new = profiled(11, "mxfp8", true);
        new.source_hash = Some("fnv1a64:new".into());
        file.merge(std::slice::from_ref(&new));
        assert_eq!(file.superseded.len(), 1);
        let text = evidence_table(std::slice::from_ref(&file), 11, false);
        // (Both step-11 columns carry the mark of a source other than the one shown: made-up hashes.)
        assert!(
            text.contains("| | 10 persistent | 11 mxfp8 before (at e47ae65cb4) † | 11 mxfp8 † |"),
            "{text}"
        );
        // An unprofiled record replaced is not kept: nothing to show.
        let mut unprofiled = profiled(11, "mxfp8", false);
        unprofiled.source_hash = Some("fnv1a64:third".into());
        let mut bare = ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![unprofiled],
            superseded: Vec::new(),
        };
        bare.merge(std::slice::from_ref(&new));
        assert!(bare.superseded.is_empty());
    }

    #[test]
    fn evidence_tables_show_the_step_beside_its_predecessor() {
        let file = ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![profiled(4, "tma_mma", false), profiled(5, "swizzle128", true)],
            superseded: Vec::new(),
        };
        let text = evidence_table(std::slice::from_ref(&file), 5, false);
        assert!(text.contains("| | 04 tma_mma | 05 swizzle128 |"), "{text}");
        assert!(text.contains("computed only (ncu not found)"), "{text}");
        assert!(text.contains("Nsight Compute (2025.3.1.0)"), "{text}");
        assert!(text.contains("| L2 hit rate | — | 86.2% |"), "{text}");
        assert!(text.contains("2.15 GB (67.1 M sectors)"), "{text}");
        assert!(text.contains("long scoreboard 3.5"), "{text}");
        assert!(text.contains("without counters"), "{text}");
        // Flops per L2 byte: 2·4096³ / 2.15 GB = 64.
        assert!(
            text.contains("| flops per byte of L2 ↔ SM traffic | — | 64.0 |"),
            "{text}"
        );
        // A step with no profile at all, and one not recorded.
        let mut bare = file.clone();
        for r in &mut bare.records {
            r.profile = None;
        }
        assert!(evidence_table(&[bare], 5, false).starts_with("Not profiled yet on NVIDIA H200"));
        assert!(
            evidence_table(std::slice::from_ref(&file), 9, false).starts_with("Not profiled yet: nothing is recorded")
        );
        let l2 = l2_roofline(&[file]);
        assert!(
            l2.contains("| 05 swizzle128 | 4096x4096x4096 | 64.0 | 9.34 TB/s |"),
            "{l2}"
        );
        assert!(l2_roofline(&[]).starts_with("No step has been profiled yet"));
    }

    /// Counters with these values, as ncu 2025.3 reports them, no stalls, no kernel name or clock setting.
    fn counters_of(values: &[(&str, f64)]) -> NcuCounters {
        let values: BTreeMap<String, f64> = values.iter().map(|&(k, v)| (k.to_string(), v)).collect();
        NcuCounters {
            tool: "Version 2025.3.1.0".into(),
            metrics: values.keys().map(|k| (k.clone(), "x.sum".into())).collect(),
            values,
            stalls: Vec::new(),
            kernel: None,
            clock_control: None,
            kernel_file: None,
        }
    }

    /// cuBLAS bf16's counters as `--profile` records them beside a step's, clocks locked to base.
    fn cublas_counters() -> NcuCounters {
        NcuCounters {
            kernel: Some("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN".into()),
            clock_control: Some("base".into()),
            ..counters_of(&[
                ("cycles_elapsed", 248_512.0),
                ("tensor_pipe_elapsed_pct", 71.5),
                ("duration_ns", 225_000.0),
                ("l2_hit_rate_pct", 90.0),
            ])
        }
    }

    #[test]
    fn the_evidence_table_shows_cycles_and_tensor_pipe_beside_cublas_once_profiled() {
        let mut step10 = profiled(10, "persistent", true);
        {
            let ncu = step10.profile.as_mut().unwrap().ncu.as_mut().unwrap();
            ncu.values.insert("cycles_elapsed".into(), 262_144.0);
            ncu.values.insert("tensor_pipe_elapsed_pct".into(), 66.0);
            ncu.clock_control = Some("base".into());
        }
        let computed = &mut step10.profile.as_mut().unwrap().computed;
        (computed.block_threads, computed.blocks_per_sm) = (Some(384), Some(1));
        let mut file = ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![profiled(9, "epilogue_double_buffer", true), step10],
            superseded: Vec::new(),
        };
        // Without cuBLAS's profile (a record from before it): the two steps, no cuBLAS column.
        let before = evidence_table(std::slice::from_ref(&file), 10, false);
        assert!(!before.contains("cuBLAS"), "{before}");
        assert!(
            before.contains("| cycles elapsed (the slowest GPC's) | — | 0.2621 M |"),
            "{before}"
        );
        assert!(
            before.contains("| clocks under ncu | not locked (the GPU's own clocks) | locked to base |"),
            "{before}"
        );
        // With it: a third column, only what ncu measured (no registers, block size or clusters).
        file.records[1].profile.as_mut().unwrap().cublas_ncu = Some(cublas_counters());
        let text = evidence_table(std::slice::from_ref(&file), 10, false);
        assert!(
            text.contains("| | 09 epilogue_double_buffer | 10 persistent | cuBLAS (bf16 C) |"),
            "{text}"
        );
        assert!(
            text.contains("| cycles elapsed (the slowest GPC's) | — | 0.2621 M | 0.2485 M |"),
            "{text}"
        );
        assert!(
            text.contains("| tensor pipe busy (% of elapsed cycles) | — | 66.0% | 71.5% |"),
            "{text}"
        );
        assert!(
            text.contains("| clocks under ncu | not locked (the GPU's own clocks) | locked to base | locked to base |"),
            "{text}"
        );
        assert!(
            text.contains("| threads a block, blocks an SM | — | 384, 1 | — |"),
            "{text}"
        );
        assert!(
            text.contains("its kernel `nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN`"),
            "{text}"
        );
        // Every row has one cell per column.
        for line in text.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| |")) {
            assert_eq!(line.matches(" | ").count(), 3, "{line}");
        }
        // A record whose cuBLAS was the fp32-C one on the dequantized inputs (an MXFP8 step's) says so.
        file.records[1].profile.as_mut().unwrap().cublas_baseline = Baseline::CublasF32C;
        let text = evidence_table(std::slice::from_ref(&file), 10, false);
        assert!(text.contains("| 10 persistent | cuBLAS (fp32 C) |"), "{text}");
        assert!(
            text.contains("The cuBLAS (fp32 C) column is") && text.contains("dequantized MXFP8 inputs, fp32 C"),
            "{text}"
        );
    }

    #[test]
    fn timelines_are_shown_once_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let empty = timeline_section(Some(dir.path()), 8, Path::new("step08-pipeline.md"));
        assert!(empty.starts_with("No timeline recorded yet"), "{empty}");
        assert!(timeline_section(None, 8, Path::new("x.md")).starts_with("No timeline"));
        let summary = timeline::tests::summary(vec![0, 1]);
        let trace = timeline::trace_path(dir.path(), 8, "nvidia-h200");
        let value = serde_json::json!({"traceEvents": [], "otherData": summary});
        crate::run::results::write_file_atomically(&trace, &value.to_string()).unwrap();
        let text = timeline_section(Some(dir.path()), 8, Path::new("step08-pipeline.md"));
        assert!(
            text.contains("+5.0%") && text.contains("(results/timelines/timeline-step08-nvidia-h200.json)"),
            "{text}"
        );
        assert!(!text.contains("!["), "no figure drawn, no image: {text}");
        crate::run::results::write_file_atomically(&timeline::svg_path(dir.path(), 8, "nvidia-h200"), "<svg/>")
            .unwrap();
        let text = timeline_section(Some(dir.path()), 8, Path::new("step08-pipeline.md"));
        assert!(text.contains("](figures/timeline-step08-nvidia-h200.svg)"), "{text}");
        assert!(timeline_section(Some(dir.path()), 9, Path::new("x.md")).starts_with("No timeline"));
    }

    #[test]
    fn the_cluster_count_is_the_driver_s_answer_once_recorded() {
        let mut d = device("NVIDIA H200");
        d.sms = 132;
        let mut file = ResultsFile {
            device: d,
            records: vec![profiled(10, "persistent", false)],
            superseded: Vec::new(),
        };
        let before = clusters_text(std::slice::from_ref(&file), 10);
        assert!(
            before.contains("66 clusters") && before.contains("predates"),
            "{before}"
        );
        file.records[0].profile.as_mut().unwrap().computed.clusters_fit = Some(crate::evidence::ClustersFit {
            cluster_blocks: 2,
            clusters: 64,
        });
        let after = clusters_text(std::slice::from_ref(&file), 10);
        assert!(
            after.contains("64 clusters") && after.contains("driver's answer"),
            "{after}"
        );
        let table = evidence_table(std::slice::from_ref(&file), 10, false);
        assert!(
            table.contains("| clusters that fit on the GPU (the driver's answer) | 64 of 2 blocks |"),
            "{table}"
        );
        assert!(clusters_text(&[], 10).contains("nothing is recorded"));
    }

    #[test]
    fn timeline_shares_read_inline_from_the_committed_traces() {
        let book = Path::new(env!("CARGO_MANIFEST_DIR")).join("book");
        let share = timeline_share(Some(&book), 8, "epilogue").unwrap();
        assert!(share.ends_with(" %") || share.contains("no timeline"), "{share}");
        assert!(timeline_share(Some(&book), 8, "lunch").is_none());
        assert!(timeline_share(None, 8, "mma")
            .unwrap()
            .contains("no timeline of step08"));
    }

    #[test]
    fn evidence_reads_inline_with_its_change() {
        let file = ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![profiled(6, "tma_store", true), profiled(7, "multicast", true)],
            superseded: Vec::new(),
        };
        let mut files = vec![file];
        files[0].records[1]
            .profile
            .as_mut()
            .unwrap()
            .ncu
            .as_mut()
            .unwrap()
            .values
            .insert("l2_sectors".into(), 0.75 * 67_108_864.0);
        let delta = evidence_delta(&files, 7, "l2_bytes", false).unwrap();
        assert!(delta.contains("2.15 GB → 1.61 GB (−25 %)"), "{delta}");
        assert_eq!(
            evidence_value(&files, 7, "tensor_pipe_pct", false).as_deref(),
            Some("62.5%")
        );
        assert!(evidence_value(&files, 7, "no_such_key", false).is_none());
        assert!(evidence_value(&files, 9, "l2_bytes", false)
            .unwrap()
            .contains("not profiled"));
    }

    /// Each directive reads the record of its own twin. The results file stores a step's sm80 twin
    /// after its Hopper record at the same shape; the Hopper chapter's evidence must still be the
    /// Hopper kernel's, and an sm80 section's the twin's, with its predecessor of the same family
    /// (step 03's shared kernel before step 04's twin). A twin's profile made before the profiling
    /// child knew its twin is not shown as the twin's.
    #[test]
    fn every_evidence_directive_reads_the_record_of_its_own_twin() {
        let with_wavefronts = |step: u8, name: &str, kernel: &str, wavefronts: f64, ran: Option<&str>| {
            let mut r = profiled(step, name, true);
            r.kernel = kernel.into();
            let ncu = r.profile.as_mut().unwrap().ncu.as_mut().unwrap();
            ncu.values.insert("smem_ld_wavefronts".into(), wavefronts);
            ncu.kernel_file = ran.map(str::to_string);
            r
        };
        let hopper5 = "steps/step05_swizzle128/sm90.cu";
        let sm80_5 = "steps/step05_swizzle128/sm80.cu";
        let sm80_4 = "steps/step04_tma_mma/sm80.cu";
        let file = ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![
                with_wavefronts(
                    3,
                    "register_tiling",
                    "steps/step03_register_tiling/kernel.cu",
                    3.0e6,
                    None,
                ),
                with_wavefronts(4, "tma_mma", "steps/step04_tma_mma/sm90.cu", 0.0, None),
                // Profiled before the child knew its twin: the Hopper kernel's counters.
                with_wavefronts(4, "tma_mma", sm80_4, 0.0, None),
                with_wavefronts(5, "swizzle128", hopper5, 0.0, None),
                with_wavefronts(5, "swizzle128", sm80_5, 7.0e6, Some(sm80_5)),
            ],
            superseded: Vec::new(),
        };
        let pass = crate::book::LadderResults::new(vec![file]);
        let expand = |text: &str| pass.expand(text, Path::new("step05.md")).unwrap();
        assert_eq!(expand("{{#ladder-evidence-value step05 smem_ld_wavefronts}}"), "0");
        assert_eq!(
            expand("{{#ladder-evidence-value step05 smem_ld_wavefronts sm80}}"),
            "7.00 M"
        );
        assert_eq!(expand("{{#ladder-evidence-delta step05 smem_ld_wavefronts}}"), "0 → 0");
        let hopper = expand("{{#ladder-evidence step05}}");
        assert!(hopper.contains("04 tma_mma") && !hopper.contains("7 M"), "{hopper}");
        let twin = expand("{{#ladder-evidence step05 sm80}}");
        assert!(twin.contains("| 7.00 M (0) |"), "{twin}");
        // Step 04's twin: its predecessor is step 03's one kernel; its own old profile is not shown.
        let twin4 = expand("{{#ladder-evidence step04 sm80}}");
        assert!(
            twin4.contains("03 register_tiling") && twin4.contains("| 3.00 M (0) |"),
            "{twin4}"
        );
        assert!(
            twin4.contains("before the profiling child was told its twin"),
            "{twin4}"
        );
        assert!(
            expand("{{#ladder-evidence-value step04 smem_ld_wavefronts sm80}}").contains("--twin sm80 --profile"),
            "the twin's value is not shown"
        );
        assert!(pass
            .expand(
                "{{#ladder-evidence-value step05 smem_ld_wavefronts hopper}}",
                Path::new("x.md")
            )
            .is_err());
    }

    #[test]
    fn quoted_numbers_and_sources_render() {
        let table = quoted_table();
        assert_eq!(table.lines().count(), QUOTED.len() + 2);
        assert!(table.contains("| `gau-v6` |") && table.contains("1475.93"));
        assert_eq!(quote("modular-k2").as_deref(), Some("155 TFLOPS"));
        assert_eq!(quote("nope"), None);
        let sources = sources_list();
        assert!(sources.contains("tcgen05 for dummies") && sources.contains("https://gau-nernst.github.io/tcgen05/"));
    }
}
