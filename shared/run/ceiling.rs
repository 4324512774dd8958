//! The `mma.sync` ceiling of the GPU at hand (`mma_sync_ceiling.cu`): the rate of bf16
//! `mma.sync.m16n8k16` with operands in registers, and fed by `ldmatrix` from shared memory as the sm80
//! twins feed it. Both kernels are contenders in an sm80 twin's own alternating loop, beside the twin
//! and cuBLAS bf16, so the twin's record carries a "× ceiling" of two kernels timed in turn, at the same
//! clocks.

use crate::check::problem::{random_bf16, Operand};
use crate::device::gpu::Gpu;
use crate::device::nvml::ClockSummary;
use crate::error::{Error, Result};
use crate::run::registry::{GemmOperands, KernelFile, Targets};
use crate::run::results::{CeilingTiming, MmaSyncCeiling, Timing};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

/// The kernels' file, from the crate root.
pub const PATH: &str = "shared/run/mma_sync_ceiling.cu";
const SOURCE: &str = include_str!("mma_sync_ceiling.cu");

/// Words of random bf16 pairs the kernels read their operands from (`RANDOM_WORDS` in the file).
const RANDOM_WORDS: usize = 65536;
/// Threads per block of both kernels.
const THREADS: u32 = 256;
/// Independent accumulator tiles per warp in `mma_registers` (`CHAINS`).
const CHAINS: f64 = 16.0;
/// `mma_ldmatrix`'s shared memory: a 256-row A tile and a 128-row B tile of 128-byte rows.
const LDMATRIX_SMEM: u32 = (256 + 128) * 128;
/// Floating-point operations of one `mma.sync.m16n8k16`.
const MMA_FLOPS: f64 = 2.0 * 16.0 * 8.0 * 16.0;
/// Each launch does about as much work as a 4096³ GEMM, a few milliseconds.
const FLOPS_PER_LAUNCH: f64 = 2.0 * 4096.0 * 4096.0 * 4096.0;

/// `mma_registers` or `mma_ldmatrix`: the file compiled with one entry each (as a step's kernel).
const fn ceiling_kernel(entry: &'static str, max_dynamic_smem: u32) -> KernelFile {
    KernelFile {
        path: PATH,
        source: SOURCE,
        targets: Targets::Ampere,
        entry,
        defines: &[],
        max_dynamic_smem,
        launch: not_a_gemm,
    }
}

pub const REGISTERS: KernelFile = ceiling_kernel("mma_registers", 0);
pub const LDMATRIX: KernelFile = ceiling_kernel("mma_ldmatrix", LDMATRIX_SMEM);

/// The ceiling kernels compute no GEMM: they are launched by [`Probes`] only.
fn not_a_gemm(_: &CudaFunction, _: &CudaStream, _: &GemmOperands) -> Result<()> {
    Err(Error::Other(format!("{PATH} holds rate probes, not a GEMM")))
}

/// One ceiling kernel as launched: blocks, shared memory, iterations and the flops that makes.
struct Probe {
    function: CudaFunction,
    config: LaunchConfig,
    iterations: i32,
    flops: f64,
}

impl Probe {
    /// `blocks` blocks of eight warps, each warp doing `flops_per_warp_iteration` per iteration, as
    /// many iterations as make about [`FLOPS_PER_LAUNCH`].
    fn new(function: CudaFunction, blocks: u32, smem: u32, flops_per_warp_iteration: f64) -> Probe {
        let per_iteration = blocks as f64 * (THREADS / 32) as f64 * flops_per_warp_iteration;
        let iterations = (FLOPS_PER_LAUNCH / per_iteration).round().max(1.0);
        Probe {
            function,
            config: LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: smem,
            },
            iterations: iterations as i32,
            flops: per_iteration * iterations,
        }
    }

    fn launch(&self, stream: &CudaStream, random: u64, sink: u64) -> Result<()> {
        let mut args = stream.launch_builder(&self.function);
        args.arg(&random).arg(&sink).arg(&self.iterations);
        // SAFETY: both entries take (const u32* random, float* sink, int iterations); `random` holds
        // RANDOM_WORDS words and `sink` one float per launched thread.
        unsafe { args.launch(self.config) }
            .map(|_| ())
            .map_err(Error::cuda("launching an mma.sync ceiling kernel"))
    }

    fn timing(&self, median_ms: f64, runs: u32) -> CeilingTiming {
        CeilingTiming {
            median_ms,
            runs,
            flops: self.flops,
            tflops: self.flops / (median_ms * 1e9),
        }
    }
}

/// Both ceiling kernels loaded, with the random operands they read and the sink they write: two more
/// contenders for an sm80 twin's own timing loop ([`crate::run::session::Session::time_step`]), so that
/// the twin, its ceiling and cuBLAS are timed at the same clocks and "× ceiling" compares like with like.
pub struct Probes {
    registers: Probe,
    ldmatrix: Probe,
    random: CudaSlice<u16>,
    sink: CudaSlice<f32>,
}

impl Probes {
    /// The contenders' names in the loop.
    pub const LDMATRIX_NAME: &'static str = "mma.sync ceiling (ldmatrix)";
    pub const REGISTERS_NAME: &'static str = "mma.sync ceiling (registers)";

    /// Compiles and loads both kernels for `gpu` and uploads their operands (random bf16 from `seed`).
    pub fn load(gpu: &Gpu, seed: u64) -> Result<Probes> {
        let sms = gpu.info.sms;
        let (registers, _) = crate::run::loader::load_in(&gpu.ctx, gpu.major, gpu.minor, &REGISTERS)?;
        let (ldmatrix, _) = crate::run::loader::load_in(&gpu.ctx, gpu.major, gpu.minor, &LDMATRIX)?;
        // Four blocks per SM keep every scheduler's tensor pipe fed from registers; the ldmatrix-fed
        // loop holds 128 accumulators per thread, so one block per SM, as step 07's sm80 twin.
        let registers = Probe::new(registers, 4 * sms, 0, CHAINS * MMA_FLOPS);
        let ldmatrix = Probe::new(ldmatrix, sms, LDMATRIX_SMEM, 4.0 * 32.0 * MMA_FLOPS);
        let random: Vec<u16> = random_bf16(seed, Operand::A, 2 * RANDOM_WORDS)
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let stream = &gpu.stream;
        let random = stream
            .clone_htod(&random)
            .map_err(Error::cuda("uploading random operands"))?;
        // SAFETY: written by every launch before anything reads it, and nothing reads it but the kernels.
        let sink = unsafe { stream.alloc::<f32>((4 * sms * THREADS) as usize) }
            .map_err(Error::cuda("allocating the ceiling's sink"))?;
        Ok(Probes {
            registers,
            ldmatrix,
            random,
            sink,
        })
    }

    /// Enqueues the ldmatrix-fed ceiling kernel once.
    pub fn launch_ldmatrix(&self, stream: &CudaStream) -> Result<()> {
        self.ldmatrix
            .launch(stream, address(&self.random, stream), address(&self.sink, stream))
    }

    /// Enqueues the registers-only ceiling kernel once.
    pub fn launch_registers(&self, stream: &CudaStream) -> Result<()> {
        self.registers
            .launch(stream, address(&self.random, stream), address(&self.sink, stream))
    }

    /// The record of both ceilings from their timings in the twin's loop, beside that loop's cuBLAS
    /// bf16 and clocks (the ceilings' flops are their own, not the loop's shape's).
    pub fn record(
        &self,
        ldmatrix: &Timing,
        registers: &Timing,
        cublas_bf16: &Timing,
        clocks: Option<ClockSummary>,
    ) -> MmaSyncCeiling {
        MmaSyncCeiling {
            kernel: PATH.into(),
            source_hash: crate::run::provenance::source_hash(&REGISTERS),
            registers: self.registers.timing(registers.median_ms, registers.runs),
            ldmatrix: self.ldmatrix.timing(ldmatrix.median_ms, ldmatrix.runs),
            cublas_bf16: cublas_bf16.clone(),
            clocks,
            in_step_loop: true,
        }
    }
}

/// A device buffer's address, for a kernel argument.
fn address<T>(slice: &cudarc::driver::CudaSlice<T>, stream: &CudaStream) -> u64 {
    use cudarc::driver::DevicePtr;
    let (pointer, _sync) = slice.device_ptr(stream);
    pointer
}
