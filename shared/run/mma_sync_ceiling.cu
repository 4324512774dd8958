// The mma.sync ceiling: how fast this GPU runs bf16 `mma.sync.m16n8k16` (fp32 accumulation) when nothing
// else limits it, for the sm80 twins' "× ceiling" column. Two kernels, launched beside cuBLAS in one
// alternating loop (shared/run/ceiling.rs):
//   - mma_registers: operands held in registers (random bf16 values, not zeros: the tensor cores draw
//     less power on zeros, and a power-limited GPU then clocks higher), CHAINS independent accumulator
//     tiles per warp, so no mma waits for the one before: the rate of the instruction itself;
//   - mma_ldmatrix: the sm80 twins' inner loop with nothing around it. Step 07's block (eight warps of
//     64×64 over a 256×128 tile, one block per SM) reads its fragments with ldmatrix.x4 from a swizzled
//     tile that stays in shared memory, 4 ldmatrix.x4 of A and 4 of B per 32 mma.sync: the rate this
//     design can reach when every copy from global memory and every epilogue is free.
#include "common.cuh"
#include "mbarrier.cuh"  // smem_address
#include "mma_sm80.cuh"
#include "stmatrix.cuh"  // swizzle_128b_offset (stmatrix itself is sm_90 and newer, not used here)

enum : int {
    CHAINS = 16,           // independent accumulator tiles per warp in mma_registers
    RANDOM_WORDS = 65536,  // the random operand buffer: 256 KiB of bf16 pairs
    LD_THREADS = 256,      // mma_ldmatrix: eight warps, 4 × 2 warp tiles of 64×64
    LD_BM = 256,
    LD_BN = 128,
    ROW_BYTES = 128,       // one k64 row of a tile, swizzled
    LD_SMEM_BYTES = (LD_BM + LD_BN) * ROW_BYTES,
};

// Sums the accumulators into one number per thread, so that no mma is dead code.
template <int N>
__device__ __forceinline__ float total(const float (&acc)[N][4]) {
    float sum = 0.0f;
    #pragma unroll
    for (int c = 0; c < N; ++c) sum += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
    return sum;
}

// ANCHOR: registers
// Flops per launch: blocks · 8 warps · iterations · CHAINS · 2 · 16 · 8 · 16.
extern "C" __global__ __launch_bounds__(256) void mma_registers(const u32* __restrict__ random,
                                                               float* __restrict__ sink, int iterations) {
    const int thread = blockIdx.x * blockDim.x + threadIdx.x;
    const u32* mine = random + (thread * 12) % (RANDOM_WORDS - 12);
    const u32 a[2][4] = {{mine[0], mine[1], mine[2], mine[3]}, {mine[4], mine[5], mine[6], mine[7]}};
    const u32 b[4] = {mine[8], mine[9], mine[10], mine[11]};
    float acc[CHAINS][4];
    #pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c][0] = acc[c][1] = acc[c][2] = acc[c][3] = 0.0f;
    for (int it = 0; it < iterations; ++it) {
        #pragma unroll
        for (int c = 0; c < CHAINS; ++c) mma_bf16_16816(acc[c], a[c % 2], b[2 * ((c / 2) % 2)], b[2 * ((c / 2) % 2) + 1]);
    }
    sink[thread] = total(acc);
}
// ANCHOR_END: registers

// ANCHOR: ldmatrix
// Flops per launch: blocks · 8 warps · iterations · 4 k16 slices · 32 mma · 2 · 16 · 8 · 16.
extern "C" __global__ __launch_bounds__(LD_THREADS, 1) void mma_ldmatrix(const u32* __restrict__ random,
                                                                        float* __restrict__ sink, int iterations) {
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 a_tile = smem_address(smem);
    const u32 b_tile = a_tile + LD_BM * ROW_BYTES;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    // Random values into both tiles (their layout does not matter to a product nobody checks).
    u32* words = reinterpret_cast<u32*>(smem);
    for (int w = tid; w < LD_SMEM_BYTES / 4; w += LD_THREADS) words[w] = random[(blockIdx.x * 4099 + w) % RANDOM_WORDS];
    __syncthreads();

    // Step 07's lane addresses: the same warp tiles and the same swizzle.
    const int warp_row = warp / 2, warp_column = warp % 2;
    const int a_row = warp_row * 64 + (lane & 15);
    const int b_row = warp_column * 64 + ((lane >> 4) << 3) + (lane & 7);
    float acc[4][8][4];
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    // One iteration at a time, as the twins' K loop: unrolled further, sm_120's schedule spills.
    #pragma unroll 1
    for (int it = 0; it < iterations; ++it) {
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            u32 a[4][4], b[4][4];
            #pragma unroll
            for (int i = 0; i < 4; ++i) {
                ldmatrix_x4(a[i], a_tile + swizzle_128b_offset(a_row + 16 * i, 2 * s + (lane >> 4)));
            }
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                ldmatrix_x4(b[j], b_tile + swizzle_128b_offset(b_row + 16 * j, 2 * s + ((lane >> 3) & 1)));
            }
            #pragma unroll
            for (int i = 0; i < 4; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j) mma_bf16_16816(acc[i][j], a[i], b[j / 2][2 * (j % 2)], b[j / 2][2 * (j % 2) + 1]);
        }
    }
    float sum = 0.0f;
    #pragma unroll
    for (int i = 0; i < 4; ++i) sum += total(acc[i]);
    sink[blockIdx.x * LD_THREADS + tid] = sum;
}
// ANCHOR_END: ldmatrix
