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
//! `make_umma_desc`, `cute/swizzle.hpp` `Swizzle<B,M,S>`). The unit tests at the bottom of each file name
//! the table each expected value comes from.
//! # Layers, bottom to top
//!
//! Each file uses only the files listed before it (`tests/layers.rs`):
//!
//! 1. [`tma`]: TMA tensor maps.
//! 2. [`sm90`]: wgmma shared-memory descriptors.
//! 3. [`sm100`]: tcgen05 descriptors and TMEM addresses.
//! 4. [`sm100_mx`]: the block-scaled tcgen05 instruction descriptor and MX scale layouts.
//! 5. `swizzles`: the shared-memory swizzles, where a chunk lands, and its bank.

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

pub mod sm100;
pub mod sm100_mx;
pub mod sm90;
mod swizzles;

pub use swizzles::{bank, swizzle, swizzle_atom_bytes, swizzle_row_bytes, SMEM_BANKS};

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

#[cfg(test)]
mod tests {
    use super::sm100::{AccumType, InputType};
    use super::*;

    const BF16: InputType = InputType::BF16;

    /// Extracts `width` bits at `shift`.
    pub(super) fn field(v: u64, shift: u32, width: u32) -> u64 {
        (v >> shift) & ((1u64 << width) - 1)
    }

    // ---- Worked descriptor values for the ladder's layouts.

    #[test]
    fn k_major_offsets_match_the_canonical_layouts() {
        // No swizzle, 128 rows of 16-byte K-columns: LBO = 128 × 16 = 2048 (K-neighbour core matrices),
        // SBO = 128 (8 rows × 16 B). CUTLASS make_umma_desc/make_gmma_desc K-major INTERLEAVE
        // ((8,n),2):((1,SBO),LBO); “tcgen05 for dummies” (gau-nernst): "LBO = height * 16, SBO = 8 * 16".
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
        // "tcgen05 for dummies" writes the same descriptor with the LBO field left 0: 0x4000_4040_0000_0000.
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
                sm100::instr_descriptor_f16(AccumType::F32, BF16, BF16, Major::K, Major::K, 256, 128);
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
