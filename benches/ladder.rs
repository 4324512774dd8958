//! `cargo bench`: every step (and cuBLAS bf16) under criterion, timed by CUDA events rather than the
//! host clock. Size with GEMM_LADDER_BENCH_SIZE (default 4096). Without a GPU it says so and stops.

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{Criterion, Throughput};
use gemm_ladder::check::problem::Shape;
use gemm_ladder::device::gpu::{self, hang_deadline, Gpu};
use gemm_ladder::run::session::Session;
use gemm_ladder::{device::libs, run::steps};
use std::sync::Arc;

/// A criterion measurement that brackets each batch of launches with CUDA events on the session's
/// stream, so it reports GPU time (in nanoseconds) and excludes launch overhead on the host.
struct CudaEvents {
    ctx: Arc<cudarc::driver::CudaContext>,
    stream: Arc<cudarc::driver::CudaStream>,
}

impl CudaEvents {
    fn event(&self) -> cudarc::driver::CudaEvent {
        // CU_EVENT_DEFAULT: events made with no flags here cannot be timed.
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let event = self.ctx.new_event(flags).expect("creating a CUDA event");
        event.record(&self.stream).expect("recording a CUDA event");
        event
    }
}

impl Measurement for CudaEvents {
    type Intermediate = cudarc::driver::CudaEvent;
    type Value = f64;

    fn start(&self) -> Self::Intermediate {
        self.event()
    }

    fn end(&self, start: Self::Intermediate) -> f64 {
        let end = self.event();
        gpu::wait_for(&end, "a benchmarked batch", hang_deadline()).expect("waiting for the GPU");
        start.elapsed_ms(&end).expect("reading CUDA events") as f64 * 1e6
    }

    fn add(&self, a: &f64, b: &f64) -> f64 {
        a + b
    }

    fn zero(&self) -> f64 {
        0.0
    }

    fn to_f64(&self, value: &f64) -> f64 {
        *value
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &GpuTime
    }
}

/// Nanoseconds shown as µs or ms; throughput given in flops shown as TFLOPS.
struct GpuTime;

impl ValueFormatter for GpuTime {
    fn scale_values(&self, typical_ns: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = if typical_ns < 1e6 { (1e-3, "µs") } else { (1e-6, "ms") };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(&self, _typical: f64, throughput: &Throughput, values: &mut [f64]) -> &'static str {
        let per_iteration = match throughput {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n as f64,
            _ => 1.0,
        };
        // value is ns per iteration; flops / ns = GFLOP/s; / 1e3 = TFLOPS.
        values.iter_mut().for_each(|v| *v = per_iteration / *v / 1e3);
        "TFLOPS"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

fn main() {
    let gpu = match (libs::driver_present(), gemm_ladder::device::nvrtc::present()) {
        (true, true) => match Gpu::open() {
            Ok(gpu) => gpu,
            Err(e) => return println!("ladder bench: skipped ({e})"),
        },
        _ => return println!("ladder bench: skipped (no GPU driver or no NVRTC on this machine)"),
    };
    let size = std::env::var("GEMM_LADDER_BENCH_SIZE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4096);
    let shape = Shape::square(size);
    let measurement = CudaEvents {
        ctx: gpu.ctx.clone(),
        stream: gpu.stream.clone(),
    };
    let mut session = Session::new(gpu, shape, 42).unwrap_or_else(|e| panic!("{e}"));
    let mut criterion = Criterion::default().with_measurement(measurement).configure_from_args();
    let mut group = criterion.benchmark_group(format!("gemm {shape}"));
    group.throughput(Throughput::Elements(shape.flops() as u64));
    group.sample_size(20);
    for step in steps::ALL {
        if session.kernel(step.id).is_err() {
            println!("{}: skipped (not for this GPU)", step.binary());
            continue;
        }
        let mut set = 0;
        group.bench_function(step.binary(), |b| {
            b.iter(|| {
                set += 1;
                session.launch(step.id, set).expect("launching")
            })
        });
    }
    let mut set = 0;
    group.bench_function("cublas_bf16", |b| {
        b.iter(|| {
            set += 1;
            session.launch_cublas_bf16(set).expect("launching cuBLAS")
        })
    });
    group.finish();
    criterion.final_summary();
}
