//! The Blackwell kernel's tile, accumulators, scales and launch: step 10's persistent 2-SM kernel on
//! e4m3 tiles, with the block-scaled MMA and the scales' path to TMEM (as in the MXFP8 text, "MXFP8 GEMM: Up to 99% of cuBLAS"). Assembled for sm_100a
//! by the tests; not run by this project.

use super::*;
use crate::encoding::sm100_mx::{self, MxType, ScaleType};
use crate::encoding::tma::TmaElement;
use crate::encoding::{sm100, Major, SmemSwizzle, LBO_IGNORED};
use crate::run::persistent::{store_map_for_c, tensor_map, MatrixMap, PersistentGemm};
use crate::run::registry::launch_maps_then;

/// Blocks per cluster along M: a pair, the two halves of one 2-SM MMA.
pub const CLUSTER_M: u32 = 2;
/// Rows of `C` per block: half the M of the 2-SM MMA, so row i of a block's half is its TMEM lane i
/// (and one 128-row tile of the blocked scale layout).
pub const BM: u32 = 128;
/// The M of one `tcgen05.mma.cta_group::2`: the pair's rows.
pub const MMA_M: u32 = BM * CLUSTER_M;
/// Columns of `C` per block (shared by the pair): the N of the MMA and the TMEM columns of one
/// accumulator.
pub const BN: u32 = 256;
// ANCHOR: blackwell_bk
/// Depth of one K slice: 128 e4m3 = one 128-byte swizzled row (step 10's 64 bf16, in bytes), four
/// scale blocks of 32, one column of 512-byte tiles of the blocked scale layout.
pub const BK: u32 = 128;
// ANCHOR_END: blackwell_bk
/// Warp 0 the producer, warp 1 the MMA issuer (the peer's: the scale relay), warps 2..5 the epilogue.
pub const THREADS: u32 = 6 * 32;
/// Tile rows per group of the tile order, as the Hopper twin's.
pub const GROUP_M: u32 = super::hopper::GROUP_M;
// ANCHOR: blackwell_tmem
/// Two accumulators of 256 columns would fill all 512 columns of TMEM and leave none for the
/// scales, which the MMA reads from TMEM too: 4 columns for A's 128 rows, 8 for B's 256. As in seed
/// 004 the two accumulators overlap by one epilogue chunk (32 columns), which the epilogue reads
/// first; the 32 columns freed at the top hold the scales: two sets of 12, used by alternate K
/// slices, so that a slice's copy never overwrites the scales the slice before is still reading.
pub const ACCUMULATORS: u32 = 2;
pub const OVERLAP_COLUMNS: u32 = 32;
pub const SCALE_SETS: u32 = 2;
pub const SCALE_COLUMNS: u32 = sm100_mx::SCALE_TILE_COLUMNS * (1 + BN / 128);
pub const ALLOCATED_COLUMNS: u32 = ACCUMULATORS * BN;
const _: () = assert!(ALLOCATED_COLUMNS == crate::encoding::TMEM_COLUMNS);
const _: () = assert!(ACCUMULATORS * BN - OVERLAP_COLUMNS + SCALE_SETS * SCALE_COLUMNS <= ALLOCATED_COLUMNS);
// ANCHOR_END: blackwell_tmem
/// Slots in the ring: one fewer than step 10's six, for the fp32 staging buffers and the scales.
pub const STAGES: u32 = 5;
/// Columns of `C` per epilogue chunk (one `tcgen05.ld … .x32`), and the store box: one warp's 32 rows
/// × 32 fp32 columns, 128-byte rows with the 128-byte swizzle.
pub const CHUNK_COLS: u32 = 32;
pub const C_BOX_ROWS: u32 = 32;
/// Staging buffers for `C`: two, so that one is stored while the other is filled.
pub const STAGING_BUFFERS: u32 = 2;
// ANCHOR: blackwell_smem
/// One slot: this block's A tile (BM × BK e4m3) and half B tile (BN/2 × BK), 32 KiB as in step 10,
/// plus its scales: A's tile and B's two (BN = 256 rows: the 2-SM MMA wants all of N's scales in
/// each SM), 1.5 KiB.
pub const SLOT_BYTES: u32 = (BM + BN / 2) * BK;
pub const SCALE_SLOT_BYTES: u32 = sm100_mx::SCALE_TILE_BYTES * (1 + BN / 128);
/// 5 × 33.5 + 2 × 16 + 1 = 200.5 KiB (205,312 bytes): one block per SM, as the persistent grid and
/// the 512 TMEM columns assume; a sixth slot does not fit.
pub const SMEM_BYTES: u32 = 1024 + STAGES * (SLOT_BYTES + SCALE_SLOT_BYTES) + STAGING_BUFFERS * BM * CHUNK_COLS * 4;
// ANCHOR_END: blackwell_smem
/// The barriers (3 × STAGES + 2 × ACCUMULATORS + 1) and the TMEM address word are static shared
/// memory; leave room.
const _: () = assert!(SMEM_BYTES + 256 <= sm100::SMEM_PER_BLOCK_MAX);
const _: () = assert!(SMEM_BYTES + SLOT_BYTES + SCALE_SLOT_BYTES > sm100::SMEM_PER_BLOCK_MAX);
const _: () = assert!(sm100::smem_capping_tmem(SMEM_BYTES, ALLOCATED_COLUMNS) == SMEM_BYTES);
/// tcgen05 descriptor templates of the e4m3 tiles: 128-byte swizzle, K-major, as step 10's (a row is
/// 128 bytes either way).
pub const A_DESC: u64 = sm100::smem_descriptor(0, LBO_IGNORED, 1024, SmemSwizzle::B128);
pub const B_DESC: u64 = sm100::smem_descriptor(0, LBO_IGNORED, 1024, SmemSwizzle::B128);
// ANCHOR: blackwell_idesc
/// The source of `tcgen05.cp … 32x128b`: one 512-byte scale tile, 32 rows of 16 bytes.
pub const SF_DESC: u64 = sm100_mx::scale_tile_smem_descriptor();
/// Block-scaled instruction descriptor of the 2-SM MMA: e4m3 × e4m3, UE8M0 scales, fp32 accumulate,
/// K-major, M = 256, N = BN, scale-factor ids 0; MMA k of a slice adds k · `IDESC_SF_ID_STEP`.
pub const IDESC: u32 = sm100_mx::instr_descriptor_mxf8f6f4_2sm(
    MxType::E4M3,
    MxType::E4M3,
    ScaleType::UE8M0,
    Major::K,
    Major::K,
    MMA_M,
    BN,
    0,
    0,
);
pub const IDESC_SF_ID_STEP: u32 = sm100_mx::SF_ID_STEP;
// ANCHOR_END: blackwell_idesc
const _: () = assert!(BK == sm100_mx::MMA_K * sm100_mx::SCALE_IDS);

pub const KERNEL: KernelFile = KernelFile {
    path: "steps/step11_mxfp8/sm100.cu",
    text: crate::run::registry::KernelText::File,
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
        ("SF_DESC", SF_DESC),
        ("IDESC", IDESC as u64),
        ("IDESC_SF_ID_STEP", IDESC_SF_ID_STEP as u64),
    ],
    max_dynamic_smem: SMEM_BYTES,
    launch,
};

fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
    let s = ops.shape;
    // One pair per place on the GPU, or one per tile: step 10's mechanism.
    let gemm = PersistentGemm {
        bm: BM,
        bn: BN,
        cluster_m: CLUSTER_M,
        cluster_n: 1,
        threads: THREADS,
        smem: SMEM_BYTES,
    };
    // Each block of a pair loads half of the pair's B tile: boxes of BN / 2 rows.
    let (a_rows, b_rows) = gemm.box_rows();
    let e4m3 = |name, address, rows, box_rows| MatrixMap {
        name,
        element: TmaElement::U8,
        address,
        rows,
        cols: s.k,
        box_rows,
        box_cols: BK,
        swizzle: TmaSwizzle::B128,
    };
    let a_map = tensor_map(e4m3("A", ops.a, s.m, a_rows))?;
    let b_map = tensor_map(e4m3("B", ops.b, s.n, b_rows))?;
    // fp32 C: 32 × 32 boxes of 128-byte rows, 128-byte swizzle; a TMA store needs N % 4 == 0.
    let (c_map, use_tma_store) = store_map_for_c(MatrixMap {
        name: "C",
        element: TmaElement::F32,
        address: ops.c,
        rows: s.m,
        cols: s.n,
        box_rows: C_BOX_ROWS,
        box_cols: CHUNK_COLS,
        swizzle: TmaSwizzle::B128,
    })?;
    let launch = gemm.grid(func, stream, gemm.tiles(s))?;
    launch_maps_then(
        func,
        stream,
        &[a_map, b_map, c_map],
        &[ops.scale_a, ops.scale_b, ops.c],
        ops,
        &[use_tma_store as i32],
        launch,
    )
}
