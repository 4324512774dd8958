// wgmma_k64.cuh: a whole 128-byte swizzled K tile of wgmma (wgmma.cuh) in one asm statement.
#pragma once
#include "wgmma.cuh"

// wgmma.cuh keeps its operand lists to itself (it undefines them); the same lists, for this file.
// "%t0, %t1, ..., %t9" for a tens digit t (empty for 0 .. 9).
#define WGMMA_OPERANDS_10(t) \
    "%" #t "0, %" #t "1, %" #t "2, %" #t "3, %" #t "4, %" #t "5, %" #t "6, %" #t "7, %" #t "8, %" #t "9"
#define WGMMA_D32 WGMMA_OPERANDS_10() ", " WGMMA_OPERANDS_10(1) ", " WGMMA_OPERANDS_10(2) ", %30, %31"
#define WGMMA_D64                                                                                      \
    WGMMA_OPERANDS_10() ", " WGMMA_OPERANDS_10(1) ", " WGMMA_OPERANDS_10(2) ", " WGMMA_OPERANDS_10(3) \
    ", " WGMMA_OPERANDS_10(4) ", " WGMMA_OPERANDS_10(5) ", %60, %61, %62, %63"
#define WGMMA_D128                                                                                     \
    WGMMA_OPERANDS_10() ", " WGMMA_OPERANDS_10(1) ", " WGMMA_OPERANDS_10(2) ", " WGMMA_OPERANDS_10(3) \
    ", " WGMMA_OPERANDS_10(4) ", " WGMMA_OPERANDS_10(5) ", " WGMMA_OPERANDS_10(6) ", "                 \
    WGMMA_OPERANDS_10(7) ", " WGMMA_OPERANDS_10(8) ", " WGMMA_OPERANDS_10(9) ", "                      \
    WGMMA_OPERANDS_10(10) ", " WGMMA_OPERANDS_10(11) ", %120, %121, %122, %123, %124, %125, %126, %127"

// The matching read-write operand lists: registers d[i] .. d[i + 7], d[i] .. d[i + 31], ...
#define WGMMA_RW_8(d, i)                                                                               \
    "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]),         \
        "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define WGMMA_RW_32(d, i) WGMMA_RW_8(d, i), WGMMA_RW_8(d, (i) + 8), WGMMA_RW_8(d, (i) + 16), WGMMA_RW_8(d, (i) + 24)

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

#undef WGMMA_OPERANDS_10
#undef WGMMA_D32
#undef WGMMA_D64
#undef WGMMA_D128
#undef WGMMA_RW_8
#undef WGMMA_RW_32
#undef WGMMA_BF16_K64_ASM
