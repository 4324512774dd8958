//! Timing with CUDA events: warm-up first, then many launches each bracketed by its own pair of
//! events, rotating through input copies so that no launch finds its operands in L2; the median is
//! the number we report.

use crate::error::{Error, Result};
use crate::gpu::{self, hang_deadline, Gpu};
use crate::problem::Shape;
use crate::results::Timing;

/// Launches wanted in a measurement when `--iters` is not given: enough for a stable median,
/// about a second of GPU time in all, never fewer than `MIN_RUNS`.
const TARGET_SECONDS: f64 = 1.0;
const MIN_RUNS: u32 = 5;
const MAX_RUNS: u32 = 200;
const WARMUP_RUNS: usize = 2;

/// Times `launch(i)` (which enqueues one GEMM using input set `i`) and returns the statistics.
pub fn measure(
    gpu: &Gpu,
    what: &str,
    shape: Shape,
    iters: Option<u32>,
    launch: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<Timing> {
    let record =
        |event: &cudarc::driver::CudaEvent| event.record(&gpu.stream).map_err(Error::cuda("recording an event"));
    // Warm-up: loads the module, settles clocks, and gives an estimate for the run count.
    let (warm_start, warm_end) = (gpu.event()?, gpu.event()?);
    record(&warm_start)?;
    for i in 0..WARMUP_RUNS {
        launch(i)?;
    }
    record(&warm_end)?;
    gpu::wait_for(&warm_end, what, hang_deadline() * WARMUP_RUNS as u32)?;
    gpu.ctx.check_err().map_err(Error::cuda(format!("running {what}")))?;
    let estimate_ms = warm_start
        .elapsed_ms(&warm_end)
        .map_err(Error::cuda("reading an event"))? as f64
        / WARMUP_RUNS as f64;
    let runs =
        iters.unwrap_or_else(|| ((TARGET_SECONDS * 1e3 / estimate_ms.max(1e-3)) as u32).clamp(MIN_RUNS, MAX_RUNS));

    let mut events = Vec::with_capacity(runs as usize);
    for _ in 0..runs {
        events.push((gpu.event()?, gpu.event()?));
    }
    for (i, (start, end)) in events.iter().enumerate() {
        record(start)?;
        launch(WARMUP_RUNS + i)?;
        record(end)?;
    }
    let mut times = Vec::with_capacity(runs as usize);
    for (start, end) in &events {
        gpu::wait_for(end, what, hang_deadline())?;
        times.push(start.elapsed_ms(end).map_err(Error::cuda("reading an event"))? as f64);
    }
    gpu.ctx.check_err().map_err(Error::cuda(format!("running {what}")))?;
    Ok(summarize(&times, shape))
}

/// Median, extremes and the TFLOPS the median implies.
pub fn summarize(times_ms: &[f64], shape: Shape) -> Timing {
    let mut sorted = times_ms.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median_ms = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    };
    Timing {
        median_ms,
        min_ms: sorted[0],
        max_ms: sorted[n - 1],
        runs: n as u32,
        tflops: shape.flops() / (median_ms * 1e-3) / 1e12,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let shape = Shape::square(1024);
        assert_eq!(summarize(&[3.0, 1.0, 2.0], shape).median_ms, 2.0);
        assert_eq!(summarize(&[4.0, 1.0, 3.0, 2.0], shape).median_ms, 2.5);
        let t = summarize(&[5.0, 1.0, 9.0], shape);
        assert_eq!((t.min_ms, t.max_ms, t.runs), (1.0, 9.0, 3));
    }

    #[test]
    fn tflops_from_the_median() {
        // 2·4096³ flops in 1 ms is 137.4 TFLOPS.
        let t = summarize(&[1.0], Shape::square(4096));
        assert!((t.tflops - 137.438_953_472).abs() < 1e-6);
    }
}
