//! Step 11 · mxfp8: what this step launches and how.
//!
//! The problem changes here: `A` and `B` are OCP fp8 e4m3 with one e8m0 scale per 1×32 block along K
//! (shared/check/mx.rs), and `C` is fp32. The kernels take the MX signature: `gemm(TensorMap a,
//! TensorMap b, TensorMap c, const u8* scale_a, const u8* scale_b, float* C, int M, int N, int K,
//! int use_tma_store)`, scales in the blocked layout (the alternative "overlapped", which converts B
//! while it computes, takes a map of B's e4m3 units, the workspace and the epoch too:
//! `BOperand::ConvertedInGemm`). Every Hopper kernel of the step, its own and the alternatives, is
//! launched by `HopperLaunch` on the shared persistent grid (`persistent::PersistentGemm`), with the
//! session's workspace for the converted B ([`workspace`]).
//!
//! Hopper (`sm90.cu`): no block-scaled MMA; the kernel emulates MX exactly: a pre-pass converts B to
//! bf16 once (each element with its block's scale folded in: exact), and step 10's persistent
//! pipeline runs on e4m3 A, converted by the consumers straight into the wgmma's register operand,
//! and that bf16 B; the GEMM is launched under the pre-pass's tail (a programmatic dependent launch).
//! Blackwell (`sm100.cu`, assembled, not run here): `tcgen05.mma … kind::mxf8f6f4.block_scale`, as
//! in seed 004.

use crate::check::problem::Shape;
use crate::encoding::tma::{TmaElement, TmaSwizzle};
use crate::error::Result;
use crate::run::persistent::{store_map_for_c, tensor_map, MatrixMap, PersistentGemm, WorkspaceNeed};
use crate::run::registry::{
    launch_maps_then, launch_sibling, Alternative, Format, GemmOperands, KernelFile, Step, Targets,
};
use cudarc::driver::{CudaFunction, CudaStream};

// ANCHOR: workspace
/// What step 11 needs of the session's workspace (`persistent::Workspace`): room for B converted to
/// bf16 (N×K), and a flag for each unit of that conversion (32 rows of B by one K tile of 64), which
/// the alternative "overlapped" raises to its launch's epoch. The flags come first, zeroed when the
/// workspace is made; the scratch after them, on a 1024-byte boundary.
pub fn workspace(shape: Shape, sms: u32) -> WorkspaceNeed {
    // The sm80 twin's stream-K takes step 10's (partial tiles and flags); the larger of the two.
    let stream_k = crate::run::steps::step10_persistent::workspace(shape, sms);
    WorkspaceNeed {
        flag_bytes: conversion_flag_bytes(shape).max(stream_k.flag_bytes),
        scratch_bytes: ((shape.n * shape.k * 2) as u64).max(stream_k.scratch_bytes),
    }
}

/// Rows of B and elements of K in one unit of B's conversion (one flag each).
pub const CONVERSION_ROWS: usize = 32;
pub const CONVERSION_K: usize = 64;

/// Rows of B in one panel of the tile order (a tile's columns of C): the units of a K tile are
/// counted by whole panels, so that the TMA thread of a ragged last panel finds a flag for each unit
/// of its slice.
const PANEL_ROWS: usize = 256;

/// The conversion's flags: one 32-bit word per unit, `4 × 8⌈N/256⌉ × ⌈K/64⌉` bytes.
pub fn conversion_flag_bytes(shape: Shape) -> u64 {
    let units_per_k_tile = shape.n.div_ceil(PANEL_ROWS) * (PANEL_ROWS / CONVERSION_ROWS);
    (4 * units_per_k_tile * shape.k.div_ceil(CONVERSION_K)) as u64
}
// ANCHOR_END: workspace

/// How the step's Hopper kernels differ in their launch (all take the MX arguments and run on
/// `persistent::PersistentGemm`'s grid): the tile, the e4m3 K tile and its swizzle, the cluster and
/// the operand it shares, C's store box, how B reaches the kernel, and whether the grid is trimmed.
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
    /// The grid trimmed to the fewest clusters that need no more turns (`persistent::balanced`), or
    /// every cluster that fits.
    balanced: bool,
}

/// How the kernel gets B.
#[derive(Debug, Clone, Copy, PartialEq)]
enum BOperand {
    /// As e4m3 tiles with their scales, converted in the kernel. The kernel takes
    /// `gemm(TensorMap a, TensorMap b, TensorMap c, const u8* scale_a, const u8* scale_b, float* C,
    /// int M, int N, int K, int use_tma_store)`.
    E4m3,
    /// Dequantized once, before the GEMM, by the module's `dequantize_b` into the workspace's scratch
    /// (bf16, each 16 elements of K in the A fragments' order), loaded as step 10 loads B. The kernel
    /// takes the signature of `E4m3`, its B map over the scratch.
    Dequantized,
    /// Converted by the kernel itself into the workspace's scratch while it computes, one unit of
    /// [`CONVERSION_ROWS`] × [`CONVERSION_K`] at a time, each released with its flag raised to the
    /// launch's epoch; B's map is over the scratch, as for `Dequantized`, and a fourth map gives the
    /// converting warps B's e4m3 bytes in units. The kernel takes `gemm(TensorMap a, TensorMap b,
    /// TensorMap c, TensorMap b_units, const u8* scale_a, const u8* scale_b, float* C,
    /// bf16* b_converted, u32* flags, int M, int N, int K, int use_tma_store, u32 epoch)`.
    ConvertedInGemm,
}

/// What a kernel gets for B ([`HopperLaunch::b_operand`]).
#[derive(Debug, PartialEq)]
struct BArguments {
    /// The request for B's tensor map, and for the map of B's e4m3 units, if the kernel converts them.
    map: MatrixMap,
    units_map: Option<MatrixMap>,
    /// Pointers the kernel takes after `C`, and 32-bit values after `use_tma_store`.
    pointers: Vec<u64>,
    ints: Vec<i32>,
    /// Where `dequantize_b` must write B before the GEMM, if it must.
    pre_pass: Option<u64>,
    /// Whether blocks wait for flags other blocks raise: then the launch is cooperative, so that a
    /// grid the GPU cannot hold at once is refused instead of left hanging (step 10's stream-K rule).
    co_resident: bool,
}

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
    /// The persistent launch of the kernel: its tile and its cluster along the operand it shares.
    const fn gemm(&self) -> PersistentGemm {
        let (cluster_m, cluster_n) = match self.shared {
            SharedOperand::A => (1, self.cluster),
            SharedOperand::B => (self.cluster, 1),
        };
        PersistentGemm {
            bm: self.bm,
            bn: self.bn,
            cluster_m,
            cluster_n,
            threads: self.threads,
            smem: self.smem,
        }
    }

    /// The request for an e4m3 operand's map (`rows` × K bytes), each block's box `box_rows` × `bk`.
    fn e4m3(&self, name: &'static str, address: u64, rows: usize, k: usize, box_rows: u32) -> MatrixMap {
        MatrixMap {
            name,
            element: TmaElement::U8,
            address,
            rows,
            cols: k,
            box_rows,
            box_cols: self.bk,
            swizzle: self.swizzle,
        }
    }

    // ANCHOR: maps
    /// How B reaches the kernel: the request for B's map, the pointers and 32-bit values the kernel
    /// takes after `C` and after `use_tma_store` for it, and where a pre-pass must dequantize B first.
    /// e4m3 tiles are `bk` bytes a row (the step's kernel: 64, with the 64-byte swizzle, conflict-free
    /// for ldmatrix and the converter); a converted B is bf16 in the workspace's scratch, loaded as
    /// step 10 loads B; each block of a cluster loads its slice of the shared operand for both.
    fn b_operand(&self, ops: &GemmOperands) -> Result<BArguments> {
        let s = ops.shape;
        let (_, b_rows) = self.gemm().box_rows();
        let who = "step 11's converted B";
        let converted = |scratch| MatrixMap {
            element: TmaElement::Bf16,
            swizzle: TmaSwizzle::B128,
            ..self.e4m3("B (converted)", scratch, s.n, s.k, b_rows)
        };
        let only = |map| BArguments {
            map,
            units_map: None,
            pointers: vec![],
            ints: vec![],
            pre_pass: None,
            co_resident: false,
        };
        Ok(match self.b {
            BOperand::E4m3 => only(self.e4m3("B", ops.b, s.n, s.k, b_rows)),
            BOperand::Dequantized => {
                let scratch = ops.workspace.scratch((s.n * s.k * 2) as u64, who)?;
                BArguments {
                    pre_pass: Some(scratch),
                    ..only(converted(scratch))
                }
            }
            BOperand::ConvertedInGemm => {
                let scratch = ops.workspace.scratch((s.n * s.k * 2) as u64, who)?;
                let flags = ops.workspace.flags(conversion_flag_bytes(s), who)?;
                let units = MatrixMap {
                    box_rows: CONVERSION_ROWS as u32,
                    box_cols: CONVERSION_K as u32,
                    swizzle: TmaSwizzle::None,
                    ..self.e4m3("B (e4m3 units)", ops.b, s.n, s.k, b_rows)
                };
                BArguments {
                    units_map: Some(units),
                    pointers: vec![scratch, flags],
                    ints: vec![ops.workspace.epoch as i32],
                    co_resident: true,
                    ..only(converted(scratch))
                }
            }
        })
    }
    // ANCHOR_END: maps

    fn launch(&self, func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let s = ops.shape;
        let gemm = self.gemm();
        let (a_rows, _) = gemm.box_rows();
        let a_map = tensor_map(self.e4m3("A", ops.a, s.m, s.k, a_rows))?;
        let b = self.b_operand(ops)?;
        if let Some(scratch) = b.pre_pass {
            dequantize_b(func, stream, ops, scratch)?;
        }
        let b_map = tensor_map(b.map)?;
        let (c_map, use_tma_store) = store_map_for_c(MatrixMap {
            name: "C",
            element: TmaElement::F32,
            address: ops.c,
            rows: s.m,
            cols: s.n,
            box_rows: self.c_box.0,
            box_cols: self.c_box.1,
            swizzle: TmaSwizzle::B128,
        })?;
        let tiles = gemm.tiles(s);
        let mut launch = if self.balanced {
            gemm.balanced_grid(func, stream, tiles)?
        } else {
            gemm.grid(func, stream, tiles)?
        };
        if b.co_resident {
            launch = launch.co_resident();
        }
        if b.pre_pass.is_some() {
            // The GEMM starts under the pre-pass's tail (a programmatic dependent launch): its blocks
            // set up while the last of the pre-pass's finish, and its producer waits for the
            // converted B before its first load of it.
            launch = launch.programmatic();
        }
        let mut maps = vec![a_map, b_map, c_map];
        if let Some(units) = b.units_map {
            maps.push(tensor_map(units)?);
        }
        let mut pointers = vec![ops.scale_a, ops.scale_b, ops.c];
        pointers.extend(b.pointers);
        let mut ints = vec![use_tma_store as i32];
        ints.extend(b.ints);
        launch_maps_then(func, stream, &maps, &pointers, ops, &ints, launch)
    }
}

// ANCHOR: pre_pass
/// Enqueues `dequantize_b`, the kernel beside `gemm` in the step's module: all of B into bf16 once,
/// into `scratch` (the workspace's).
fn dequantize_b(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands, scratch: u64) -> Result<()> {
    let s = ops.shape;
    let (rows, k) = (s.n as i32, s.k as i32);
    let mut params: [*mut std::ffi::c_void; 5] = [
        &ops.b as *const u64 as *mut _,
        &ops.scale_b as *const u64 as *mut _,
        &scratch as *const u64 as *mut _,
        &rows as *const i32 as *mut _,
        &k as *const i32 as *mut _,
    ];
    let threads = (s.n * (s.k / 8)) as u64;
    let grid = threads.div_ceil(u64::from(DEQUANTIZE_THREADS)) as u32;
    // SAFETY: `dequantize_b(const u8* q, const u8* scales, bf16* out, int rows, int K)`: B is N×K bytes,
    // its scales the blocked layout, the scratch N×K bf16.
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
        launch: |func, stream, ops| LAUNCH.launch(func, stream, ops),
    };

    /// Its launch: the step's, with this geometry.
    const LAUNCH: HopperLaunch = HopperLaunch {
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
    };
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
        launch: |func, stream, ops| LAUNCH.launch(func, stream, ops),
    };

    /// Its launch: the step's, with this geometry.
    const LAUNCH: HopperLaunch = HopperLaunch {
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
    };
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
    const UNIT_SLOT_BYTES: u32 = CONVERSION_ROWS as u32 * BK + 512;
    const _: () = assert!(BK as usize == CONVERSION_K && BN as usize == PANEL_ROWS);
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
        launch: |func, stream, ops| LAUNCH.launch(func, stream, ops),
    };

    /// Its launch: the step's, with B converted in the GEMM (a cooperative grid).
    const LAUNCH: HopperLaunch = HopperLaunch {
        bm: BM,
        bn: BN,
        bk: BK,
        swizzle: TmaSwizzle::B64,
        threads: THREADS,
        smem: SMEM_BYTES,
        cluster: CLUSTER_M,
        shared: SharedOperand::B,
        c_box: (hopper::C_BOX_ROWS, hopper::C_BOX_COLS),
        b: BOperand::ConvertedInGemm,
        balanced: true,
    };
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
        launch: |func, stream, ops| LAUNCH.launch(func, stream, ops),
    };

    /// Its launch: the step's, with this geometry.
    const LAUNCH: HopperLaunch = HopperLaunch {
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
    };
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
}

const BLACKWELL: KernelFile = blackwell::KERNEL;

/// The sm80 twin (`sm80.cu`): step 10's sm80 twin on e4m3, each fragment converted to bf16 in
/// registers between `ldmatrix` and the bf16 `mma.sync` (exact: every MX value is a bf16), the scales
/// copied beside the ring, fp32 C through the warp-private chunks. The only MX path an A100 has.
pub mod sm80 {
    use super::*;
    use crate::run::registry::{tell_plan, Plan};
    use crate::run::steps::step10_persistent::sm80 as step10;

    pub const BM: u32 = step10::BM;
    pub const BN: u32 = step10::BN;
    /// A K tile of 128 e4m3: a 128-byte row, as step 10's 64 bf16, so the ring and its swizzle are
    /// step 10's; four MX blocks.
    pub const BK: u32 = 128;
    pub const THREADS: u32 = step10::THREADS;
    pub const BLOCKS_PER_SM: u32 = step10::BLOCKS_PER_SM;
    pub const GROUP_M: u32 = step10::GROUP_M;
    /// One stage: A's and B's tiles (48 KiB, step 10's) and their scales (one 512-byte piece of the
    /// blocked layout per 128 rows: 1.5 KiB).
    pub const STAGE_BYTES: u32 = (BM + BN) * BK + (BM + BN) / 128 * 512;
    /// Step 10's warp-private chunks, for fp32 C: 8 warps × 2 chunks of 8 rows × 32 columns (1 KiB).
    pub const STAGING_BYTES: u32 = (THREADS / 32) * 2 * 8 * 32 * 4;
    // ANCHOR: sm80_configs
    /// Three stages and the chunks (164.5 KiB) on an H100 or H200; two stages, exactly 99 KiB, and C
    /// stored from registers everywhere else (an A100's 163 KiB misses three stages with the chunks by
    /// 1.5 KiB).
    pub const DEEP: (u32, bool) = (3, true);
    pub const SHALLOW: (u32, bool) = (2, false);
    pub const fn smem_bytes(config: (u32, bool)) -> u32 {
        let (stages, staging) = config;
        stages * STAGE_BYTES + if staging { STAGING_BYTES } else { 0 }
    }
    // ANCHOR_END: sm80_configs
    const _: () = assert!(smem_bytes(SHALLOW) <= 99 * 1024 && smem_bytes(DEEP) <= 227 * 1024);

    macro_rules! kernel {
        ($config:expr) => {
            KernelFile {
                path: "steps/step11_mxfp8/sm80.cu",
                source: include_str!("sm80.cu"),
                targets: Targets::Ampere,
                entry: "gemm",
                defines: &[
                    ("BM", BM as u64),
                    ("BN", BN as u64),
                    ("BK", BK as u64),
                    ("BLOCKS_PER_SM", BLOCKS_PER_SM as u64),
                    ("STAGES", $config.0 as u64),
                    ("STAGING", $config.1 as u64),
                    ("GROUP_M", GROUP_M as u64),
                ],
                max_dynamic_smem: smem_bytes($config),
                launch,
            }
        };
    }

    /// The step's kernel as registered (what every GPU holds); its launch takes the deep compilation
    /// where the GPU has the shared memory for it.
    pub const KERNEL: KernelFile = kernel!(SHALLOW);
    pub static DEEP_KERNEL: KernelFile = kernel!(DEEP);

    // ANCHOR: sm80_launch
    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let s = ops.shape;
        let deep = crate::run::ring::deeper(func, stream, &KERNEL, &DEEP_KERNEL)?;
        let func = deep.as_ref().unwrap_or(func);
        let config = if crate::run::loader::compiled_from(func, &DEEP_KERNEL) {
            DEEP
        } else {
            SHALLOW
        };
        // Step 10's persistent grid, decomposition and stream-K workspace, K tiles of 128 e4m3.
        let plan = step10::schedule(func, stream, ops, BK, smem_bytes(config), true)?;
        let text = format!(
            "step 11 (sm80) at {s}: {BM}×{BN} blocks, a ring of {} stages, {}",
            config.0, plan.text
        );
        tell_plan(
            &KERNEL,
            s,
            Plan {
                text,
                clusters_fit: plan.clusters_fit,
            },
        );
        launch_maps_then(
            func,
            stream,
            &[],
            &[ops.a, ops.b, ops.scale_a, ops.scale_b, ops.c, plan.partials, plan.flags],
            ops,
            &plan.ints,
            plan.launch,
        )
    }
    // ANCHOR_END: sm80_launch
}

const SM80: KernelFile = sm80::KERNEL;

pub const STEP: Step = Step {
    id: 11,
    name: "mxfp8",
    title: "MXFP8: e4m3 operands with one e8m0 scale per 1×32 block along K, fp32 C",
    predecessor: Some(10),
    format: Format::Mxfp8,
    kernels: &[HOPPER, BLACKWELL, SM80],
    alternatives: &[OVERLAPPED, FUSED, SMEM_B, PROMOTE],
    workspace: Some(workspace),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::persistent::WorkspaceView;

    fn operands(shape: Shape, workspace: WorkspaceView) -> GemmOperands {
        GemmOperands {
            a: 0x1000,
            b: 0x2000,
            c: 0x3000,
            scale_a: 0x4000,
            scale_b: 0x5000,
            workspace,
            shape,
        }
    }

    /// The session's workspace for the step at `shape`, laid out as the session lays it out.
    fn workspace_at(shape: Shape, epoch: u32) -> WorkspaceView {
        let need = workspace(shape, 132);
        let (scratch_at, _) = need.layout();
        WorkspaceView {
            flags: 1 << 20,
            flag_bytes: need.flag_bytes,
            scratch: (1 << 20) + scratch_at,
            scratch_bytes: need.scratch_bytes,
            epoch,
        }
    }

    #[test]
    fn the_workspace_holds_a_flag_per_unit_and_the_converted_b() {
        // 4096³: 128 × 64 units of 32 rows by 64 of K, a 32 KiB flag area, then 32 MiB of bf16 B.
        let need = workspace(Shape::square(4096), 132);
        assert_eq!(need.flag_bytes, 4 * 128 * 64);
        assert_eq!(need.scratch_bytes, 4096 * 4096 * 2);
        assert_eq!(need.layout().0 % 1024, 0);
        // A ragged shape rounds the units up to whole panels of 256 rows (8 units), and K up to a
        // whole K tile.
        assert_eq!(conversion_flag_bytes(Shape::new(100, 33, 96)), 4 * 8 * 2);
        assert_eq!(conversion_flag_bytes(Shape::new(100, 300, 64)), 4 * 16);
    }

    /// Each way of getting B hands the kernel what its signature says, from the session's workspace,
    /// and a workspace too small is refused in one line before any launch.
    #[test]
    fn each_b_operand_passes_its_arguments() {
        let shape = Shape::new(512, 384, 256);
        let view = workspace_at(shape, 9);
        let ops = operands(shape, view);
        let mut launch = hopper_launch_for_tests();
        let got = launch.b_operand(&ops).unwrap();
        assert_eq!((got.map.address, got.map.element), (ops.b, TmaElement::U8));
        assert_eq!((got.pointers, got.ints, got.pre_pass), (vec![], vec![], None));

        launch.b = BOperand::Dequantized;
        let got = launch.b_operand(&ops).unwrap();
        let map = got.map;
        assert_eq!(
            (map.address, map.element, map.swizzle),
            (view.scratch, TmaElement::Bf16, TmaSwizzle::B128)
        );
        assert_eq!(
            (got.pointers, got.ints, got.pre_pass, got.co_resident),
            (vec![], vec![], Some(view.scratch), false)
        );

        launch.b = BOperand::ConvertedInGemm;
        let got = launch.b_operand(&ops).unwrap();
        assert_eq!(
            (got.map.address, got.map.box_rows, got.map.box_cols),
            (view.scratch, 128, 64)
        );
        let units = got.units_map.expect("the converting kernel reads B's e4m3 units");
        assert_eq!(
            (
                units.address,
                units.element,
                units.box_rows,
                units.box_cols,
                units.swizzle
            ),
            (ops.b, TmaElement::U8, 32, 64, TmaSwizzle::None)
        );
        assert_eq!(got.pointers, vec![view.scratch, view.flags]);
        assert_eq!((got.ints, got.pre_pass, got.co_resident), (vec![9], None, true));

        // A workspace sized for a smaller shape is refused, naming who needed it (a B larger than the
        // sm80 twin's stream-K partials, which the workspace also holds: 132 × 128 KiB).
        let small = operands(Shape::new(512, 4096, 4096), view);
        let refused = launch.b_operand(&small).unwrap_err().to_string();
        assert!(
            refused.contains("step 11's converted B needs") && !refused.contains('\n'),
            "{refused}"
        );
    }

    fn hopper_launch_for_tests() -> HopperLaunch {
        HopperLaunch {
            bm: 128,
            bn: 256,
            bk: 64,
            swizzle: TmaSwizzle::B64,
            threads: 384,
            smem: 0,
            cluster: 2,
            shared: SharedOperand::B,
            c_box: (64, 32),
            b: BOperand::E4m3,
            balanced: true,
        }
    }
}
