//! Step 11's alternative designs, each a whole kernel file in this folder, registered beside the
//! step's kernel and timed in its loop (`{{#ladder-alternatives step11}}`): the geometry each runs
//! with on the step's `HopperLaunch`. Each kernel file opens with what it tries and what the recorded
//! loop says of it against the step; `scripts/diff-steps 11 --alternative NAME` shows how it differs.

use super::*;
use crate::run::registry::Alternative;

/// The fully fused design, kept as an alternative (`sm90_fused.cu`): no pre-pass; a 256×128 tile, A's
/// 256 rows converted into registers, B's 128 rows converted into a ring of bf16 tiles in shared memory
/// handed between the consumers by barriers.
mod fused {
    use super::*;
    use crate::encoding::{sm90, SmemSwizzle};

    /// Rows of `C` per block: two consumer warpgroups of 128 rows (two wgmma slabs of 64 each), whose
    /// rows of A enter the MMAs from registers.
    pub const BM: u32 = 256;
    /// Columns of `C` per block: one `wgmma … m64n128k16` covers them; B's 128 rows are the operand
    /// converted into shared memory, each of the 256 consumer threads half a row.
    pub const BN: u32 = 128;
    /// Depth of the K tile: 64 e4m3 = 64 bytes a row (two scale blocks), a bf16 row of 128 bytes once
    /// converted.
    pub const BK: u32 = 64;
    /// A producer warpgroup and two consumer warpgroups.
    pub const THREADS: u32 = 3 * 128;
    /// e4m3 stages in the ring: 16 KiB of A, 8 KiB of B and 2 KiB of scales each.
    pub const STAGES: u32 = 4;
    /// Converted bf16 B tiles (16 KiB each): one read by the MMAs, one being written, one of slack so
    /// that the two consumer warpgroups need not keep in step.
    pub const CONVERTED: u32 = 3;
    /// Registers a thread after `setmaxnreg`: the producer's one thread needs few; each consumer
    /// thread holds 128 accumulators and two K tiles of A fragments (2 × 32).
    pub const PRODUCER_REGISTERS: u32 = 24;
    pub const CONSUMER_REGISTERS: u32 = 240;
    /// Blocks per cluster along N, sharing every A tile; the grid is one row of clusters.
    pub const CLUSTER_N: u32 = 2;
    /// Tile rows per group of the tile order (step 10's).
    pub const GROUP_M: u32 = 8;
    /// A store box of fp32 `C`, and a chunk of the epilogue: 64 rows × 32 columns (128-byte rows).
    pub const C_BOX_ROWS: u32 = 64;
    pub const C_BOX_COLS: u32 = 32;
    /// STAGES × 26 KiB of e4m3 tiles and scales, CONVERTED bf16 B tiles (3 × 16 KiB), the staging
    /// buffers of C (2 consumers × 2 × 8 KiB), the barriers, 1 KiB to align:
    /// 4 · 26 + 48 + 32 + 1 = 185 KiB.
    pub const SMEM_BYTES: u32 = 1024
        + STAGES * (BM * BK + BN * BK + 2048)
        + CONVERTED * BN * BK * 2
        + 2 * 2 * C_BOX_ROWS * 128
        + (2 * STAGES + 2 * CONVERTED) * 8;
    /// Hopper lets a block have at most 227 KiB of shared memory.
    const _: () = assert!(SMEM_BYTES <= 227 * 1024);
    /// wgmma descriptor template of the converted bf16 B tile: 128-byte swizzle, K-major, SBO = 8 rows
    /// × 128 bytes (A comes from registers and has none).
    pub const B_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step11_mxfp8/alternatives/sm90_fused.cu",
        text: crate::run::registry::KernelText::File,
        targets: Targets::Hopper,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("STAGES", STAGES as u64),
            ("CONVERTED", CONVERTED as u64),
            ("CLUSTER_N", CLUSTER_N as u64),
            ("GROUP_M", GROUP_M as u64),
            ("PRODUCER_REGISTERS", PRODUCER_REGISTERS as u64),
            ("CONSUMER_REGISTERS", CONSUMER_REGISTERS as u64),
            ("B_DESC", B_DESC),
        ],
        max_dynamic_smem: SMEM_BYTES,
        launch: |func, stream, ops| LAUNCH.launch(func, stream, ops),
    };

    /// Its launch: the step's, with this geometry.
    const LAUNCH: HopperLaunch = HopperLaunch {
        bm: BM,
        bn: BN,
        bk: BK,
        swizzle: TmaSwizzle::B64,
        threads: THREADS,
        smem: SMEM_BYTES,
        cluster: CLUSTER_N,
        shared: SharedOperand::A,
        c_box: (C_BOX_ROWS, C_BOX_COLS),
        b: BOperand::E4m3,
        balanced: false,
    };
}

/// The step's previous design, kept as an alternative (`sm90_smem_b.cu`): a 128×256 tile, A (128 rows)
/// through registers and B (256 rows) converted into a bf16 tile in shared memory, both consumers
/// meeting at a named barrier every K tile.
mod smem_b {
    use super::*;
    use crate::encoding::{sm90, SmemSwizzle};

    /// Rows of `C` per block: two consumer warpgroups of 64 rows.
    pub const BM: u32 = 128;
    /// Columns of `C` per block: one `wgmma … m64n256k16` covers them; each of the 256 consumer
    /// threads converts one row of the B tile.
    pub const BN: u32 = 256;
    /// Depth of the K tile: 64 e4m3 = 64 bytes a row (two scale blocks), a bf16 row of 128 bytes once
    /// converted.
    pub const BK: u32 = 64;
    /// A producer warpgroup and two consumer warpgroups.
    pub const THREADS: u32 = 3 * 128;
    /// e4m3 stages in the ring: 8 KiB of A, 16 KiB of B and 2 KiB of scales each.
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
    /// STAGES × 26 KiB of e4m3 tiles and scales, two converted bf16 B tiles (2 × 32 KiB), the staging
    /// buffers of C (2 consumers × 2 × 8 KiB), two barriers per stage, 1 KiB to align:
    /// 4 · 26 + 64 + 32 + 1 = 201 KiB.
    pub const SMEM_BYTES: u32 =
        1024 + STAGES * (BM * BK + BN * BK + 2048) + 2 * BN * BK * 2 + 2 * 2 * C_BOX_ROWS * 128 + 2 * STAGES * 8;
    /// wgmma descriptor template of the converted bf16 B tile: 128-byte swizzle, K-major, SBO = 8 rows
    /// × 128 bytes (A comes from registers and has none).
    pub const B_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step11_mxfp8/alternatives/sm90_smem_b.cu",
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
        launch: |func, stream, ops| LAUNCH.launch(func, stream, ops),
    };

    /// Its launch: the step's, with this geometry.
    const LAUNCH: HopperLaunch = HopperLaunch {
        bm: BM,
        bn: BN,
        bk: BK,
        swizzle: TmaSwizzle::B64,
        threads: THREADS,
        smem: SMEM_BYTES,
        cluster: CLUSTER_M,
        shared: SharedOperand::B,
        c_box: (C_BOX_ROWS, C_BOX_COLS),
        b: BOperand::E4m3,
        balanced: false,
    };
}

/// The alternative "overlapped" (`sm90_overlapped.cu`): the step's kernel without the pre-pass; the
/// producer warpgroup's three idle warps convert B into the same bf16 copy while the GEMM runs.
mod overlapped {
    use super::*;

    pub const BM: u32 = hopper::BM;
    pub const BN: u32 = hopper::BN;
    pub const BK: u32 = hopper::BK;
    pub const THREADS: u32 = hopper::THREADS;
    pub const STAGES: u32 = hopper::STAGES;
    /// Registers a thread after `setmaxnreg`: all that the launch's 168 a thread allow (56 + 2 · 224 =
    /// 3 · 168); the converting warps spill at the step's 48.
    pub const PRODUCER_REGISTERS: u32 = 56;
    pub const CONSUMER_REGISTERS: u32 = hopper::CONSUMER_REGISTERS;
    pub const CLUSTER_M: u32 = hopper::CLUSTER_M;
    pub const GROUP_M: u32 = hopper::GROUP_M;
    /// Units of B's conversion in flight per converting warp, each a slot of 32 rows × 64 e4m3 bytes
    /// and the 512-byte scale block they lie in, with a barrier.
    pub const UNIT_SLOTS: u32 = 4;
    const UNIT_SLOT_BYTES: u32 = CONVERSION_ROWS as u32 * BK + 512;
    const _: () = assert!(BK as usize == CONVERSION_K && BN as usize == PANEL_ROWS);
    /// The step's 195 KiB, the converting warps' slots (3 × 4 × 2.5 KiB) and a barrier per slot: 225 KiB.
    pub const SMEM_BYTES: u32 = hopper::SMEM_BYTES + 3 * UNIT_SLOTS * UNIT_SLOT_BYTES + 3 * UNIT_SLOTS * 8;
    /// Hopper lets a block have at most 227 KiB of shared memory.
    const _: () = assert!(SMEM_BYTES <= 227 * 1024);

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step11_mxfp8/alternatives/sm90_overlapped.cu",
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
            ("UNIT_SLOTS", UNIT_SLOTS as u64),
            ("B_DESC", hopper::B_DESC),
        ],
        max_dynamic_smem: SMEM_BYTES,
        launch: |func, stream, ops| LAUNCH.launch(func, stream, ops),
    };

    /// Its launch: the step's, with B converted in the GEMM (a cooperative grid).
    const LAUNCH: HopperLaunch = HopperLaunch {
        bm: BM,
        bn: BN,
        bk: BK,
        swizzle: TmaSwizzle::B64,
        threads: THREADS,
        smem: SMEM_BYTES,
        cluster: CLUSTER_M,
        shared: SharedOperand::B,
        c_box: (hopper::C_BOX_ROWS, hopper::C_BOX_COLS),
        b: BOperand::ConvertedInGemm,
        balanced: true,
    };
}

pub(super) const OVERLAPPED: Alternative = Alternative {
    name: "overlapped",
    design: "no pre-pass: the producer warpgroup's three idle warps convert B into the bf16 copy while the GEMM runs, unit by unit, and the TMA thread waits for each unit's flag",
    kernel: overlapped::KERNEL,
    plan: false,
};

pub(super) const FUSED: Alternative = Alternative {
    name: "fused",
    design: "no pre-pass: a 256×128 tile, A converted into registers, B into a ring of bf16 tiles in shared memory by the consumers",
    kernel: fused::KERNEL,
    plan: false,
};

pub(super) const SMEM_B: Alternative = Alternative {
    name: "smem_b",
    design: "the previous design: a 128×256 tile, B's 256 rows converted into one bf16 tile in shared memory, both consumers meeting at a barrier every K tile",
    kernel: smem_b::KERNEL,
    plan: false,
};

/// Design (a), the alternative the chapter measures (`sm90_promote.cu`): the e4m3 tiles go to the fp8
/// wgmma as they are, one MMA of K = 32 per scale block into scratch accumulators, and the consumers
/// promote each block's partial sums into the fp32 accumulators with its two scales.
mod promote {
    use super::*;
    use crate::encoding::{sm90, SmemSwizzle};

    /// Rows of `C` per block: two consumer warpgroups of 64 rows.
    pub const BM: u32 = 128;
    // ANCHOR: promote_tile
    /// Columns of `C` per block: a consumer thread holds 64 accumulators and 64 scratch accumulators
    /// for its 64 × 128 share; a 256-column tile would need 256 registers for them alone.
    pub const BN: u32 = 128;
    // ANCHOR_END: promote_tile
    /// Depth of the K tile: 128 e4m3, one 128-byte row (128-byte swizzle), four scale blocks.
    pub const BK: u32 = 128;
    pub const THREADS: u32 = 3 * 128;
    /// Stages of 37 KiB: 16 KiB of A, 16 KiB of B, 1 KiB of scale bytes, 4 KiB of fp32 factors.
    pub const STAGES: u32 = 5;
    /// sm90.cu's: the block is launched with 168 registers a thread (384 threads), and setmaxnreg only
    /// moves them: 48 + 2 · 224 ≤ 3 · 168. (40 and 232 would fit too, and ptxas spills there.)
    pub const PRODUCER_REGISTERS: u32 = smem_b::PRODUCER_REGISTERS;
    pub const CONSUMER_REGISTERS: u32 = smem_b::CONSUMER_REGISTERS;
    pub const CLUSTER_M: u32 = smem_b::CLUSTER_M;
    pub const GROUP_M: u32 = hopper::GROUP_M;
    pub const C_BOX_ROWS: u32 = hopper::C_BOX_ROWS;
    pub const C_BOX_COLS: u32 = hopper::C_BOX_COLS;
    /// 5 × 37 KiB of stages, the staging buffers of C (2 consumers × 2 × 8 KiB), three barriers per
    /// stage, 1 KiB to align: 218 KiB.
    pub const SMEM_BYTES: u32 = 1024
        + STAGES * (BM * BK + BN * BK + 1024 + 4 * (BK / 32) * (BM + BN))
        + 2 * 2 * C_BOX_ROWS * 128
        + 3 * STAGES * 8;
    /// Hopper lets a block have at most 227 KiB of shared memory.
    const _: () = assert!(SMEM_BYTES <= 227 * 1024);
    /// wgmma descriptor templates of the e4m3 tiles: 128-byte swizzle, K-major, SBO = 8 rows × 128
    /// bytes, as step 10's bf16 tiles (a row is 128 bytes either way).
    pub const A_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);
    pub const B_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step11_mxfp8/alternatives/sm90_promote.cu",
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
            ("A_DESC", A_DESC),
            ("B_DESC", B_DESC),
        ],
        max_dynamic_smem: SMEM_BYTES,
        launch: |func, stream, ops| LAUNCH.launch(func, stream, ops),
    };

    /// Its launch: the step's, with this geometry.
    const LAUNCH: HopperLaunch = HopperLaunch {
        bm: BM,
        bn: BN,
        bk: BK,
        swizzle: TmaSwizzle::B128,
        threads: THREADS,
        smem: SMEM_BYTES,
        cluster: CLUSTER_M,
        shared: SharedOperand::B,
        c_box: (C_BOX_ROWS, C_BOX_COLS),
        b: BOperand::E4m3,
        balanced: false,
    };
}

pub(super) const PROMOTE: Alternative = Alternative {
    name: "promote",
    design:
        "design (a): one fp8 wgmma per 32-element scale block, promoted into fp32 with both scales on the CUDA cores",
    kernel: promote::KERNEL,
    plan: false,
};

/// The sm80 twin's designs (a) and (c), whole kernel files beside `sm80.cu` with its geometry, ring and
/// launch (`sm80::launch_ring`): (a) for the GPUs with fp8 `mma.sync` (compute capability 8.9 or
/// newer), (c) for those with the block-scaled one (12.x, assembled only here). Each is timed in the
/// twin's loop only where the GPU has its instruction; elsewhere the run says in one line that it
/// skipped it.
mod sm80_designs {
    use super::*;
    use crate::run::steps::step11_mxfp8::sm80::{kernel, launch_ring, smem_bytes, DEEP, SHALLOW};
    use crate::run::steps::step11_mxfp8::sm80::{BK, BLOCKS_PER_SM, BM, BN, GROUP_M};

    pub const FP8_MMA: KernelFile = kernel!(
        "steps/step11_mxfp8/alternatives/sm80_fp8_mma.cu",
        Targets::AmpereFp8,
        SHALLOW,
        launch_fp8_mma
    );
    /// Its three-stage compilation, for an H100 or H200 (as the step's `DEEP_KERNEL`).
    pub static FP8_MMA_DEEP: KernelFile = kernel!(
        "steps/step11_mxfp8/alternatives/sm80_fp8_mma.cu",
        Targets::AmpereFp8,
        DEEP,
        launch_fp8_mma
    );
    /// 12.x parts give a block 99 KiB: the shallow ring only.
    pub const BLOCK_SCALED: KernelFile = kernel!(
        "steps/step11_mxfp8/alternatives/sm80_block_scaled.cu",
        Targets::AmpereBlockScaled,
        SHALLOW,
        launch_block_scaled
    );

    fn launch_fp8_mma(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        launch_ring(func, stream, ops, &FP8_MMA, Some(&FP8_MMA_DEEP))
    }

    fn launch_block_scaled(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        launch_ring(func, stream, ops, &BLOCK_SCALED, None)
    }
}

pub use sm80_designs::FP8_MMA_DEEP;

pub(super) const FP8_MMA: Alternative = Alternative {
    name: "sm80-fp8-mma",
    design: "design (a) on sm_89+: one fp8 mma.sync.m16n8k32 per 32-element scale block on the raw e4m3 bytes, its fp32 partial sums promoted with both scales on the CUDA cores",
    kernel: sm80_designs::FP8_MMA,
    plan: false,
};

pub(super) const BLOCK_SCALED: Alternative = Alternative {
    name: "sm80-block-scaled",
    design: "design (c) on 12.x (sm_120a), assembled only: the block-scaled mma.sync kind::mxf8f6f4 takes both scales itself, nothing converted or promoted",
    kernel: sm80_designs::BLOCK_SCALED,
    plan: false,
};
