// wgmma_k64.cuh: a whole 128-byte swizzled K tile of wgmma (wgmma.cuh) in one asm statement.
#pragma once
#include "wgmma.cuh"

// ANCHOR: wgmma_k64
// A whole 128-byte swizzled K tile (64 bf16 of K): four m64nNk16 in one asm statement, the k16 slices
// 32 bytes apart, so each descriptor is the first one plus 2, 4 or 6 in its address field (16-byte
// units; the tile's start address never carries out of it). Written as four separate statements,
// ptxas may compute each descriptor just before its wgmma and reuse the same uniform registers, so
// that every wgmma waits for the previous one to have read them; here the four pairs are made first
// and the wgmmas go out back to back (measured: step 10, chapter 10b). `accumulate` applies to the
// first slice; the other three always accumulate.
#define WGMMA_BF16_K64_ASM(n, d_list, a, b, scale_d)                                                   \
    "{\n"                                                                                              \
    ".reg .pred accumulate;\n"                                                                         \
    ".reg .b64 a1, a2, a3, b1, b2, b3;\n"                                                              \
    "setp.ne.b32 accumulate, " scale_d ", 0;\n"                                                        \
    "add.s64 a1, " a ", 2;\n"                                                                          \
    "add.s64 a2, " a ", 4;\n"                                                                          \
    "add.s64 a3, " a ", 6;\n"                                                                          \
    "add.s64 b1, " b ", 2;\n"                                                                          \
    "add.s64 b2, " b ", 4;\n"                                                                          \
    "add.s64 b3, " b ", 6;\n"                                                                          \
    "wgmma.mma_async.sync.aligned.m64n" #n "k16.f32.bf16.bf16 {" d_list "}, " a ", " b                 \
    ", accumulate, 1, 1, 0, 0;\n"                                                                      \
    "wgmma.mma_async.sync.aligned.m64n" #n "k16.f32.bf16.bf16 {" d_list "}, a1, b1, 1, 1, 1, 0, 0;\n"  \
    "wgmma.mma_async.sync.aligned.m64n" #n "k16.f32.bf16.bf16 {" d_list "}, a2, b2, 1, 1, 1, 0, 0;\n"  \
    "wgmma.mma_async.sync.aligned.m64n" #n "k16.f32.bf16.bf16 {" d_list "}, a3, b3, 1, 1, 1, 0, 0;\n"  \
    "}\n"

template <int N>
struct WgmmaK64;

template <>
struct WgmmaK64<64> {
    __device__ __forceinline__ static void mma(float (&d)[32], u64 a_desc, u64 b_desc, int accumulate) {
        asm volatile(WGMMA_BF16_K64_ASM(64, WGMMA_D32, "%32", "%33", "%34")
                     : WGMMA_RW_32(d, 0)
                     : "l"(a_desc), "l"(b_desc), "r"(accumulate));
    }
};

template <>
struct WgmmaK64<128> {
    __device__ __forceinline__ static void mma(float (&d)[64], u64 a_desc, u64 b_desc, int accumulate) {
        asm volatile(WGMMA_BF16_K64_ASM(128, WGMMA_D64, "%64", "%65", "%66")
                     : WGMMA_RW_32(d, 0), WGMMA_RW_32(d, 32)
                     : "l"(a_desc), "l"(b_desc), "r"(accumulate));
    }
};

template <>
struct WgmmaK64<256> {
    __device__ __forceinline__ static void mma(float (&d)[128], u64 a_desc, u64 b_desc, int accumulate) {
        asm volatile(WGMMA_BF16_K64_ASM(256, WGMMA_D128, "%128", "%129", "%130")
                     : WGMMA_RW_32(d, 0), WGMMA_RW_32(d, 32), WGMMA_RW_32(d, 64), WGMMA_RW_32(d, 96)
                     : "l"(a_desc), "l"(b_desc), "r"(accumulate));
    }
};
// ANCHOR_END: wgmma_k64
