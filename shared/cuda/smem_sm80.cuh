// smem_sm80.cuh: the plain loads and stores an sm80 epilogue moves C with (no stmatrix or TMA store
// below sm_90): 4 bytes into shared memory per lane, then 16 bytes per lane from shared memory to C.
#pragma once
#include "common.cuh"

__device__ __forceinline__ void st_shared_b32(u32 address, u32 value) {
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(address), "r"(value) : "memory");
}

// 16 bytes, as four 32-bit words.
struct Chunk16 {
    u32 w[4];
};

__device__ __forceinline__ Chunk16 ld_shared_16(u32 address) {
    Chunk16 c;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
                 : "r"(address)
                 : "memory");
    return c;
}

// `dst` must be 16-byte aligned.
__device__ __forceinline__ void st_global_16(void* dst, const Chunk16& c) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(c.w[0]), "r"(c.w[1]), "r"(c.w[2]),
                 "r"(c.w[3])
                 : "memory");
}
