// Exercise 04.1 · find the bug.
// Step 04's Hopper kernel with one planted bug around its mbarrier: `exercise check 04.1` never
// sees the kernel finish, and reports it as hung (exit code 3) after GEMM_LADDER_HANG_SECONDS
// (10 s by default for `exercise`). Work out which wait can never return, and why.
//
// Step 04 · tma_mma (Hopper, sm_90a): the copy engine fills shared memory, the tensor cores multiply.
//
// Step 03 spent its threads on moving data (global -> registers -> shared memory) and on 8×8 outer
// products in fp32. Hopper has a unit for each job:
//   - the TMA (Tensor Memory Accelerator) copies a whole tile from global to shared memory on one
//     thread's request, described by a tensor map built on the host; it counts the bytes it delivers
//     on an mbarrier, and fills the parts of a tile that lie past the matrix's edge with zeros, so
//     ragged M, N and K need no code here;
//   - wgmma, the warpgroup MMA: four warps (a warpgroup) issue together one multiply of a 64×16 tile of
//     A by a 16×BN tile of B, read straight from shared memory, accumulating in fp32 registers.
//
// The tensor cores read shared memory in *core matrices*: 8 rows × 16 bytes (8 bf16 of K), 128 bytes
// stored contiguously. The simplest layout they accept, "no swizzle" (also called interleaved), is a
// tile cut into 16-byte columns, one after another, each column BM rows × 16 bytes: then every 8 rows
// of a column form one core matrix. The TMA produces exactly that when the matrix is described as 3D:
// (8 elements of a column, the rows, which column), one box of 8 × BM × BK/8.
//
// One K tile at a time, no overlap: load -> wait -> MMA -> wait -> next. Hiding the TMA's latency is
// left to the other blocks on the SM (three fit, see __launch_bounds__).
#include "common.cuh"
#include "mbarrier.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

#ifndef BM
#error "BM (rows of C per block) is set by step.rs"
#endif
#ifndef BN
#error "BN (columns of C per block) is set by step.rs"
#endif
#ifndef BK
#error "BK (depth of the K tile in shared memory) is set by step.rs"
#endif
#ifndef BLOCKS_PER_SM
#error "BLOCKS_PER_SM (the occupancy the register budget is planned for) is set by step.rs"
#endif
#if !defined(A_DESC) || !defined(B_DESC)
#error "A_DESC and B_DESC (wgmma descriptor templates, start address 0) are computed in step.rs"
#endif

enum : int {
    THREADS = 128,                // one warpgroup
    HALVES = BM / 64,             // wgmma is 64 rows tall: the warpgroup computes BM / 64 of them
    COLUMN_BYTES = 16,            // one core-matrix column: 8 bf16 along K
    A_COLUMN_BYTES = BM * COLUMN_BYTES,  // a 16-byte column of the A tile, all BM rows
    B_COLUMN_BYTES = BN * COLUMN_BYTES,
    A_TILE_BYTES = A_COLUMN_BYTES * (BK / 8),
    B_TILE_BYTES = B_COLUMN_BYTES * (BK / 8),
};
static_assert(BM % 64 == 0 && HALVES >= 1 && HALVES <= 2, "one warpgroup computes 64 or 128 rows");
static_assert(BN == 64 || BN == 128 || BN == 256, "wgmma n is one of 64, 128, 256 here");
static_assert(BK % 16 == 0, "wgmma consumes K in slices of 16");

// ANCHOR: kernel
// __launch_bounds__(128, BLOCKS_PER_SM): with one K tile in flight per block, the tensor cores idle while
// a block waits for its next tile unless another block on the same SM has one ready. Three blocks per
// SM cap a thread at 65536 / (3 · 128) = 170, in practice 168 registers
// (they are allocated in groups of 8): 128 accumulators plus addressing fit.
extern "C" __global__ __launch_bounds__(THREADS, BLOCKS_PER_SM) void gemm(const __grid_constant__ TensorMap a_map,
                                                                         const __grid_constant__ TensorMap b_map,
                                                                         bf16* __restrict__ C, int M, int N, int K) {
    // Dynamic shared memory: A tile, B tile, then the barrier. The TMA needs 128-byte aligned
    // destinations; we round the start up to 1024 bytes (step.rs asks for 1 KiB extra), which the
    // swizzled layouts of the next steps need.
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_address(smem_raw) & 1023)) & 1023);
    bf16* a_tile = reinterpret_cast<bf16*>(smem);
    bf16* b_tile = reinterpret_cast<bf16*>(smem + A_TILE_BYTES);
    u64* loaded = reinterpret_cast<u64*>(smem + A_TILE_BYTES + B_TILE_BYTES);

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;

    if (tid == 0) {
        tma_prefetch_map(&a_map);
        tma_prefetch_map(&b_map);
        mbarrier_init(loaded, 2);  // one arrival per phase: the thread that issues the copies
        mbarrier_init_fence();
    }
    __syncthreads();

    // ANCHOR: descriptors
    // The descriptor templates from step.rs hold the layout; only the start address (bits 0..13, in
    // 16-byte units) is added here. For a K-major operand without swizzle:
    //   LBO (leading byte offset) = from one core matrix to the next along K: the next 16-byte column,
    //       BM × 16 bytes away in A (BN × 16 in B);
    //   SBO (stride byte offset)  = from one core matrix to the next along M (or N): the next 8 rows of
    //       the same column, 8 × 16 = 128 bytes away.
    // A wgmma takes K = 16, two columns: slice s starts at column 2s. The lower 64 rows of A start
    // 64 × 16 bytes into each column.
    const u64 a_desc0 = A_DESC | ((smem_address(a_tile) & 0x3FFFF) >> 4);
    const u64 b_desc0 = B_DESC | ((smem_address(b_tile) & 0x3FFFF) >> 4);
    auto a_desc = [&](int half, int slice) {
        return a_desc0 + ((slice * 2 * A_COLUMN_BYTES + half * 64 * COLUMN_BYTES) >> 4);
    };
    auto b_desc = [&](int slice) {
        return b_desc0 + ((slice * 2 * B_COLUMN_BYTES) >> 4);
    };
    // ANCHOR_END: descriptors

    // The block's BM×BN tile of C: HALVES wgmma tiles of 64×BN, BN/2 fp32 per thread each.
    float acc[HALVES][BN / 2];

    const int k_tiles = (K + BK - 1) / BK;
    u32 phase = 0;
    for (int t = 0; t < k_tiles; ++t) {
        // ANCHOR: tma_load
        // One thread asks the TMA for the tile: one 3D box each of A and B, (8 elements, BM rows, BK/8
        // columns) at (0, m0, t·BK/8). Parts past M, N or K arrive as zeros and count as bytes all the
        // same.
        if (tid == 0) {
            mbarrier_arrive_expect_bytes(loaded, A_TILE_BYTES + B_TILE_BYTES);
            tma_load_3d(a_tile, &a_map, loaded, 0, m0, t * (BK / 8));
            tma_load_3d(b_tile, &b_map, loaded, 0, n0, t * (BK / 8));
        }
        // Everyone waits for the tile's bytes; the barrier's parity flips with every tile.
        mbarrier_wait(loaded, phase);
        phase ^= 1;
        // ANCHOR_END: tma_load

        // ANCHOR: mma
        // BK/16 slices × HALVES wgmmas, issued back to back as one group; the first slice of the first
        // tile overwrites the accumulators, everything after adds.
        #pragma unroll
        for (int h = 0; h < HALVES; ++h) wgmma_fence_operands(acc[h]);
        wgmma_fence();
        #pragma unroll
        for (int s = 0; s < BK / 16; ++s) {
            #pragma unroll
            for (int h = 0; h < HALVES; ++h) {
                Wgmma<BN>::mma(acc[h], a_desc(h, s), b_desc(s), (t > 0 || s > 0) ? 1 : 0);
            }
        }
        wgmma_commit();
        // Single stage: the next tile goes into the same shared memory, so the MMAs must have finished
        // reading it, in every warp, before thread 0 starts the next copy.
        wgmma_wait<0>();
        #pragma unroll
        for (int h = 0; h < HALVES; ++h) wgmma_fence_operands(acc[h]);
        __syncthreads();
        // ANCHOR_END: mma
    }

    // ANCHOR: epilogue
    // Registers -> C, as bf16, straight from the wgmma fragment (wgmma.cuh): each thread holds pairs of
    // neighbouring columns, so a pair goes out as one 4-byte store when it is aligned (N even) and
    // inside C; otherwise element by element. Rows and columns past M and N are skipped.
    const WgmmaFragment frag(tid);
    const bool pairs_ok = (N % 2) == 0;
    #pragma unroll
    for (int h = 0; h < HALVES; ++h) {
        #pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const int col = n0 + frag.column + 8 * j;
            #pragma unroll
            for (int down = 0; down < 2; ++down) {
                const int row = m0 + 64 * h + frag.row + 8 * down;
                const float lo = acc[h][4 * j + 2 * down], hi = acc[h][4 * j + 2 * down + 1];
                if (row >= M || col >= N) continue;
                bf16* dst = C + (i64)row * N + col;
                if (pairs_ok) {
                    *reinterpret_cast<u32*>(dst) = pack_bf16x2(lo, hi);
                } else {
                    dst[0] = float_to_bf16(lo);
                    if (col + 1 < N) dst[1] = float_to_bf16(hi);
                }
            }
        }
    }
    // ANCHOR_END: epilogue
}
// ANCHOR_END: kernel
