//! MX (OCP Microscaling) in Rust: the numbers step 11 computes with, owned and tested on the CPU.
//!
//! MXFP8 stores a matrix as fp8 **e4m3** elements (OCP `e4m3fn`: bias 7, subnormals, largest ±448, no
//! infinity, NaN = S.1111.111) and one **e8m0** scale per 1×32 block along K (byte b means 2^(b−127);
//! 255 is NaN; there is no zero: byte 0 is 2^−127). An element's value is `e4m3 × 2^(b−127)`.
//!
//! - [`e8m0_to_f64`], [`e8m0_from_exponent`]; [`e4m3_to_f32`], [`e4m3_from_f32`] (round to nearest,
//!   ties to even, saturating to ±448: `cvt.rn.satfinite.e4m3x2.f32`).
//! - [`quantize`]: the OCP recipe (spec §6.3), **FLOOR**: a block's scale exponent is
//!   `clamp(floor(log2 amax) − 8, −127, 127)` (8 = the exponent of e4m3's largest power of two, 256),
//!   the elements are `e4m3_rn_sat(v / 2^exponent)`; an all-zero block gets byte 0. With FLOOR a
//!   block's elements scale into [256, 512) at the top, so values in (448, 512) saturate to 448: that
//!   is the spec's behaviour (NVIDIA's RCEIL recipe rounds the scale up instead and never saturates;
//!   the GEMM does not care which recipe made the scales).
//! - Scale layouts: row-major `SF[rows][K/32]` and the **blocked** layout cuBLAS and CUTLASS use on
//!   Blackwell ([`to_blocked`], [`from_blocked`], [`blocked_offset`]).
//! - [`reference()`]: the exact product of two MX matrices in f64, in full or sampled like
//!   [`crate::check::verify::cpu_reference`].
//! - [`MxInputs`]: step 11's inputs, made from the bf16 inputs every step draws.

use crate::check::problem::{Inputs, Shape};
use crate::check::verify::{sample_positions, Reference, FULL_REFERENCE_MACS};
use half::bf16;
use rayon::prelude::*;

/// Elements along K that share one scale.
pub const BLOCK: usize = 32;
/// The e8m0 bias: byte b means 2^(b − 127).
pub const E8M0_BIAS: i32 = 127;
/// The e8m0 NaN byte.
pub const E8M0_NAN: u8 = 0xFF;
/// The largest e4m3 value, 1.75 · 2^8, and its byte.
pub const E4M3_MAX: f32 = 448.0;
pub const E4M3_MAX_BYTE: u8 = 0x7E;
/// The e4m3 NaN of positive sign (S.1111.111).
pub const E4M3_NAN: u8 = 0x7F;
/// The exponent of e4m3's largest power of two (256): FLOOR subtracts it from amax's exponent.
pub const E4M3_EMAX: i32 = 8;

// ---------------------------------------------------------------------------------------------
// e8m0
// ---------------------------------------------------------------------------------------------

/// The scale a byte stands for: 2^(b − 127), NaN for 255. Byte 0 is 2^−127, not zero.
pub fn e8m0_to_f64(byte: u8) -> f64 {
    if byte == E8M0_NAN {
        f64::NAN
    } else {
        2f64.powi(i32::from(byte) - E8M0_BIAS)
    }
}

/// The byte of the scale 2^`exponent`, for exponents −127 ..= 127 (255, NaN, has no exponent).
pub fn e8m0_from_exponent(exponent: i32) -> Option<u8> {
    (-E8M0_BIAS..=E8M0_BIAS)
        .contains(&exponent)
        .then(|| (exponent + E8M0_BIAS) as u8)
}

// ---------------------------------------------------------------------------------------------
// e4m3
// ---------------------------------------------------------------------------------------------

/// An e4m3 byte's value (exact in f32): sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent
/// field 0 is subnormal (`m · 2^−9`); S.1111.111 is NaN; there is no infinity.
pub fn e4m3_to_f32(byte: u8) -> f32 {
    let sign = if byte & 0x80 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((byte >> 3) & 0xF);
    let mantissa = i32::from(byte & 0x7);
    if exponent == 0xF && mantissa == 0x7 {
        return f32::NAN;
    }
    let magnitude = if exponent == 0 {
        mantissa as f32 * 2f32.powi(-9)
    } else {
        (8 + mantissa) as f32 * 2f32.powi(exponent - 10)
    };
    sign * magnitude
}

/// `x` rounded to the nearest e4m3, ties to even, saturating: anything at or beyond ±448 (infinity
/// included) becomes ±448, NaN becomes NaN (0x7F, or 0xFF with the sign bit). The sign of zero is
/// kept. This is what `cvt.rn.satfinite.e4m3x2.f32` does.
pub fn e4m3_from_f32(x: f32) -> u8 {
    let sign: u8 = if x.is_sign_negative() { 0x80 } else { 0 };
    if x.is_nan() {
        return sign | E4M3_NAN;
    }
    let a = f64::from(x.abs());
    if a >= f64::from(E4M3_MAX) {
        return sign | E4M3_MAX_BYTE;
    }
    // Below 2^−6 (the smallest normal) the spacing is 2^−9 everywhere: the code is the multiple of
    // 2^−9, and a rounding up to 8 lands exactly on the smallest normal's code (0.0001.000).
    let code = if a < 2f64.powi(-6) {
        (a * 512.0).round_ties_even() as u8
    } else {
        // a = 2^e · f, f in [1, 2): 3 mantissa bits means a spacing of 2^(e−3).
        let e = floor_log2(a);
        let q = (a / 2f64.powi(e - 3)).round_ties_even() as i32; // 8 ..= 16
        let (e, q) = if q == 16 { (e + 1, 8) } else { (e, q) };
        (((e + 7) << 3) | (q - 8)) as u8
    };
    // Rounding from just below 448 cannot pass it: 448 is the largest code below 0x7F.
    sign | code.min(E4M3_MAX_BYTE)
}

/// floor(log2 a) for a finite a > 0, exactly (from the f64 exponent field; subnormals included).
fn floor_log2(a: f64) -> i32 {
    let bits = a.to_bits();
    let field = ((bits >> 52) & 0x7FF) as i32;
    if field == 0 {
        // Subnormal f64: 2^−1074 · mantissa.
        63 - (bits & ((1 << 52) - 1)).leading_zeros() as i32 - 1074
    } else {
        field - 1023
    }
}

// ---------------------------------------------------------------------------------------------
// The quantizer
// ---------------------------------------------------------------------------------------------

/// One block's scale byte by OCP §6.3 with FLOOR: `clamp(floor(log2 amax) − 8, −127, 127) + 127`;
/// 0 for an all-zero block; 255 (NaN) when the block holds a NaN or an infinity.
pub fn block_scale(block: &[f32]) -> u8 {
    let mut amax = 0.0f32;
    for &v in block {
        if !v.is_finite() {
            return E8M0_NAN;
        }
        amax = amax.max(v.abs());
    }
    if amax == 0.0 {
        return 0;
    }
    let exponent = (floor_log2(f64::from(amax)) - E4M3_EMAX).clamp(-E8M0_BIAS, E8M0_BIAS);
    e8m0_from_exponent(exponent).expect("clamped")
}

/// A matrix in MX form: `rows`×`cols` e4m3 bytes (row-major) and one e8m0 byte per 1×32 block along
/// the row, row-major `SF[rows][cols/32]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MxMatrix {
    pub rows: usize,
    pub cols: usize,
    pub elements: Vec<u8>,
    pub scales: Vec<u8>,
}

impl MxMatrix {
    /// Scale blocks per row: `cols / 32`.
    pub fn blocks(&self) -> usize {
        self.cols / BLOCK
    }

    /// Element (r, c)'s value, e4m3 × scale, in f64 (exact: 4 significant bits times a power of two).
    pub fn value(&self, r: usize, c: usize) -> f64 {
        f64::from(e4m3_to_f32(self.elements[r * self.cols + c]))
            * e8m0_to_f64(self.scales[r * self.blocks() + c / BLOCK])
    }

    /// Every element's value in f64, row-major.
    pub fn dequantize(&self) -> Vec<f64> {
        (0..self.rows * self.cols)
            .into_par_iter()
            .map(|i| self.value(i / self.cols, i % self.cols))
            .collect()
    }

    /// Every element's value as bf16, which holds it exactly when the scale keeps it in bf16's normal
    /// range (e4m3 has 3 mantissa bits, bf16 7, and the same 8-bit exponent as fp32); `Err` names the
    /// first element that would round.
    pub fn dequantize_bf16(&self) -> Result<Vec<bf16>, String> {
        let values = self.dequantize();
        let out: Vec<bf16> = values.par_iter().map(|&v| bf16::from_f64(v)).collect();
        match values
            .iter()
            .zip(&out)
            .position(|(&v, w)| w.to_f64() != v && !v.is_nan())
        {
            None => Ok(out),
            Some(i) => Err(format!(
                "element ({}, {}) = {:e} is not exact in bf16 (scale byte {})",
                i / self.cols,
                i % self.cols,
                values[i],
                self.scales[(i / self.cols) * self.blocks() + (i % self.cols) / BLOCK]
            )),
        }
    }
}

/// Quantizes a `rows`×`cols` row-major matrix (`cols` a multiple of 32) with the OCP recipe, FLOOR
/// ([`block_scale`]), elements by [`e4m3_from_f32`] of `v / 2^exponent` (exact: a power of two).
pub fn quantize(values: &[f32], rows: usize, cols: usize) -> MxMatrix {
    assert!(
        cols.is_multiple_of(BLOCK),
        "MX needs a multiple of {BLOCK} columns, got {cols}"
    );
    assert_eq!(values.len(), rows * cols, "{rows}×{cols} values");
    let blocks = cols / BLOCK;
    let scales: Vec<u8> = values.par_chunks(BLOCK).map(block_scale).collect();
    let elements = values
        .par_chunks(BLOCK)
        .zip(scales.par_iter())
        .flat_map_iter(|(block, &scale)| {
            let inverse = if scale == E8M0_NAN {
                f64::NAN
            } else {
                1.0 / e8m0_to_f64(scale)
            };
            block
                .iter()
                .map(move |&v| e4m3_from_f32((f64::from(v) * inverse) as f32))
        })
        .collect();
    debug_assert_eq!(scales.len(), rows * blocks);
    MxMatrix {
        rows,
        cols,
        elements,
        scales,
    }
}

// ---------------------------------------------------------------------------------------------
// Scale layouts
// ---------------------------------------------------------------------------------------------

/// Rows of one tile of the blocked layout, and scale blocks (columns) of one tile.
pub const TILE_ROWS: usize = 128;
pub const TILE_COLS: usize = 4;
/// Bytes of one tile: 128 × 4, contiguous.
pub const TILE_BYTES: usize = TILE_ROWS * TILE_COLS;

/// Bytes of the blocked layout of a `rows`×`blocks` scale matrix: padded to 128 rows × 4 blocks.
pub fn blocked_len(rows: usize, blocks: usize) -> usize {
    rows.next_multiple_of(TILE_ROWS) * blocks.next_multiple_of(TILE_COLS)
}

/// Where scale (r, c) of a matrix with `blocks` scales per row lives in the blocked layout: tile
/// `(r/128)·⌈blocks/4⌉ + c/4` (512 bytes each, in that order), and inside the tile byte
/// `(r%32)·16 + ((r%128)/32)·4 + c%4`: the ((32,4),4) layout `tcgen05.cp … 32x128b.warpx4` copies.
pub fn blocked_offset(r: usize, c: usize, blocks: usize) -> usize {
    let col_tiles = blocks.div_ceil(TILE_COLS);
    let tile = (r / TILE_ROWS) * col_tiles + c / TILE_COLS;
    let within = r % TILE_ROWS;
    tile * TILE_BYTES + (within % 32) * 16 + (within / 32) * 4 + c % TILE_COLS
}

/// Row-major `SF[rows][blocks]` → the blocked layout; the padding is byte 0 (never read for an
/// element of the matrix).
pub fn to_blocked(scales: &[u8], rows: usize, blocks: usize) -> Vec<u8> {
    assert_eq!(scales.len(), rows * blocks, "{rows}×{blocks} scales");
    let mut out = vec![0u8; blocked_len(rows, blocks)];
    for r in 0..rows {
        for c in 0..blocks {
            out[blocked_offset(r, c, blocks)] = scales[r * blocks + c];
        }
    }
    out
}

/// The blocked layout → row-major `SF[rows][blocks]` (the padding dropped).
pub fn from_blocked(blocked: &[u8], rows: usize, blocks: usize) -> Vec<u8> {
    assert_eq!(
        blocked.len(),
        blocked_len(rows, blocks),
        "blocked layout of {rows}×{blocks}"
    );
    let mut out = Vec::with_capacity(rows * blocks);
    for r in 0..rows {
        for c in 0..blocks {
            out.push(blocked[blocked_offset(r, c, blocks)]);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The reference GEMM
// ---------------------------------------------------------------------------------------------

/// `C = A·Bᵀ` for MX `A` (M×K) and `B` (N×K) in f64: all of it when `M·N·K <=
/// FULL_REFERENCE_MACS`, otherwise at [`sample_positions`] (as [`crate::check::verify::cpu_reference`]).
///
/// Per element, `Σ_b 2^(sa−127)·2^(sb−127) · Σ_{j<32} e4m3(a)·e4m3(b)`: each product of two e4m3
/// values (4 significant bits each) and each block's sum of 32 of them are exact in f64, the
/// scaling is a power of two; only the sum over K/32 blocks rounds, relatively by at most
/// `(K/32)·2^−53`. A NaN scale or element makes the element NaN, as the MX semantics say.
pub fn reference(a: &MxMatrix, b: &MxMatrix) -> Reference {
    let shape = Shape::new(a.rows, b.rows, a.cols);
    assert_eq!(a.cols, b.cols, "A and B must have the same K");
    if (shape.m as u64) * (shape.n as u64) * (shape.k as u64) <= FULL_REFERENCE_MACS {
        Reference::F64(values_at(a, b, &all_positions(shape)))
    } else {
        let positions = sample_positions(shape);
        let values = values_at(a, b, &positions);
        Reference::Sampled { positions, values }
    }
}

/// Every (row, column) of C, row-major.
fn all_positions(shape: Shape) -> Vec<(usize, usize)> {
    (0..shape.m).flat_map(|i| (0..shape.n).map(move |j| (i, j))).collect()
}

/// The exact product at `positions`.
fn values_at(a: &MxMatrix, b: &MxMatrix, positions: &[(usize, usize)]) -> Vec<f64> {
    let table: Vec<f64> = (0..=255u8).map(|x| f64::from(e4m3_to_f32(x))).collect();
    let blocks = a.blocks();
    let k = a.cols;
    positions
        .par_iter()
        .map(|&(i, j)| {
            let (ra, rb) = (&a.elements[i * k..(i + 1) * k], &b.elements[j * k..(j + 1) * k]);
            let mut sum = 0.0;
            for blk in 0..blocks {
                let scale = e8m0_to_f64(a.scales[i * blocks + blk]) * e8m0_to_f64(b.scales[j * blocks + blk]);
                let range = blk * BLOCK..(blk + 1) * BLOCK;
                let dot: f64 = ra[range.clone()]
                    .iter()
                    .zip(&rb[range])
                    .map(|(&x, &y)| table[x as usize] * table[y as usize])
                    .sum();
                sum += scale * dot;
            }
            sum
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Step 11's inputs
// ---------------------------------------------------------------------------------------------

/// The largest power-of-two spread (either way) put on a block before quantizing: see [`MxInputs`].
pub const SPREAD: i32 = 4;

/// Step 11's inputs: the bf16 inputs every step draws ([`Inputs::generate`], uniform in [−1, 1]),
/// each 1×32 block multiplied by its own power of two 2^s, s in −4 ..= 4 drawn from the seed, then
/// quantized on the CPU with [`quantize`]; and the exactly dequantized operands as bf16.
///
/// Why the spread: 32 values uniform in [−1, 1] have their largest magnitude in [0.5, 1) all but
/// always (the chance of all 32 below 0.5 is 2^−32), so FLOOR would give every block the same scale
/// byte (118; 119 for a block holding ±1 exactly) and a kernel that ignored the scales, or read one
/// from the wrong block, would pass. With the spread, scale bytes run over 114 ..= 123 and a wrong scale changes a block's
/// contribution by a power of two. Every value stays exact in bf16: the smallest nonzero element is
/// the e4m3 subnormal 2^−9 times a scale of at least 2^(−1−4−8), i.e. 2^−22 or more, far inside
/// bf16's normal range (checked when the inputs are made).
pub struct MxInputs {
    pub shape: Shape,
    pub a: MxMatrix,
    pub b: MxMatrix,
    /// `A` and `B` dequantized, exactly, as bf16: what step 10 and cuBLAS bf16 run on.
    pub a_bf16: Vec<bf16>,
    pub b_bf16: Vec<bf16>,
}

impl MxInputs {
    /// From the bf16 inputs of a run (`K` a multiple of 32). Panics if a dequantized value were not
    /// exact in bf16, which the spread rules out (tested).
    pub fn from_inputs(inputs: &Inputs) -> MxInputs {
        let shape = inputs.shape;
        let spread = |values: &[bf16], operand: u64| -> Vec<f32> {
            values
                .par_chunks(BLOCK)
                .enumerate()
                .flat_map_iter(|(blk, block)| {
                    let r =
                        splitmix(inputs.seed ^ splitmix(operand) ^ (blk as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
                    let s = (r % (2 * SPREAD as u64 + 1)) as i32 - SPREAD;
                    let factor = 2f32.powi(s);
                    block.iter().map(move |v| v.to_f32() * factor)
                })
                .collect()
        };
        let a = quantize(&spread(&inputs.a, 0xA), shape.m, shape.k);
        let b = quantize(&spread(&inputs.b, 0xB), shape.n, shape.k);
        let exact = |m: &MxMatrix, name: &str| {
            m.dequantize_bf16()
                .unwrap_or_else(|why| panic!("MX operand {name}: {why}"))
        };
        MxInputs {
            shape,
            a_bf16: exact(&a, "A"),
            b_bf16: exact(&b, "B"),
            a,
            b,
        }
    }

    /// `A`'s scales in the blocked layout, as uploaded.
    pub fn a_scales_blocked(&self) -> Vec<u8> {
        to_blocked(&self.a.scales, self.a.rows, self.a.blocks())
    }

    /// `B`'s scales in the blocked layout, as uploaded.
    pub fn b_scales_blocked(&self) -> Vec<u8> {
        to_blocked(&self.b.scales, self.b.rows, self.b.blocks())
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e8m0_is_a_bare_biased_exponent_with_no_zero() {
        assert_eq!(e8m0_to_f64(127), 1.0);
        assert_eq!(e8m0_to_f64(128), 2.0);
        assert_eq!(e8m0_to_f64(118), 2f64.powi(-9));
        assert_eq!(e8m0_to_f64(0), 2f64.powi(-127)); // not zero
        assert_eq!(e8m0_to_f64(254), 2f64.powi(127));
        assert!(e8m0_to_f64(255).is_nan());
        assert_eq!(e8m0_from_exponent(0), Some(127));
        assert_eq!(e8m0_from_exponent(-127), Some(0));
        assert_eq!(e8m0_from_exponent(127), Some(254));
        assert_eq!(e8m0_from_exponent(128), None);
        assert_eq!(e8m0_from_exponent(-128), None);
        // fp32 bits of the scale are `byte << 23` for bytes 1 ..= 254 (the kernels' trick), and that
        // trick is wrong exactly at 0 and 255.
        for byte in 1..=254u8 {
            assert_eq!(f64::from(f32::from_bits(u32::from(byte) << 23)), e8m0_to_f64(byte));
        }
        assert_ne!(f64::from(f32::from_bits(0)), e8m0_to_f64(0));
    }

    #[test]
    fn e4m3_decodes_the_ocp_table() {
        assert_eq!(e4m3_to_f32(0x00), 0.0);
        assert!(e4m3_to_f32(0x80) == 0.0 && e4m3_to_f32(0x80).is_sign_negative());
        assert_eq!(e4m3_to_f32(0x38), 1.0); // 0.0111.000
        assert_eq!(e4m3_to_f32(0x40), 2.0);
        assert_eq!(e4m3_to_f32(0x3C), 1.5);
        assert_eq!(e4m3_to_f32(0xB8), -1.0);
        assert_eq!(e4m3_to_f32(0x7E), 448.0); // S.1111.110, the largest
        assert_eq!(e4m3_to_f32(0xFE), -448.0);
        assert_eq!(e4m3_to_f32(0x78), 256.0);
        assert_eq!(e4m3_to_f32(0x08), 2f32.powi(-6)); // smallest normal
        assert_eq!(e4m3_to_f32(0x01), 2f32.powi(-9)); // smallest subnormal
        assert_eq!(e4m3_to_f32(0x07), 7.0 * 2f32.powi(-9)); // largest subnormal
        assert!(e4m3_to_f32(0x7F).is_nan() && e4m3_to_f32(0xFF).is_nan());
        // No infinity: every other byte is finite, and 126 distinct positive finite values + 0.
        let finite: Vec<f32> = (0..=0x7Eu8).map(e4m3_to_f32).collect();
        assert!(finite.iter().all(|v| v.is_finite()));
        assert!(finite.windows(2).all(|w| w[0] < w[1]), "codes are ordered by value");
    }

    #[test]
    fn e4m3_encoding_round_trips_every_byte() {
        for byte in 0..=255u8 {
            let v = e4m3_to_f32(byte);
            if v.is_nan() {
                assert_eq!(e4m3_from_f32(v) & 0x7F, E4M3_NAN);
            } else {
                assert_eq!(e4m3_from_f32(v), byte, "{byte:#04x} = {v}");
            }
        }
    }

    #[test]
    fn e4m3_rounds_to_nearest_even_and_saturates() {
        // Between 1 (0x38, even) and 1.125 (0x39, odd): the tie goes to 1; just above it, up.
        assert_eq!(e4m3_from_f32(1.0625), 0x38);
        assert_eq!(e4m3_from_f32(1.0625 + 1e-6), 0x39);
        // Between 1.125 (odd) and 1.25 (0x3A, even): the tie goes to 1.25.
        assert_eq!(e4m3_from_f32(1.1875), 0x3A);
        // Carry into the next binade: 1.9375 is the tie between 1.875 (0x3F, odd) and 2 (0x40).
        assert_eq!(e4m3_from_f32(1.9375), 0x40);
        // Subnormal ties: 0.5·2^−9 goes to 0 (even), 1.5·2^−9 to 2·2^−9, 2.5·2^−9 to 2·2^−9.
        assert_eq!(e4m3_from_f32(0.5 * 2f32.powi(-9)), 0x00);
        assert_eq!(e4m3_from_f32(1.5 * 2f32.powi(-9)), 0x02);
        assert_eq!(e4m3_from_f32(2.5 * 2f32.powi(-9)), 0x02);
        assert_eq!(e4m3_from_f32(3.0 * 2f32.powi(-9)), 0x03);
        // The largest subnormal rounds up into the smallest normal at 7.5·2^−9 (tie, to even 8).
        assert_eq!(e4m3_from_f32(7.5 * 2f32.powi(-9)), 0x08);
        assert_eq!(e4m3_from_f32(-3.0 * 2f32.powi(-9)), 0x83);
        // Tiny values flush to a signed zero.
        assert_eq!(e4m3_from_f32(1e-10), 0x00);
        assert_eq!(e4m3_from_f32(-1e-10), 0x80);
        // Saturation: 448 and above (infinity too) become ±448; 464 would round to 480, which is NaN's code.
        for x in [448.0, 449.0, 464.0, 479.0, 1e6, f32::INFINITY] {
            assert_eq!(e4m3_from_f32(x), 0x7E, "{x}");
            assert_eq!(e4m3_from_f32(-x), 0xFE, "-{x}");
        }
        // Just below 448: 440 (0x7E − 0.5 ulp, tie between 416 = 0x7D (odd) and 448 (even)).
        assert_eq!(e4m3_from_f32(432.0), 0x7E);
        assert_eq!(e4m3_from_f32(431.0), 0x7D);
        assert_eq!(e4m3_from_f32(f32::NAN), 0x7F);
    }

    #[test]
    fn floor_recipe_picks_the_scale_from_amax() {
        // amax in [256, 512): exponent 0, byte 127.
        let mut block = [1.0f32; 32];
        block[5] = 300.0;
        assert_eq!(block_scale(&block), 127);
        // amax = 1: floor(log2 1) − 8 = −8, byte 119; amax just below 1: −9, byte 118.
        block[5] = 1.0;
        assert_eq!(block_scale(&block), 119);
        assert_eq!(block_scale(&[0.99f32; 32]), 118);
        // An all-zero block: byte 0 (2^−127), and its elements are zeros.
        assert_eq!(block_scale(&[0.0f32; 32]), 0);
        let q = quantize(&[0.0f32; 32], 1, 32);
        assert_eq!((q.scales[0], q.elements.iter().all(|&e| e == 0)), (0, true));
        // Clamped at the bottom: amax = 2^−130 would want exponent −138.
        let tiny = [f32::from_bits(1 << 19); 32]; // 2^−130, an f32 subnormal
        assert_eq!(block_scale(&tiny), 0);
        // The largest f32 wants exponent 127 − 8 = 119: byte 246; never above 254.
        assert_eq!(block_scale(&[f32::MAX; 32]), 246);
        // NaN or infinity anywhere: the block's scale is NaN.
        let mut bad = [1.0f32; 32];
        bad[31] = f32::NAN;
        assert_eq!(block_scale(&bad), 255);
        bad[31] = f32::NEG_INFINITY;
        assert_eq!(block_scale(&bad), 255);
    }

    #[test]
    fn one_outlier_sets_the_scale_and_small_values_underflow() {
        // The point of "MXFP8 GEMM: Up to 99% of cuBLAS": an outlier scales its whole block down, and small values lose their bits.
        let mut block = [0.001f32; 32];
        block[0] = 600.0; // floor(log2 600) = 9: exponent 1, scale 2
        let q = quantize(&block, 1, 32);
        assert_eq!(q.scales[0], 128);
        assert_eq!(q.value(0, 0), 576.0); // 300 → 288 (spacing 32 above 256), times 2
                                          // 0.001 / 2 = 0.0005 < 2^−10 (half the smallest subnormal): flushed to zero.
        assert!(q.elements[1..].iter().all(|&e| e == 0));
        // FLOOR's quirk: amax/2^e lies in [256, 512), so 500 in a block saturates to 448.
        let mut block = [1.0f32; 32];
        block[0] = 500.0;
        let q = quantize(&block, 1, 32);
        assert_eq!((q.scales[0], q.elements[0]), (127, 0x7E));
        assert_eq!(q.value(0, 0), 448.0);
    }

    #[test]
    fn quantize_then_dequantize_is_within_half_an_e4m3_ulp() {
        let inputs = Inputs::generate(Shape::new(8, 8, 256), 3);
        let values: Vec<f32> = inputs.a.iter().map(|v| v.to_f32()).collect();
        let q = quantize(&values, 8, 256);
        for (i, &v) in values.iter().enumerate() {
            let d = q.value(i / 256, i % 256);
            let scale = e8m0_to_f64(q.scales[i / BLOCK]);
            let scaled = f64::from(v) / scale;
            // Spacing of e4m3 at |scaled|: 2^(floor(log2)−3), 2^−9 below the normals; saturation at 448.
            let spacing = if scaled.abs() < 2f64.powi(-6) {
                2f64.powi(-9)
            } else {
                2f64.powi(floor_log2(scaled.abs()) - 3)
            };
            let allowed = if scaled.abs() > 448.0 {
                scaled.abs() - 448.0
            } else {
                spacing / 2.0
            };
            assert!((d / scale - scaled).abs() <= allowed, "{v} → {d}");
        }
    }

    #[test]
    fn blocked_layout_matches_the_formula_and_round_trips() {
        // As in the MXFP8 text: inside a tile, offset = (row % 32)·16 + (row / 32)·4 + col.
        assert_eq!(blocked_offset(0, 0, 4), 0);
        assert_eq!(blocked_offset(1, 0, 4), 16);
        assert_eq!(blocked_offset(31, 3, 4), 31 * 16 + 3);
        assert_eq!(blocked_offset(32, 0, 4), 4);
        assert_eq!(blocked_offset(127, 3, 4), 511);
        // Tiles: row_block · n_col_blocks + col_block, 512 bytes each.
        assert_eq!(blocked_offset(0, 4, 8), 512);
        assert_eq!(blocked_offset(128, 0, 8), 2 * 512);
        assert_eq!(blocked_offset(130, 5, 8), 3 * 512 + 2 * 16 + 1);
        // K/32 = 6 blocks: padded to 8, two column tiles per row tile.
        assert_eq!(blocked_offset(128, 0, 6), 2 * 512);
        // Sizes: padded to 128 rows × 4 blocks.
        assert_eq!(blocked_len(1, 1), 512);
        assert_eq!(blocked_len(129, 5), 256 * 8);
        assert_eq!(blocked_len(4096, 128), 4096 * 128);
        // Every position maps to a distinct byte, and to/from are inverse, for ragged shapes.
        for (rows, blocks) in [(1, 1), (33, 3), (128, 4), (200, 9), (257, 130)] {
            let scales: Vec<u8> = (0..rows * blocks).map(|i| (i * 7 % 251) as u8 + 1).collect();
            let blocked = to_blocked(&scales, rows, blocks);
            assert_eq!(blocked.len(), blocked_len(rows, blocks));
            assert_eq!(
                blocked.iter().filter(|&&b| b != 0).count(),
                rows * blocks,
                "no collisions"
            );
            assert_eq!(from_blocked(&blocked, rows, blocks), scales);
        }
        // One row's four scales of a 128-K stage are 4 contiguous bytes (one 32-bit load).
        let base = blocked_offset(77, 8, 16);
        assert_eq!(
            (1..4).map(|c| blocked_offset(77, 8 + c, 16) - base).collect::<Vec<_>>(),
            [1, 2, 3]
        );
    }

    #[test]
    fn the_reference_is_exact_against_the_dequantized_operands() {
        let shape = Shape::new(37, 29, 96);
        let mx = MxInputs::from_inputs(&Inputs::generate(shape, 11));
        let Reference::F64(direct) = reference(&mx.a, &mx.b) else {
            panic!("a small shape gets the full reference")
        };
        let Reference::F64(via_bf16) = crate::check::verify::cpu_reference(&mx.a_bf16, &mx.b_bf16, shape) else {
            panic!("full")
        };
        for (x, y) in direct.iter().zip(&via_bf16) {
            assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0), "{x} vs {y}");
        }
        // A NaN scale poisons its row of C, and only it.
        let mut a = mx.a.clone();
        let blocks = a.blocks();
        a.scales[3 * blocks + 1] = E8M0_NAN;
        let Reference::F64(c) = reference(&a, &mx.b) else {
            panic!()
        };
        assert!(c[3 * 29..4 * 29].iter().all(|v| v.is_nan()));
        assert!(c[..3 * 29].iter().chain(&c[4 * 29..]).all(|v| v.is_finite()));
        // Scale bytes 0 and 254: 2^−127 and 2^127 multiply exactly in f64.
        let one = MxMatrix {
            rows: 1,
            cols: 32,
            elements: vec![0x38; 32],
            scales: vec![0],
        };
        let big = MxMatrix {
            scales: vec![254],
            ..one.clone()
        };
        let Reference::F64(c) = reference(&one, &big) else {
            panic!()
        };
        assert_eq!(c, [32.0]);
        // Above the full-reference limit, the sampled positions of verify.
        let large = Shape::new(1024, 1024, 256);
        let a = MxMatrix {
            rows: 1024,
            cols: 256,
            elements: vec![0x38; 1024 * 256],
            scales: vec![127; 1024 * 8],
        };
        let Reference::Sampled { positions, values } = reference(&a, &a) else {
            panic!("sampled")
        };
        assert_eq!(positions, sample_positions(large));
        assert!(values.iter().all(|&v| v == 256.0));
    }

    #[test]
    fn step_11_inputs_spread_their_scales_and_dequantize_exactly_to_bf16() {
        let shape = Shape::new(64, 48, 512);
        let inputs = Inputs::generate(shape, 5);
        let mx = MxInputs::from_inputs(&inputs);
        // amax in [0.5, 1) gives 118, exactly 1 (bf16 rounding reaches it) 119; then the spread.
        let (lo, hi) = (118 - SPREAD as u8, 119 + SPREAD as u8);
        assert!(mx.a.scales.iter().chain(&mx.b.scales).all(|&s| (lo..=hi).contains(&s)));
        let distinct: std::collections::BTreeSet<u8> = mx.a.scales.iter().copied().collect();
        assert!(distinct.len() > 2 * SPREAD as usize, "{distinct:?}");
        // Exact: the bf16 copies are the MX values.
        for (i, v) in mx.a_bf16.iter().enumerate() {
            assert_eq!(v.to_f64(), mx.a.value(i / shape.k, i % shape.k));
        }
        // Reproducible from the seed; the blocked copies hold the same scales.
        assert_eq!(MxInputs::from_inputs(&inputs).a, mx.a);
        assert_eq!(from_blocked(&mx.b_scales_blocked(), shape.n, shape.k / 32), mx.b.scales);
        // The extreme of the window stays exact: the smallest subnormal at the smallest scale.
        let worst = MxMatrix {
            rows: 1,
            cols: 32,
            elements: vec![0x01; 32],
            scales: vec![lo],
        };
        assert!(worst.dequantize_bf16().is_ok());
        // ...which is not so at byte 0: 2^−9 · 2^−127 is below bf16's smallest subnormal step.
        let beyond = MxMatrix {
            scales: vec![0],
            ..worst
        };
        assert!(beyond.dequantize_bf16().is_err());
    }
}
