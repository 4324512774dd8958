//! tcgen05 (sm_100a) encodings: the shared-memory descriptor and the `kind::f16` instruction descriptor.
//!
//! Shared-memory descriptor (PTX ISA Table 40; CUTLASS `UMMA::SmemDescriptor`): start address bits
//! 0..14, LBO 16..30, SBO 32..46, a fixed `0b001` in bits 46..49 (CUTLASS: `version_ = 1`), base offset
//! 49..52 (0 here), LBO mode bit 52 (0: LBO is a relative byte offset; 1, an absolute address, exists
//! on sm_103a only, so 0 here), swizzle mode bits 61..64: 0 none, 1 = 128-byte with 32-byte atoms,
//! 2 = 128-byte, 4 = 64-byte, 6 = 32-byte.

use super::{common_fields, unwrap32, unwrap64, EncodingError, Major, SmemSwizzle};

/// Bit of the fixed `0b001` ("version") field.
pub const VERSION_SHIFT: u32 = 46;
/// Bit of the leading-dimension stride mode (left 0: relative offset).
pub const LBO_MODE_SHIFT: u32 = 52;
/// Bit where the 3-bit swizzle mode starts.
pub const LAYOUT_TYPE_SHIFT: u32 = 61;

/// The 3-bit swizzle-mode code of the tcgen05 descriptor (CUTLASS `UMMA::LayoutType`).
pub const fn layout_type(swizzle: SmemSwizzle) -> u64 {
    match swizzle {
        SmemSwizzle::None => 0,
        SmemSwizzle::B128Atom32B => 1,
        SmemSwizzle::B128 => 2,
        SmemSwizzle::B64 => 4,
        SmemSwizzle::B32 => 6,
    }
}

/// Checked form of [`smem_descriptor`].
pub const fn try_smem_descriptor(
    start_address: u32,
    leading_byte_offset: u32,
    stride_byte_offset: u32,
    swizzle: SmemSwizzle,
) -> Result<u64, EncodingError> {
    match common_fields(start_address, leading_byte_offset, stride_byte_offset, swizzle) {
        Ok(fields) => Ok(fields | 1 << VERSION_SHIFT | layout_type(swizzle) << LAYOUT_TYPE_SHIFT),
        Err(e) => Err(e),
    }
}

/// tcgen05 shared-memory descriptor: base offset 0, LBO as a relative byte offset (bit 52 = 0), the
/// fixed bits 46..49 = `0b001`. LBO/SBO mean what they mean for wgmma (see
/// [`super::k_major_offsets`]). Pass `start_address = 0` for a template the kernel completes (module
/// docs). Panics on invalid input.
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

/// Shared memory of one sm_100 SM that resident blocks can share: 228 KiB (CUDA C++ Programming
/// Guide, "Technical Specifications per Compute Capability", compute capability 10.0).
pub const SMEM_PER_SM: u32 = 228 * 1024;
/// Shared memory the CUDA runtime reserves for every resident block, on top of its request.
pub const SMEM_RESERVED_PER_BLOCK: u32 = 1024;
/// The most shared memory one block may have (static and dynamic together): 227 KiB.
pub const SMEM_PER_BLOCK_MAX: u32 = 227 * 1024;

/// The dynamic shared memory a kernel should ask for, at least `needed`, so that no more blocks
/// can be resident on one SM than Tensor Memory holds when each allocates `tmem_columns`:
/// `512 / tmem_columns` blocks. Without the cap, a small kernel (steps 04, 05: 33 KiB, 128
/// columns) fits 6 blocks on an SM, and the 5th and 6th wait inside `tcgen05.alloc` holding their
/// shared memory. The request is the smallest `r` with `(max + 1) · (r + 1 KiB) > 228 KiB`; static
/// shared memory only adds to it. Occupancy can still be lower (registers, a smaller carveout):
/// this is a ceiling. Panics unless `tmem_columns` is a power of two in 32..=512.
pub const fn smem_capping_tmem(needed: u32, tmem_columns: u32) -> u32 {
    assert!(
        tmem_columns >= 32 && tmem_columns <= super::TMEM_COLUMNS && tmem_columns.is_power_of_two(),
        "TMEM is allocated in a power of two of columns, 32 to 512"
    );
    let max_resident = super::TMEM_COLUMNS / tmem_columns;
    let cap = SMEM_PER_SM / (max_resident + 1) - SMEM_RESERVED_PER_BLOCK + 1;
    if needed > cap {
        needed
    } else {
        cap
    }
}

/// Accumulator (matrix D) type of `kind::f16`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccumType {
    F16,
    F32,
}

/// Operand (matrix A or B) type of `kind::f16`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputType {
    F16,
    BF16,
}

// ANCHOR: idesc_fields
/// Bit positions of the instruction descriptor (PTX ISA Table 42; CUTLASS `UMMA::InstrDescriptor`).
pub mod idesc {
    /// Sparsity flag (0 = dense).
    pub const SPARSE_SHIFT: u32 = 2;
    /// Saturate (integer kinds only; 0).
    pub const SATURATE_SHIFT: u32 = 3;
    /// D type, 2 bits: F16 = 0, F32 = 1.
    pub const D_TYPE_SHIFT: u32 = 4;
    /// A type, 3 bits: F16 = 0, BF16 = 1.
    pub const A_TYPE_SHIFT: u32 = 7;
    /// B type, 3 bits: F16 = 0, BF16 = 1.
    pub const B_TYPE_SHIFT: u32 = 10;
    /// Negate A (0).
    pub const NEGATE_A_SHIFT: u32 = 13;
    /// Negate B (0).
    pub const NEGATE_B_SHIFT: u32 = 14;
    /// "Transpose A": 0 = K-major, 1 = M-major.
    pub const A_MAJOR_SHIFT: u32 = 15;
    /// "Transpose B": 0 = K-major, 1 = N-major.
    pub const B_MAJOR_SHIFT: u32 = 16;
    /// N >> 3, 6 bits.
    pub const N_SHIFT: u32 = 17;
    /// M >> 4, 5 bits.
    pub const M_SHIFT: u32 = 24;
    /// Maximum shift for `.ws` B reuse, 2 bits (0).
    pub const MAX_SHIFT_SHIFT: u32 = 30;
}
// ANCHOR_END: idesc_fields

/// The instruction descriptor's "transpose" bit: 0 for K-major, 1 for M/N-major.
const fn major_code(major: Major) -> u32 {
    match major {
        Major::K => 0,
        Major::MN => 1,
    }
}

/// How many CTAs one `tcgen05.mma` spans: `.cta_group::1` (one SM) or `.cta_group::2` (the two
/// SMs of a CTA pair, each holding half of A, half of B and half of D).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtaGroup {
    One,
    Two,
}

/// The shapes PTX ISA Table 39 lists for `kind::f16`, dense, no `.ws`:
/// * `cta_group::1`: M ∈ {64, 128}, N = 8, 16, 24, … 256 (steps of 8);
/// * `cta_group::2`: M ∈ {128, 256}, N = 16, 32, … 256 (steps of 16). M and N are those of the
///   whole MMA: with M = 256 each CTA holds 128 rows of A and D and N/2 rows of B.
///
/// CUTLASS agrees for cta_group::2 (`SM100_MMA_F16BF16_2x1SM_SS`: M ∈ {128, 256}, N % 16 == 0,
/// 16 ≤ N ≤ 256). For cta_group::1 CUTLASS 3.8–4.1 required N % 16 == 0 when M = 128; since 4.2
/// (`SM100_MMA_F16BF16_SS`: N % 8 == 0, 8 ≤ N ≤ 256 for both M) it agrees with the PTX ISA, which
/// is what this check follows.
pub const fn check_shape_f16(group: CtaGroup, m: u32, n: u32) -> Result<(), EncodingError> {
    match group {
        CtaGroup::One => {
            if m != 64 && m != 128 {
                return Err(EncodingError::new(
                    "tcgen05.mma kind::f16 cta_group::1: M must be 64 or 128",
                ));
            }
            if n < 8 || n > 256 || n & 7 != 0 {
                return Err(EncodingError::new(
                    "tcgen05.mma kind::f16 cta_group::1: N must be a multiple of 8 in 8..=256",
                ));
            }
        }
        CtaGroup::Two => {
            if m != 128 && m != 256 {
                return Err(EncodingError::new(
                    "tcgen05.mma kind::f16 cta_group::2: M (of the pair) must be 128 or 256",
                ));
            }
            if n < 16 || n > 256 || n & 15 != 0 {
                return Err(EncodingError::new(
                    "tcgen05.mma kind::f16 cta_group::2: N must be a multiple of 16 in 16..=256",
                ));
            }
        }
    }
    Ok(())
}

/// Checked form of [`instr_descriptor_f16`].
pub const fn try_instr_descriptor_f16(
    d: AccumType,
    a: InputType,
    b: InputType,
    a_major: Major,
    b_major: Major,
    m: u32,
    n: u32,
) -> Result<u32, EncodingError> {
    try_instr_descriptor_f16_for(CtaGroup::One, d, a, b, a_major, b_major, m, n)
}

/// Checked form of [`instr_descriptor_f16_2sm`].
pub const fn try_instr_descriptor_f16_2sm(
    d: AccumType,
    a: InputType,
    b: InputType,
    a_major: Major,
    b_major: Major,
    m: u32,
    n: u32,
) -> Result<u32, EncodingError> {
    try_instr_descriptor_f16_for(CtaGroup::Two, d, a, b, a_major, b_major, m, n)
}

/// The instruction descriptor of a `kind::f16` MMA of `group`. The descriptor itself has no
/// cta_group field: the same bits serve both, only the legal M and N differ (M is that of the
/// whole MMA, so M = 256 is encoded as M >> 4 = 16, as CUTLASS `make_instr_desc` does for the
/// 2x1SM atoms).
#[allow(clippy::too_many_arguments)]
const fn try_instr_descriptor_f16_for(
    group: CtaGroup,
    d: AccumType,
    a: InputType,
    b: InputType,
    a_major: Major,
    b_major: Major,
    m: u32,
    n: u32,
) -> Result<u32, EncodingError> {
    if let Err(e) = check_shape_f16(group, m, n) {
        return Err(e);
    }
    let (a_code, b_code) = match (a, b) {
        (InputType::F16, InputType::F16) => (0u32, 0u32),
        (InputType::BF16, InputType::BF16) => (1, 1),
        _ => {
            return Err(EncodingError::new(
                "tcgen05.mma kind::f16: A and B must have the same type (f16 or bf16)",
            ))
        }
    };
    let d_code = match d {
        AccumType::F32 => 1u32,
        AccumType::F16 if a_code == 0 => 0,
        AccumType::F16 => {
            return Err(EncodingError::new(
                "tcgen05.mma kind::f16: an f16 accumulator needs f16 inputs (bf16 needs f32)",
            ))
        }
    };
    Ok(d_code << idesc::D_TYPE_SHIFT
        | a_code << idesc::A_TYPE_SHIFT
        | b_code << idesc::B_TYPE_SHIFT
        | major_code(a_major) << idesc::A_MAJOR_SHIFT
        | major_code(b_major) << idesc::B_MAJOR_SHIFT
        | (n >> 3) << idesc::N_SHIFT
        | (m >> 4) << idesc::M_SHIFT)
}

/// Instruction descriptor for tcgen05.mma kind::f16 (dense, no negation, no saturation, no shift),
/// for `cta_group::1`: M ∈ {64, 128}, N a multiple of 8 in 8..=256 (PTX ISA Table 39). Panics on
/// a shape or type combination the instruction does not have.
pub const fn instr_descriptor_f16(
    d: AccumType,
    a: InputType,
    b: InputType,
    a_major: Major,
    b_major: Major,
    m: u32,
    n: u32,
) -> u32 {
    unwrap32(try_instr_descriptor_f16(d, a, b, a_major, b_major, m, n))
}

/// Instruction descriptor for a 2-SM `tcgen05.mma.cta_group::2.kind::f16` (dense, no negation, no
/// saturation, no shift): M ∈ {128, 256} for the pair, N a multiple of 16 in 16..=256 (PTX ISA
/// Table 39). Panics on a shape or type combination the instruction does not have.
pub const fn instr_descriptor_f16_2sm(
    d: AccumType,
    a: InputType,
    b: InputType,
    a_major: Major,
    b_major: Major,
    m: u32,
    n: u32,
) -> u32 {
    unwrap32(try_instr_descriptor_f16_2sm(d, a, b, a_major, b_major, m, n))
}

#[cfg(test)]
mod tests {
    use super::super::tests::field;
    use super::{AccumType, InputType};
    use crate::encoding::*;

    const BF16: InputType = InputType::BF16;
    const F16: InputType = InputType::F16;

    // ---- sm100 (tcgen05) descriptor. Source: PTX ISA Table 40 "Shared memory descriptor layout" and
    // CUTLASS cute/arch/mma_sm100_desc.hpp `UMMA::SmemDescriptor`: start 14 @0, LBO 14 @16, SBO 14 @32,
    // version 2 @46 (PTX: bits 46..49 fixed 0b001), base_offset 3 @49, lbo_mode 1 @52, layout_type 3 @61
    // (SWIZZLE_NONE 0, 128B_BASE32B 1, 128B 2, 64B 4, 32B 6). `make_umma_desc` sets version_ = 1,
    // lbo_mode_ = 0 ("legacy"), base_offset_ = 0.

    const VERSION: u64 = 1 << 46;

    #[test]
    fn sm100_each_field_alone() {
        assert_eq!(sm100::smem_descriptor(0, 0, 0, SmemSwizzle::None), VERSION);
        assert_eq!(
            sm100::smem_descriptor(0x3FFF0, 0, 0, SmemSwizzle::None),
            VERSION | 0x3FFF
        );
        assert_eq!(sm100::smem_descriptor(0, 16, 0, SmemSwizzle::None), VERSION | 1 << 16);
        assert_eq!(
            sm100::smem_descriptor(0, 0x3FFF0, 0, SmemSwizzle::None),
            VERSION | 0x3FFF << 16
        );
        assert_eq!(sm100::smem_descriptor(0, 0, 16, SmemSwizzle::None), VERSION | 1 << 32);
        assert_eq!(
            sm100::smem_descriptor(0, 0, 0x3FFF0, SmemSwizzle::None),
            VERSION | 0x3FFF << 32
        );
        assert_eq!(
            sm100::smem_descriptor(0, 0, 0, SmemSwizzle::B128Atom32B),
            VERSION | 1 << 61
        );
        assert_eq!(sm100::smem_descriptor(0, 0, 0, SmemSwizzle::B128), VERSION | 2 << 61);
        assert_eq!(sm100::smem_descriptor(0, 0, 0, SmemSwizzle::B64), VERSION | 4 << 61);
        assert_eq!(sm100::smem_descriptor(0, 0, 0, SmemSwizzle::B32), VERSION | 6 << 61);
    }

    #[test]
    fn sm100_fixed_bits_base_offset_and_lbo_mode() {
        for s in [
            SmemSwizzle::None,
            SmemSwizzle::B32,
            SmemSwizzle::B64,
            SmemSwizzle::B128,
            SmemSwizzle::B128Atom32B,
        ] {
            let d = sm100::smem_descriptor(0, 0x3FFF0, 0x3FFF0, s) | 0x3FFF;
            assert_eq!(field(d, 46, 3), 0b001, "PTX Table 40: bits 46..49 fixed 0b001");
            assert_eq!(field(d, 49, 3), 0, "base offset 0");
            assert_eq!(
                field(d, 52, 1),
                0,
                "LBO mode: relative offset (absolute is sm_103a only)"
            );
            assert_eq!(field(d, 53, 8), 0, "PTX Table 40: bits 53..61 fixed 0");
            assert_eq!(field(d, 14, 2) | field(d, 30, 2), 0, "reserved");
        }
    }

    // ---- Instruction descriptor. Source: PTX ISA Table 42 "Instruction descriptor format for
    // .kind::tf32, .kind::f16, .kind::f8f6f4 and .kind::i8" and CUTLASS `UMMA::InstrDescriptor`:
    // c_format 2 @4 (F16 0, F32 1), a_format 3 @7, b_format 3 @10 (F16 0, BF16 1), a_major @15,
    // b_major @16 (K 0, MN 1), n_dim 6 @17 (N >> 3), m_dim 5 @24 (M >> 4).

    fn idesc(d: AccumType, a: InputType, b: InputType, am: Major, bm: Major, m: u32, n: u32) -> u32 {
        sm100::instr_descriptor_f16(d, a, b, am, bm, m, n)
    }

    // ANCHOR: idesc_worked
    #[test]
    fn instr_descriptor_worked_value() {
        // BF16 × BF16 -> F32, both K-major, M=128, N=256: 1<<4 | 1<<7 | 1<<10 | 32<<17 | 8<<24.
        // Also what “tcgen05 for dummies” (gau-nernst) builds by hand for the same instruction.
        assert_eq!(
            idesc(AccumType::F32, BF16, BF16, Major::K, Major::K, 128, 256),
            0x0840_0490
        );
    }
    // ANCHOR_END: idesc_worked

    #[test]
    fn instr_descriptor_each_field_alone() {
        // Baseline: F16 × F16 -> F16, K-major, M=64 (4 @24), N=8 (1 @17).
        let base = idesc(AccumType::F16, F16, F16, Major::K, Major::K, 64, 8);
        assert_eq!(base, 4 << 24 | 1 << 17);
        assert_eq!(
            idesc(AccumType::F32, F16, F16, Major::K, Major::K, 64, 8) ^ base,
            1 << 4
        );
        assert_eq!(
            idesc(AccumType::F32, BF16, BF16, Major::K, Major::K, 64, 8) ^ base,
            1 << 4 | 1 << 7 | 1 << 10
        );
        assert_eq!(
            idesc(AccumType::F16, F16, F16, Major::MN, Major::K, 64, 8) ^ base,
            1 << 15
        );
        assert_eq!(
            idesc(AccumType::F16, F16, F16, Major::K, Major::MN, 64, 8) ^ base,
            1 << 16
        );
        assert_eq!(
            idesc(AccumType::F16, F16, F16, Major::K, Major::K, 128, 8) ^ base,
            (8 ^ 4) << 24
        );
        assert_eq!(
            (idesc(AccumType::F16, F16, F16, Major::K, Major::K, 64, 256) >> 17) & 0x3F,
            32
        );
        assert_eq!(
            (idesc(AccumType::F16, F16, F16, Major::K, Major::K, 64, 136) >> 17) & 0x3F,
            17
        );
        // Sparsity, saturate, negate, reserved (6, 23, 29) and max shift stay 0.
        let all = idesc(AccumType::F32, BF16, BF16, Major::MN, Major::MN, 128, 256);
        let must_be_zero: u32 = 0b1111 | 1 << 6 | 1 << 13 | 1 << 14 | 1 << 23 | 1 << 29 | 0b11 << 30;
        assert_eq!(all & must_be_zero, 0);
    }

    #[test]
    fn instr_descriptor_rejects_shapes_and_types_the_instruction_lacks() {
        let t = |d, a, b, m, n| sm100::try_instr_descriptor_f16(d, a, b, Major::K, Major::K, m, n);
        // PTX ISA Table 39, kind::f16, dense, cta_group::1: M ∈ {64, 128}; N = 8, 16, ... 256.
        for m in [0, 32, 96, 192, 256] {
            assert!(t(AccumType::F32, BF16, BF16, m, 128).is_err(), "M = {m}");
        }
        for n in [0, 4, 12, 260, 264, 512] {
            assert!(t(AccumType::F32, BF16, BF16, 128, n).is_err(), "N = {n}");
        }
        for (m, n) in [(64, 8), (64, 248), (128, 8), (128, 136), (128, 256)] {
            assert!(t(AccumType::F32, BF16, BF16, m, n).is_ok(), "{m}x{n}");
        }
        // Table 39: dtype .f16 only with .f16 inputs; A and B the same type.
        assert!(t(AccumType::F16, BF16, BF16, 128, 128).is_err());
        assert!(t(AccumType::F32, F16, BF16, 128, 128).is_err());
        assert!(t(AccumType::F16, F16, F16, 128, 128).is_ok());
    }

    // ---- 2-SM (cta_group::2) instruction descriptor. Sources: PTX ISA Table 39 (kind::f16, dense,
    // CTA group 2: "128xNxK, 256xNxK; N = {16, 32, … 256} steps of 16; K = 16"), Table 42 (the same
    // bit layout for both CTA groups), CUTLASS `SM100_MMA_F16BF16_2x1SM_SS` (static_assert M ∈ {128,
    // 256}, N % 16 == 0, 16 ≤ N ≤ 256) and `MMA_Traits<SM100_MMA_F16BF16_2x1SM_SS>` (idesc built
    // with the pair's M and N; `InstrDescriptor::m_dim_` "Valid values are: 4 (M=64), 8 (M=128),
    // 16 (M=256)").

    #[test]
    fn instr_descriptor_2sm_worked_values() {
        let two = |m, n| sm100::instr_descriptor_f16_2sm(AccumType::F32, BF16, BF16, Major::K, Major::K, m, n);
        // BF16 × BF16 -> F32, K-major, M = 256, N = 256 (steps 07-09): 1<<4 | 1<<7 | 1<<10 | 32<<17 | 16<<24.
        assert_eq!(two(256, 256), 0x1040_0490);
        // M = 256, N = 128: n_dim 16.
        assert_eq!(two(256, 128), 0x1020_0490);
        // M = 128 for the pair (64 rows per CTA): the same bits as the 1-SM M = 128 descriptor.
        assert_eq!(two(128, 256), 0x0840_0490);
        assert_eq!(
            two(128, 256),
            idesc(AccumType::F32, BF16, BF16, Major::K, Major::K, 128, 256)
        );
        // m_dim 16 at bits 24..29: bit 28 alone.
        assert_eq!(two(256, 16) >> 24, 16);
        assert_eq!((two(256, 16) >> 17) & 0x3F, 2);
    }

    #[test]
    fn instr_descriptor_2sm_rejects_shapes_cta_group_2_lacks() {
        let t = |m, n| sm100::try_instr_descriptor_f16_2sm(AccumType::F32, BF16, BF16, Major::K, Major::K, m, n);
        for m in [0, 64, 192, 512] {
            assert!(t(m, 128).is_err(), "M = {m}");
        }
        // N steps of 16: 8 and 24 are legal for one SM, not for a pair.
        for n in [0, 8, 24, 136, 264, 512] {
            assert!(t(256, n).is_err(), "N = {n}");
        }
        for (m, n) in [(128, 16), (128, 256), (256, 16), (256, 144), (256, 256)] {
            assert!(t(m, n).is_ok(), "{m}x{n}");
        }
        let e = t(256, 24).unwrap_err();
        assert!(e.message().contains("cta_group::2"), "{e}");
        // The cta_group::1 shapes are unchanged: M = 256 is a pair's shape only.
        assert!(sm100::check_shape_f16(sm100::CtaGroup::One, 256, 128).is_err());
        assert!(sm100::check_shape_f16(sm100::CtaGroup::Two, 256, 128).is_ok());
    }

    #[test]
    fn instr_descriptor_1sm_m128_accepts_n_in_steps_of_8_as_ptx_and_cutlass_4_2_do() {
        // PTX ISA Table 39, cta_group::1 dense: "64xNxK, 128xNxK; N = {8, 16, 24, … 256} steps of 8".
        // CUTLASS v4.2 (commit a49a78f) relaxed SM100_MMA_F16BF16_SS from "M == 128 && N % 16 == 0"
        // to "N % 8 == 0 && 8 <= N <= 256" for both M. Pinned here so a change of rule is deliberate.
        let t = |n| sm100::try_instr_descriptor_f16(AccumType::F32, BF16, BF16, Major::K, Major::K, 128, n);
        for n in [8, 24, 136, 248] {
            assert!(t(n).is_ok(), "128x{n}");
        }
    }

    #[test]
    fn smem_request_caps_resident_blocks_to_what_tmem_holds() {
        use sm100::{smem_capping_tmem, SMEM_PER_SM, SMEM_RESERVED_PER_BLOCK};
        let resident = |request: u32| SMEM_PER_SM / (request + SMEM_RESERVED_PER_BLOCK);
        for columns in [32, 64, 128, 256, 512] {
            let max = TMEM_COLUMNS / columns;
            // A small kernel (steps 04/05 ask for 33,792 bytes): capped at exactly 512 / columns blocks.
            let r = smem_capping_tmem(33_792, columns);
            if columns >= 128 {
                assert_eq!(resident(r), max, "{columns} columns");
            } else {
                assert!(resident(r) <= max, "{columns} columns");
            }
            // The smallest such request: one byte less lets one more block in (when 33,792 < cap).
            if r > 33_792 {
                assert_eq!(resident(r - 1), max + 1, "{columns} columns");
            }
        }
        // Steps 04/05: 128 columns, 4 blocks at most, 45,671 bytes.
        assert_eq!(smem_capping_tmem(33_792, 128), 45_671);
        // A kernel that already needs more keeps its request.
        assert_eq!(smem_capping_tmem(66_560, 128), 66_560);
    }
}
