//! The wgmma (sm_90a) shared-memory matrix descriptor.
//!
//! Layout (PTX ISA, "Matrix Descriptor Format"; CUTLASS `GmmaDescriptor`): start address bits 0..14,
//! LBO bits 16..30, SBO bits 32..46 (each `(bytes & 0x3FFFF) >> 4`), base offset bits 49..52 (0 here),
//! swizzle mode bits 62..64: 0 none, 1 = 128-byte, 2 = 64-byte, 3 = 32-byte.

use super::{common_fields, unwrap64, EncodingError, SmemSwizzle};

/// Bit where the 2-bit swizzle mode starts.
pub const LAYOUT_TYPE_SHIFT: u32 = 62;

/// The 2-bit swizzle-mode code of the wgmma descriptor (CUTLASS `GMMA::LayoutType`).
pub const fn layout_type(swizzle: SmemSwizzle) -> Result<u64, EncodingError> {
    match swizzle {
        SmemSwizzle::None => Ok(0),
        SmemSwizzle::B128 => Ok(1),
        SmemSwizzle::B64 => Ok(2),
        SmemSwizzle::B32 => Ok(3),
        SmemSwizzle::B128Atom32B => Err(EncodingError::new(
            "sm90 (wgmma) has no 128B-with-32B-atomicity swizzle: it is a tcgen05 (sm100) layout",
        )),
    }
}

/// Checked form of [`smem_descriptor`].
pub const fn try_smem_descriptor(
    start_address: u32,
    leading_byte_offset: u32,
    stride_byte_offset: u32,
    swizzle: SmemSwizzle,
) -> Result<u64, EncodingError> {
    let layout = match layout_type(swizzle) {
        Ok(v) => v,
        Err(e) => return Err(e),
    };
    match common_fields(start_address, leading_byte_offset, stride_byte_offset, swizzle) {
        Ok(fields) => Ok(fields | layout << LAYOUT_TYPE_SHIFT),
        Err(e) => Err(e),
    }
}

/// wgmma shared-memory matrix descriptor, base offset 0. For a K-major operand LBO is the step
/// between K-neighbouring core matrices (ignored when swizzled: pass [`super::LBO_IGNORED`]) and SBO
/// the step between M/N-neighbouring 8-row groups; see [`super::k_major_offsets`]. Pass
/// `start_address = 0` for a template the kernel completes (module docs). Panics on invalid input.
pub const fn smem_descriptor(
    start_address: u32,
    leading_byte_offset: u32,
    stride_byte_offset: u32,
    swizzle: SmemSwizzle,
) -> u64 {
    unwrap64(try_smem_descriptor(
        start_address,
        leading_byte_offset,
        stride_byte_offset,
        swizzle,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::tests::field;
    use crate::encoding::*;

    // ---- sm90 (wgmma) descriptor. Source: PTX ISA "Matrix Descriptor Format" (wgmma) and CUTLASS
    // cute/arch/mma_sm90_desc.hpp `GmmaDescriptor` bit-fields: start 14 bits at 0, LBO 14 at 16,
    // SBO 14 at 32, base_offset 3 at 49, layout_type 2 at 62 (INTERLEAVE 0, B128 1, B64 2, B32 3).

    #[test]
    fn sm90_each_field_alone() {
        // start address: bytes >> 4 in bits 0..14.
        assert_eq!(sm90::smem_descriptor(0x3FFF0, 0, 0, SmemSwizzle::None), 0x3FFF);
        assert_eq!(sm90::smem_descriptor(16, 0, 0, SmemSwizzle::None), 1);
        // LBO: bits 16..30.
        assert_eq!(sm90::smem_descriptor(0, 16, 0, SmemSwizzle::None), 1 << 16);
        assert_eq!(sm90::smem_descriptor(0, 0x3FFF0, 0, SmemSwizzle::None), 0x3FFF << 16);
        // SBO: bits 32..46.
        assert_eq!(sm90::smem_descriptor(0, 0, 16, SmemSwizzle::None), 1 << 32);
        assert_eq!(sm90::smem_descriptor(0, 0, 0x3FFF0, SmemSwizzle::None), 0x3FFF << 32);
        // Layout type: bits 62..64.
        assert_eq!(sm90::smem_descriptor(0, 0, 0, SmemSwizzle::None), 0);
        assert_eq!(sm90::smem_descriptor(0, 0, 0, SmemSwizzle::B128), 1 << 62);
        assert_eq!(sm90::smem_descriptor(0, 0, 0, SmemSwizzle::B64), 2 << 62);
        assert_eq!(sm90::smem_descriptor(0, 0, 0, SmemSwizzle::B32), 3 << 62);
    }

    #[test]
    fn sm90_fields_do_not_overlap_and_reserved_bits_stay_zero() {
        let d = sm90::smem_descriptor(0x3FFF0, 0x3FFF0, 0x3FFF0, SmemSwizzle::None);
        assert_eq!(field(d, 0, 14), 0x3FFF);
        assert_eq!(field(d, 16, 14), 0x3FFF);
        assert_eq!(field(d, 32, 14), 0x3FFF);
        // Bits 14..16, 30..32, 46..62 (base offset 49..52 is 0 here) are zero.
        let used: u64 = 0x3FFF | 0x3FFF << 16 | 0x3FFF << 32 | 3 << 62;
        let d = sm90::smem_descriptor(0, 0x3FFF0, 0x3FFF0, SmemSwizzle::B32) | 0x3FFF;
        assert_eq!(d & !used, 0);
        assert_eq!(field(d, 49, 3), 0, "base offset");
    }
}
