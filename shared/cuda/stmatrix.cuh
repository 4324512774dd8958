// stmatrix.cuh: store register fragments of 8×8 bf16 matrices to shared memory (sm_90 and newer).
//
// `stmatrix.sync.aligned.m8n8.x4.shared.b16` is `ldmatrix` run backwards. A warp holds four 8×8 matrices
// of 16-bit values in the MMA fragment layout (lane l has row l / 4, columns 2·(l % 4) and
// 2·(l % 4) + 1, packed in one 32-bit register per matrix) and writes them out as rows of 16 bytes:
//   - register q of every lane holds its two elements of matrix q (q = 0 .. 3);
//   - lane l gives the shared-memory address of row l % 8 of matrix l / 8.
// Each row address is free, so the 32 rows can go anywhere 16-byte aligned: straight into a swizzled
// layout, with no index shuffling in registers. That is what an epilogue needs: the wgmma accumulators
// are already in this fragment layout (see WgmmaFragment in wgmma.cuh), two fp32 per row become one
// bf16 pair, and four 8×8 blocks go out per instruction instead of 32 separate 4-byte stores.
#pragma once
#include "common.cuh"

__device__ __forceinline__ void stmatrix_x4(u32 row_address, u32 m0, u32 m1, u32 m2, u32 m3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(row_address), "r"(m0),
                 "r"(m1), "r"(m2), "r"(m3)
                 : "memory");
}

// ANCHOR: swizzle_offset
// Byte offset of the 16-byte chunk `chunk` (0 .. 7) of row `row` inside a tile of 128-byte rows laid out
// with the 128-byte swizzle (the TMA's CU_TENSOR_MAP_SWIZZLE_128B): in every group of eight rows, chunk c
// of row r is stored at chunk c ^ (r % 8). The tile must start 1024-byte aligned, because the hardware
// takes r % 8 from the address bits 7..9, not from the row count.
//
// Why it helps a stmatrix: one 8×8 matrix is 8 rows × 16 bytes of the same chunk column. Unswizzled,
// those rows are 128 bytes apart, all in the same four banks: an 8-way conflict. Swizzled, row r's
// chunk moves to position c ^ r, so the eight rows cover all 32 banks once.
__device__ __forceinline__ u32 swizzle_128b_offset(u32 row, u32 chunk) {
    return row * 128 + ((chunk ^ (row % 8)) * 16);
}
// ANCHOR_END: swizzle_offset
