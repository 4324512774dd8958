//! Step 06 · tma_store: what this step launches and how.
//!
//! Hopper (`sm90.cu`): step 05's tile and main loop; the epilogue stages the 128×128 tile of `C` in
//! shared memory (128-byte swizzle, boxes of 128 rows × 64 columns) and stores it with the TMA. A
//! TMA store needs `N % 8 == 0` (rows of `C` 16-byte aligned); otherwise the kernel is told to store
//! directly, as step 05 does, and gets a tensor map it never reads.
//!
//! Blackwell (`sm100.cu`, assembled, not run here): step 05's kernel; each warp converts its 32 rows
//! from Tensor Memory into two swizzled boxes of 32 rows × 64 columns in shared memory (16-byte stores,
//! conflict-free) and one of its threads stores them with the TMA. The same `N % 8` fallback.
//!
//! sm80 twin (`sm80.cu`): step 05's sm80 kernel, whose epilogue writes C into a swizzled staging tile
//! (`st.shared`, 4 bytes per lane) and then sends it out in whole rows, 16 bytes per thread.

use crate::encoding::tma::{self, TmaSwizzle};
use crate::encoding::{sm90, SmemSwizzle};
use crate::error::Result;
use crate::run::registry::{
    launch_with_maps, launch_with_pointers, tile_config, Format, GemmOperands, KernelFile, KernelText, Step, Targets,
};
use cudarc::driver::{CudaFunction, CudaStream};

/// The Hopper kernel's tile and launch (step 05's).
mod hopper {
    use super::*;

    /// Rows of `C` per block: two wgmma tiles of 64 rows, computed by one warpgroup.
    pub const BM: u32 = 128;
    /// Columns of `C` per block: one `wgmma … m64n128k16` covers them.
    pub const BN: u32 = 128;
    /// Depth of the K tile: 64 bf16 = one 128-byte swizzled row.
    pub const BK: u32 = 64;
    /// One warpgroup.
    pub const THREADS: u32 = 128;
    /// Blocks per SM the register budget is planned for (`__launch_bounds__`).
    pub const BLOCKS_PER_SM: u32 = 3;
    /// A store box of `C`: 64 columns, one 128-byte swizzled row.
    pub const C_BOX_COLS: u32 = 64;
    /// A and B tiles, then the mbarrier; plus 1 KiB so the kernel can align the tiles to 1024 bytes.
    /// The staging tile of `C` (128 × 128 bf16 = 32 KiB) reuses the A and B tiles.
    pub const SMEM_BYTES: u32 = 1024 + (BM + BN) * BK * 2 + 8;
    /// wgmma descriptor templates: 128-byte swizzle, K-major; LBO is unused for swizzled K-major
    /// layouts (16 bytes, the value 1, by convention); SBO = 8 rows × 128 bytes.
    pub const A_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);
    pub const B_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step06_tma_store/sm90.cu",
        text: KernelText::File,
        targets: Targets::Hopper,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("BLOCKS_PER_SM", BLOCKS_PER_SM as u64),
            ("A_DESC", A_DESC),
            ("B_DESC", B_DESC),
        ],
        max_dynamic_smem: SMEM_BYTES,
        launch,
    };

    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let s = ops.shape;
        let a_map = tma::matrix_2d("A", ops.a, s.m, s.k, BM, BK, TmaSwizzle::B128)?;
        let b_map = tma::matrix_2d("B", ops.b, s.n, s.k, BN, BK, TmaSwizzle::B128)?;
        // ANCHOR: c_map
        // A TMA store writes whole 16-byte pieces of a row: C's row stride must be a multiple of 16 bytes.
        let (c_map, use_tma_store) = tma::store_map_for_c(ops.c, s.m, s.n, BM, C_BOX_COLS)?;
        // ANCHOR_END: c_map
        let config = tile_config(s, BM, BN, THREADS, SMEM_BYTES);
        launch_with_maps(
            func,
            stream,
            &[a_map, b_map, c_map],
            ops,
            &[use_tma_store as i32],
            config,
        )
    }
}

const HOPPER: KernelFile = hopper::KERNEL;

/// The Blackwell kernel's tile and launch (step 05's, plus the tensor map of `C`). Assembled for sm_100a
/// by the tests; not run by this project.
mod blackwell {
    use super::*;
    use crate::encoding::sm100::{self, AccumType, InputType};
    use crate::encoding::{Major, LBO_IGNORED};

    /// Rows of `C` per block: the M of one `tcgen05.mma`, so row i of the tile is TMEM lane i.
    pub const BM: u32 = 128;
    /// Columns of `C` per block: the N of the MMA, and the TMEM columns allocated (a power of two).
    pub const BN: u32 = 128;
    /// Depth of the K slice one TMA copy brings: 64 bf16 = one 128-byte swizzled row.
    pub const BK: u32 = 64;
    /// Four warps: together they reach all 128 TMEM lanes in the epilogue.
    pub const THREADS: u32 = 128;
    /// A store box of `C`: one warp's 32 rows (its TMEM lanes) × 64 columns (one 128-byte swizzled row).
    pub const BOX_ROWS: u32 = 32;
    pub const BOX_COLS: u32 = 64;
    /// A and B tiles, then the staging tile of `C` (BM × BN bf16, its own space: the tiles are not
    /// reused), plus 1 KiB so the kernel can align all of them to 1024 bytes (its barriers are static).
    pub const SMEM_BYTES: u32 = 1024 + (BM + BN) * BK * 2 + BM * BN * 2;
    /// tcgen05 descriptor templates: 128-byte swizzle, K-major; LBO is ignored for swizzled K-major
    /// layouts (16 bytes, the value 1, by convention); SBO = 8 rows × 128 bytes.
    pub const A_DESC: u64 = sm100::smem_descriptor(0, LBO_IGNORED, 1024, SmemSwizzle::B128);
    pub const B_DESC: u64 = sm100::smem_descriptor(0, LBO_IGNORED, 1024, SmemSwizzle::B128);
    /// `kind::f16` instruction descriptor: bf16 × bf16 → fp32, A and B K-major, M = BM, N = BN.
    pub const IDESC: u32 = sm100::instr_descriptor_f16(
        AccumType::F32,
        InputType::BF16,
        InputType::BF16,
        Major::K,
        Major::K,
        BM,
        BN,
    );

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step06_tma_store/sm100.cu",
        text: KernelText::File,
        targets: Targets::Blackwell,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("THREADS", THREADS as u64),
            ("A_DESC", A_DESC),
            ("B_DESC", B_DESC),
            ("IDESC", IDESC as u64),
        ],
        max_dynamic_smem: SMEM_BYTES,
        launch,
    };

    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let s = ops.shape;
        let a_map = tma::matrix_2d("A", ops.a, s.m, s.k, BM, BK, TmaSwizzle::B128)?;
        let b_map = tma::matrix_2d("B", ops.b, s.n, s.k, BN, BK, TmaSwizzle::B128)?;
        // A TMA store writes whole 16-byte pieces of a row: C's row stride must be a multiple of 16 bytes.
        let (c_map, use_tma_store) = tma::store_map_for_c(ops.c, s.m, s.n, BOX_ROWS, BOX_COLS)?;
        let config = tile_config(s, BM, BN, THREADS, SMEM_BYTES);
        launch_with_maps(
            func,
            stream,
            &[a_map, b_map, c_map],
            ops,
            &[use_tma_store as i32],
            config,
        )
    }
}

const BLACKWELL: KernelFile = blackwell::KERNEL;

/// The sm80 twin's tile and launch: step 05's, with C leaving through a swizzled staging tile in shared memory.
mod sm80 {
    use super::*;

    /// Rows of `C` per block: two warps of 64 rows.
    pub const BM: u32 = 128;
    /// Columns of `C` per block: two warps of 64 columns.
    pub const BN: u32 = 128;
    /// Depth of the K tile: 64 bf16 = one 128-byte swizzled row.
    pub const BK: u32 = 64;
    /// Four warps, 2 × 2, each a 64×64 quarter of the tile.
    pub const THREADS: u32 = 128;
    /// Blocks per SM the register budget is planned for (`__launch_bounds__`).
    pub const BLOCKS_PER_SM: u32 = 2;
    /// The A and B tiles, 32 KiB; C's staging tile (32 KiB) reuses them.
    pub const SMEM_BYTES: u32 = (BM + BN) * BK * 2;

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step06_tma_store/sm80.cu",
        text: KernelText::File,
        targets: Targets::Ampere,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("BLOCKS_PER_SM", BLOCKS_PER_SM as u64),
        ],
        max_dynamic_smem: SMEM_BYTES,
        launch,
    };

    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        launch_with_pointers(func, stream, ops, tile_config(ops.shape, BM, BN, THREADS, SMEM_BYTES))
    }
}

const SM80: KernelFile = sm80::KERNEL;

pub const STEP: Step = Step {
    id: 6,
    name: "tma_store",
    title: "TMA store: the tile of C is staged in shared memory (swizzled) and written out by the TMA",
    predecessor: Some(5),
    format: Format::Bf16,
    // The sm80 twin last: a GPU takes the first file that serves it, so Hopper keeps its own.
    kernels: &[HOPPER, BLACKWELL, SM80],
    alternatives: &[],
    workspace: None,
};
