//! What a run prints: the checks and the results table, each at most [`COLUMNS`] wide.

use crate::check::problem::Shape;
use crate::check::verify::Check;
use crate::run::results::StepRecord;
use tabled::settings::peaker::Priority;
use tabled::settings::{Style, Width};
use tabled::{Table, Tabled};

/// The widest a printed table may be: a laptop's terminal. Tables are laid out to fit; a cell longer
/// than planned (a failure's message) is wrapped rather than widening the table.
pub const COLUMNS: usize = 100;

/// `table` in the style of every printed table, folded to at most [`COLUMNS`] columns.
pub fn fit(mut table: Table) -> String {
    table
        .with(Style::rounded())
        .with(Width::wrap(COLUMNS).keep_words(true).priority(Priority::max(true)));
    table.to_string()
}

/// `4096³` for a square shape, `4096x14336x4096` otherwise: the narrowest column that says it.
fn shape_text(shape: Shape) -> String {
    if shape.m == shape.n && shape.n == shape.k {
        format!("{}³", shape.m)
    } else {
        shape.to_string()
    }
}

/// `225` or `8.5`: bytes in KiB, a decimal only where it is not whole.
fn kib_text(bytes: u32) -> String {
    if bytes.is_multiple_of(1024) {
        (bytes / 1024).to_string()
    } else {
        format!("{:.1}", f64::from(bytes) / 1024.0)
    }
}

/// A paragraph of prose under a table, wrapped at [`COLUMNS`] like the table.
fn paragraph(text: &str) -> String {
    tabled::settings::width::Wrap::wrap(text, COLUMNS, true)
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Tabled)]
struct CheckRow {
    #[tabled(rename = "against")]
    against: String,
    #[tabled(rename = "elements")]
    compared: u64,
    #[tabled(rename = "rel. Frobenius")]
    rel_fro: String,
    #[tabled(rename = "bound")]
    bound: String,
    #[tabled(rename = "max |diff|")]
    max_abs: String,
    #[tabled(rename = "result")]
    result: String,
}

/// The checks of one kernel (`what`: `step11`, or an alternative's file) at `shape`: a title, a table,
/// and under it each check's elementwise bound and first failure (too wide for a column).
pub fn print_checks(what: &str, shape: Shape, checks: &[Check]) {
    println!("{}", checks_text(what, shape, checks));
}

fn checks_text(what: &str, shape: Shape, checks: &[Check]) -> String {
    let rows: Vec<CheckRow> = checks
        .iter()
        .map(|c| CheckRow {
            against: c.against.clone(),
            compared: c.compared,
            rel_fro: format!("{:.2e}", c.rel_fro),
            bound: format!("{:.1e}", c.rel_fro_bound),
            max_abs: format!("{:.2e}", c.max_abs),
            result: if c.passed { "pass" } else { "FAIL" }.into(),
        })
        .collect();
    let mut text = format!("{what} {shape}\n{}", fit(Table::new(rows)));
    for c in checks {
        text.push('\n');
        text.push_str(&paragraph(&format!(
            "vs {}: elementwise {}",
            c.against, c.elementwise_bound
        )));
        if let Some(at) = c.first_failure.as_ref().filter(|_| !c.passed) {
            text.push('\n');
            text.push_str(&paragraph(&format!("vs {}: FAIL: {at}", c.against)));
        }
    }
    text
}

/// The timing table's row: what was timed and how fast, against cuBLAS in the same loop.
#[derive(Tabled)]
struct ResultRow {
    #[tabled(rename = "step")]
    step: String,
    #[tabled(rename = "M×N×K")]
    shape: String,
    #[tabled(rename = "median\nms")]
    ms: String,
    #[tabled(rename = "TFLOPS")]
    tflops: String,
    #[tabled(rename = "cuBLAS\nTFLOPS")]
    cublas_tflops: String,
    #[tabled(rename = "×\ncuBLAS")]
    vs_cublas: String,
    #[tabled(rename = "×\ncuBLAS\nSGEMM")]
    vs_sgemm: String,
}

/// The run table's row: what the kernel was built as, and the clocks and power it ran at.
#[derive(Tabled)]
struct RunRow {
    #[tabled(rename = "step")]
    step: String,
    #[tabled(rename = "M×N×K")]
    shape: String,
    #[tabled(rename = "arch")]
    arch: String,
    #[tabled(rename = "regs")]
    regs: String,
    #[tabled(rename = "smem\nKiB")]
    smem: String,
    #[tabled(rename = "SM MHz\n(min–max)")]
    clock: String,
    #[tabled(rename = "W mean\n/limit")]
    power: String,
}

/// `1755 (1590–1980)`: the median SM clock NVML reported during the timed launches, and its range.
fn clock_text(r: &StepRecord) -> String {
    r.clocks
        .as_ref()
        .map(|c| c.sm_text().trim_end_matches(" MHz").replace(" MHz (", " ("))
        .unwrap_or_else(|| "—".into())
}

/// `652/700`: mean power over the limit, in watts.
fn power_text(r: &StepRecord) -> String {
    match r.clocks.as_ref().map(|c| (c.power_w_mean, c.power_limit_w)) {
        Some((Some(mean), Some(limit))) => format!("{mean:.0}/{limit:.0}"),
        Some((Some(mean), None)) => format!("{mean:.0}"),
        _ => "—".into(),
    }
}

/// The tables every step binary and the ladder end with: one row per record in each, the timing and
/// then how it ran (the checks' errors were printed with them). Each row's cuBLAS numbers come from its
/// own timing loop, where cuBLAS alternated with that step.
pub fn print_results(records: &[StepRecord]) {
    println!("{}", results_text(records));
    for line in records.iter().filter_map(ceiling_line) {
        println!("{line}");
    }
}

/// For an sm80 twin's record: the mma.sync ceilings timed in its loop, and the twin's ratio to each.
pub fn ceiling_line(record: &StepRecord) -> Option<String> {
    let c = record.mma_sync_ceiling.as_ref()?;
    let ratio = record.ceiling_ratio()?;
    let loop_was = if c.in_step_loop {
        "timed in the twin's loop"
    } else {
        "timed in a loop of their own; ratio through each loop's cuBLAS"
    };
    Some(format!(
        "{:02} {} (sm80 twin) at {}: mma.sync ceiling {:.1} TFLOPS in registers, {:.1} fed by ldmatrix ({loop_was}): the twin is {ratio:.3} × the ldmatrix-fed ceiling, {:.3} × cuBLAS",
        record.step,
        record.name,
        shape_text(record.shape),
        c.registers.tflops,
        c.ldmatrix.tflops,
        record.ratio_bf16
    ))
}

fn results_text(records: &[StepRecord]) -> String {
    let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    let step = |r: &StepRecord| format!("{:02} {}", r.step, r.name);
    // Each row's cuBLAS is the one its ratio is against, with the C it writes.
    let timing: Vec<ResultRow> = records
        .iter()
        .map(|r| {
            let headline = r.headline();
            ResultRow {
                step: step(r),
                shape: shape_text(r.shape),
                ms: format!("{:.3}", r.time.median_ms),
                tflops: format!("{:.1}", r.time.tflops),
                cublas_tflops: format!("{:.1}\n{}", headline.cublas.tflops, headline.baseline.output()),
                vs_cublas: format!("{:.3}", headline.ratio),
                vs_sgemm: r.ratio_sgemm.map(|x| format!("{x:.3}")).unwrap_or_default(),
            }
        })
        .collect();
    let runs: Vec<RunRow> = records
        .iter()
        .map(|r| RunRow {
            step: step(r),
            shape: shape_text(r.shape),
            arch: r.arch.clone(),
            regs: opt(r.registers),
            smem: r
                .static_smem_bytes
                .map(|s| kib_text(s + r.dynamic_smem_bytes))
                .unwrap_or_default(),
            clock: clock_text(r),
            power: power_text(r),
        })
        .collect();
    let mut text = format!(
        "{}\n{}\n{}",
        fit(Table::new(timing)),
        fit(Table::new(runs)),
        paragraph(&legend(records))
    );
    for table in [mx_baselines_table(records), alternatives_table(records)]
        .into_iter()
        .flatten()
    {
        text.push('\n');
        text.push_str(&table);
    }
    text
}

#[derive(Tabled)]
struct AlternativeRow {
    #[tabled(rename = "step")]
    step: String,
    #[tabled(rename = "alternative")]
    name: String,
    #[tabled(rename = "M×N×K")]
    shape: String,
    #[tabled(rename = "TFLOPS")]
    tflops: String,
    #[tabled(rename = "× the\nstep's\nkernel")]
    vs_step: String,
    #[tabled(rename = "regs")]
    regs: String,
    #[tabled(rename = "local\nbytes")]
    local: String,
}

/// The steps' alternative designs, each timed in its step's loop, and under the table what each is;
/// `None` when no record has any.
pub fn alternatives_table(records: &[StepRecord]) -> Option<String> {
    let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    let rows: Vec<AlternativeRow> = records
        .iter()
        .flat_map(|r| {
            r.alternatives.iter().map(move |a| AlternativeRow {
                step: format!("{:02} {}", r.step, r.name),
                name: a.name.clone(),
                shape: shape_text(r.shape),
                tflops: format!("{:.1}", a.time.tflops),
                vs_step: format!("{:.3}", a.ratio_step),
                regs: opt(a.registers),
                local: opt(a.local_bytes),
            })
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut text = format!(
        "{}\n{}",
        fit(Table::new(rows)),
        paragraph("Alternative designs, verified with the step's checks and timed in the step's own alternating loop:")
    );
    let mut named = Vec::new();
    for a in records.iter().flat_map(|r| &r.alternatives) {
        if !named.contains(&&a.name) {
            named.push(&a.name);
            text.push('\n');
            text.push_str(&paragraph(&format!("{} ({}): {}", a.name, a.kernel, a.design)));
        }
    }
    Some(text)
}

#[derive(Tabled)]
struct MxRow {
    #[tabled(rename = "step")]
    step: String,
    #[tabled(rename = "M×N×K")]
    shape: String,
    #[tabled(rename = "TFLOPS")]
    tflops: String,
    #[tabled(rename = "cuBLAS\n(fp32 C)\ndequantized")]
    cublas_f32_c: String,
    #[tabled(rename = "cuBLAS\n(bf16 C)\ndequantized")]
    cublas_bf16: String,
    #[tabled(rename = "dequantize\n+ cuBLAS")]
    dequantize: String,
    #[tabled(rename = "cuBLASLt fp8\ntensorwise")]
    fp8: String,
}

/// `794.1` over `× 0.870`: a baseline's TFLOPS and the step's ratio to it.
fn baseline_cell(tflops: f64, ratio: f64) -> String {
    format!("{tflops:.1}\n× {ratio:.3}")
}

/// [`baseline_cell`] over the C the baseline writes (`fp32 C`), for a column whose rows may differ.
fn baseline_cell_with_output(tflops: f64, ratio: f64, output: &str) -> String {
    format!("{}\n{output} C", baseline_cell(tflops, ratio))
}

/// The MXFP8 steps' baselines, each with the step's ratio to it (medians from the same loop), and
/// what they are; `None` when no record has them.
pub fn mx_baselines_table(records: &[StepRecord]) -> Option<String> {
    let rows: Vec<MxRow> = records
        .iter()
        .filter_map(|r| {
            let mx = r.mx.as_ref()?;
            Some(MxRow {
                step: format!("{:02} {}", r.step, r.name),
                shape: shape_text(r.shape),
                tflops: format!("{:.1}", r.time.tflops),
                cublas_f32_c: match (&mx.cublas_f32_c, mx.ratio_cublas_f32_c) {
                    (Some(t), Some(ratio)) => baseline_cell(t.tflops, ratio),
                    _ => "—".into(),
                },
                cublas_bf16: baseline_cell(r.cublas_bf16.tflops, r.ratio_bf16),
                dequantize: baseline_cell_with_output(
                    mx.dequantize_then_cublas.tflops,
                    mx.ratio_dequantize_then_cublas,
                    &mx.dequantize_then_cublas_output,
                ),
                fp8: match (&mx.cublaslt_fp8_tensorwise, mx.ratio_cublaslt_fp8_tensorwise) {
                    (Some(t), Some(ratio)) => baseline_cell_with_output(t.tflops, ratio, &mx.cublaslt_fp8_output),
                    _ => "—".into(),
                },
            })
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    // Why cuBLASLt fp8 was not timed, under the table: too wide for its cell.
    let untimed: String = records
        .iter()
        .filter_map(|r| {
            let mx = r.mx.as_ref().filter(|mx| mx.ratio_cublaslt_fp8_tensorwise.is_none())?;
            let why = mx.cublaslt_fp8_unavailable.as_deref().unwrap_or("not timed");
            Some(
                paragraph(&format!(
                    "{:02} {} {}: no cuBLASLt fp8 ({why})",
                    r.step,
                    r.name,
                    shape_text(r.shape)
                )) + "\n",
            )
        })
        .collect();
    Some(format!(
        "{}\n{untimed}{}",
        fit(Table::new(rows)),
        paragraph(&format!(
            "MXFP8 baselines, TFLOPS (the step's ratio to each), all timed in the step's own alternating loop: \
             cuBLAS on the exactly dequantized operands writing fp32 C as the step does (the headline ratio; \
             — in records from before it was timed) and writing bf16 C; the dequantize kernel on A and B then \
             cuBLAS, timed as one, writing the C under its ratio; cuBLASLt fp8 e4m3 with one scale per tensor \
             (no block scales: the fp8 ceiling), FAST_ACCUM off. Inputs: {}.",
            crate::run::results::MxBaselines::QUANTIZER
        ))
    ))
}

/// What the table's timing columns mean, under it.
fn legend(records: &[StepRecord]) -> String {
    let mut text = format!(
        "Each step was timed in one loop with cuBLAS (A B A B …, after ~{:.2} s of untimed warm-up), \
         each with its own median; × cuBLAS compares medians from the same loop.",
        crate::run::timing::WARMUP_SECONDS
    );
    if records.iter().any(|r| r.clocks.is_some()) {
        text.push_str(&format!(
            " SM MHz: NVML's SM clock during the timed launches, median (min–max) of readings every {} ms; \
             W: mean board power / enforced limit.",
            crate::device::nvml::PERIOD.as_millis()
        ));
    } else {
        text.push_str(" No SM clock was recorded (NVML was not available).");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::results::tests::record_of;

    #[test]
    fn mx_baselines_are_shown_only_for_mx_records() {
        let plain = record_of(10, "persistent", 4096, 0.2);
        assert!(mx_baselines_table(std::slice::from_ref(&plain)).is_none());
        let mut r = record_of(11, "mxfp8", 4096, 0.2);
        let timing = r.cublas_bf16.clone();
        r.baseline = crate::run::results::Baseline::CublasF32C;
        r.mx = Some(crate::run::results::MxBaselines {
            quantizer: crate::run::results::MxBaselines::QUANTIZER.into(),
            cublas_f32_c: Some(timing.clone()),
            ratio_cublas_f32_c: Some(0.875),
            dequantize_then_cublas: timing.clone(),
            ratio_dequantize_then_cublas: 1.25,
            dequantize_then_cublas_output: "fp32".into(),
            cublaslt_fp8_tensorwise: None,
            ratio_cublaslt_fp8_tensorwise: None,
            cublaslt_fp8_output: "fp32".into(),
            cublaslt_fp8_unavailable: Some("CUBLAS_STATUS_NOT_SUPPORTED".into()),
        });
        let table = mx_baselines_table(&[plain.clone(), r.clone()]).unwrap();
        assert!(
            table.contains("11 mxfp8") && !table.contains("10 persistent"),
            "{table}"
        );
        assert!(
            table.contains("× 1.250") && table.contains(": no cuBLASLt fp8 (CUBLAS_STATUS_NOT_SUPPORTED)"),
            "{table}"
        );
        // Each baseline's column or cell names the C it writes; fp32 C is the headline.
        assert!(
            table.contains("× 0.875") && table.contains("(fp32 C)") && table.contains("(bf16 C)"),
            "{table}"
        );
        assert!(table.contains("fp32 C"), "{table}");
        // The results table's row of the MXFP8 step is against cuBLAS with fp32 C, the other's bf16 C.
        let results = results_text(&[plain, r]);
        let row = |step: &str| results.lines().position(|l| l.contains(step)).unwrap();
        let below = |i: usize| results.lines().nth(i + 1).unwrap_or_default().to_string();
        assert!(
            results.lines().nth(row("11 mxfp8")).unwrap().contains("0.875"),
            "{results}"
        );
        assert!(below(row("11 mxfp8")).contains("fp32 C"), "{results}");
        assert!(below(row("10 persistent")).contains("bf16 C"), "{results}");
    }

    /// The widest line of `text`, in characters (the tables' borders are one column each).
    fn widest(text: &str) -> usize {
        text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
    }

    /// The longest step name at an LLM-like shape, with an MX record, an alternative and a failed
    /// check with a long message: every line printed fits a 100-column terminal, and nothing is lost.
    #[test]
    fn printed_tables_fit_a_100_column_terminal() {
        let mut wide = record_of(9, "epilogue_double_buffer", 4096, 1.6);
        wide.shape = Shape::new(4096, 14336, 4096);
        let mut failed = wide.checks[0].clone();
        failed.against = "cuBLAS fp32 C (dequantized)".into();
        failed.passed = false;
        failed.first_failure = Some(
            "C[4095, 17] = NaN, expected 3.25 (|d| = NaN > bound 0.0123); 64 of 58720256 elements outside the bound"
                .into(),
        );
        let checks = [wide.checks[0].clone(), failed];
        let text = checks_text("steps/step11_mxfp8/sm90_fused.cu", wide.shape, &checks);
        assert!(widest(&text) <= COLUMNS, "{} columns:\n{text}", widest(&text));
        assert!(
            text.contains("FAIL: C[4095, 17] = NaN") && text.contains("elementwise |d| <="),
            "{text}"
        );

        let mut mx = record_of(11, "mxfp8", 16384, 30.0);
        let timing = mx.cublas_bf16.clone();
        mx.mx = Some(crate::run::results::MxBaselines {
            quantizer: crate::run::results::MxBaselines::QUANTIZER.into(),
            cublas_f32_c: None,
            ratio_cublas_f32_c: None,
            dequantize_then_cublas: timing.clone(),
            ratio_dequantize_then_cublas: 1.25,
            dequantize_then_cublas_output: "bf16".into(),
            cublaslt_fp8_tensorwise: Some(timing),
            ratio_cublaslt_fp8_tensorwise: Some(0.5),
            cublaslt_fp8_output: "fp32".into(),
            cublaslt_fp8_unavailable: None,
        });
        mx.alternatives = vec![crate::run::results::AlternativeRecord {
            name: "promote".into(),
            design: "promotes the accumulators to fp32 every K tile".into(),
            kernel: "steps/step11_mxfp8/sm90_promote.cu".into(),
            source_hash: None,
            time: mx.time.clone(),
            ratio_bf16: 0.9,
            ratio_step: 1.1,
            checks: mx.checks.clone(),
            registers: Some(168),
            dynamic_smem_bytes: 200_000,
            local_bytes: Some(208),
        }];
        let text = results_text(&[record_of(1, "naive", 4096, 100.0), wide, mx]);
        assert!(widest(&text) <= COLUMNS, "{} columns:\n{text}", widest(&text));
        for cell in [
            "09 epilogue_double_buffer",
            "4096x14336x4096",
            "16384³",
            "1755 (1590–1980)",
            "652/700",
            "promote",
        ] {
            assert!(text.contains(cell), "{cell} missing from\n{text}");
        }
    }

    #[test]
    fn clock_and_power_cells() {
        let mut r = record_of(8, "pipeline", 8192, 1.6);
        assert_eq!(
            (clock_text(&r), power_text(&r)),
            ("1755 (1590–1980)".into(), "652/700".into())
        );
        assert!(legend(std::slice::from_ref(&r)).contains("SM MHz: NVML's SM clock"));
        r.clocks = None;
        assert_eq!((clock_text(&r), power_text(&r)), ("—".into(), "—".into()));
        assert!(legend(&[r]).contains("No SM clock was recorded"));
    }
}
