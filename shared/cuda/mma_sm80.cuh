// mma_sm80.cuh: the warp-level tensor-core path every GPU of compute capability 8.0 or newer has:
// `ldmatrix` (shared memory -> fragments in registers) and `mma.sync.m16n8k16` bf16 × bf16 -> fp32.
//
// One `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` multiplies a 16×16 tile of A (K-major,
// "row") by a 16×8 tile of Bᵀ (B K-major, "col") and adds into a 16×8 fp32 tile, all held in the 32
// lanes' registers. With g = lane / 4 and t = lane % 4:
//   - A: 4 registers of two bf16: (row g, k 2t..2t+1), (row g+8, k 2t..), (row g, k 2t+8..),
//     (row g+8, k 2t+8..);
//   - B: 2 registers: (k 2t..2t+1, column g), (k 2t+8.., column g);
//   - C/D: 4 fp32: (row g, columns 2t, 2t+1), (row g+8, columns 2t, 2t+1). The wgmma accumulator
//     fragment is the same per 8 columns, so the Hopper steps' epilogues transfer.
//
// `ldmatrix.sync.aligned.m8n8.x4.shared.b16` fills exactly those registers: it reads four 8×8 matrices
// of 16-bit values, each from 8 row addresses of 16 bytes (a core matrix), and hands lane l the pair
// at row l / 4, columns 2(l % 4), 2(l % 4) + 1 of each matrix. Lane l gives the address of row l % 8
// of matrix l / 8. Eight lanes' rows are read at once: they are free of bank conflicts when the eight
// 16-byte rows cover all 32 banks.
#pragma once
#include "common.cuh"

// Four 8×8 matrices of bf16 -> four registers; `row_address` is this lane's row (shared space).
__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 row_address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row_address));
}

// Two 8×8 matrices -> two registers; lanes 0..15 give the rows (lane l: row l % 8 of matrix l / 8).
__device__ __forceinline__ void ldmatrix_x2(u32& r0, u32& r1, u32 row_address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(row_address));
}

// d += a · b for one 16×8×16 tile (d is read and written in place).
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Where this lane's accumulators sit in its warp's 16×8 tiles: d[0], d[1] at (row, column),
// (row, column + 1); d[2], d[3] 8 rows further down.
struct MmaFragment {
    int row;
    int column;
    __device__ __forceinline__ explicit MmaFragment(int lane) : row(lane / 4), column(2 * (lane % 4)) {}
};
