//! Step 04 · tma_mma: what this step launches and how.
//!
//! Hopper (`sm90.cu`): one warpgroup per 128×128 tile of `C` (two `wgmma … m64n128k16` per k16
//! slice), one K tile of 64 in flight, three blocks per SM. `A` and `B` arrive as 3D TMA boxes that lay
//! a tile out as 16-byte columns: the tensor cores' no-swizzle K-major layout.
//!
//! Blackwell (`sm100.cu`, assembled, not run here): the same 128×128 tile and the same 3D TMA boxes; one
//! thread issues four `tcgen05.mma … 128×128×16` per K tile into 128 columns of Tensor Memory, and the
//! four warps read the accumulators back with `tcgen05.ld` for the epilogue.
//!
//! sm80 twin (`sm80.cu`, any GPU of compute capability 8.0 or newer): the same 128×128×64 tile in the
//! same 16-byte-column layout, filled by every thread's `cp.async` (zeros past the edges); four warps
//! of 64×64 multiply with `ldmatrix.x4` and `mma.sync.m16n8k16`; two blocks per SM.

use crate::encoding::tma;
use crate::encoding::{sm90, SmemSwizzle};
use crate::error::Result;
use crate::run::registry::{
    launch_with_maps, launch_with_pointers, tile_config, Format, GemmOperands, KernelFile, KernelText, Step, Targets,
};
use cudarc::driver::{CudaFunction, CudaStream};

/// The Hopper kernel's tile and launch.
mod hopper {
    use super::*;

    /// Rows of `C` per block: two wgmma tiles of 64 rows, computed by one warpgroup.
    pub const BM: u32 = 128;
    /// Columns of `C` per block: one `wgmma … m64n128k16` covers them.
    pub const BN: u32 = 128;
    /// Depth of the K tile: 64 bf16, four k16 slices per wgmma batch.
    pub const BK: u32 = 64;
    /// One warpgroup.
    pub const THREADS: u32 = 128;
    /// Blocks per SM the register budget is planned for (`__launch_bounds__`).
    pub const BLOCKS_PER_SM: u32 = 3;
    /// A and B tiles, then the mbarrier; plus 1 KiB so the kernel can align the tiles to 1024 bytes.
    pub const SMEM_BYTES: u32 = 1024 + (BM + BN) * BK * 2 + 8;
    // ANCHOR: hopper_descriptors
    /// wgmma descriptor templates, K-major without swizzle. LBO: the core matrix next along K is the
    /// next 16-byte column of the tile, `rows` × 16 bytes away. SBO: the next 8 rows of the same
    /// column, 8 × 16 = 128 bytes away.
    pub const A_DESC: u64 = sm90::smem_descriptor(0, BM * 16, 128, SmemSwizzle::None);
    pub const B_DESC: u64 = sm90::smem_descriptor(0, BN * 16, 128, SmemSwizzle::None);
    // ANCHOR_END: hopper_descriptors

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step04_tma_mma/sm90.cu",
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
        let a_map = tma::matrix_as_16_byte_columns("A", ops.a, s.m, s.k, BM, BK)?;
        let b_map = tma::matrix_as_16_byte_columns("B", ops.b, s.n, s.k, BN, BK)?;
        let config = tile_config(s, BM, BN, THREADS, SMEM_BYTES);
        launch_with_maps(func, stream, &[a_map, b_map], ops, &[], config)
    }
}

const HOPPER: KernelFile = hopper::KERNEL;

/// The Blackwell kernel's tile and launch. Assembled for sm_100a by the tests; not run by this project.
mod blackwell {
    use super::*;
    use crate::encoding::sm100::{self, AccumType, InputType};
    use crate::encoding::Major;

    /// Rows of `C` per block: the M of one `tcgen05.mma`, so row i of the tile is TMEM lane i.
    pub const BM: u32 = 128;
    /// Columns of `C` per block: the N of the MMA, and the TMEM columns allocated (a power of two).
    pub const BN: u32 = 128;
    /// Depth of the K slice one TMA copy brings: 64 bf16, four `tcgen05.mma` of K = 16.
    pub const BK: u32 = 64;
    /// Four warps: together they reach all 128 TMEM lanes in the epilogue.
    pub const THREADS: u32 = 128;
    /// A and B tiles, plus 1 KiB so the kernel can align them to 1024 bytes (its barriers are static):
    /// 33 KiB. Asked for as 45,671 bytes instead (`sm100::smem_capping_tmem`): with 33 KiB six blocks fit
    /// on an SM, but TMEM holds only 512 / BN = 4 allocations of BN columns, so two blocks would sit
    /// in `tcgen05.alloc` holding their shared memory. With 45,671 bytes, 5 × (45,671 + 1,024) > 228 KiB:
    /// at most 4 blocks are resident, and every allocation succeeds at once.
    pub const SMEM_BYTES: u32 = sm100::smem_capping_tmem(1024 + (BM + BN) * BK * 2, BN);
    // ANCHOR: blackwell_descriptors
    /// tcgen05 descriptor templates, K-major without swizzle (the same LBO and SBO as wgmma's). LBO: the
    /// core matrix next along K is in the next 16-byte column, `rows` × 16 bytes away. SBO: the next 8
    /// rows of the same column, 128 bytes away.
    pub const A_DESC: u64 = sm100::smem_descriptor(0, BM * 16, 128, SmemSwizzle::None);
    pub const B_DESC: u64 = sm100::smem_descriptor(0, BN * 16, 128, SmemSwizzle::None);
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
    // ANCHOR_END: blackwell_descriptors

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step04_tma_mma/sm100.cu",
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
        let a_map = tma::matrix_as_16_byte_columns("A", ops.a, s.m, s.k, BM, BK)?;
        let b_map = tma::matrix_as_16_byte_columns("B", ops.b, s.n, s.k, BN, BK)?;
        let config = tile_config(s, BM, BN, THREADS, SMEM_BYTES);
        launch_with_maps(func, stream, &[a_map, b_map], ops, &[], config)
    }
}

const BLACKWELL: KernelFile = blackwell::KERNEL;

/// The sm80 twin's tile and launch: any GPU of compute capability 8.0 or newer (`--twin sm80` on
/// Hopper).
mod sm80 {
    use super::*;

    /// Rows of `C` per block: two warps of 64 rows.
    pub const BM: u32 = 128;
    /// Columns of `C` per block: two warps of 64 columns.
    pub const BN: u32 = 128;
    /// Depth of the K tile: 64 bf16, four k16 slices of `mma.sync`.
    pub const BK: u32 = 64;
    /// Four warps, 2 × 2, each a 64×64 quarter of the tile.
    pub const THREADS: u32 = 128;
    /// Blocks per SM the register budget is planned for: 128 accumulators plus 32 fragment registers
    /// fit under 255, not under the Hopper twin's 168.
    pub const BLOCKS_PER_SM: u32 = 2;
    /// The A and B tiles: 32 KiB, under the 48 KiB every GPU gives without asking.
    pub const SMEM_BYTES: u32 = (BM + BN) * BK * 2;

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step04_tma_mma/sm80.cu",
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
    id: 4,
    name: "tma_mma",
    title: "TMA + tensor cores: the copy engine loads tiles, wgmma multiplies them from shared memory",
    predecessor: Some(3),
    format: Format::Bf16,
    // The sm80 twin last: a GPU takes the first file that serves it, so Hopper keeps its own.
    kernels: &[HOPPER, BLACKWELL, SM80],
    alternatives: &[],
    workspace: None,
};
