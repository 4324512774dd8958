//! What a run prints: the checks and the results table.

use crate::check::problem::Shape;
use crate::check::verify::Check;
use crate::run::results::StepRecord;
use tabled::settings::Style;
use tabled::{Table, Tabled};

#[derive(Tabled)]
struct CheckRow {
    #[tabled(rename = "check")]
    what: String,
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
    #[tabled(rename = "elementwise bound")]
    elementwise: String,
    #[tabled(rename = "result")]
    result: String,
}

/// The checks of one kernel (`what`: `step11`, or an alternative's file) at `shape`, as a table.
pub fn print_checks(what: &str, shape: Shape, checks: &[Check]) {
    let rows: Vec<CheckRow> = checks
        .iter()
        .map(|c| CheckRow {
            what: format!("{what} {shape}"),
            against: c.against.clone(),
            compared: c.compared,
            rel_fro: format!("{:.2e}", c.rel_fro),
            bound: format!("{:.1e}", c.rel_fro_bound),
            max_abs: format!("{:.2e}", c.max_abs),
            elementwise: c.elementwise_bound.clone(),
            result: match (&c.passed, &c.first_failure) {
                (true, _) => "pass".into(),
                (false, Some(at)) => format!("FAIL: {at}"),
                (false, None) => "FAIL".into(),
            },
        })
        .collect();
    println!("{}", Table::new(rows).with(Style::rounded()));
}

#[derive(Tabled)]
struct ResultRow {
    #[tabled(rename = "step")]
    step: String,
    #[tabled(rename = "arch")]
    arch: String,
    #[tabled(rename = "M×N×K")]
    shape: String,
    #[tabled(rename = "median ms")]
    ms: String,
    #[tabled(rename = "TFLOPS")]
    tflops: String,
    #[tabled(rename = "cuBLAS bf16 TFLOPS")]
    cublas_tflops: String,
    #[tabled(rename = "× cuBLAS bf16")]
    vs_bf16: String,
    #[tabled(rename = "× cuBLAS SGEMM")]
    vs_sgemm: String,
    #[tabled(rename = "SM MHz (min–max)")]
    clock: String,
    #[tabled(rename = "W mean/limit")]
    power: String,
    #[tabled(rename = "rel. err vs prev")]
    err_prev: String,
    #[tabled(rename = "rel. err vs cuBLAS")]
    err_cublas: String,
    #[tabled(rename = "regs")]
    regs: String,
    #[tabled(rename = "smem B")]
    smem: String,
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

/// The table every step binary and the ladder end with: one row per record. Each row's cuBLAS
/// numbers come from its own timing loop, where cuBLAS alternated with that step.
pub fn print_results(records: &[StepRecord]) {
    let mut rows = Vec::new();
    let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    for r in records {
        let err = |name: &str| {
            r.checks
                .iter()
                .find(|c| c.against.starts_with(name))
                .map(|c| format!("{:.1e}", c.rel_fro))
                .unwrap_or_default()
        };
        rows.push(ResultRow {
            step: format!("{:02} {}", r.step, r.name),
            arch: r.arch.clone(),
            shape: r.shape.to_string(),
            ms: format!("{:.3}", r.time.median_ms),
            tflops: format!("{:.1}", r.time.tflops),
            cublas_tflops: format!("{:.1}", r.cublas_bf16.tflops),
            vs_bf16: format!("{:.3}", r.ratio_bf16),
            vs_sgemm: r.ratio_sgemm.map(|x| format!("{x:.3}")).unwrap_or_default(),
            clock: clock_text(r),
            power: power_text(r),
            err_prev: r
                .checks
                .first()
                .map(|c| format!("{:.1e} ({})", c.rel_fro, c.against))
                .unwrap_or_default(),
            err_cublas: err("cuBLAS"),
            regs: opt(r.registers),
            smem: opt(r.static_smem_bytes.map(|s| s + r.dynamic_smem_bytes)),
        });
    }
    println!("{}", Table::new(rows).with(Style::rounded()));
    println!("{}", legend(records));
    if let Some(table) = mx_baselines_table(records) {
        println!("{table}");
    }
    if let Some(table) = alternatives_table(records) {
        println!("{table}");
    }
}

#[derive(Tabled)]
struct AlternativeRow {
    #[tabled(rename = "step")]
    step: String,
    #[tabled(rename = "alternative")]
    name: String,
    #[tabled(rename = "M×N×K")]
    shape: String,
    #[tabled(rename = "median ms")]
    ms: String,
    #[tabled(rename = "TFLOPS")]
    tflops: String,
    #[tabled(rename = "× cuBLAS bf16")]
    vs_bf16: String,
    #[tabled(rename = "× the step's kernel")]
    vs_step: String,
    #[tabled(rename = "regs")]
    regs: String,
    #[tabled(rename = "local B")]
    local: String,
}

/// The steps' alternative designs, each timed in its step's loop; `None` when no record has any.
pub fn alternatives_table(records: &[StepRecord]) -> Option<String> {
    let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    let rows: Vec<AlternativeRow> = records
        .iter()
        .flat_map(|r| {
            r.alternatives.iter().map(move |a| AlternativeRow {
                step: format!("{:02} {}", r.step, r.name),
                name: format!("{} ({})", a.name, a.kernel),
                shape: r.shape.to_string(),
                ms: format!("{:.3}", a.time.median_ms),
                tflops: format!("{:.1}", a.time.tflops),
                vs_bf16: format!("{:.3}", a.ratio_bf16),
                vs_step: format!("{:.3}", a.ratio_step),
                regs: opt(a.registers),
                local: opt(a.local_bytes),
            })
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    Some(format!(
        "{}\nAlternative designs, verified with the step's checks and timed in the step's own alternating loop.",
        Table::new(rows).with(Style::rounded())
    ))
}

#[derive(Tabled)]
struct MxRow {
    #[tabled(rename = "step")]
    step: String,
    #[tabled(rename = "M×N×K")]
    shape: String,
    #[tabled(rename = "TFLOPS")]
    tflops: String,
    #[tabled(rename = "cuBLAS bf16 (dequantized)")]
    cublas_bf16: String,
    #[tabled(rename = "dequantize + cuBLAS bf16")]
    dequantize: String,
    #[tabled(rename = "cuBLASLt fp8 tensorwise (fp32 C)")]
    fp8: String,
}

/// `794.1 (× 0.870)`: a baseline's TFLOPS and the step's ratio to it.
fn baseline_cell(tflops: f64, ratio: f64) -> String {
    format!("{tflops:.1} (× {ratio:.3})")
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
                shape: r.shape.to_string(),
                tflops: format!("{:.1}", r.time.tflops),
                cublas_bf16: baseline_cell(r.cublas_bf16.tflops, r.ratio_bf16),
                dequantize: baseline_cell(
                    mx.dequantize_then_cublas_bf16.tflops,
                    mx.ratio_dequantize_then_cublas_bf16,
                ),
                fp8: match (&mx.cublaslt_fp8_tensorwise, mx.ratio_cublaslt_fp8_tensorwise) {
                    (Some(t), Some(ratio)) => baseline_cell(t.tflops, ratio),
                    _ => format!("— ({})", mx.cublaslt_fp8_unavailable.as_deref().unwrap_or("not timed")),
                },
            })
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    Some(format!(
        "{}\nMXFP8 baselines, TFLOPS (the step's ratio to each), all timed in the step's own alternating loop: \
         cuBLAS bf16 on the exactly dequantized operands; the dequantize kernel on A and B then cuBLAS bf16, \
         timed as one; cuBLASLt fp8 e4m3 with one scale per tensor (no block scales: the fp8 ceiling), \
         FAST_ACCUM off. Inputs: {}.",
        Table::new(rows).with(Style::rounded()),
        crate::run::results::MxBaselines::QUANTIZER
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
        r.mx = Some(crate::run::results::MxBaselines {
            quantizer: crate::run::results::MxBaselines::QUANTIZER.into(),
            dequantize_then_cublas_bf16: timing.clone(),
            ratio_dequantize_then_cublas_bf16: 1.25,
            cublaslt_fp8_tensorwise: None,
            ratio_cublaslt_fp8_tensorwise: None,
            cublaslt_fp8_output: "fp32".into(),
            cublaslt_fp8_unavailable: Some("CUBLAS_STATUS_NOT_SUPPORTED".into()),
        });
        let table = mx_baselines_table(&[plain, r]).unwrap();
        assert!(
            table.contains("11 mxfp8") && !table.contains("10 persistent"),
            "{table}"
        );
        assert!(
            table.contains("(× 1.250)") && table.contains("— (CUBLAS_STATUS_NOT_SUPPORTED)"),
            "{table}"
        );
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
