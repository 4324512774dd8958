//! The shared-memory swizzles: how many bytes a swizzle row and atom span, where a 16-byte chunk
//! lands under each swizzle (the XOR the TMA and the tensor core apply), and which bank a byte falls in.

use super::SmemSwizzle;

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

/// Shared-memory banks: 32, each 4 bytes wide, successive 32-bit words in successive banks.
pub const SMEM_BANKS: u32 = 32;

/// Shared memory bank (0..32) of a byte address, for the bank-conflict picture: `(address / 4) % 32`.
/// A 16-byte chunk covers the four banks `4c .. 4c+4` of its bank group `c = bank / 4` (0..8).
pub const fn bank(byte_address: u32) -> u32 {
    (byte_address >> 2) % SMEM_BANKS
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
