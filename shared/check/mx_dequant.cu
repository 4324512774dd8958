// MXFP8 → bf16, one pass over one operand: the first half of step 11's "dequantize, then cuBLAS
// bf16" baseline (shared/run/session.rs times this kernel for A and B plus cuBLAS as one contender).
//
// In: `q`, rows×K e4m3 bytes (row-major, K a multiple of 32); `scales`, one e8m0 byte per 1×32 block
// in the blocked layout of shared/check/mx.rs. Out: rows×K bf16, every element e4m3 × 2^(byte−127), exact
// for the scale window step 11's inputs use (e4m3 has 3 mantissa bits, bf16 7).
#include "common.cuh"

// An e4m3 byte's value: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent field 0 is subnormal
// (m · 2^-9); S.1111.111 is NaN; no infinity. A normal value (1 + m/8) · 2^(e-7) is the fp32 with
// exponent field e - 7 + 127 = e + 120 and m in the top three mantissa bits.
__device__ __forceinline__ float e4m3_value(u32 byte) {
    const u32 e = (byte >> 3) & 0xF, m = byte & 0x7;
    float magnitude = e == 0 ? static_cast<float>(m) * 0.001953125f : __uint_as_float(((e + 120) << 23) | (m << 20));
    if (e == 0xF && m == 0x7) magnitude = __uint_as_float(0x7fc00000u);
    return (byte & 0x80) ? -magnitude : magnitude;
}

// An e8m0 byte's value: 2^(byte-127) is the fp32 with that exponent field, except byte 0 (2^-127, an
// fp32 subnormal, not zero) and byte 255 (NaN).
__device__ __forceinline__ float e8m0_value(u32 byte) {
    if (byte == 0) return __uint_as_float(0x00400000u);
    if (byte == 255) return __uint_as_float(0x7fc00000u);
    return __uint_as_float(byte << 23);
}

// One thread converts 16 bytes of one row (half a scale block): one 16-byte load, two 16-byte stores.
extern "C" __global__ void mx_dequantize(const u8* __restrict__ q, const u8* __restrict__ scales,
                                         bf16* __restrict__ out, int rows, int K) {
    const int chunks = K / 16;
    const i64 t = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= static_cast<i64>(rows) * chunks) return;
    const int r = static_cast<int>(t / chunks), chunk = static_cast<int>(t % chunks);
    const int block = chunk / 2, col_tiles = (K / 32 + 3) / 4, within = r % 128;
    const i64 offset = (static_cast<i64>(r / 128) * col_tiles + block / 4) * 512 + (within % 32) * 16 + (within / 32) * 4 +
                       block % 4;
    const float scale = e8m0_value(scales[offset]);
    const uint4 in = *reinterpret_cast<const uint4*>(q + static_cast<i64>(r) * K + chunk * 16);
    const u32 words[4] = {in.x, in.y, in.z, in.w};
    u32 packed[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const u32 pair = words[i / 2] >> (16 * (i % 2));
        packed[i] = pack_bf16x2(e4m3_value(pair & 0xFF) * scale, e4m3_value((pair >> 8) & 0xFF) * scale);
    }
    uint4* destination = reinterpret_cast<uint4*>(out + static_cast<i64>(r) * K + chunk * 16);
    destination[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
    destination[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
}
