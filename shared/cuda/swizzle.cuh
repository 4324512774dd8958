// swizzle.cuh: the 128-byte XOR swizzle, as an address function. The TMA and wgmma apply it in hardware
// on Hopper; stmatrix (sm_90) and every sm80 twin from step 05 on compute it per lane with this one
// function.
#pragma once
#include "common.cuh"

// ANCHOR: swizzle_offset
// Byte offset of the 16-byte chunk `chunk` (0 .. 7) of row `row` inside a tile of 128-byte rows laid out
// with the 128-byte swizzle (the TMA's CU_TENSOR_MAP_SWIZZLE_128B): in every group of eight rows, chunk c
// of row r is stored at chunk c ^ (r % 8). The tile must start 1024-byte aligned, because the hardware
// takes r % 8 from the address bits 7..9, not from the row count.
//
// Why it helps a stmatrix or an ldmatrix: one 8×8 matrix is 8 rows × 16 bytes of the same chunk
// column. Unswizzled, those rows are 128 bytes apart, all in the same four banks: an 8-way conflict.
// Swizzled, row r's chunk moves to position c ^ r, so the eight rows cover all 32 banks once.
__device__ __forceinline__ u32 swizzle_128b_offset(u32 row, u32 chunk) {
    return row * 128 + ((chunk ^ (row % 8)) * 16);
}
// ANCHOR_END: swizzle_offset
