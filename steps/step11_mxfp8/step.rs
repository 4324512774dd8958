//! Step 11 · mxfp8: what this step launches and how.
//!
//! The problem changes here: `A` and `B` are OCP fp8 e4m3 with one e8m0 scale per 1×32 block along K
//! (shared/check/mx.rs), and `C` is fp32. The kernel's signature is the MX one of
//! [`launch_mx_with_maps_in`]: `gemm(TensorMap a, TensorMap b, TensorMap c, const u8* scale_a,
//! const u8* scale_b, float* C, int M, int N, int K, int use_tma_store)`, scales in the blocked layout.
//!
//! Hopper (`sm90.cu`): no block-scaled MMA; the kernel emulates MX exactly: step 10's persistent
//! pipeline on e4m3 tiles, each element converted to bf16 with its block's scale folded in (exact),
//! B into a bf16 tile in shared memory, A straight into the wgmma's register operand.
//! Blackwell (`sm100.cu`, assembled, not run here): `tcgen05.mma … kind::mxf8f6f4.block_scale`, as
//! in seed 004.

use crate::encoding::tma::{self, TmaSwizzle};
use crate::error::Result;
use crate::run::registry::{
    balanced, launch_maps_then, launch_mx_with_maps_in, launch_sibling, persistent_launch, Alternative, Format,
    GemmOperands, KernelFile, Step, Targets,
};
use cudarc::driver::{CudaFunction, CudaStream};

/// What the persistent launch of a Hopper kernel of this step needs to know of it (all of them, the
/// step's and its alternatives, take the same arguments and launch the same way).
struct HopperLaunch {
    /// Rows of `C` per block and columns per block.
    bm: u32,
    bn: u32,
    /// The K tile, in e4m3 elements: the bytes of a row of the A and B boxes.
    bk: u32,
    /// How the TMA lays the e4m3 rows out in shared memory.
    swizzle: TmaSwizzle,
    threads: u32,
    smem: u32,
    /// Blocks per cluster, and which operand they share: the one the cluster's blocks lie along.
    cluster: u32,
    shared: SharedOperand,
    /// A store box of fp32 `C`: rows × columns.
    c_box: (u32, u32),
    /// How B reaches the kernel.
    b: BOperand,
    /// The grid trimmed to the fewest clusters that need no more turns ([`balanced`]), or every
    /// cluster that fits.
    balanced: bool,
}

/// How the kernel gets B.
#[derive(Clone, Copy, PartialEq)]
enum BOperand {
    /// As e4m3 tiles with their scales, converted by the consumers in shared memory (`fused`, `smem_b`)
    /// or promoted after fp8 MMAs (`promote`); the kernel takes the MX signature of
    /// [`launch_mx_with_maps_in`].
    E4m3,
    /// Converted into the session's scratch buffer (bf16, each 16 elements of K in the A fragments'
    /// order) by the producer warpgroup's idle warps while the GEMM runs, and loaded from there as
    /// step 10 loads B, each K tile once its flags say it is converted ([`converting_workspace_bytes`]).
    ConvertedInKernel,
    /// The same copy, made before the GEMM by the module's `dequantize_b` (the pre-pass alternative).
    Dequantized,
}

// ANCHOR: converting_launch
/// The scratch buffer of the kernels that convert B into bf16 (sm90.cu): the N×K bf16 copy of B, then
/// one 32-bit flag per unit of conversion (32 rows of B × one K tile; 8 units per 256-row panel, the
/// ragged last panel whole), raised to the launch's epoch when the unit is written. The flags are
/// zeroed once, when the buffer is allocated, and never cleared: every launch raises them to a new
/// epoch, so a flag left by an earlier launch never reads as converted.
pub fn converting_workspace_bytes(shape: crate::check::problem::Shape) -> usize {
    converted_b_bytes(shape) + conversion_flag_bytes(shape)
}

fn converted_b_bytes(shape: crate::check::problem::Shape) -> usize {
    (shape.n * shape.k * 2).next_multiple_of(1024)
}

fn conversion_flag_bytes(shape: crate::check::problem::Shape) -> usize {
    4 * 8 * shape.n.div_ceil(256) * shape.k.div_ceil(64)
}

/// The epoch of the next launch of a converting kernel: one counter for the process, so that no two
/// launches on one scratch buffer share one (it starts at 1: the flags start at 0).
static EPOCH: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
// ANCHOR_END: converting_launch

/// Threads per block of `dequantize_b`; each converts 8 elements of B (half a 16-element slice).
const DEQUANTIZE_THREADS: u32 = 256;

/// The operand the blocks of a cluster share (each loads one slice of it for all of them).
#[derive(Clone, Copy, PartialEq)]
enum SharedOperand {
    /// The blocks lie along N, one above the other's columns: they share the rows of A.
    A,
    /// The blocks lie along M: they share the rows of B.
    B,
}

impl HopperLaunch {
    fn launch(&self, func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let s = ops.shape;
        let (a_rows, b_rows) = match self.shared {
            SharedOperand::A => (self.bm / self.cluster, self.bn),
            SharedOperand::B => (self.bm, self.bn / self.cluster),
        };
        // ANCHOR: maps
        // e4m3 tiles: `bk` bytes a row (the step's kernel: 64, with the 64-byte swizzle, conflict-free
        // for ldmatrix and the converter); each block of a cluster loads its slice of the shared
        // operand for both.
        let a_map = tma::matrix_2d_u8("A", ops.a, s.m, s.k, a_rows, self.bk, self.swizzle)?;
        let b_map = match self.b {
            BOperand::E4m3 => tma::matrix_2d_u8("B", ops.b, s.n, s.k, b_rows, self.bk, self.swizzle)?,
            BOperand::ConvertedInKernel | BOperand::Dequantized => {
                if self.b == BOperand::Dequantized {
                    dequantize_b(func, stream, ops)?;
                }
                tma::matrix_2d(
                    "B (converted)",
                    ops.workspace,
                    s.n,
                    s.k,
                    b_rows,
                    self.bk,
                    TmaSwizzle::B128,
                )?
            }
        };
        // ANCHOR_END: maps
        let (c_map, use_tma_store) =
            tma::store_map_for_c_f32(ops.c, s.m, s.n, self.c_box.0, self.c_box.1, TmaSwizzle::B128)?;
        let tiles = match self.shared {
            SharedOperand::A => s.tiles(self.bm, self.cluster * self.bn),
            SharedOperand::B => s.tiles(self.cluster * self.bm, self.bn),
        };
        let mut launch = persistent_launch(func, stream, self.threads, self.smem, self.cluster, tiles)?;
        if self.balanced {
            launch = balanced(launch, tiles);
        }
        if self.b == BOperand::Dequantized {
            // The GEMM starts under the pre-pass's tail (a programmatic dependent launch): its blocks
            // set up while the last of the pre-pass's finish, and its producer waits for the
            // converted B before the first load of it.
            launch = launch.programmatic();
        }
        if self.b != BOperand::ConvertedInKernel {
            let maps = [a_map, b_map, c_map];
            return launch_mx_with_maps_in(func, stream, &maps, ops, &[use_tma_store as i32], launch);
        }
        // sm90_overlapped.cu's signature: a fourth map, B's e4m3 bytes in the converting warps' units (32 rows ×
        // one K tile, unswizzled); the scales and C, the bf16 copy and the flags; the launch's epoch.
        // Its blocks wait for each other's conversions: all of them must be resident at once, so the
        // launch is cooperative.
        let unit_map = tma::matrix_2d_u8("B (e4m3 units)", ops.b, s.n, s.k, 32, self.bk, TmaSwizzle::None)?;
        let flags = ops.workspace + converted_b_bytes(s) as u64;
        let epoch = EPOCH.fetch_add(1, std::sync::atomic::Ordering::Relaxed) as i32;
        launch_maps_then(
            func,
            stream,
            &[a_map, b_map, c_map, unit_map],
            &[ops.scale_a, ops.scale_b, ops.c, ops.workspace, flags],
            ops,
            &[use_tma_store as i32, epoch],
            launch.co_resident(),
        )
    }
}

// ANCHOR: pre_pass
/// Enqueues `dequantize_b`, the kernel beside `gemm` in the step's module: all of B into bf16 once,
/// into the session's scratch buffer.
fn dequantize_b(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
    if ops.workspace == 0 {
        return Err(crate::error::Error::Other(
            "step 11 needs the session's scratch buffer for the dequantized B".into(),
        ));
    }
    let s = ops.shape;
    let (rows, k) = (s.n as i32, s.k as i32);
    let mut params: [*mut std::ffi::c_void; 5] = [
        &ops.b as *const u64 as *mut _,
        &ops.scale_b as *const u64 as *mut _,
        &ops.workspace as *const u64 as *mut _,
        &rows as *const i32 as *mut _,
        &k as *const i32 as *mut _,
    ];
    let threads = (s.n * (s.k / 8)) as u64;
    let grid = threads.div_ceil(u64::from(DEQUANTIZE_THREADS)) as u32;
    // SAFETY: `dequantize_b(const u8* q, const u8* scales, bf16* out, int rows, int K)`: B is N×K bytes,
    // its scales the blocked layout, the workspace N×K bf16.
    unsafe { launch_sibling(func, stream, "dequantize_b", grid, DEQUANTIZE_THREADS, &mut params) }
}
// ANCHOR_END: pre_pass

/// The Hopper kernel's tile, roles and launch: a pre-pass dequantizes B once into the scratch buffer,
/// then step 10's persistent pipeline runs on e4m3 A and bf16 B, A converted into registers by the
/// consumers.
mod hopper {
    use super::*;
    use crate::encoding::{sm90, SmemSwizzle};

    /// Rows of `C` per block: two consumer warpgroups of 64 rows, whose rows of A enter the MMAs from
    /// registers.
    pub const BM: u32 = 128;
    /// Columns of `C` per block: one `wgmma … m64n256k16` covers them.
    pub const BN: u32 = 256;
    /// Depth of the K tile: 64 elements, two scale blocks: 64 bytes of e4m3 A a row, 128 bytes of bf16
    /// B (step 10's K tile).
    pub const BK: u32 = 64;
    /// A producer warpgroup and two consumer warpgroups.
    pub const THREADS: u32 = 3 * 128;
    /// Stages in the ring: 32 KiB of bf16 B, 8 KiB of e4m3 A and 512 bytes of A's scales each. Four
    /// is as deep as fits beside the staging of C; three ran 14% slower (development runs).
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
    /// STAGES × 40.5 KiB of B, A and A's scales, the staging buffers of C (2 consumers × 2 × 8 KiB),
    /// two barriers per stage, 1 KiB to align: 4 · 40.5 + 32 + 1 = 195 KiB.
    pub const SMEM_BYTES: u32 =
        1024 + STAGES * (BN * BK * 2 + BM * BK + 512) + 2 * 2 * C_BOX_ROWS * 128 + 2 * STAGES * 8;
    // ANCHOR_END: smem
    /// Hopper lets a block have at most 227 KiB of shared memory.
    const _: () = assert!(SMEM_BYTES <= 227 * 1024);
    /// wgmma descriptor template of the bf16 B tile: 128-byte swizzle, K-major, SBO = 8 rows × 128
    /// bytes, step 10's (A comes from registers and has none).
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

    // ANCHOR: launch
    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        // The pre-pass, then the GEMM: e4m3 A with the 64-byte swizzle; the bf16 B as step 10 loads it,
        // each block of a cluster its half of the tile's rows for both; the grid trimmed to the fewest
        // clusters that finish the tiles in as many turns.
        HopperLaunch {
            bm: BM,
            bn: BN,
            bk: BK,
            swizzle: TmaSwizzle::B64,
            threads: THREADS,
            smem: SMEM_BYTES,
            cluster: CLUSTER_M,
            shared: SharedOperand::B,
            c_box: (C_BOX_ROWS, C_BOX_COLS),
            b: BOperand::Dequantized,
            balanced: true,
        }
        .launch(func, stream, ops)
    }
    // ANCHOR_END: launch
}

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
        path: "steps/step11_mxfp8/sm90_fused.cu",
        source: include_str!("sm90_fused.cu"),
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
        launch,
    };

    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        HopperLaunch {
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
        }
        .launch(func, stream, ops)
    }
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
        path: "steps/step11_mxfp8/sm90_smem_b.cu",
        source: include_str!("sm90_smem_b.cu"),
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
        HopperLaunch {
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
        }
        .launch(func, stream, ops)
    }
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
    const UNIT_SLOT_BYTES: u32 = 32 * BK + 512;
    /// The step's 195 KiB, the converting warps' slots (3 × 4 × 2.5 KiB) and a barrier per slot: 225 KiB.
    pub const SMEM_BYTES: u32 = hopper::SMEM_BYTES + 3 * UNIT_SLOTS * UNIT_SLOT_BYTES + 3 * UNIT_SLOTS * 8;
    /// Hopper lets a block have at most 227 KiB of shared memory.
    const _: () = assert!(SMEM_BYTES <= 227 * 1024);

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step11_mxfp8/sm90_overlapped.cu",
        source: include_str!("sm90_overlapped.cu"),
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
        launch,
    };

    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        HopperLaunch {
            bm: BM,
            bn: BN,
            bk: BK,
            swizzle: TmaSwizzle::B64,
            threads: THREADS,
            smem: SMEM_BYTES,
            cluster: CLUSTER_M,
            shared: SharedOperand::B,
            c_box: (hopper::C_BOX_ROWS, hopper::C_BOX_COLS),
            b: BOperand::ConvertedInKernel,
            balanced: true,
        }
        .launch(func, stream, ops)
    }
}

const OVERLAPPED: Alternative = Alternative {
    name: "overlapped",
    design: "no pre-pass: the producer warpgroup's three idle warps convert B into the bf16 copy while the GEMM runs, unit by unit, and the TMA thread waits for each unit's flag",
    kernel: overlapped::KERNEL,
};

const HOPPER: KernelFile = hopper::KERNEL;

const FUSED: Alternative = Alternative {
    name: "fused",
    design: "no pre-pass: a 256×128 tile, A converted into registers, B into a ring of bf16 tiles in shared memory by the consumers",
    kernel: fused::KERNEL,
};

const SMEM_B: Alternative = Alternative {
    name: "smem_b",
    design: "the previous design: a 128×256 tile, B's 256 rows converted into one bf16 tile in shared memory, both consumers meeting at a barrier every K tile",
    kernel: smem_b::KERNEL,
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
        path: "steps/step11_mxfp8/sm90_promote.cu",
        source: include_str!("sm90_promote.cu"),
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
        launch,
    };

    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        HopperLaunch {
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
        }
        .launch(func, stream, ops)
    }
}

const PROMOTE: Alternative = Alternative {
    name: "promote",
    design:
        "design (a): one fp8 wgmma per 32-element scale block, promoted into fp32 with both scales on the CUDA cores",
    kernel: promote::KERNEL,
};

/// The Blackwell kernel's tile, accumulators, scales and launch: step 10's persistent 2-SM kernel on
/// e4m3 tiles, with the block-scaled MMA and the scales' path to TMEM (seed 004). Assembled for sm_100a
/// by the tests; not run by this project.
mod blackwell {
    use super::*;
    use crate::encoding::sm100_mx::{self, MxType, ScaleType};
    use crate::encoding::{sm100, Major, SmemSwizzle, LBO_IGNORED};

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
        source: include_str!("sm100.cu"),
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
        let a_map = tma::matrix_2d_u8("A", ops.a, s.m, s.k, BM, BK, TmaSwizzle::B128)?;
        // Each block of a pair loads half of the pair's B tile: boxes of BN / 2 rows.
        let b_map = tma::matrix_2d_u8("B", ops.b, s.n, s.k, BN / 2, BK, TmaSwizzle::B128)?;
        // fp32 C: 32 × 32 boxes of 128-byte rows, 128-byte swizzle; a TMA store needs N % 4 == 0.
        let (c_map, use_tma_store) =
            tma::store_map_for_c_f32(ops.c, s.m, s.n, C_BOX_ROWS, CHUNK_COLS, TmaSwizzle::B128)?;
        // One pair per place on the GPU, or one per tile: step 10's mechanism.
        let tiles = s.tiles(CLUSTER_M * BM, BN);
        let launch = persistent_launch(func, stream, THREADS, SMEM_BYTES, CLUSTER_M, tiles)?;
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
    alternatives: &[OVERLAPPED, FUSED, SMEM_B, PROMOTE],
};
