// Step 06 · the epilogue through shared memory (the sm80 twin: any GPU of compute capability 8.0+).
//
// Steps 04 and 05 store C straight from the mma fragment: a warp's store instruction writes 8 rows ×
// 16 bytes, eight pieces of eight different rows. The Hopper twin of this step stages the tile in shared
// memory with stmatrix and lets one TMA store send it out in whole rows. Below sm_90 there is neither
// stmatrix nor a TMA store, so the threads do both halves themselves:
//   1. each lane writes its bf16 pairs (st.shared.b32, 4 bytes) into a staging tile that reuses the
//      operand tiles' shared memory, laid out as BN / 64 boxes of BM rows × 128 bytes with the same
//      128-byte swizzle: the 8 rows × 16 bytes a warp's store touches land in 32 different banks;
//   2. after a block barrier, each thread reads 16 bytes (one swizzled chunk) and writes them to C:
//      BN / 8 consecutive threads write one whole row of the tile, 16 bytes each, coalesced.
// The bounds checks stay with the threads (row < M, column < N): nothing clips for them. When N is not
// a multiple of 8, C's rows are not 16-byte aligned, and the kernel stores as step 05 does.
//
// Everything else is step 05's kernel.
#include "common.cuh"
#include "cp_async.cuh"
#include "mma_sm80.cuh"
#include "smem_sm80.cuh"
#include "stmatrix.cuh"  // swizzle_128b_offset (stmatrix itself is sm_90 and newer, not used here)

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

enum : int {
    WARPS_M = 2,                  // warps along M
    WARPS_N = 2,                  // warps along N
    THREADS = 32 * WARPS_M * WARPS_N,
    WM = BM / WARPS_M,            // rows of C per warp
    WN = BN / WARPS_N,            // columns of C per warp
    M_TILES = WM / 16,            // mma tiles of 16 rows per warp
    N_TILES = WN / 8,             // mma tiles of 8 columns per warp
    ROW_BYTES = 128,              // one row of a tile: BK = 64 bf16, eight 16-byte chunks
    A_TILE_BYTES = BM * ROW_BYTES,
    B_TILE_BYTES = BN * ROW_BYTES,
    A_PIECES = BM * BK / 8,       // 16-byte pieces per A tile
    B_PIECES = BN * BK / 8,
};
static_assert(WM % 16 == 0 && WN % 16 == 0, "a warp computes whole 16×16 pairs of mma tiles");
static_assert(BK * 2 == ROW_BYTES, "the 128-byte swizzle works on rows of 128 bytes: BK = 64");
static_assert(A_PIECES % THREADS == 0 && B_PIECES % THREADS == 0, "every thread copies the same count");
static_assert(BN % 64 == 0 && BM * BN * 2 <= A_TILE_BYTES + B_TILE_BYTES, "C's tile fits in the operands' place");

// ANCHOR: load
// Copies the K tile that starts at k0 as ROWS rows of 128 bytes, swizzled. Piece p is chunk p % 8 of
// row p / 8: eight consecutive threads copy one whole row, a warp four whole 128-byte lines. Each piece
// lands where the swizzle puts it. Pieces past the edge of the matrix arrive as zeros, as in step 04.
template <int ROWS>
__device__ __forceinline__ void load_tile(u32 tile, const bf16* __restrict__ matrix, int rows, int K, int row0,
                                          int k0, int tid) {
    #pragma unroll
    for (int i = 0; i < ROWS * BK / 8 / THREADS; ++i) {
        const int piece = tid + i * THREADS;
        const int row = piece / 8, chunk = piece % 8;
        const int global_row = row0 + row, k = k0 + 8 * chunk;
        const bool inside = global_row < rows && k < K;
        const bf16* src = inside ? matrix + (i64)global_row * K + k : matrix;
        cp_async_16(tile + swizzle_128b_offset(row, chunk), src, inside);
    }
}
// ANCHOR_END: load

// ANCHOR: kernel
// __launch_bounds__(128, BLOCKS_PER_SM): mma.sync takes its operands from registers, so besides the 128
// accumulators a thread holds one k16 slice's fragments of A (16 registers) and B (16); two blocks per
// SM leave it up to 255 registers, where the Hopper twin (operands read from shared memory) fit three.
extern "C" __global__ __launch_bounds__(THREADS, BLOCKS_PER_SM) void gemm(const bf16* __restrict__ A,
                                                                         const bf16* __restrict__ B,
                                                                         bf16* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 a_tile = smem_address(smem);
    const u32 b_tile = a_tile + A_TILE_BYTES;

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int warp_row = warp / WARPS_N, warp_column = warp % WARPS_N;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;

    // ANCHOR: addresses
    // Each lane's ldmatrix row, as in step 04, now in the swizzled tile: the reader applies the swizzle
    // the writer did. A: lane l names row l % 16 of a 16-row tile, chunk 2s + l / 16 of slice s. B: lane
    // l names row (l / 16) · 8 + l % 8 of a 16-row pair of tiles, chunk 2s + (l / 8) % 2. The eight lanes
    // of a phase read one chunk of eight consecutive rows, which the swizzle spreads over all 32 banks.
    const int a_row = warp_row * WM + (lane & 15);
    const int b_row = warp_column * WN + ((lane >> 4) << 3) + (lane & 7);
    auto a_lane = [&](int i, int s) {
        return a_tile + swizzle_128b_offset(a_row + 16 * i, 2 * s + (lane >> 4));
    };
    auto b_lane = [&](int j, int s) {
        return b_tile + swizzle_128b_offset(b_row + 16 * j, 2 * s + ((lane >> 3) & 1));
    };
    // ANCHOR_END: addresses

    float acc[M_TILES][N_TILES][4];
    #pragma unroll
    for (int i = 0; i < M_TILES; ++i)
        #pragma unroll
        for (int j = 0; j < N_TILES; ++j)
            #pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    const int k_tiles = (K + BK - 1) / BK;
    for (int t = 0; t < k_tiles; ++t) {
        // ANCHOR: copy_and_wait
        load_tile<BM>(a_tile, A, M, K, m0, t * BK, tid);
        load_tile<BN>(b_tile, B, N, K, n0, t * BK, tid);
        cp_async_commit();
        // A thread's wait covers its own copies only; the barrier makes everyone's visible.
        cp_async_wait<0>();
        __syncthreads();
        // ANCHOR_END: copy_and_wait

        // ANCHOR: mma
        #pragma unroll
        for (int s = 0; s < BK / 16; ++s) {
            // Slice s is chunks 2s and 2s + 1 of every row.
            u32 a[M_TILES][4], b[N_TILES / 2][4];
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i) {
                ldmatrix_x4(a[i], a_lane(i, s));
            }
            #pragma unroll
            for (int j = 0; j < N_TILES / 2; ++j) {
                ldmatrix_x4(b[j], b_lane(j, s));
            }
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i) {
                #pragma unroll
                for (int j = 0; j < N_TILES; ++j) {
                    mma_bf16_16816(acc[i][j], a[i], b[j / 2][2 * (j % 2)], b[j / 2][2 * (j % 2) + 1]);
                }
            }
        }
        // Single stage: the next copies overwrite this tile, so every warp must be done reading it.
        __syncthreads();
        // ANCHOR_END: mma
    }

    // ANCHOR: epilogue
    const MmaFragment frag(lane);
    if (N % 8 == 0) {
        // ANCHOR: stage
        // 1. Registers -> the staging tile, in the operands' place: the main loop ended with a barrier,
        // so no warp reads them any more. Column c of the tile is in box c / 64, chunk (c % 64) / 8 of
        // its row, at byte 2 · (c % 8) of the chunk.
        const u32 staging = a_tile;
        auto staged = [&](int row, int col) {
            return staging + (col / 64) * (BM * ROW_BYTES) + swizzle_128b_offset(row, (col % 64) / 8) +
                   2 * (col % 8);
        };
        #pragma unroll
        for (int i = 0; i < M_TILES; ++i) {
            #pragma unroll
            for (int j = 0; j < N_TILES; ++j) {
                const int col = warp_column * WN + 8 * j + frag.column;
                #pragma unroll
                for (int down = 0; down < 2; ++down) {
                    const int row = warp_row * WM + 16 * i + frag.row + 8 * down;
                    st_shared_b32(staged(row, col), pack_bf16x2(acc[i][j][2 * down], acc[i][j][2 * down + 1]));
                }
            }
        }
        __syncthreads();
        // ANCHOR_END: stage
        // ANCHOR: store
        // 2. The staging tile -> C, 16 bytes per thread: piece p is chunk p % (BN / 8) of row
        // p / (BN / 8), so BN / 8 consecutive threads write one row of the tile.
        #pragma unroll
        for (int i = 0; i < BM * BN / 8 / THREADS; ++i) {
            const int piece = tid + i * THREADS;
            const int row = piece / (BN / 8), chunk = piece % (BN / 8);
            const int global_row = m0 + row, col = n0 + 8 * chunk;
            if (global_row >= M || col >= N) continue;
            const u32 address = staging + (chunk / 8) * (BM * ROW_BYTES) + swizzle_128b_offset(row, chunk % 8);
            st_global_16(C + (i64)global_row * N + col, ld_shared_16(address));
        }
        // ANCHOR_END: store
        return;
    }
    // N % 8 != 0: step 05's stores, straight from the fragment, pair by pair where N is even.
    const bool pairs_ok = (N % 2) == 0;
    #pragma unroll
    for (int i = 0; i < M_TILES; ++i) {
        #pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
            const int col = n0 + warp_column * WN + 8 * j + frag.column;
            #pragma unroll
            for (int down = 0; down < 2; ++down) {
                const int row = m0 + warp_row * WM + 16 * i + frag.row + 8 * down;
                const float lo = acc[i][j][2 * down], hi = acc[i][j][2 * down + 1];
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
