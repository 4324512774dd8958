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

// 2^(s − 127) as an fp32. Bits s << 23 give it for s = 1 .. 254; s = 0 is 2^−127, an fp32 subnormal;
// s = 255 is NaN, so the whole block becomes NaN, as the format says.
__device__ __forceinline__ float e8m0_to_float(u32 s) {
    if (s == 0) return __uint_as_float(0x00400000u);
    if (s == 255) return __uint_as_float(0x7FC00000u);
    return __uint_as_float(s << 23);
}

// ANCHOR: convert
// Four e4m3 bytes (byte 0 lowest) times `scale`, as two bf16 pairs: `low` = (byte 0, byte 1), `high` =
// (byte 2, byte 3), the element at the lower address in the lower half. `cvt.rn.f16x2.e4m3x2` widens two
// e4m3 to two f16 exactly (f16 holds every e4m3, subnormals included); f16 -> fp32 is exact; the scale
// is a power of two, so the product is exact; and the final rounding to bf16 changes nothing because
// the value has at most 4 significant bits.
__device__ __forceinline__ void e4m3x4_to_bf16x4(u32 four, float scale, u32& low, u32& high) {
    u32 h01, h23;
    asm("{\n"
        ".reg .b16 lo, hi;\n"
        "mov.b32 {lo, hi}, %2;\n"
        "cvt.rn.f16x2.e4m3x2 %0, lo;\n"
        "cvt.rn.f16x2.e4m3x2 %1, hi;\n"
        "}\n"
        : "=r"(h01), "=r"(h23)
        : "r"(four));
    float f0, f1, f2, f3;
    asm("{\n"
        ".reg .b16 a, b, c, d;\n"
        "mov.b32 {a, b}, %4;\n"
        "mov.b32 {c, d}, %5;\n"
        "cvt.f32.f16 %0, a;\n"
        "cvt.f32.f16 %1, b;\n"
        "cvt.f32.f16 %2, c;\n"
        "cvt.f32.f16 %3, d;\n"
        "}\n"
        : "=f"(f0), "=f"(f1), "=f"(f2), "=f"(f3)
        : "r"(h01), "r"(h23));
    low = pack_bf16x2(f0 * scale, f1 * scale);
    high = pack_bf16x2(f2 * scale, f3 * scale);
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
