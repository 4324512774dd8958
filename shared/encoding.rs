//! Bit-level encodings for the tensor-core steps (draft: API first, being verified).

/// Which dimension is contiguous for an operand in shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Major {
    K,
    MN,
}

/// Shared-memory layout ("swizzle mode") of an MMA operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmemSwizzle {
    None,
    B32,
    B64,
    B128,
    /// sm100 only: 128B swizzle with 32B atomicity.
    B128Atom32B,
}

const fn field14(what: &str, bytes: u32) -> u64 {
    let _ = what;
    if bytes % 16 != 0 {
        panic!("descriptor byte offset must be a multiple of 16");
    }
    if (bytes >> 4) >= (1 << 14) {
        panic!("descriptor byte offset does not fit its 14-bit field (bytes >> 4 < 16384)");
    }
    (bytes >> 4) as u64
}

/// The start-address field of a descriptor for a shared-memory byte address.
pub const fn descriptor_address_bits(start_address: u32) -> u64 {
    ((start_address & 0x3FFFF) >> 4) as u64
}

pub mod sm90 {
    use super::{field14, SmemSwizzle};

    /// wgmma shared-memory matrix descriptor.
    pub const fn smem_descriptor(
        start_address: u32,
        leading_byte_offset: u32,
        stride_byte_offset: u32,
        swizzle: SmemSwizzle,
    ) -> u64 {
        let layout: u64 = match swizzle {
            SmemSwizzle::None => 0,
            SmemSwizzle::B128 => 1,
            SmemSwizzle::B64 => 2,
            SmemSwizzle::B32 => 3,
            SmemSwizzle::B128Atom32B => panic!("sm90: B128Atom32B is a tcgen05 (sm100) layout"),
        };
        field14("start", start_address)
            | field14("lbo", leading_byte_offset) << 16
            | field14("sbo", stride_byte_offset) << 32
            | layout << 62
    }
}

pub mod sm100 {
    use super::{field14, Major, SmemSwizzle};

    /// tcgen05 shared-memory matrix descriptor.
    pub const fn smem_descriptor(
        start_address: u32,
        leading_byte_offset: u32,
        stride_byte_offset: u32,
        swizzle: SmemSwizzle,
    ) -> u64 {
        let layout: u64 = match swizzle {
            SmemSwizzle::None => 0,
            SmemSwizzle::B128Atom32B => 1,
            SmemSwizzle::B128 => 2,
            SmemSwizzle::B64 => 4,
            SmemSwizzle::B32 => 6,
        };
        field14("start", start_address)
            | field14("lbo", leading_byte_offset) << 16
            | field14("sbo", stride_byte_offset) << 32
            | 1 << 46
            | layout << 61
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum AccumType {
        F16,
        F32,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum InputType {
        F16,
        BF16,
    }

    /// Instruction descriptor for tcgen05.mma kind::f16 (dense, no negation, no saturation).
    pub const fn instr_descriptor_f16(
        d: AccumType,
        a: InputType,
        b: InputType,
        a_major: Major,
        b_major: Major,
        m: u32,
        n: u32,
    ) -> u32 {
        let _ = (d, a, b, a_major, b_major, m, n);
        let c = match d {
            AccumType::F16 => 0,
            AccumType::F32 => 1,
        };
        let af = match a {
            InputType::F16 => 0,
            InputType::BF16 => 1,
        };
        let bf = match b {
            InputType::F16 => 0,
            InputType::BF16 => 1,
        };
        let am = match a_major {
            Major::K => 0,
            Major::MN => 1,
        };
        let bm = match b_major {
            Major::K => 0,
            Major::MN => 1,
        };
        c << 4 | af << 7 | bf << 10 | am << 15 | bm << 16 | (n >> 3) << 17 | (m >> 4) << 24
    }
}

/// Where the 16-byte chunk at `byte_offset` lands under `swizzle`.
pub const fn swizzle(swizzle: SmemSwizzle, byte_offset: u32) -> u32 {
    match swizzle {
        SmemSwizzle::None => byte_offset,
        SmemSwizzle::B32 => byte_offset ^ ((byte_offset >> 3) & 0x10),
        SmemSwizzle::B64 => byte_offset ^ ((byte_offset >> 3) & 0x30),
        SmemSwizzle::B128 | SmemSwizzle::B128Atom32B => byte_offset ^ ((byte_offset >> 3) & 0x70),
    }
}

/// TMEM address: lane in bits 31..16, column in bits 15..0.
pub const fn tmem_address(lane: u32, column: u32) -> u32 {
    lane << 16 | column
}

/// Shared memory bank (0..32) of a byte address.
pub const fn bank(byte_address: u32) -> u32 {
    (byte_address >> 2) & 31
}
