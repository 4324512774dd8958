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
    Timing::from_samples(&times, &shape)
        .ok_or_else(|| Error::Other(format!("{what}: the events gave no usable times ({times:?})")))
}
