//! Step 07 · multicast: what this step launches and how.
//!
//! Hopper (`sm90.cu`): step 06's tile and epilogue; blocks are launched in clusters of `CLUSTER_M`
//! along M, which share each B tile: every block loads its A tile and a `BN / CLUSTER_M`-row slice of
//! B, multicast into every block of the cluster. A ring of `STAGES` tiles with full/empty barriers
//! lets the next loads fly while the tensor cores work.
//!
//! Blackwell (`sm100.cu`, assembled, not run here): clusters of two blocks along M, a *pair*, compute
//! one 256 × 256 tile of `C` with 2-SM MMAs (`tcgen05.mma.cta_group::2`, M = 256). Each block loads
//! its 128 rows of A and half of the B tile (128 rows): the MMA reads the other half from the peer's
//! shared memory, so B is not multicast but split. The leader issues the MMAs; both blocks' copies
//! report to its barrier, and its commits are multicast to both blocks. Step 06's epilogue.
//!
//! sm80 twin (`sm80.cu`): no clusters or multicast below sm_90. One block of 256×128 (eight warps of
//! 64×64) loads each B tile once for 256 rows, the bytes per flop of the Hopper pair, on a two-stage
//! `cp.async` ring; step 06's sm80 epilogue.

use crate::encoding::tma::{self, TmaSwizzle};
use crate::encoding::{sm90, SmemSwizzle};
use crate::error::Result;
use crate::run::registry::{
    launch_with_maps_in, launch_with_pointers, tile_config, Format, GemmOperands, KernelFile, KernelText, Launch, Step,
    Targets,
};
use cudarc::driver::{CudaFunction, CudaStream};

/// The Hopper kernel's tile and launch: step 06's tile, in clusters, with a ring of two stages.
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
    // ANCHOR: cluster
    /// Blocks per cluster, stacked along M (grid y): they share every B tile. Two is the size public
    /// Hopper kernels found fastest; larger clusters are harder to place on the GPU's SMs.
    pub const CLUSTER_M: u32 = 2;
    /// The cluster's shape in grid dimensions (x along N, y along M).
    pub const CLUSTER: (u32, u32, u32) = (1, CLUSTER_M, 1);
    /// Tiles of A and B in the ring: the loads of tile t + 1 fly while the MMAs of tile t run.
    pub const STAGES: u32 = 2;
    // ANCHOR_END: cluster
    /// A store box of `C`: 64 columns, one 128-byte swizzled row.
    pub const C_BOX_COLS: u32 = 64;
    // ANCHOR: smem
    /// STAGES × (A tile, B tile), then a full and an empty barrier per stage; plus 1 KiB so the kernel can
    /// align the tiles to 1024 bytes. The staging tile of `C` (32 KiB) reuses the first stage.
    pub const SMEM_BYTES: u32 = 1024 + STAGES * (BM + BN) * BK * 2 + 2 * STAGES * 8;
    // ANCHOR_END: smem
    /// wgmma descriptor templates: 128-byte swizzle, K-major; LBO is unused for swizzled K-major
    /// layouts (16 bytes, the value 1, by convention); SBO = 8 rows × 128 bytes.
    pub const A_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);
    pub const B_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step07_multicast/sm90.cu",
        text: KernelText::File,
        targets: Targets::Hopper,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("STAGES", STAGES as u64),
            ("CLUSTER_M", CLUSTER_M as u64),
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
        // ANCHOR: b_map
        // Each block of a cluster loads one slice of the B tile for everyone: the box is a slice.
        let b_map = tma::matrix_2d("B", ops.b, s.n, s.k, BN / CLUSTER_M, BK, TmaSwizzle::B128)?;
        // ANCHOR_END: b_map
        let (c_map, use_tma_store) = tma::store_map_for_c(ops.c, s.m, s.n, BM, C_BOX_COLS)?;
        // The grid is rounded up to whole clusters: a block past the last row of C still loads its
        // slice of B for its peer, and stores nothing.
        let launch = Launch::clustered(tile_config(s, BM, BN, THREADS, SMEM_BYTES), CLUSTER);
        launch_with_maps_in(
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

/// The Blackwell kernel's tile and launch: a cluster of two blocks along M computes one 256 × 256
/// tile of `C` with 2-SM MMAs. Assembled for sm_100a by the tests; not run by this project.
mod blackwell {
    use super::*;
    use crate::encoding::sm100::{self, AccumType, InputType};
    use crate::encoding::{Major, LBO_IGNORED};

    /// Blocks per cluster along (x = N, y = M, z): a pair along M, the two halves of one 2-SM MMA.
    pub const CLUSTER: (u32, u32, u32) = (1, 2, 1);
    /// Rows of `C` per block: half the M of the 2-SM MMA, so row i of a block's half is its TMEM lane i.
    pub const BM: u32 = 128;
    /// The M of one `tcgen05.mma.cta_group::2`: the pair's rows.
    pub const MMA_M: u32 = BM * CLUSTER.1;
    /// Columns of `C` per block (both blocks of a pair share them): the N of the MMA, and the TMEM
    /// columns allocated (a power of two). Each block loads BN / 2 rows of B.
    pub const BN: u32 = 256;
    /// Depth of the K slice one TMA copy brings: 64 bf16 = one 128-byte swizzled row.
    pub const BK: u32 = 64;
    /// Four warps: together they reach all 128 TMEM lanes in the epilogue.
    pub const THREADS: u32 = 128;
    /// A store box of `C`: one warp's 32 rows (its TMEM lanes) × 64 columns (one 128-byte swizzled row).
    pub const BOX_ROWS: u32 = 32;
    pub const BOX_COLS: u32 = 64;
    // ANCHOR: blackwell_smem
    /// The A tile (BM × BK), this block's half of the B tile (BN/2 × BK), then the staging tile of
    /// `C` (BM × BN bf16), plus 1 KiB so the kernel can align all of them to 1024 bytes:
    /// 1 + 16 + 16 + 64 = 97 KiB. Two blocks fit on an SM, and 2 × 256 TMEM columns = 512: all of it.
    pub const SMEM_BYTES: u32 = 1024 + (BM + BN / 2) * BK * 2 + BM * BN * 2;
    // ANCHOR_END: blackwell_smem
    /// tcgen05 descriptor templates: 128-byte swizzle, K-major; LBO is ignored for swizzled K-major
    /// layouts (16 bytes, the value 1, by convention); SBO = 8 rows × 128 bytes. The same for both
    /// blocks: the MMA reads the peer's half at the same offset.
    pub const A_DESC: u64 = sm100::smem_descriptor(0, LBO_IGNORED, 1024, SmemSwizzle::B128);
    pub const B_DESC: u64 = sm100::smem_descriptor(0, LBO_IGNORED, 1024, SmemSwizzle::B128);
    /// `kind::f16` instruction descriptor of the 2-SM MMA: bf16 × bf16 → fp32, A and B K-major,
    /// M = 256 (the pair's), N = BN.
    pub const IDESC: u32 = sm100::instr_descriptor_f16_2sm(
        AccumType::F32,
        InputType::BF16,
        InputType::BF16,
        Major::K,
        Major::K,
        MMA_M,
        BN,
    );

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step07_multicast/sm100.cu",
        text: KernelText::File,
        targets: Targets::Blackwell,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("THREADS", THREADS as u64),
            ("CLUSTER_M", CLUSTER.1 as u64),
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
        // Each block of a pair loads half of the pair's B tile: boxes of BN / 2 rows.
        let b_map = tma::matrix_2d("B", ops.b, s.n, s.k, BN / 2, BK, TmaSwizzle::B128)?;
        // A TMA store writes whole 16-byte pieces of a row: C's row stride must be a multiple of 16 bytes.
        let (c_map, use_tma_store) = tma::store_map_for_c(ops.c, s.m, s.n, BOX_ROWS, BOX_COLS)?;
        // One block per BM × BN tile; the grid's y is rounded up to whole pairs.
        let launch = Launch::clustered(tile_config(s, BM, BN, THREADS, SMEM_BYTES), CLUSTER);
        launch_with_maps_in(
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

/// The sm80 twin's tile and launch: no clusters below sm_90, so one block twice as tall shares each B tile inside its SM.
mod sm80 {
    use super::*;

    /// Rows of `C` per block: four warps of 64 rows: B is loaded once for all 256.
    pub const BM: u32 = 256;
    /// Columns of `C` per block: two warps of 64 columns.
    pub const BN: u32 = 128;
    /// Depth of the K tile: 64 bf16 = one 128-byte swizzled row.
    pub const BK: u32 = 64;
    /// Eight warps, 4 × 2, each 64×64.
    pub const THREADS: u32 = 256;
    /// Blocks per SM the register budget is planned for (`__launch_bounds__`).
    pub const BLOCKS_PER_SM: u32 = 1;
    /// K tiles in the ring: the copies of tile t + 1 fly while tile t is multiplied.
    pub const STAGES: u32 = 2;
    /// Two stages of A (256 rows) and B (128 rows) tiles: 96 KiB, within the 99 KiB of RTX 40/50 and L4 parts; C's staging tile (64 KiB) reuses them.
    pub const SMEM_BYTES: u32 = STAGES * (BM + BN) * BK * 2;

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step07_multicast/sm80.cu",
        text: KernelText::File,
        targets: Targets::Ampere,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("BLOCKS_PER_SM", BLOCKS_PER_SM as u64),
            ("STAGES", STAGES as u64),
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
    id: 7,
    name: "multicast",
    title: "Multicast: clusters of two blocks share each B tile, loaded once (Hopper: written into both by the TMA; Blackwell: split between them for one 2-SM MMA)",
    predecessor: Some(6),
    format: Format::Bf16,
    // The sm80 twin last: a GPU takes the first file that serves it, so Hopper keeps its own.
    kernels: &[HOPPER, BLACKWELL, SM80],
    alternatives: &[],
    workspace: None,
};
