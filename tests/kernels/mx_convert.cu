// Every e4m3 byte times every e8m0 scale through shared/cuda/mx.cuh's conversion, both paths: block s
// (the scale byte) converts bytes 4t .. 4t+3 in thread t. out[path][s][byte] holds the bf16 bits;
// path 0 is the one-multiplication (narrow) path, meaningful for s <= NARROW_SCALE_MAX only.
#include "mx.cuh"

extern "C" __global__ void mx_convert(unsigned short* out) {
    const u32 s = blockIdx.x, t = threadIdx.x;
    const u32 four = (4 * t) | (4 * t + 1) << 8 | (4 * t + 2) << 16 | (4 * t + 3) << 24;
    for (int path = 0; path < 2; ++path) {
        const bool wide = path == 1;
        u32 even, odd;
        e4m3x4_to_bf16x4(four, scale_bf16x2(s, wide), wide, even, odd);
        unsigned short* row = out + (path * 256 + s) * 256 + 4 * t;
        row[0] = even & 0xFFFF;
        row[2] = even >> 16;
        row[1] = odd & 0xFFFF;
        row[3] = odd >> 16;
    }
}
