//! Step 08 · pipeline: what this step launches and how.
//!
//! Hopper (`sm90.cu`): warp specialisation. 384 threads: a producer warpgroup (one thread issues the
//! TMA copies around a ring of `STAGES` tiles) and two consumer warpgroups, each computing 64 rows of a
//! 128×256 tile of `C` with `wgmma … m64n256k16`. Full/empty mbarriers with parity waits, `setmaxnreg`
//! to move registers from the producer to the consumers, one wgmma group kept in flight; clusters of
//! two along M with B multicast, as in step 07.
//!
//! Blackwell (`sm100.cu`, assembled, not run here): step 07's pair and 2-SM MMA (256 × 256 per
//! pair), warp-specialised: a producer warp fills a ring of `STAGES` = 5 slots, the leader's MMA warp
//! empties it (full/empty mbarriers, parity waits, commits multicast to both blocks' `empty`), and
//! four epilogue warps wait once for the last commit, then store as in step 07.
//!
//! sm80 twin (`sm80.cu`): step 07's twin's tile and loop, CUTLASS 2.x's multistage ring: every thread
//! copies and computes, one `cp.async` group and one block barrier per K tile, and as many stages as
//! the GPU gives a block shared memory for (3 where it has 163 KiB or more, 2 on a 99 KiB part). The
//! warp-specialised ring (`alternatives/sm80_specialised.cu`: a producer warp, full/empty mbarriers, no
//! `setmaxnreg`) and the two-stage ring are timed beside it as alternatives.

use crate::encoding::tma::{self, TmaSwizzle};
use crate::encoding::{sm90, SmemSwizzle};
use crate::error::Result;
use crate::run::registry::{
    launch_with_maps_in, launch_with_pointers, tile_config, Alternative, Format, GemmOperands, KernelFile, KernelText,
    Launch, Step, Targets,
};
use cudarc::driver::{CudaFunction, CudaStream};

/// The Hopper kernel's tile, roles and launch.
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
    /// Tiles of A and B in the ring (48 KiB each).
    pub const STAGES: u32 = 3;
    /// Registers a thread after `setmaxnreg`: the producer gives back, the consumers take
    /// (128 · 48 + 256 · 224 = 63,488 of the 64,512 the block starts with: 384 threads × 168).
    pub const PRODUCER_REGISTERS: u32 = 48;
    pub const CONSUMER_REGISTERS: u32 = 224;
    // ANCHOR_END: ring
    /// Blocks per cluster along M, sharing every B tile (step 07's).
    pub const CLUSTER_M: u32 = 2;
    pub const CLUSTER: (u32, u32, u32) = (1, CLUSTER_M, 1);
    /// A store box of `C`: one consumer's 64 rows × 64 columns, one 128-byte swizzled row.
    pub const C_BOX_ROWS: u32 = 64;
    pub const C_BOX_COLS: u32 = 64;
    // ANCHOR: smem
    /// STAGES × (A tile 16 KiB + B tile 32 KiB), the staging tile of `C` (128 × 256 bf16 = 64 KiB), two
    /// barriers per stage, and 1 KiB to align the tiles: 3 · 48 + 64 + 1 = 209 KiB of the 227 a block
    /// may have.
    pub const SMEM_BYTES: u32 = 1024 + STAGES * (BM + BN) * BK * 2 + BM * BN * 2 + 2 * STAGES * 8;
    // ANCHOR_END: smem
    /// wgmma descriptor templates: 128-byte swizzle, K-major; SBO = 8 rows × 128 bytes.
    pub const A_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);
    pub const B_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step08_pipeline/sm90.cu",
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

/// The Blackwell kernel's tile and launch: step 07's pair and 2-SM MMA, with a producer warp, an MMA
/// warp and four epilogue warps around a ring of `STAGES` slots. Assembled for sm_100a by the tests;
/// not run by this project.
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
    /// Columns of `C` per block (shared by the pair): the N of the MMA and the TMEM columns allocated.
    pub const BN: u32 = 256;
    /// Depth of one K slice (one slot of the ring): 64 bf16 = one 128-byte swizzled row.
    pub const BK: u32 = 64;
    /// Warp 0 the producer, warp 1 the MMA issuer, warps 2..5 the epilogue (they reach all 128 lanes).
    pub const THREADS: u32 = 6 * 32;
    // ANCHOR: blackwell_smem
    /// Slots in the ring: as many as fit beside the 64 KiB staging tile of `C` (“Matrix Multiplication on Blackwell: Part 3”, kernel 6: 5).
    pub const STAGES: u32 = 5;
    /// A store box of `C`: one warp's 32 rows (its TMEM lanes) × 64 columns (one 128-byte swizzled row).
    pub const BOX_ROWS: u32 = 32;
    pub const BOX_COLS: u32 = 64;
    /// One slot: this block's A tile (BM × BK) and half B tile (BN/2 × BK), 32 KiB.
    pub const SLOT_BYTES: u32 = (BM + BN / 2) * BK * 2;
    /// The ring, then the staging tile of `C` (BM × BN bf16, 64 KiB), plus 1 KiB so the kernel can
    /// align everything to 1024 bytes: 5 × 32 + 64 + 1 = 225 KiB (230,400 bytes). One block per SM.
    pub const SMEM_BYTES: u32 = 1024 + STAGES * SLOT_BYTES + BM * BN * 2;
    // ANCHOR_END: blackwell_smem
    /// The barriers (2 × STAGES + 1) and the TMEM address word are static shared memory; leave room.
    const _: () = assert!(SMEM_BYTES + 256 <= sm100::SMEM_PER_BLOCK_MAX);
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
        path: "steps/step08_pipeline/sm100.cu",
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

/// The sm80 twin's tile, ring and launch: step 07's twin, as deep as the GPU's shared memory allows.
pub mod sm80 {
    use super::*;

    /// Step 07's twin's tile: 256×128, eight warps of 64×64, K tiles of 64.
    pub const BM: u32 = 256;
    pub const BN: u32 = 128;
    pub const BK: u32 = 64;
    pub const THREADS: u32 = 256;
    /// The warp-specialised alternative: one producer warp more.
    pub const SPECIALISED_THREADS: u32 = THREADS + 32;
    pub const BLOCKS_PER_SM: u32 = 1;
    /// One stage: an A tile (256 rows) and a B tile (128 rows) of 128 bytes a row, 48 KiB.
    pub const STAGE_BYTES: u32 = (BM + BN) * BK * 2;
    // ANCHOR: stages
    /// The ring every GPU of the twin holds: 2 × 48 = 96 KiB, within the 99 KiB a block may have on
    /// RTX 30/40/50 and L4 parts (compute capability 8.6, 8.9, 12.x).
    pub const SHALLOW: u32 = 2;
    /// The ring where a block may have 163 KiB (A100, A30, Orin) or 227 KiB (H100, H200): 144 KiB.
    /// The launch takes it where the driver says the GPU has room (`run::ring::deeper`).
    pub const DEEP: u32 = 3;
    /// The ring's bytes, and the barriers the specialised ring keeps after it (two per stage).
    pub const fn smem_bytes(stages: u32) -> u32 {
        stages * STAGE_BYTES + 2 * stages * 8
    }
    // ANCHOR_END: stages
    const _: () = assert!(smem_bytes(SHALLOW) <= 99 * 1024 && smem_bytes(DEEP) <= 163 * 1024);
    const _: () = assert!(smem_bytes(DEEP + 1) > 163 * 1024);

    macro_rules! ring {
        ($path:literal, $stages:expr, $launch:expr) => {
            KernelFile {
                path: $path,
                text: KernelText::File,
                targets: Targets::Ampere,
                entry: "gemm",
                defines: &[
                    ("BM", BM as u64),
                    ("BN", BN as u64),
                    ("BK", BK as u64),
                    ("BLOCKS_PER_SM", BLOCKS_PER_SM as u64),
                    ("STAGES", $stages as u64),
                ],
                max_dynamic_smem: smem_bytes($stages),
                launch: $launch,
            }
        };
    }

    /// The step's kernel as registered: the ring every GPU holds; its launch takes the deeper
    /// compilation where the GPU has the shared memory for it.
    pub const KERNEL: KernelFile = ring!("steps/step08_pipeline/sm80.cu", SHALLOW, launch);
    /// The three-stage compilation, loaded on first use by a launch on a GPU that holds it.
    pub static DEEP_KERNEL: KernelFile = ring!("steps/step08_pipeline/sm80.cu", DEEP, launch_as_compiled);
    const SPECIALISED: KernelFile = ring!(
        "steps/step08_pipeline/alternatives/sm80_specialised.cu",
        SHALLOW,
        launch_specialised
    );
    pub static SPECIALISED_DEEP: KernelFile = ring!(
        "steps/step08_pipeline/alternatives/sm80_specialised.cu",
        DEEP,
        launch_specialised
    );

    pub const ALTERNATIVES: &[Alternative] = &[
        Alternative {
            name: "sm80-specialised",
            design: "a producer warp and eight consumer warps around the same ring: full/empty mbarriers (cp.async.mbarrier.arrive.noinc, polled test_wait), no block barrier; no setmaxnreg, so nine warps get 168 registers a thread",
            kernel: SPECIALISED,
            plan: false,
        },
        Alternative {
            name: "sm80-two-stages",
            design: "the ring of two stages every GPU holds (step 07's depth), on this GPU too",
            kernel: ring!(
        "steps/step08_pipeline/sm80.cu", SHALLOW, launch_as_compiled),
            plan: false,
        },
    ];

    /// The stages `func` was compiled with (the deep compilation's, the registered ring's, or an
    /// exercise's text at either).
    fn stages_of(func: &CudaFunction) -> u32 {
        crate::run::ring::define_of(func, "STAGES").map_or(SHALLOW, |stages| stages as u32)
    }

    fn launch_ring(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands, threads: u32) -> Result<()> {
        let config = tile_config(ops.shape, BM, BN, threads, smem_bytes(stages_of(func)));
        launch_with_pointers(func, stream, ops, config)
    }

    /// The step's launch: the deepest ring the GPU holds, told once as the step's plan.
    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let deep = crate::run::ring::deeper(func, stream, &KERNEL, &DEEP_KERNEL)?;
        let func = deep.as_ref().unwrap_or(func);
        let stages = stages_of(func);
        let text = format!(
            "step 08 (sm80) at {}: a ring of {stages} stages of {} KiB",
            ops.shape,
            STAGE_BYTES / 1024
        );
        crate::run::registry::tell_plan(
            &KERNEL,
            ops.shape,
            crate::run::registry::Plan {
                text,
                clusters_fit: None,
            },
        );
        launch_ring(func, stream, ops, THREADS)
    }

    fn launch_as_compiled(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        launch_ring(func, stream, ops, THREADS)
    }

    fn launch_specialised(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let deep = crate::run::ring::deeper(func, stream, &SPECIALISED, &SPECIALISED_DEEP)?;
        launch_ring(deep.as_ref().unwrap_or(func), stream, ops, SPECIALISED_THREADS)
    }
}

const SM80: KernelFile = sm80::KERNEL;

pub const STEP: Step = Step {
    id: 8,
    name: "pipeline",
    title: "Warp specialisation: a producer feeds a ring of stages while others compute (Hopper: two consumer warpgroups; Blackwell: an MMA warp and four epilogue warps)",
    predecessor: Some(7),
    format: Format::Bf16,
    // The sm80 twin last: a GPU takes the first file that serves it, so Hopper keeps its own.
    kernels: &[HOPPER, BLACKWELL, SM80],
    alternatives: sm80::ALTERNATIVES,
    workspace: None,
};
