//! Timing with CUDA events, the step and cuBLAS alternately in one loop.
//!
//! Why alternate. An H100 or H200 running a large GEMM is limited by power, not by its clock table:
//! the driver lowers the SM clock until the board draws no more than its limit, and the clock keeps
//! moving with temperature and load (at 8192³ on an H200, cuBLAS's own median spread over 17% from one
//! measurement to the next). Timing the step for a second and cuBLAS for the next second compares two
//! different GPUs; whichever ran while the clocks were higher wins, and a ratio near 1 says nothing.
//! So every measurement here is one loop that launches the contenders in turn, A B A B … (the step,
//! cuBLAS bf16, and for the CUDA-core steps cuBLAS SGEMM), each launch bracketed by its own pair of
//! events; each contender's median is taken over its own launches, and the ratio of two medians from
//! the same loop compares the kernels at the same clocks and the same temperature.
//!
//! Warm-up. The clocks settle only after the GPU has been busy for a while (CUTLASS's profiler notes
//! that they oscillate for the first seconds), so the loop first runs about [`WARMUP_SECONDS`] of
//! alternating launches that are not timed, then the timed ones, with no pause between: the GPU never
//! idles (and never re-boosts) between warm-up and measurement.
//!
//! Clocks. While the timed launches run, a host thread reads the SM clock, the power draw and whether
//! the driver is capping power through NVML ([`crate::device::nvml`]); the summary is recorded with the step.
//!
//! Order. Which slot of a round a contender holds is not neutral: the kernel after another starts in
//! the tail of the one before, finds the clock it left, and may be followed by a fast or a slow
//! neighbour. A fixed order (step, cuBLAS, alternatives) gave the step timed a second time as its own
//! alternative a ratio of up to 1.013, and a pair of variants swapped their winner when they swapped
//! slots (review v3, E-1 and U-1). So the order changes from round to round ([`round_order`]): a
//! Williams design, a Latin square in which every contender holds every slot, and follows every other
//! contender, equally often over [`rotation_period`] rounds; the timed rounds are a whole number of
//! periods.
//!
//! L2. Every launch takes the next of several copies of the inputs (together at least three times
//! the L2), so no launch finds its operands left in L2 by the one before.
//!
//! Hangs. Launches are enqueued in chunks of about [`CHUNK_MS`], at most two chunks ahead of the GPU,
//! and every wait goes through [`gpu::wait_for`] with the hang deadline: a kernel that never finishes
//! is reported as hung instead of blocking the host in a full launch queue.

use crate::check::problem::Shape;
use crate::device::gpu::{self, hang_deadline, Gpu};
use crate::device::nvml::{ClockSummary, Sampler};
use crate::error::{Error, Result};
use crate::run::results::Timing;
pub use crate::run::rounds::{rotation_period, round_order};
use cudarc::driver::CudaEvent;
use std::collections::VecDeque;
use std::time::Duration;

/// GPU time of the timed launches when `--iters` is not given: enough for a stable median.
pub const TARGET_SECONDS: f64 = 1.0;
/// Bounds on the timed rounds (one launch of each contender) when `--iters` is not given.
pub const MIN_RUNS: u32 = 5;
pub const MAX_RUNS: u32 = 200;
/// Untimed alternating launches before the timed ones, to let the clocks settle.
pub const WARMUP_SECONDS: f64 = 0.75;
/// At most this many warm-up rounds, however short a round is (tiny shapes are launch-bound).
const MAX_WARMUP_ROUNDS: u32 = 20_000;
/// Launches are enqueued in chunks of about this much GPU time, at most two chunks ahead.
pub const CHUNK_MS: f64 = 50.0;
const MAX_CHUNK_ROUNDS: u32 = 64;

/// One kernel taking part in a measurement: `launch(i)` enqueues one GEMM on input set `i`.
pub struct Contender<'a> {
    pub name: &'a str,
    pub launch: &'a mut dyn FnMut(usize) -> Result<()>,
}

/// What one alternating loop measured.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// One per contender, in the order given.
    pub timings: Vec<Timing>,
    /// NVML's SM clock and power during the timed launches; `None` without NVML.
    pub clocks: Option<ClockSummary>,
    /// GPU time spent in the untimed warm-up rounds (the probe round included), in milliseconds.
    pub warmup_ms: f64,
}

/// How a loop is laid out, decided from the time of one round of launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Untimed rounds after the probe round.
    pub warmup_rounds: u32,
    /// Timed rounds.
    pub runs: u32,
    /// Rounds enqueued between two waits.
    pub chunk_rounds: u32,
}

impl Plan {
    /// The plan for rounds of `round_ms` (one launch of each of `contenders`), `iters` timed rounds if
    /// given. The timed rounds are rounded up to whole periods of the order's rotation
    /// ([`rotation_period`]), so that no contender holds a slot more often than another.
    pub fn for_round(round_ms: f64, iters: Option<u32>, contenders: usize) -> Plan {
        let round_ms = if round_ms.is_finite() { round_ms.max(1e-3) } else { 1e3 };
        // The probe round counts towards the warm-up.
        let warmup = ((WARMUP_SECONDS * 1e3 / round_ms).ceil() - 1.0).max(0.0);
        let runs = (TARGET_SECONDS * 1e3 / round_ms) as u32;
        let runs = iters.unwrap_or(runs.clamp(MIN_RUNS, MAX_RUNS)).max(1);
        Plan {
            warmup_rounds: (warmup as u32).min(MAX_WARMUP_ROUNDS),
            runs: runs.next_multiple_of(rotation_period(contenders)),
            chunk_rounds: ((CHUNK_MS / round_ms) as u32).clamp(1, MAX_CHUNK_ROUNDS),
        }
    }
}

/// Splits per-launch times, listed round by round in contender order (contender 0, 1, …, 0, 1, …,
/// whatever order the round launched them in), into one series per
/// contender and summarises each. An error names the contender whose events gave unusable times.
pub fn summarise_rounds(times_ms: &[f64], names: &[&str], shape: &Shape) -> Result<Vec<Timing>> {
    let k = names.len();
    if k == 0 || !times_ms.len().is_multiple_of(k) {
        return Err(Error::Other(format!(
            "{} launch times for {k} contenders: not whole rounds",
            times_ms.len()
        )));
    }
    names
        .iter()
        .enumerate()
        .map(|(j, name)| {
            let own: Vec<f64> = times_ms.iter().skip(j).step_by(k).copied().collect();
            Timing::from_samples(&own, shape)
                .ok_or_else(|| Error::Other(format!("{name}: the events gave no usable times ({own:?})")))
        })
        .collect()
}

/// Enqueued work the host may run ahead of: a marker event after each chunk, at most two chunks
/// outstanding.
struct Pipeline<'g> {
    gpu: &'g Gpu,
    what: String,
    deadline: Duration,
    markers: VecDeque<CudaEvent>,
}

impl Pipeline<'_> {
    /// Closes a chunk; waits for the one before the previous to finish.
    fn mark(&mut self) -> Result<()> {
        let marker = self.gpu.event()?;
        record(self.gpu, &marker)?;
        self.markers.push_back(marker);
        while self.markers.len() > 2 {
            let oldest = self.markers.pop_front().expect("more than two");
            gpu::wait_for(&oldest, &self.what, self.deadline)?;
        }
        Ok(())
    }

    /// Waits for everything enqueued.
    fn drain(&mut self) -> Result<()> {
        self.mark()?;
        while let Some(marker) = self.markers.pop_front() {
            gpu::wait_for(&marker, &self.what, self.deadline)?;
        }
        self.gpu
            .ctx
            .check_err()
            .map_err(Error::cuda(format!("running {}", self.what)))
    }
}

fn record(gpu: &Gpu, event: &CudaEvent) -> Result<()> {
    event.record(&gpu.stream).map_err(Error::cuda("recording an event"))
}

fn elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f64> {
    Ok(start.elapsed_ms(end).map_err(Error::cuda("reading an event"))? as f64)
}

/// Times the contenders in one alternating loop: a probe round, about [`WARMUP_SECONDS`] of untimed
/// rounds, then `iters` timed rounds (default: about `TARGET_SECONDS` of them), every launch
/// bracketed by its own events, the SM clock sampled throughout the timed rounds.
pub fn measure(gpu: &Gpu, shape: Shape, iters: Option<u32>, contenders: &mut [Contender]) -> Result<Measurement> {
    let names: Vec<&str> = contenders.iter().map(|c| c.name).collect();
    let k = contenders.len();
    if k == 0 {
        return Err(Error::Other("nothing to time".into()));
    }
    // Opened (once per process) before any launch: loading NVML must not leave the GPU idle later.
    let nvml = gpu.nvml();
    let mut next_set = 0usize;
    // Round `r` launches the contenders in the order `round_order(r, k)`; the input sets rotate by
    // launch, whatever the order, so that no launch finds its operands in L2.
    let mut round = |r: u32, contenders: &mut [Contender], events: Option<&[(CudaEvent, CudaEvent)]>| -> Result<()> {
        for j in round_order(r, k) {
            if let Some(events) = events {
                record(gpu, &events[j].0)?;
            }
            (contenders[j].launch)(next_set)?;
            next_set += 1;
            if let Some(events) = events {
                record(gpu, &events[j].1)?;
            }
        }
        Ok(())
    };

    // The probe round: each launch waited on by itself, so that a kernel that hangs at once is named.
    let probe: Vec<(CudaEvent, CudaEvent)> = (0..k)
        .map(|_| Ok((gpu.event()?, gpu.event()?)))
        .collect::<Result<_>>()?;
    round(0, contenders, Some(&probe))?;
    let mut round_ms = 0.0;
    for (j, (start, end)) in probe.iter().enumerate() {
        gpu::wait_for(end, names[j], hang_deadline())?;
        round_ms += elapsed_ms(start, end)?;
    }
    gpu.ctx
        .check_err()
        .map_err(Error::cuda(format!("running {}", names.join(" and "))))?;
    let plan = Plan::for_round(round_ms, iters, k);

    // Every event made now, so that nothing slows the host between warm-up and timed launches.
    let events: Vec<Vec<(CudaEvent, CudaEvent)>> = (0..plan.runs)
        .map(|_| (0..k).map(|_| Ok((gpu.event()?, gpu.event()?))).collect::<Result<_>>())
        .collect::<Result<_>>()?;
    let mut pipeline = Pipeline {
        gpu,
        what: format!("{} (timed alternately)", names.join(" or ")),
        deadline: hang_deadline() * k as u32,
        markers: VecDeque::new(),
    };
    let (warm_start, warm_end) = (gpu.event()?, gpu.event()?);
    record(gpu, &warm_start)?;
    for r in 0..plan.warmup_rounds {
        round(r + 1, contenders, None)?;
        if (r + 1).is_multiple_of(plan.chunk_rounds) {
            pipeline.mark()?;
        }
    }
    record(gpu, &warm_end)?;

    let sampler = nvml.map(Sampler::start);
    for (r, round_events) in events.iter().enumerate() {
        round(r as u32, contenders, Some(round_events))?;
        if (r as u32 + 1).is_multiple_of(plan.chunk_rounds) {
            pipeline.mark()?;
        }
    }
    pipeline.drain()?;
    let clocks = sampler.and_then(Sampler::finish);

    let warmup_ms = round_ms + elapsed_ms(&warm_start, &warm_end)?;
    let mut times = Vec::with_capacity(plan.runs as usize * k);
    for (start, end) in events.iter().flatten() {
        times.push(elapsed_ms(start, end)?);
    }
    Ok(Measurement {
        timings: summarise_rounds(&times, &names, &shape)?,
        clocks,
        warmup_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_warm_up_for_the_settling_time_and_time_about_a_second() {
        // cuBLAS + a step at 4096³ on an H200: ~0.34 ms a round.
        let p = Plan::for_round(0.34, None, 2);
        assert_eq!(p.warmup_rounds, 2205);
        assert_eq!(p.runs, MAX_RUNS);
        assert_eq!(p.chunk_rounds, 64);
        // The naive step at 8192³: one round is longer than the warm-up; only the probe warms.
        let p = Plan::for_round(2200.0, None, 1);
        assert_eq!((p.warmup_rounds, p.runs, p.chunk_rounds), (0, MIN_RUNS, 1));
        // A middling round: warm-up and runs by time, chunks of ~50 ms.
        let p = Plan::for_round(10.0, None, 2);
        assert_eq!((p.warmup_rounds, p.runs, p.chunk_rounds), (74, 100, 5));
        // --iters sets the timed rounds only; the warm-up stays.
        let p = Plan::for_round(0.34, Some(8), 2);
        assert_eq!((p.warmup_rounds, p.runs), (2205, 8));
        // A launch-bound shape: the warm-up is capped; nonsense times do not break the plan.
        assert_eq!(Plan::for_round(0.001, None, 2).warmup_rounds, MAX_WARMUP_ROUNDS);
        assert_eq!(Plan::for_round(f64::NAN, None, 1).runs, MIN_RUNS);
        assert_eq!(Plan::for_round(0.0, Some(0), 1).runs, 1);
    }

    /// The timed rounds are whole periods of the rotation: 7 asked of 2 contenders is 8 rounds, the
    /// 200 of a full second of 9 contenders (odd: a period of 18) is 216.
    #[test]
    fn plans_time_whole_periods_of_the_rotation() {
        assert_eq!(Plan::for_round(0.34, Some(7), 2).runs, 8);
        assert_eq!(Plan::for_round(0.34, None, 9).runs, 216);
        assert_eq!(Plan::for_round(0.34, Some(1), 3).runs, 6);
        assert_eq!(Plan::for_round(0.34, Some(5), 10).runs, 10);
    }

    #[test]
    fn rounds_are_split_per_contender() {
        let shape = Shape::square(1024);
        // step, cuBLAS bf16, SGEMM, three rounds.
        let times = [1.0, 0.5, 9.0, 3.0, 0.7, 8.0, 2.0, 0.6, 7.0];
        let t = summarise_rounds(&times, &["step", "bf16", "sgemm"], &shape).unwrap();
        let medians: Vec<f64> = t.iter().map(|t| t.median_ms).collect();
        assert_eq!(medians, [2.0, 0.6, 8.0]);
        assert!(t.iter().all(|t| t.runs == 3));
        assert_eq!((t[0].min_ms, t[0].max_ms), (1.0, 3.0));
        assert!(summarise_rounds(&times[..8], &["a", "b", "c"], &shape).is_err());
        let err = summarise_rounds(&[1.0, f64::NAN], &["step", "cuBLAS"], &shape).unwrap_err();
        assert!(err.to_string().starts_with("cuBLAS:"), "{err}");
    }

    /// The reason for alternating, on synthetic numbers: the clock falls by 17% across the loop (the
    /// power limit at 8192³). Timed one after the other, the kernel that ran first (at the higher
    /// clock) looks faster than it is; timed alternately, both medians see the same clocks and their
    /// ratio is the true one.
    #[test]
    fn alternation_keeps_the_true_ratio_when_the_clock_drifts() {
        let shape = Shape::square(8192);
        let (step_cycles, cublas_cycles) = (0.95, 1.0); // the step is truly 5% faster
        let n = 200;
        let clock = |i: usize, of: usize| 1.0 - 0.17 * i as f64 / (of - 1) as f64;
        // Sequential: 200 step launches, then 200 cuBLAS launches, the clock falling throughout.
        let step_first: Vec<f64> = (0..n).map(|i| step_cycles / clock(i, 2 * n)).collect();
        let cublas_after: Vec<f64> = (n..2 * n).map(|i| cublas_cycles / clock(i, 2 * n)).collect();
        let sequential = Timing::from_samples(&cublas_after, &shape).unwrap().median_ms
            / Timing::from_samples(&step_first, &shape).unwrap().median_ms;
        // Alternating: step, cuBLAS, step, cuBLAS, … over the same fall.
        let alternating: Vec<f64> = (0..2 * n)
            .map(|i| (if i % 2 == 0 { step_cycles } else { cublas_cycles }) / clock(i, 2 * n))
            .collect();
        let t = summarise_rounds(&alternating, &["step", "cuBLAS"], &shape).unwrap();
        let ratio = t[0].tflops / t[1].tflops;
        let truth = cublas_cycles / step_cycles;
        assert!((ratio - truth).abs() < 2e-3 * truth, "alternating {ratio} vs {truth}");
        assert!(
            sequential > truth * 1.08,
            "sequential flatters the step: {sequential} vs {truth}"
        );
    }
}
