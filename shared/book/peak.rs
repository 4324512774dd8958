//! Which peak, at which clock, and how much GPU time a measurement spans: the book's directives
//!
//! | directive                    | becomes                                                              |
//! |------------------------------|----------------------------------------------------------------------|
//! | `{{#ladder-peak}}`           | per results file: the dense bf16 peak at the datasheet's clock, at the GPU's maximum clock and at the clocks the recorded 4096³ loops ran at |
//! | `{{#ladder-peak datasheet}}` | inline: the datasheet's dense bf16 figure, `989 TFLOPS`              |
//! | `{{#ladder-rounds}}`         | how many rounds a loop times, and what that came to for each recorded 4096³ run |
//!
//! The peaks are arithmetic on the GPU's SM count and a clock, never a measurement: a Hopper SM's
//! tensor cores complete 4096 dense bf16 flops a clock, and the datasheet's figure assumes 1830 MHz.

use crate::run::registry::Format;
use crate::run::results::{significant, DeviceInfo, ResultsFile, StepRecord, Timing};
use crate::run::timing::{MAX_RUNS, MIN_RUNS, TARGET_SECONDS};
use std::fmt::Write as _;

/// Dense bf16 flops (a multiply and an add count two) that one Hopper SM's four tensor cores
/// complete per clock: 989.4 TFLOPS / (132 SMs × 1830 MHz).
pub const HOPPER_BF16_FLOPS_PER_SM_CLOCK: f64 = 4096.0;
/// The SM clock behind NVIDIA's dense bf16 figure for the H100 SXM and the H200 (989 TFLOPS for
/// their 132 SMs): lower than the maximum clock either reports.
pub const DATASHEET_CLOCK_MHZ: u32 = 1830;
/// The SM count of an H100 SXM and an H200, for the datasheet figure itself.
pub const DATASHEET_SMS: u32 = 132;

/// The dense bf16 peak of `sms` Hopper SMs at `mhz`, in TFLOPS.
pub fn bf16_peak_tflops(sms: u32, mhz: u32) -> f64 {
    sms as f64 * HOPPER_BF16_FLOPS_PER_SM_CLOCK * mhz as f64 * 1e6 / 1e12
}

/// `989 TFLOPS`: the datasheet's figure.
pub fn datasheet_text() -> String {
    format!("{:.0} TFLOPS", bf16_peak_tflops(DATASHEET_SMS, DATASHEET_CLOCK_MHZ))
}

/// Whether the peak arithmetic above holds for a device (compute capability 9.x: Hopper).
fn is_hopper(device: &DeviceInfo) -> bool {
    device.compute_capability.starts_with("9.")
}

fn tensor_core(r: &StepRecord) -> bool {
    crate::run::steps::get(r.step).is_ok_and(|s| s.format == Format::Bf16) && r.step >= 4
        || crate::run::steps::get(r.step).is_ok_and(|s| s.format == Format::Mxfp8)
}

fn at_4096(r: &StepRecord) -> bool {
    !r.sweep && r.shape.m == 4096 && r.shape.n == 4096 && r.shape.k == 4096
}

/// `, where the dense bf16 peak is 843 TFLOPS`: the clause a step's timing line ends with, for a
/// tensor-core step measured with its clock on a Hopper GPU; empty otherwise.
pub fn peak_at_clock_clause(r: &StepRecord, device: &DeviceInfo) -> String {
    match (&r.clocks, is_hopper(device) && tensor_core(r)) {
        (Some(c), true) => format!(
            " (dense bf16 peak at that median clock: {:.0} TFLOPS)",
            bf16_peak_tflops(device.sms, c.sm_mhz_median)
        ),
        _ => String::new(),
    }
}

/// ` (the round cap; 42.8 ms of the step's GPU time)`: what a record's timed launches add up to, for
/// its timing line, so that the line and [`rounds_table`] say the same thing.
pub fn timed_span_clause(r: &StepRecord) -> String {
    let cap = if r.time.runs == MAX_RUNS { "the round cap; " } else { "" };
    format!(" ({cap}{} ms of the step's GPU time)", significant(spent(&r.time), 3))
}

/// `{{#ladder-peak}}`: per results file, the three peaks.
pub fn peak_table(files: &[ResultsFile]) -> String {
    let mut out = String::new();
    for file in files {
        let d = &file.device;
        if !is_hopper(d) {
            let _ = writeln!(
                out,
                "{}: compute capability {}, for which this book has no peak arithmetic.\n",
                d.name, d.compute_capability
            );
            continue;
        }
        let _ = writeln!(
            out,
            "{}, {} SMs × {} dense bf16 flops a clock:\n",
            d.name, d.sms, HOPPER_BF16_FLOPS_PER_SM_CLOCK
        );
        out.push_str("| SM clock | which clock | dense bf16 peak |\n|---|---|---|\n");
        let _ = writeln!(
            out,
            "| {DATASHEET_CLOCK_MHZ} MHz | the clock NVIDIA's datasheet figure assumes ({} for {DATASHEET_SMS} SMs) | {:.0} TFLOPS |",
            datasheet_text(),
            bf16_peak_tflops(d.sms, DATASHEET_CLOCK_MHZ)
        );
        if let Some(max) = d.sm_clock_mhz {
            let _ = writeln!(
                out,
                "| {max} MHz | the highest SM clock the driver reports for this GPU (recorded with the results) | {:.0} TFLOPS |",
                bf16_peak_tflops(d.sms, max)
            );
        }
        let medians: Vec<u32> = file
            .records
            .iter()
            .filter(|r| at_4096(r) && tensor_core(r))
            .filter_map(|r| r.clocks.as_ref().map(|c| c.sm_mhz_median))
            .collect();
        if let (Some(lo), Some(hi)) = (medians.iter().min(), medians.iter().max()) {
            let (clock, peak) = if lo == hi {
                (
                    format!("{lo} MHz"),
                    format!("{:.0} TFLOPS", bf16_peak_tflops(d.sms, *lo)),
                )
            } else {
                (
                    format!("{lo}–{hi} MHz"),
                    format!(
                        "{:.0}–{:.0} TFLOPS",
                        bf16_peak_tflops(d.sms, *lo),
                        bf16_peak_tflops(d.sms, *hi)
                    ),
                )
            };
            let _ = writeln!(
                out,
                "| {clock} | the median SM clocks of the {} recorded 4096³ loops of tensor-core steps (each step's own is in its chapter's timing line) | {peak} |",
                medians.len()
            );
        }
        out.push('\n');
    }
    if out.is_empty() {
        out.push_str("Nothing is recorded yet, so no clock: the datasheet's figure alone is ");
        out.push_str(&datasheet_text());
        out.push_str(".\n");
    }
    out
}

/// The GPU time a contender's timed launches add up to, in milliseconds (median × launches).
fn spent(t: &Timing) -> f64 {
    t.median_ms * t.runs as f64
}

/// Every contender timed in a record's loop: the step, cuBLAS, and the baselines and alternative
/// designs timed beside it.
fn contenders(r: &StepRecord) -> impl Iterator<Item = &Timing> {
    let mx = r.mx.iter().flat_map(|m| {
        std::iter::once(&m.dequantize_then_cublas)
            .chain(m.cublas_f32_c.as_ref())
            .chain(m.cublaslt_fp8_tensorwise.as_ref())
    });
    [&r.time, &r.cublas_bf16]
        .into_iter()
        .chain(r.cublas_sgemm.as_ref())
        .chain(mx)
        .chain(r.alternatives.iter().map(|a| &a.time))
}

/// `{{#ladder-rounds}}`: the rule that picks the number of timed rounds, and per results file what
/// it came to at 4096³: rounds, the step's timed GPU time, the whole loop's, and the spread.
pub fn rounds_table(files: &[ResultsFile]) -> String {
    let mut out = format!(
        "Without `--iters`, the harness times as many rounds as fill about {} s of GPU time, but never fewer than {MIN_RUNS} or more than {MAX_RUNS}.",
        significant(TARGET_SECONDS, 2)
    );
    out.push_str(
        " A round is one launch of each contender. When one round is shorter than a second divided by the cap, the cap decides, and the measurement spans less than a second:\n\n",
    );
    for file in files {
        let mut rows: Vec<&StepRecord> = file.records.iter().filter(|r| at_4096(r)).collect();
        if rows.is_empty() {
            continue;
        }
        rows.sort_by_key(|r| r.step);
        let _ = writeln!(
            out,
            "{}, 4096³:\n\n| step | timed rounds | the step's timed GPU time | the whole loop's (every contender) | the step's fastest / slowest launch, against its median |\n|---|---|---|---|---|",
            file.device.name
        );
        for r in rows {
            let step_ms = spent(&r.time);
            let loop_ms = contenders(r).map(spent).sum::<f64>();
            let off = |ms: f64| 100.0 * (ms / r.time.median_ms - 1.0);
            let _ = writeln!(
                out,
                "| {} | {} | {} ms | {} ms | {:+.1} % / {:+.1} % |",
                r.label(),
                r.time.runs,
                significant(step_ms, 3),
                significant(loop_ms, 3),
                off(r.time.min_ms),
                off(r.time.max_ms),
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::results::tests::{device, record_of};

    #[test]
    fn the_datasheet_figure_and_the_maximum_clock() {
        assert_eq!(datasheet_text(), "989 TFLOPS");
        assert_eq!(bf16_peak_tflops(132, 1980).round(), 1071.0);
    }

    #[test]
    fn peaks_and_rounds_come_from_the_records() {
        let mut records = vec![
            record_of(1, "naive", 4096, 100.0),
            record_of(10, "persistent", 4096, 0.25),
        ];
        records[1].clocks = Some(crate::device::nvml::ClockSummary {
            samples: 3,
            sm_mhz_min: 1500,
            sm_mhz_median: 1515,
            sm_mhz_max: 1530,
            power_w_mean: None,
            power_limit_w: None,
            power_capped_fraction: None,
        });
        let mut d = device("NVIDIA H200");
        d.compute_capability = "9.0".into();
        d.sms = 132;
        d.sm_clock_mhz = Some(1980);
        let file = ResultsFile {
            device: d.clone(),
            records,
            superseded: Vec::new(),
        };
        let table = peak_table(std::slice::from_ref(&file));
        assert!(
            table.contains("| 1830 MHz |") && table.contains("989 TFLOPS"),
            "{table}"
        );
        assert!(
            table.contains("| 1980 MHz |") && table.contains("1071 TFLOPS"),
            "{table}"
        );
        // Only the tensor-core step's clock counts: 132 × 4096 × 1515 MHz.
        assert!(
            table.contains("| 1515 MHz |") && table.contains("819 TFLOPS"),
            "{table}"
        );
        assert!(peak_at_clock_clause(&file.records[1], &d).contains("819 TFLOPS"));
        assert!(peak_at_clock_clause(&file.records[0], &d).is_empty());
        let mut capped = file.records[1].clone();
        capped.time.runs = MAX_RUNS;
        assert!(timed_span_clause(&capped).starts_with(" (the round cap; "));
        assert!(!timed_span_clause(&file.records[0]).contains("cap"));
        let rounds = rounds_table(std::slice::from_ref(&file));
        assert!(rounds.contains(&format!("more than {MAX_RUNS}")), "{rounds}");
        assert!(rounds.contains("10 persistent"), "{rounds}");
    }
}
