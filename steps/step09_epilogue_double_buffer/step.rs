//! Step 09 · epilogue_double_buffer: what this step launches and how.
//!
//! Hopper (`sm90.cu`): step 08's kernel; each consumer stores its 64×256 part of `C` in four chunks of
//! 64 columns through two 8 KiB staging buffers, one TMA store in flight while the next chunk is
//! packed. Staging shrinks from 64 KiB to 32 KiB and the ring grows from 3 stages to 4.
//!
//! Blackwell (`sm100.cu`, assembled, not run here): step 08's pair, 2-SM MMA and warp roles; each
//! epilogue warp stores its 32 rows in 32-column chunks through two staging buffers (TMEM → registers
//! → shared memory → TMA store, one `cp.async.bulk.wait_group.read 1` before a buffer is reused), and
//! the 48 KiB this frees give the ring a 6th slot. The same `N % 8` fallback.
//!
//! sm80 twin (`sm80.cu`): step 08's twin; each warp stores its 64×64 part of `C` through two private
//! 1 KiB chunks outside the ring, one `__syncwarp` per chunk and no block barrier. Beside a ring of
//! three stages that is 160 KiB (A100, H100, H200); a 99 KiB part keeps two stages and carves the
//! chunks from the ring after a block barrier.

use crate::encoding::tma::{self, TmaSwizzle};
use crate::encoding::{sm90, SmemSwizzle};
use crate::error::Result;
use crate::run::registry::{
    launch_with_maps_in, launch_with_pointers, tile_config, Alternative, Format, GemmOperands, KernelFile, KernelText,
    Launch, Step, Targets,
};
use cudarc::driver::{CudaFunction, CudaStream};

/// The Hopper kernel's tile, roles and launch (step 08's, with a chunked epilogue and a deeper ring).
mod hopper {
    use super::*;

    /// Rows of `C` per block: two consumer warpgroups of 64 rows.
    pub const BM: u32 = 128;
    /// Columns of `C` per block: one `wgmma … m64n256k16` covers them.
    pub const BN: u32 = 256;
    /// Depth of the K tile: 64 bf16 = one 128-byte swizzled row.
    pub const BK: u32 = 64;
    /// A producer warpgroup and two consumer warpgroups.
    pub const THREADS: u32 = 3 * 128;
    // ANCHOR: ring
    /// Tiles of A and B in the ring (48 KiB each): one more than step 08, paid for by the smaller
    /// staging of `C`.
    pub const STAGES: u32 = 4;
    /// Registers a thread after `setmaxnreg`: the producer gives back, the consumers take
    /// (128 · 48 + 256 · 224 = 63,488 of the 64,512 the block starts with: 384 threads × 168).
    pub const PRODUCER_REGISTERS: u32 = 48;
    pub const CONSUMER_REGISTERS: u32 = 224;
    // ANCHOR_END: ring
    /// Blocks per cluster along M, sharing every B tile (step 07's).
    pub const CLUSTER_M: u32 = 2;
    pub const CLUSTER: (u32, u32, u32) = (1, CLUSTER_M, 1);
    /// A store box of `C`, and a chunk of the epilogue: one consumer's 64 rows × 64 columns, one
    /// 128-byte swizzled row (8 KiB).
    pub const C_BOX_ROWS: u32 = 64;
    pub const C_BOX_COLS: u32 = 64;
    /// Staging buffers per consumer warpgroup: one is filled while the TMA reads the other.
    pub const C_BUFFERS: u32 = 2;
    /// Consumer warpgroups (each has its own buffers).
    pub const CONSUMERS: u32 = 2;
    // ANCHOR: smem
    /// STAGES × (A tile 16 KiB + B tile 32 KiB), the staging buffers of `C` (2 consumers × 2 × 8 KiB =
    /// 32 KiB), two barriers per stage, and 1 KiB to align the tiles: 4 · 48 + 32 + 1 = 225 KiB of the
    /// 227 a block may have.
    pub const SMEM_BYTES: u32 =
        1024 + STAGES * (BM + BN) * BK * 2 + CONSUMERS * C_BUFFERS * C_BOX_ROWS * C_BOX_COLS * 2 + 2 * STAGES * 8;
    // ANCHOR_END: smem
    /// wgmma descriptor templates: 128-byte swizzle, K-major; SBO = 8 rows × 128 bytes.
    pub const A_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);
    pub const B_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step09_epilogue_double_buffer/sm90.cu",
        text: KernelText::File,
        targets: Targets::Hopper,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("STAGES", STAGES as u64),
            ("CLUSTER_M", CLUSTER_M as u64),
            ("PRODUCER_REGISTERS", PRODUCER_REGISTERS as u64),
            ("CONSUMER_REGISTERS", CONSUMER_REGISTERS as u64),
            ("A_DESC", A_DESC),
            ("B_DESC", B_DESC),
        ],
        max_dynamic_smem: SMEM_BYTES,
        launch,
    };

    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let s = ops.shape;
        let a_map = tma::matrix_2d("A", ops.a, s.m, s.k, BM, BK, TmaSwizzle::B128)?;
        let b_map = tma::matrix_2d("B", ops.b, s.n, s.k, BN / CLUSTER_M, BK, TmaSwizzle::B128)?;
        let (c_map, use_tma_store) = tma::store_map_for_c(ops.c, s.m, s.n, C_BOX_ROWS, C_BOX_COLS)?;
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

/// The Blackwell kernel's tile and launch: step 08's, with the epilogue double-buffered in 32-column
/// chunks and the freed shared memory given to the ring. Assembled for sm_100a by the tests; not run
/// by this project.
mod blackwell {
    use super::*;
    use crate::encoding::sm100::{self, AccumType, InputType};
    use crate::encoding::tma::TensorMap;
    use crate::encoding::{Major, LBO_IGNORED};

    /// Blocks per cluster along (x = N, y = M, z): a pair along M, the two halves of one 2-SM MMA.
    pub const CLUSTER: (u32, u32, u32) = (1, 2, 1);
    /// Rows of `C` per block: half the M of the 2-SM MMA, so row i of a block's half is its TMEM lane i.
    pub const BM: u32 = 128;
    /// The M of one `tcgen05.mma.cta_group::2`: the pair's rows.
    pub const MMA_M: u32 = BM * CLUSTER.1;
    /// Columns of `C` per block (shared by the pair): the N of the MMA and the TMEM columns allocated.
    pub const BN: u32 = 256;
    /// Depth of one K slice (one slot of the ring): 64 bf16 = one 128-byte swizzled row.
    pub const BK: u32 = 64;
    /// Warp 0 the producer, warp 1 the MMA issuer, warps 2..5 the epilogue (they reach all 128 lanes).
    pub const THREADS: u32 = 6 * 32;
    // ANCHOR: blackwell_smem
    /// Slots in the ring: step 08's 5, plus the one the smaller staging area makes room for.
    pub const STAGES: u32 = 6;
    /// Columns of `C` per epilogue chunk (one `tcgen05.ld … .x32`), and the store box: one warp's 32 rows
    /// × 32 columns, 64-byte rows, unswizzled (the kernel rotates its writes to keep banks apart).
    pub const CHUNK_COLS: u32 = 32;
    pub const BOX_ROWS: u32 = 32;
    /// Staging buffers for `C`: two, so that one is stored while the other is filled.
    pub const STAGING_BUFFERS: u32 = 2;
    /// One slot: this block's A tile (BM × BK) and half B tile (BN/2 × BK), 32 KiB.
    pub const SLOT_BYTES: u32 = (BM + BN / 2) * BK * 2;
    /// The ring, then two staging buffers of BM × 32 bf16 (16 KiB in all, against step 08's 64 KiB),
    /// plus 1 KiB so the kernel can align everything to 1024 bytes: 6 × 32 + 16 + 1 = 209 KiB
    /// (214,016 bytes). A 7th slot would need 241 KiB, more than a block may have.
    pub const SMEM_BYTES: u32 = 1024 + STAGES * SLOT_BYTES + STAGING_BUFFERS * BM * CHUNK_COLS * 2;
    /// The barriers (2 × STAGES + 1) and the TMEM address word are static shared memory; leave room.
    const _: () = assert!(SMEM_BYTES + 256 <= sm100::SMEM_PER_BLOCK_MAX);
    const _: () = assert!(SMEM_BYTES + SLOT_BYTES > sm100::SMEM_PER_BLOCK_MAX);
    // ANCHOR_END: blackwell_smem
    /// tcgen05 descriptor templates: 128-byte swizzle, K-major (step 05's), the same in every slot.
    pub const A_DESC: u64 = sm100::smem_descriptor(0, LBO_IGNORED, 1024, SmemSwizzle::B128);
    pub const B_DESC: u64 = sm100::smem_descriptor(0, LBO_IGNORED, 1024, SmemSwizzle::B128);
    /// `kind::f16` instruction descriptor of the 2-SM MMA: bf16 × bf16 → fp32, K-major, M = 256, N = BN.
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
        path: "steps/step09_epilogue_double_buffer/sm100.cu",
        text: KernelText::File,
        targets: Targets::Blackwell,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("THREADS", THREADS as u64),
            ("CLUSTER_M", CLUSTER.1 as u64),
            ("STAGES", STAGES as u64),
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
        // A TMA store writes whole 16-byte pieces of a row: C's row stride must be a multiple of 16
        // bytes. The boxes are 32 × 32 and unswizzled (`tma::store_map_for_c` makes 128-byte swizzled
        // ones, for 64-column boxes).
        let (c_map, use_tma_store) = if s.n.is_multiple_of(8) {
            let map = tma::matrix_2d("C", ops.c, s.m, s.n, BOX_ROWS, CHUNK_COLS, TmaSwizzle::None)?;
            (map, true)
        } else {
            (TensorMap([0; 16]), false)
        };
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

/// The sm80 twin's tile, ring, staging and launch: step 08's twin with warp-private staging chunks.
pub mod sm80 {
    use super::*;
    use crate::run::steps::step08_pipeline::sm80 as step08;

    pub const BM: u32 = step08::BM;
    pub const BN: u32 = step08::BN;
    pub const BK: u32 = step08::BK;
    pub const THREADS: u32 = step08::THREADS;
    pub const BLOCKS_PER_SM: u32 = step08::BLOCKS_PER_SM;
    pub const STAGE_BYTES: u32 = step08::STAGE_BYTES;
    // ANCHOR: staging
    /// Each warp's two staging chunks of 8 rows × 64 columns of bf16: 2 KiB a warp, 16 KiB a block.
    pub const STAGING_BYTES: u32 = (THREADS / 32) * 2 * 8 * 64 * 2;
    /// The ring's stages, and whether the staging chunks are carved from it: three stages with the
    /// chunks beside them (160 KiB) where a block may have 163 KiB or more; two stages, the chunks in
    /// the ring after a block barrier, on a 99 KiB part (two stages and 16 KiB beside them would be
    /// 112 KiB).
    pub const DEEP: (u32, bool) = (step08::DEEP, false);
    pub const SHALLOW: (u32, bool) = (step08::SHALLOW, true);
    pub const fn smem_bytes(config: (u32, bool)) -> u32 {
        let (stages, in_ring) = config;
        stages * STAGE_BYTES + if in_ring { 0 } else { STAGING_BYTES }
    }
    // ANCHOR_END: staging
    const _: () = assert!(smem_bytes(SHALLOW) <= 99 * 1024 && smem_bytes(DEEP) <= 163 * 1024);
    const _: () = assert!(smem_bytes((step08::SHALLOW, false)) > 99 * 1024);

    macro_rules! kernel {
        ($config:expr, $launch:expr) => {
            KernelFile {
                path: "steps/step09_epilogue_double_buffer/sm80.cu",
                text: crate::run::registry::KernelText::File,
                targets: Targets::Ampere,
                entry: "gemm",
                defines: &[
                    ("BM", BM as u64),
                    ("BN", BN as u64),
                    ("BK", BK as u64),
                    ("BLOCKS_PER_SM", BLOCKS_PER_SM as u64),
                    ("STAGES", $config.0 as u64),
                    ("STAGING_IN_RING", $config.1 as u64),
                ],
                max_dynamic_smem: smem_bytes($config),
                launch: $launch,
            }
        };
    }

    /// The step's kernel as registered (what every GPU holds); its launch takes the deep compilation
    /// where the GPU has the shared memory for it.
    pub const KERNEL: KernelFile = kernel!(SHALLOW, launch);
    pub static DEEP_KERNEL: KernelFile = kernel!(DEEP, launch_as_compiled);
    /// Three stages with the chunks carved from the ring after a block barrier: what the disjoint
    /// staging buys, on a GPU that holds both.
    const IN_RING: (u32, bool) = (step08::DEEP, true);

    pub const ALTERNATIVES: &[Alternative] = &[Alternative {
        name: "sm80-staging-in-ring",
        design: "the same three-stage ring and warp-private chunks, carved from the ring after a block barrier (a 99 KiB part's epilogue, at the deep ring's depth)",
        kernel: kernel!(IN_RING, launch_as_compiled),
        plan: false,
    }];

    /// The ring and staging `func` was compiled with (the deep compilation, the registered one, the
    /// alternative, or an exercise's text at any of them).
    fn config_of(func: &CudaFunction) -> (u32, bool) {
        let define = |name| crate::run::ring::define_of(func, name);
        match (define("STAGES"), define("STAGING_IN_RING")) {
            (Some(stages), Some(in_ring)) => (stages as u32, in_ring != 0),
            _ => SHALLOW,
        }
    }

    fn launch_as_compiled(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let config = tile_config(ops.shape, BM, BN, THREADS, smem_bytes(config_of(func)));
        launch_with_pointers(func, stream, ops, config)
    }

    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let deep = crate::run::ring::deeper(func, stream, &KERNEL, &DEEP_KERNEL)?;
        let func = deep.as_ref().unwrap_or(func);
        let (stages, in_ring) = config_of(func);
        let text = format!(
            "step 09 (sm80) at {}: a ring of {stages} stages, staging chunks {}",
            ops.shape,
            if in_ring {
                "carved from the ring"
            } else {
                "beside the ring"
            }
        );
        crate::run::registry::tell_plan(
            &KERNEL,
            ops.shape,
            crate::run::registry::Plan {
                text,
                clusters_fit: None,
            },
        );
        launch_as_compiled(func, stream, ops)
    }
}

const SM80: KernelFile = sm80::KERNEL;

pub const STEP: Step = Step {
    id: 9,
    name: "epilogue_double_buffer",
    title: "Double-buffered epilogue: C leaves in chunks (64 columns on Hopper, 32 on Blackwell) through two staging buffers; the freed memory deepens the ring",
    predecessor: Some(8),
    format: Format::Bf16,
    // The sm80 twin last: a GPU takes the first file that serves it, so Hopper keeps its own.
    kernels: &[HOPPER, BLACKWELL, SM80],
    alternatives: sm80::ALTERNATIVES,
    workspace: None,
};
