//! Step 11 · mxfp8: what this step launches and how.
//!
//! The problem changes here: `A` and `B` are OCP fp8 e4m3 with one e8m0 scale per 1×32 block along K
//! (shared/check/mx.rs), and `C` is fp32. The kernels take the MX signature: `gemm(TensorMap a,
//! TensorMap b, TensorMap c, const u8* scale_a, const u8* scale_b, float* C, int M, int N, int K,
//! int use_tma_store)`, scales in the blocked layout (the alternative "overlapped", which converts B
//! while it computes, takes a map of B's e4m3 units, the workspace and the epoch too:
//! `BOperand::ConvertedInGemm`). Every Hopper kernel of the step, its own and the alternatives, is
//! launched by `HopperLaunch` on the shared persistent grid (`persistent::PersistentGemm`), with the
//! session's workspace for the converted B ([`workspace`]).
//!
//! Hopper (`sm90.cu`): no block-scaled MMA; the kernel emulates MX exactly: a pre-pass converts B to
//! bf16 once (each element with its block's scale folded in: exact), and step 10's persistent
//! pipeline runs on e4m3 A, converted by the consumers straight into the wgmma's register operand,
//! and that bf16 B; the GEMM is launched under the pre-pass's tail (a programmatic dependent launch).
//! Blackwell (`sm100.cu`, assembled, not run here): `tcgen05.mma … kind::mxf8f6f4.block_scale`, as
//! in "MXFP8 GEMM: Up to 99% of cuBLAS".
//! The sm80 twin (`sm80.cu`, any GPU of compute capability 8.0+): step 10's twin with each fragment
//! converted to bf16 in registers; its alternatives `sm80_fp8_mma.cu` (fp8 `mma.sync` per MX block,
//! promoted on the CUDA cores; sm_89+) and `sm80_block_scaled.cu` (`mma.sync … kind::mxf8f6f4
//! .block_scale`; sm_120a, assembled, not run here).

//!
//! The step's files: this one (the workspace, the Hopper kernel's tile and launch, the step's
//! registration), `launch.rs` (`HopperLaunch`, how B reaches a kernel, the pre-pass), `blackwell.rs`
//! (the Blackwell kernel's tile, TMEM and scales), and `alternatives/` (the designs that lost, each a
//! whole kernel file, with their geometry in `alternatives/mod.rs`).

#[path = "alternatives/mod.rs"]
mod alternatives;
#[path = "blackwell.rs"]
mod blackwell;
#[path = "launch.rs"]
mod launch;

use self::alternatives::{BLOCK_SCALED, FP8_MMA, FUSED, OVERLAPPED, PROMOTE, SMEM_B};
use self::launch::{BOperand, HopperLaunch, SharedOperand};
use crate::check::problem::Shape;
use crate::encoding::tma::TmaSwizzle;
use crate::error::Result;
use crate::run::registry::{Format, GemmOperands, KernelFile, Step, Targets};
use crate::run::workspace::WorkspaceNeed;
use cudarc::driver::{CudaFunction, CudaStream};

// ANCHOR: workspace
/// What step 11 needs of the session's workspace (`workspace::Workspace`): room for B converted to
/// bf16 (N×K), and a flag for each unit of that conversion (32 rows of B by one K tile of 64), which
/// the alternative "overlapped" raises to its launch's epoch. The flags come first, zeroed when the
/// workspace is made; the scratch after them, on a 1024-byte boundary.
pub fn workspace(shape: Shape, sms: u32) -> WorkspaceNeed {
    // The sm80 twin's stream-K takes step 10's (partial tiles and flags); the larger of the two.
    let stream_k = crate::run::steps::step10_persistent::workspace(shape, sms);
    WorkspaceNeed {
        flag_bytes: conversion_flag_bytes(shape).max(stream_k.flag_bytes),
        scratch_bytes: ((shape.n * shape.k * 2) as u64).max(stream_k.scratch_bytes),
    }
}

/// Rows of B and elements of K in one unit of B's conversion (one flag each).
pub const CONVERSION_ROWS: usize = 32;
pub const CONVERSION_K: usize = 64;

/// Rows of B in one panel of the tile order (a tile's columns of C): the units of a K tile are
/// counted by whole panels, so that the TMA thread of a ragged last panel finds a flag for each unit
/// of its slice.
const PANEL_ROWS: usize = 256;

/// The conversion's flags: one 32-bit word per unit, `4 × 8⌈N/256⌉ × ⌈K/64⌉` bytes.
pub fn conversion_flag_bytes(shape: Shape) -> u64 {
    let units_per_k_tile = shape.n.div_ceil(PANEL_ROWS) * (PANEL_ROWS / CONVERSION_ROWS);
    (4 * units_per_k_tile * shape.k.div_ceil(CONVERSION_K)) as u64
}
// ANCHOR_END: workspace

/// The Hopper kernel's tile, roles and launch: a pre-pass dequantizes B once into the scratch buffer,
/// then step 10's persistent pipeline runs on e4m3 A and bf16 B, A converted into registers by the
/// consumers.
mod hopper {
    use super::*;
    use crate::encoding::{sm90, SmemSwizzle};

    /// Rows of `C` per block: two consumer warpgroups of 64 rows, whose rows of A enter the MMAs from
    /// registers.
    pub const BM: u32 = 128;
    /// Columns of `C` per block: one `wgmma … m64n256k16` covers them.
    pub const BN: u32 = 256;
    /// Depth of the K tile: 64 elements, two scale blocks: 64 bytes of e4m3 A a row, 128 bytes of bf16
    /// B (step 10's K tile).
    pub const BK: u32 = 64;
    /// A producer warpgroup and two consumer warpgroups.
    pub const THREADS: u32 = 3 * 128;
    /// Stages in the ring: 32 KiB of bf16 B, 8 KiB of e4m3 A and 512 bytes of A's scales each. Four
    /// is as deep as fits beside the staging of C; three ran 14% slower (development runs).
    pub const STAGES: u32 = 4;
    /// Registers a thread after `setmaxnreg`, as in step 10.
    pub const PRODUCER_REGISTERS: u32 = 48;
    pub const CONSUMER_REGISTERS: u32 = 224;
    /// Blocks per cluster along M, sharing every B tile; the grid is one row of clusters.
    pub const CLUSTER_M: u32 = 2;
    /// Tile rows per group of the tile order (step 10's).
    pub const GROUP_M: u32 = 8;
    /// A store box of fp32 `C`, and a chunk of the epilogue: 64 rows × 32 columns (128-byte rows).
    pub const C_BOX_ROWS: u32 = 64;
    pub const C_BOX_COLS: u32 = 32;
    // ANCHOR: smem
    /// STAGES × 40.5 KiB of B, A and A's scales, the staging buffers of C (2 consumers × 2 × 8 KiB),
    /// two barriers per stage, 1 KiB to align: 4 · 40.5 + 32 + 1 = 195 KiB.
    pub const SMEM_BYTES: u32 =
        1024 + STAGES * (BN * BK * 2 + BM * BK + 512) + 2 * 2 * C_BOX_ROWS * 128 + 2 * STAGES * 8;
    // ANCHOR_END: smem
    /// Hopper lets a block have at most 227 KiB of shared memory.
    const _: () = assert!(SMEM_BYTES <= 227 * 1024);
    /// wgmma descriptor template of the bf16 B tile: 128-byte swizzle, K-major, SBO = 8 rows × 128
    /// bytes, step 10's (A comes from registers and has none).
    pub const B_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step11_mxfp8/sm90.cu",
        text: crate::run::registry::KernelText::File,
        targets: Targets::Hopper,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("STAGES", STAGES as u64),
            ("CLUSTER_M", CLUSTER_M as u64),
            ("GROUP_M", GROUP_M as u64),
            ("PRODUCER_REGISTERS", PRODUCER_REGISTERS as u64),
            ("CONSUMER_REGISTERS", CONSUMER_REGISTERS as u64),
            ("B_DESC", B_DESC),
        ],
        max_dynamic_smem: SMEM_BYTES,
        launch,
    };

    // ANCHOR: launch
    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        // The pre-pass, then the GEMM: e4m3 A with the 64-byte swizzle; the bf16 B as step 10 loads it,
        // each block of a cluster its half of the tile's rows for both; the grid trimmed to the fewest
        // clusters that finish the tiles in as many turns.
        HopperLaunch {
            bm: BM,
            bn: BN,
            bk: BK,
            swizzle: TmaSwizzle::B64,
            threads: THREADS,
            smem: SMEM_BYTES,
            cluster: CLUSTER_M,
            shared: SharedOperand::B,
            c_box: (C_BOX_ROWS, C_BOX_COLS),
            b: BOperand::Dequantized,
            balanced: true,
        }
        .launch(func, stream, ops)
    }
    // ANCHOR_END: launch
}

const HOPPER: KernelFile = hopper::KERNEL;

const BLACKWELL: KernelFile = blackwell::KERNEL;

/// The sm80 twin (`sm80.cu`): step 10's sm80 twin on e4m3, each fragment converted to bf16 in
/// registers between `ldmatrix` and the bf16 `mma.sync` (exact: every MX value is a bf16), the scales
/// copied beside the ring, fp32 C through the warp-private chunks. The only MX path an A100 has. Its
/// designs (a) (fp8 `mma.sync`, sm_89+) and (c) (block-scaled `mma.sync`, sm_120a, assembled only)
/// are alternatives with the same geometry and launch (`alternatives/mod.rs`).
pub mod sm80 {
    use super::*;
    use crate::run::registry::{launch_maps_then, tell_plan, Plan};
    use crate::run::steps::step10_persistent::sm80 as step10;

    pub const BM: u32 = step10::BM;
    pub const BN: u32 = step10::BN;
    /// A K tile of 128 e4m3: a 128-byte row, as step 10's 64 bf16, so the ring and its swizzle are
    /// step 10's; four MX blocks.
    pub const BK: u32 = 128;
    pub const THREADS: u32 = step10::THREADS;
    pub const BLOCKS_PER_SM: u32 = step10::BLOCKS_PER_SM;
    pub const GROUP_M: u32 = step10::GROUP_M;
    /// One stage: A's and B's tiles (48 KiB, step 10's) and their scales (one 512-byte piece of the
    /// blocked layout per 128 rows: 1.5 KiB).
    pub const STAGE_BYTES: u32 = (BM + BN) * BK + (BM + BN) / 128 * 512;
    /// Step 10's warp-private chunks, for fp32 C: 8 warps × 2 chunks of 8 rows × 32 columns (1 KiB).
    pub const STAGING_BYTES: u32 = (THREADS / 32) * 2 * 8 * 32 * 4;
    // ANCHOR: sm80_configs
    /// Three stages and the chunks (164.5 KiB) on an H100 or H200; two stages, exactly 99 KiB, and C
    /// stored from registers everywhere else (an A100's 163 KiB misses three stages with the chunks by
    /// 1.5 KiB).
    pub const DEEP: (u32, bool) = (3, true);
    pub const SHALLOW: (u32, bool) = (2, false);
    pub const fn smem_bytes(config: (u32, bool)) -> u32 {
        let (stages, staging) = config;
        stages * STAGE_BYTES + if staging { STAGING_BYTES } else { 0 }
    }
    // ANCHOR_END: sm80_configs
    const _: () = assert!(smem_bytes(SHALLOW) <= 99 * 1024 && smem_bytes(DEEP) <= 227 * 1024);

    /// A compilation of `$path` (the step's sm80.cu, or one of its sm80 alternatives, which take the same
    /// defines) for `$targets`, with `$config`'s ring and staging.
    macro_rules! kernel {
        ($path:literal, $targets:expr, $config:expr, $launch:expr) => {
            KernelFile {
                path: $path,
                text: crate::run::registry::KernelText::File,
                targets: $targets,
                entry: "gemm",
                defines: &[
                    ("BM", BM as u64),
                    ("BN", BN as u64),
                    ("BK", BK as u64),
                    ("BLOCKS_PER_SM", BLOCKS_PER_SM as u64),
                    ("STAGES", $config.0 as u64),
                    ("STAGING", $config.1 as u64),
                    ("GROUP_M", GROUP_M as u64),
                ],
                max_dynamic_smem: smem_bytes($config),
                launch: $launch,
            }
        };
    }
    pub(crate) use kernel;

    /// The step's kernel as registered (what every GPU holds); its launch takes the deep compilation
    /// where the GPU has the shared memory for it.
    pub const KERNEL: KernelFile = kernel!("steps/step11_mxfp8/sm80.cu", Targets::Ampere, SHALLOW, launch);
    pub static DEEP_KERNEL: KernelFile = kernel!("steps/step11_mxfp8/sm80.cu", Targets::Ampere, DEEP, launch);
    /// Design (a)'s three-stage compilation (`alternatives/mod.rs`).
    pub use super::alternatives::FP8_MMA_DEEP;

    // ANCHOR: sm80_launch
    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        launch_ring(func, stream, ops, &KERNEL, Some(&DEEP_KERNEL))
    }

    /// The launch of `shallow` (the step's kernel or an sm80 alternative, all of one geometry), or of
    /// `deep` where the GPU has its shared memory; the step's own kernel tells its plan.
    pub(crate) fn launch_ring(
        func: &CudaFunction,
        stream: &CudaStream,
        ops: &GemmOperands,
        shallow: &KernelFile,
        deep: Option<&'static KernelFile>,
    ) -> Result<()> {
        let s = ops.shape;
        let deeper = match deep {
            Some(deep) => crate::run::ring::deeper(func, stream, shallow, deep)?,
            None => None,
        };
        let func = deeper.as_ref().unwrap_or(func);
        let config = step10::config_of(func);
        // Step 10's persistent grid, decomposition and stream-K workspace, K tiles of 128 e4m3.
        let plan = step10::schedule(func, stream, ops, BK, smem_bytes(config), true)?;
        if shallow.path == KERNEL.path {
            let text = format!(
                "step 11 (sm80) at {s}: {BM}×{BN} blocks, a ring of {} stages, {}",
                config.0, plan.text
            );
            tell_plan(
                &KERNEL,
                s,
                Plan {
                    text,
                    clusters_fit: plan.clusters_fit,
                },
            );
        }
        launch_maps_then(
            func,
            stream,
            &[],
            &[ops.a, ops.b, ops.scale_a, ops.scale_b, ops.c, plan.partials, plan.flags],
            ops,
            &plan.ints,
            plan.launch,
        )
    }
    // ANCHOR_END: sm80_launch
}

const SM80: KernelFile = sm80::KERNEL;

pub const STEP: Step = Step {
    id: 11,
    name: "mxfp8",
    title: "MXFP8: e4m3 operands with one e8m0 scale per 1×32 block along K, fp32 C",
    predecessor: Some(10),
    format: Format::Mxfp8,
    kernels: &[HOPPER, BLACKWELL, SM80],
    alternatives: &[OVERLAPPED, FUSED, SMEM_B, PROMOTE, FP8_MMA, BLOCK_SCALED],
    workspace: Some(workspace),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_holds_a_flag_per_unit_and_the_converted_b() {
        // 4096³: 128 × 64 units of 32 rows by 64 of K, a 32 KiB flag area, then 32 MiB of bf16 B.
        let need = workspace(Shape::square(4096), 132);
        assert_eq!(need.flag_bytes, 4 * 128 * 64);
        assert_eq!(need.scratch_bytes, 4096 * 4096 * 2);
        assert_eq!(need.layout().0 % 1024, 0);
        // A ragged shape rounds the units up to whole panels of 256 rows (8 units), and K up to a
        // whole K tile.
        assert_eq!(conversion_flag_bytes(Shape::new(100, 33, 96)), 4 * 8 * 2);
        assert_eq!(conversion_flag_bytes(Shape::new(100, 300, 64)), 4 * 16);
    }
}
