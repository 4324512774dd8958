// Deliberately wrong GEMM kernels, for testing the checker: each one must be rejected.
//
// Every entry is step 01's naive kernel (one thread per element of C, threadIdx.x along N, any 2D block
// shape, the grid rounded up to cover C) with exactly one planted bug. They take the same arguments as
// every step's `gemm`, need no defines, and are launched like step 01. C is poisoned (NaN) before a
// run, so an element a kernel forgets to write shows up as NaN.
#include "common.cuh"

// The correct per-thread work, shared by the entries below: C[i][j] = dot(A row i, B row j) over
// k < k_end. Passing k_end = K gives the right answer.
__device__ __forceinline__ void naive_element(const bf16* __restrict__ A, const bf16* __restrict__ B,
                                              bf16* __restrict__ C, int N, int K, int i, int j,
                                              int k_end) {
    const bf16* a_row = A + (i64)i * K;
    const bf16* b_row = B + (i64)j * K;
    float acc = 0.0f;
    for (int k = 0; k < k_end; ++k) {
        acc += bf16_to_float(a_row[k]) * bf16_to_float(b_row[k]);
    }
    C[(i64)i * N + j] = float_to_bf16(acc);
}

// BUG: the last 16-row band of tiles is never written. Rows from ((M - 1) / 16) * 16 on belong to
// the last tile row of a 16×16 tiling (a full tile when M % 16 == 0, a partial one otherwise); this
// kernel returns before writing them, as a kernel whose grid is one tile row short would. For
// M <= 16 that is every row.
extern "C" __global__ void gemm_skips_last_tile(const bf16* __restrict__ A, const bf16* __restrict__ B,
                                                bf16* __restrict__ C, int M, int N, int K) {
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int last_tile_row = ((M - 1) / 16) * 16;
    if (i >= M || j >= N) return;
    if (i >= last_tile_row) return;  // the bug
    naive_element(A, B, C, N, K, i, j, K);
}

// BUG: the kernel does nothing, so C keeps whatever it held before (the checker's NaN poison).
extern "C" __global__ void gemm_writes_nothing(const bf16* __restrict__ A, const bf16* __restrict__ B,
                                               bf16* __restrict__ C, int M, int N, int K) {
    return;
}

// BUG: the K loop stops one element early, leaving out the last product of every dot product. Every
// element is written and finite, and each is off by only one term of K: the checker has to compare
// values, not just look for NaN.
extern "C" __global__ void gemm_off_by_one_k(const bf16* __restrict__ A, const bf16* __restrict__ B,
                                             bf16* __restrict__ C, int M, int N, int K) {
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M || j >= N) return;
    naive_element(A, B, C, N, K, i, j, K - 1);  // the bug: should be K
}
