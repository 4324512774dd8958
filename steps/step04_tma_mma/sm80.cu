// Step 04 · cp.async + ldmatrix + mma.sync (the sm80 twin: any GPU of compute capability 8.0 or newer).
//
// The Hopper kernel of this step has a copy engine (the TMA) and a warpgroup MMA that reads shared
// memory itself. Ampere-class GPUs (A100, L4, RTX 30/40/50, and Hopper too) have neither; they have:
//   - cp.async: each thread copies 16 bytes from global to shared memory without waiting for them, and
//     waits for its own copies later (cp_async.cuh). The block, not one thread, fills a tile: every
//     thread issues its share of the pieces and computes their addresses, and past the edges of A or B
//     it asks for zeros (src_size 0) — the code the TMA's tensor map saved;
//   - ldmatrix + mma.sync (mma_sm80.cuh): a warp loads its operands from shared memory into registers,
//     four 8×8 matrices per ldmatrix, then multiplies 16×16 by 16×8 tiles into fp32 registers.
//
// The tile in shared memory is laid out as in the Hopper twin: 16-byte columns, each BM (or BN) rows ×
// 16 bytes (8 bf16 of K). Every 8 rows of a column are a core matrix, 128 contiguous bytes, which is
// what one ldmatrix phase reads: eight 16-byte rows covering all 32 banks, conflict-free.
//
// Four warps as 2 × 2, each computing a 64×64 quarter of the 128×128 tile: per k16 slice, 4 ldmatrix.x4
// for A (four 16-row tiles), 4 for B (eight 8-column tiles), then 4 × 8 = 32 mma.sync. One K tile at a
// time, no overlap: copy -> wait -> multiply -> next; other blocks on the SM hide the copies' latency.
#include "common.cuh"
#include "cp_async.cuh"
#include "mma_sm80.cuh"

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
    COLUMN_BYTES = 16,            // one core-matrix column: 8 bf16 along K
    A_COLUMN_BYTES = BM * COLUMN_BYTES,
    B_COLUMN_BYTES = BN * COLUMN_BYTES,
    A_TILE_BYTES = A_COLUMN_BYTES * (BK / 8),
    B_TILE_BYTES = B_COLUMN_BYTES * (BK / 8),
    A_PIECES = BM * BK / 8,       // 16-byte pieces per A tile
    B_PIECES = BN * BK / 8,
};
static_assert(WM % 16 == 0 && WN % 16 == 0, "a warp computes whole 16×16 pairs of mma tiles");
static_assert(BK % 16 == 0, "mma.sync consumes K in slices of 16");
static_assert(A_PIECES % THREADS == 0 && B_PIECES % THREADS == 0, "every thread copies the same count");

// ANCHOR: load
// Copies the K tile that starts at k0 into the 16-byte-column layout. Piece p is row p % ROWS of column
// p / ROWS, so a warp's 32 copies are 32 rows of one column: 32 different 128-byte lines of global
// memory, each touched for 16 bytes. Pieces past the edge of the matrix (row or k out of range) arrive
// as zeros; their source is the matrix's base, a valid address that is not read.
template <int ROWS>
__device__ __forceinline__ void load_tile(u32 tile, const bf16* __restrict__ matrix, int rows, int K, int row0,
                                          int k0, int tid) {
    #pragma unroll
    for (int i = 0; i < ROWS * BK / 8 / THREADS; ++i) {
        const int piece = tid + i * THREADS;
        const int row = piece % ROWS, column = piece / ROWS;
        const int global_row = row0 + row, k = k0 + 8 * column;
        const bool inside = global_row < rows && k < K;
        const bf16* src = inside ? matrix + (i64)global_row * K + k : matrix;
        cp_async_16(tile + column * ROWS * COLUMN_BYTES + row * COLUMN_BYTES, src, inside);
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
    // Each lane's ldmatrix row, at k16 slice 0 of the warp's first tile. A (four matrices: rows 0–7 and
    // 8–15 of k 0–7, then of k 8–15): lane l names row l % 16 of the 16-row tile, in 16-byte column
    // l / 16 of the slice. B (two 8-column tiles: k 0–7 and k 8–15 of columns 0–7, then of columns
    // 8–15): lane l names column (l / 16) · 8 + l % 8, in 16-byte column (l / 8) % 2.
    const u32 a_lane = a_tile + (lane >> 4) * A_COLUMN_BYTES + (warp_row * WM + (lane & 15)) * COLUMN_BYTES;
    const u32 b_lane =
        b_tile + ((lane >> 3) & 1) * B_COLUMN_BYTES + (warp_column * WN + ((lane >> 4) << 3) + (lane & 7)) * COLUMN_BYTES;
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
            // Slice s is 16-byte columns 2s and 2s + 1.
            u32 a[M_TILES][4], b[N_TILES / 2][4];
            #pragma unroll
            for (int i = 0; i < M_TILES; ++i) {
                ldmatrix_x4(a[i], a_lane + 2 * s * A_COLUMN_BYTES + i * 16 * COLUMN_BYTES);
            }
            #pragma unroll
            for (int j = 0; j < N_TILES / 2; ++j) {
                ldmatrix_x4(b[j], b_lane + 2 * s * B_COLUMN_BYTES + j * 16 * COLUMN_BYTES);
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
    // Registers -> C, as bf16, straight from the mma fragment (mma_sm80.cuh), as the Hopper twin stores
    // its wgmma fragment: pairs of neighbouring columns go out as one 4-byte store when aligned (N even)
    // and inside C; otherwise element by element. Rows and columns past M and N are skipped.
    const MmaFragment frag(lane);
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
