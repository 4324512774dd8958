//! The Blackwell kernel's tile, schedule, accumulators and launch: step 09's kernel, persistent, with
//! two TMEM accumulators so that a tile's epilogue overlaps the next tile's MMAs. Assembled for
//! sm_100a by the tests; not run by this project.

use super::*;
use crate::encoding::sm100::{self, AccumType, InputType};
use crate::encoding::tma::TensorMap;
use crate::encoding::{Major, LBO_IGNORED};

/// Blocks per cluster along M: a pair, the two halves of one 2-SM MMA.
pub const CLUSTER_M: u32 = 2;
/// Rows of `C` per block: half the M of the 2-SM MMA, so row i of a block's half is its TMEM lane i.
pub const BM: u32 = 128;
/// The M of one `tcgen05.mma.cta_group::2`: the pair's rows.
pub const MMA_M: u32 = BM * CLUSTER_M;
/// Columns of `C` per block (shared by the pair): the N of the MMA and the TMEM columns of one
/// accumulator.
pub const BN: u32 = 256;
/// Depth of one K slice (one slot of the ring): 64 bf16 = one 128-byte swizzled row.
pub const BK: u32 = 64;
/// Warp 0 the producer, warp 1 the MMA issuer, warps 2..5 the epilogue (they reach all 128 lanes).
pub const THREADS: u32 = 6 * 32;
/// Tile rows per group of the tile order: 8 rows of 256, the same 2048 rows as the Hopper twin's
/// 16 rows of 128.
pub const GROUP_M: u32 = super::hopper::GROUP_M * super::hopper::BM / MMA_M;
// ANCHOR: blackwell_tmem
/// TMEM accumulators, filled by the MMA warp and drained by the epilogue in turn: 2 × 256 columns,
/// all 512 of an SM's TMEM (so one pair per pair of SMs, which the shared memory enforces anyway).
pub const ACCUMULATORS: u32 = 2;
pub const ALLOCATED_COLUMNS: u32 = ACCUMULATORS * BN;
const _: () = assert!(ALLOCATED_COLUMNS == crate::encoding::TMEM_COLUMNS);
// ANCHOR_END: blackwell_tmem
/// Slots in the ring, as in step 09.
pub const STAGES: u32 = 6;
/// Columns of `C` per epilogue chunk (one `tcgen05.ld … .x32`), and the store box: one warp's 32 rows
/// × 32 columns, 64-byte rows, unswizzled (the kernel rotates its writes to keep banks apart).
pub const CHUNK_COLS: u32 = 32;
pub const BOX_ROWS: u32 = 32;
/// Staging buffers for `C`: two, so that one is stored while the other is filled.
pub const STAGING_BUFFERS: u32 = 2;
/// One slot: this block's A tile (BM × BK) and half B tile (BN/2 × BK), 32 KiB.
pub const SLOT_BYTES: u32 = (BM + BN / 2) * BK * 2;
/// Step 09's budget: 6 × 32 + 16 + 1 = 209 KiB (214,016 bytes). More than half of an SM's shared
/// memory, so one block per SM: what the persistent grid and the 512 TMEM columns both assume.
pub const SMEM_BYTES: u32 = 1024 + STAGES * SLOT_BYTES + STAGING_BUFFERS * BM * CHUNK_COLS * 2;
/// The barriers (2 × STAGES + 2 × ACCUMULATORS) and the TMEM address word are static shared
/// memory; leave room.
const _: () = assert!(SMEM_BYTES + 256 <= sm100::SMEM_PER_BLOCK_MAX);
const _: () = assert!(SMEM_BYTES + SLOT_BYTES > sm100::SMEM_PER_BLOCK_MAX);
/// One block per SM: a second would wait in `tcgen05.alloc` until the first exits (the end of
/// the GEMM).
const _: () = assert!(sm100::smem_capping_tmem(SMEM_BYTES, ALLOCATED_COLUMNS) == SMEM_BYTES);
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
    path: "steps/step10_persistent/sm100.cu",
    text: KernelText::File,
    targets: Targets::Blackwell,
    entry: "gemm",
    defines: &[
        ("BM", BM as u64),
        ("BN", BN as u64),
        ("BK", BK as u64),
        ("THREADS", THREADS as u64),
        ("CLUSTER_M", CLUSTER_M as u64),
        ("STAGES", STAGES as u64),
        ("GROUP_M", GROUP_M as u64),
        ("ACCUMULATORS", ACCUMULATORS as u64),
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
    // ANCHOR: blackwell_grid
    // One pair per place on the GPU, or one per tile: the Hopper twin's mechanism. The occupancy
    // calculator knows nothing of TMEM; the shared memory keeps it to one block per SM.
    let gemm = PersistentGemm {
        bm: BM,
        bn: BN,
        cluster_m: CLUSTER_M,
        cluster_n: 1,
        threads: THREADS,
        smem: SMEM_BYTES,
    };
    let launch = gemm.grid(func, stream, gemm.tiles(s))?;
    // ANCHOR_END: blackwell_grid
    launch_with_maps_in(
        func,
        stream,
        &[a_map, b_map, c_map],
        ops,
        &[use_tma_store as i32],
        launch,
    )
}
