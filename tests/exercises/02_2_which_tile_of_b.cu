// Exercise 02.2 · find the bug, solved.
// The B tile of block (y, x) holds rows block_col .. block_col + BN − 1 of B (columns of C); the
// starter took rows block_row + ty, right only for the blocks on the diagonal, where they agree.
//
// Step 02 · smem_tiling: share each loaded value across a block through shared memory.
//
// In step 01 every thread fetched its own row of A and row of B, so each value of A was fetched N
// times and each value of B M times, nearly all of it through a cache that is too small to keep it.
// Here a block of BM×BN threads computes a BM×BN tile of C and walks K in slices of BK: for each slice
// the block copies a BM×BK tile of A and a BN×BK tile of B into shared memory once, with coalesced
// loads, and then every thread reads the values it needs from there. Each element fetched from global
// memory is now used BN times (A) or BM times (B) instead of once. Still one output per thread.
#include "common.cuh"

#ifndef BM
#error "BM (rows of C per block, threads along M) is set by step.rs"
#endif
#ifndef BN
#error "BN (columns of C per block, threads along N) is set by step.rs"
#endif
#ifndef BK
#error "BK (depth of the K slice held in shared memory) is set by step.rs"
#endif
// One thread per output, and each thread also copies exactly one element of each operand per slice:
// the A tile (BM×BK) and the B tile (BN×BK) then have as many elements as the block has threads.
static_assert(BK == BN && BK == BM, "one element of A and one of B per thread per slice needs BM == BN == BK");
static_assert(BN % 32 == 0, "a warp should lie along one row of the tile, so BN is a multiple of 32");
static_assert(BM * BN <= 1024, "a block holds at most 1024 threads");

// ANCHOR: kernel
extern "C" __global__ void gemm(const bf16* __restrict__ A, const bf16* __restrict__ B,
                                bf16* __restrict__ C, int M, int N, int K) {
    // Operands are converted to fp32 on the way in, so the inner loop does no conversions.
    // As[m][k] is read by a warp at a single address (every lane has the same row m): a broadcast,
    // no bank conflict, no padding needed. Bs[n][k] is read by a warp at 32 different rows n with
    // the same k; with rows of exactly 32 floats all 32 would fall in the same bank (a 32-way
    // conflict), so each row gets one float of padding and consecutive rows start one bank apart.
    __shared__ float As[BM][BK];
    __shared__ float Bs[BN][BK + 1];

    const int tx = threadIdx.x;  // along N
    const int ty = threadIdx.y;  // along M
    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;
    const int i = block_row + ty;  // the output this thread owns
    const int j = block_col + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        // ANCHOR: load_tile
        // Thread (ty, tx) copies A[block_row + ty][k0 + tx] and B[block_col + ty][k0 + tx]: a warp
        // reads 32 consecutive bf16 of one row (64 contiguous bytes), so the loads are coalesced.
        // Past the edges of A, B (M, N) or K we store zeros, which add nothing to the dot products.
        // No thread returns early, even off the edge of C: all of them must reach __syncthreads().
        const int a_row = block_row + ty;
        const int b_row = block_col + ty;
        const int k = k0 + tx;
        As[ty][tx] = (a_row < M && k < K) ? bf16_to_float(A[(i64)a_row * K + k]) : 0.0f;
        Bs[ty][tx] = (b_row < N && k < K) ? bf16_to_float(B[(i64)b_row * K + k]) : 0.0f;
        // Wait until the whole tile is in shared memory before anyone reads it.
        __syncthreads();
        // ANCHOR_END: load_tile

        // ANCHOR: compute_tile
        #pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            acc += As[ty][kk] * Bs[tx][kk];
        }
        // Wait until everyone is done with this tile before the next slice overwrites it.
        __syncthreads();
        // ANCHOR_END: compute_tile
    }

    if (i < M && j < N) {
        C[(i64)i * N + j] = float_to_bf16(acc);
    }
}
// ANCHOR_END: kernel
