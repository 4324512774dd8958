//! What a run prints: the checks and the results table.

use crate::problem::Shape;
use crate::registry::Step;
use crate::results::{StepRecord, Timing};
use crate::verify::Check;
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

pub fn print_checks(step: &Step, shape: Shape, checks: &[Check]) {
    let rows: Vec<CheckRow> = checks
        .iter()
        .map(|c| CheckRow {
            what: format!("{} {shape}", step.binary()),
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
    #[tabled(rename = "× cuBLAS bf16")]
    vs_bf16: String,
    #[tabled(rename = "× cuBLAS SGEMM")]
    vs_sgemm: String,
    #[tabled(rename = "rel. err vs prev")]
    err_prev: String,
    #[tabled(rename = "rel. err vs cuBLAS")]
    err_cublas: String,
    #[tabled(rename = "regs")]
    regs: String,
    #[tabled(rename = "smem B")]
    smem: String,
}

fn reference_row(name: &str, shape: Shape, t: &Timing) -> ResultRow {
    ResultRow {
        step: name.into(),
        arch: "".into(),
        shape: shape.to_string(),
        ms: format!("{:.3}", t.median_ms),
        tflops: format!("{:.1}", t.tflops),
        vs_bf16: "".into(),
        vs_sgemm: "".into(),
        err_prev: "".into(),
        err_cublas: "".into(),
        regs: "".into(),
        smem: "".into(),
    }
}

/// The table every step binary and the ladder end with: each record, then cuBLAS per shape.
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
            vs_bf16: format!("{:.3}", r.ratio_bf16),
            vs_sgemm: r.ratio_sgemm.map(|x| format!("{x:.3}")).unwrap_or_default(),
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
    let mut shapes: Vec<Shape> = records.iter().map(|r| r.shape).collect();
    shapes.dedup();
    for shape in shapes {
        if let Some(r) = records.iter().rev().find(|r| r.shape == shape) {
            rows.push(reference_row("cuBLAS bf16", shape, &r.cublas_bf16));
            if let Some(t) = &r.cublas_sgemm {
                rows.push(reference_row("cuBLAS SGEMM (fp32)", shape, t));
            }
        }
    }
    println!("{}", Table::new(rows).with(Style::rounded()));
}
