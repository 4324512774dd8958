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

// 2^(s − 127) as an fp32: the factor design (a) promotes with (sm90_promote.cu), and, its upper half,
// the wide path's bf16 factor below. fp32 has bf16's exponent field, so the bits are s << 23 for
// s = 1 .. 254; s = 0 is 2^−127, an fp32 subnormal (0x00400000); s = 255 is NaN.
__device__ __forceinline__ float e8m0_to_f32(u32 s) {
    return __uint_as_float(s == 0 ? 0x00400000u : (s == 255 ? 0x7FC00000u : s << 23));
}

// (mul.bf16x2 is sm_90's; on sm_80, where only the dequantize baseline runs, a fused multiply-add
// with −0 as the addend gives the same bits, signed zeros included.)
__device__ __forceinline__ u32 bf16x2_mul(u32 a, u32 b) {
    u32 d;
#if __CUDA_ARCH__ >= 900
    asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
#endif
    return d;
}

// ANCHOR: place
// Four e4m3 bytes (byte 0 lowest) as two bf16 pairs, each value times 2^−120, with integer operations
// only: `even` = (byte 0, byte 2), `odd` = (byte 1, byte 3), the lower byte in the lower half. The
// conversion instruction (cvt … e4m3x2) gives f16, not bf16, and would need more work after it;
// placing the bits is three instructions per pair:
//   e4m3 s eeee mmm  (bias 7)  ->  bf16 s 0000eeee mmm0000  (bias 127)
// The byte permute copies each byte to the bottom of a 16-bit lane and fills the lane's top byte with
// copies of its sign (selector nibbles with bit 3 set replicate the byte's sign); shifting left by 4
// puts the sign at bit 15 and eeee mmm at bits 10..4, and the mask clears the sign's other copies (and
// what the shift carried over from the lower lane). The bits read as the same number times
// 2^(7 − 127) = 2^−120, for normal and subnormal e4m3 alike (an e4m3 subnormal lands on a bf16
// subnormal with the same mantissa) and for zero. NaN bytes (0x7F, 0xFF) are not special-cased: the
// quantizer saturates and never makes them.
__device__ __forceinline__ u32 e4m3x2_place(u32 four, u32 selector) {
    u32 lanes;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(lanes) : "r"(four), "r"(selector));
    return (lanes << 4) & 0x87F087F0u;
}
__device__ __forceinline__ void e4m3x4_place(u32 four, u32& even, u32& odd) {
    even = e4m3x2_place(four, 0xA280u);  // lanes: [sign(b2) b2 | sign(b0) b0]
    odd = e4m3x2_place(four, 0xB391u);   // lanes: [sign(b3) b3 | sign(b1) b1]
}
// ANCHOR_END: place

// ANCHOR: scale
// What a block's placed elements are multiplied by to become e4m3 · 2^(s − 127), for its scale byte s.
// Narrow scales (s ≤ 134, a block whose largest element is below 2^16: all ordinary data) take one
// multiplication, by 2^(s − 127) · 2^120 = 2^(s − 7) as a bf16 pair: its exponent field s + 120 is a
// normal bf16's, and one integer multiply-add writes it into both halves. A wider scale would overflow
// that factor; such a block takes two multiplications, by 2^120 and then by 2^(s − 127), as a bf16
// pair: s << 7 for s = 1 .. 254 (bf16's exponent field is e8m0 itself), 0x0040 for s = 0 (2^−127 is a
// bf16 subnormal), a NaN for s = 255, so that a NaN scale poisons its block as the format says. Each
// result is exact whenever the element's MX value lies in bf16's range, since it has at most 4
// significant bits.
__device__ __forceinline__ u32 narrow_scale_bf16x2(u32 s) { return s * 0x00800080u + 0x3C003C00u; }

__device__ __forceinline__ u32 wide_scale_bf16x2(u32 s) {
    const u32 bits = __float_as_uint(e8m0_to_f32(s)) >> 16;  // a bf16 is an fp32's upper half
    return bits | (bits << 16);
}

constexpr u32 NARROW_SCALE_MAX = 134;

// `wide` is meant to be known where these are inlined (a kernel calls its converter once with true and
// once with false), so that each path compiles without a branch.
__device__ __forceinline__ u32 scale_bf16x2(u32 s, bool wide) {
    return wide ? wide_scale_bf16x2(s) : narrow_scale_bf16x2(s);
}

// A placed pair times its block's factor (from scale_bf16x2): the pair's MX values.
__device__ __forceinline__ u32 apply_scale(u32 placed, u32 factor, bool wide) {
    const u32 two_to_120 = 0x7B807B80u;  // exponent field 247 in both halves
    return wide ? bf16x2_mul(bf16x2_mul(placed, two_to_120), factor) : bf16x2_mul(placed, factor);
}

// ANCHOR_END: scale

// ANCHOR: convert
// Four e4m3 bytes of one block as two bf16 pairs of MX values: (byte 0, byte 2) and (byte 1, byte 3).
__device__ __forceinline__ void e4m3x4_to_bf16x4(u32 four, u32 factor, bool wide, u32& even, u32& odd) {
    e4m3x4_place(four, even, odd);
    even = apply_scale(even, factor, wide);
    odd = apply_scale(odd, factor, wide);
}
// ANCHOR_END: convert

// ANCHOR: convert_b_half
// One half of a 16-element slice of B's K, for step 11's bf16 copy of B: the slice's 16 e4m3 bytes in,
// 8 bf16 MX values out (block scale s folded in). `odd` 0 gives the even bytes of its four words, 1
// the odd bytes: the order in which the A fragments take K (sm90.cu's header), so that the MMAs pair
// every k of A with the same k of B.
__device__ __forceinline__ uint4 e4m3x16_half_to_bf16x8(uint4 in, u32 s, int odd) {
    const bool wide = s > NARROW_SCALE_MAX;
    const u32 factor = scale_bf16x2(s, wide);
    const u32 words[4] = {in.x, in.y, in.z, in.w};
    const u32 selector = odd ? 0xB391u : 0xA280u;  // e4m3x4_place's two halves
    u32 pairs[4];
    #pragma unroll
    for (int i = 0; i < 4; ++i) pairs[i] = apply_scale(e4m3x2_place(words[i], selector), factor, wide);
    return make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
}
// ANCHOR_END: convert_b_half

// ANCHOR: blocked_scale
// Where a scale byte lies in the blocked layout (shared/check/mx.rs): tiles of 128 rows × 4 blocks of
// 32 elements, 512 bytes each, row-tile major; inside a tile, row r's four bytes form one word at
// (r % 32)·16 + (r / 32)·4, block 0 in the lowest byte.
__device__ __forceinline__ u32 scale_offset(int row_in_tile) {
    return (row_in_tile % 32) * 16 + (row_in_tile / 32) * 4;
}
// The byte of row `row`'s scale for its 32-element block `block`, in a matrix of K elements a row.
__device__ __forceinline__ i64 blocked_scale_offset(int row, int block, int K) {
    return (static_cast<i64>(row / 128) * ((K / 32 + 3) / 4) + block / 4) * 512 + scale_offset(row % 128) + block % 4;
}
// ANCHOR_END: blocked_scale

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
