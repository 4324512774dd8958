// mx.cuh: MXFP8 on a GPU without block-scaled MMA (sm_90a): e8m0 scales, e4m3 elements, and the
// conversion of a block's elements to bf16 with its scale folded in.
//
// An MXFP8 element is an e4m3 byte (sign, 4 exponent bits with bias 7, 3 mantissa bits; ±448 at most,
// no infinity) and every 32 consecutive elements along K share one e8m0 scale byte s, worth 2^(s − 127)
// (255 is NaN; there is no zero). The value is e4m3 · 2^(s − 127). Both factors are powers of two
// times at most 4 significant bits, so the product is exactly a bf16 (8 significant bits, the same
// exponent range as fp32) whenever it lies in bf16's normal range, which every block the quantizer
// makes from ordinary data does. So a bf16 MMA on converted elements computes exactly the MX products;
// only the order of the fp32 sums is ours.
#pragma once
#include "common.cuh"

// 2^(s − 127) as a pair of bf16, the form the conversion below multiplies by. A bf16 has fp32's 8
// exponent bits and bias, so for s = 1 .. 254 the bits are s << 7; s = 0 is 2^−127, a bf16 subnormal
// (0x0040); s = 255 is NaN, so the whole block becomes NaN, as the format says.
__device__ __forceinline__ u32 e8m0_to_bf16x2(u32 s) {
    const u32 bits = s == 0 ? 0x0040u : (s == 255 ? 0x7FC0u : s << 7);
    return bits | (bits << 16);
}

// 2^(s − 127) as an fp32, the factor design (a) promotes with (sm90_promote.cu): fp32 has bf16's
// exponent field, so the bits are s << 23 for s = 1 .. 254; s = 0 is 2^−127, an fp32 subnormal
// (0x00400000); s = 255 is NaN.
__device__ __forceinline__ float e8m0_to_f32(u32 s) {
    return __uint_as_float(s == 0 ? 0x00400000u : (s == 255 ? 0x7FC00000u : s << 23));
}

__device__ __forceinline__ u32 bf16x2_mul(u32 a, u32 b) {
    u32 d;
    asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}

// ANCHOR: convert
// Four e4m3 bytes (byte 0 lowest) times the block's scale (`scale`, from e8m0_to_bf16x2), as two bf16
// pairs: `low` = (byte 0, byte 1), `high` = (byte 2, byte 3), the element at the lower address in the
// lower half. No conversion instruction is used: the conversion units would be the bottleneck (one per
// element, at a quarter of the FMA rate). Instead, integer operations place each byte's bits where a
// bf16 keeps them:
//   e4m3 s eeee mmm  (bias 7)  ->  bf16 s 0000eeee mmm0000  (bias 127)
// which is the same number times 2^(7 − 127) = 2^−120, for normal and subnormal e4m3 alike (an e4m3
// subnormal lands on a bf16 subnormal with the same mantissa) and for zero. Two exact bf16
// multiplications, by 2^120 and by the scale, give the element's MX value: a power of two times at most
// 4 significant bits, exact in bf16 whenever it lies in bf16's range.
__device__ __forceinline__ void e4m3x4_to_bf16x4(u32 four, u32 scale, u32& low, u32& high) {
    const u32 two_to_120 = 0x7B807B80u;  // 2^120 in both halves: exponent field 247
    // Each byte into the upper half of its 16-bit lane: [b1 << 8 | b0 << 8], [b3 << 8 | b2 << 8].
    const u32 lanes[2] = {__byte_perm(four, 0, 0x1404), __byte_perm(four, 0, 0x3424)};
    u32 out[2];
    #pragma unroll
    for (int i = 0; i < 2; ++i) {
        // Sign stays at bit 15; the other 7 bits move down by 4 (the mask drops the sign's copy).
        const u32 bits = (lanes[i] & 0x80008000u) | ((lanes[i] >> 4) & 0x07F007F0u);
        out[i] = bf16x2_mul(bf16x2_mul(bits, two_to_120), scale);
    }
    low = out[0];
    high = out[1];
}
// ANCHOR_END: convert

// `ldmatrix` (the inverse of stmatrix, stmatrix.cuh) on bytes: four 8×8 matrices of 16-bit values, each
// lane naming one row of 16 bytes (lane l: row l % 8 of matrix l / 8), each thread receiving, per matrix,
// the 32-bit word at row lane / 4, bytes 4·(lane % 4) .. + 3. Read as e4m3 bytes, a matrix is 8 rows × 16
// elements and a thread gets four consecutive elements of one row.
__device__ __forceinline__ void ldmatrix_x4(u32 row_address, u32& r0, u32& r1, u32& r2, u32& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(row_address));
}

// Byte offset of the 16-byte chunk `chunk` (0 .. 3) of row `row` in a tile of 64-byte rows laid out with
// the TMA's 64-byte swizzle: chunk c of row r lands at chunk c ^ ((r / 2) % 4). The tile must start
// 512-byte aligned. Eight consecutive rows' chunk c then cover all 32 banks once.
__device__ __forceinline__ u32 swizzle_64b_offset(u32 row, u32 chunk) {
    return row * 64 + ((chunk ^ ((row >> 1) & 3)) * 16);
}
