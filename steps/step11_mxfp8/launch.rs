//! How step 11's Hopper kernels are launched: one `HopperLaunch` for the step's kernel and every
//! alternative, on the shared persistent grid (`persistent::PersistentGemm`); how B reaches each
//! kernel (`BOperand`); and the pre-pass that dequantizes B before the step's GEMM.

use super::{conversion_flag_bytes, CONVERSION_K, CONVERSION_ROWS};
use crate::encoding::tma::{TmaElement, TmaSwizzle};
use crate::error::Result;
use crate::run::persistent::{store_map_for_c, tensor_map, MatrixMap, PersistentGemm};
use crate::run::registry::{launch_maps_then, launch_sibling, GemmOperands};
use cudarc::driver::{CudaFunction, CudaStream};

/// How the step's Hopper kernels differ in their launch (all take the MX arguments and run on
/// `persistent::PersistentGemm`'s grid): the tile, the e4m3 K tile and its swizzle, the cluster and
/// the operand it shares, C's store box, how B reaches the kernel, and whether the grid is trimmed.
pub(super) struct HopperLaunch {
    /// Rows of `C` per block and columns per block.
    pub(super) bm: u32,
    pub(super) bn: u32,
    /// The K tile, in e4m3 elements: the bytes of a row of the A and B boxes.
    pub(super) bk: u32,
    /// How the TMA lays the e4m3 rows out in shared memory.
    pub(super) swizzle: TmaSwizzle,
    pub(super) threads: u32,
    pub(super) smem: u32,
    /// Blocks per cluster, and which operand they share: the one the cluster's blocks lie along.
    pub(super) cluster: u32,
    pub(super) shared: SharedOperand,
    /// A store box of fp32 `C`: rows × columns.
    pub(super) c_box: (u32, u32),
    /// How B reaches the kernel.
    pub(super) b: BOperand,
    /// The grid trimmed to the fewest clusters that need no more turns (`persistent::balanced`), or
    /// every cluster that fits.
    pub(super) balanced: bool,
}

/// How the kernel gets B.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum BOperand {
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
pub(super) enum SharedOperand {
    /// The blocks lie along N, one above the other's columns: they share the rows of A.
    A,
    /// The blocks lie along M: they share the rows of B.
    B,
}

impl HopperLaunch {
    /// The persistent launch of the kernel: its tile and its cluster along the operand it shares.
    pub(super) const fn gemm(&self) -> PersistentGemm {
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

    pub(super) fn launch(&self, func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::super::workspace;
    use super::*;
    use crate::check::problem::Shape;
    use crate::run::workspace::WorkspaceView;

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

        // A workspace sized for a smaller shape is refused, naming who needed it.
        // (a B larger than the sm80 twin's stream-K partials, which the workspace also holds: 132 ×
        // 128 KiB)
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
