// common.cuh: the few definitions every kernel of the ladder shares.
//
// Kernels are compiled at run time by NVRTC, which ships without the CUDA toolkit headers. So there is
// no cuda_bf16.h and no <cstdint> here: integer widths are spelled out once below, and a bf16 value is
// carried as its raw 16 bits and converted by hand (bit shifts one way, a PTX `cvt` the other way).
// The `cvt ... bf16` instructions need compute capability 8.0 or newer; below that (the T4, sm_75,
// which runs steps 01-03) the same rounding is done in integer arithmetic.
#pragma once

// ---------------------------------------------------------------------------------------------------
// Fixed-width integers. NVRTC targets the same data model on every platform (int is 32 bits, long
// long is 64), so these hold everywhere a kernel can be compiled.
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

static_assert(sizeof(u8) == 1 && sizeof(u16) == 2 && sizeof(u32) == 4 && sizeof(u64) == 8, "unexpected integer widths");

// A bf16 number as stored in memory: the top 16 bits of an IEEE-754 fp32 (sign, 8 exponent bits,
// 7 mantissa bits). Nothing in a kernel does arithmetic on this type; it is only loaded, converted
// and stored.
typedef u16 bf16;

// ---------------------------------------------------------------------------------------------------
// bf16 -> fp32 is exact: put the 16 bits in the high half of a 32-bit word, zeros below.
__device__ __forceinline__ float bf16_to_float(bf16 x) {
    return __uint_as_float(static_cast<u32>(x) << 16);
}

// Two bf16 packed in one 32-bit word, as a 4- or 16-byte load delivers them: the element at the
// lower address sits in the low half (GPUs are little-endian).
__device__ __forceinline__ float bf16x2_low(u32 pair) {
    return __uint_as_float(pair << 16);
}
__device__ __forceinline__ float bf16x2_high(u32 pair) {
    return __uint_as_float(pair & 0xffff0000u);
}

// fp32 -> bf16 drops 16 mantissa bits, so it must round: to nearest, ties to even, and NaN to a NaN,
// which is what the host-side reference does too. From compute capability 8.0 a `cvt.rn` does it.
// Below 8.0 (the T4) there is no such cvt, and the rounding is done by hand, bit for bit what the cvt
// gives (tests: all 2^32 inputs on the CPU, and whole GEMMs on a GPU). GEMM_LADDER_SOFT_BF16 forces
// the software rounding on any GPU, so that a GPU with the cvt can check the two agree.
#if defined(GEMM_LADDER_SOFT_BF16) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800)
#define GEMM_LADDER_BF16_BY_HAND 1
#endif

#ifdef GEMM_LADDER_BF16_BY_HAND
// Round to nearest even by hand: keep the high 16 bits, and add one when the dropped low 16 bits are
// more than half an ulp, or exactly half with the kept part odd. A carry into the exponent is right
// (the largest finite values round up to infinity, as the cvt does). NaN becomes 0x7fff, the canonical
// quiet NaN the cvt writes.
__device__ __forceinline__ bf16 float_to_bf16(float x) {
    const u32 bits = __float_as_uint(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<bf16>(0x7fffu);
    }
    u32 high = bits >> 16;
    const u32 low = bits & 0xffffu;
    if (low > 0x8000u || (low == 0x8000u && (high & 1u) != 0u)) {
        high += 1u;
    }
    return static_cast<bf16>(high);
}

// Two fp32 -> one 32-bit word of two bf16, ready for a vector store: `low` (the element at the lower
// address) in the low half.
__device__ __forceinline__ u32 pack_bf16x2(float low, float high) {
    return static_cast<u32>(float_to_bf16(low)) | (static_cast<u32>(float_to_bf16(high)) << 16);
}
#else
__device__ __forceinline__ bf16 float_to_bf16(float x) {
    bf16 r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
    return r;
}

// Two fp32 -> one 32-bit word of two bf16, ready for a vector store. `cvt.rn.bf16x2.f32 d, a, b` puts
// a in the upper half and b in the lower half, so `low` (the element at the lower address) goes last.
__device__ __forceinline__ u32 pack_bf16x2(float low, float high) {
    u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(high), "f"(low));
    return r;
}
#endif

// Timeline stamps (steps 08-11): empty macros unless compiled with -DTIMELINE=1.
#include "timeline.cuh"
