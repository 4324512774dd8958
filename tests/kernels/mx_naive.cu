// A naive MXFP8 GEMM for the tests: one thread per element of C, fp32 accumulation block by block,
// scales read from the blocked layout. Correct as written; with -DWRONG_SCALE_BLOCK it reads the scale
// of A's k-block 0 from k-block 1 (a planted bug the checker must reject).
#include "common.cuh"

__device__ __forceinline__ float e4m3_value(u32 byte) {
    const u32 e = (byte >> 3) & 0xF, m = byte & 0x7;
    float magnitude = e == 0 ? static_cast<float>(m) * 0.001953125f : __uint_as_float(((e + 120) << 23) | (m << 20));
    if (e == 0xF && m == 0x7) magnitude = __uint_as_float(0x7fc00000u);
    return (byte & 0x80) ? -magnitude : magnitude;
}

__device__ __forceinline__ float e8m0_value(u32 byte) {
    if (byte == 0) return __uint_as_float(0x00400000u);
    if (byte == 255) return __uint_as_float(0x7fc00000u);
    return __uint_as_float(byte << 23);
}

// Byte offset of scale (r, c) in the blocked layout (shared/check/mx.rs, blocked_offset).
__device__ __forceinline__ i64 blocked(int r, int c, int blocks) {
    const int within = r % 128;
    return (static_cast<i64>(r / 128) * ((blocks + 3) / 4) + c / 4) * 512 + (within % 32) * 16 + (within / 32) * 4 + c % 4;
}

extern "C" __global__ void mx_naive(const u8* A, const u8* B, const u8* scale_a, const u8* scale_b, float* C, int M,
                                    int N, int K) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
    if (i >= M || j >= N) return;
    const int blocks = K / 32;
    float acc = 0.0f;
    for (int b = 0; b < blocks; ++b) {
#ifdef WRONG_SCALE_BLOCK
        const int ab = (b == 0 && blocks > 1) ? 1 : b;
#else
        const int ab = b;
#endif
        float partial = 0.0f;
        for (int k = 32 * b; k < 32 * b + 32; ++k) {
            partial += e4m3_value(A[static_cast<i64>(i) * K + k]) * e4m3_value(B[static_cast<i64>(j) * K + k]);
        }
        acc += partial * (e8m0_value(scale_a[blocked(i, ab, blocks)]) * e8m0_value(scale_b[blocked(j, b, blocks)]));
    }
    C[static_cast<i64>(i) * N + j] = acc;
}
