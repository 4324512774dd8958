//! Step 03 · register_tiling: what this step launches and how.
//!
//! One block of `THREADS` = (`BM`/`TM`)·(`BN`/`TN`) threads per `BM`×`BN` tile of `C`; each thread
//! accumulates a `TM`×`TN` tile in registers. `A` and `B` pass through shared memory in `BK`-deep
//! slices, two buffers of each (static shared memory: 2·2·`BK`·128·4 bytes = 32 KiB).

use crate::error::Result;
use crate::run::registry::{launch_with_pointers, Format, GemmOperands, KernelFile, KernelText, Step, Targets};
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig};

/// Rows of `C` per block.
const BM: u32 = 128;
/// Columns of `C` per block.
const BN: u32 = 128;
/// Depth of each K slice: 16 makes every thread load exactly one 16-byte piece of `A` and of `B`.
const BK: u32 = 16;
/// Rows of the register tile each thread owns.
const TM: u32 = 8;
/// Columns of the register tile each thread owns.
const TN: u32 = 8;
/// One thread per register tile: (128 / 8) · (128 / 8) = 256.
const THREADS: u32 = (BM / TM) * (BN / TN);

pub const STEP: Step = Step {
    id: 3,
    name: "register_tiling",
    title: "register tiling: each thread computes an 8×8 tile of C from registers",
    predecessor: Some(2),
    format: Format::Bf16,
    kernels: &[KernelFile {
        path: "steps/step03_register_tiling/kernel.cu",
        text: KernelText::File,
        targets: Targets::AnyGpu,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("TM", TM as u64),
            ("TN", TN as u64),
            ("THREADS", THREADS as u64),
        ],
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
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    launch_with_pointers(func, stream, ops, config)
}
