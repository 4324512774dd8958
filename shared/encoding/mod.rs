//! Bit-level encodings the tensor-core steps hand to their kernels: shared-memory matrix descriptors
//! (wgmma on sm_90a, tcgen05 on sm_100a), the tcgen05 instruction descriptor, the shared-memory swizzle
//! functions, Tensor Memory addresses and shared-memory banks.
//!
//! Everything here is a `const fn`, so a step computes its encodings where it declares its kernel:
//!
//! ```
//! use gemm_ladder::encoding::{sm100, Major, SmemSwizzle};
//! const A_DESC: u64 = sm100::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);
//! const IDESC: u32 = sm100::instr_descriptor_f16(
//!     sm100::AccumType::F32, sm100::InputType::BF16, sm100::InputType::BF16,
//!     Major::K, Major::K, 128, 256,
//! );
//! assert_eq!(IDESC, 0x0840_0490);
//! # let _ = A_DESC;
//! ```
//!
//! An argument the hardware would not accept (an offset that is not a multiple of 16 or does not fit its
//! field, a shape the instruction does not have, a layout the architecture does not know) makes the
//! `const fn` panic with a message saying which rule was broken; evaluated inside a `const` item, that
//! panic is a compile error. Each panicking encoder has a `try_` twin returning
//! `Result<_, EncodingError>`, which is what it calls; tests and run-time callers use the twin.
//!
//! ```compile_fail
//! use gemm_ladder::encoding::{sm90, SmemSwizzle};
//! // error[E0080]: evaluation of constant value failed ... sm90 (wgmma) has no 128B-with-32B-atomicity swizzle
//! const BAD: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128Atom32B);
//! fn main() { let _ = BAD; }
//! ```
//!
//! # The descriptor template contract
//!
//! A shared-memory descriptor holds the operand's start address in bits 0..14, as
//! `(address & 0x3FFFF) >> 4` (the PTX ISA calls this `matrix-descriptor-encode`). The address of a
//! shared-memory buffer is known only on the device, so the Rust side computes a *template* with
//! `start_address = 0` (every other field filled in) and the kernel finishes it:
//!
//! ```text
//! uint64_t desc = A_DESC_TEMPLATE | (uint64_t)((smem_addr & 0x3FFFF) >> 4);   // smem_addr: __cvta_generic_to_shared
//! ```
//!
//! Because the template's start field is zero, OR and ADD are the same here, and stepping along K inside
//! a tile is `desc + (byte_step >> 4)` as long as the sum stays below 2^14 (256 KiB of address space).
//! [`descriptor_address_bits`] is the same encoding on the Rust side (with the checks the kernel cannot
//! afford), for tests and for the book.
//!
//! # LBO and SBO for a K-major operand
//!
//! Both architectures read an operand as "core matrices" of 8 rows × 16 bytes (8 bf16 along K). For a
//! K-major operand (A is M×K and B is N×K, both with K contiguous, as in this ladder):
//!
//! * **LBO**, the leading-dimension byte offset, is the distance between two core matrices that are
//!   neighbours along **K** (the "first column to the second column of the 8x2 tile" of the PTX ISA).
//!   It is used only without swizzle. With a swizzle the 16-byte chunks of one row sit side by side
//!   inside the swizzle row, the field is ignored ("assumed to be 1"), and CUTLASS writes 1 in it, i.e.
//!   16 bytes: [`LBO_IGNORED`].
//! * **SBO**, the stride-dimension byte offset, is the distance between two groups of 8 rows that are
//!   neighbours along **M** (or N).
//!
//! This holds for both the wgmma (sm90) and the tcgen05 (sm100) descriptor: CUTLASS's `make_gmma_desc`
//! and `make_umma_desc` describe the K-major canonical layout, in 16-byte units, as
//! `((8,m),2):((1,SBO),LBO)` without swizzle and `((8,m),2):((8,SBO),1)` with the 128-byte swizzle.
//! For an MN-major operand the two names swap meaning between the interleaved and the swizzled layouts;
//! the ladder does not use MN-major operands, so nothing here computes those offsets.
//! [`k_major_offsets`] gives the values for the two layouts the ladder uses.
//!
//! # Sources
//!
//! Bit positions and codes were checked against the PTX ISA (wgmma "Matrix Descriptor Format"; tcgen05
//! "Shared Memory Descriptor" Table 40, "Instruction descriptor" Table 42, "Matrix Shape" Table 39,
//! "Tensor Memory Addressing") and CUTLASS (`cute/arch/mma_sm90_desc.hpp` `GmmaDescriptor`,
//! `cute/arch/mma_sm100_desc.hpp` `UMMA::SmemDescriptor` and `UMMA::InstrDescriptor`,
//! `cute/atom/mma_traits_sm90_gmma.hpp` `make_gmma_desc`, `cute/atom/mma_traits_sm100.hpp`
//! `make_umma_desc`, `cute/swizzle.hpp` `Swizzle<B,M,S>`). The unit tests at the bottom name the table
//! each expected value comes from.

pub mod tma;

use std::fmt;

/// Which dimension is contiguous for an operand in shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Major {
    /// K is contiguous (A row-major M×K, B row-major N×K): what the PTX ISA calls "not transposed".
    K,
    /// M (for A) or N (for B) is contiguous: "transposed".
    MN,
}

/// Shared-memory layout ("swizzle mode") of an MMA operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmemSwizzle {
    /// No swizzle: each 8-row × 16-byte core matrix is 128 contiguous bytes ("interleave" in CUTLASS).
    None,
    /// 32-byte swizzle (`Swizzle<1,4,3>`): rows of 32 bytes, pattern repeats every 256 bytes.
    B32,
    /// 64-byte swizzle (`Swizzle<2,4,3>`): rows of 64 bytes, pattern repeats every 512 bytes.
    B64,
    /// 128-byte swizzle (`Swizzle<3,4,3>`): rows of 128 bytes, pattern repeats every 1024 bytes.
    B128,
    /// sm100 only: 128-byte swizzle with 32-byte atomicity (`Swizzle<2,5,2>`): 32-byte pieces move
    /// together. CUTLASS accepts it for MN-major operands only.
    B128Atom32B,
}

/// The value conventionally written for an LBO the hardware ignores (K-major, swizzled): field value 1,
/// that is 16 bytes, as CUTLASS's `make_gmma_desc`/`make_umma_desc` do.
pub const LBO_IGNORED: u32 = 16;

/// Shared-memory addresses the descriptors can name: `matrix-descriptor-encode` keeps 18 bits.
pub const DESCRIPTOR_ADDRESS_MASK: u32 = 0x3FFFF;

/// Why an encoder refused its arguments. The message names the rule that was broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodingError {
    message: &'static str,
}

impl EncodingError {
    const fn new(message: &'static str) -> Self {
        EncodingError { message }
    }

    /// The rule that was broken, in one line.
    pub const fn message(&self) -> &'static str {
        self.message
    }
}

impl fmt::Display for EncodingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message)
    }
}

impl std::error::Error for EncodingError {}

impl From<EncodingError> for crate::error::Error {
    fn from(e: EncodingError) -> Self {
        crate::error::Error::Other(e.message.to_string())
    }
}

/// Panics (a compile error in `const` evaluation) with the error's message.
const fn unwrap64(r: Result<u64, EncodingError>) -> u64 {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{}", e.message),
    }
}

const fn unwrap32(r: Result<u32, EncodingError>) -> u32 {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{}", e.message),
    }
}

/// The 14-bit `matrix-descriptor-encode` of a byte quantity that must be a multiple of 16 below 2^18.
const fn encode14(bytes: u32, misaligned: &'static str, too_big: &'static str) -> Result<u64, EncodingError> {
    if bytes & 0xF != 0 {
        return Err(EncodingError::new(misaligned));
    }
    if bytes > DESCRIPTOR_ADDRESS_MASK {
        return Err(EncodingError::new(too_big));
    }
    Ok((bytes >> 4) as u64)
}

/// Checked form of [`descriptor_address_bits`].
pub const fn try_descriptor_address_bits(start_address: u32) -> Result<u64, EncodingError> {
    encode14(
        start_address,
        "descriptor start address must be a multiple of 16 bytes",
        "descriptor start address must be below 0x40000 (the descriptor keeps 18 address bits)",
    )
}

/// The start-address field (bits 0..14) of a shared-memory descriptor for a shared-memory byte address:
/// `(start_address & 0x3FFFF) >> 4`. This is what the kernel ORs into a template computed here with
/// start address 0 (see the module docs). Panics if the address is not 16-byte aligned or does not fit.
pub const fn descriptor_address_bits(start_address: u32) -> u64 {
    unwrap64(try_descriptor_address_bits(start_address))
}

/// Bytes of one swizzle row: how many bytes of one M/N row sit side by side before the next row starts
/// (16 without swizzle: one core-matrix row).
pub const fn swizzle_row_bytes(swizzle: SmemSwizzle) -> u32 {
    match swizzle {
        SmemSwizzle::None => 16,
        SmemSwizzle::B32 => 32,
        SmemSwizzle::B64 => 64,
        SmemSwizzle::B128 | SmemSwizzle::B128Atom32B => 128,
    }
}

/// The alignment at which the swizzle pattern starts (PTX ISA, "Starting address of repeating pattern"):
/// 1024 bytes for the 128-byte swizzles, 512 for 64-byte, 256 for 32-byte, 16 without swizzle. The
/// descriptors here always encode base offset 0, which is right only for operands whose pattern starts
/// at such a boundary (plus an offset below 128 bytes inside the first row, as when stepping along K).
/// The XOR of [`SmemSwizzle::B128Atom32B`] repeats every 512 bytes; 1024 is asked for anyway, as for
/// every 128-byte mode.
pub const fn swizzle_atom_bytes(swizzle: SmemSwizzle) -> u32 {
    match swizzle {
        SmemSwizzle::None => 16,
        SmemSwizzle::B32 => 256,
        SmemSwizzle::B64 => 512,
        SmemSwizzle::B128 | SmemSwizzle::B128Atom32B => 1024,
    }
}

/// Leading and stride byte offsets of a shared-memory descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offsets {
    /// LBO: between core matrices that are neighbours along K (K-major, no swizzle only).
    pub leading_byte_offset: u32,
    /// SBO: between 8-row groups that are neighbours along M/N.
    pub stride_byte_offset: u32,
}

// ANCHOR: k_major_offsets
/// Checked form of [`k_major_offsets`].
pub const fn try_k_major_offsets(rows: u32, swizzle: SmemSwizzle) -> Result<Offsets, EncodingError> {
    if rows == 0 || rows & 7 != 0 {
        return Err(EncodingError::new(
            "K-major operand: the tile's M/N rows must be a positive multiple of 8",
        ));
    }
    match swizzle {
        // The tile is stored as K-columns of 16 bytes, one after another; inside a column the rows
        // follow each other, so 8-row groups are 128 bytes apart and K-neighbours `rows * 16` apart.
        SmemSwizzle::None => {
            if rows > DESCRIPTOR_ADDRESS_MASK / 16 {
                return Err(EncodingError::new(
                    "K-major operand: rows * 16 bytes does not fit the LBO field",
                ));
            }
            Ok(Offsets {
                leading_byte_offset: rows * 16,
                stride_byte_offset: 128,
            })
        }
        // One swizzle row per M/N row; an 8-row group is one swizzle atom of 8 rows.
        SmemSwizzle::B32 | SmemSwizzle::B64 | SmemSwizzle::B128 => Ok(Offsets {
            leading_byte_offset: LBO_IGNORED,
            stride_byte_offset: 8 * swizzle_row_bytes(swizzle),
        }),
        SmemSwizzle::B128Atom32B => Err(EncodingError::new(
            "the 128B swizzle with 32B atomicity is not a K-major layout (CUTLASS: MN-major only)",
        )),
    }
}
// ANCHOR_END: k_major_offsets

/// LBO and SBO for the K-major layouts the ladder uses, for a tile of `rows` M (or N) rows:
///
/// * no swizzle: the tile is stored as K-columns of 16 bytes (8 bf16), each column `rows × 16` bytes with
///   its core matrices back to back: LBO = `rows × 16` (e.g. 2048 for 128 rows), SBO = 128;
/// * 32/64/128-byte swizzle: each M row is one swizzle row, 8 rows form an atom: LBO = [`LBO_IGNORED`],
///   SBO = 8 × row bytes (1024 for the 128-byte swizzle).
pub const fn k_major_offsets(rows: u32, swizzle: SmemSwizzle) -> Offsets {
    match try_k_major_offsets(rows, swizzle) {
        Ok(o) => o,
        Err(e) => panic!("{}", e.message),
    }
}

/// Fields common to both descriptors: start address, LBO, SBO, and the base-offset-0 alignment rule.
const fn common_fields(
    start_address: u32,
    leading_byte_offset: u32,
    stride_byte_offset: u32,
    swizzle: SmemSwizzle,
) -> Result<u64, EncodingError> {
    let start = match try_descriptor_address_bits(start_address) {
        Ok(v) => v,
        Err(e) => return Err(e),
    };
    let lbo = match encode14(
        leading_byte_offset,
        "descriptor leading byte offset (LBO) must be a multiple of 16 bytes",
        "descriptor leading byte offset (LBO) must be below 0x40000 bytes (14-bit field of 16-byte units)",
    ) {
        Ok(v) => v,
        Err(e) => return Err(e),
    };
    let sbo = match encode14(
        stride_byte_offset,
        "descriptor stride byte offset (SBO) must be a multiple of 16 bytes",
        "descriptor stride byte offset (SBO) must be below 0x40000 bytes (14-bit field of 16-byte units)",
    ) {
        Ok(v) => v,
        Err(e) => return Err(e),
    };
    // Base offset 0 means the swizzle pattern starts at an atom boundary: address bits 7.. inside the
    // atom must be zero (an offset below 128 bytes, inside the first row, is fine).
    if (start_address & (swizzle_atom_bytes(swizzle) - 1)) >= 128 {
        return Err(EncodingError::new(
            "swizzled descriptor start address must lie in the first 128-byte row of a swizzle atom \
             (1024/512/256-byte aligned): these descriptors encode base offset 0",
        ));
    }
    Ok(start | lbo << 16 | sbo << 32)
}

/// The wgmma (sm_90a) shared-memory matrix descriptor.
///
/// Layout (PTX ISA, "Matrix Descriptor Format"; CUTLASS `GmmaDescriptor`): start address bits 0..14,
/// LBO bits 16..30, SBO bits 32..46 (each `(bytes & 0x3FFFF) >> 4`), base offset bits 49..52 (0 here),
/// swizzle mode bits 62..64: 0 none, 1 = 128-byte, 2 = 64-byte, 3 = 32-byte.
pub mod sm90 {
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
}

/// tcgen05 (sm_100a) encodings: the shared-memory descriptor and the `kind::f16` instruction descriptor.
///
/// Shared-memory descriptor (PTX ISA Table 40; CUTLASS `UMMA::SmemDescriptor`): start address bits
/// 0..14, LBO 16..30, SBO 32..46, a fixed `0b001` in bits 46..49 (CUTLASS: `version_ = 1`), base offset
/// 49..52 (0 here), LBO mode bit 52 (0: LBO is a relative byte offset; 1, an absolute address, exists
/// on sm_103a only, so 0 here), swizzle mode bits 61..64: 0 none, 1 = 128-byte with 32-byte atoms,
/// 2 = 128-byte, 4 = 64-byte, 6 = 32-byte.
pub mod sm100 {
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
}

// ANCHOR: swizzle
/// Where the 16-byte chunk at `byte_offset` (from a 1024-byte-aligned base for 128B; 512 for 64B; 256
/// for 32B) lands under `swizzle`: the XOR of address bits the hardware (TMA writing, the tensor core
/// reading) applies. Bits below 16 bytes are kept, so the result is a byte offset too.
///
/// * 128B, `Swizzle<3,4,3>`: bits 4..7 (the 16-byte chunk within a 128-byte row) ^= bits 7..10 (the row
///   within the 8-row, 1024-byte atom);
/// * 64B, `Swizzle<2,4,3>`: bits 4..6 ^= bits 7..9;
/// * 32B, `Swizzle<1,4,3>`: bit 4 ^= bit 7;
/// * 128B with 32B atoms, `Swizzle<2,5,2>`: bits 5..7 (the 32-byte piece) ^= bits 7..9.
///
/// Each is its own inverse, so the same function maps a stored position back to the logical one.
pub const fn swizzle(swizzle: SmemSwizzle, byte_offset: u32) -> u32 {
    // CUTLASS Swizzle<B,M,S>: offset ^ ((offset & (((1 << B) - 1) << (M + S))) >> S).
    const fn xor(offset: u32, bits: u32, base: u32, shift: u32) -> u32 {
        let yyy = ((1u32 << bits) - 1) << (base + shift);
        offset ^ ((offset & yyy) >> shift)
    }
    match swizzle {
        SmemSwizzle::None => byte_offset,
        SmemSwizzle::B32 => xor(byte_offset, 1, 4, 3),
        SmemSwizzle::B64 => xor(byte_offset, 2, 4, 3),
        SmemSwizzle::B128 => xor(byte_offset, 3, 4, 3),
        SmemSwizzle::B128Atom32B => xor(byte_offset, 2, 5, 2),
    }
}
// ANCHOR_END: swizzle

/// Lanes of Tensor Memory (rows) per CTA.
pub const TMEM_LANES: u32 = 128;
/// Columns of Tensor Memory (32-bit cells per lane) per CTA.
pub const TMEM_COLUMNS: u32 = 512;

/// Checked form of [`tmem_address`].
pub const fn try_tmem_address(lane: u32, column: u32) -> Result<u32, EncodingError> {
    if lane >= TMEM_LANES {
        return Err(EncodingError::new("Tensor Memory lane must be below 128"));
    }
    if column >= TMEM_COLUMNS {
        return Err(EncodingError::new("Tensor Memory column must be below 512"));
    }
    Ok(lane << 16 | column)
}

/// TMEM address: lane in bits 31..16, column in bits 15..0 (PTX ISA, "Tensor Memory Addressing").
/// Tensor Memory has 128 lanes × 512 columns of 32 bits; panics outside that.
pub const fn tmem_address(lane: u32, column: u32) -> u32 {
    unwrap32(try_tmem_address(lane, column))
}

/// Shared-memory banks: 32, each 4 bytes wide, successive 32-bit words in successive banks.
pub const SMEM_BANKS: u32 = 32;

/// Shared memory bank (0..32) of a byte address, for the bank-conflict picture: `(address / 4) % 32`.
/// A 16-byte chunk covers the four banks `4c .. 4c+4` of its bank group `c = bank / 4` (0..8).
pub const fn bank(byte_address: u32) -> u32 {
    (byte_address >> 2) % SMEM_BANKS
}

#[cfg(test)]
mod tests {
    use super::sm100::{AccumType, InputType};
    use super::*;

    const BF16: InputType = InputType::BF16;
    const F16: InputType = InputType::F16;

    /// Extracts `width` bits at `shift`.
    fn field(v: u64, shift: u32, width: u32) -> u64 {
        (v >> shift) & ((1u64 << width) - 1)
    }

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

    // ---- Worked descriptor values for the ladder's layouts.

    #[test]
    fn k_major_offsets_match_the_canonical_layouts() {
        // No swizzle, 128 rows of 16-byte K-columns: LBO = 128 × 16 = 2048 (K-neighbour core matrices),
        // SBO = 128 (8 rows × 16 B). CUTLASS make_umma_desc/make_gmma_desc K-major INTERLEAVE
        // ((8,n),2):((1,SBO),LBO); seed 003 "LBO = height * 16, SBO = 8 * 16".
        assert_eq!(
            k_major_offsets(128, SmemSwizzle::None),
            Offsets {
                leading_byte_offset: 2048,
                stride_byte_offset: 128
            }
        );
        // 128B swizzle: SBO = 8 rows × 128 B = 1024; LBO ignored, encoded as 1 (16 B) as CUTLASS does
        // (expected_stride_10 == 1 for swizzled K-major).
        assert_eq!(
            k_major_offsets(128, SmemSwizzle::B128),
            Offsets {
                leading_byte_offset: 16,
                stride_byte_offset: 1024
            }
        );
        assert_eq!(k_major_offsets(64, SmemSwizzle::B64).stride_byte_offset, 512);
        assert_eq!(k_major_offsets(64, SmemSwizzle::B32).stride_byte_offset, 256);
    }

    // ANCHOR: worked_descriptors
    #[test]
    fn worked_descriptor_values() {
        // K-major, no swizzle, 128 rows: LBO 2048 -> field 128 at bit 16; SBO 128 -> field 8 at bit 32.
        let o = k_major_offsets(128, SmemSwizzle::None);
        let sm90 = sm90::smem_descriptor(0, o.leading_byte_offset, o.stride_byte_offset, SmemSwizzle::None);
        assert_eq!(sm90, 0x0000_0008_0080_0000);
        let sm100 = sm100::smem_descriptor(0, o.leading_byte_offset, o.stride_byte_offset, SmemSwizzle::None);
        assert_eq!(sm100, 0x0000_4008_0080_0000);
        // K-major, 128B swizzle: LBO field 1, SBO 1024 -> field 64 (0x40) at bit 32.
        // sm90: layout 1 at bit 62 (PTX wgmma "1: 128-Byte swizzle").
        let o = k_major_offsets(128, SmemSwizzle::B128);
        let sm90 = sm90::smem_descriptor(0, o.leading_byte_offset, o.stride_byte_offset, SmemSwizzle::B128);
        assert_eq!(sm90, 0x4000_0040_0001_0000);
        // sm100: layout 2 at bit 61 (PTX Table 40 "2 = 128-Byte swizzling") plus the fixed bit 46.
        // Seed 003 writes the same descriptor with the LBO field left 0: 0x4000_4040_0000_0000.
        let sm100 = sm100::smem_descriptor(0, o.leading_byte_offset, o.stride_byte_offset, SmemSwizzle::B128);
        assert_eq!(sm100, 0x4000_4040_0001_0000);
        // The template contract: OR-ing the run-time address bits equals encoding it directly.
        let addr = 0x1_2400; // 1024-byte aligned
        assert_eq!(
            sm100 | descriptor_address_bits(addr),
            sm100::smem_descriptor(addr, o.leading_byte_offset, o.stride_byte_offset, SmemSwizzle::B128)
        );
        // Stepping along K inside the 128-byte swizzle row (+32 B per K=16 bf16 MMA) stays legal.
        assert_eq!(
            sm100::smem_descriptor(addr + 96, 16, 1024, SmemSwizzle::B128),
            sm100 | (descriptor_address_bits(addr) + (96 >> 4))
        );
    }
    // ANCHOR_END: worked_descriptors

    #[test]
    fn descriptor_address_bits_is_matrix_descriptor_encode() {
        // PTX ISA: matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4.
        for addr in [0u32, 16, 1024, 0x1_0000, 0x3FFF0] {
            assert_eq!(descriptor_address_bits(addr), u64::from((addr & 0x3FFFF) >> 4));
        }
        assert!(try_descriptor_address_bits(8).is_err());
        assert!(try_descriptor_address_bits(0x40000).is_err());
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
        // Also what seed 003 builds by hand for the same instruction.
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

    // ---- Invalid descriptor arguments.

    #[test]
    fn descriptors_reject_invalid_arguments() {
        use SmemSwizzle::*;
        for (start, lbo, sbo, s) in [
            (8, 0, 0, None),       // start not a multiple of 16
            (0x40000, 0, 0, None), // start beyond 18 bits
            (0, 24, 0, None),      // LBO not a multiple of 16
            (0, 0x40000, 0, None), // LBO does not fit
            (0, 0, 1000, None),    // SBO not a multiple of 16
            (0, 0, 0x40000, None), // SBO does not fit
            (128, 16, 1024, B128), // second row of a 128B atom: needs a base offset
            (512, 16, 1024, B128),
            (256, 16, 512, B64),
            (128, 16, 256, B32),
        ] {
            assert!(
                sm90::try_smem_descriptor(start, lbo, sbo, s).is_err(),
                "sm90 {start} {lbo} {sbo} {s:?}"
            );
            assert!(
                sm100::try_smem_descriptor(start, lbo, sbo, s).is_err(),
                "sm100 {start} {lbo} {sbo} {s:?}"
            );
        }
        // In-row offsets (K steps) and whole atoms are fine.
        assert!(sm100::try_smem_descriptor(1024 + 96, 16, 1024, B128).is_ok());
        assert!(sm90::try_smem_descriptor(512 + 32, 16, 512, B64).is_ok());
        // B128Atom32B is a tcgen05 layout only.
        let e = sm90::try_smem_descriptor(0, 16, 1024, B128Atom32B).unwrap_err();
        assert!(e.message().contains("sm100"), "{e}");
        assert!(try_k_major_offsets(128, B128Atom32B).is_err());
        assert!(try_k_major_offsets(100, B128).is_err());
        assert!(try_k_major_offsets(0, None).is_err());
    }

    #[test]
    fn panicking_encoders_panic_with_the_rule() {
        let message = |f: fn()| {
            let payload = std::panic::catch_unwind(f).expect_err("should have panicked");
            payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        };
        let results = [
            message(|| {
                sm90::smem_descriptor(0, 0, 0, SmemSwizzle::B128Atom32B);
            }),
            message(|| {
                sm100::smem_descriptor(0, 24, 0, SmemSwizzle::None);
            }),
            message(|| {
                idesc(AccumType::F32, BF16, BF16, Major::K, Major::K, 256, 128);
            }),
            message(|| {
                tmem_address(128, 0);
            }),
            message(|| {
                descriptor_address_bits(4);
            }),
            message(|| {
                k_major_offsets(12, SmemSwizzle::None);
            }),
        ];
        let results: Vec<String> = results.into_iter().map(|m| m.expect("a message")).collect();
        assert!(results[0].contains("sm90"), "{}", results[0]);
        assert!(results[1].contains("LBO"), "{}", results[1]);
        assert!(results[2].contains("M must be 64 or 128"), "{}", results[2]);
        assert!(results[3].contains("lane"), "{}", results[3]);
        assert!(results[4].contains("multiple of 16"), "{}", results[4]);
        assert!(results[5].contains("multiple of 8"), "{}", results[5]);
    }

    // ---- Swizzle functions. Source: CUTLASS cute/swizzle.hpp `Swizzle<B,M,S>::apply`:
    // offset ^ ((offset & (((1<<B)-1) << (M+S))) >> S); 128B = Swizzle<3,4,3>, 64B = <2,4,3>,
    // 32B = <1,4,3> (make_umma_desc/make_gmma_desc canonical layouts), 128B_BASE32B = <2,5,2>
    // (CUTLASS Layout_MN_SW128_32B_Atom_Bits).

    /// The CUTLASS definition, written out independently of `swizzle()`.
    fn cute_swizzle(b: u32, m: u32, s: u32, offset: u32) -> u32 {
        let yyy_msk = ((1 << b) - 1) << (m + s);
        offset ^ ((offset & yyy_msk) >> s)
    }

    #[test]
    fn swizzle_matches_cute_swizzle_and_the_stated_bits() {
        for off in 0..4096u32 {
            assert_eq!(swizzle(SmemSwizzle::None, off), off);
            assert_eq!(swizzle(SmemSwizzle::B128, off), cute_swizzle(3, 4, 3, off));
            assert_eq!(swizzle(SmemSwizzle::B64, off), cute_swizzle(2, 4, 3, off));
            assert_eq!(swizzle(SmemSwizzle::B32, off), cute_swizzle(1, 4, 3, off));
            assert_eq!(swizzle(SmemSwizzle::B128Atom32B, off), cute_swizzle(2, 5, 2, off));
            // 128B: bits [4,7) ^= bits [7,10); 64B: [4,6) ^= [7,9); 32B: bit 4 ^= bit 7.
            assert_eq!(swizzle(SmemSwizzle::B128, off), off ^ (((off >> 7) & 7) << 4));
            assert_eq!(swizzle(SmemSwizzle::B64, off), off ^ (((off >> 7) & 3) << 4));
            assert_eq!(swizzle(SmemSwizzle::B32, off), off ^ (((off >> 7) & 1) << 4));
        }
        // A hand-checked point: row 3, chunk 1 of a 128B atom (offset 3*128 + 16) goes to chunk 1^3 = 2.
        assert_eq!(swizzle(SmemSwizzle::B128, 3 * 128 + 16), 3 * 128 + 32);
    }

    #[test]
    fn swizzle_is_a_bijection_on_each_atom_and_its_own_inverse() {
        for s in [
            SmemSwizzle::None,
            SmemSwizzle::B32,
            SmemSwizzle::B64,
            SmemSwizzle::B128,
            SmemSwizzle::B128Atom32B,
        ] {
            let atom = swizzle_atom_bytes(s).max(1024);
            for base in [0u32, atom, 7 * atom] {
                let mut seen = vec![false; atom as usize / 16];
                for chunk in 0..atom / 16 {
                    let off = base + chunk * 16;
                    let to = swizzle(s, off);
                    assert!(to >= base && to < base + atom, "{s:?}: {off} leaves its atom");
                    assert_eq!(to % 16, 0);
                    assert!(
                        !std::mem::replace(&mut seen[((to - base) / 16) as usize], true),
                        "{s:?}: collision"
                    );
                    assert_eq!(swizzle(s, to), off, "{s:?}: not an involution");
                }
            }
        }
    }

    #[test]
    fn one_column_of_eight_rows_spreads_over_eight_bank_groups() {
        // The 16-byte chunk at column c of 8 consecutive 128-byte rows of one 1024-byte atom.
        for atom in [0u32, 1024, 5 * 1024] {
            for c in 0..8 {
                let groups = |s| {
                    let mut g: Vec<u32> = (0..8)
                        .map(|row| bank(swizzle(s, atom + row * 128 + c * 16)) / 4)
                        .collect();
                    g.sort();
                    g
                };
                // Without swizzle all 8 land in bank group c: an 8-way conflict.
                assert_eq!(groups(SmemSwizzle::None), vec![c; 8]);
                // With the 128B swizzle they occupy all 8 bank groups (all 32 banks).
                assert_eq!(groups(SmemSwizzle::B128), (0..8).collect::<Vec<_>>());
            }
        }
    }

    // ---- bank() and tmem_address().

    #[test]
    fn bank_is_word_index_mod_32() {
        // CUDA C++ Programming Guide: 32 banks, successive 32-bit words map to successive banks.
        assert_eq!(bank(0), 0);
        assert_eq!(bank(3), 0);
        assert_eq!(bank(4), 1);
        assert_eq!(bank(124), 31);
        assert_eq!(bank(128), 0);
        assert_eq!(bank(16 * 5 + 4), 21);
        assert_eq!(bank(0x3FFFC), 31);
    }

    #[test]
    fn tmem_address_packs_lane_high_column_low() {
        // PTX ISA "Tensor Memory Addressing": bits 31..16 lane, 15..0 column; 128 lanes × 512 columns.
        assert_eq!(tmem_address(0, 0), 0);
        assert_eq!(tmem_address(0, 511), 511);
        assert_eq!(tmem_address(1, 0), 0x1_0000);
        assert_eq!(tmem_address(32, 64), 0x0020_0040);
        assert_eq!(tmem_address(127, 511), 0x007F_01FF);
        assert!(try_tmem_address(128, 0).is_err());
        assert!(try_tmem_address(0, 512).is_err());
    }

    #[test]
    fn everything_evaluates_in_const_context() {
        const A: u64 = sm90::smem_descriptor(0, 2048, 128, SmemSwizzle::None);
        const B: u64 = sm100::smem_descriptor(0, LBO_IGNORED, 1024, SmemSwizzle::B128);
        const I: u32 = sm100::instr_descriptor_f16(AccumType::F32, BF16, BF16, Major::K, Major::K, 128, 256);
        const O: Offsets = k_major_offsets(128, SmemSwizzle::B128);
        const T: u32 = tmem_address(64, 128);
        const S: u32 = swizzle(SmemSwizzle::B128, 0x90);
        const K: u32 = bank(0x84);
        const DEFINES: &[(&str, u64)] = &[("A_DESC", A), ("B_DESC", B), ("IDESC", I as u64)];
        assert_eq!(DEFINES.len(), 3);
        assert_eq!(O.stride_byte_offset, 1024);
        assert_eq!((T, S, K), (0x0040_0080, 0x80, 1));
    }
}

// ANCHOR: block_scaled
/// Step 11's encodings for Blackwell's block-scaled MMA, `tcgen05.mma.cta_group::2.kind::mxf8f6f4
/// .block_scale.block32`: e4m3/e5m2 operands with one e8m0 scale per 32 elements along K, fp32
/// accumulation.
///
/// The instruction descriptor of the block-scaled kinds is *not* the `kind::f16` one with extra bits:
/// four fields move (CUTLASS `UMMA::InstrDescriptorBlockScaled` against `UMMA::InstrDescriptor`; PTX
/// ISA "Instruction descriptor format for .kind::mxf8f6f4, .kind::mxf4 and .kind::mxf4nvf4"):
///
/// | bits   | `kind::f16`            | block-scaled                                   |
/// | ------ | ---------------------- | ---------------------------------------------- |
/// | 3      | saturate               | reserved                                       |
/// | 4..6   | D type (F32 = 1)       | **scale-factor id of B** (D is always fp32)    |
/// | 7..10  | A type (BF16 = 1)      | A type: E4M3 = 0, E5M2 = 1                     |
/// | 10..13 | B type                 | B type: E4M3 = 0, E5M2 = 1                     |
/// | 23     | reserved               | **scale type**: UE4M3 = 0, UE8M0 = 1           |
/// | 29..31 | (29 reserved, 30..32 max shift) | **scale-factor id of A**              |
/// | 31     |                        | MMA-K: 0 = K 32 for mxf8f6f4 (dense)           |
///
/// Negation (13, 14), majorness (15, 16), N >> 3 (17..23) and M >> 4 (24..29) stay where they were.
///
/// A scale-factor id picks *which byte* of each 32-bit TMEM cell of the scale operand the MMA reads.
/// `tcgen05.cp … 32x128b.warpx4` copies one 512-byte tile of the blocked layout (128 rows × 4 blocks
/// along K; byte (r % 32)·16 + (r / 32)·4 + c) into 4 TMEM columns of all 128 lanes: lane l, column j
/// holds rows l % 32 + 32·j, and byte c of that cell is K-block c. So the MMA that consumes K-block c
/// of the tile (K elements 32c .. 32c+31 of a 128-element slice) uses id c for both A and B. CUTLASS
/// `make_runtime_instr_desc_block_scaled` fills both ids from the same per-MMA byte index; seed 004
/// passes `mma_iter` for both.
pub mod sm100_mx {
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
    /// LBO field left 0 (one 16-byte core-matrix column: there is no K-neighbour to point at). Seed 004's
    /// `make_sf_smem_desc` writes exactly this (it reports that filling in an LBO gave wrong results on a
    /// B200). Start address 0: the kernel adds the tile's address.
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
            let mn = |am, bm| {
                instr_descriptor_mxf8f6f4_2sm(MxType::E4M3, MxType::E4M3, ScaleType::UE8M0, am, bm, 256, 16, 0, 0)
            };
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
            // Seed 004 make_sf_smem_desc: SBO = 8 × 16 bytes -> field 8 at bit 32; bit 46 (fixed 0b001);
            // no swizzle (layout 0 at bit 61); LBO left 0.
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
}
// ANCHOR_END: block_scaled
