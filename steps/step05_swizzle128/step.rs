//! Step 05 · swizzle128: what this step launches and how.
//!
//! Hopper (`sm90.cu`): one warpgroup per 128×128 tile of `C`, one K tile of 64 in flight, three blocks
//! per SM. `A` and `B` arrive as 2D TMA boxes of 128 rows × 64 bf16 (one 128-byte row per matrix
//! row) with the 128-byte swizzle; the wgmma descriptors say so (layout 128B, SBO = 8 rows × 128 B).
//!
//! Blackwell (`sm100.cu`, assembled, not run here): step 04's kernel with the same 2D swizzled boxes; the
//! tcgen05 descriptors say 128-byte swizzle with SBO = 1024, and each k16 MMA starts 32 bytes further.
//!
//! sm80 twin (`sm80.cu`): step 04's sm80 kernel with the tiles stored as 128-byte rows under the same
//! swizzle, applied by hand: by each `cp.async` destination and by each lane's `ldmatrix` address.

use crate::encoding::tma::{self, TmaSwizzle};
use crate::encoding::{sm90, SmemSwizzle};
use crate::error::Result;
use crate::run::registry::{
    launch_with_maps, launch_with_pointers, tile_config, Format, GemmOperands, KernelFile, KernelText, Step, Targets,
};
use cudarc::driver::{CudaFunction, CudaStream};

/// The Hopper kernel's tile and launch (the same as step 04's).
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
    /// A and B tiles, then the mbarrier; plus 1 KiB so the kernel can align the tiles to 1024 bytes.
    pub const SMEM_BYTES: u32 = 1024 + (BM + BN) * BK * 2 + 8;
    // ANCHOR: hopper_descriptors
    /// wgmma descriptor templates: 128-byte swizzle, K-major; LBO is unused for swizzled K-major
    /// layouts (16 bytes, the value 1, by convention); SBO = 8 rows × 128 bytes.
    pub const A_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);
    pub const B_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);
    // ANCHOR_END: hopper_descriptors

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step05_swizzle128/sm90.cu",
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
        // ANCHOR: hopper_maps
        let a_map = tma::matrix_2d("A", ops.a, s.m, s.k, BM, BK, TmaSwizzle::B128)?;
        let b_map = tma::matrix_2d("B", ops.b, s.n, s.k, BN, BK, TmaSwizzle::B128)?;
        // ANCHOR_END: hopper_maps
        let config = tile_config(s, BM, BN, THREADS, SMEM_BYTES);
        launch_with_maps(func, stream, &[a_map, b_map], ops, &[], config)
    }
}

const HOPPER: KernelFile = hopper::KERNEL;

/// The Blackwell kernel's tile and launch (step 04's, with swizzled boxes). Assembled for sm_100a by the
/// tests; not run by this project.
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
    /// A and B tiles, plus 1 KiB so the kernel can align them to 1024 bytes (its barriers are static):
    /// 33 KiB. Asked for as 45,671 bytes instead (`sm100::smem_capping_tmem`): with 33 KiB six blocks fit
    /// on an SM, but TMEM holds only 512 / BN = 4 allocations of BN columns, so two blocks would sit
    /// in `tcgen05.alloc` holding their shared memory. With 45,671 bytes, 5 × (45,671 + 1,024) > 228 KiB:
    /// at most 4 blocks are resident, and every allocation succeeds at once.
    pub const SMEM_BYTES: u32 = sm100::smem_capping_tmem(1024 + (BM + BN) * BK * 2, BN);
    // ANCHOR: blackwell_descriptors
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
    // ANCHOR_END: blackwell_descriptors

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step05_swizzle128/sm100.cu",
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
        let config = tile_config(s, BM, BN, THREADS, SMEM_BYTES);
        launch_with_maps(func, stream, &[a_map, b_map], ops, &[], config)
    }
}

const BLACKWELL: KernelFile = blackwell::KERNEL;

/// The sm80 twin's tile and launch: step 04's, with the tiles stored as swizzled 128-byte rows.
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
    /// The A and B tiles: 32 KiB.
    pub const SMEM_BYTES: u32 = (BM + BN) * BK * 2;

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step05_swizzle128/sm80.cu",
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
    id: 5,
    name: "swizzle128",
    title: "128-byte swizzle: TMA boxes of whole 128-byte rows, swizzled into a layout the tensor cores read",
    predecessor: Some(4),
    format: Format::Bf16,
    // The sm80 twin last: a GPU takes the first file that serves it, so Hopper keeps its own.
    kernels: &[HOPPER, BLACKWELL, SM80],
    alternatives: &[],
    workspace: None,
};
