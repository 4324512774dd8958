//! The tables the `ladder-results` pass puts in place of its directives: the ladder (all records or one
//! step's, with its checks), the size sweep and what each sweep shape's launch chose, an MXFP8 step's
//! baselines, and a step's alternatives.

use super::cells::*;
use super::{sweep_hint, RECORD_HINT};
use crate::run::provenance;
use crate::run::registry::Baseline;
use crate::run::results::{significant, ResultsFile, StepRecord};
use std::fmt::Write as _;

/// The results table as Markdown: every record of every file (`step = None`), or one step's records
/// followed by its verification checks. Sweep records are left out: [`sweep_table`] shows them.
pub fn table(files: &[ResultsFile], step: Option<u8>) -> String {
    table_of(files, step, false)
}

/// One step's sm80 twin records (`{{#ladder-table stepNN sm80}}`, from the files' sm80 records only),
/// as [`table`] shows a step's, with two more columns: the twin over the `mma.sync` ceiling fed by
/// ldmatrix, timed beside it in the same process, and the two ceilings themselves.
pub fn twin_table(files: &[ResultsFile], step: u8) -> String {
    table_of(files, Some(step), true)
}

fn table_of(files: &[ResultsFile], step: Option<u8>, sm80: bool) -> String {
    let shown = |r: &StepRecord| !r.sweep && step.is_none_or(|s| r.step == s);
    let rows: Vec<(&ResultsFile, &StepRecord)> = files
        .iter()
        .flat_map(|f| f.records.iter().map(move |r| (f, r)))
        .filter(|(_, r)| shown(r))
        .collect();
    if rows.is_empty() {
        return match step {
            None => format!("Nothing has been recorded on a GPU yet: {RECORD_HINT} records it here.\n"),
            Some(s) if sm80 => format!(
                "Step {s:02}'s sm80 twin has not been recorded on a GPU yet: `cargo run --release --bin step{s:02} -- --twin sm80` on any NVIDIA GPU of compute capability 8.0 or newer records it here.\n"
            ),
            Some(s) => format!(
                "Step {s:02} has not been recorded on a GPU yet: `cargo run --release --bin step{s:02}` on a machine with an NVIDIA GPU records it here.\n"
            ),
        };
    }

    // The GPU is a column only when rows come from more than one; otherwise the caption names it.
    let gpus = files
        .iter()
        .filter(|f| rows.iter().any(|(g, _)| std::ptr::eq(*g, *f)))
        .count();
    let (ratio_header, column) = headline_header(rows.iter().map(|(_, r)| *r));
    let mut header = if gpus > 1 { vec!["GPU"] } else { Vec::new() };
    if step.is_none() {
        header.push("step");
    }
    header.extend([
        "shape",
        "arch",
        "median ms",
        "TFLOPS",
        ratio_header.as_str(),
        "× cuBLAS SGEMM",
    ]);
    if sm80 {
        header.extend(["× mma.sync ceiling", "ceiling TFLOPS: ldmatrix, registers"]);
    }
    header.extend([
        "rel. error vs previous",
        "rel. error vs cuBLAS",
        "registers",
        "shared memory",
    ]);
    let numeric_from = header.iter().position(|h| *h == "median ms").unwrap_or(header.len());
    let mut out = String::new();
    if gpus == 1 {
        let _ = writeln!(out, "On the {}:\n", rows[0].0.device.name);
    }
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let align: Vec<&str> = (0..header.len())
        .map(|i| if i >= numeric_from { "---:" } else { ":---" })
        .collect();
    let _ = writeln!(out, "|{}|", align.join("|"));
    let mut marks = Marks::default();
    for (file, r) in &rows {
        let mut cells = if gpus > 1 {
            vec![file.device.name.clone()]
        } else {
            Vec::new()
        };
        if step.is_none() {
            cells.push(r.label());
        }
        cells.extend([
            marks.on(shape_text(r), provenance::of_record(r)),
            r.arch.clone(),
            significant(r.time.median_ms, 3),
            significant(r.time.tflops, 3),
            headline_ratio_text(r, column),
            ratio_text(r.ratio_sgemm),
        ]);
        if sm80 {
            let ceiling = r.mma_sync_ceiling.as_ref();
            cells.extend([
                ratio_text(r.ceiling_ratio()),
                ceiling.map_or_else(String::new, |c| {
                    format!(
                        "{}, {}",
                        significant(c.ldmatrix.tflops, 3),
                        significant(c.registers.tflops, 3)
                    )
                }),
            ]);
        }
        cells.extend([
            check_text(r, false),
            check_text(r, true),
            registers_text(r),
            smem_text(r),
        ]);
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
    out.push_str(&marks.note());
    if rows.iter().any(|(_, r)| r.headline().baseline == Baseline::CublasF32C) {
        out.push_str(
            "An MXFP8 step writes fp32 C: its ratio is to cuBLAS writing fp32 C too, on the exactly \
             dequantized operands (like for like), as every other row compares bf16 C with bf16 C; the \
             step's table of baselines gives cuBLAS with bf16 C beside it.\n\n",
        );
    }
    out.push_str(
        "× cuBLAS is this kernel's TFLOPS over cuBLAS's, timed in the same process on the same inputs \
         (1 = as fast); from the alternating records on, in one loop that launched the kernel and cuBLAS \
         in turn, so that both ran at the same clocks. A relative error is ‖C − C_ref‖_F / ‖C_ref‖_F, \
         against the reference in brackets.\n\n",
    );
    if sm80 {
        out.push_str(
            "× mma.sync ceiling is the twin's TFLOPS over the rate of its own inner loop with nothing around \
             it: `mma.sync` fed by `ldmatrix` from shared memory, eight warps of 64×64 per SM \
             (`shared/run/mma_sync_ceiling.cu`), timed as one more contender in the twin's own alternating \
             loop, beside the twin and cuBLAS, so that all three ran at the same clocks. The registers \
             ceiling is `mma.sync` alone, operands in registers, timed in the same loop.",
        );
        let ceilings = rows.iter().filter_map(|(_, r)| r.mma_sync_ceiling.as_ref());
        if ceilings.clone().any(|c| !c.in_step_loop) {
            out.push_str(
                " A record made before the ceilings joined the twin's loop timed them in a loop of their \
                 own, with cuBLAS: its ratio is (twin / cuBLAS) ÷ (ceiling / cuBLAS), each over its own \
                 loop's cuBLAS.",
            );
        }
        out.push_str("\n\n");
    }
    for file in files.iter().filter(|f| rows.iter().any(|(g, _)| std::ptr::eq(*g, *f))) {
        let _ = writeln!(out, "{}\n", device_text(file, shown));
    }
    if let Some(s) = step {
        let _ = writeln!(out, "Timing of every recorded run of step {s:02}:\n");
        for (file, r) in &rows {
            let _ = writeln!(
                out,
                "- {}, {}: {}",
                file.device.name,
                shape_text(r),
                timing_text(r, &file.device)
            );
        }
        out.push('\n');
        let _ = writeln!(out, "Verification of every recorded run of step {s:02}:\n");
        for (file, r) in &rows {
            for c in &r.checks {
                let verdict = if c.passed {
                    "passed".to_string()
                } else {
                    format!(
                        "**failed**{}",
                        c.first_failure.as_ref().map(|f| format!(" ({f})")).unwrap_or_default()
                    )
                };
                let _ = writeln!(
                    out,
                    "- {}, {}, seed {}, against {}: relative Frobenius error {} (bound {}), max |error| {} (elementwise bound `{}`) over {} elements: {verdict}.",
                    file.device.name,
                    shape_text(r),
                    r.seed,
                    c.against,
                    error_text(c.rel_fro, 2),
                    error_text(c.rel_fro_bound, 1),
                    significant(c.max_abs, 3),
                    c.elementwise_bound.replace('`', "'"),
                    c.compared,
                );
            }
        }
        let _ = writeln!(out, "\nTo repeat a run exactly: `{}`.", rerun_command(rows[0].1));
    }
    out
}

/// The size sweep as Markdown: one row per sweep record, by GPU, then step, then shape in the sweep's
/// order; then what the ratio means, the devices, and how to repeat each sweep.
pub fn sweep_table(files: &[ResultsFile]) -> String {
    let mut rows: Vec<(&ResultsFile, &StepRecord)> = Vec::new();
    for file in files {
        let mut swept: Vec<&StepRecord> = file.records.iter().filter(|r| r.is_fixed_sweep()).collect();
        let order = crate::run::sweep::axis_order(swept.iter().map(|r| r.shape));
        swept.sort_by_key(|r| (r.step, order.iter().position(|s| *s == r.shape)));
        rows.extend(swept.into_iter().map(|r| (file, r)));
    }
    if rows.is_empty() {
        return format!(
            "No size sweep has been recorded yet: {} records one here.\n",
            sweep_hint()
        );
    }
    let (ratio_header, column) = headline_header(rows.iter().map(|(_, r)| *r));
    let cublas_header = format!("{} TFLOPS", column.label());
    let header = [
        "GPU",
        "step",
        "shape",
        "median ms",
        "TFLOPS",
        cublas_header.as_str(),
        ratio_header.as_str(),
        "SM clock, MHz",
        "rel. error vs previous",
        "rel. error vs cuBLAS",
    ];
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let align: Vec<&str> = (0..header.len())
        .map(|i| if i >= 3 { "---:" } else { ":---" })
        .collect();
    let _ = writeln!(out, "|{}|", align.join("|"));
    let mut marks = Marks::default();
    for (file, r) in &rows {
        let cells = [
            file.device.name.clone(),
            r.label(),
            marks.on(shape_text(r), provenance::of_record(r)),
            significant(r.time.median_ms, 3),
            significant(r.time.tflops, 3),
            headline_ratio_of(r, r.headline().cublas.tflops, column),
            headline_ratio_text(r, column),
            r.clocks
                .as_ref()
                .map_or_else(|| "—".into(), |c| c.sm_mhz_median.to_string()),
            check_text(r, false),
            check_text(r, true),
        ];
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
    out.push_str(&marks.note());
    out.push_str(
        "At every shape the step was first verified, against the previous step and against cuBLAS on the \
         same inputs, then timed in one loop with cuBLAS, the two launched in turn; × cuBLAS is the ratio \
         of the two medians from that loop (above 1: the step is faster). The SM clock is NVML's median while \
         that loop ran.\n\n",
    );
    for file in files.iter().filter(|f| rows.iter().any(|(g, _)| std::ptr::eq(*g, *f))) {
        let _ = writeln!(out, "{}\n", device_text(file, |r| r.is_fixed_sweep()));
    }
    let mut repeat = Vec::new();
    for (file, r) in &rows {
        let same_step: Vec<u64> = rows
            .iter()
            .filter(|(g, q)| std::ptr::eq(*g, *file) && q.step == r.step)
            .map(|(_, q)| q.seed)
            .collect();
        let seed = if same_step.iter().all(|s| *s == same_step[0]) {
            format!(" --seed {}", same_step[0])
        } else {
            String::new()
        };
        let line = format!(
            "- {}, {}: `cargo run --release --bin {} -- --sweep{seed}`",
            file.device.name,
            r.label(),
            r.step_id()
        );
        if !repeat.contains(&line) {
            repeat.push(line);
        }
    }
    let _ = writeln!(out, "To repeat a sweep:\n\n{}", repeat.join("\n"));
    out
}

/// An MXFP8 step's baselines as Markdown: per (plain) record, the step's kernel and what it is measured
/// against in the same alternating loop, each named with the C it writes: cuBLAS on the exactly
/// dequantized operands writing fp32 C (the headline) and bf16 C, "dequantize, then cuBLAS" (both
/// operands), and cuBLASLt fp8 with one scale per tensor (the fp8 ceiling).
pub fn mx_baselines_table(files: &[ResultsFile], step: u8) -> String {
    let rows: Vec<(&ResultsFile, &StepRecord)> = files
        .iter()
        .flat_map(|f| f.records.iter().map(move |r| (f, r)))
        .filter(|(_, r)| !r.sweep && r.step == step && r.mx.is_some())
        .collect();
    if rows.is_empty() {
        return format!(
            "No MXFP8 baseline of step {step:02} has been recorded on a GPU yet: `cargo run --release --bin step{step:02}` on a machine with an NVIDIA GPU times them with the step and records them here.\n"
        );
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| GPU | shape | the step's kernel (fp32 C) | cuBLAS (fp32 C), dequantized operands | cuBLAS (bf16 C), dequantized operands | dequantize, then cuBLAS | cuBLASLt fp8, one scale per tensor |"
    );
    let _ = writeln!(out, "|:---|:---|---:|---:|---:|---:|---:|");
    let cell = |t: &crate::run::results::Timing, ratio: f64| {
        format!(
            "{} ms, {} TFLOPS (step × {})",
            significant(t.median_ms, 3),
            significant(t.tflops, 3),
            significant(ratio, 3)
        )
    };
    let mut marks = Marks::default();
    for (file, r) in &rows {
        let mx = r.mx.as_ref().expect("filtered above");
        let f32_c = match (&mx.cublas_f32_c, mx.ratio_cublas_f32_c) {
            (Some(t), Some(ratio)) => cell(t, ratio),
            _ => "not timed (recorded before it was)".to_string(),
        };
        let dequantize = format!(
            "{}, {} C",
            cell(&mx.dequantize_then_cublas, mx.ratio_dequantize_then_cublas),
            mx.dequantize_then_cublas_output
        );
        let fp8 = match (&mx.cublaslt_fp8_tensorwise, mx.ratio_cublaslt_fp8_tensorwise) {
            (Some(t), Some(ratio)) => format!("{}, {} C", cell(t, ratio), mx.cublaslt_fp8_output),
            _ => format!(
                "not run: {}",
                mx.cublaslt_fp8_unavailable.as_deref().unwrap_or("no timing")
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} ms, {} TFLOPS | {f32_c} | {} | {dequantize} | {fp8} |",
            file.device.name,
            marks.on(shape_text(r), provenance::of_record(r)),
            significant(r.time.median_ms, 3),
            significant(r.time.tflops, 3),
            cell(&r.cublas_bf16, r.ratio_bf16),
        );
    }
    out.push('\n');
    out.push_str(&marks.note());
    out.push_str(
        "All of them were timed in one alternating loop (the step's table gives the clocks), on the same \
         inputs; \"step ×\" is the step's speed over the baseline's, above 1 where the step is faster. The \
         step writes fp32 C, so its headline ratio is to cuBLAS writing fp32 C on the exactly dequantized \
         operands; cuBLAS writing bf16 C moves half the bytes of C. The dequantize kernel is the step's own \
         conversion (shared/check/mx_dequant.cu), run on A and on B before cuBLAS; cuBLASLt fp8 computes the \
         product of the e4m3 bytes without their block scales: a ceiling, not the same product.\n",
    );
    out
}

/// A step's alternative designs as Markdown: one row per alternative per (plain) record of the step,
/// beside the step's own kernel from the same alternating loop, then their verification.
pub fn alternatives_table(files: &[ResultsFile], step: u8) -> String {
    alternatives_table_of(files, step, false)
}

/// [`alternatives_table`] of the sm80 twin's records (`{{#ladder-alternatives step11 sm80}}`): the
/// twin's designs, each timed in the twin's loop on the GPUs that have its instructions.
pub fn twin_alternatives_table(files: &[ResultsFile], step: u8) -> String {
    alternatives_table_of(files, step, true)
}

fn alternatives_table_of(files: &[ResultsFile], step: u8, sm80: bool) -> String {
    let rows: Vec<(&ResultsFile, &StepRecord)> = files
        .iter()
        .flat_map(|f| f.records.iter().map(move |r| (f, r)))
        .filter(|(_, r)| !r.sweep && r.step == step && !r.alternatives.is_empty())
        .collect();
    if rows.is_empty() {
        let twin = if sm80 { " -- --twin sm80" } else { "" };
        let which = if sm80 {
            "the sm80 twin's alternative designs"
        } else {
            "them"
        };
        return format!(
            "No alternative design of step {step:02}{} has been recorded on a GPU yet: `cargo run --release --bin step{step:02}{twin}` on a machine with an NVIDIA GPU times {which} with the step and records them here.\n",
            if sm80 { "'s sm80 twin" } else { "" }
        );
    }
    let (ratio_header, column) = headline_header(rows.iter().map(|(_, r)| *r));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| GPU | shape | design | TFLOPS | {ratio_header} | the step's kernel, TFLOPS | × the step's kernel | registers | shared memory |"
    );
    let _ = writeln!(out, "|:---|:---|:---|---:|---:|---:|---:|---:|---:|");
    let mut marks = Marks::default();
    for (file, r) in &rows {
        for a in &r.alternatives {
            let registers = match (a.registers, a.local_bytes) {
                (None, _) => "—".to_string(),
                (Some(n), Some(local)) if local > 0 => format!("{n} (+{local} B local)"),
                (Some(n), _) => n.to_string(),
            };
            // The alternative's own source decides its mark; the step's kernel (its ratio column)
            // is marked in the step's table.
            let design = format!("{} (`{}`)", a.name, a.kernel.rsplit('/').next().unwrap_or(&a.kernel));
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {registers} | {} |",
                file.device.name,
                shape_text(r),
                marks.on(design, provenance::of_alternative(r, a)),
                significant(a.time.tflops, 3),
                headline_ratio_of(r, alternative_headline_ratio(r, a), column),
                significant(r.time.tflops, 3),
                significant(a.ratio_step, 3),
                bytes_text(a.dynamic_smem_bytes as u64),
            );
        }
    }
    out.push('\n');
    out.push_str(&marks.note());
    out.push_str(
        "Each alternative was timed in its step's alternating loop, with the step's own kernel and cuBLAS \
         (the step's table above gives their times and clocks), so all three ratios compare kernels that \
         ran at the same clocks.\n\n",
    );
    let _ = writeln!(out, "Verification of every recorded alternative of step {step:02}:\n");
    for (file, r) in &rows {
        for a in &r.alternatives {
            let checks: Vec<String> = a
                .checks
                .iter()
                .map(|c| {
                    format!(
                        "{} {} (bound {}){}",
                        c.against,
                        error_text(c.rel_fro, 2),
                        error_text(c.rel_fro_bound, 1),
                        if c.passed { "" } else { " **failed**" }
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "- {}, {}, seed {}, {}: relative Frobenius error against {}.",
                file.device.name,
                shape_text(r),
                r.seed,
                a.name,
                checks.join("; ")
            );
        }
    }
    out
}

/// `{{#ladder-plans stepNN}}`: for each shape of the step's recorded sweep, what its launch chose (the
/// record's `plan`), its ratio to cuBLAS, and every alternative timed in the same loop, fastest first:
/// whether the choice was the fastest of what was timed.
pub fn plans_table(files: &[ResultsFile], step: u8) -> String {
    let (ratio_header, column) = headline_header(
        files
            .iter()
            .flat_map(|f| &f.records)
            .filter(|r| r.is_fixed_sweep() && r.step == step),
    );
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| GPU | shape | the launch chose | {ratio_header} | the alternatives in the same loop, fastest first |"
    );
    let _ = writeln!(out, "|:---|:---|:---|---:|:---|");
    let mut rows = 0;
    for file in files {
        let mut swept: Vec<&StepRecord> = file
            .records
            .iter()
            .filter(|r| r.is_fixed_sweep() && r.step == step)
            .collect();
        let order = crate::run::sweep::axis_order(swept.iter().map(|r| r.shape));
        swept.sort_by_key(|r| order.iter().position(|s| *s == r.shape));
        for r in swept {
            let chose = r.plan.as_deref().map_or("—".to_string(), |p| {
                // The plan names the step and the shape first; the table has columns for both.
                p.split_once(": ").map_or(p, |(_, rest)| rest).to_string()
            });
            let mut alternatives: Vec<_> = r.alternatives.iter().collect();
            let ratio = |a: &crate::run::results::AlternativeRecord| alternative_headline_ratio(r, a);
            alternatives.sort_by(|a, b| ratio(b).total_cmp(&ratio(a)));
            let others: Vec<String> = alternatives
                .iter()
                .map(|a| format!("`{}` {}", a.name, headline_ratio_of(r, ratio(a), column)))
                .collect();
            let others = if others.is_empty() {
                "—".to_string()
            } else {
                others.join(", ")
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                file.device.name,
                r.shape,
                chose.replace('|', "\\|"),
                headline_ratio_text(r, column),
                others,
            );
            rows += 1;
        }
    }
    if rows == 0 {
        return format!(
            "No size sweep of step {step:02} has been recorded yet: `step{step:02} --sweep` records one.\n"
        );
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::tests::{file, promote_kernel};
    use crate::book::LadderResults;
    use crate::run::provenance::Source;
    use crate::run::results::tests::{device, record_of};
    use std::path::Path;

    /// A row is marked for what it was measured on (another source, an unknown one, a dirty build),
    /// and the marks used are explained once, under the table; a record of the code shown is not.
    #[test]
    fn rows_measured_on_other_code_are_marked_and_explained_once() {
        let matching = record_of(1, "naive", 4096, 100.0);
        assert_eq!(provenance::of_record(&matching).source, Source::Matches);
        let mut changed = record_of(2, "smem_tiling", 4096, 30.0);
        changed.source_hash = Some("fnv1a64:0123456789abcdef".into());
        let mut unhashed = record_of(3, "register_tiling", 4096, 4.0);
        unhashed.source_hash = None;
        let mut dirty = record_of(2, "smem_tiling", 8192, 240.0);
        dirty.git = "abc1234-dirty".into();
        let mut both = record_of(3, "register_tiling", 8192, 32.0);
        both.source_hash = Some("fnv1a64:0123456789abcdef".into());
        both.git = "abc1234-dirty".into();
        let file = ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![matching.clone(), changed, unhashed, dirty, both],
            superseded: Vec::new(),
        };

        let all = table(std::slice::from_ref(&file), None);
        let row = |label: &str, shape: &str| {
            all.lines()
                .find(|l| l.contains(label) && l.contains(shape))
                .unwrap_or_else(|| panic!("{label} {shape}: {all}"))
                .to_string()
        };
        assert!(
            row("01 naive", "4096³").contains("| 01 naive | 4096³ | sm_90 |"),
            "{all}"
        );
        assert!(row("02 smem_tiling", "4096³").contains("| 4096³ † |"), "{all}");
        assert!(row("03 register_tiling", "4096³").contains("| 4096³ ° |"), "{all}");
        assert!(row("02 smem_tiling", "8192³").contains("| 8192³ ‡ |"), "{all}");
        assert!(row("03 register_tiling", "8192³").contains("| 8192³ †‡ |"), "{all}");
        // One line under the table, each mark explained once.
        let note: Vec<&str> = all
            .lines()
            .filter(|l| l.starts_with("† measured on a different"))
            .collect();
        assert_eq!(note.len(), 1, "{all}");
        assert!(
            note[0].contains("; ° recorded before records carried a hash")
                && note[0].contains("; ‡ built from a tree with uncommitted changes"),
            "{}",
            note[0]
        );
        assert_eq!(all.matches("kernel source").count(), 2, "{all}");

        // A table of clean records has neither marks nor the note.
        let clean = ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![matching],
            superseded: Vec::new(),
        };
        let text = table(std::slice::from_ref(&clean), Some(1));
        assert!(
            !text.contains(['†', '°', '‡']) && !text.contains("kernel source"),
            "{text}"
        );

        // The evidence columns carry the same marks.
        let mut profiled = file.clone();
        for r in &mut profiled.records {
            r.profile = Some(crate::evidence::Profile {
                source: crate::evidence::ProfileSource::Computed,
                note: None,
                computed: crate::evidence::computed_for_shape(r.shape, r.format(), r.format().c_element_bytes()),
                ncu: None,
                cublas_ncu: None,
                cublas_baseline: crate::run::registry::Baseline::CublasBf16C,
            });
        }
        profiled.records.retain(|r| r.shape.m == 4096);
        let evidence = crate::book::evidence::evidence_table(&[profiled], 3, false, None);
        assert!(
            evidence.contains("| | 02 smem_tiling † | 03 register_tiling ° |") && evidence.contains("† measured on"),
            "{evidence}"
        );
    }

    /// An alternative is marked by its own source, found by name.
    #[test]
    fn alternatives_are_marked_by_their_own_source() {
        let mut mx = record_of(11, "mxfp8", 4096, 0.35);
        let alternative = |hash: Option<String>| crate::run::results::AlternativeRecord {
            name: "promote".into(),
            design: "design (a)".into(),
            kernel: "steps/step11_mxfp8/alternatives/sm90_promote.cu".into(),
            source_hash: hash,
            time: mx.time.clone(),
            ratio_bf16: 0.227,
            ratio_step: 0.464,
            checks: Vec::new(),
            registers: Some(168),
            dynamic_smem_bytes: 218 * 1024,
            local_bytes: Some(0),
        };
        mx.alternatives = vec![
            alternative(Some(provenance::source_hash(promote_kernel()))),
            alternative(Some("fnv1a64:0123456789abcdef".into())),
            alternative(None),
        ];
        let text = alternatives_table(
            &[ResultsFile {
                device: device("NVIDIA H200"),
                records: vec![mx],
                superseded: Vec::new(),
            }],
            11,
        );
        let rows: Vec<&str> = text.lines().filter(|l| l.contains("| promote")).collect();
        assert!(rows[0].contains("| promote (`sm90_promote.cu`) | "), "{text}");
        assert!(rows[1].contains("| promote (`sm90_promote.cu`) † | "), "{text}");
        assert!(rows[2].contains("| promote (`sm90_promote.cu`) ° | "), "{text}");
        assert!(text.contains("† measured on a different kernel source") && text.contains("° recorded before"));
    }

    #[test]
    fn mx_baselines_show_for_the_mx_step_and_say_when_there_are_none() {
        let pass = LadderResults::new(vec![file()]);
        let none = pass.expand("{{#ladder-mx step11}}", Path::new("x.md")).unwrap();
        assert!(none.contains("No MXFP8 baseline of step 11"), "{none}");
        let mut mx = record_of(11, "mxfp8", 4096, 0.83);
        let mut slower = mx.time.clone();
        slower.tflops = 600.0;
        mx.mx = Some(crate::run::results::MxBaselines {
            quantizer: crate::run::results::MxBaselines::QUANTIZER.into(),
            cublas_f32_c: None,
            ratio_cublas_f32_c: None,
            dequantize_then_cublas: slower,
            ratio_dequantize_then_cublas: 1.127,
            dequantize_then_cublas_output: "bf16".into(),
            cublaslt_fp8_tensorwise: None,
            ratio_cublaslt_fp8_tensorwise: None,
            cublaslt_fp8_output: "fp32".into(),
            cublaslt_fp8_unavailable: Some("CUBLAS_STATUS_NOT_SUPPORTED".into()),
        });
        let mut with = file();
        with.records.push(mx);
        let table = LadderResults::new(vec![with])
            .expand("{{#ladder-mx step11}}", Path::new("x.md"))
            .unwrap();
        assert!(table.contains("600 TFLOPS (step × 1.13)"), "{table}");
        assert!(table.contains("not run: CUBLAS_STATUS_NOT_SUPPORTED"), "{table}");
        assert!(!table.contains("No MXFP8 baseline"), "{table}");
    }

    /// A step-11 record timed against cuBLAS with fp32 C: every table names each baseline's C; the
    /// ladder's column stays bf16 C and step 11's cell says fp32 C; its own table heads the column
    /// fp32 C; its alternatives are compared with the same cuBLAS.
    #[test]
    fn an_mx_record_names_its_fp32_baseline_in_every_table() {
        let mut mx = record_of(11, "mxfp8", 4096, 0.25);
        let mut f32_c = mx.cublas_bf16.clone();
        f32_c.median_ms = 0.21;
        f32_c.tflops = crate::run::results::tflops(&mx.shape, 0.21);
        mx.baseline = crate::run::registry::Baseline::CublasF32C;
        mx.mx = Some(crate::run::results::MxBaselines {
            quantizer: crate::run::results::MxBaselines::QUANTIZER.into(),
            ratio_cublas_f32_c: Some(0.84),
            cublas_f32_c: Some(f32_c.clone()),
            dequantize_then_cublas: f32_c.clone(),
            ratio_dequantize_then_cublas: 0.84,
            dequantize_then_cublas_output: "fp32".into(),
            cublaslt_fp8_tensorwise: None,
            ratio_cublaslt_fp8_tensorwise: None,
            cublaslt_fp8_output: "none".into(),
            cublaslt_fp8_unavailable: Some("refused".into()),
        });
        let mut time = f32_c.clone();
        time.tflops = f32_c.tflops / 2.0;
        mx.alternatives.push(crate::run::results::AlternativeRecord {
            name: "promote".into(),
            design: "design (a)".into(),
            kernel: "steps/step11_mxfp8/alternatives/sm90_promote.cu".into(),
            source_hash: None,
            time,
            ratio_bf16: 0.4,
            ratio_step: 0.6,
            checks: Vec::new(),
            registers: Some(168),
            dynamic_smem_bytes: 218 * 1024,
            local_bytes: Some(0),
        });
        let mut with = file();
        with.records.push(mx);
        let pass = LadderResults::new(vec![with]);
        let ladder = pass.expand("{{#ladder-table}}", Path::new("x.md")).unwrap();
        assert!(ladder.contains("| × cuBLAS (bf16 C) |"), "{ladder}");
        let row = ladder.lines().find(|l| l.contains("11 mxfp8")).unwrap();
        assert!(row.contains("| 0.840 (fp32 C) |"), "{row}");
        assert!(ladder.contains("writing fp32 C too"), "{ladder}");
        let own = pass.expand("{{#ladder-table step11}}", Path::new("x.md")).unwrap();
        assert!(
            own.contains("| × cuBLAS (fp32 C) |") && own.contains("| 0.840 |"),
            "{own}"
        );
        assert!(own.contains("cuBLAS (fp32 C) reached"), "{own}");
        let baselines = pass.expand("{{#ladder-mx step11}}", Path::new("x.md")).unwrap();
        assert!(
            baselines.contains("| cuBLAS (fp32 C), dequantized operands | cuBLAS (bf16 C), dequantized operands |"),
            "{baselines}"
        );
        assert!(baselines.contains("(step × 0.840), fp32 C |"), "{baselines}");
        let alternatives = pass
            .expand("{{#ladder-alternatives step11}}", Path::new("x.md"))
            .unwrap();
        assert!(alternatives.contains("| × cuBLAS (fp32 C) |"), "{alternatives}");
        assert!(alternatives.contains("| 0.500 |"), "{alternatives}");
    }

    #[test]
    fn alternatives_show_beside_their_step_and_say_when_there_are_none() {
        let pass = LadderResults::new(vec![file()]);
        let none = pass
            .expand("{{#ladder-alternatives step11}}", Path::new("x.md"))
            .unwrap();
        assert!(none.contains("No alternative design of step 11"), "{none}");
        let mut mx = record_of(11, "mxfp8", 4096, 0.35);
        let mut time = mx.time.clone();
        time.tflops = 182.0;
        mx.alternatives.push(crate::run::results::AlternativeRecord {
            name: "promote".into(),
            design: "design (a)".into(),
            kernel: "steps/step11_mxfp8/alternatives/sm90_promote.cu".into(),
            source_hash: Some(provenance::source_hash(promote_kernel())),
            time,
            ratio_bf16: 0.227,
            ratio_step: 0.464,
            checks: mx.checks.clone(),
            registers: Some(168),
            dynamic_smem_bytes: 218 * 1024,
            local_bytes: Some(0),
        });
        let mut with = file();
        with.records.push(mx);
        let pass = LadderResults::new(vec![with]);
        let table = pass
            .expand("{{#ladder-alternatives step11}}", Path::new("x.md"))
            .unwrap();
        assert!(
            table.contains("| promote (`sm90_promote.cu`) | 182 | 0.227 |")
                && table.contains("| 0.464 | 168 | 218 KiB |"),
            "{table}"
        );
        assert!(
            table.contains("Verification of every recorded alternative of step 11"),
            "{table}"
        );
        assert!(pass.expand("{{#ladder-alternatives}}", Path::new("x.md")).is_err());
    }

    /// An sm80 twin's record shows only in its own table, with its ratio to the ceiling measured beside
    /// it; the step's table and the whole ladder leave it out.
    #[test]
    fn sm80_twin_rows_show_in_their_own_table_with_the_ceiling() {
        use crate::run::results::{CeilingTiming, MmaSyncCeiling};
        let mut twin = record_of(5, "swizzle128", 4096, 0.4);
        twin.kernel = "steps/step05_swizzle128/sm80.cu".into();
        let ceiling = |ms: f64| CeilingTiming {
            median_ms: ms,
            runs: 100,
            flops: 1e12,
            tflops: 1e12 / (ms * 1e9),
        };
        // The twin: 2·4096³ flops in 0.4 ms; the ldmatrix ceiling 1e12 flops in 2.5 ms: 400 TFLOPS.
        twin.mma_sync_ceiling = Some(MmaSyncCeiling {
            kernel: "shared/run/mma_sync_ceiling.cu".into(),
            source_hash: String::new(),
            registers: ceiling(2.0),
            ldmatrix: ceiling(2.5),
            cublas_bf16: twin.cublas_bf16.clone(),
            clocks: None,
            in_step_loop: true,
        });
        let expected = significant(twin.time.tflops / 400.0, 3);
        let mut with = file();
        with.records.push(record_of(5, "swizzle128", 4096, 0.3));
        with.records.push(twin);
        let pass = LadderResults::new(vec![with]);
        let own = pass.expand("{{#ladder-table step05 sm80}}", Path::new("x.md")).unwrap();
        assert!(
            own.contains("× mma.sync ceiling") && own.contains("| 400, 500 |"),
            "{own}"
        );
        assert!(own.contains(&format!("| {expected} |")), "{expected}: {own}");
        assert!(own.contains("in the twin's own alternating loop") && !own.contains("a loop of their own"));
        assert_eq!(own.matches("| 4096³").count(), 1, "{own}");
        assert!(own.contains("--seed 42 --twin sm80`"), "{own}");
        let hopper = pass.expand("{{#ladder-table step05}}", Path::new("x.md")).unwrap();
        assert_eq!(hopper.matches("| 4096³").count(), 1, "{hopper}");
        assert!(!hopper.contains("ceiling"), "{hopper}");
        let ladder = pass.expand("{{#ladder-table}}", Path::new("x.md")).unwrap();
        assert!(!ladder.contains("sm80"), "{ladder}");
        let none = pass.expand("{{#ladder-table step06 sm80}}", Path::new("x.md")).unwrap();
        assert!(none.contains("--twin sm80"), "{none}");
    }

    #[test]
    fn the_gpu_is_a_column_only_when_rows_come_from_several() {
        let mut other = file();
        other.device.name = "NVIDIA H200".into();
        let two = table(&[file(), other], None);
        assert!(two.starts_with("| GPU | step |"), "{two}");
        assert!(two.contains("| NVIDIA H200 | 01 naive |"), "{two}");
        assert!(!table(&[file()], None).contains("| GPU |"));
    }

    #[test]
    fn the_ladder_and_step_tables_leave_sweep_records_out() {
        let pass = LadderResults::new(vec![crate::book::figure_sweep::tests::synthetic()]);
        let all = pass.expand("{{#ladder-table}}", Path::new("results.md")).unwrap();
        let rows: Vec<&str> = all.lines().filter(|l| l.starts_with("| 10 persistent |")).collect();
        assert_eq!(rows.len(), 1, "only the plain run of step 10: {all}");
        assert!(rows[0].contains("| 4096³ |"));
        let step = pass.expand("{{#ladder-table step10}}", Path::new("s.md")).unwrap();
        assert!(!step.contains("1024³") && !step.contains("4096×14336×4096"), "{step}");
        assert!(pass
            .expand("{{#ladder-table step08}}", Path::new("s.md"))
            .unwrap()
            .contains("Step 08 has not been recorded"));
    }
    #[test]
    fn plans_table_shows_the_choice_and_the_fastest_alternative() {
        let mut r =
            crate::book::figure_sweep::tests::swept(10, "persistent", crate::check::problem::Shape::square(1024), 0.8);
        r.plan = Some("step 10 at 1024x1024x1024: 128×64 blocks on their own, data-parallel".into());
        let alternative = |name: &str, ratio: f64| crate::run::results::AlternativeRecord {
            name: name.into(),
            design: String::new(),
            kernel: "steps/step10_persistent/sm90.cu".into(),
            source_hash: None,
            ratio_bf16: ratio,
            ratio_step: ratio / 0.8,
            time: r.time.clone(),
            checks: Vec::new(),
            registers: None,
            dynamic_smem_bytes: 0,
            local_bytes: None,
        };
        r.alternatives = vec![alternative("tile-128x128", 0.7), alternative("tile-128x64", 0.85)];
        let file = ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![
                r,
                crate::book::figure_sweep::tests::swept(8, "pipeline", crate::check::problem::Shape::square(1024), 0.5),
            ],
            superseded: Vec::new(),
        };
        let table = plans_table(&[file], 10);
        let row = table
            .lines()
            .find(|l| l.contains("1024x1024x1024"))
            .expect("a row for the shape");
        assert!(row.contains("| 128×64 blocks on their own, data-parallel |"), "{row}");
        assert!(row.ends_with("| `tile-128x64` 0.850, `tile-128x128` 0.700 |"), "{row}");
        assert_eq!(
            table.lines().filter(|l| l.starts_with("| NVIDIA")).count(),
            1,
            "step 08's row is not step 10's"
        );
        assert!(plans_table(&[], 10).starts_with("No size sweep of step 10"));
    }
}
