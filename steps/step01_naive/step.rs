//! Step 01 · naive: what this step launches and how.
//!
//! One thread per element of `C`, in 2D blocks of `BN`×`BM` threads with `x` running along N, and a
//! grid rounded up to cover all of `C` (the kernel skips threads that fall off its edges).

use crate::error::Result;
use crate::run::registry::{launch_with_pointers, Format, GemmOperands, KernelFile, KernelText, Step, Targets};
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig};

/// Threads per block along N (`threadIdx.x`): a whole warp shares one row of `C`.
const BN: u32 = 32;
/// Threads per block along M (`threadIdx.y`).
const BM: u32 = 32;

pub const STEP: Step = Step {
    id: 1,
    name: "naive",
    title: "naive: one thread per output, operands straight from global memory",
    predecessor: None,
    format: Format::Bf16,
    kernels: &[KernelFile {
        path: "steps/step01_naive/kernel.cu",
        text: KernelText::File,
        targets: Targets::AnyGpu,
        entry: "gemm",
        defines: &[("BM", BM as u64), ("BN", BN as u64)],
        max_dynamic_smem: 0,
        launch,
    }],
    alternatives: &[],
    workspace: None,
};

fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
    let tiles_n = ops.shape.n.div_ceil(BN as usize) as u32;
    let tiles_m = ops.shape.m.div_ceil(BM as usize) as u32;
    let config = LaunchConfig {
        grid_dim: (tiles_n, tiles_m, 1),
        block_dim: (BN, BM, 1),
        shared_mem_bytes: 0,
    };
    launch_with_pointers(func, stream, ops, config)
}
