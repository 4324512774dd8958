// Exercise 01.1 · find the bug.
// Step 01's kernel with one planted bug, inside the dot product: `exercise check 01.1` fails
// verification at every shape. Find the line, fix it, check again (`exercise hint 01.1` helps).
//
// Step 01 · naive: one thread per element of C.
//
// C = A · Bᵀ with A (M×K) and B (N×K) both row-major bf16, so row i of A and row j of B are each K
// contiguous values, and C[i][j] is their dot product. This kernel says exactly that and nothing more:
// every thread walks one row of A and one row of B from global memory, multiplies and adds in fp32, and
// writes one bf16. It is the correctness baseline every later step is measured against, and the
// yardstick for how much the memory hierarchy matters.
#include "common.cuh"

// The block is BN threads wide (along N) and BM threads tall (along M); step.rs sets both.
#ifndef BM
#error "BM (threads per block along M) is set by step.rs"
#endif
#ifndef BN
#error "BN (threads per block along N) is set by step.rs"
#endif
static_assert(BN % 32 == 0, "a warp should lie along one row of C, so BN is a multiple of 32");
static_assert(BM * BN <= 1024, "a block holds at most 1024 threads");

// ANCHOR: kernel
extern "C" __global__ void gemm(const bf16* __restrict__ A, const bf16* __restrict__ B,
                                bf16* __restrict__ C, int M, int N, int K) {
    // ANCHOR: index
    // threadIdx.x runs along N. The 32 threads of a warp then share one row i of C and take 32
    // neighbouring columns j, which decides what each memory instruction of the warp costs:
    //  - C[i][j..j+31] is 64 contiguous bytes: the store is coalesced.
    //  - A[i][k] is the same address for the whole warp: one load, broadcast to 32 threads.
    //  - B[j][k] for 32 values of j are 32 addresses K elements (2K bytes) apart: each load touches
    //    32 separate 32-byte sectors and uses 2 bytes of each. The rest of every sector is wasted
    //    unless it is still in L1 when the next 15 values of k come round.
    // Running threadIdx.x along M instead would swap the roles of A and B and scatter the stores too.
    const int i = blockIdx.y * BM + threadIdx.y;  // row of C (and of A)
    const int j = blockIdx.x * BN + threadIdx.x;  // column of C (row of B)
    // The grid is rounded up to whole blocks, so the last blocks hang over the edges of C.
    if (i >= M || j >= N) return;
    // ANCHOR_END: index

    // ANCHOR: dot
    // Offsets are 64-bit: row * K overflows an int once a matrix holds more than 2^31 elements.
    const bf16* a_row = A + (i64)i * K;
    const bf16* b_row = B + j;
    float acc = 0.0f;  // fp32 accumulation: bf16 keeps only 8 significant bits
    for (int k = 0; k < K; ++k) {
        acc += bf16_to_float(a_row[k]) * bf16_to_float(b_row[(i64)k * N]);
    }
    C[(i64)i * N + j] = float_to_bf16(acc);
    // ANCHOR_END: dot
}
// ANCHOR_END: kernel
