//! TMA tensor maps, built on the host with `cuTensorMapEncodeTiled` and passed to kernels by value
//! (`const __grid_constant__ TensorMap`). A tensor map tells the copy engine where a matrix lives, its
//! shape and strides, the box one copy moves, and how to swizzle that box in shared memory.
//!
//! The driver's rules are checked here first, so a bad box or stride is one clear line naming the rule
//! rather than `CUDA_ERROR_INVALID_VALUE` from deep inside a launch.

use crate::error::{Error, Result};
use cudarc::driver::sys::{
    self, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};
use cudarc::driver::DeviceRepr;

/// The 128 opaque bytes the driver writes; the kernel's `TensorMap` (shared/cuda/tma.cuh) has the
/// same size and is read only by the copy engine.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct TensorMap(pub [u64; 16]);

// SAFETY: plain bytes, passed by value as a kernel parameter.
unsafe impl DeviceRepr for TensorMap {}

/// How the copy engine lays a box out in shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TmaSwizzle {
    /// Rows land one after another, unchanged.
    None,
    /// Within each 1024-byte group of eight 128-byte rows, the 16-byte chunk `c` of row `r` lands at
    /// chunk `c ^ (r % 8)`.
    B128,
    /// Within each 512-byte group of eight 64-byte rows, the 16-byte chunk `c` of row `r` lands at
    /// chunk `c ^ ((r / 2) % 4)` (step 11's e4m3 tiles, 64 bytes a row).
    B64,
}

impl TmaSwizzle {
    fn driver(self) -> CUtensorMapSwizzle {
        match self {
            TmaSwizzle::None => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            TmaSwizzle::B128 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            TmaSwizzle::B64 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        }
    }

    /// The swizzle's span in bytes: a box's inner extent may not be wider (`None`: no limit).
    fn span_bytes(self) -> Option<u64> {
        match self {
            TmaSwizzle::None => None,
            TmaSwizzle::B128 => Some(128),
            TmaSwizzle::B64 => Some(64),
        }
    }
}

/// The element type of a tensor map's matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TmaElement {
    /// bf16: the operands and `C` of steps 01–10.
    Bf16,
    /// One byte: fp8 e4m3 operands (step 11), or e8m0 scale bytes. The copy engine moves bytes and
    /// never interprets them, so it is described to the driver as `UINT8`.
    U8,
    /// fp32: step 11's `C`.
    F32,
}

impl TmaElement {
    pub const fn bytes(self) -> u64 {
        match self {
            TmaElement::Bf16 => 2,
            TmaElement::U8 => 1,
            TmaElement::F32 => 4,
        }
    }

    fn driver(self) -> CUtensorMapDataType {
        match self {
            TmaElement::Bf16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            TmaElement::U8 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            TmaElement::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        }
    }

    fn name(self) -> &'static str {
        match self {
            TmaElement::Bf16 => "bf16",
            TmaElement::U8 => "one-byte",
            TmaElement::F32 => "fp32",
        }
    }
}

/// A tiled tensor map: `dims[0]` is the contiguous dimension.
#[derive(Debug, Clone)]
pub struct TiledMap<'a> {
    /// What the map describes, for error messages (`A`, `B`, `C`).
    pub name: &'a str,
    pub address: u64,
    /// Elements per dimension, innermost first.
    pub dims: &'a [u64],
    /// Byte strides of dimensions 1.. (dimension 0 is contiguous).
    pub strides: &'a [u64],
    /// Elements per dimension of the box one copy moves.
    pub box_dims: &'a [u32],
    pub swizzle: TmaSwizzle,
    pub element: TmaElement,
}

const BF16_BYTES: u64 = 2;

impl TiledMap<'_> {
    /// The driver's rules for a tiled map, each as the sentence a user needs.
    pub fn check(&self) -> std::result::Result<(), String> {
        let rank = self.dims.len();
        let name = self.name;
        if !(1..=5).contains(&rank) || self.strides.len() + 1 != rank || self.box_dims.len() != rank {
            return Err(format!(
                "tensor map {name}: rank {rank} needs {rank} dims, {} strides and {rank} box dims",
                rank.saturating_sub(1)
            ));
        }
        if !self.address.is_multiple_of(16) {
            return Err(format!("tensor map {name}: the global address must be 16-byte aligned"));
        }
        for (i, &d) in self.dims.iter().enumerate() {
            if d == 0 || d > 1 << 32 {
                return Err(format!(
                    "tensor map {name}: dimension {i} has {d} elements (1 to 2^32 allowed)"
                ));
            }
        }
        for (i, &s) in self.strides.iter().enumerate() {
            if !s.is_multiple_of(16) || s >= 1 << 40 {
                return Err(format!(
                    "tensor map {name}: the stride of dimension {} is {s} bytes; it must be a multiple of 16 below 2^40 \
                     (for a row-major {} matrix: the row length must be a multiple of {})",
                    i + 1,
                    self.element.name(),
                    16 / self.element.bytes()
                ));
            }
        }
        for (i, &b) in self.box_dims.iter().enumerate() {
            if b == 0 || b > 256 {
                return Err(format!(
                    "tensor map {name}: box dimension {i} is {b} (1 to 256 allowed)"
                ));
            }
        }
        let inner_bytes = self.box_dims[0] as u64 * self.element.bytes();
        if !inner_bytes.is_multiple_of(16) {
            return Err(format!(
                "tensor map {name}: the box's inner extent is {inner_bytes} bytes; it must be a multiple of 16"
            ));
        }
        if let Some(span) = self.swizzle.span_bytes().filter(|&span| inner_bytes > span) {
            return Err(format!("tensor map {name}: with {span}-byte swizzle the box's inner extent must be at most {span} bytes, not {inner_bytes}"));
        }
        Ok(())
    }

    /// Checks the rules, then asks the driver to encode the map.
    pub fn encode(&self) -> Result<TensorMap> {
        self.check().map_err(Error::Usage)?;
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        let element_strides = vec![1u32; self.dims.len()];
        // SAFETY: every array has the length `rank` (strides: rank − 1), checked above; the driver only
        // writes the 128-byte map.
        let status = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                self.element.driver(),
                self.dims.len() as u32,
                self.address as *mut std::ffi::c_void,
                self.dims.as_ptr(),
                self.strides.as_ptr(),
                self.box_dims.as_ptr(),
                element_strides.as_ptr(),
                CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                self.swizzle.driver(),
                CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                // Out-of-bounds elements of a load arrive as zeros: ragged edges add nothing to C.
                CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        if status != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Cuda {
                context: format!("encoding tensor map {}", self.name),
                detail: format!("{status:?}"),
            });
        }
        Ok(TensorMap(map.opaque))
    }
}

// ANCHOR: matrix_2d
/// A row-major `rows`×`cols` bf16 matrix read in `box_rows`×`box_cols` boxes (2D map).
pub fn matrix_2d(
    name: &str,
    address: u64,
    rows: usize,
    cols: usize,
    box_rows: u32,
    box_cols: u32,
    swizzle: TmaSwizzle,
) -> Result<TensorMap> {
    matrix_2d_of(TmaElement::Bf16, name, address, rows, cols, box_rows, box_cols, swizzle)
}
// ANCHOR_END: matrix_2d

/// A row-major `rows`×`cols` matrix of `element`s read (or stored) in `box_rows`×`box_cols` boxes
/// (2D map). `box_cols` counts elements: for e4m3 bytes a 128-byte swizzled row is 128 of them.
#[allow(clippy::too_many_arguments)]
pub fn matrix_2d_of(
    element: TmaElement,
    name: &str,
    address: u64,
    rows: usize,
    cols: usize,
    box_rows: u32,
    box_cols: u32,
    swizzle: TmaSwizzle,
) -> Result<TensorMap> {
    TiledMap {
        name,
        address,
        dims: &[cols as u64, rows as u64],
        strides: &[cols as u64 * element.bytes()],
        box_dims: &[box_cols, box_rows],
        swizzle,
        element,
    }
    .encode()
}

/// A row-major `rows`×`cols` e4m3 matrix (one byte an element; `cols` a multiple of 16) read in
/// `box_rows`×`box_cols` boxes: step 11's operands.
pub fn matrix_2d_u8(
    name: &str,
    address: u64,
    rows: usize,
    cols: usize,
    box_rows: u32,
    box_cols: u32,
    swizzle: TmaSwizzle,
) -> Result<TensorMap> {
    matrix_2d_of(TmaElement::U8, name, address, rows, cols, box_rows, box_cols, swizzle)
}

/// The map for storing an fp32 `C` (`rows`×`cols`, step 11) in `box_rows`×`box_cols` boxes with
/// `swizzle`, and whether a TMA store can be used at all: the row stride must be a multiple of 16
/// bytes, so `cols` must be a multiple of 4. Otherwise the kernel is told to store directly, and the
/// map is unused.
pub fn store_map_for_c_f32(
    address: u64,
    rows: usize,
    cols: usize,
    box_rows: u32,
    box_cols: u32,
    swizzle: TmaSwizzle,
) -> Result<(TensorMap, bool)> {
    if cols.is_multiple_of(4) {
        let map = matrix_2d_of(TmaElement::F32, "C", address, rows, cols, box_rows, box_cols, swizzle)?;
        Ok((map, true))
    } else {
        Ok((TensorMap([0; 16]), false))
    }
}

// ANCHOR: columns_map
/// A row-major `rows`×`cols` bf16 matrix (`cols` a multiple of 8) seen as 16-byte columns: dimension 0
/// is the 8 elements of one column, 1 the rows, 2 which column. A `box_rows`×`box_cols` box lands in
/// shared memory column after column, each column `box_rows` × 16 bytes: the no-swizzle K-major
/// layout of core matrices that the tensor cores read (3D map).
pub fn matrix_as_16_byte_columns(
    name: &str,
    address: u64,
    rows: usize,
    cols: usize,
    box_rows: u32,
    box_cols: u32,
) -> Result<TensorMap> {
    if !cols.is_multiple_of(8) || !box_cols.is_multiple_of(8) {
        return Err(Error::Usage(format!(
            "tensor map {name}: 16-byte columns need a multiple of 8 columns (got {cols}, box {box_cols})"
        )));
    }
    TiledMap {
        name,
        address,
        dims: &[8, rows as u64, cols as u64 / 8],
        strides: &[cols as u64 * BF16_BYTES, 16],
        box_dims: &[8, box_rows, box_cols / 8],
        swizzle: TmaSwizzle::None,
        element: TmaElement::Bf16,
    }
    .encode()
}
// ANCHOR_END: columns_map

// ANCHOR: store_map_for_c
/// The map for storing `C` (`rows`×`cols` bf16) in `box_rows`×`box_cols` 128-byte-swizzled boxes, and
/// whether a TMA store can be used at all: its row stride must be a multiple of 16 bytes, so `cols`
/// must be a multiple of 8. Otherwise the kernel is told to store directly, and the map is unused.
pub fn store_map_for_c(
    address: u64,
    rows: usize,
    cols: usize,
    box_rows: u32,
    box_cols: u32,
) -> Result<(TensorMap, bool)> {
    if cols.is_multiple_of(8) {
        Ok((
            matrix_2d("C", address, rows, cols, box_rows, box_cols, TmaSwizzle::B128)?,
            true,
        ))
    } else {
        Ok((TensorMap([0; 16]), false))
    }
}
// ANCHOR_END: store_map_for_c

#[cfg(test)]
mod tests {
    use super::*;

    fn map<'a>(dims: &'a [u64], strides: &'a [u64], box_dims: &'a [u32], swizzle: TmaSwizzle) -> TiledMap<'a> {
        TiledMap {
            name: "A",
            address: 0x1000,
            dims,
            strides,
            box_dims,
            swizzle,
            element: TmaElement::Bf16,
        }
    }

    #[test]
    fn accepts_the_ladder_maps() {
        // A 4096×4096 operand in 64×128 boxes with 128-byte swizzle.
        assert!(map(&[4096, 4096], &[8192], &[64, 128], TmaSwizzle::B128)
            .check()
            .is_ok());
        // The same operand as 16-byte columns.
        assert!(map(&[8, 4096, 512], &[8192, 16], &[8, 128, 8], TmaSwizzle::None)
            .check()
            .is_ok());
    }

    #[test]
    fn refuses_what_the_driver_would() {
        let row_not_16_bytes = map(&[100, 64], &[200], &[64, 64], TmaSwizzle::None)
            .check()
            .unwrap_err();
        assert!(row_not_16_bytes.contains("multiple of 16"), "{row_not_16_bytes}");
        let box_too_wide = map(&[4096, 64], &[8192], &[128, 64], TmaSwizzle::B128)
            .check()
            .unwrap_err();
        assert!(box_too_wide.contains("at most 128 bytes"), "{box_too_wide}");
        let box_too_tall = map(&[4096, 4096], &[8192], &[64, 512], TmaSwizzle::B128)
            .check()
            .unwrap_err();
        assert!(box_too_tall.contains("1 to 256"), "{box_too_tall}");
        let odd_inner = map(&[4096, 64], &[8192], &[4, 64], TmaSwizzle::None)
            .check()
            .unwrap_err();
        assert!(odd_inner.contains("inner extent"), "{odd_inner}");
        let unaligned = TiledMap {
            address: 0x1008,
            ..map(&[64, 64], &[128], &[64, 64], TmaSwizzle::None)
        };
        assert!(unaligned.check().unwrap_err().contains("16-byte aligned"));
        assert!(matrix_as_16_byte_columns("B", 0x1000, 64, 12, 64, 8).is_err());
    }

    /// e4m3 operands: one byte an element, so the 128-byte swizzle takes 128 of them, and a row must
    /// be a multiple of 16 elements; fp32 C: 4 bytes an element.
    #[test]
    fn one_byte_and_fp32_maps_follow_the_same_rules_in_bytes() {
        let u8_map = |dims, strides, box_dims| TiledMap {
            element: TmaElement::U8,
            ..map(dims, strides, box_dims, TmaSwizzle::B128)
        };
        assert!(u8_map(&[4096, 4096], &[4096], &[128, 128]).check().is_ok());
        assert!(u8_map(&[4096, 4096], &[4096], &[64, 256]).check().is_ok());
        let too_wide = u8_map(&[4096, 4096], &[4096], &[256, 128]).check().unwrap_err();
        assert!(too_wide.contains("at most 128 bytes, not 256"), "{too_wide}");
        let odd_row = u8_map(&[4104, 64], &[4104], &[64, 64]).check().unwrap_err();
        assert!(
            odd_row.contains("one-byte matrix: the row length must be a multiple of 16"),
            "{odd_row}"
        );
        let narrow = u8_map(&[4096, 64], &[4096], &[8, 64]).check().unwrap_err();
        assert!(narrow.contains("inner extent is 8 bytes"), "{narrow}");
        let f32_map = |dims, strides, box_dims| TiledMap {
            element: TmaElement::F32,
            ..map(dims, strides, box_dims, TmaSwizzle::B128)
        };
        assert!(f32_map(&[4096, 4096], &[16384], &[32, 64]).check().is_ok());
        assert!(f32_map(&[4096, 4096], &[16384], &[64, 64]).check().is_err());
        let odd = f32_map(&[4098, 64], &[16392], &[32, 64]).check().unwrap_err();
        assert!(
            odd.contains("fp32 matrix: the row length must be a multiple of 4"),
            "{odd}"
        );
        let (_, tma_store) = store_map_for_c_f32(0x1000, 100, 1030, 64, 32, TmaSwizzle::B128).unwrap();
        assert!(!tma_store);
    }

    #[test]
    fn c_falls_back_to_direct_stores_when_its_rows_are_not_16_byte_multiples() {
        let (_, use_tma_store) = store_map_for_c(0x1000, 100, 1030, 128, 64).unwrap();
        assert!(!use_tma_store);
    }
}
