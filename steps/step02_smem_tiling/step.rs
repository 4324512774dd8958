//! Step 02 · smem_tiling: what this step launches and how.
//!
//! One block per `BM`×`BN` tile of `C`, one thread per output, and a `BK`-deep slice of `A` and of `B`
//! staged through (static) shared memory per iteration. The grid is rounded up to whole tiles; the
//! kernel zero-fills and skips what falls off the edges.

use crate::error::Result;
use crate::run::registry::{launch_with_pointers, Format, GemmOperands, KernelFile, KernelText, Step, Targets};
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig};

/// Rows of `C` per block (threads along `y`).
const BM: u32 = 32;
/// Columns of `C` per block (threads along `x`).
const BN: u32 = 32;
/// Depth of the K slice each block holds in shared memory at a time.
const BK: u32 = 32;

pub const STEP: Step = Step {
    id: 2,
    name: "smem_tiling",
    title: "shared-memory tiling: each block stages A and B tiles once for all its threads",
    predecessor: Some(1),
    format: Format::Bf16,
    kernels: &[KernelFile {
        path: "steps/step02_smem_tiling/kernel.cu",
        text: KernelText::File,
        targets: Targets::AnyGpu,
        entry: "gemm",
        defines: &[("BM", BM as u64), ("BN", BN as u64), ("BK", BK as u64)],
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
