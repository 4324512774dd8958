//! The `mma.sync` ceiling of the GPU at hand (`mma_sync_ceiling.cu`): the rate of bf16
//! `mma.sync.m16n8k16` with operands in registers, and fed by `ldmatrix` from shared memory as the sm80
//! twins feed it, timed in one alternating loop with cuBLAS bf16. An sm80 twin's record carries it, so
//! its "× ceiling" compares two kernels that ran minutes apart in one process, at the same clocks.

use crate::check::problem::{random_bf16, Operand};
use crate::error::{Error, Result};
use crate::run::registry::{GemmOperands, KernelFile, KernelText, Targets};
use crate::run::results::{CeilingTiming, MmaSyncCeiling};
use crate::run::session::Session;
use crate::run::timing::{self, Contender};
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};

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
        text: KernelText::Given(SOURCE),
        targets: Targets::Ampere,
        entry,
        defines: &[],
        max_dynamic_smem,
        launch: not_a_gemm,
    }
}

pub const REGISTERS: KernelFile = ceiling_kernel("mma_registers", 0);
pub const LDMATRIX: KernelFile = ceiling_kernel("mma_ldmatrix", LDMATRIX_SMEM);

/// The ceiling kernels compute no GEMM: they are launched by [`measure`] only.
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

/// Times both ceiling kernels and cuBLAS bf16 (at the session's shape) in one alternating loop.
pub fn measure(session: &Session, iters: Option<u32>) -> Result<MmaSyncCeiling> {
    let gpu = &session.gpu;
    let sms = gpu.info.sms;
    let (registers, _) = crate::run::loader::load_in(&gpu.ctx, gpu.major, gpu.minor, &REGISTERS)?;
    let (ldmatrix, _) = crate::run::loader::load_in(&gpu.ctx, gpu.major, gpu.minor, &LDMATRIX)?;
    // Four blocks per SM keep every scheduler's tensor pipe fed from registers; the ldmatrix-fed loop
    // holds 128 accumulators per thread, so one block per SM, as step 07's sm80 twin.
    let registers = Probe::new(registers, 4 * sms, 0, CHAINS * MMA_FLOPS);
    let ldmatrix = Probe::new(ldmatrix, sms, LDMATRIX_SMEM, 4.0 * 32.0 * MMA_FLOPS);
    let random: Vec<u16> = random_bf16(session.seed(), Operand::A, 2 * RANDOM_WORDS)
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
    let (random_ptr, sink_ptr) = (address(&random, stream), address(&sink, stream));
    let mut run_registers = |_: usize| registers.launch(stream, random_ptr, sink_ptr);
    let mut run_ldmatrix = |_: usize| ldmatrix.launch(stream, random_ptr, sink_ptr);
    let mut run_cublas = |i: usize| session.launch_cublas_bf16(i);
    let measured = timing::measure(
        gpu,
        session.shape,
        iters,
        &mut [
            Contender {
                name: "mma.sync ceiling (registers)",
                launch: &mut run_registers,
            },
            Contender {
                name: "mma.sync ceiling (ldmatrix)",
                launch: &mut run_ldmatrix,
            },
            Contender {
                name: "cuBLAS bf16",
                launch: &mut run_cublas,
            },
        ],
    )?;
    let [on_registers, on_ldmatrix, cublas] = &measured.timings[..] else {
        return Err(Error::Other("the ceiling's loop timed other than three kernels".into()));
    };
    Ok(MmaSyncCeiling {
        kernel: PATH.into(),
        source_hash: crate::run::provenance::source_hash(&REGISTERS),
        registers: registers.timing(on_registers.median_ms, on_registers.runs),
        ldmatrix: ldmatrix.timing(on_ldmatrix.median_ms, on_ldmatrix.runs),
        cublas_bf16: cublas.clone(),
        clocks: measured.clocks,
    })
}

/// A device buffer's address, for a kernel argument.
fn address<T>(slice: &cudarc::driver::CudaSlice<T>, stream: &CudaStream) -> u64 {
    use cudarc::driver::DevicePtr;
    let (pointer, _sync) = slice.device_ptr(stream);
    pointer
}
