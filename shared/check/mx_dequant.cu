// MXFP8 → bf16, one pass over one operand: the first half of step 11's "dequantize, then cuBLAS
// bf16" baseline (shared/run/session.rs times this kernel for A and B plus cuBLAS as one contender).
//
// In: `q`, rows×K e4m3 bytes (row-major, K a multiple of 32); `scales`, one e8m0 byte per 1×32 block
// in the blocked layout of shared/check/mx.rs. Out: rows×K bf16, every element e4m3 × 2^(byte−127), exact
// for the scale window step 11's inputs use (e4m3 has 3 mantissa bits, bf16 7).
#include "common.cuh"
#include "mx.cuh"

// Two neighbouring threads share 16 bytes of one row (half a scale block): both load them, each
// converts and stores its 8 elements, so that a warp's loads and stores cover contiguous bytes. The
// conversion is step 11's (mx.cuh: a byte permute that places two e4m3 as bf16 times 2^−120, then one
// bf16x2 multiplication by the block's factor; two for scales above 134), here with the pairs in
// natural order: (byte 0, byte 1) and (byte 2, byte 3) of each word. The baseline is as fast as the
// step's own pre-pass per element, so that the comparison with "dequantize, then cuBLAS" is fair.
extern "C" __global__ void mx_dequantize(const u8* __restrict__ q, const u8* __restrict__ scales,
                                         bf16* __restrict__ out, int rows, int K) {
    const int halves = K / 8;
    const i64 t = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= static_cast<i64>(rows) * halves) return;
    const int r = static_cast<int>(t / halves), half = static_cast<int>(t % halves);
    const int chunk = half / 2, second = half % 2;
    const u32 s = scales[blocked_scale_offset(r, chunk / 2, K)];
    const bool wide = s > NARROW_SCALE_MAX;
    const u32 factor = scale_bf16x2(s, wide);
    const uint2 in = *reinterpret_cast<const uint2*>(q + static_cast<i64>(r) * K + chunk * 16 + second * 8);
    const u32 words[2] = {in.x, in.y};
    u32 pairs[4];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        pairs[2 * i] = apply_scale(e4m3x2_place(words[i], 0x9180u), factor, wide);      // (byte 0, byte 1)
        pairs[2 * i + 1] = apply_scale(e4m3x2_place(words[i], 0xB3A2u), factor, wide);  // (byte 2, byte 3)
    }
    *reinterpret_cast<uint4*>(out + static_cast<i64>(r) * K + half * 8) = make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
}
