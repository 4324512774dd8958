// ANCHOR: block_scaled
//! Step 11's encodings for Blackwell's block-scaled MMA, `tcgen05.mma.cta_group::2.kind::mxf8f6f4
//! .block_scale.block32`: e4m3/e5m2 operands with one e8m0 scale per 32 elements along K, fp32
//! accumulation.
//!
//! The instruction descriptor of the block-scaled kinds is *not* the `kind::f16` one with extra bits:
//! four fields move (CUTLASS `UMMA::InstrDescriptorBlockScaled` against `UMMA::InstrDescriptor`; PTX
//! ISA "Instruction descriptor format for .kind::mxf8f6f4, .kind::mxf4 and .kind::mxf4nvf4"):
//!
//! | bits   | `kind::f16`            | block-scaled                                   |
//! | ------ | ---------------------- | ---------------------------------------------- |
//! | 3      | saturate               | reserved                                       |
//! | 4..6   | D type (F32 = 1)       | **scale-factor id of B** (D is always fp32)    |
//! | 7..10  | A type (BF16 = 1)      | A type: E4M3 = 0, E5M2 = 1                     |
//! | 10..13 | B type                 | B type: E4M3 = 0, E5M2 = 1                     |
//! | 23     | reserved               | **scale type**: UE4M3 = 0, UE8M0 = 1           |
//! | 29..31 | (29 reserved, 30..32 max shift) | **scale-factor id of A**              |
//! | 31     |                        | MMA-K: 0 = K 32 for mxf8f6f4 (dense)           |
//!
//! Negation (13, 14), majorness (15, 16), N >> 3 (17..23) and M >> 4 (24..29) stay where they were.
//!
//! A scale-factor id picks *which byte* of each 32-bit TMEM cell of the scale operand the MMA reads.
//! `tcgen05.cp … 32x128b.warpx4` copies one 512-byte tile of the blocked layout (128 rows × 4 blocks
//! along K; byte (r % 32)·16 + (r / 32)·4 + c) into 4 TMEM columns of all 128 lanes: lane l, column j
//! holds rows l % 32 + 32·j, and byte c of that cell is K-block c. So the MMA that consumes K-block c
//! of the tile (K elements 32c .. 32c+31 of a 128-element slice) uses id c for both A and B. CUTLASS
//! `make_runtime_instr_desc_block_scaled` fills both ids from the same per-MMA byte index; "MXFP8
//! GEMM: Up to 99% of cuBLAS" (References) passes `mma_iter` for both.

use super::{unwrap32, unwrap64, EncodingError, Major, SmemSwizzle};

/// Operand element type of `kind::mxf8f6f4` (CUTLASS `UMMA::MXF8F6F4Format`; the fp6 and fp4 codes,
/// 3..5, are not used by the ladder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MxType {
    E4M3,
    E5M2,
}

/// Scale-factor element type (CUTLASS `UMMA::ScaleFormat`). `kind::mxf8f6f4` takes UE8M0 only;
/// UE4M3 is NVFP4's, `kind::mxf4nvf4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleType {
    UE4M3,
    UE8M0,
}

/// Bit positions of the block-scaled instruction descriptor (CUTLASS `InstrDescriptorBlockScaled`).
pub mod idesc {
    /// Sparsity flag (0 = dense).
    pub const SPARSE_SHIFT: u32 = 2;
    /// Scale-factor id of B, 2 bits: which byte of each TMEM cell of scale B.
    pub const SFB_ID_SHIFT: u32 = 4;
    /// A type, 3 bits: E4M3 = 0, E5M2 = 1.
    pub const A_TYPE_SHIFT: u32 = 7;
    /// B type, 3 bits.
    pub const B_TYPE_SHIFT: u32 = 10;
    /// "Transpose A": 0 = K-major.
    pub const A_MAJOR_SHIFT: u32 = 15;
    /// "Transpose B": 0 = K-major.
    pub const B_MAJOR_SHIFT: u32 = 16;
    /// N >> 3, 6 bits.
    pub const N_SHIFT: u32 = 17;
    /// Scale type, 1 bit: UE4M3 = 0, UE8M0 = 1.
    pub const SCALE_TYPE_SHIFT: u32 = 23;
    /// M >> 4, 5 bits.
    pub const M_SHIFT: u32 = 24;
    /// Scale-factor id of A, 2 bits.
    pub const SFA_ID_SHIFT: u32 = 29;
    /// MMA-K, 1 bit (0: K = 32 for dense mxf8f6f4).
    pub const K_SIZE_SHIFT: u32 = 31;
}

/// Elements of K one block-scaled MMA consumes, and one scale block: 32 e4m3 = 32 bytes.
pub const MMA_K: u32 = 32;
/// Elements along K that share one scale (`.block32`).
pub const SCALE_BLOCK: u32 = 32;
/// Scale-factor ids: 4 bytes per TMEM cell, so a copied 128×4 tile serves 4 MMAs.
pub const SCALE_IDS: u32 = 4;

const fn major(m: Major) -> u32 {
    match m {
        Major::K => 0,
        Major::MN => 1,
    }
}

const fn type_code(t: MxType) -> u32 {
    match t {
        MxType::E4M3 => 0,
        MxType::E5M2 => 1,
    }
}

/// Checked form of [`instr_descriptor_mxf8f6f4_2sm`].
#[allow(clippy::too_many_arguments)]
pub const fn try_instr_descriptor_mxf8f6f4_2sm(
    a: MxType,
    b: MxType,
    scale: ScaleType,
    a_major: Major,
    b_major: Major,
    m: u32,
    n: u32,
    sfa_id: u32,
    sfb_id: u32,
) -> Result<u32, EncodingError> {
    // CUTLASS SM100_MMA_MXF8F6F4_2x1SM_SS: static_assert(M == 256), N % 16 == 0, 16 <= N <= 256.
    if m != 256 {
        return Err(EncodingError::new(
            "tcgen05.mma cta_group::2 kind::mxf8f6f4 block_scale: M (of the pair) must be 256",
        ));
    }
    if n < 16 || n > 256 || n & 15 != 0 {
        return Err(EncodingError::new(
            "tcgen05.mma cta_group::2 kind::mxf8f6f4 block_scale: N must be a multiple of 16 in 16..=256",
        ));
    }
    if !matches!(scale, ScaleType::UE8M0) {
        return Err(EncodingError::new(
            "kind::mxf8f6f4 takes UE8M0 scale factors (UE4M3 is kind::mxf4nvf4's)",
        ));
    }
    if sfa_id >= SCALE_IDS || sfb_id >= SCALE_IDS {
        return Err(EncodingError::new(
            "a scale-factor id is a byte of a 32-bit TMEM cell: 0..=3",
        ));
    }
    Ok(sfb_id << idesc::SFB_ID_SHIFT
        | type_code(a) << idesc::A_TYPE_SHIFT
        | type_code(b) << idesc::B_TYPE_SHIFT
        | major(a_major) << idesc::A_MAJOR_SHIFT
        | major(b_major) << idesc::B_MAJOR_SHIFT
        | (n >> 3) << idesc::N_SHIFT
        | 1 << idesc::SCALE_TYPE_SHIFT
        | (m >> 4) << idesc::M_SHIFT
        | sfa_id << idesc::SFA_ID_SHIFT)
}

/// Instruction descriptor of `tcgen05.mma.cta_group::2.kind::mxf8f6f4.block_scale` (dense, no
/// negation, fp32 accumulation implied): element types, UE8M0 scales, majorness, the pair's M = 256,
/// N a multiple of 16 up to 256, and the two scale-factor ids. Panics on anything else.
#[allow(clippy::too_many_arguments)]
pub const fn instr_descriptor_mxf8f6f4_2sm(
    a: MxType,
    b: MxType,
    scale: ScaleType,
    a_major: Major,
    b_major: Major,
    m: u32,
    n: u32,
    sfa_id: u32,
    sfb_id: u32,
) -> u32 {
    unwrap32(try_instr_descriptor_mxf8f6f4_2sm(
        a, b, scale, a_major, b_major, m, n, sfa_id, sfb_id,
    ))
}

/// What moving both scale-factor ids from `id` to `id + 1` adds to a descriptor: the kernel builds
/// the descriptor of its k-th MMA of a slice as `IDESC + k · SF_ID_STEP` (ids 0..3, no carry).
pub const SF_ID_STEP: u32 = 1 << idesc::SFA_ID_SHIFT | 1 << idesc::SFB_ID_SHIFT;

/// Shared-memory descriptor template of one 512-byte scale tile as the source of
/// `tcgen05.cp … 32x128b`: 32 rows of 16 bytes, no swizzle, 8-row groups 128 bytes apart (SBO), the
/// LBO field left 0 (one 16-byte core-matrix column: there is no K-neighbour to point at). The
/// MXFP8 text's `make_sf_smem_desc` writes exactly this (it reports that filling in an LBO gave wrong
/// results on a B200). Start address 0: the kernel adds the tile's address.
pub const fn scale_tile_smem_descriptor() -> u64 {
    unwrap64(super::sm100::try_smem_descriptor(0, 0, 128, SmemSwizzle::None))
}

/// Bytes of one tile of the blocked scale layout (128 rows × 4 blocks; shared/check/mx.rs `TILE_BYTES`).
pub const SCALE_TILE_BYTES: u32 = 512;
/// TMEM columns one copied scale tile occupies: 16 bytes a lane = 4 cells.
pub const SCALE_TILE_COLUMNS: u32 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    fn two(m: u32, n: u32, sfa: u32, sfb: u32) -> u32 {
        instr_descriptor_mxf8f6f4_2sm(
            MxType::E4M3,
            MxType::E4M3,
            ScaleType::UE8M0,
            Major::K,
            Major::K,
            m,
            n,
            sfa,
            sfb,
        )
    }

    // Sources for every expected value below: CUTLASS cute/arch/mma_sm100_desc.hpp
    // `UMMA::InstrDescriptorBlockScaled` (sparse_id2 2 @0, sparse_flag @2, b_sf_id 2 @4, a_format 3
    // @7, b_format 3 @10, a_negate @13, b_negate @14, a_major @15, b_major @16, n_dim 6 @17,
    // scale_format @23 "0=E4M3, 1=E8M0", m_dim 5 @24, a_sf_id 2 @29, k_size @31),
    // `UMMA::MXF8F6F4Format` (E4M3 = 0, E5M2 = 1), `UMMA::ScaleFormat` (UE4M3 = 0, UE8M0 = 1), and
    // `make_instr_desc_block_scaled` (m_dim = M >> 4, n_dim = N >> 3); the PTX ISA table
    // "Instruction descriptor format for .kind::mxf8f6f4, .kind::mxf4 and .kind::mxf4nvf4" has the
    // same fields.

    // ANCHOR: mx_idesc_worked
    #[test]
    fn mxf8f6f4_worked_value() {
        // E4M3 × E4M3 (codes 0), UE8M0 (1 << 23), K-major, M = 256 (16 << 24), N = 256 (32 << 17),
        // ids 0: 0x1000_0000 | 0x0080_0000 | 0x0040_0000.
        assert_eq!(two(256, 256, 0, 0), 0x10C0_0000);
        // The fourth MMA of a slice: ids 3 and 3 -> 3 << 29 | 3 << 4.
        assert_eq!(two(256, 256, 3, 3), 0x70C0_0030);
    }
    // ANCHOR_END: mx_idesc_worked

    #[test]
    fn mxf8f6f4_each_field_alone() {
        let base = two(256, 16, 0, 0);
        assert_eq!(base, 16 << 24 | 1 << 23 | 2 << 17);
        assert_eq!(two(256, 16, 1, 0) ^ base, 1 << 29, "a_sf_id at bit 29");
        assert_eq!(two(256, 16, 2, 0) ^ base, 2 << 29);
        assert_eq!(two(256, 16, 0, 1) ^ base, 1 << 4, "b_sf_id at bit 4");
        assert_eq!(two(256, 16, 0, 3) ^ base, 3 << 4);
        let e5m2 = |a, b| instr_descriptor_mxf8f6f4_2sm(a, b, ScaleType::UE8M0, Major::K, Major::K, 256, 16, 0, 0);
        assert_eq!(e5m2(MxType::E5M2, MxType::E4M3) ^ base, 1 << 7);
        assert_eq!(e5m2(MxType::E4M3, MxType::E5M2) ^ base, 1 << 10);
        let mn =
            |am, bm| instr_descriptor_mxf8f6f4_2sm(MxType::E4M3, MxType::E4M3, ScaleType::UE8M0, am, bm, 256, 16, 0, 0);
        assert_eq!(mn(Major::MN, Major::K) ^ base, 1 << 15);
        assert_eq!(mn(Major::K, Major::MN) ^ base, 1 << 16);
        assert_eq!((two(256, 144, 0, 0) >> 17) & 0x3F, 18);
        // Sparse (0..3), reserved 3 and 6, negate (13, 14) and K size (31) stay 0 whatever the ids.
        let all = two(256, 256, 3, 3);
        let must_be_zero: u32 = 0b1111 | 1 << 6 | 1 << 13 | 1 << 14 | 1 << 31;
        assert_eq!(all & must_be_zero, 0);
    }

    #[test]
    fn differs_from_kind_f16_where_cutlass_says() {
        // The kind::f16 descriptor of a bf16 256×256 MMA puts D = F32 in bits 4..6 (1 << 4) and
        // BF16 in 7..10 / 10..13; the block-scaled one has the B id there and no D type at all.
        let f16 = crate::encoding::sm100::instr_descriptor_f16_2sm(
            crate::encoding::sm100::AccumType::F32,
            crate::encoding::sm100::InputType::BF16,
            crate::encoding::sm100::InputType::BF16,
            Major::K,
            Major::K,
            256,
            256,
        );
        assert_eq!(f16, 0x1040_0490);
        let mx = two(256, 256, 0, 0);
        // Same N and M fields ...
        assert_eq!(f16 & (0x3F << 17 | 0x1F << 24), mx & (0x3F << 17 | 0x1F << 24));
        // ... the scale type bit (23) is reserved in kind::f16.
        assert_eq!(f16 & 1 << 23, 0);
        assert_eq!(mx & 1 << 23, 1 << 23);
    }

    #[test]
    fn the_kernel_steps_the_ids_by_addition() {
        for k in 0..SCALE_IDS {
            assert_eq!(two(256, 256, 0, 0) + k * SF_ID_STEP, two(256, 256, k, k), "k = {k}");
        }
        assert_eq!(SF_ID_STEP, 0x2000_0010);
    }

    #[test]
    fn mxf8f6f4_rejects_what_the_instruction_lacks() {
        let t = |m, n, scale, sfa, sfb| {
            try_instr_descriptor_mxf8f6f4_2sm(MxType::E4M3, MxType::E4M3, scale, Major::K, Major::K, m, n, sfa, sfb)
        };
        // CUTLASS SM100_MMA_MXF8F6F4_2x1SM_SS: M == 256; N % 16 == 0 in 16..=256.
        for m in [0, 64, 128, 512] {
            assert!(t(m, 256, ScaleType::UE8M0, 0, 0).is_err(), "M = {m}");
        }
        for n in [0, 8, 24, 264] {
            assert!(t(256, n, ScaleType::UE8M0, 0, 0).is_err(), "N = {n}");
        }
        assert!(t(256, 256, ScaleType::UE4M3, 0, 0).is_err(), "UE4M3 is NVFP4's");
        assert!(t(256, 256, ScaleType::UE8M0, 4, 0).is_err());
        assert!(t(256, 256, ScaleType::UE8M0, 0, 4).is_err());
        assert!(t(256, 16, ScaleType::UE8M0, 3, 3).is_ok());
    }

    #[test]
    fn scale_tile_descriptor_is_seed_004s() {
        // The MXFP8 text's make_sf_smem_desc: SBO = 8 × 16 bytes -> field 8 at bit 32; bit 46
        // (fixed 0b001); no swizzle (layout 0 at bit 61); LBO left 0.
        let d = scale_tile_smem_descriptor();
        assert_eq!(d, 0x0000_4008_0000_0000);
        assert_eq!((d >> 16) & 0x3FFF, 0, "LBO");
        assert_eq!((d >> 32) & 0x3FFF, 128 >> 4, "SBO");
        assert_eq!(d >> 61, 0, "no swizzle");
        // The blocked layout's 512-byte tile is 32 rows of 16 bytes: 4 TMEM columns of 4 bytes.
        assert_eq!(SCALE_TILE_BYTES, 32 * 16);
        assert_eq!(SCALE_TILE_COLUMNS * 4, 16);
        assert_eq!(SCALE_TILE_BYTES as usize, crate::check::mx::TILE_BYTES);
    }

    #[test]
    fn scale_ids_cover_one_tile_of_k() {
        // One copied tile holds 4 blocks of 32 along K: the 4 MMAs (K = 32 each) of a 128-element slice.
        assert_eq!(SCALE_IDS * SCALE_BLOCK, 128);
        assert_eq!(MMA_K, SCALE_BLOCK);
        // Blocked byte (r % 32)·16 + (r / 32)·4 + c lands in lane r % 32 (and its 3 copies), column
        // r / 32, byte c: the id is the byte, the column is r / 32.
        for r in 0..128usize {
            for c in 0..4usize {
                let byte = crate::check::mx::blocked_offset(r, c, 4);
                assert_eq!(byte / 16, r % 32, "lane");
                assert_eq!((byte % 16) / 4, r / 32, "column");
                assert_eq!(byte % 4, c, "scale-factor id");
            }
        }
    }

    #[test]
    fn block_scaled_encoders_evaluate_in_const_context() {
        const I: u32 = instr_descriptor_mxf8f6f4_2sm(
            MxType::E4M3,
            MxType::E4M3,
            ScaleType::UE8M0,
            Major::K,
            Major::K,
            256,
            256,
            0,
            0,
        );
        const D: u64 = scale_tile_smem_descriptor();
        assert_eq!((I, D), (0x10C0_0000, 0x0000_4008_0000_0000));
    }
}
// ANCHOR_END: block_scaled
