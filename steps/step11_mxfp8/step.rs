//! Step 11 · mxfp8: what this step launches and how.
//!
//! The problem changes here: `A` and `B` are OCP fp8 e4m3 with one e8m0 scale per 1×32 block along K
//! (shared/mx.rs), and `C` is fp32. The kernel's signature is the MX one of
//! [`launch_mx_with_maps_in`]: `gemm(TensorMap a, TensorMap b, TensorMap c, const u8* scale_a,
//! const u8* scale_b, float* C, int M, int N, int K, int use_tma_store)`, scales in the blocked layout.
//!
//! Hopper (`sm90.cu`): no block-scaled MMA; the kernel emulates MX exactly: step 10's persistent
//! pipeline on e4m3 tiles, each element converted to bf16 with its block's scale folded in (exact),
//! B into a bf16 tile in shared memory, A straight into the wgmma's register operand.
//! Blackwell (`sm100.cu`, assembled, not run here): `tcgen05.mma … kind::mxf8f6f4.block_scale`, as
//! in seed 004.

use crate::error::Result;
use crate::registry::{
    launch_mx_with_maps_in, persistent_launch, tile_config, Format, GemmOperands, KernelFile, Launch, Step, Targets,
};
use crate::tma::{self, TmaSwizzle};
use cudarc::driver::{CudaFunction, CudaStream};

/// The Hopper kernel's tile, roles and launch: step 10's persistent pipeline on e4m3 tiles, with the
/// conversion to bf16 in the consumers.
mod hopper {
    use super::*;
    use crate::encoding::{sm90, SmemSwizzle};
    use std::sync::OnceLock;

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
    // ANCHOR: smem
    /// STAGES × 26 KiB of e4m3 tiles and scales, two converted bf16 B tiles (2 × 32 KiB), the staging
    /// buffers of C (2 consumers × 2 × 8 KiB), two barriers per stage, 1 KiB to align:
    /// 4 · 26 + 64 + 32 + 1 = 201 KiB.
    pub const SMEM_BYTES: u32 =
        1024 + STAGES * (BM * BK + BN * BK + 2048) + 2 * BN * BK * 2 + 2 * 2 * C_BOX_ROWS * 128 + 2 * STAGES * 8;
    // ANCHOR_END: smem
    /// wgmma descriptor template of the converted bf16 B tile: 128-byte swizzle, K-major, SBO = 8 rows
    /// × 128 bytes (A comes from registers and has none).
    pub const B_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step11_mxfp8/sm90.cu",
        source: include_str!("sm90.cu"),
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

    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let s = ops.shape;
        // ANCHOR: maps
        // e4m3 tiles of 64 bytes a row, 64-byte swizzle (conflict-free for ldmatrix and the converter).
        let a_map = tma::matrix_2d_u8("A", ops.a, s.m, s.k, BM, BK, TmaSwizzle::B64)?;
        let b_map = tma::matrix_2d_u8("B", ops.b, s.n, s.k, BN / CLUSTER_M, BK, TmaSwizzle::B64)?;
        // ANCHOR_END: maps
        let (c_map, use_tma_store) =
            tma::store_map_for_c_f32(ops.c, s.m, s.n, C_BOX_ROWS, C_BOX_COLS, TmaSwizzle::B128)?;
        static FIT: OnceLock<u32> = OnceLock::new();
        let tiles = s.m.div_ceil((CLUSTER_M * BM) as usize) * s.n.div_ceil(BN as usize);
        let launch = persistent_launch(func, stream, THREADS, SMEM_BYTES, CLUSTER_M, tiles, &FIT)?;
        launch_mx_with_maps_in(
            func,
            stream,
            &[a_map, b_map, c_map],
            ops,
            &[use_tma_store as i32],
            launch,
        )
    }
}

const HOPPER: KernelFile = hopper::KERNEL;

/// The Blackwell kernel's tile and launch: a pair of blocks (2-SM MMA) along M.
mod blackwell {
    use super::*;

    /// Blocks per cluster along M: the two halves of one 2-SM MMA.
    pub const CLUSTER: (u32, u32, u32) = (2, 1, 1);
    pub const BM: u32 = 128;
    pub const BN: u32 = 256;
    /// Depth of one K slice: 128 e4m3 = one 128-byte swizzled row, four scale blocks.
    pub const BK: u32 = 128;
    /// Producer, MMA issuer and four epilogue warps.
    pub const THREADS: u32 = 6 * 32;
    pub const STAGES: u32 = 4;
    /// A store box of fp32 `C`: 32 rows × 32 columns (128-byte rows, swizzled).
    pub const C_BOX_ROWS: u32 = 32;
    pub const C_BOX_COLS: u32 = 32;
    pub const SMEM_BYTES: u32 = 1024 + STAGES * (BM + BN / 2) * BK;

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step11_mxfp8/sm100.cu",
        source: include_str!("sm100.cu"),
        targets: Targets::Blackwell,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("STAGES", STAGES as u64),
        ],
        max_dynamic_smem: SMEM_BYTES,
        launch,
    };

    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let s = ops.shape;
        let a_map = tma::matrix_2d_u8("A", ops.a, s.m, s.k, BM, BK, TmaSwizzle::B128)?;
        // Each block of a pair loads half of the pair's B tile.
        let b_map = tma::matrix_2d_u8("B", ops.b, s.n, s.k, BN / 2, BK, TmaSwizzle::B128)?;
        let (c_map, use_tma_store) =
            tma::store_map_for_c_f32(ops.c, s.m, s.n, C_BOX_ROWS, C_BOX_COLS, TmaSwizzle::B128)?;
        let launch = Launch::clustered(tile_config(s, BM, BN, THREADS, SMEM_BYTES), CLUSTER);
        launch_mx_with_maps_in(
            func,
            stream,
            &[a_map, b_map, c_map],
            ops,
            &[use_tma_store as i32],
            launch,
        )
    }
}

const BLACKWELL: KernelFile = blackwell::KERNEL;

pub const STEP: Step = Step {
    id: 11,
    name: "mxfp8",
    title: "MXFP8: e4m3 operands with one e8m0 scale per 1×32 block along K, fp32 C",
    predecessor: Some(10),
    format: Format::Mxfp8,
    kernels: &[HOPPER, BLACKWELL],
};
